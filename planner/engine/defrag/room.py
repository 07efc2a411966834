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

import numpy as np

from planner import rules
from planner.cluster import Cluster
from planner.engine.common import PlanBug, PlanOptionError
from planner.engine.defrag.assembly import _finish
from planner.engine.defrag.methods import check_exact_size
from planner.engine.defrag.options import DEFAULT_ROOM_REQUESTS, DefragOptions, room_shape
from planner.heuristics.switch_room import RoomShape, gains, largest_domain, make_switch_room, room_bound, room_counts
from planner.limits import MoveBudget
from planner.metrics import Shape
from planner.models.room_exact import RoomOutcome, RoomSolveOptions, solve_room
from planner.plans import DefragComparison, DefragPlan, RoomGap
from planner.runtime.executors import forks_background, in_background
from planner.state import ClusterState
from planner.waves import Step, sequence_to_waves

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
    empty_nodes: Callable[[dict[str, Any], bool], object] | None = None,
) -> DefragPlan:
    """The room plan for ``cluster`` (``state``: its state with held pods locked; changed to the end
    state): the heuristic's, or with method ``exact`` the better of it and the exact model's.
    ``empty_nodes(update, finish)`` plans the same snapshot with the same limits for empty nodes
    (its moves, or with ``finish`` the validated plan): when that plan leaves more room than the
    heuristic's, it is the plan returned (``_or_empty_nodes``)."""
    rooms = room_shapes(cluster, state, options)
    counts_before = room_counts(state, rooms)
    bounds = [room_bound(state, room) for room in rooms]
    weights = None if options.weights is None else [shape_weights(rooms, options.weights)[room.shape] for room in rooms]
    solved: RoomOutcome | None = None
    updates: list[dict[str, Any]] = [{}, {"max_moves": None}][: 1 + (options.max_moves is not None)]  # the empty-nodes plans compared
    compared = empty_nodes is not None and options.method != "exact"
    kind = options.executor if compared else "inline"
    # forked, IPC runs its partitions inline: one core for it, one for the heuristic (the same plan for any workers)
    alone = {"workers": 1} if forks_background(options.workers, kind) else {}

    def others() -> list[Any]:
        assert empty_nodes is not None
        return [empty_nodes({**update, **alone}, False) for update in updates]

    # the empty-nodes plans' moves in a forked process while the heuristic runs here (inline: when asked for)
    with in_background(others, options.workers, kind) as early:
        if options.method == "exact":
            if weights is not None:
                raise PlanOptionError("weights", "the exact room model plans shape by shape (largest first); drop --weights or use --method heuristic")
            check_exact_size(state, options)
            steps, solved, exact_extra = exact_room(state, rooms, options, budget)
            extra = {**extra, **exact_extra}
            name = "room-exact"
        else:
            outcome = make_switch_room(state, rooms, budget, options.seed, weights)
            extra = {**extra, "domains_tried": outcome.domains_tried, "domains_cleared": outcome.domains_cleared}
            steps, name = sequence_to_waves(outcome.moves), "room"
        if not any(steps):
            extra["reason"] = _why_no_moves(counts_before, bounds, solved)
        plan = _finish(cluster, state, steps, before, options, name, start, extra, {}, pristine)
        counts_after = counts_after_plan(pristine, plan, rooms)
        moves = early() if compared and counts_after != bounds else None  # at every bound: no plan leaves more room
    if solved is None:
        assert plan.report is not None
        plan.report.room_plan = "switch-targeted"  # type: ignore[attr-defined]  # an extra field (SolveReport allows them)
    if moves is not None:
        assert empty_nodes is not None
        plan, counts_after = _or_empty_nodes(pristine, plan, counts_after, rooms, weights, list(zip(updates, moves)), empty_nodes, options.max_moves)
    worse = counts_after < counts_before if weights is None else _dot(weights, counts_after) < _dot(weights, counts_before)
    if worse or any(after > bound for after, bound in zip(counts_after, bounds)):
        raise PlanBug(f"room plan: counts {counts_before} -> {counts_after} against bounds {bounds}")
    report = plan.report
    assert report is not None
    report.bound_source = "room"  # type: ignore[attr-defined]  # SolveReport allows extra fields (a planner's own report keys)
    shapes = [
        {"shape": str(room.shape), "level": _level_name(room.level), "before": b, "after": a, "bound": u}
        for room, b, a, u in zip(rooms, counts_before, counts_after, bounds)
    ]
    if solved is not None:
        report.objective = counts_after[0]
        report.bound = bounds[0]
        _claims(cluster, plan, solved, counts_after, shapes, options)
        report.gap = round((report.bound - counts_after[0]) / max(report.bound, 1), 6)
    else:
        _claim(report, counts_after, bounds, weights)
    report.room = {"level": options.room_level, "shapes": shapes}  # type: ignore[attr-defined]  # an extra field, as bound_source above
    if weights is not None:
        report.room["weights"] = {str(room.shape): weight for room, weight in zip(rooms, weights)}  # type: ignore[attr-defined]  # an extra field, as above
    report.wall_s = round(time.perf_counter() - start, 3)
    return plan


def _why_no_moves(counts_before: list[int], bounds: list[int], solved: RoomOutcome | None) -> str:
    if counts_before == bounds:
        return "every count is at its upper bound"
    if solved is not None:
        return "neither the heuristic nor the exact model found moves that raise the counts within the limits (the status says whether that is proven)"
    return "no switch could hold one more request by moving pods to other switches within the limits (a heuristic: not a proof that no plan does)"


def exact_room(state: ClusterState, rooms: list[RoomShape], options: DefragOptions, budget: MoveBudget) -> tuple[list[list[Step]], RoomOutcome, dict[str, Any]]:
    """The heuristic for a warm start, then the exact model (``models/room_exact.py``) for the rest of the
    time limit; the better executed plan of the two (counts in shape order, then fewest moves, then
    fewest GPUs moved). ``state`` is changed to its end state."""
    begin = time.perf_counter()
    scratch = state.clone()
    heuristic = make_switch_room(scratch, rooms, budget.copy(), options.seed)
    heuristic_waves = sequence_to_waves(heuristic.moves)
    movable = np.flatnonzero((state.pod_node >= 0) & ~state.pod_locked)
    hint = {int(p): int(scratch.pod_node[p]) for p in movable}

    def score(waves: list[list[Step]]) -> tuple[float, ...]:
        end = state.clone()
        for wave in waves:
            for p, _, destination in wave:
                end.move(p, destination)
        moves = sum(len(w) for w in waves)
        return (*room_counts(end, rooms), -moves, -float(sum(state.pod_gpus[p] for w in waves for p, _, _ in w)))

    solve_options = RoomSolveOptions(
        options.solver,
        max(0.5, options.time_limit_s - (time.perf_counter() - begin)),
        options.solver_workers,
        options.formulation,
        options.seed,
        options.deterministic,
    )
    outcome = solve_room(state, rooms, solve_options, budget, hint, score, [room_bound(state, room) for room in rooms])
    extra: dict[str, Any] = {
        "formulation": outcome.formulation,
        "units": "exact" if outcome.exact_units else "relaxed",
        "variables": outcome.variables,
        "constraints": outcome.constraints,
        "solver_status": outcome.solver_status,
        "solver_message": outcome.message,
        "routed_moves": outcome.routed_moves,
        "dropped_moves": outcome.dropped_moves,
        "heuristic_counts": list(score(heuristic_waves)[: len(rooms)]),
        "solves": outcome.history,
    }
    waves = outcome.waves
    if waves is None:
        extra["fallback"] = f"heuristic: the solver returned no solution ({outcome.solver_status}: {outcome.message})"
        waves = heuristic_waves
    elif score(heuristic_waves) > score(waves):
        extra["fallback"] = "heuristic: its plan is better than the executable exact plan (counts, then moves, then GPUs moved)"
        extra["routed_moves"] = extra["dropped_moves"] = 0  # they described the exact plan, not the one returned (as defrag's exact does)
        waves = heuristic_waves
    for wave in waves:
        for p, _, destination in wave:
            state.move(p, destination)
    return waves, outcome, extra


def _claims(cluster: Cluster, plan: DefragPlan, solved: RoomOutcome, counts: list[int], shapes: list[dict[str, Any]], options: DefragOptions) -> None:
    """What the exact model's first solve proves about the plan returned: its status (``optimal`` only
    for the whole lexicographic objective), the bound of the first shape, each shape's proven maximum."""
    report = plan.report
    assert report is not None
    proof = solved.proof
    index = {pod.name: p for p, pod in enumerate(cluster.pods)}
    nodes = {node.name: n for n, node in enumerate(cluster.nodes)}
    waves = [[(index[m.pod], nodes[m.from_], nodes[m.to]) for m in wave] for wave in plan.waves]
    known = [int(shape["bound"]) for shape in shapes]
    report.solver = options.solver
    first = proof.bounds[0]
    if first is not None and counts[0] > first:  # a bug in the model: its bounds are withheld, the plan reported as found
        report.bound_error = f"the plan's count {counts[0]} is above the model's bound {first}"  # type: ignore[attr-defined]  # an extra field
        report.status = "feasible"
        return
    if first is not None and report.bound is not None and first < report.bound:
        report.bound, report.bound_source = first, "solver"  # type: ignore[attr-defined]  # an extra field
        shapes[0]["bound"] = known[0] = first
    for shape, bound in zip(shapes, proof.lexicographic_bounds(counts, known)):
        shape["lexicographic_bound"] = bound
    optimal = proof.optimal(counts, known, waves)
    if optimal:
        report.status = "optimal"
    elif solved.solver_status in ("error", "infeasible"):
        report.status = "heuristic"
    else:
        report.status = "timeout" if solved.waves is None else "feasible"
    report.lexicographic_optimal = optimal  # type: ignore[attr-defined]  # an extra field
    report.moves_bound = proof.moves_bound(counts, known)  # type: ignore[attr-defined]  # an extra field


def compare_room(cluster: Cluster, options: DefragOptions, plan: Callable[[Cluster, DefragOptions], Any]) -> DefragComparison:
    """The room heuristic and the exact room model on the same snapshot, side by side (``plan``: the
    defrag planner, which stamps and validates each plan)."""
    check_exact_size(ClusterState(cluster), options)
    solver_options = {"solver", "time_limit_s", "solver_workers", "formulation", "deterministic", "force"}
    heuristic = plan(cluster, options.model_copy(update={"method": "heuristic", **{k: DefragOptions.model_fields[k].default for k in solver_options}}))
    exact = plan(cluster, options.model_copy(update={"method": "exact"}))
    assert isinstance(heuristic, DefragPlan) and isinstance(exact, DefragPlan)
    h, e = heuristic.report, exact.report
    assert h is not None and e is not None
    h_shapes, e_shapes = h.room["shapes"], e.room["shapes"]  # type: ignore[attr-defined]  # the room report (plan_room)
    bounds = [min(a["bound"], b["bound"]) for a, b in zip(h_shapes, e_shapes)]
    gap: RoomGap = {
        "shapes": [shape["shape"] for shape in e_shapes],
        "heuristic_counts": [shape["after"] for shape in h_shapes],
        "exact_counts": [shape["after"] for shape in e_shapes],
        "bounds": bounds,
        "exact_status": e.status,
        "gap_first_shape": e_shapes[0]["after"] - h_shapes[0]["after"],
        "heuristic_to_bound": bounds[0] - h_shapes[0]["after"],
        "heuristic_moves": h.moves,
        "exact_moves": e.moves,
        "heuristic_wall_s": h.wall_s,
        "exact_wall_s": e.wall_s,
    }
    return DefragComparison(heuristic=heuristic, exact=exact, gap=gap)


EMPTY_NODES = {"objective": "empty-nodes", "requests": None, "for_pending": False, "room_level": "asw", "weights": None}
"""The options' room fields at their defaults: the empty-nodes plan beside a room plan."""


def counts_after_plan(pristine: ClusterState, plan: DefragPlan, rooms: list[RoomShape]) -> list[int]:
    """The room counts after every move of ``plan`` (validated), made on a copy of the snapshot's
    state ``pristine``: a recount independent of the heuristic's tally, without building a state
    from the cluster the plan leaves (seconds at 37,707 nodes)."""
    end = pristine.clone()
    for wave in plan.waves:
        for move in wave:
            end.move(end.pod_index[move.pod], end.node_index[move.to])
    return room_counts(end, rooms)


def counts_after_steps(pristine: ClusterState, steps: list[list[Step]], rooms: list[RoomShape]) -> list[int]:
    """The room counts after ``steps`` (pod, from, to indices), made on a copy of ``pristine``."""
    end = pristine.clone()
    for wave in steps:
        for p, _, destination in wave:
            end.move(p, destination)
    return room_counts(end, rooms)


def _or_empty_nodes(
    pristine: ClusterState,
    plan: DefragPlan,
    counts: list[int],
    rooms: list[RoomShape],
    weights: list[float] | None,
    others: list[tuple[dict[str, Any], list[list[Step]]]],
    empty_nodes: Callable[[dict[str, Any], bool], object],
    max_moves: int | None,
) -> tuple[DefragPlan, list[int]]:
    """The switch-targeted plan and its counts, or an empty-nodes plan and its counts when they are
    better (lexicographically, or by the weighted sum): a room plan never leaves less room than the
    default plan would at the same limits. The empty-nodes plans (``others``: the options' update and
    the plan's moves): with the same limits, and with ``max_moves`` only, the one planned without it
    when its moves keep within it. Each is compared by the counts its moves leave, and finished
    (``empty_nodes(update, True)``) only when it is the plan returned, its counts checked against
    those compared. ``report.room_plan`` says which plan was returned."""
    better = gains(weights)
    for relaxed, (update, steps) in zip((False, True), others):
        if relaxed and sum(len(wave) for wave in steps) > (max_moves or 0):
            continue
        other_counts = counts_after_steps(pristine, steps, rooms)
        if not better(other_counts, counts):
            continue
        other = empty_nodes(update, True)
        assert isinstance(other, DefragPlan) and other.report is not None
        finished = counts_after_plan(pristine, other, rooms)
        if finished != other_counts or len(other.moves()) != sum(len(wave) for wave in steps):
            raise PlanBug(f"the empty-nodes plan finished leaves counts {finished}, its moves counted {other_counts}")
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
