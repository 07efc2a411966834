"""Objective room (issue 44): a defrag plan that maximises the requests of given shapes that can start
within one access switch (or spine), the Fig. 14 count of ``capacity.py``, largest shape first.

The shapes come from ``requests`` (or the defaults) or, with ``for_pending``, from the snapshot's pending
jobs. The heuristic is ``heuristics/switch_room.py``; the plan is finished like every defrag plan
(``assembly._finish``: waves shaped by the per-wave limits, validated) and its report says the counts
before and after per shape (``room``), with the count of the first shape as ``objective`` and its
upper bound (``switch_room.room_bound``) as ``bound``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from planner import rules
from planner.cluster import Cluster
from planner.engine.common import PlanBug, PlanOptionError
from planner.engine.defrag.assembly import _finish
from planner.engine.defrag.options import DEFAULT_ROOM_REQUESTS, DefragOptions, room_shape
from planner.heuristics.switch_room import RoomShape, gains, largest_domain, make_switch_room, room_bound, room_counts
from planner.limits import MoveBudget
from planner.metrics import Shape
from planner.plans import DefragPlan
from planner.state import ClusterState
from planner.validate.defrag import apply_plan
from planner.waves import sequence_to_waves

LEVELS = {"asw": 1, "spine": 2}


def room_shapes(cluster: Cluster, state: ClusterState, options: DefragOptions) -> list[RoomShape]:
    """The shapes to make room for, largest first (then as given), each checked against the largest
    domain; ``PlanOptionError`` names a shape no domain can hold, or ``for_pending`` without pending jobs."""
    level = LEVELS[options.room_level]
    if options.for_pending:
        rooms = _pending_shapes(cluster, level)
        field = "for_pending"
        if not rooms:
            raise PlanOptionError(field, "the snapshot has no pending job asking for whole GPUs; give the shapes with {requests} instead")
    else:
        rooms = [RoomShape(room_shape(text), level) for text in options.requests or DEFAULT_ROOM_REQUESTS]
        field = "requests"
    rooms = sorted(dict.fromkeys(rooms), key=lambda room: -room.shape.gpus)
    if options.weights is not None:
        weights = shape_weights(rooms, options.weights)
        rooms = sorted(rooms, key=lambda room: -weights[room.shape])
    for room in rooms:
        node, gpus = largest_domain(state, room.level)
        if room.shape.gpus > gpus:
            name = rules.topology_domain(cluster.nodes[node], _level_name(room.level)) if node >= 0 else "(none)"
            name = str(name).replace("{", "(").replace("}", ")")
            raise PlanOptionError(
                field,
                f"shape {room} needs {room.shape.gpus} GPUs within one {_level_name(room.level)}, and the largest one "
                f"({name}) has {gpus} GPUs of one model; ask for at most {gpus} GPUs",
            )
    return rooms


def shape_weights(rooms: list[RoomShape], given: dict[str, float]) -> dict[Shape, float]:
    """The weight of each planned shape; ``PlanOptionError`` names a shape without one, or a weight
    for a shape not planned."""
    weights = {room_shape(text): weight for text, weight in given.items()}
    planned = {room.shape for room in rooms}
    missing = [str(shape) for shape in dict.fromkeys(room.shape for room in rooms) if shape not in weights]
    if missing:
        raise PlanOptionError("weights", f"no weight for shape {', '.join(missing)}; give one for every shape planned ({', '.join(str(s) for s in planned)})")
    unplanned = [str(shape) for shape in weights if shape not in planned]
    if unplanned:
        raise PlanOptionError("weights", f"shape {', '.join(unplanned)} is not planned for; weigh only {', '.join(str(s) for s in planned)}")
    return weights


def _level_name(level: int) -> str:
    return {1: "asw", 2: "spine"}[level]


def _pending_shapes(cluster: Cluster, level: int) -> list[RoomShape]:
    """One shape per pending job (or pending pod without a job) asking for whole GPUs: its pods'
    whole GPUs, CPUs and memory together; a job required under one spine or switch keeps that level."""
    jobs = {job.name: job for job in cluster.jobs}
    totals: dict[str, list[float]] = {}
    for pod in cluster.pods:
        if pod.node is None and not pod.standby:
            total = totals.setdefault(pod.job or pod.name, [0.0, 0.0, 0.0])
            total[0] += int(pod.gpus) if float(pod.gpus).is_integer() else 0
            total[1] += pod.cpus
            total[2] += pod.memory_gib
    rooms = []
    for name, (gpus, cpus, memory_gib) in totals.items():
        if gpus >= 1:
            topology = jobs[name].topology if name in jobs else None
            own = LEVELS[topology.level] if topology is not None and topology.mode == "required" else level
            rooms.append(RoomShape(Shape(int(gpus), round(cpus, 6), round(memory_gib, 6)), own))
    return rooms


def plan_room(
    cluster: Cluster,
    state: ClusterState,
    options: DefragOptions,
    budget: MoveBudget,
    before: dict[str, Any],
    start: float,
    extra: dict[str, Any],
    pristine: ClusterState,
    empty_nodes: Callable[[dict[str, Any]], object] | None = None,
) -> DefragPlan:
    """The room plan for ``cluster`` (``state``: its state with held pods locked; changed to the end
    state). ``empty_nodes`` plans the same snapshot with the same limits for empty nodes: when that
    plan leaves more room, it is the plan returned (``_or_empty_nodes``)."""
    rooms = room_shapes(cluster, state, options)
    counts_before = room_counts(state, rooms)
    bounds = [room_bound(state, room) for room in rooms]
    weights = None if options.weights is None else [shape_weights(rooms, options.weights)[room.shape] for room in rooms]
    outcome = make_switch_room(state, rooms, budget, options.seed, weights)
    extra = {**extra, "domains_tried": outcome.domains_tried, "domains_cleared": outcome.domains_cleared}
    if not outcome.moves:
        extra["reason"] = (
            "every count is at its upper bound"
            if counts_before == bounds
            else "no switch could hold one more request by moving pods to other switches within the limits (a heuristic: not a proof that no plan does)"
        )
    plan = _finish(cluster, state, sequence_to_waves(outcome.moves), before, options, "room", start, extra, {}, pristine)
    counts_after = room_counts(ClusterState(apply_plan(cluster, plan)), rooms)
    plan, counts_after = _or_empty_nodes(cluster, plan, counts_after, bounds, rooms, weights, empty_nodes, options.max_moves)
    worse = counts_after < counts_before if weights is None else _dot(weights, counts_after) < _dot(weights, counts_before)
    if worse or any(after > bound for after, bound in zip(counts_after, bounds)):
        raise PlanBug(f"room plan: counts {counts_before} -> {counts_after} against bounds {bounds}")
    report = plan.report
    assert report is not None
    _claim(report, counts_after, bounds, weights)
    report.bound_source = "room"  # type: ignore[attr-defined]  # SolveReport allows extra fields (a planner's own report keys)
    report.room = {  # type: ignore[attr-defined]  # an extra field, as bound_source above
        "level": options.room_level,
        "shapes": [
            {"shape": str(room.shape), "level": _level_name(room.level), "before": b, "after": a, "bound": u}
            for room, b, a, u in zip(rooms, counts_before, counts_after, bounds)
        ],
    }
    if weights is not None:
        report.room["weights"] = {str(room.shape): weight for room, weight in zip(rooms, weights)}  # type: ignore[attr-defined]  # an extra field, as above
    report.wall_s = round(time.perf_counter() - start, 3)
    return plan


EMPTY_NODES = {"objective": "empty-nodes", "requests": None, "for_pending": False, "room_level": "asw", "weights": None}
"""The options' room fields at their defaults: the empty-nodes plan beside a room plan."""


def _or_empty_nodes(
    cluster: Cluster,
    plan: DefragPlan,
    counts: list[int],
    bounds: list[int],
    rooms: list[RoomShape],
    weights: list[float] | None,
    empty_nodes: Callable[[dict[str, Any]], object] | None,
    max_moves: int | None,
) -> tuple[DefragPlan, list[int]]:
    """The switch-targeted plan and its counts, or an empty-nodes plan and its counts when they are
    better (lexicographically, or by the weighted sum): a room plan never leaves less room than the
    default plan would at the same limits. The empty-nodes plans: with the same limits, and with
    ``max_moves`` only, the one planned without it when its moves keep within it.
    ``report.room_plan`` says which plan was returned."""
    assert plan.report is not None
    plan.report.room_plan = "switch-targeted"  # type: ignore[attr-defined]  # an extra field (SolveReport allows them)
    if empty_nodes is None or counts == bounds:  # at every bound: no plan leaves more room
        return plan, counts
    better = gains(weights)
    for relaxed, update in ((False, {}), (True, {"max_moves": None}))[: 1 + (max_moves is not None)]:
        other = empty_nodes(update)
        assert isinstance(other, DefragPlan) and other.report is not None
        if relaxed and len(other.moves()) > (max_moves or 0):
            continue
        other_counts = room_counts(ClusterState(apply_plan(cluster, other)), rooms)
        if better(other_counts, counts):
            other.report.method = "room"
            other.report.status = "heuristic"  # its own status was about empty nodes (IPC's can be proven optimal there), not about room
            other.report.room_plan = (  # type: ignore[attr-defined]  # as above
                f"empty-nodes{' (planned without max_moves; its moves keep within it)' if relaxed else ''}: it leaves more room than the switch-targeted plan"
            )
            plan, counts = other, other_counts
    return plan, counts


def _claim(report: Any, counts: list[int], bounds: list[int], weights: list[float] | None) -> None:
    """The report's objective and bound: the first shape's count and bound, or with ``weights`` their
    weighted sums (a sum of upper bounds bounds the sum)."""
    objective, bound = (counts[0], bounds[0]) if weights is None else (_dot(weights, counts), _dot(weights, bounds))
    report.objective = objective
    report.bound = bound
    report.gap = round((bound - objective) / bound, 6) if bound > 0 else 0.0


def _dot(weights: list[float], values: list[int]) -> float:
    return round(sum(w * v for w, v in zip(weights, values)), 9)
