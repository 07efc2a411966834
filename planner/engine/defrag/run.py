"""Running a defrag method: ``plan_defrag`` and the comparisons (the package's ``__init__`` names
these on first use, so that importing ``planner.engine.defrag.options`` does not import the planners)."""

from __future__ import annotations

import time
from typing import Any

from planner import metrics
from planner.capacity import large_request_counts
from planner.cluster import Cluster
from planner.engine.common import (
    MAX_COUNT,
    MAX_SEED,
    MAX_TIME_LIMIT_S,
    PlanBug,
    PlanOptionError,
    lost_work,
)
from planner.engine.defrag.assembly import _finish, why_nothing_moved
from planner.engine.defrag.methods import (
    AUTO_EXACT_MAX_NODES,
    AUTO_EXACT_MAX_PAIRS,
    EXACT_MAX_NODES,
    EXACT_MAX_PAIRS,
    METHODS,
    Progress,
    _moved_once,
    _trim,
    check_exact_size,
    choose_auto,
    estimated_runtime_s,
    hold_pods,
    route_once,
)
from planner.engine.defrag.options import (
    COSTED_LIMITS,
    MAKE_ROOM_EXACT_OPTIONS,
    MAKE_ROOM_METHODS,
    MAKE_ROOM_OPTIONS,
    METHOD_OPTIONS,
    POOL_OPTIONS,
    TRIM_EXACT_OPTIONS,
    WAVE_LIMIT_OPTIONS,
    DefragOptions,
    Method,
    unused_option_reason,
)
from planner.engine.defrag.room import EMPTY_NODES, compare_room, plan_room
from planner.engine.makeroom import run_make_room, run_make_room_exact
from planner.limits import MoveBudget, MoveLimits
from planner.models.defrag_bound import empties_bound
from planner.plans import DefragComparison, DefragGap, DefragPlan, MakeRoomGap
from planner.pools import apply_pools
from planner.provenance import stamp
from planner.runtime.executors import executor
from planner.runtime.gc_pause import collector_paused
from planner.state import ClusterState
from planner.waves import Step

__all__ = [
    "AUTO_EXACT_MAX_NODES",
    "AUTO_EXACT_MAX_PAIRS",
    "COSTED_LIMITS",
    "EXACT_MAX_NODES",
    "EXACT_MAX_PAIRS",
    "MAKE_ROOM_EXACT_OPTIONS",
    "MAKE_ROOM_METHODS",
    "MAKE_ROOM_OPTIONS",
    "MAX_COUNT",
    "MAX_SEED",
    "MAX_TIME_LIMIT_S",
    "METHOD_OPTIONS",
    "POOL_OPTIONS",
    "TRIM_EXACT_OPTIONS",
    "WAVE_LIMIT_OPTIONS",
    "DefragOptions",
    "Method",
    "PlanBug",
    "PlanOptionError",
    "Progress",
    "check_exact_size",
    "choose_auto",
    "compare_defrag",
    "compare_make_room",
    "estimated_runtime_s",
    "hold_pods",
    "limit_costs",
    "lost_work",
    "plan_defrag",
    "route_once",
    "unused_option_reason",
    "why_nothing_moved",
]


def plan_defrag(cluster: Cluster, options: DefragOptions | None = None, progress: Progress | None = None) -> DefragPlan | DefragComparison:
    """A validated defragmentation plan for ``cluster`` (for ``compare``: both plans and the gap)."""
    options = options or DefragOptions()
    pooled, pools = apply_pools(cluster, options.pools())
    with collector_paused():  # see runtime/gc_pause.py: seconds at 37,707 nodes
        plan = _plan_defrag(pooled, options, progress)
        if options.limit_costs and isinstance(plan, DefragPlan) and plan.report is not None:
            plan.report.limit_costs = limit_costs(pooled, options, plan)  # type: ignore[attr-defined]  # an extra field (SolveReport allows them)
    for report in [plan.report] if isinstance(plan, DefragPlan) else [plan.heuristic.report, plan.exact.report]:
        if report is not None:
            report.pools = pools.as_dict()  # type: ignore[attr-defined]  # an extra field (SolveReport allows them)
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
        costs[name] = {
            "vacated_nodes_without": len(other.vacated_nodes),
            "moves_without": len(other.moves()),
            "vacated_nodes_cost": len(other.vacated_nodes) - len(plan.vacated_nodes),
        }
    return costs


def _plan_defrag(cluster: Cluster, options: DefragOptions, progress: Progress | None = None) -> DefragPlan | DefragComparison:
    if options.method == "compare" and options.make_room is not None:
        return compare_make_room(cluster, options)
    if options.method == "compare" and options.objective == "room":
        return compare_room(cluster, options, plan_defrag)
    if options.method == "compare":
        return compare_defrag(cluster, options, progress)
    start = time.perf_counter()
    state = ClusterState(cluster)
    pristine = state.clone()  # the snapshot's state, for routing the plan again (``_moved_once``)
    limits = options.limits(options.scope_nodes(cluster))
    held = hold_pods(cluster, state, limits)
    budget = MoveBudget.of(state, limits)
    before = metrics.summary(state)
    before["large_requests"] = large_request_counts(state, [metrics.parse_shape(text) for text in options.large_requests])  # ASI Fig. 14, every plan
    if options.objective == "room":

        def empty_nodes(update: dict[str, Any], finish: bool) -> DefragPlan | DefragComparison | list[list[Step]]:
            other = options.model_copy(update={**EMPTY_NODES, **update})
            return _plan_defrag(cluster, other) if finish else _default_steps(cluster, other, pristine)

        return plan_room(cluster, state, options, budget, before, start, {"pods_held": held} if held else {}, pristine, empty_nodes)
    relaxed = empties_bound(state, budget) if options.make_room is None else None  # make-room plans do not maximise empties
    method: str = options.method
    extra: dict[str, Any] = {"pods_held": held} if held else {}
    if method == "auto":
        method, why = choose_auto(state)
        extra["auto_choice"] = f"{method}: {why}"
    solver_fields: dict[str, Any] = {}
    if options.make_room is not None and method == "exact":
        made, solver_fields, exact_extra = run_make_room_exact(
            cluster,
            state,
            options.make_room,
            budget,
            options.solver,
            options.time_limit_s,
            options.solver_workers,
            options.seed,
            options.deterministic,
        )
        extra.update(exact_extra, jobs_placed=len(options.make_room) - len(made.unplaced), jobs_unplaced=len(made.unplaced))
        if not any(made.waves):
            extra["reason"] = "every named job that starts fits without moves" if made.placements else "no named job starts (unplaced says why)"
        return _finish(cluster, state, made.waves, before, options, "makeroom-exact", start, extra, solver_fields, pristine, made)
    if method == "exact":
        check_exact_size(state, options)
    if options.make_room is not None:
        made = run_make_room(cluster, state, options.make_room, budget, options.seed)
        placed = sum(1 for job in made.per_job.values() if job["placed"])
        extra.update(jobs_placed=placed, jobs_unplaced=len(made.unplaced))
        if not any(made.waves):
            extra["reason"] = "every named job that starts fits without moves" if placed else "no named job starts (unplaced says why)"
        return _finish(cluster, state, made.waves, before, options, "makeroom", start, extra, solver_fields, pristine, made)
    name, steps, state, solver_fields = _run_method(state, method, options, limits, budget, progress, start, extra)
    if progress is not None:
        progress("finish", 0, 0)
    return _finish(cluster, state, steps, before, options, name, start, extra, solver_fields, pristine, relaxed=relaxed)


def _run_method(
    state: ClusterState,
    method: str,
    options: DefragOptions,
    limits: MoveLimits,
    budget: MoveBudget,
    progress: Progress | None,
    start: float,
    extra: dict[str, Any],
) -> tuple[str, list[list[Step]], ClusterState, dict[str, Any]]:
    """The method's waves (``state``, the snapshot's with held pods locked, changed), then for IPC
    routed to move each pod once and trimmed: its name, the waves, their end state, the solver's fields."""
    trimmed = method in ("heuristic", "hybrid") and options.trim != "off"
    start_state = state.clone() if trimmed else None
    with executor(options.workers, options.executor) as run:
        if method in ("heuristic", "hybrid"):
            extra["executor"] = options.executor  # where the partitions (and neighbourhoods) ran
        name, steps, solver_fields, method_extra = METHODS[method](state, options, budget, run, progress, start)
        extra.update(method_extra)
    if start_state is not None:
        if progress is not None:
            progress("trim", 0, 0)
        if limits.move_once:  # trim the plan that would be returned: its claims (moves_bound) are about it
            steps, state = route_once(start_state, state, steps, MoveBudget.of(start_state, limits), extra)
        steps, state = _trim(start_state, steps, state, options, limits, extra)
    return name, steps, state, solver_fields


def _default_steps(cluster: Cluster, options: DefragOptions, pristine: ClusterState) -> list[list[Step]]:
    """The moves of the plan ``_plan_defrag(cluster, options)`` returns (an empty-nodes plan, method
    heuristic), from ``pristine`` (the snapshot's state, not changed), without finishing it: no bound,
    metrics, report or validation (seconds at 37,707 nodes). The same steps as that plan's up to
    the per-wave limits' splits (``shape_waves`` keeps every move and its order); ``plan_room`` finishes
    the plan when it is the one returned and checks its counts against these."""
    if options.method != "heuristic" or options.make_room is not None:
        raise PlanBug(f"the moves of an unfinished plan are for method heuristic without make_room, not {options.method}")
    state = pristine.clone()
    limits = options.limits(options.scope_nodes(cluster))
    hold_pods(cluster, state, limits)
    extra: dict[str, Any] = {}
    _, steps, state, _ = _run_method(state, "heuristic", options, limits, MoveBudget.of(state, limits), None, time.perf_counter(), extra)
    if limits.move_once:  # as _finish does
        steps, state = _moved_once(pristine, state, steps, limits, extra)
    return [wave for wave in steps if wave]


def compare_defrag(cluster: Cluster, options: DefragOptions, progress: Progress | None = None) -> DefragComparison:
    """IPC and the exact model on the same snapshot: both plans, the gap in empty nodes, the bound."""
    state = ClusterState(cluster)
    check_exact_size(state, options)
    heuristic = plan_defrag(cluster, options.model_copy(update={"method": "heuristic"}), progress)
    exact = plan_defrag(cluster, options.model_copy(update={"method": "exact"}), progress)
    assert isinstance(heuristic, DefragPlan) and isinstance(exact, DefragPlan)
    h, e = heuristic.report, exact.report
    assert h is not None and e is not None  # plan_defrag reports every plan
    assert h.objective is not None  # IPC's plan always counts its empty nodes
    bound = e.bound
    gap: DefragGap = {
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
    assert h is not None and e is not None  # plan_defrag reports every plan
    gap: MakeRoomGap = {
        "heuristic_jobs_placed": h.extra("jobs_placed"),
        "exact_jobs_placed": e.extra("jobs_placed"),
        "heuristic_moves": h.moves,
        "exact_moves": e.moves,
        "heuristic_gpus_moved": h.gpus_moved,
        "exact_gpus_moved": e.gpus_moved,
        "exact_status": e.status,
        "restricted": e.extra("restricted"),
        "optimal_within_neighbourhood": e.extra("optimal_within_neighbourhood"),
        "moves_saved": h.moves - e.moves if h.extra("jobs_placed") == e.extra("jobs_placed") else None,
        "heuristic_wall_s": h.wall_s,
        "exact_wall_s": e.wall_s,
    }
    return DefragComparison(heuristic=heuristic, exact=exact, gap=gap)
