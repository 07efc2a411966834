"""The ``planner preempt`` command, and validation of preempt plans for ``planner validate``."""

from __future__ import annotations

from enum import Enum
from typing import Any

import typer

from planner.cli import (
    InputKind,
    OutputFormat,
    Solver,
    _emit,
    check_plan_output,
    _options,
    _stdout_console,
    app,
    emit_plan,
    generate_app,
    guarded,
    import_config_option,
    input_option,
    load_input,
    output_option,
    report_violations,
)
from planner.cluster import Cluster
from planner.plans import PreemptComparison, PreemptPlan


class PreemptMethod(str, Enum):
    spotgpu = "spotgpu"
    spotgpu_paper = "spotgpu-paper"
    spotgpu_isolated = "spotgpu-isolated"
    flextopo = "flextopo"
    k8s_default = "k8s-default"
    volcano = "volcano"
    random = "random"
    exact = "exact"
    compare = "compare"


class Heuristic(str, Enum):
    spotgpu = "spotgpu"
    spotgpu_paper = "spotgpu-paper"
    spotgpu_isolated = "spotgpu-isolated"
    flextopo = "flextopo"
    k8s_default = "k8s-default"
    volcano = "volcano"
    random = "random"


@app.command()
@guarded
def preempt(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    job: str = typer.Option(None, "--job", help="The pending job to start."),
    reactivate: str = typer.Option(None, "--reactivate", help="Instead of --job: wake this standby pod on its node."),
    method: PreemptMethod = typer.Option(
        PreemptMethod.spotgpu,
        "--method",
        help="spotgpu = least lost work (corrected SpotGPU); spotgpu-paper = the published prefix rule; spotgpu-isolated = HP pods where they would go without spot work; flextopo = NUMA-aware "
        "(FlexTopo); k8s-default, volcano, random = baselines; exact = solver, proven bound; compare = --heuristic and exact.",
    ),
    now: float = typer.Option(None, "--now", help="Decision time in seconds (default: the snapshot's time_s)."),
    alpha: float = typer.Option(0.5, "--alpha", help="FlexTopo Eq. 1: weight of priority (1) against topology (0)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random baseline."),
    heuristic: Heuristic = typer.Option(Heuristic.spotgpu, "--heuristic", help="compare: the heuristic set beside exact."),
    solver: Solver = typer.Option(Solver.cpsat, "--solver", help="Exact back-end."),
    time_limit: float = typer.Option(10.0, "--time-limit", help="Seconds for the solver (exact, compare)."),
    solver_workers: int = typer.Option(8, "--solver-workers", help="CP-SAT workers / HiGHS threads."),
    out: str = typer.Option(None, "--out", help="Write the plan JSON here (- for stdout)."),
    output_format: OutputFormat = output_option(),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Plan a preemption: where a pending job starts and which spot pods to evict, at the least lost work.

    A job that cannot start even with every allowed victim evicted is not an error: the plan is empty and
    report.status is infeasible, with the reason.
    """
    from planner.engine.preempt import PreemptOptions, plan_preempt, plan_reactivate

    if (job is None) == (reactivate is None):
        from planner.cli import fail

        fail(["--job / --reactivate: give one: --job J plans a pending job, --reactivate POD wakes a standby pod"])

    given = {
        "method": method.value,
        "now_s": now,
        "alpha": alpha,
        "seed": seed,
        "heuristic": heuristic.value,
        "solver": solver.value,
        "time_limit_s": time_limit,
        "solver_workers": solver_workers,
    }
    options = _options(context, PreemptOptions, given)
    check_plan_output(output_format, out)
    cluster = load_input(snapshot, source, import_config)
    plan = plan_preempt(cluster, job, options) if job is not None else plan_reactivate(cluster, reactivate, options)
    emit_plan(plan, cluster, output_format, out, lambda p: _table(p))



def _table(plan: Any) -> None:
    with _stdout_console() as console:
        _render(console, plan)


def _render(console: Any, plan: PreemptPlan | PreemptComparison) -> None:
    from rich.table import Table

    plans = [("heuristic", plan.heuristic), ("exact", plan.exact)] if isinstance(plan, PreemptComparison) else [("plan", plan)]
    for title, one in plans:
        report = one.report
        assert report is not None
        head = f"{title}: {report.method} {report.status}, lost work {one.metrics.get('lost_gpu_s', 0):g} GPU-s"
        if report.bound is not None:
            head += f", bound {report.bound:g}, gap {report.gap:g}"
        console.print(head)
        if getattr(report, "reason", None):
            console.print(f"  reason: {report.reason}")
        title = f"reactivate {one.reactivate}" if one.reactivate else f"job {one.job}: placements"
        table = Table("pod", "node", "devices", title=title)
        for p in one.placements:
            table.add_row(p.pod, p.node, "" if p.gpu_indexes is None else ",".join(map(str, p.gpu_indexes)))
        console.print(table)
        victims = Table("victim", "node", "job", "lost GPU-s", title="victims")
        for v in one.victims:
            victims.add_row(v.pod, v.node, v.job or "", f"{v.lost_gpu_s:g}")
        console.print(victims)
        console.print(f"  surplus victims: {one.metrics.get('surplus_victims', 0)}")
    if isinstance(plan, PreemptComparison):
        console.print(f"cost ratio (heuristic / exact): {plan.gap.get('cost_ratio')}")


def validate_preempt_plan(cluster: Cluster, plan: PreemptPlan) -> None:
    from planner.validate.preempt import surplus_units, validate_preempt

    violations = validate_preempt(cluster, plan)
    surplus = surplus_units(cluster, plan) if plan.placements and not violations else 0
    report_violations(
        violations,
        f"valid: {len(plan.placements)} placement(s), {len(plan.victims)} victim(s), "
        f"{sum(v.lost_gpu_s for v in plan.victims):g} GPU-s lost, {surplus} surplus victim gang(s)",
    )


# ----------------------------------------------------------------------------------------------
# generate flextopo / spot
# ----------------------------------------------------------------------------------------------


def _pending_counts(values: list[str]) -> dict[str, int]:
    """``B=1`` ``C=2`` -> {"B": 1, "C": 2}; a malformed item is bad input naming --pending."""
    from planner.cluster import SnapshotError

    counts: dict[str, int] = {}
    for value in values:
        letter, _, count = value.partition("=")
        if not letter or not count.isdigit():
            raise SnapshotError([f"--pending: '{value}' is not LETTER=COUNT (e.g. --pending B=1)"])
        counts[letter] = counts.get(letter, 0) + int(count)
    return counts


@generate_app.command("flextopo")
@guarded
def generate_flextopo_command(
    nodes: int = typer.Option(100, "--nodes", help="RTX 4090 servers (FlexTopo's simulation: 100)."),
    seed: int = typer.Option(0, "--seed", help="Random seed of the C and D device positions and start times."),
    pending: list[str] = typer.Option([], "--pending", help="Pending scale-ups as LETTER=COUNT (A, B, C or D), repeatable."),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """FlexTopo's saturated cluster (Table 3): 2 sockets / 8 NUMA domains per node, workloads A-D at
    priorities 1500/1000/500/200; --pending B=1 adds a scale-up of B."""
    from planner.instances.flextopo import flextopo_cluster
    from planner.snapshot import dump_cluster

    _emit(dump_cluster(flextopo_cluster(nodes=nodes, seed=seed, pending=_pending_counts(pending))) + "\n", out)


@generate_app.command("spot")
@guarded
def generate_spot_command(
    nodes: int = typer.Option(200, "--nodes", help="Nodes sampled from the 2026 spot-GPU node list."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same snapshot."),
    hp_share: float = typer.Option(0.6, "--hp-share", help="Share of GPUs held by HP pods."),
    lp_fill: float = typer.Option(0.9, "--lp-fill", help="Share of the remaining GPUs filled by spot pods."),
    pending_jobs: int = typer.Option(1, "--pending-jobs", help="Pending HP jobs that need preemption (hp-new-0, ...)."),
    node_list: str = typer.Option(None, "--node-list", help="node_info_df.csv of the spot-GPU data (default: data/spot-gpu-2026/ of the repository)."),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """An HP/spot mix on the GPU models and node shapes of the 2026 spot-GPU node list, with
    checkpoint intervals, spot gangs and pending HP jobs."""
    from planner.instances.spot import DEFAULT_NODE_LIST, spot_cluster
    from planner.snapshot import dump_cluster

    cluster = spot_cluster(
        nodes=nodes, seed=seed, hp_share=hp_share, lp_fill=lp_fill, pending_jobs=pending_jobs,
        node_list=node_list if node_list is not None else DEFAULT_NODE_LIST,
    )
    _emit(dump_cluster(cluster) + "\n", out)
