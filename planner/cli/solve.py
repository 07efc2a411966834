"""The ``planner solve`` commands: exact solves of whole problems, used as offline oracles."""

from __future__ import annotations

import typer

from planner.cli.choices import Solver
from planner.cli.common import EXIT_INTERNAL, check_stdout, emit, fail, guarded, stdout_console, summary_to_stdout
from planner.render.table import render_spot_schedule

solve_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Exact solves of whole problems (offline oracles for the heuristics).")


@solve_app.command("spot-schedule")
@guarded
def spot_schedule_command(
    instance: str = typer.Argument(..., help="Instance JSON (instances/spot-schedule/small.json shows the format), or - for stdin."),
    solver: Solver = typer.Option(Solver("cpsat"), "--solver", help="cpsat (OR-Tools CP-SAT) or highs."),
    time_limit_s: float = typer.Option(60.0, "--time-limit-s", help="Wall seconds for building and solving the model."),
    workers: int = typer.Option(2, "--workers", help="CP-SAT workers / HiGHS threads."),
    force: bool = typer.Option(False, "--force", help="Build the model even past the size limit."),
    hp_delay: bool = typer.Option(False, "--hp-delay", help="Let HP jobs start late (their total delay is minimised first)."),
    out: str = typer.Option(None, "-o", "--out", help="Write the result JSON here (- for stdout)."),
) -> None:
    """The exact HP/spot schedule over the horizon: least lost spot GPU-time, then least spot completion time.

    Every job completes within the horizon; HP jobs start on arrival and are never preempted; spot jobs
    are evicted only at their checkpoints (``planner.models.spot_schedule`` says why that is exact).
    The schedule is checked by an independent validator; a status of optimal is a proof.
    """
    # deferred: the schedule model (~10 ms at start-up), for this command only
    from planner.models.spot_schedule import load_instance, result_json, size_problem, solve_spot_schedule

    problems = []
    if not time_limit_s > 0:
        problems.append(f"--time-limit-s: must be above 0, got {time_limit_s:g}")
    if workers < 1:
        problems.append(f"--workers: must be at least 1, got {workers}")
    if problems:
        fail(problems)
    check_stdout(out in (None, "-"))  # the results (or their table) go to standard output
    inst = load_instance(instance)
    too_large = size_problem(inst)
    if too_large and not force:
        fail([too_large])
    result = solve_spot_schedule(inst, solver.value, time_limit_s, workers, hp_delay=hp_delay, force=force)
    if out is not None:
        emit(result_json(result), out, "-o")
    if summary_to_stdout(out):
        with stdout_console() as console:
            render_spot_schedule(console, result, hp_delay)
    if result.violations:
        fail([f"the schedule is invalid (a bug): {v}" for v in result.violations], EXIT_INTERNAL)
