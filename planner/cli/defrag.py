"""``planner defrag``: migration waves that vacate as many nodes as possible, or (``--make-room``) the
moves that let named pending jobs start; a progress bar on stderr for large clusters."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from planner.cli.choices import DefragMethod, Executor, Formulation, Lexicographic, Objective, RoomLevel, Solver, Trim
from planner.cli.common import (
    InputKind,
    OutputFormat,
    check_plan_output,
    count_or_share,
    emit_plan,
    err_console,
    fail,
    guarded,
    import_config_option,
    input_option,
    load_input,
    names,
    options_with_policy,
    out_dir_option,
    output_option,
    policy_option,
)
from planner.cli.outdir import check_out_dir
from planner.engine import DefragOptions, plan_defrag
from planner.engine.defrag import Progress as ProgressCallback
from planner.provenance import stamp_option_sources
from planner.runtime.gc_pause import collector_paused

PROGRESS_FROM_NODES = 2000
"""Show a progress bar on stderr for clusters at least this large."""
PHASES = {"trim": "trimming moves (move-minimal pass)", "finish": "waves, metrics and validation"}
"""What the planner's progress callback reports after its rounds, as the bar says it."""


@guarded
def defrag(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    method: DefragMethod = typer.Option(
        DefragMethod("heuristic"),
        "--method",
        help="heuristic = IPC ejection chains; random/descheduler/repack = baselines; exact = solver on the whole "
        "instance; hybrid = IPC improved by the solver on neighbourhoods; auto = exact if small, else hybrid; "
        "compare = IPC and exact side by side.",
    ),
    trim: Trim = typer.Option(
        Trim("greedy"),
        "--trim",
        help="Move-minimal pass after IPC (heuristic, hybrid): greedy = no double moves, pods back home where they fit; "
        "exact = then the solver's fewest moves at as many empty nodes (heuristic only; uses --solver, --time-limit); off = IPC as is.",
    ),
    partition_size: int = typer.Option(500, "--partition-size", min=2, help="Nodes per IPC partition."),
    depth: int = typer.Option(3, "--depth", min=1, help="K: longest ejection chain."),
    rounds: int = typer.Option(5, "--rounds", min=1, help="R: IPC rounds."),
    min_round_yield: float = typer.Option(
        1.0,
        "--min-round-yield",
        min=0,
        max=1000,
        help="IPC stops after a round that vacates fewer than this many nodes per 1,000 ejection attempts (0: every round until one vacates nothing).",
    ),
    max_moves: int = typer.Option(None, "--max-moves", min=0, help="Migration budget for the whole plan."),
    max_moves_per_node: int = typer.Option(None, "--max-moves-per-node", min=0, help="Moves touching any one node."),
    same_asw: bool = typer.Option(False, "--same-asw", help="Pods move only within their access switch."),
    max_moves_per_wave: int = typer.Option(None, "--max-moves-per-wave", help="Moves in any one wave (waves are split; no move is lost)."),
    max_nodes_per_wave: str = typer.Option(
        None,
        "--max-nodes-per-wave",
        help="N or P%: nodes any one wave touches (a share is of the nodes in scope, --node-selector's or all, rounded up). "
        "Default 10% (Karpenter's default budget); 100% lifts it.",
    ),
    max_moves_per_node_per_wave: int = typer.Option(None, "--max-moves-per-node-per-wave", help="Moves touching any one node in one wave."),
    max_unavailable_per_job: int = typer.Option(
        None, "--max-unavailable-per-job", help="Pods of one job moving in one wave, for jobs without their own disruption budget (0: they stay)."
    ),
    max_moves_per_namespace: int = typer.Option(
        None, "--max-moves-per-namespace", help="Moves of one namespace's pods in one wave (pods without a namespace are in 'default')."
    ),
    move_once: bool = typer.Option(True, "--move-once/--no-move-once", help="Every pod moves at most once (default: on)."),
    only_namespace: str = typer.Option(None, "--only-namespace", help="NS[,NS...]: only pods of these namespaces move."),
    exclude_namespace: str = typer.Option(None, "--exclude-namespace", help="NS[,NS...]: pods of these namespaces never move."),
    allow_product_change: bool = typer.Option(
        False, "--allow-product-change", help="Let GPU pods move to another GPU product their rules allow (default: a pod keeps its product)."
    ),
    allow_cpu_pods_on_gpu_nodes: bool = typer.Option(
        False, "--allow-cpu-pods-on-gpu-nodes", help="Let CPU-only pods move onto GPU nodes (default: they stay off them)."
    ),
    node_selector: str = typer.Option(
        None,
        "--node-selector",
        help="LABEL_EXPR: plan within the nodes this label selector matches ('pool=training,zone in (a,b)'); pods elsewhere stay and nothing arrives there.",
    ),
    threshold: float = typer.Option(0.5, "--threshold", min=0.0, max=1.0, help="Baselines: drain nodes below this GPU allocation."),
    seed: int = typer.Option(0, "--seed", help="Random seed; same snapshot and seed give the same plan."),
    workers: int = typer.Option(None, "--workers", min=1, help="Worker processes for partitions (default: one per core)."),
    executor: Executor = typer.Option(
        Executor("process"),
        "--executor",
        help="Where partitions and neighbourhoods run: inline, a local process pool, or Ray (RAY_ADDRESS when set, else a local Ray; "
        "needs the extra 'ray'). Same seed, same plan.",
    ),
    solver: Solver = typer.Option(Solver("highs"), "--solver", help="Exact back-end."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds for the solver (exact, compare) or the whole search (hybrid)."),
    solver_workers: int = typer.Option(8, "--solver-workers", min=1, help="CP-SAT workers / HiGHS threads."),
    formulation: Formulation = typer.Option(Formulation("auto"), "--formulation", help="Exact model: pod-level or class-aggregated."),
    deterministic: bool = typer.Option(False, "--deterministic", help="CP-SAT: deterministic search; the time limit is in deterministic seconds."),
    lexicographic: Lexicographic = typer.Option(
        Lexicographic("two-phase"), "--lexicographic", help="Exact objective: two-phase (empty nodes, then moves) or one weighted solve."
    ),
    force: bool = typer.Option(False, "--force", help="Run --method exact even above its size limit."),
    limit_costs: bool = typer.Option(
        False, "--limit-costs", help="Also plan without each limit in force that can cost vacated nodes and report what each cost."
    ),
    large_requests: str = typer.Option(
        "64g768c,128g1536c,256g3072c",
        "--large-requests",
        help="SHAPE[,SHAPE...]: large requests whose counts before and after the plan its metrics report (GPUs, CPUs, optional GiB: 128g1536c).",
    ),
    make_room: str = typer.Option(
        None,
        "--make-room",
        help="NAME[,NAME...]: pending jobs (or pending pods without a job) to make room for and start (method heuristic, exact or compare).",
    ),
    objective: Objective = typer.Option(
        Objective("empty-nodes"),
        "--objective",
        help="empty-nodes = vacate as many nodes as possible; room = let as many requests of --requests (or the pending jobs) "
        "start within one switch (ASI Fig. 14), largest shape first, then fewest moves.",
    ),
    requests: str = typer.Option(
        None, "--requests", help="With --objective room: SHAPE[,SHAPE...] as <GPUs>g<CPUs>c[<GiB>m] (default 256g3072c,128g1536c,64g768c)."
    ),
    for_pending: bool = typer.Option(False, "--for-pending", help="With --objective room: the shapes are the snapshot's pending jobs."),
    level: RoomLevel = typer.Option(RoomLevel("asw"), "--level", help="With --objective room: a request starts within one access switch or one spine."),
    weights: str = typer.Option(
        None,
        "--weights",
        help="With --objective room: SHAPE=WEIGHT[,...], e.g. 128g1536c=2,256g3072c=1: maximise the weighted sum of the counts "
        "(default: the counts largest shape first).",
    ),
    out: str = typer.Option(None, "--out", help="Write the plan JSON here (- for stdout)."),
    output_format: OutputFormat = output_option(),
    out_dir: str = out_dir_option(),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
    policy: str = policy_option(),
) -> None:
    """Plan a defragmentation: migration waves that vacate as many nodes as possible (with
    --make-room: the moves that let named pending jobs start, and where they start)."""
    options, sources = options_with_policy(context, DefragOptions, "defrag", option_values(locals()), policy)
    check_plan_output(output_format, out)
    check_out_dir(output_format.value if output_format else None, out_dir, None)
    with collector_paused():  # one plan and exit: the collector's passes over the snapshot cost seconds (runtime/gc_pause.py)
        cluster = load_input(snapshot, source, import_config)
        if len(cluster.nodes) >= PROGRESS_FROM_NODES:
            with progress_bar(f"{options.method} on {len(cluster.nodes):,} nodes") as progress:
                plan = plan_defrag(cluster, options, progress)
        else:
            plan = plan_defrag(cluster, options)
        if sources is not None:
            stamp_option_sources(plan, sources)
        emit_plan(plan, cluster, output_format, out, out_dir)


def option_values(flags: dict[str, Any]) -> dict[str, Any]:
    """The options fields of ``planner defrag``'s flags (by parameter name; ``planner submit defrag``
    has the same), checked as far as a flag can be alone."""
    if flags["threshold"] <= 0:
        fail(["--threshold: must be above 0 (a node is drained when its GPU allocation is below it)"])
    if not flags["time_limit"] > 0:
        fail([f"--time-limit: must be above 0 seconds, got {flags['time_limit']:g}; give the solver some time, e.g. --time-limit 60"])
    return {
        "method": flags["method"].value,
        "trim": flags["trim"].value,
        "partition_size": flags["partition_size"],
        "depth": flags["depth"],
        "rounds": flags["rounds"],
        "min_round_yield": flags["min_round_yield"],
        "max_moves": flags["max_moves"],
        "max_moves_per_node": flags["max_moves_per_node"],
        "same_asw": flags["same_asw"],
        "max_moves_per_wave": flags["max_moves_per_wave"],
        "max_nodes_per_wave": count_or_share(flags["max_nodes_per_wave"]),
        "max_moves_per_node_per_wave": flags["max_moves_per_node_per_wave"],
        "max_unavailable_per_job": flags["max_unavailable_per_job"],
        "max_moves_per_namespace": flags["max_moves_per_namespace"],
        "only_namespaces": names(flags["only_namespace"]),
        "exclude_namespaces": names(flags["exclude_namespace"]),
        "move_once": flags["move_once"],
        "allow_product_change": flags["allow_product_change"],
        "allow_cpu_pods_on_gpu_nodes": flags["allow_cpu_pods_on_gpu_nodes"],
        "node_selector": flags["node_selector"],
        "threshold": flags["threshold"],
        "seed": flags["seed"],
        "workers": flags["workers"],
        "executor": flags["executor"].value,
        "solver": flags["solver"].value,
        "time_limit_s": flags["time_limit"],
        "solver_workers": flags["solver_workers"],
        "formulation": flags["formulation"].value,
        "deterministic": flags["deterministic"],
        "lexicographic": flags["lexicographic"].value,
        "force": flags["force"],
        "limit_costs": flags["limit_costs"],
        "make_room": names(flags["make_room"]),
        "large_requests": names(flags["large_requests"]),
        "objective": flags["objective"].value,
        "requests": names(flags["requests"]),
        "for_pending": flags["for_pending"],
        "room_level": flags["level"].value,
        "weights": shape_weights(flags["weights"]),
    }


def shape_weights(value: str | None) -> dict[str, float] | None:
    """``--weights 128g1536c=2,256g3072c=1`` as a mapping (the shapes and weights are checked by the options)."""
    if value is None:
        return None
    weights: dict[str, float] = {}
    for item in names(value) or []:
        shape, sep, weight = (part.strip() for part in item.partition("="))
        if shape in weights:
            fail([f"--weights: shape '{shape[:64]}' is given twice"])
        try:
            if not sep:
                raise ValueError
            weights[shape] = float(weight)
        except ValueError:
            fail([f"--weights: '{item[:64]}' is not SHAPE=WEIGHT; write e.g. --weights 128g1536c=2,256g3072c=1"])
    return weights or None


@contextlib.contextmanager
def progress_bar(title: str) -> Iterator[ProgressCallback]:
    """A progress bar on stderr, updated by the planner's progress callback."""
    # no refresh thread: with none running, IPC's process pool forks and its workers share the state
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err_console, transient=True, auto_refresh=False) as bar:
        task = bar.add_task(title, total=None)
        bar.refresh()

        def update(what: str, done: int, total: int) -> None:
            if what in PHASES:  # a phase without steps: the bar shows it is working, not stuck on the last round
                bar.update(task, description=f"{title}: {PHASES[what]}", completed=0, total=None, refresh=True)
                return
            label = "IPC round" if what == "round" else "neighbourhood round"
            bar.update(task, description=f"{title}: {label} {done}", completed=done, total=total or None, refresh=True)

        yield update
