"""Move-minimal pass (issue 12, item 4): the same empty nodes as a defrag plan, with fewer moves.

A plan's *end state* is what matters to the operator (the nodes it empties); its moves are the cost.
IPC reaches its end state through ejection chains, and some links of a chain turn out not to be
needed once the whole plan is known: a pod ejected from a node that does not end empty could often
have stayed. This pass works on the end state (array state, any cluster size) and keeps every node
the plan leaves empty empty; it never adds a move:

1. *Return home*: a moved pod whose home node does not end empty goes back if it fits there in the
   end state (largest GPU request first, so the GPUs moved fall most).
2. *Make way*: otherwise, pods that arrived on that home node (movers anyway) are re-targeted to
   another node that does not end empty (their own home first, which saves their move too), one
   at a time, until the pod fits; if it still does not, everything is put back.

Both repeat until nothing changes. The trimmed end state is then routed into make-before-break
waves by ``waves.target_to_waves`` (as the exact planner's end states are); the caller keeps the
original plan unless the routed one ends with at least as many empty nodes and fewer moves (then
fewer GPUs moved), within the same budgets. Deterministic: pods in a fixed order, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.limits import MoveBudget
from planner.state import PENDING, ClusterState
from planner.waves import Step, target_to_waves


@dataclass
class Trimmed:
    """The routed waves of the trimmed end state, or the original ones when trimming did not help."""

    waves: list[list[Step]]
    moves_before: int
    moves_after: int
    gpus_moved_before: float
    gpus_moved_after: float
    returned_home: int
    """Pods the pass sent back to their home node (each a move saved in the end state)."""
    kept_original: str | None = None
    """Why the original waves were kept (None when the trimmed ones are returned)."""


def trim_end_state(start: ClusterState, end: ClusterState) -> int:
    """Mutate ``end`` (reached from ``start`` by moves only) towards ``start`` without emptying fewer
    nodes; return how many pods went back home."""
    home = start.pod_node
    keep_empty = end.pods_per_node == 0
    returned = 0
    changed = True
    while changed:
        changed = False
        movers = np.flatnonzero((end.pod_node != home) & (home != PENDING) & (end.pod_node != PENDING))
        movers = movers[~keep_empty[home[movers]]]
        order = movers[np.lexsort((movers, -end.pod_gpus[movers]))]
        for p in order.tolist():
            h = int(home[p])
            if end.fits(p, h) or _make_way(end, home, keep_empty, p, h):
                end.move(p, h)
                returned += 1
                changed = True
    return returned


def _make_way(end: ClusterState, home: np.ndarray, keep_empty: np.ndarray, p: int, h: int) -> bool:
    """Re-target pods that arrived on h until p fits there; on failure undo and return False."""
    arrived = [q for q in sorted(end.node_pods[h], key=lambda q: (-end.pod_gpus[q], q)) if home[q] != h and not end.pod_locked[q]]
    if not arrived:
        return False
    undo: list[tuple[int, int]] = []
    for q in arrived:
        target = _other_node(end, home, keep_empty, q, h)
        if target is None:
            continue
        undo.append((q, h))
        end.move(q, target)
        if end.fits(p, h):
            return True
    for q, back in reversed(undo):
        end.move(q, back)
    return False


def _other_node(end: ClusterState, home: np.ndarray, keep_empty: np.ndarray, q: int, h: int) -> int | None:
    """Where q (a mover now on h) could end instead: its home if it does not end empty and q fits,
    else the node that does not end empty, is not h, takes q and has the fewest free GPUs (then
    the lowest index): best fit, which keeps room where it is larger."""
    own = int(home[q])
    if not keep_empty[own] and own != h and end.fits(q, own):
        return own
    mask = end.feasible_nodes(q) & ~keep_empty
    mask[h] = False
    candidates = np.flatnonzero(mask)
    if len(candidates) == 0:
        return None
    free = end.cap_gpus[candidates] - end.whole_used[candidates] - end.share_devices[candidates]
    return int(candidates[np.lexsort((candidates, free))[0]])


def end_state(start: ClusterState, waves: list[list[Step]]) -> ClusterState:
    """The state after ``waves`` (a copy; ``start`` is not changed)."""
    end = start.clone()
    for wave in waves:
        for p, _, destination in wave:
            end.move(p, destination)
    return end


def target_of(start: ClusterState, end: ClusterState) -> dict[int, int]:
    """Every pod that ends elsewhere than it starts, and where."""
    moved = np.flatnonzero((start.pod_node != PENDING) & (end.pod_node != start.pod_node))
    return {int(p): int(end.pod_node[p]) for p in moved}


def route_if_better(
    start: ClusterState, waves: list[list[Step]], end: ClusterState, budget: MoveBudget, empties_before: int | None = None
) -> tuple[list[list[Step]], str | None]:
    """Waves reaching ``end`` (routed make-before-break within ``budget``) when they empty at least as
    many nodes as ``waves`` with fewer moves, or as many moves and fewer GPUs moved; else ``waves``
    and why they were kept. ``empties_before``: the empty nodes after ``waves``, when known."""
    moves_before, gpus_before = plan_cost(start, waves)
    if empties_before is None:
        empties_before = int((end_state(start, waves).pods_per_node == 0).sum())
    target = target_of(start, end)
    if len(target) >= moves_before and float(start.pod_gpus[list(target)].sum()) >= gpus_before:
        return waves, "the end state moves as many pods as the plan has moves"
    routed_state = start.clone()
    routed = target_to_waves(routed_state, target, budget)
    moves_after, gpus_after = plan_cost(start, routed.waves)
    empties_after = int((routed_state.pods_per_node == 0).sum())
    if routed.dropped or empties_after < empties_before or (moves_after, gpus_after) >= (moves_before, gpus_before):
        return waves, (
            f"the trimmed end state routes to {moves_after} move(s) ({len(routed.dropped)} dropped, "
            f"{empties_after} empty nodes against {empties_before}): not better"
        )
    return routed.waves, None


def plan_cost(start: ClusterState, waves: list[list[Step]]) -> tuple[int, float]:
    """(moves, GPUs moved) of a plan; a pod moved twice counts twice."""
    return sum(len(w) for w in waves), float(sum(start.pod_gpus[p] for w in waves for p, _, _ in w))


def trim_plan(start: ClusterState, waves: list[list[Step]], budget: MoveBudget) -> Trimmed:
    """Trim the plan ``waves`` (from ``start``, not changed) and route the result within ``budget``."""
    moves_before, gpus_before = plan_cost(start, waves)
    end = end_state(start, waves)
    empties = int((end.pods_per_node == 0).sum())  # before trimming changes ``end``
    returned = trim_end_state(start, end)
    best, why = route_if_better(start, waves, end, budget, empties)
    moves_after, gpus_after = plan_cost(start, best)
    return Trimmed(best, moves_before, moves_after, gpus_before, gpus_after, returned, why)
