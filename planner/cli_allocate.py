"""The ``planner allocate`` command, and validation of allocation plans for ``planner validate``."""

from __future__ import annotations

from enum import Enum
from typing import Any

import typer

from planner.cli import OutputFormat, Solver, _emit, _options, _stdout_console, app, guarded, report_violations
from planner.cluster import Cluster
from planner.plans import AllocationPlan


class AllocateMethod(str, Enum):
    largest_first = "largest-first"
    alg2 = "alg2"
    kueue_bestfit = "kueue-bestfit"
    kueue_leastfree = "kueue-leastfree"
    exact = "exact"


@app.command()
@guarded
def allocate(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    jobs: str = typer.Option(None, "--jobs", help="Comma-separated jobs to place (default: every job with pending pods)."),
    method: AllocateMethod = typer.Option(
        AllocateMethod.largest_first, "--method",
        help="largest-first = fewest switches, then least entropy (optimal for one job); alg2 = the ASI paper's Algorithm 2 "
        "as published; kueue-bestfit, kueue-leastfree = Kueue TAS's greedy profiles.",
    ),
    solver: Solver = typer.Option(Solver.cpsat, "--solver", help="exact: the back-end."),
    time_limit: float = typer.Option(10.0, "--time-limit", help="exact: seconds for both solves."),
    solver_workers: int = typer.Option(8, "--solver-workers", help="exact: CP-SAT workers / HiGHS threads."),
    out: str = typer.Option(None, "--out", help="Write the plan JSON here (- for stdout)."),
    output_format: OutputFormat = typer.Option(OutputFormat.json, "--format", help="json: the plan; table: a summary."),
) -> None:
    """Place pending jobs on as few access switches as possible, largest job first."""
    from planner.engine.allocate import AllocateOptions, plan_allocate
    from planner.plans import dump_plan
    from planner.snapshot import load_cluster

    names = [j.strip() for j in jobs.split(",") if j.strip()] if jobs is not None else None
    options = _options(context, AllocateOptions, {"method": method.value, "jobs": names, "solver": solver.value,
                                                  "time_limit_s": time_limit, "solver_workers": solver_workers})
    cluster = load_cluster(snapshot)
    plan = plan_allocate(cluster, options)
    if out is not None:
        _emit(dump_plan(plan) + "\n", out)
    if output_format == OutputFormat.table:
        with _stdout_console() as console:
            _render(console, plan)
    elif out is None:
        _emit(dump_plan(plan) + "\n", "-")


def _render(console: Any, plan: AllocationPlan) -> None:
    from rich.table import Table

    table = Table("job", "pods", "asws", "min asws", "entropy", "nodes", "min nodes", "locality cost", title=f"allocation ({plan.report.method if plan.report else ''})")
    for job, m in plan.metrics.get("per_job", {}).items():
        table.add_row(job, str(m["pods"]), str(m["asws"]), str(m["min_asws"]), f"{m['entropy']:.3f}", str(m["nodes"]), str(m["min_nodes"]), f"{m['locality_cost']:g}")
    console.print(table)
    for item in plan.unplaced:
        console.print(f"unplaced {item.job}: {item.reason}")


def validate_allocation_plan(cluster: Cluster, plan: AllocationPlan) -> None:
    from planner.validate_allocate import validate_allocate

    report_violations(validate_allocate(cluster, plan), f"valid: {len(plan.placements)} placement(s), {len(plan.unplaced)} job(s) left pending")
