"""The planner proper: run a defrag method, build waves, validate, and report how the plan was obtained.

Methods: ``heuristic`` (IPC, then the move-minimal pass ``trim``: ``models/move_minimal.py``), the baselines ``random``, ``descheduler`` and ``repack``, ``exact``
(the whole instance solved by CP-SAT or HiGHS, warm-started from IPC), ``hybrid`` (IPC, then
large-neighbourhood search with the exact model), ``auto`` (exact when the instance is small enough,
hybrid otherwise) and ``compare`` (IPC and exact on the same snapshot, with the gap).

``plan_defrag`` is a pure function of the cluster and the options. Every plan it returns has passed
``validate``, including the limits it was asked for (``max_moves``, ``max_moves_per_node``,
``same_asw``); an invalid plan is a bug and raises ``PlanBug`` instead of being returned. Options a
method does not use are refused when the options are built (``DefragOptions``: an option that would
be silently ignored is an error), and options that cannot be honoured for this cluster (an instance
too large for ``exact``) raise ``PlanOptionError``. Heuristic plans are deterministic for a seed whatever the number of workers;
solver plans are when the solver proves optimality or ``deterministic`` is set (CP-SAT).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from planner import metrics, rules
from planner.cluster import Cluster, Pod
from planner.executors import Run, executor
from planner.gc_pause import collector_paused
from planner.heuristics import baselines
from planner.heuristics.ipc import IpcOptions, IpcResult, run_ipc
from planner.heuristics.trim import end_state, target_of
from planner.limits import MoveBudget, MoveLimits, namespace_limits, unavailable_limits
from planner.models.defrag_bound import EmptiesBound, empties_bound
from planner.models.defrag_exact import ExactOptions, model_size, solve_exact
from planner.models.lns import LnsOptions, run_lns
from planner.models.move_minimal import minimise_moves
from planner.plans import DefragComparison, DefragPlan, Move, PlanMetrics, SolveReport
from planner.pools import PoolPolicy, apply_pools, parse_selector
from planner.provenance import stamp
from planner.ray_executor import ray_cpus
from planner.state import PENDING, ClusterState
from planner.validate import validate
from planner.waves import Step, sequence_to_waves, shape_waves, target_to_waves

Method = Literal["heuristic", "random", "descheduler", "repack", "exact", "compare", "hybrid", "auto"]
Progress = Callable[[str, int, int], None]

EXACT_MAX_NODES = 1000
EXACT_MAX_PAIRS = 200_000
"""``exact`` refuses larger instances unless forced (the model would not fit the time or memory)."""
AUTO_EXACT_MAX_NODES = 200
AUTO_EXACT_MAX_PAIRS = 30_000
"""``auto`` solves exactly up to this size, and runs ``hybrid`` above it."""


class PlanBug(RuntimeError):
    """A planner produced a plan that does not validate: a bug, never returned to a user."""


CLI_FLAGS = {"time_limit_s": "time_limit", "now_s": "now", "only_namespaces": "only_namespace", "exclude_namespaces": "exclude_namespace"}
"""Options whose command-line flag is not the option's name."""


class PlanOptionError(ValueError):
    """Options that cannot be honoured for this cluster; the message names the option and the fix.

    ``template`` names options as ``{name}`` or ``{name=value}``; ``str()`` renders them as
    command-line flags (``--method hybrid``), ``for_api()`` as request fields (``options.method =
    'hybrid'``), so each surface speaks its own language.
    """

    def __init__(self, field: str, template: str):
        self.field = field
        self.template = template
        super().__init__(self.render(lambda name, value: f"--{CLI_FLAGS.get(name, name).replace('_', '-')}" + (f" {value}" if value else "")))

    def render(self, option: Callable[[str, str | None], str]) -> str:
        import re

        text = re.sub(r"\{(\w+)(?:=([^}]*))?\}", lambda m: option(m[1], m[2]), self.template)
        return f"{option(self.field, None)}: {text}"

    def for_api(self) -> str:
        return self.render(lambda name, value: f"options.{name}" + (f" = {value!r}" if value else ""))


MAX_SEED = 2**31 - 1
"""CP-SAT's random seed is a 32-bit signed integer."""
MAX_COUNT = 10**9
"""Budgets and sizes above this are typos (no cluster has a billion pods)."""
MAX_TIME_LIMIT_S = 7 * 24 * 3600.0


class DefragOptions(BaseModel):
    """Options of ``plan_defrag``; out-of-range values are rejected with the option's name."""

    model_config = ConfigDict(extra="forbid", strict=True)
    method: Method = "heuristic"
    make_room: list[str] | None = Field(
        None,
        description="Make room for these pending jobs (or pending pods without a job): the plan's moves let them start, "
        "and its placements start them after the last wave.",
    )
    trim: Literal["off", "greedy", "exact"] = Field(
        "greedy",
        description="Move-minimal pass after IPC (heuristic, hybrid): greedy = the end state without double moves and with "
        "pods sent back home where they fit; exact = then the solver's fewest moves at as many empty nodes (uses the solver "
        "options; heuristic only); off = IPC's plan as it is.",
    )
    partition_size: int = Field(500, ge=2, le=MAX_COUNT, description="Nodes per IPC partition.")
    depth: int = Field(3, ge=1, le=16, description="K: longest ejection chain.")
    rounds: int = Field(5, ge=1, le=1000, description="R: IPC rounds (fresh random partition each).")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Random seed; same snapshot and seed, same plan.")
    max_moves: int | None = Field(None, ge=0, le=MAX_COUNT, description="Migration budget for the whole plan.")
    max_moves_per_node: int | None = Field(
        None, ge=0, le=MAX_COUNT, description="Moves touching any one node (as source or destination)."
    )
    same_asw: bool = Field(False, description="Pods move only within their access switch.")
    max_moves_per_wave: int | None = Field(None, ge=1, le=MAX_COUNT, description="Moves in any one wave (waves are split; no move is lost).")
    max_nodes_per_wave: int | str | None = Field(
        None, description="Nodes any one wave touches (as source or destination): a count (at least 2, as a move touches two) "
        "or a share of the cluster's nodes such as '10%' (rounded up, as Karpenter's disruption budgets are).",
    )
    max_moves_per_node_per_wave: int | None = Field(None, ge=1, le=MAX_COUNT, description="Moves touching any one node in one wave.")
    max_moves_per_namespace: int | None = Field(
        None, ge=1, le=MAX_COUNT, description="Moves of one namespace's pods in one wave (koordinator's maxMigratingPerNamespace; "
        "a pod without a namespace is in 'default').",
    )
    max_unavailable_per_job: int | None = Field(
        None, ge=0, le=MAX_COUNT,
        description="Pods of one job moving in one wave, for jobs without their own disruption budget (0 holds their pods).",
    )
    move_once: bool = Field(
        True, description="Every pod moves at most once (on by default: a pod moved twice is restarted twice); "
        "off lets chains and detours move a pod again.",
    )
    only_namespaces: list[str] | None = Field(None, min_length=1, description="Only pods of these namespaces move.")
    exclude_namespaces: list[str] | None = Field(None, min_length=1, description="Pods of these namespaces never move.")
    allow_product_change: bool = Field(
        False, description="Let a placed GPU pod move to another GPU product its rules allow (off by default: a pod keeps the "
        "GPU product it runs on).",
    )
    allow_cpu_pods_on_gpu_nodes: bool = Field(
        False, description="Let CPU-only pods move onto GPU nodes (off by default: they move among CPU-only nodes only).",
    )
    node_selector: str | None = Field(
        None, min_length=1, max_length=4096, description="Plan within the nodes this label selector matches "
        "('pool=training,zone in (a,b)'), as kube-descheduler's nodeSelector: pods elsewhere stay, nothing arrives there.",
    )
    threshold: float = Field(0.5, gt=0, le=1, description="Baselines: GPU allocation below which a node is drained.")
    workers: int | None = Field(None, ge=1, le=256, description="Worker processes for partitions (default: one per core).")
    executor: Literal["inline", "process", "ray"] = Field(
        "process", description="Where IPC partitions and hybrid neighbourhoods run: in this process, on a local process pool, or as "
        "Ray tasks (RAY_ADDRESS when set, else a local Ray of `workers` CPUs; the extra 'ray'). Same seed, same plan on each.",
    )
    solver: Literal["cpsat", "highs"] = Field("highs", description="Exact back-end (HiGHS proved our models faster; see benchmarks).")
    time_limit_s: float = Field(
        60.0, gt=0, le=MAX_TIME_LIMIT_S, allow_inf_nan=False, description="Time for exact, compare and hybrid, model building included."
    )
    solver_workers: int = Field(8, ge=1, le=256, description="CP-SAT workers / HiGHS threads.")
    formulation: Literal["auto", "pod", "class"] = Field("auto", description="Exact model: pod-level or class-aggregated.")
    deterministic: bool = Field(False, description="CP-SAT: deterministic search, time limit in deterministic seconds.")
    lexicographic: Literal["two-phase", "weighted"] = Field(
        "two-phase",
        description="How the exact objective (most empty nodes, then fewest moves, then fewest GPUs moved) is solved: "
        "two solves (empty nodes, then moves with them held) or one weighted solve.",
    )
    force: bool = Field(False, description="Run exact even above the size limit.")
    limit_costs: bool = Field(
        False, description="Also plan without each limit in force that can cost vacated nodes, one at a time, and report "
        "what each cost (report.limit_costs); one more plan per limit.",
    )

    @field_validator("*")
    @classmethod
    def _used_by_the_method(cls, value: Any, info: ValidationInfo) -> Any:
        if info.data.get("make_room") is not None and info.data.get("method") in MAKE_ROOM_METHODS:
            return refuse_unused(cls, value, info, MAKE_ROOM_METHODS, ("method", "workers", "executor", "make_room"), _unused_by_make_room)
        if info.data.get("method") == "heuristic" and info.data.get("trim") == "exact":
            return refuse_unused(cls, value, info, {"heuristic": METHOD_OPTIONS["heuristic"] | TRIM_EXACT_OPTIONS}, ("method", "workers", "executor"),
                                 unused_option_reason)
        if info.field_name == "trim" and value == "exact" and info.data.get("method") == "hybrid":
            raise ValueError("hybrid spends its time limit on neighbourhood search; use trim 'greedy' with it, "
                             "or method 'heuristic' with trim 'exact'")
        return refuse_unused(cls, value, info, METHOD_OPTIONS, ("method", "workers", "executor"), unused_option_reason)

    @field_validator("node_selector")
    @classmethod
    def _selector_reads(cls, value: str | None) -> str | None:
        if value is not None:
            parse_selector(value)
        return value

    @field_validator("max_nodes_per_wave")
    @classmethod
    def _nodes_per_wave(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and not 2 <= value <= MAX_COUNT:
            raise ValueError(f"must be at least 2 (a move touches its source and its destination), got {value}")
        if isinstance(value, str):
            match = re.fullmatch(r"(\d+(?:\.\d+)?)%", value.strip())
            if match is None or not 0 < float(match.group(1)) <= 100:
                raise ValueError(f"give a node count such as 50 or a share such as '10%' (above 0%, at most 100%), got {value!r}")
        return value

    def pools(self) -> PoolPolicy:
        return PoolPolicy(self.allow_product_change, self.allow_cpu_pods_on_gpu_nodes, self.node_selector)

    def limits(self, nodes: int | None = None) -> MoveLimits:
        """The limits, with a share of nodes per wave resolved against ``nodes`` (rounded up, at least 2)."""
        per_wave = self.max_nodes_per_wave
        if isinstance(per_wave, str):
            if nodes is None:
                raise ValueError("a share of nodes per wave needs the cluster's node count")
            per_wave = max(2, math.ceil(float(per_wave.strip().rstrip("%")) * nodes / 100 - 1e-9))
        return MoveLimits(
            self.max_moves, self.max_moves_per_node, self.same_asw, self.max_moves_per_wave, per_wave, self.max_moves_per_node_per_wave,
            self.max_unavailable_per_job, None if self.only_namespaces is None else tuple(self.only_namespaces),
            tuple(self.exclude_namespaces or ()), self.move_once, self.max_moves_per_namespace,
        )


_IPC_OPTIONS = {"partition_size", "depth", "rounds", "seed"}
WAVE_LIMIT_OPTIONS = {"max_moves_per_wave", "max_nodes_per_wave", "max_moves_per_node_per_wave", "max_unavailable_per_job", "max_moves_per_namespace",
                      "only_namespaces", "exclude_namespaces", "move_once", "limit_costs"}
"""Limits every method honours: per-wave limits split waves, the namespace scope holds pods, and a plan
that would move a pod twice is routed again from its end state without detours."""
POOL_OPTIONS = {"allow_product_change", "allow_cpu_pods_on_gpu_nodes", "node_selector"}
"""Where pods may go (``pools.py``): every method honours them."""
_LIMIT_OPTIONS = {"max_moves", "max_moves_per_node", "same_asw"} | WAVE_LIMIT_OPTIONS | POOL_OPTIONS
_SOLVER_OPTIONS = {"solver", "time_limit_s", "solver_workers", "formulation", "deterministic", "lexicographic"}
MAKE_ROOM_OPTIONS = _LIMIT_OPTIONS | {"seed"}
"""What the make-room heuristic reads (``seed``: its ejection chains' tie-breaks)."""
MAKE_ROOM_EXACT_OPTIONS = MAKE_ROOM_OPTIONS | {"solver", "time_limit_s", "solver_workers", "deterministic"}
"""What the exact make-room model reads (``seed``: the solver's, and the heuristic's in compare)."""
MAKE_ROOM_METHODS = {"heuristic": MAKE_ROOM_OPTIONS, "exact": MAKE_ROOM_EXACT_OPTIONS, "compare": MAKE_ROOM_EXACT_OPTIONS}
"""The methods that make room, and the options each reads."""
TRIM_EXACT_OPTIONS = {"solver", "time_limit_s", "solver_workers", "formulation", "deterministic"}
"""What ``trim='exact'`` reads besides IPC's options."""
METHOD_OPTIONS: dict[str, set[str]] = {
    "heuristic": _IPC_OPTIONS | _LIMIT_OPTIONS | {"make_room", "trim"},
    "random": {"threshold", "seed"} | _LIMIT_OPTIONS,
    "descheduler": {"threshold", "seed"} | _LIMIT_OPTIONS,
    "repack": {"same_asw"} | WAVE_LIMIT_OPTIONS | POOL_OPTIONS,
    "exact": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS | {"force", "make_room"},
    "compare": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS | {"force", "make_room"},
    "hybrid": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS | {"trim"},
    "auto": _IPC_OPTIONS | _LIMIT_OPTIONS | _SOLVER_OPTIONS,
}
"""The options each method reads (IPC's for the methods that start from IPC); ``method``,
``workers`` and ``executor`` apply to all. Giving any other option is refused rather than silently ignored."""


def refuse_unused(
    model: type[BaseModel],
    value: Any,
    info: ValidationInfo,
    method_options: dict[str, set[str]],
    always: tuple[str, ...],
    reason: Callable[[str, str], str],
) -> Any:
    """An option the method would ignore is refused (unless it has its default value): the field
    validator of every options model, given which options each method reads."""
    method, name = info.data.get("method"), info.field_name
    if method is None or name in always or name in method_options[method]:
        return value
    if value != model.model_fields[name].default:
        raise ValueError(reason(method, name))
    return value


def _unused_by_make_room(method: str, name: str) -> str:
    return f"make_room does not use it with method '{method}' (it reads {', '.join(sorted(MAKE_ROOM_METHODS[method]))}); leave it out"


def unused_option_reason(method: str, name: str) -> str:
    """Why ``method`` cannot honour option ``name``, and what to do instead."""
    users = [m for m, names in METHOD_OPTIONS.items() if name in names]
    if method == "repack" and name in ("max_moves", "max_moves_per_node"):
        why = "repack repacks every movable pod from scratch and has no migration budget"
    else:
        why = f"method '{method}' does not use it"
    also = " (or with method heuristic and trim 'exact')" if name in TRIM_EXACT_OPTIONS else ""
    return f"{why}; use it with method {', '.join(users)}{also}, or leave it out"


COSTED_LIMITS = ("max_moves", "max_moves_per_node", "same_asw", "max_unavailable_per_job", "only_namespaces", "exclude_namespaces",
                 "move_once")
"""Limits that can cost vacated nodes (the per-wave ones only split waves), each priced by
``limit_costs``; the snapshot's disruption budgets are priced as ``disruption_budgets``."""


def plan_defrag(
    cluster: Cluster, options: DefragOptions | None = None, progress: Progress | None = None
) -> DefragPlan | DefragComparison:
    """A validated defragmentation plan for ``cluster`` (for ``compare``: both plans and the gap)."""
    options = options or DefragOptions()
    pooled, pools = apply_pools(cluster, options.pools())
    with collector_paused():  # see gc_pause.py: seconds at 37,707 nodes
        plan = _plan_defrag(pooled, options, progress)
        if options.limit_costs and isinstance(plan, DefragPlan) and plan.report is not None:
            plan.report.limit_costs = limit_costs(pooled, options, plan)  # type: ignore[attr-defined]
    for report in [plan.report] if isinstance(plan, DefragPlan) else [plan.heuristic.report, plan.exact.report]:
        if report is not None:
            report.pools = pools.as_dict()  # type: ignore[attr-defined]
    return stamp(plan, cluster, options)


def limit_costs(cluster: Cluster, options: DefragOptions, plan: DefragPlan) -> dict[str, dict[str, int]]:
    """For each limit in force that can cost vacated nodes: the plan's vacated nodes and moves without
    that one limit (everything else equal), and the nodes it cost."""
    costs: dict[str, dict[str, int]] = {}
    runs: list[tuple[str, Cluster, DefragOptions]] = []
    for name in COSTED_LIMITS:
        if getattr(options, name) not in (None, False):  # in force (move_once is, by default)
            off = False if isinstance(getattr(options, name), bool) else None
            runs.append((name, cluster, options.model_copy(update={name: off, "limit_costs": False})))
    if any(job.disruption is not None for job in cluster.jobs):
        free = cluster.model_copy(update={"jobs": [job.model_copy(update={"disruption": None}) for job in cluster.jobs]})
        runs.append(("disruption_budgets", free, options.model_copy(update={"limit_costs": False})))
    for name, source, relaxed in runs:
        other = _plan_defrag(source, relaxed, None)
        assert isinstance(other, DefragPlan)
        costs[name] = {"vacated_nodes_without": len(other.vacated_nodes), "moves_without": len(other.moves()),
                       "vacated_nodes_cost": len(other.vacated_nodes) - len(plan.vacated_nodes)}
    return costs


def _plan_defrag(
    cluster: Cluster, options: DefragOptions, progress: Progress | None = None
) -> DefragPlan | DefragComparison:
    if options.method == "compare" and options.make_room is not None:
        return compare_make_room(cluster, options)
    if options.method == "compare":
        return compare_defrag(cluster, options, progress)
    start = time.perf_counter()
    state = ClusterState(cluster)
    pristine = state.clone()  # the snapshot's state, for routing the plan again (``_moved_once``)
    limits = options.limits(len(state.node_names))
    held = hold_pods(cluster, state, limits)
    budget = MoveBudget.of(state, limits)
    relaxed = empties_bound(state, budget) if options.make_room is None else None  # make-room plans do not maximise empties
    before = metrics.summary(state)
    method = options.method
    extra: dict[str, Any] = {"pods_held": held} if held else {}
    if method == "auto":
        method, why = choose_auto(state)
        extra["auto_choice"] = f"{method}: {why}"
    solver_fields: dict[str, Any] = {}
    if options.make_room is not None and method == "exact":
        from planner.engine.makeroom import run_make_room_exact

        made, solver_fields, exact_extra = run_make_room_exact(
            cluster, state, options.make_room, budget, options.solver, options.time_limit_s, options.solver_workers, options.seed,
            options.deterministic,
        )
        extra.update(exact_extra, jobs_placed=len(options.make_room) - len(made.unplaced), jobs_unplaced=len(made.unplaced))
        if not any(made.waves):
            extra["reason"] = "every named job that starts fits without moves" if made.placements else "no named job starts (unplaced says why)"
        return _finish(cluster, state, made.waves, before, options, "makeroom-exact", start, extra, solver_fields, pristine, made)
    if method == "exact":
        check_exact_size(state, options)
    if options.make_room is not None:
        from planner.engine.makeroom import run_make_room

        made = run_make_room(cluster, state, options.make_room, budget, options.seed)
        placed = sum(1 for job in made.per_job.values() if job["placed"])
        extra.update(jobs_placed=placed, jobs_unplaced=len(made.unplaced))
        if not any(made.waves):
            extra["reason"] = "every named job that starts fits without moves" if placed else "no named job starts (unplaced says why)"
        return _finish(cluster, state, made.waves, before, options, "makeroom", start, extra, solver_fields, pristine, made)
    trimmed = method in ("heuristic", "hybrid") and options.trim != "off"
    start_state = state.clone() if trimmed else None
    with executor(options.workers, options.executor) as run:
        if method in ("heuristic", "hybrid"):
            extra["executor"] = options.executor  # where the partitions (and neighbourhoods) ran
        if method == "heuristic":
            steps, ipc_extra = _ipc(state, options, budget, run, progress)
            extra.update(ipc_extra)
            name = "ipc"
        elif method == "repack":
            outcome = baselines.repack(state, budget)
            steps = outcome.waves or []
            extra.update(dropped_moves=outcome.dropped, routed_moves=outcome.routed, target_vacated=outcome.target_vacated)
            name = "repack"
        elif method in ("random", "descheduler"):
            policy = "random" if method == "random" else "binpack"
            outcome = baselines.evict_and_replace(state, policy, options.threshold, options.seed, budget)
            steps = sequence_to_waves(outcome.sequence)
            extra.update(threshold=options.threshold)
            name = method
        elif method == "exact":
            steps, solver_fields, exact_extra = _exact(state, options, budget, run, progress)
            extra.update(exact_extra)
            name = "exact"
        else:
            steps, hybrid_extra = _hybrid(state, options, budget, run, progress, start)
            extra.update(hybrid_extra)
            name = "hybrid"
    if start_state is not None:
        if limits.move_once:  # trim the plan that would be returned: its claims (moves_bound) are about it
            steps, state = route_once(start_state, state, steps, MoveBudget.of(start_state, limits), extra)
        steps, state = _trim(start_state, steps, state, options, extra)
    return _finish(cluster, state, steps, before, options, name, start, extra, solver_fields, pristine, relaxed=relaxed)


def compare_defrag(cluster: Cluster, options: DefragOptions, progress: Progress | None = None) -> DefragComparison:
    """IPC and the exact model on the same snapshot: both plans, the gap in empty nodes, the bound."""
    state = ClusterState(cluster)
    check_exact_size(state, options)
    heuristic = plan_defrag(cluster, options.model_copy(update={"method": "heuristic"}), progress)
    exact = plan_defrag(cluster, options.model_copy(update={"method": "exact"}), progress)
    assert isinstance(heuristic, DefragPlan) and isinstance(exact, DefragPlan)
    h, e = heuristic.report, exact.report
    bound = e.bound
    gap = {
        "heuristic_empty_nodes": h.objective,
        "exact_empty_nodes": e.objective,
        "bound_empty_nodes": bound,
        "exact_status": e.status,
        "gap_empty_nodes": None if e.objective is None else e.objective - h.objective,
        "heuristic_to_bound": None if bound is None else bound - h.objective,
        "heuristic_over_exact": None if not e.objective else round(h.objective / e.objective, 6),
        "heuristic_wall_s": h.wall_s,
        "exact_wall_s": e.wall_s,
    }
    return DefragComparison(heuristic=heuristic, exact=exact, gap=gap)


def compare_make_room(cluster: Cluster, options: DefragOptions) -> DefragComparison:
    """The make-room heuristic and the exact model on the same snapshot, side by side."""
    heuristic_options = options.model_copy(
        update={"method": "heuristic", **{name: DefragOptions.model_fields[name].default for name in MAKE_ROOM_EXACT_OPTIONS - MAKE_ROOM_OPTIONS}}
    )
    heuristic = plan_defrag(cluster, heuristic_options)
    exact = plan_defrag(cluster, options.model_copy(update={"method": "exact"}))
    assert isinstance(heuristic, DefragPlan) and isinstance(exact, DefragPlan)
    h, e = heuristic.report, exact.report
    gap = {
        "heuristic_jobs_placed": h.jobs_placed,
        "exact_jobs_placed": e.jobs_placed,
        "heuristic_moves": h.moves,
        "exact_moves": e.moves,
        "heuristic_gpus_moved": h.gpus_moved,
        "exact_gpus_moved": e.gpus_moved,
        "exact_status": e.status,
        "restricted": e.restricted,
        "optimal_within_neighbourhood": e.optimal_within_neighbourhood,
        "moves_saved": h.moves - e.moves if h.jobs_placed == e.jobs_placed else None,
        "heuristic_wall_s": h.wall_s,
        "exact_wall_s": e.wall_s,
    }
    return DefragComparison(heuristic=heuristic, exact=exact, gap=gap)


# ----------------------------------------------------------------------------------------------
# Methods
# ----------------------------------------------------------------------------------------------


def _moved_once(pristine: ClusterState, end: ClusterState, steps: list[list[Step]], limits: MoveLimits, extra: dict,
                keep_prefix: bool = True) -> tuple[list[list[Step]], ClusterState]:
    """A plan that moves some pod twice (an IPC chain that moved it again, a detour) made to move
    every pod at most once (``route_once``), from the snapshot's state (``pristine``, not changed)
    with ``end``'s locks."""
    start = pristine.clone()
    start.pod_locked = end.pod_locked
    return route_once(start, end, steps, MoveBudget.of(start, limits), extra, keep_prefix)


def route_once(start: ClusterState, end: ClusterState, steps: list[list[Step]], budget: MoveBudget, extra: dict,
               keep_prefix: bool = True) -> tuple[list[list[Step]], ClusterState]:
    """A plan from ``start`` (not changed) ending in ``end`` that moves some pod twice, made to move
    every pod at most once: ``end`` routed again from ``start`` without detours (moves the router
    cannot make that way are dropped, never made twice), or, when ``keep_prefix`` and it is better
    (more empty nodes, then fewer moves, then fewer GPUs moved), the plan's waves up to the first
    that moves a pod again (each wave of a legal plan stays legal after the same earlier waves).
    ``extra`` gets ``move_once_rerouted`` (second moves) and ``move_once_dropped`` (moves of the end
    state the returned plan does not make). The waves and their end state.

    IPC itself runs as published: forbidding it to move a pod again lost 10-30% of its empty nodes on
    25-200-node ASI-like snapshots, while routing its end state again kept them all (no move dropped
    on 16 of 16; ``benchmarks/defrag_moves.py`` compares both ways). Routing again can drop every
    move of a plan whose chains need a pod twice, where the waves before it still vacate a node."""
    counts: dict[int, int] = {}
    for wave in steps:
        for p, _, _ in wave:
            counts[p] = counts.get(p, 0) + 1
    if all(count == 1 for count in counts.values()):
        return steps, end
    target = target_of(start, end)
    routed_end = start.clone()
    routed = target_to_waves(routed_end, target, budget)
    waves, final = routed.waves, routed_end
    if keep_prefix:
        seen: set[int] = set()
        cut = 0
        while cut < len(steps) and not any(p in seen for p, _, _ in steps[cut]):
            seen.update(p for p, _, _ in steps[cut])
            cut += 1
        prefix_end = end_state(start, steps[:cut])

        def score(state: ClusterState, plan: list[list[Step]]) -> tuple[int, int, float]:
            return int((state.pods_per_node == 0).sum()), -sum(len(w) for w in plan), -float(sum(start.pod_gpus[p] for w in plan for p, _, _ in w))

        if score(prefix_end, steps[:cut]) > score(routed_end, routed.waves):
            waves, final = steps[:cut], prefix_end
    made = sum(1 for p, n in target.items() if final.pod_node[p] == n)
    extra.update(move_once_rerouted=sum(count - 1 for count in counts.values()), move_once_dropped=len(target) - made)
    return waves, final


def _unplace_what_no_longer_fits(cluster: Cluster, state: ClusterState, made: Any) -> None:
    """After moves were dropped, a named job whose placements no longer all fit on the end state is
    reported unplaced (whole jobs, in the order placed; ``state`` is left as found)."""
    from planner.plans import Unplaced

    job_of = {pod.name: pod.job or pod.name for pod in cluster.pods}
    by_job: dict[str, list] = {}
    for placement in made.placements:
        by_job.setdefault(job_of[placement.pod], []).append(placement)
    kept, started = [], []
    for name, placements in by_job.items():
        done = []
        for placement in placements:
            q, n = state.pod_index[placement.pod], state.node_index[placement.node]
            if not state.fits(q, n):
                break
            state.place(q, n)
            done.append(q)
        if len(done) == len(placements):
            kept += placements
            started += done
            continue
        for q in done:
            state.unplace(q)
        reason = "move_once: a move it needed would move a pod twice and was dropped; plan again with move_once off"
        made.unplaced.append(Unplaced(job=name, reason=reason))
        made.per_job[name] = {"placed": False, "reason": reason}
    for q in started:
        state.unplace(q)
    made.placements = kept


def hold_pods(cluster: Cluster, state: ClusterState, limits: MoveLimits) -> dict[str, int]:
    """Lock in ``state`` (its own copy of the locks) the pods the limits forbid to move: outside the
    namespace scope, or of a job whose disruption budget is 0. Counts by reason (empty: none held)."""
    job_limits = unavailable_limits(cluster, limits.max_unavailable_per_job)
    scoped = limits.only_namespaces is not None or bool(limits.exclude_namespaces)
    if not scoped and all(limit > 0 for _, limit in job_limits.values()):
        return {}
    held = {"namespace_scope": 0, "disruption_budget": 0}
    locked = state.pod_locked.copy()
    for p, pod in enumerate(cluster.pods):
        if pod.node is None or locked[p]:
            continue
        if not limits.may_move(pod):
            locked[p] = True
            held["namespace_scope"] += 1
        elif pod.name in job_limits and job_limits[pod.name][1] == 0:
            locked[p] = True
            held["disruption_budget"] += 1
    state.pod_locked = locked
    return {reason: count for reason, count in held.items() if count}


def _trim(start: ClusterState, steps: list[list[Step]], end: ClusterState, options: DefragOptions, extra: dict) -> tuple[list[list[Step]], ClusterState]:
    """The move-minimal pass (``models/move_minimal.py``) over a plan from ``start`` ending in ``end``:
    the waves to return and their end state."""
    exact = _exact_options(options, options.time_limit_s) if options.trim == "exact" else None
    result = minimise_moves(start, steps, MoveBudget.of(start, options.limits(len(start.node_names))), options.trim, exact)
    extra.update(result.report)
    if result.waves is steps:
        return steps, end
    return result.waves, end_state(start, result.waves)


def _ipc_options(options: DefragOptions) -> IpcOptions:
    return IpcOptions(partition_size=options.partition_size, depth=options.depth, rounds=options.rounds, seed=options.seed)


def _ipc(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None
) -> tuple[list[list[Step]], dict]:
    result: IpcResult = run_ipc(state, _ipc_options(options), budget, run, progress)
    extra = {
        "rounds_run": result.rounds_run,
        "partitions": result.partitions,
        "candidates_tried": result.candidates_tried,
        "vacated_per_round": result.vacated_per_round,
    }
    return sequence_to_waves(result.sequence), extra


def _exact_options(options: DefragOptions, time_limit_s: float, **changes: Any) -> ExactOptions:
    """The solver options of ``options``, for a solve of ``time_limit_s`` seconds (``changes`` override)."""
    fields = {
        "solver": options.solver,
        "time_limit_s": time_limit_s,
        "solver_workers": options.solver_workers,
        "formulation": options.formulation,
        "seed": options.seed,
        "deterministic": options.deterministic,
        "lexicographic": options.lexicographic,
    }
    return ExactOptions(**{**fields, **changes})


def _exact(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None
) -> tuple[list[list[Step]], dict, dict]:
    """IPC for a warm start, then the exact model; returns the better executed plan of the two (IPC's
    as it would be returned: routed again under ``move_once``), and in the solver fields ``claims``,
    what the first solve's bound proves about a plan (``exact.Proof.claims``), which ``_finish`` reads
    against the plan it returns."""
    ipc_state = state.clone()
    ipc_start = time.perf_counter()
    ipc_waves, _ = _ipc(ipc_state, options, budget.copy(), run, None)
    if budget.move_once:  # IPC's plan as it would be returned (routed again if it moves a pod twice)
        ipc_waves, _ = route_once(state, ipc_state, ipc_waves, budget.copy(), {})
    ipc_wall = time.perf_counter() - ipc_start
    movable = np.flatnonzero((state.pod_node != PENDING) & ~state.pod_locked)
    hint = {int(p): int(ipc_state.pod_node[p]) for p in movable}
    outcome = solve_exact(state, _exact_options(options, max(0.5, options.time_limit_s - ipc_wall)), budget, hint)
    proof = outcome.proof

    def score(waves: list[list[Step]]) -> tuple[int, int, int]:
        scratch = state.clone()
        for wave in waves:
            for p, _, destination in wave:
                scratch.move(p, destination)
        return int((scratch.pods_per_node == 0).sum()), -sum(len(w) for w in waves), -proof.gpu_units_of(waves)

    extra: dict[str, Any] = {
        "formulation": outcome.formulation,
        "units": "exact" if outcome.exact_units else "relaxed",
        "variables": outcome.variables,
        "constraints": outcome.constraints,
        "solve_wall_s": round(outcome.solve_wall_s, 3),
        "solver_status": outcome.solver_status,
        "solver_message": outcome.message,
        "resolves": outcome.resolves,
        "routed_moves": outcome.routed_moves,
        "dropped_moves": outcome.dropped_moves,
        "ipc_objective": score(ipc_waves)[0],
        "solves": outcome.history,
    }
    waves = outcome.waves
    if waves is None:
        extra["fallback"] = f"ipc: the solver returned no solution ({outcome.solver_status}: {outcome.message})"
        waves = ipc_waves
    elif score(ipc_waves) > score(waves):
        extra["fallback"] = "ipc: IPC's plan is better than the executable exact plan (empty nodes, then moves, then GPUs moved)"
        extra["routed_moves"] = extra["dropped_moves"] = 0
        waves = ipc_waves

    def claims_of(empties: int, plan: list[list[Step]]) -> tuple[dict[str, Any], dict[str, Any]]:
        """What the first solve's bound proves about the plan finally returned (``exact.Proof.claims``):
        the status and bound, and the report's extra claims."""
        claims = proof.claims(empties, plan)
        if outcome.solver_status in ("error", "infeasible"):
            status = "heuristic"  # no proof at all: the plan is IPC's, solver_status says what went wrong
        elif claims.status == "optimal":
            status = "optimal"
        else:
            status = "timeout" if outcome.waves is None else "feasible"
        proven: dict[str, Any] = {"lexicographic_optimal": claims.lexicographic_optimal, "moves_bound": claims.moves_bound}
        if claims.bound_error:
            proven["bound_error"] = claims.bound_error
        return {"status": status, "bound": claims.bound}, proven

    for wave in waves:
        for p, _, destination in wave:
            state.move(p, destination)
    return waves, {"solver": options.solver, "claims": claims_of}, extra


def _hybrid(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None, start: float
) -> tuple[list[list[Step]], dict]:
    """IPC, then large-neighbourhood search with the exact model for the rest of the time limit."""
    waves, extra = _ipc(state, options, budget, run, progress)
    ipc_empties = int((state.pods_per_node == 0).sum())
    parallel = max(1, options.workers or (ray_cpus() if options.executor == "ray" else 2))
    if options.solver == "highs":
        # one HiGHS thread per neighbourhood solve: HiGHS's worker threads spin, and on a busy machine
        # 2-thread neighbourhood solves overran a 6 s hybrid to 25-36 s (1 thread: 6.3-6.4 s); two
        # 2-thread solves on 2 cores ran one 27 s past its 8 s limit
        solver_workers = 1
    else:
        solver_workers = max(1, options.solver_workers // parallel)
    # neighbourhood solves: always CP-SAT's deterministic search (a reproducible hybrid for a given
    # number of rounds) and HiGHS's default tolerance (their proofs only steer the search)
    exact = _exact_options(options, LnsOptions.solve_time_s, solver_workers=solver_workers, deterministic=True, strict=False)
    lns = run_lns(
        state,
        LnsOptions(
            time_limit_s=max(0.0, options.time_limit_s - (time.perf_counter() - start)),
            exact=exact,
            seed=options.seed,
            parallel=parallel,
        ),
        budget,
        run,
        progress,
    )
    extra.update(
        ipc_objective=ipc_empties,
        lns_rounds=lns.rounds,
        lns_neighbourhoods=lns.neighbourhoods,
        lns_improved=lns.improved,
        lns_gained_empty_nodes=lns.gained_empties,
        lns_proven_optimal=lns.proven_optimal,
        lns_solved_with=["/".join(how) for how in sorted(lns.solved_with)],
    )
    return waves + lns.waves, extra


SECONDS_PER_POD = 5e-4
SECONDS_PER_NODE = 1e-4
"""Planning cost in one worker process, with a margin: IPC and the baselines took 0.1-0.4 ms per pod
on 5,000 to 37,707-node ASI-like snapshots (benchmarks/results/defrag_heuristics.md), checking,
metrics and validation included."""


def estimated_runtime_s(nodes: int, pods: int, options: DefragOptions) -> float:
    """About how long planning takes in one process: proportional to the snapshot, plus the solver
    time for the methods that use a solver (twice for ``compare``, which also runs IPC alone)."""
    base = SECONDS_PER_POD * pods + SECONDS_PER_NODE * nodes
    if options.method in ("exact", "hybrid", "auto"):
        return base + options.time_limit_s
    if options.method == "compare":
        return 2 * base + options.time_limit_s
    return base


def choose_auto(state: ClusterState) -> tuple[str, str]:
    """``exact`` when the instance is small enough to solve in the time limit, else ``hybrid``."""
    pods, pairs = model_size(state)
    nodes = len(state.node_names)
    size = f"{nodes:,} nodes, {pods:,} movable pods, {pairs:,} pod-node pairs"
    if nodes <= AUTO_EXACT_MAX_NODES and pairs <= AUTO_EXACT_MAX_PAIRS:
        return "exact", f"{size} is within the exact limit ({AUTO_EXACT_MAX_NODES} nodes, {AUTO_EXACT_MAX_PAIRS:,} pairs)"
    return "hybrid", f"{size} is above the exact limit ({AUTO_EXACT_MAX_NODES} nodes, {AUTO_EXACT_MAX_PAIRS:,} pairs)"


def check_exact_size(state: ClusterState, options: DefragOptions) -> None:
    pods, pairs = model_size(state)
    nodes = len(state.node_names)
    if not options.force and (nodes > EXACT_MAX_NODES or pairs > EXACT_MAX_PAIRS):
        raise PlanOptionError(
            "method",
            f"the instance is too large to solve exactly ({nodes:,} nodes, {pairs:,} pod-node pairs; "
            f"limit {EXACT_MAX_NODES:,} nodes and {EXACT_MAX_PAIRS:,} pairs): use {{method=hybrid}} "
            "(IPC improved by the solver on neighbourhoods), or {force} to try anyway",
        )


# ----------------------------------------------------------------------------------------------
# Assembly
# ----------------------------------------------------------------------------------------------


def _finish(
    cluster: Cluster,
    state: ClusterState,
    steps: list[list[Step]],
    before: dict,
    options: DefragOptions,
    name: str,
    start: float,
    extra: dict[str, Any],
    solver_fields: dict[str, Any],
    pristine: ClusterState,
    made: Any = None,
    relaxed: EmptiesBound | None = None,
) -> DefragPlan:
    """The plan from waves (``state`` is already the end state), with metrics and report, validated;
    ``made`` (an ``engine.makeroom.MadeRoom``) adds a make-room plan's placements; ``relaxed``, the
    combinatorial bound on empty nodes (``models/defrag_bound.py``), is reported when no solver proved a
    smaller one."""
    limits = options.limits(len(cluster.nodes))
    if limits.move_once:
        steps, state = _moved_once(pristine, state, steps, limits, extra, keep_prefix=made is None)
        if made is not None and extra.get("move_once_dropped"):
            _unplace_what_no_longer_fits(cluster, state, made)
    by_name = unavailable_limits(cluster, limits.max_unavailable_per_job)
    job_limits = {state.pod_index[name]: limit for name, limit in by_name.items()}
    ns_limits = {state.pod_index[name]: limit for name, limit in namespace_limits(cluster, limits.max_moves_per_namespace).items()}
    nonempty = [wave for wave in steps if wave]
    steps = shape_waves(nonempty, limits, job_limits, ns_limits)
    if len(steps) != len(nonempty):
        extra = {**extra, "waves_before_wave_limits": len(nonempty)}
    plan = _assemble(cluster, state, steps, before)
    if made is not None:
        plan.placements, plan.unplaced = made.placements, made.unplaced
        assert plan.metrics is not None
        plan.metrics.per_job = made.per_job
    moves = plan.moves()
    pods = {p.name: p for p in cluster.pods}
    extra = {**extra, **lost_work(cluster, [pods[name] for name in dict.fromkeys(m.pod for m in moves)])}
    objective = plan.metrics.after["empty_nodes"]
    if "claims" in solver_fields:  # proofs read against the plan returned, after every change made to it above
        proven, claimed = solver_fields["claims"](int(objective), steps)
        solver_fields = {**{k: v for k, v in solver_fields.items() if k != "claims"}, **proven}
        extra = {**extra, **claimed}
    bound = solver_fields.get("bound")
    if bound is not None:
        extra = {**extra, "bound_source": "solver"}
    if relaxed is not None:
        if relaxed.bound < objective:
            raise PlanBug(f"the relaxation bound {relaxed.bound} is below the {objective} empty nodes {name} reached")
        extra = {**extra, "relaxation_bound": {"bound": relaxed.bound, "capacity": relaxed.capacity_bound, "budget": relaxed.budget_bound,
                                               "binding": relaxed.binding}}
        if bound is None or relaxed.bound < bound:
            bound, extra = relaxed.bound, {**extra, "bound_source": "relaxation"}
    gap = None if bound is None else round((bound - objective) / max(bound, 1), 6)
    plan.report = SolveReport(
        method=name,
        solver=solver_fields.get("solver"),
        status=solver_fields.get("status", "heuristic"),
        objective=objective,
        bound=bound,
        gap=gap,
        wall_s=round(time.perf_counter() - start, 3),
        seed=options.seed,
        moves=len(moves),
        gpus_moved=round(sum(pods[m.pod].gpus for m in moves), 6),
        waves=len(plan.waves),
        vacated_nodes=len(plan.vacated_nodes),
        **extra,
        **({} if moves or "reason" in extra else {"reason": why_nothing_moved(state, options, extra, solver_fields.get("status"))}),
    )
    violations = validate(cluster, plan, limits)
    if violations:
        raise PlanBug(f"{name} produced an invalid plan: " + "; ".join(map(str, violations[:5])))
    plan.report.wall_s = round(time.perf_counter() - start, 3)
    return plan


def lost_work(cluster: Cluster, moved: list[Pod]) -> dict[str, Any]:
    """Work the moved pods that carry checkpoints (``checkpoint_s`` or ``checkpoint_interval_s``) lose
    by restarting from their last checkpoint at ``cluster.time_s``, by the preemption cost model
    ``rules.lost_gpu_s`` (GPUs x time since the checkpoint), each pod once however often it moves.
    Pods without checkpoints (services, say) are counted, not priced: restarting them loses no
    saved state the model can measure. Empty when no moved pod carries a checkpoint."""
    known = [p for p in moved if p.checkpoint_s is not None or p.checkpoint_interval_s is not None]
    if not known:
        return {}
    return {"lost_gpu_s": round(sum(rules.lost_gpu_s(p, cluster.time_s) for p in known), 6),
            "moved_without_checkpoint": len(moved) - len(known)}


def _assemble(cluster: Cluster, state: ClusterState, steps: list[list[Step]], before: dict) -> DefragPlan:
    """Plan from waves of index triples; ``state`` is already the end state."""
    nodes = [n.name for n in cluster.nodes]
    pods = [p.name for p in cluster.pods]
    waves = [[Move(pod=pods[p], **{"from": nodes[s]}, to=nodes[d]) for p, s, d in wave] for wave in steps if wave]
    after = metrics.summary(state)
    busy_before = np.zeros(len(nodes), dtype=bool)
    for p in cluster.pods:
        if p.node is not None:
            busy_before[state.node_index[p.node]] = True
    vacated = [nodes[n] for n in np.flatnonzero(busy_before & (state.pods_per_node == 0))]
    return DefragPlan(waves=waves, vacated_nodes=vacated, metrics=PlanMetrics(before=before, after=after))


def why_nothing_moved(state: ClusterState, options: DefragOptions, extra: dict[str, Any] | None = None, status: str | None = None) -> str:
    """A human reason for an empty plan (``extra``: the report so far; ``status``: the plan's)."""
    busy = state.pods_per_node > 0
    if not busy.any():
        return "the cluster has no running pods"
    locked_nodes = np.zeros(len(state.node_names), dtype=bool)
    locked_nodes[state.pod_node[state.pod_locked & (state.pod_node >= 0)]] = True
    if not (busy & ~locked_nodes).any():
        return "every node holding pods also holds a locked pod, so no node can be vacated"
    if options.max_moves == 0:
        return "the migration budget (max_moves) is 0"
    if options.max_moves_per_node == 0:
        return "the per-node migration budget (max_moves_per_node) is 0"
    if busy.sum() < 2:
        return "only one node holds pods"
    if (extra or {}).get("move_once_dropped"):
        return (f"the {options.method} plan moved some pod twice; with every pod moved once (move_once) none of its "
                f"{extra['move_once_dropped']} move(s) could be made; plan again with move_once off to see it")
    solved = options.method == "exact" or str((extra or {}).get("auto_choice", "")).startswith("exact")
    if solved and status == "optimal":
        return "the exact model proves that no plan empties more nodes than the snapshot has"
    if solved:
        dropped = (extra or {}).get("dropped_moves")
        why = f"; {dropped} move(s) of its end state could not be routed make-before-break within the limits" if dropped else ""
        return f"the exact method found no plan that empties more nodes (status {status}: not proven that none exists{why})"
    if options.method in ("heuristic", "hybrid", "auto"):
        return (
            f"no candidate node could be vacated: some pod of each fits on no other busy node, "
            f"even after ejection chains of depth {options.depth}"
        )
    return f"{options.method} found no pod to move"

