"""``planner allocate``: pending jobs placed on as few access switches as possible, one job at a time
or jointly (the exact model), or by a baseline."""

from __future__ import annotations

from typing import Any

import typer

from planner.cli.choices import AllocateMethod, AllocateSolver
from planner.cli.common import (
    InputKind,
    OutputFormat,
    check_plan_output,
    emit_plan,
    guarded,
    import_config_option,
    input_option,
    load_input,
    names,
    options_with_policy,
    output_option,
    policy_option,
)
from planner.engine.allocate import plan_allocate
from planner.engine.allocate_options import AllocateOptions
from planner.provenance import stamp_option_sources


@guarded
def allocate(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    jobs: str = typer.Option(None, "--jobs", help="Comma-separated jobs to place (default: every job with pending pods)."),
    method: AllocateMethod = typer.Option(
        AllocateMethod("auto"),
        "--method",
        metavar="<method>",  # the choices, each with its meaning, are in the help (the list would not fit 80 columns)
        help="auto = exact when it proves optimality within --time-limit, else the better of its plan and largest-first; "
        "largest-first (= greedy) = largest job first, each on the fewest switches, then least entropy (optimal for one job); "
        "alg2 = the ASI paper's Algorithm 2 as published; kueue-bestfit, kueue-leastfree = Kueue TAS's greedy profiles; "
        "slurm = Slurm's topology/tree placement; random = random spread; exact = the joint model with proven bounds; "
        "compare = largest-first and exact side by side.",
    ),
    solver: AllocateSolver = typer.Option(
        AllocateSolver("auto"), "--solver", help="exact, auto, compare: the back-end (auto: HiGHS, then CP-SAT if not proven in 40% of the time)."
    ),
    time_limit: float = typer.Option(10.0, "--time-limit", help="exact, auto, compare: seconds for all solves."),
    solver_workers: int = typer.Option(8, "--solver-workers", help="exact, auto, compare: CP-SAT workers / HiGHS threads."),
    entropy: bool = typer.Option(True, "--entropy/--no-entropy", help="exact, auto, compare: least entropy as the third objective level."),
    seed: int = typer.Option(0, "--seed", help="random: the seed."),
    large_requests: str = typer.Option(
        "64g768c,128g1536c,256g3072c",
        "--large-requests",
        help="SHAPE[,SHAPE...]: large requests whose counts before and after the plan its metrics report (GPUs, CPUs, optional GiB: 128g1536c).",
    ),
    out: str = typer.Option(None, "--out", help="Write the plan JSON here (- for stdout)."),
    output_format: OutputFormat = output_option(),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
    policy: str = policy_option(),
) -> None:
    """Place pending jobs on as few access switches as possible: one job at a time or jointly."""
    options, sources = options_with_policy(context, AllocateOptions, "allocate", option_values(locals()), policy)
    check_plan_output(output_format, out)
    cluster = load_input(snapshot, source, import_config)
    plan = plan_allocate(cluster, options)
    if sources is not None:
        stamp_option_sources(plan, sources)
    emit_plan(plan, cluster, output_format, out)


def option_values(flags: dict[str, Any]) -> dict[str, Any]:
    """The options fields of ``planner allocate``'s flags (by parameter name; ``planner submit allocate`` has the same)."""
    return {
        "method": flags["method"].value,
        "jobs": names(flags["jobs"]),
        "solver": flags["solver"].value,
        "time_limit_s": flags["time_limit"],
        "solver_workers": flags["solver_workers"],
        "entropy": flags["entropy"],
        "seed": flags["seed"],
        "large_requests": names(flags["large_requests"]),
    }
