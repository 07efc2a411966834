"""Room for large jobs within one switch (issue 44): the Fig. 14 count as a defrag objective.

The *room count* of a request shape (G GPUs with c CPUs and m GiB for all of them) is
``capacity.py``'s within-switch count: per GPU model and per domain (access switch, or spine), the
floor of the domain's GPU slots (``capacity.gpu_slots``) over G, summed. The heuristic raises the
counts of the shapes in order (largest first), switch by switch:

* *Filter*: a domain whose optimistic slots (every movable pod gone, ``optimistic_node_slots``)
  cannot reach one more request is never tried.
* *Score*: domains closest to one more request first (fewest GPU slots missing), then by index.
* *Clear*: inside the domain the nodes to raise are chosen by the make-room heuristic's greedy cover
  (``makeroom._choose``: least eviction cost per slot gained), and their pods relocated with IPC's
  ejection chains (``makeroom._relocate``, depth 2) onto non-empty nodes of *other* domains (the whole
  domain is blocked; when that fails, only the chosen nodes are, so pods may move inside it). Every
  move is checked by ``state.fits`` (the rules) and spent from the plan's ``MoveBudget``.
* *Accept*: a domain's moves are kept only if the vector of counts (shapes in order) grows
  lexicographically; otherwise they are undone and the domain is not tried again for that shape.

A pod moved once is locked for the rest of the run, so the plan moves every pod at most once.

``room_bound`` is a valid upper bound on the count after any plan: per domain the optimistic slots
(locked pods stay, and a node's shares take at least the ceiling of their sum in devices), and per
component of the domains the movable pods link (by default a GPU product) the GPUs no placed pod
uses there (moves keep every placed pod placed, ``room_capacity.py``); see docs/algorithms.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner import rules
from planner.capacity import gpu_slots
from planner.heuristics.ipc import GroupTask, IpcOptions
from planner.heuristics.makeroom import BOUND_COST, CHAIN_DEPTH, _relocate, eviction_options
from planner.heuristics.room import domains_of
from planner.heuristics.room_capacity import capacity_components
from planner.heuristics.room_group import ShieldedGroup
from planner.limits import MoveBudget
from planner.metrics import Shape
from planner.state import ClusterState
from planner.waves import Step


@dataclass(frozen=True)
class RoomShape:
    """A request shape and the topology level it must start within (1 access switch, 2 spine)."""

    shape: Shape
    level: int = 1

    def __str__(self) -> str:
        return str(self.shape) + ("" if self.level == 1 else "@spine")


@dataclass
class RoomOutcome:
    """The heuristic's moves (execution order) and what it tried."""

    moves: list[Step]
    domains_tried: int = 0
    domains_cleared: int = 0


def domain_groups(state: ClusterState, level: int) -> np.ndarray:
    """Each GPU node's group for the count: (GPU model, domain at ``level``) numbered from 0; -1 for
    nodes without GPUs."""
    domains = domains_of(state, level)
    keys = state.node_model * (int(domains.max(initial=0)) + 1) + domains
    _, groups = np.unique(keys, return_inverse=True)
    return np.where(state.cap_gpus > 0, groups, -1)


def _per_group(groups: np.ndarray, slots: np.ndarray) -> np.ndarray:
    gpu = groups >= 0
    return np.bincount(groups[gpu], weights=slots[gpu], minlength=int(groups.max(initial=-1)) + 1)


def room_count(state: ClusterState, room: RoomShape) -> int:
    """Requests of ``room.shape`` that can start within one domain (``capacity.py``'s Fig. 14 count)."""
    per_group = _per_group(domain_groups(state, room.level), gpu_slots(state, room.shape))
    return int(np.floor(per_group / room.shape.gpus + 1e-9).sum())


def room_counts(state: ClusterState, rooms: list[RoomShape]) -> list[int]:
    return [room_count(state, room) for room in rooms]


def optimistic_node_slots(state: ClusterState, shape: Shape, nodes: np.ndarray | None = None) -> np.ndarray:
    """Per node (of ``nodes``, sorted, when given), an upper bound on its GPU slots for ``shape`` after
    any moves: only locked pods stay; their shares take at least the ceiling of their sum in devices."""
    s = state
    if nodes is None:
        at: slice | np.ndarray = slice(None)
        stays = np.flatnonzero((s.pod_node >= 0) & s.pod_locked)
        where, size = s.pod_node[stays], len(s.node_names)
    else:  # the same sums in the same (pod) order, over the pods of ``nodes`` only
        at = nodes
        stays = np.array(sorted(q for n in nodes.tolist() for q in s.node_pods[n] if s.pod_locked[q]), dtype=np.int64)
        where, size = np.searchsorted(nodes, s.pod_node[stays]), len(nodes)
    share_sum = np.bincount(where, weights=s.pod_share[stays], minlength=size)
    devices = s.cap_gpus[at] - np.bincount(where, weights=s.pod_whole[stays], minlength=size) - np.ceil(share_sum - 1e-9)
    slots = devices.astype(np.float64)
    for cap, used, total in ((s.cap_cpus, s.pod_cpus, shape.cpus), (s.cap_mem, s.pod_mem, shape.memory_gib)):
        if total > 0:
            free = cap[at] - np.bincount(where, weights=used[stays], minlength=size)
            slots = np.minimum(slots, np.floor((free + 1e-9) / (total / shape.gpus)))
    slots[~s.schedulable[at]] = 0
    return np.maximum(slots, 0).astype(np.int64)


def room_bound(state: ClusterState, room: RoomShape) -> int:
    """An upper bound on ``room_count`` after any plan from ``state``: per component of the groups
    (``room_capacity.capacity_components``: the groups the movable pods link), the smaller of its
    groups' optimistic counts and its unused GPUs divided by G, summed."""
    groups = domain_groups(state, room.level)
    per_domain = np.floor(_per_group(groups, optimistic_node_slots(state, room.shape)) / room.shape.gpus + 1e-9).astype(np.int64)
    components = capacity_components(state, groups)
    optimistic = np.bincount(components.of_group, weights=per_domain, minlength=len(components.unused_gpus)).astype(np.int64)
    return int(np.minimum(optimistic, components.most(room.shape.gpus)).sum())


def largest_domain(state: ClusterState, level: int) -> tuple[int, int]:
    """The GPU group (model and domain) with the most schedulable GPUs: (a node of it, its GPUs)."""
    groups = domain_groups(state, level)
    gpus = _per_group(groups, np.where(state.schedulable, state.cap_gpus, 0))
    if len(gpus) == 0:
        return -1, 0
    best = int(np.argmax(gpus))
    return int(np.flatnonzero(groups == best)[0]), int(gpus[best])


def _slots_without(state: ClusterState, shape: Shape, n: int, evicted: list[int]) -> int:
    """Node n's GPU slots for ``shape`` once the pods ``evicted`` (on n) have left."""
    s = state
    if not s.schedulable[n]:
        return 0
    shares = s.node_shares.get(n, ())
    whole, cpus, mem = 0, 0.0, 0.0  # the evicted pods' requests, summed in their order (Python floats: numpy per pod costs more)
    for q in evicted:
        q_whole, q_cpus, q_mem, q_share, *_ = s._pod_scalars[q]
        whole, cpus, mem = whole + q_whole, cpus + q_cpus, mem + q_mem
        if q_share:
            shares = list(shares)
            shares.remove(q_share)
    slots = float(int(s.cap_gpus[n]) - int(s.whole_used[n]) + whole - len(rules.pack_shares(shares)))
    for free, total in (
        (float(s.cap_cpus[n] - s.used_cpus[n]) + cpus, shape.cpus),
        (float(s.cap_mem[n] - s.used_mem[n]) + mem, shape.memory_gib),
    ):
        if total > 0:
            slots = min(slots, math.floor((free + 1e-9) / (total / shape.gpus)))
    return max(int(slots), 0)


def _clear(
    state: ClusterState, group: ShieldedGroup, shape: Shape, members: np.ndarray, need: int, optimistic: np.ndarray, protected: Callable[[float], np.ndarray]
) -> bool:
    """Raise the slots of the domain ``members`` to ``need`` by moving pods off its nodes; False
    (moves undone) when that fails. Pods go first to domains not ``protected`` (a mask over nodes:
    the domains that would lose a request to them), then to any other domain, then anywhere but the
    nodes chosen. Shielded first are the domains short of slack for all the pods moved, then those short
    of it for the largest pod alone (the pods spread over several domains: the acceptance test decides)."""
    offers: dict[int, list[tuple[int, list[int]]]] = {}
    for n in members.tolist():
        now = _slots_without(state, shape, n, [])

        known: dict[tuple[int, ...], int] = {}  # n's slots per eviction set, for this try only

        def slots_after(evicted: list[int], n: int = n, known: dict[tuple[int, ...], int] = known) -> int:
            key = tuple(evicted)
            if key not in known:  # eviction_options asks for the same sets again and again
                known[key] = _slots_without(state, shape, n, evicted)
            return known[key]

        options = eviction_options(state, -1, n, now, int(optimistic[n]), slots_after)
        offers[n] = [(now, [])] * int(now > 0) + options
    chosen = _cover(state, offers, need)
    if chosen is None:
        return False
    moved = [q for _, evicted in chosen.values() for q in evicted]
    inside = np.zeros(len(state.node_names), dtype=bool)
    inside[members] = True
    picked = np.zeros(len(state.node_names), dtype=bool)
    picked[list(chosen)] = True
    heaviest = max((_slot_weight(state, shape, [q]) for q in moved), default=0.0)
    shields = [protected(weight) | inside for weight in (_slot_weight(state, shape, moved), heaviest)] + [inside, picked]
    for k, shield in enumerate(shields):
        if any(np.array_equal(shield, earlier) for earlier in shields[:k]):
            continue  # the same try again
        mark = len(group.trail)
        order = sorted(chosen, key=lambda n: (len(chosen[n][1]), n))
        group.shield = shield
        relocated = all(_relocate(state, group, [q for q in chosen[n][1] if state.pod_node[q] == n], group.unbound, frozenset()) for n in order)
        group.shield = None
        if relocated and sum(_slots_without(state, shape, n, []) for n in members.tolist()) >= need:
            return True
        group.rollback(mark)
    return False


def _cover(state: ClusterState, offers: dict[int, list[tuple[int, list[int]]]], k: int) -> dict[int, tuple[int, list[int]]] | None:
    """``makeroom._choose``'s greedy cover of k slots (the same choices: least extra eviction cost per
    slot gained, then GPUs per slot, then the larger gain, then the lower node, then the fewer slots; a
    pod taking a whole node costs ``BOUND_COST``), each offer priced once and every step one sort of
    the offers' keys as arrays instead of a loop over them."""
    flat = [(n, t, evicted) for n, node_offers in offers.items() for t, evicted in node_offers]
    node = np.array([n for n, _, _ in flat], dtype=np.int64)
    slots = np.array([t for _, t, _ in flat], dtype=np.int64)
    pods = np.array(sorted({q for _, _, ev in flat for q in ev}), dtype=np.int64)
    extra = dict(zip(pods.tolist(), ((BOUND_COST - 1) * (state.pod_whole[pods] >= state.cap_gpus[state.pod_node[pods]])).tolist()))
    each = dict(zip(pods.tolist(), state.pod_gpus[pods].tolist()))  # per pod as Python numbers: sums over an offer's few pods
    cost = np.array([len(ev) + float(sum(extra[q] for q in ev)) for _, _, ev in flat], dtype=np.float64)
    gpus = np.array([float(sum(each[q] for q in ev)) for _, _, ev in flat], dtype=np.float64)
    have, cost_now, gpus_now = np.zeros(len(flat), dtype=np.int64), np.zeros(len(flat)), np.zeros(len(flat))
    chosen: dict[int, int] = {}
    left = k
    while left > 0:
        open_ = np.flatnonzero(slots > have)
        if len(open_) == 0:
            return None
        gain = np.minimum(slots[open_] - have[open_], left)
        extra_cost = np.maximum(cost[open_] - cost_now[open_], 0.0) / gain
        extra_gpus = np.maximum(gpus[open_] - gpus_now[open_], 0.0) / gain
        best = int(open_[np.lexsort((slots[open_], node[open_], -gain, extra_gpus, extra_cost))[0]])
        n = int(node[best])
        left -= min(int(slots[best] - have[best]), left)
        chosen[n] = best
        mine = node == n
        have[mine], cost_now[mine], gpus_now[mine] = slots[best], cost[best], gpus[best]
    return {n: (int(slots[j]), flat[j][2]) for n, j in chosen.items()}


def _slot_weight(state: ClusterState, shape: Shape, pods: list[int]) -> float:
    """GPU slots of ``shape`` that ``pods`` can take where they land: a pod takes its GPUs' worth, or
    its CPUs' or memory's when those are more (at c/G CPUs and m/G GiB a slot)."""
    weight = state.pod_gpus[pods].astype(np.float64)
    for used, total in ((state.pod_cpus, shape.cpus), (state.pod_mem, shape.memory_gib)):
        if total > 0:
            weight = np.maximum(weight, np.ceil(used[pods] / (total / shape.gpus) - 1e-9))
    return float(weight.sum())


def gains(weights: list[float] | None) -> Callable[[list[int], list[int]], bool]:
    """Whether counts beat counts: lexicographically (``rooms`` in order), or by the weighted sum."""
    if weights is None:
        return lambda new, old: new > old
    return lambda new, old: sum(w * (a - b) for w, a, b in zip(weights, new, old)) > 1e-9


class _Tally:
    """Per shape of ``rooms``: each node's GPU slots now (``gpu_slots``) and after any moves
    (``optimistic_node_slots``), and their sums per domain group, kept up to date on the nodes moves
    touch: a pass over the whole cluster at every try would make the heuristic quadratic in its size."""

    def __init__(self, state: ClusterState, rooms: list[RoomShape]):
        self.state, self.rooms = state, rooms
        by_level = {level: domain_groups(state, level) for level in sorted({room.level for room in rooms})}
        self.groups = [by_level[room.level] for room in rooms]
        self.members = {level: _members(groups) for level, groups in by_level.items()}
        self.slots = [gpu_slots(state, room.shape) for room in rooms]
        self.sums = [_group_sums(groups, slots) for groups, slots in zip(self.groups, self.slots)]
        self.optimistic = [optimistic_node_slots(state, room.shape) for room in rooms]
        self.optimistic_sums = [_group_sums(groups, slots) for groups, slots in zip(self.groups, self.optimistic)]

    def refresh(self, nodes: np.ndarray, optimistic: bool = False) -> None:
        """Recount ``nodes`` (their usage changed; with ``optimistic``, their locked pods too)."""
        nodes = np.unique(nodes)
        for i, room in enumerate(self.rooms):
            pairs = [(self.slots[i], self.sums[i], gpu_slots(self.state, room.shape, nodes))]
            if optimistic:
                pairs.append((self.optimistic[i], self.optimistic_sums[i], optimistic_node_slots(self.state, room.shape, nodes)))
            groups = self.groups[i][nodes]
            gpu = groups >= 0
            for per_node, per_group, new in pairs:
                np.add.at(per_group, groups[gpu], (new - per_node[nodes])[gpu])
                per_node[nodes] = new

    def counts(self) -> list[int]:
        return [int((sums // room.shape.gpus).sum()) for room, sums in zip(self.rooms, self.sums)]

    def short_of_slack(self, upto: int, gpus: float) -> np.ndarray:
        """Nodes of the domains that hold a request of a shape of ``rooms[:upto]`` with fewer than
        ``gpus`` GPU slots to spare: pods taking that many slots (``_slot_weight``) arriving there
        could cost a request."""
        short = np.zeros(len(self.state.node_names), dtype=bool)
        for room, groups, sums in zip(self.rooms[:upto], self.groups, self.sums):
            tight = (sums >= room.shape.gpus) & (np.mod(sums, room.shape.gpus) < gpus)
            short |= (groups >= 0) & tight[np.maximum(groups, 0)]
        return short


def _members(groups: np.ndarray) -> list[np.ndarray]:
    """The nodes of each group, ascending."""
    order = np.argsort(groups, kind="stable")
    edges = np.searchsorted(groups[order], np.arange(int(groups.max(initial=-1)) + 2))
    return [order[edges[g] : edges[g + 1]] for g in range(len(edges) - 1)]


def _group_sums(groups: np.ndarray, slots: np.ndarray) -> np.ndarray:
    return np.rint(_per_group(groups, slots)).astype(np.int64)


def _touched(trail: list[Step]) -> np.ndarray:
    return np.array([n for _, source, destination in trail for n in (source, destination)], dtype=np.int64)


def make_switch_room(state: ClusterState, rooms: list[RoomShape], budget: MoveBudget, seed: int = 0, weights: list[float] | None = None) -> RoomOutcome:
    """Moves that raise the room counts of ``rooms`` (in order: lexicographic, or with ``weights`` one
    per shape their weighted sum); ``state`` ends after them, its locks as found, and ``budget`` is
    spent by them."""
    better = gains(weights)
    locks = state.pod_locked
    state.pod_locked = locks.copy()
    group = ShieldedGroup(GroupTask(state, IpcOptions(depth=CHAIN_DEPTH, seed=seed), (seed, 0, 0), budget))
    group.into_empty = True  # a whole-node pod needs an empty node; best fit still prefers the fullest
    outcome = RoomOutcome(moves=[])
    tally = _Tally(state, rooms)
    current = tally.counts()
    for i, room in enumerate(rooms):
        members = tally.members[room.level]
        size = room.shape.gpus
        failed: set[int] = set()
        while len(group.trail) < group.budget:
            slots, optimistic = tally.sums[i], tally.optimistic_sums[i]
            need = (slots // size + 1) * size
            candidates = [g for g in np.flatnonzero(optimistic >= need).tolist() if g not in failed]
            candidates.sort(key=lambda g: (need[g] - slots[g], g))
            improved = False
            for g in candidates:  # a domain that failed is not tried again for this shape
                outcome.domains_tried += 1
                mark = len(group.trail)
                if _clear(state, group, room.shape, members[g], int(need[g]), tally.optimistic[i], functools.partial(tally.short_of_slack, i + 1)):
                    touched = _touched(group.trail[mark:])
                    tally.refresh(touched)
                    counts = tally.counts()
                    if better(counts, current):
                        current, improved = counts, True
                        outcome.domains_cleared += 1
                        for p, _, _ in group.trail[mark:]:
                            state.pod_locked[p] = True  # moved once: it stays where it went
                        tally.refresh(touched, optimistic=True)
                        break
                    group.rollback(mark)
                    tally.refresh(touched)
                failed.add(g)
            if not improved:
                break
    state.pod_locked = locks
    outcome.moves = list(group.trail)
    budget.spend_all(outcome.moves)
    return outcome
