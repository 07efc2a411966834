"""``planner allocate``: pending jobs placed on as few access switches as possible, one job at a time
or jointly (the exact model), or by a baseline."""

from __future__ import annotations

import typer

from planner.cli.choices import AllocateMethod, AllocateSolver
from planner.cli.common import (
    InputKind,
    OutputFormat,
    check_plan_output,
    emit_plan,
    given_options,
    guarded,
    import_config_option,
    input_option,
    load_input,
    names,
    output_option,
)
from planner.engine.allocate import AllocateOptions, plan_allocate


@guarded
def allocate(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    jobs: str = typer.Option(None, "--jobs", help="Comma-separated jobs to place (default: every job with pending pods)."),
    method: AllocateMethod = typer.Option(
        AllocateMethod("auto"),
        "--method",
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
) -> None:
    """Place pending jobs on as few access switches as possible: one job at a time or jointly."""
    job_names = names(jobs)
    options = given_options(
        context,
        AllocateOptions,
        {
            "method": method.value,
            "jobs": job_names,
            "solver": solver.value,
            "time_limit_s": time_limit,
            "solver_workers": solver_workers,
            "entropy": entropy,
            "seed": seed,
            "large_requests": names(large_requests),
        },
    )
    check_plan_output(output_format, out)
    cluster = load_input(snapshot, source, import_config)
    plan = plan_allocate(cluster, options)
    emit_plan(plan, cluster, output_format, out)
