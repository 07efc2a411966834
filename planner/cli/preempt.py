"""``planner preempt``: where a pending job starts and which spot pods to evict, at the least lost work
(or a standby pod woken on its node, ``--reactivate``)."""

from __future__ import annotations

from typing import Any

import typer

from planner.cli.choices import PreemptHeuristic, PreemptMethod, PreemptSolver
from planner.cli.common import (
    InputKind,
    OutputFormat,
    check_plan_output,
    emit_plan,
    fail,
    guarded,
    import_config_option,
    input_option,
    load_input,
    names,
    options_with_policy,
    output_option,
    policy_option,
)
from planner.engine.preempt import PreemptOptions, plan_preempt, plan_reactivate
from planner.provenance import stamp_option_sources


@guarded
def preempt(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    job: str = typer.Option(None, "--job", help="The pending job to start."),
    reactivate: str = typer.Option(None, "--reactivate", help="Instead of --job: wake this standby pod on its node."),
    method: PreemptMethod = typer.Option(
        PreemptMethod("spotgpu"),
        "--method",
        metavar="<method>",  # the choices, each with its meaning, are in the help (the list would not fit 80 columns)
        help="spotgpu = least lost work (corrected SpotGPU); spotgpu-paper = the published prefix rule; spotgpu-isolated = HP pods where they would go without spot work; flextopo = NUMA-aware "
        "(FlexTopo); k8s-default, volcano, random = baselines; exact = solver, proven bound; compare = --heuristic and exact.",
    ),
    now: float = typer.Option(None, "--now", help="Decision time in seconds (default: the snapshot's time_s)."),
    alpha: float = typer.Option(0.5, "--alpha", help="FlexTopo Eq. 1: weight of priority (1) against topology (0)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random baseline."),
    heuristic: PreemptHeuristic = typer.Option(
        PreemptHeuristic("spotgpu"),
        "--heuristic",
        metavar="<method>",
        help=f"compare: the heuristic set beside exact, one of {', '.join(h.value for h in PreemptHeuristic)}.",
    ),
    solver: PreemptSolver = typer.Option(PreemptSolver("cpsat"), "--solver", help="Exact back-end."),
    time_limit: float = typer.Option(10.0, "--time-limit", help="Seconds for the solver (exact, compare)."),
    solver_workers: int = typer.Option(8, "--solver-workers", help="CP-SAT workers / HiGHS threads."),
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
    """Plan a preemption: where a pending job starts and which spot pods to evict, at the least lost work.

    A job that cannot start even with every allowed victim evicted is not an error: the plan is empty and
    report.status is infeasible, with the reason.
    """
    check_target(job, reactivate)
    options, sources = options_with_policy(context, PreemptOptions, "preempt", option_values(locals()), policy)
    check_plan_output(output_format, out)
    cluster = load_input(snapshot, source, import_config)
    plan = plan_preempt(cluster, job, options) if job is not None else plan_reactivate(cluster, reactivate, options)
    if sources is not None:
        stamp_option_sources(plan, sources)
    emit_plan(plan, cluster, output_format, out)


def check_target(job: str | None, reactivate: str | None) -> None:
    """Exactly one of --job and --reactivate (``planner submit preempt`` checks the same)."""
    if (job is None) == (reactivate is None):
        fail(["--job / --reactivate: give one: --job J plans a pending job, --reactivate POD wakes a standby pod"])


def option_values(flags: dict[str, Any]) -> dict[str, Any]:
    """The options fields of ``planner preempt``'s flags (by parameter name; ``planner submit preempt`` has the same)."""
    return {
        "method": flags["method"].value,
        "now_s": flags["now"],
        "alpha": flags["alpha"],
        "seed": flags["seed"],
        "heuristic": flags["heuristic"].value,
        "solver": flags["solver"].value,
        "time_limit_s": flags["time_limit"],
        "solver_workers": flags["solver_workers"],
        "large_requests": names(flags["large_requests"]),
    }
