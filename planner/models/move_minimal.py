"""Move-minimal pass over a defrag plan: at least as many empty nodes, fewer moves (issue 12, item 4).

Two modes (``DefragOptions.trim``):

* ``greedy`` (``heuristics/trim.py``): the plan's end state without double moves, pods sent back
  home where they fit, routed again. No solver; any cluster size; deterministic.
* ``exact``: after ``greedy``, the exact defrag model (``models/defrag.py``) re-solved for the
  fewest moves (then GPUs moved) among end states with at least as many empty nodes as the plan,
  hinted with the greedy end state. *Which* nodes end empty is free: only their number is held.
  On a snapshot within ``WHOLE_MAX_NODES`` nodes and ``WHOLE_MAX_PAIRS`` (pod, node) pairs the model
  covers the whole cluster within the user's budgets, so its bound is a lower bound on the moves of
  *every* plan that ends with that many empty nodes (``moves_bound``; the plan is proven
  move-minimal when it meets it). Larger snapshots are cut into *pieces*: the nodes the plan
  touches, grouped by the moves that link them (a pod's source and destination in one piece where
  the piece size allows), each re-solved with the pods that cross its border held where the plan
  puts them and its own empty-node count held. A piece's bound says nothing about the whole plan, so
  no bound is reported then (``pieces`` says so).

The result is routed into make-before-break waves by ``waves.target_to_waves`` and returned only
when it empties at least as many nodes with fewer moves (then fewer GPUs moved) and drops no move.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.heuristics.trim import end_state, plan_cost, route_if_better, trim_plan
from planner.limits import MoveBudget
from planner.models.backends import solve
from planner.models.defrag import build_defrag_model
from planner.models.defrag_data import ModelTimeout
from planner.models.defrag_exact import ExactOptions, model_size
from planner.state import PENDING, ClusterState
from planner.waves import Step

TRIMS = ("off", "greedy", "exact")
WHOLE_MAX_NODES = 1000
WHOLE_MAX_PAIRS = 200_000
"""The exact re-solve covers the whole cluster up to this size (the exact planner's own limits):
at 200 ASI-like nodes it took 0.1-3 s (benchmarks/results/defrag_moves.md)."""
PIECE_NODES = 200
"""Nodes per piece above that size."""
MIN_PIECE_S = 2.0
"""Time given to a piece at least (an even split of a short limit over many pieces would leave each
too little to build and solve its model); pieces with the most excess moves go first."""


@dataclass
class MoveMinimal:
    """The plan after the pass, and what the pass did and proved."""

    waves: list[list[Step]]
    report: dict[str, Any] = field(default_factory=dict)


def minimise_moves(state: ClusterState, waves: list[list[Step]], budget: MoveBudget, trim: str, exact: ExactOptions | None = None) -> MoveMinimal:
    """The pass ``trim`` over ``waves`` (from ``state``, not changed), within ``budget``."""
    moves_before, gpus_before = plan_cost(state, waves)
    report: dict[str, Any] = {"trim": trim, "moves_before_trim": moves_before, "gpus_moved_before_trim": round(gpus_before, 6)}
    if trim == "off":
        return MoveMinimal(waves, {})
    if moves_before == 0:  # nothing to trim; no plan has fewer than 0 moves
        proven = {"moves_bound": 0, "move_minimal": True} if trim == "exact" else {}
        return MoveMinimal(waves, {**report, "moves_saved": 0, "gpus_moved_saved": 0.0, **proven})
    greedy = trim_plan(state, waves, budget)
    best = greedy.waves
    report["returned_home"] = greedy.returned_home
    if greedy.kept_original is not None:
        report["greedy_kept_plan"] = greedy.kept_original
    if trim == "exact":
        assert exact is not None
        empties = int((end_state(state, waves).pods_per_node == 0).sum())
        best = _exact_pass(state, best, budget, empties, exact, report)
    moves_after, gpus_after = plan_cost(state, best)
    report.update(moves_saved=moves_before - moves_after, gpus_moved_saved=round(gpus_before - gpus_after, 6))
    return MoveMinimal(best, report)


def _exact_pass(
    state: ClusterState, waves: list[list[Step]], budget: MoveBudget, empties: int, options: ExactOptions, report: dict[str, Any]
) -> list[list[Step]]:
    deadline = time.perf_counter() + options.time_limit_s
    end = end_state(state, waves)
    _, pairs = model_size(state)
    whole = len(state.node_names) <= WHOLE_MAX_NODES and pairs <= WHOLE_MAX_PAIRS
    pieces = [np.arange(len(state.node_names))] if whole else _pieces(state, end)
    report.update(trim_scope="whole cluster" if whole else f"{len(pieces)} piece(s) of at most {PIECE_NODES} nodes touched by the plan", trim_solves=[])
    if not whole:
        pieces = _most_excess_first(state, end, pieces)
    for k, nodes in enumerate(pieces):
        left = deadline - time.perf_counter()
        if left < 0.2:
            report["trim_pieces_skipped"] = len(pieces) - k
            break
        share = min(left, max(MIN_PIECE_S, left / (len(pieces) - k)))
        record = _solve_piece(state, end, nodes, budget if whole else budget.subset(nodes), options, share, whole)
        report["trim_solves"].append(record)
        if whole and record.get("moves_bound") is not None:
            report["moves_bound"] = record["moves_bound"]
    best, why = route_if_better(state, waves, end, budget)
    if why is not None:
        report["exact_kept_plan"] = why
    moves, _ = plan_cost(state, best)
    if "moves_bound" in report:
        report["move_minimal"] = moves <= report["moves_bound"]
    return best


def _solve_piece(
    state: ClusterState, end: ClusterState, nodes: np.ndarray, budget: MoveBudget, options: ExactOptions, seconds: float, whole: bool
) -> dict[str, Any]:
    """Re-solve ``nodes`` for fewest moves at its empty-node count; ``end`` takes the solution when
    the model finds one (every pod of the piece on a node of the piece, capacities checked by the model)."""
    sub, local_pods = _piece_state(state, end, nodes)
    floor = int((end.pods_per_node[nodes] == 0).sum())
    clock = time.perf_counter()
    try:
        model = build_defrag_model(sub, budget, frozenset(), options.formulation, clock + seconds)
    except ModelTimeout as err:
        return {"nodes": len(nodes), "status": "timeout", "message": str(err)}
    empty_set = set(model.empty_vars)
    tail = [(v, c) for v, c in model.milp.objective.items() if v not in empty_set]
    milp = model.milp.with_objective(tail, model.milp.objective_offset, [([(e, 1) for e in model.empty_vars], floor, None, "empties")])
    movable = [k for k in range(len(sub.pod_names)) if sub.pod_node[k] != PENDING and not sub.pod_locked[k]]
    hint = model.hint({k: int(np.searchsorted(nodes, end.pod_node[local_pods[k]])) for k in movable})
    result = solve(
        milp,
        options.solver,
        max(0.5, seconds - (time.perf_counter() - clock)),
        options.solver_workers,
        hint,
        options.seed,
        options.deterministic,
        options.strict,
    )
    record: dict[str, Any] = {"nodes": len(nodes), "pods": len(movable), "floor_empty_nodes": floor, "status": result.status, "wall_s": round(result.wall_s, 3)}
    if result.values is not None:
        record["model_moves"] = int(round(-result.objective) // model.w2) if result.objective is not None else None
        for k, n in model.target(result.values).items():
            end.move(local_pods[k], int(nodes[n]))
    if whole and result.bound is not None and math.isfinite(result.bound) and model.exact_units:
        # W2 * d + g >= -bound for every end state with >= floor empty nodes (d pods displaced,
        # g <= G GPU units): d >= (-bound - G) / W2; half a unit absorbs solver tolerance
        record["moves_bound"] = max(0, math.ceil((-result.bound - model.gpu_max - 0.5) / model.w2))
    return record


def _piece_state(state: ClusterState, end: ClusterState, nodes: np.ndarray) -> tuple[ClusterState, np.ndarray]:
    """The piece as a state: its pods that start and end inside it at their start nodes (free), the
    pods that arrive from outside where the plan puts them (locked); pods leaving it are absent."""
    sub = end.subset(nodes)
    pods = sub.pod_ids.copy()  # cluster pod indexes == state indexes for a state built from a cluster
    inside = np.isin(state.pod_node[pods], nodes)
    sub.pod_locked = sub.pod_locked | ~inside
    local = {int(n): k for k, n in enumerate(nodes)}
    for k in np.flatnonzero(inside & (state.pod_node[pods] != end.pod_node[pods])).tolist():
        sub.move(k, local[int(state.pod_node[pods[k]])])
    return sub, pods


def _pieces(state: ClusterState, end: ClusterState) -> list[np.ndarray]:
    """Nodes the plan touches, grouped so that moves stay inside a piece where the size allows:
    components of the move graph (source - destination), packed in order into pieces of at most
    ``PIECE_NODES`` nodes; a larger component is cut in node order."""
    moved = np.flatnonzero((state.pod_node != PENDING) & (end.pod_node != state.pod_node))
    parent: dict[int, int] = {}

    def find(n: int) -> int:
        while parent.setdefault(n, n) != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for p in moved.tolist():
        a, b = find(int(state.pod_node[p])), find(int(end.pod_node[p]))
        if a != b:
            parent[max(a, b)] = min(a, b)
    components: dict[int, list[int]] = {}
    for n in sorted(parent):
        components.setdefault(find(n), []).append(n)
    pieces: list[list[int]] = []
    for members in sorted(components.values(), key=lambda c: c[0]):
        for i in range(0, len(members), PIECE_NODES):
            chunk = members[i : i + PIECE_NODES]
            if pieces and len(pieces[-1]) + len(chunk) <= PIECE_NODES:
                pieces[-1].extend(chunk)
            else:
                pieces.append(list(chunk))
    return [np.array(sorted(piece), dtype=np.int64) for piece in pieces]


def _most_excess_first(state: ClusterState, end: ClusterState, pieces: list[np.ndarray]) -> list[np.ndarray]:
    """Pieces by their excess moves, largest first (then as given): pods that move inside the piece
    although their home does not end empty. The time limit then goes where moves can be saved."""
    home = state.pod_node
    moved = (home != PENDING) & (end.pod_node != home)
    excess = moved & (end.pods_per_node[np.maximum(home, 0)] > 0)
    where = np.full(len(state.node_names), -1, dtype=np.int64)
    for k, nodes in enumerate(pieces):
        where[nodes] = k
    counts = np.bincount(where[home[excess]][where[home[excess]] >= 0], minlength=len(pieces))
    order = sorted(range(len(pieces)), key=lambda k: (-counts[k], k))
    return [pieces[k] for k in order]
