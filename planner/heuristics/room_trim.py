"""Move-minimal pass for room plans (issue 44): the same room counts as an end state, with fewer moves.

The exact room model's count phases maximise the Fig. 14 counts and give moves no weight, so their
end states move far more pods than the rooms need (hundreds on 500-node snapshots, where a cheapest
plan with the same counts moves tens); such an end state is a poor start for the moves phase and hard
to route make-before-break. This pass works on the end state (array state) and never lowers a count
of any shape (``switch_room.room_counts``, each shape on its own) nor adds a move:

*Return home*: a moved pod goes back to its home node if it fits there in the end state (the rules'
``fits``) and every count holds after it; largest GPU request first (so the GPUs moved fall most),
then by index, repeated until nothing changes. Deterministic: no randomness, a fixed order.

A count changes only in the domains of the nodes a trial touches, so each trial recounts those
domains (``_Counts``), not the cluster.
"""

from __future__ import annotations

import numpy as np

from planner.capacity import gpu_slots
from planner.heuristics.switch_room import RoomShape, domain_groups
from planner.limits import MoveBudget
from planner.state import PENDING, ClusterState


class _Counts:
    """Per shape, every node's slots and every domain's room count, updated for the nodes a move touches."""

    def __init__(self, state: ClusterState, rooms: list[RoomShape]):
        self.state, self.rooms = state, rooms
        self.groups = [domain_groups(state, room.level) for room in rooms]
        self.slots = [gpu_slots(state, room.shape).astype(np.float64) for room in rooms]
        self.members = [{g: np.flatnonzero(groups == g) for g in range(int(groups.max(initial=-1)) + 1)} for groups in self.groups]

    def _domain_counts(self, nodes: np.ndarray) -> list[list[int]]:
        """Per shape, the room count of each domain of ``nodes`` (sorted by domain)."""
        out = []
        for k, room in enumerate(self.rooms):
            domains = sorted({int(g) for g in self.groups[k][nodes].tolist() if g >= 0})
            out.append([int(np.floor(self.slots[k][self.members[k][g]].sum() / room.shape.gpus + 1e-9)) for g in domains])
        return out

    def apply(self, moves: list[tuple[int, int]]) -> bool:
        """Make ``moves`` (pod, destination) in order if, after all of them, each shape's count summed
        over the domains they touch (so its count over the cluster) is not lower than before; one
        domain may lose a request another gains. Else undo them. True if they were made."""
        s = self.state
        undo = [(p, int(s.pod_node[p])) for p, _ in moves]
        touched = np.array(sorted({n for p, d in moves for n in (int(s.pod_node[p]), d)}), dtype=np.int64)
        before = self._domain_counts(touched)
        old = [slots[touched].copy() for slots in self.slots]
        for p, destination in moves:
            s.move(p, destination)
        for k, room in enumerate(self.rooms):
            self.slots[k][touched] = gpu_slots(s, room.shape, touched)
        after = self._domain_counts(touched)
        if all(sum(a) >= sum(b) for a, b in zip(after, before)):
            return True
        for p, origin in reversed(undo):
            s.move(p, origin)
        for k in range(len(self.rooms)):
            self.slots[k][touched] = old[k]
        return False


def trim_room_end_state(start: ClusterState, end: ClusterState, rooms: list[RoomShape]) -> int:
    """Mutate ``end`` (reached from ``start`` by moves only) towards ``start`` without lowering any
    shape's room count; return how many pods went back home."""
    home = start.pod_node
    counts = _Counts(end, rooms)
    returned = 0
    changed = True
    while changed:
        changed = False
        movers = np.flatnonzero((end.pod_node != home) & (home != PENDING) & (end.pod_node != PENDING))
        order = movers[np.lexsort((movers, -end.pod_gpus[movers]))]
        for p in order.tolist():
            h = int(home[p])
            if int(end.pod_node[p]) == h:  # went home already, with a pod that exchanged places with it
                continue
            went = 1 if end.fits(p, h) and counts.apply([(p, h)]) else _swap_home(end, home, counts, p, h)
            returned += went
            changed = changed or went > 0
    return returned


def _legal_where_it_is(end: ClusterState, p: int) -> bool:
    """Does pod p pass the rules on its node beside everything else there (``fits`` on its own node)?"""
    n = int(end.pod_node[p])
    end.unplace(p)
    legal = end.fits(p, n)
    end.place(p, n)
    return legal


def _swap_home(end: ClusterState, home: np.ndarray, counts: _Counts, p: int, h: int) -> int:
    """p goes home to h once one pod q that arrived on h leaves it: for q's own home (a move saved
    too) or for the node p now holds (the two exchange places); the first that keeps every count
    and leaves both pods legal where they end (the rules' ``fits``, on the state after both moves).
    Returns how many pods went home (0, 1, or 2 when q went home too)."""
    at = int(end.pod_node[p])
    arrived = sorted((q for q in end.node_pods[h] if int(home[q]) != h and not end.pod_locked[q]), key=lambda q: (-end.pod_gpus[q], q))
    for q in arrived:
        for other in dict.fromkeys((int(home[q]), at)):
            if other in (h, PENDING):
                continue
            end.move(q, other)
            end.move(p, h)
            legal = _legal_where_it_is(end, q) and _legal_where_it_is(end, p)
            end.move(p, at)
            end.move(q, h)
            if legal and counts.apply([(q, other), (p, h)]):
                return 2 if other == int(home[q]) else 1
    return 0


def retarget_dropped(start: ClusterState, end: ClusterState, rooms: list[RoomShape], dropped: list[tuple[int, int, int]], budget: MoveBudget) -> int:
    """Send each pod of ``dropped`` (moves the make-before-break router could not start: a cycle of
    full nodes, under ``move_once`` no detour) to another node where it fits in the end state
    ``end`` and every count holds, so that a new routing can start it; ``end`` is changed. Candidates:
    nodes whose move from the pod's home the budget allows and that no moved pod enters (their room
    is there to take), then best fit (fewest free devices), then index. Returns how many pods got a
    new destination; each is still one move."""
    counts = _Counts(end, rooms)
    entered = np.zeros(len(end.node_names), dtype=bool)
    moved = np.flatnonzero((end.pod_node != start.pod_node) & (start.pod_node != PENDING))
    entered[end.pod_node[moved]] = True
    changed = 0
    for p, source, destination in sorted(dropped, key=lambda step: (-end.pod_gpus[step[0]], step[0])):
        if int(end.pod_node[p]) != destination:
            continue
        options = end.feasible_nodes(p)
        options[[source, destination]] = False
        nodes = np.flatnonzero(options)
        nodes = nodes[[budget.allows(source, int(n)) for n in nodes.tolist()]] if len(nodes) else nodes
        free = end.free_devices()[nodes]
        for n in nodes[np.lexsort((nodes, free, entered[nodes]))].tolist():
            if counts.apply([(p, n)]):
                entered[n] = True
                changed += 1
                break
    return changed
