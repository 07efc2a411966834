"""The ``planner allocate`` command, and validation of allocation plans for ``planner validate``."""

from __future__ import annotations

from enum import Enum
from typing import Any

import typer

from planner.cli import InputKind, OutputFormat, _options, _stdout_console, app, check_plan_output, emit_plan, guarded, import_config_option, input_option, load_input, output_option, report_violations
from planner.cluster import Cluster
from planner.plans import AllocationComparison, AllocationPlan


class AllocateSolver(str, Enum):
    auto = "auto"
    highs = "highs"
    cpsat = "cpsat"


class AllocateMethod(str, Enum):
    auto = "auto"
    largest_first = "largest-first"
    greedy = "greedy"
    alg2 = "alg2"
    kueue_bestfit = "kueue-bestfit"
    kueue_leastfree = "kueue-leastfree"
    slurm = "slurm"
    random = "random"
    exact = "exact"
    compare = "compare"


@app.command()
@guarded
def allocate(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    jobs: str = typer.Option(None, "--jobs", help="Comma-separated jobs to place (default: every job with pending pods)."),
    method: AllocateMethod = typer.Option(
        AllocateMethod.auto, "--method",
        help="auto = exact when it proves optimality within --time-limit, else the better of its plan and largest-first; "
        "largest-first (= greedy) = largest job first, each on the fewest switches, then least entropy (optimal for one job); "
        "alg2 = the ASI paper's Algorithm 2 as published; kueue-bestfit, kueue-leastfree = Kueue TAS's greedy profiles; "
        "slurm = Slurm's topology/tree placement; random = random spread; exact = the joint model with proven bounds; "
        "compare = largest-first and exact side by side.",
    ),
    solver: AllocateSolver = typer.Option(AllocateSolver.auto, "--solver", help="exact, auto, compare: the back-end (auto: HiGHS, then CP-SAT if not proven in 40% of the time)."),
    time_limit: float = typer.Option(10.0, "--time-limit", help="exact, auto, compare: seconds for all solves."),
    solver_workers: int = typer.Option(8, "--solver-workers", help="exact, auto, compare: CP-SAT workers / HiGHS threads."),
    entropy: bool = typer.Option(True, "--entropy/--no-entropy", help="exact, auto, compare: least entropy as the third objective level."),
    seed: int = typer.Option(0, "--seed", help="random: the seed."),
    out: str = typer.Option(None, "--out", help="Write the plan JSON here (- for stdout)."),
    output_format: OutputFormat = output_option(),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Place pending jobs on as few access switches as possible: one job at a time or jointly."""
    from planner.engine.allocate import AllocateOptions, plan_allocate

    names = [j.strip() for j in jobs.split(",") if j.strip()] if jobs is not None else None
    options = _options(context, AllocateOptions, {"method": method.value, "jobs": names, "solver": solver.value,
                                                  "time_limit_s": time_limit, "solver_workers": solver_workers, "entropy": entropy, "seed": seed})
    check_plan_output(output_format, out)
    cluster = load_input(snapshot, source, import_config)
    plan = plan_allocate(cluster, options)
    emit_plan(plan, cluster, output_format, out, lambda p: _table(p))


def _table(plan: Any) -> None:
    with _stdout_console() as console:
        _render(console, plan)


def _render(console: Any, plan: AllocationPlan | AllocationComparison) -> None:
    from rich.table import Table

    plans = [("greedy", plan.heuristic), ("exact", plan.exact)] if isinstance(plan, AllocationComparison) else [("plan", plan)]
    for label, one in plans:
        report = one.report
        title = f"{label}: {report.method} {report.status}" if report else label
        table = Table("job", "pods", "asws", "min asws", "entropy", "nodes", "min nodes", "locality cost", title=title)
        for job, m in one.metrics.get("per_job", {}).items():
            table.add_row(job, str(m["pods"]), str(m["asws"]), str(m["min_asws"]), f"{m['entropy']:.3f}", str(m["nodes"]), str(m["min_nodes"]), f"{m['locality_cost']:g}")
        console.print(table)
        for item in one.unplaced:
            console.print(f"unplaced {item.job}: {item.reason}")
    if isinstance(plan, AllocationComparison):
        g, e = plan.gap["greedy"], plan.gap["exact"]
        console.print(f"GPUs started: greedy {g['gpus']:g}, exact {e['gpus']:g}; switches: greedy {g['switches']}, exact {e['switches']} "
                      f"(exact {plan.gap['exact_status']})")


def validate_allocation_plan(cluster: Cluster, plan: AllocationPlan) -> None:
    from planner.validate.allocate import validate_allocate

    report_violations(validate_allocate(cluster, plan), f"valid: {len(plan.placements)} placement(s), {len(plan.unplaced)} job(s) left pending")
