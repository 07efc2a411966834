"""Make room for pending jobs: few migrations that let each named job start (issue 12, heuristic).

For one job (its pending pods, all of one shape) the heuristic works on the array state:

* *Filter*: a node's usable room for the job is ``topology.node_slots`` (static rules, whole GPUs,
  CPUs, memory, anti-affinity). Its *optimistic* room counts every movable pod as gone (locked and
  standby pods stay). When no domain (the whole cluster, or one switch for a ``required`` job) has
  the optimistic room, the job cannot start whatever moves: that is the reason, found without search.
* *Score*: for each candidate node and each slot count ``t`` it could offer, the eviction set that
  gets it there (largest movable pods first, then pruned of pods it does not need). Domains are tried
  cheapest first (the estimated pods to evict, counting full clears); inside one, nodes are chosen
  greedily by evicted pods per slot gained (then GPUs per slot), free room first, until the chosen
  nodes hold the job.
* *Clear*: every evicted pod is relocated off the chosen nodes with IPC's ejection chains
  (``ipc.EjectionGroup.eject``, depth 2: a direct move, else one pod of a destination ejected first),
  within the move budgets; a node whose pods cannot all be relocated is dropped and the choice made
  again. Then the job's pods are started on the chosen nodes, each checked with ``state.fits``.

So every move is sequentially legal (``waves.sequence_to_waves`` makes waves of them) and every
placement is legal on the state after the last move. Jobs are served largest first; a placed job's
pods are locked in the working state, so a later job never moves them. It is a heuristic: no claim
of fewest moves (``tests/test_makeroom.py`` compares it with a brute force on tiny clusters).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from planner import rules
from planner.heuristics.ipc import EjectionGroup, GroupTask, IpcOptions
from planner.heuristics.topology import node_slots
from planner.limits import MoveBudget
from planner.state import EPS, ClusterState
from planner.waves import Step

CHAIN_DEPTH = 2
"""Ejection chains of depth 2: move the pod directly, or eject one pod of its destination first."""
MAX_DOMAINS = 8
"""Switches (or spines) tried per ``required`` job, cheapest estimate first."""
CANDIDATES = 64
"""Nodes scored exactly per domain, at least (4 x the pods still to place when more): the rest are
ranked by a vectorised estimate only, which keeps a 37,707-node cluster cheap."""
LEVEL_NAMES = {1: "asw", 2: "spine"}


@dataclass
class Request:
    """A named pending job (or a pending pod without a job): its pods (one shape) and its topology
    level (0 anywhere, 1 one access switch, 2 one spine)."""

    name: str
    pods: list[int]
    level: int = 0


@dataclass
class Outcome:
    """What the heuristic did for one request: its moves (execution order) and placements, or why not."""

    name: str
    moves: list[Step] = field(default_factory=list)
    placements: list[tuple[int, int]] = field(default_factory=list)
    reason: str | None = None


def make_room(state: ClusterState, requests: list[Request], budget: MoveBudget, seed: int = 0) -> list[Outcome]:
    """One outcome per request, in the order served (largest GPU demand first, then as given): the
    moves of all outcomes in this order are sequentially legal. ``state`` ends with the moves made
    and the placed pods placed (and locked); ``budget`` is spent by the moves."""
    order = sorted(range(len(requests)), key=lambda i: (-demand(state, requests[i]), i))
    return [_serve(state, requests[i], budget, (seed, 0, i)) for i in order]


def demand(state: ClusterState, request: Request) -> float:
    return float(state.pod_gpus[request.pods].sum())


# ----------------------------------------------------------------------------------------------
# Filters: usable room now, and with every movable pod gone
# ----------------------------------------------------------------------------------------------


def optimistic_slots(state: ClusterState, p: int) -> np.ndarray:
    """Per node, pods shaped like p it could take if every movable pod left (an upper bound on
    ``node_slots`` after any moves: locked shares are counted by their sum, rounded up)."""
    s = state
    n_nodes = len(s.node_names)
    stays = (s.pod_node >= 0) & s.pod_locked
    where = s.pod_node[stays]
    whole = np.bincount(where, weights=s.pod_whole[stays], minlength=n_nodes)
    shares = np.bincount(where, weights=s.pod_share[stays], minlength=n_nodes)
    cpus = np.bincount(where, weights=s.pod_cpus[stays], minlength=n_nodes)
    mem = np.bincount(where, weights=s.pod_mem[stays], minlength=n_nodes)
    free_gpus = s.cap_gpus - whole - np.ceil(shares - EPS)
    need = int(s.pod_whole[p]) + (1 if s.pod_share[p] > 0 else 0)
    slots = np.full(n_nodes, len(s.pod_names), dtype=np.int64)
    for free, each in ((free_gpus, need), (s.cap_cpus - cpus, s.pod_cpus[p]), (s.cap_mem - mem, s.pod_mem[p])):
        if each > 0:
            slots = np.minimum(slots, np.floor((free + 1e-9) / each).astype(np.int64))
    eligible = s.eligible[s.pod_signature[p]].copy()
    if s.pod_groups[p]:
        slots = np.minimum(slots, 1)
        for q in np.flatnonzero(stays):
            if set(s.pod_groups[q]) & set(s.pod_groups[p]):
                eligible[s.pod_node[q]] = False
    slots[~eligible] = 0
    return np.maximum(slots, 0)


def domains_of(state: ClusterState, level: int) -> np.ndarray:
    """Each node's domain for a job of this topology level (one domain for level 0)."""
    if level == 1:
        return state.asw_domain
    if level == 2:
        return state.spine_domain
    return np.zeros(len(state.node_names), dtype=np.int64)


def unplaceable_reason(state: ClusterState, request: Request, optimistic: np.ndarray) -> str | None:
    """Why the job cannot start even with every movable pod moved away (None when it might)."""
    k = len(request.pods)
    shape = _shape_text(state, request.pods[0])
    if request.level == 0:
        room = int(optimistic.sum())
        if room >= k:
            return None
        return f"{k} pod(s) of {shape} need room for {k}; even with every movable pod moved away the cluster has room for {room}"
    domains = domains_of(state, request.level)
    totals = np.bincount(domains, weights=optimistic, minlength=int(domains.max()) + 1)
    best = int(np.argmax(totals))
    if totals[best] >= k:
        return None
    level = LEVEL_NAMES[request.level]
    node = state.cluster.nodes[int(np.flatnonzero(domains == best)[0])] if state.cluster is not None else None
    name = f" ({rules.topology_domain(node, level)})" if node is not None else ""
    return (
        f"the job requires one {level}; even with every movable pod moved away the roomiest {level}{name} "
        f"has room for {int(totals[best])} of its {k} pod(s) of {shape}"
    )


def _shape_text(state: ClusterState, p: int) -> str:
    return f"{state.pod_gpus[p]:g} GPU(s), {state.pod_cpus[p]:g} CPUs, {state.pod_mem[p]:g} GiB"


# ----------------------------------------------------------------------------------------------
# Scores: what it costs to raise a node's room
# ----------------------------------------------------------------------------------------------


def slots_without(state: ClusterState, p: int, n: int, evicted: list[int]) -> int:
    """Pods shaped like p that node n could take once the pods ``evicted`` (on n) have left."""
    s = state
    if not s.eligible[s.pod_signature[p], n]:
        return 0
    groups = set(s.pod_groups[p])
    if groups and any(groups & set(s.pod_groups[q]) for q in s.node_pods[n] if q not in evicted):
        return 0
    shares = list(s.node_shares.get(n, ()))
    for q in evicted:
        if s.pod_share[q] > 0:
            shares.remove(float(s.pod_share[q]))
    free_gpus = int(s.cap_gpus[n]) - int(s.whole_used[n]) + int(s.pod_whole[evicted].sum()) - len(rules.pack_shares(shares))
    free_cpus = float(s.cap_cpus[n] - s.used_cpus[n] + s.pod_cpus[evicted].sum())
    free_mem = float(s.cap_mem[n] - s.used_mem[n] + s.pod_mem[evicted].sum())
    slots = len(s.pod_names)
    need = int(s.pod_whole[p]) + (1 if s.pod_share[p] > 0 else 0)
    for free, each in ((free_gpus, need), (free_cpus, float(s.pod_cpus[p])), (free_mem, float(s.pod_mem[p]))):
        if each > 0:
            slots = min(slots, math.floor((free + 1e-9) / each))
    if groups:
        slots = min(slots, 1)
    return max(slots, 0)


def eviction_options(state: ClusterState, p: int, n: int, now: int, most: int) -> list[tuple[int, list[int]]]:
    """For each slot count t in (now, most]: the movable pods of n to evict for t slots (largest
    first until enough, then pruned of any not needed, smallest first kept out). Unreachable t omitted."""
    s = state
    movable = sorted((q for q in s.node_pods[n] if not s.pod_locked[q]), key=lambda q: (-s.pod_gpus[q], -s.pod_cpus[q], -s.pod_mem[q], q))
    options = []
    for t in range(now + 1, most + 1):
        chosen: list[int] = []
        for q in movable:
            if slots_without(s, p, n, chosen) >= t:
                break
            chosen.append(q)
        if slots_without(s, p, n, chosen) < t:
            break
        for q in sorted(chosen, key=lambda q: (s.pod_gpus[q], s.pod_cpus[q], q), reverse=True):
            rest = [r for r in chosen if r != q]
            if slots_without(s, p, n, rest) >= t:
                chosen = rest
        options.append((t, chosen))
    return options


# ----------------------------------------------------------------------------------------------
# One request
# ----------------------------------------------------------------------------------------------


def _serve(state: ClusterState, request: Request, budget: MoveBudget, seed: tuple[int, int, int]) -> Outcome:
    p = request.pods[0]
    optimistic = optimistic_slots(state, p)
    reason = unplaceable_reason(state, request, optimistic)
    if reason is not None:
        return Outcome(request.name, reason=reason)
    now = node_slots(state, p)
    domains = domains_of(state, request.level)
    group = EjectionGroup(GroupTask(state, IpcOptions(depth=CHAIN_DEPTH, seed=seed[0]), seed, budget))
    group.into_empty = True
    tried = 0
    for d in _domains_cheapest_first(state, domains, now, optimistic, len(request.pods))[:MAX_DOMAINS]:
        tried += 1
        placed = _try_domain(state, group, request, np.flatnonzero(domains == d), now, optimistic)
        if placed is not None:
            moves = list(group.trail)
            budget.spend_all(moves)
            return Outcome(request.name, moves=moves, placements=placed)
    where = f"in the {tried} cheapest {LEVEL_NAMES[request.level]}(s) " if request.level else ""
    return Outcome(
        request.name,
        reason=f"no plan found {where}by clearing nodes with ejection chains of depth {CHAIN_DEPTH} within the move budgets "
        "(a heuristic: this is not a proof that none exists)",
    )


def _movable_load(state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
    s = state
    movable = (s.pod_node >= 0) & ~s.pod_locked
    n_nodes = len(s.node_names)
    return (
        np.bincount(s.pod_node[movable], minlength=n_nodes).astype(np.float64),
        np.bincount(s.pod_node[movable], weights=s.pod_gpus[movable], minlength=n_nodes),
    )


def _domains_cheapest_first(state: ClusterState, domains: np.ndarray, now: np.ndarray, optimistic: np.ndarray, k: int) -> list[int]:
    """Domains whose optimistic room holds the job, by estimated pods to evict (whole nodes cleared,
    best pods-per-slot first), then GPUs, then domain index."""
    pods, gpus = _movable_load(state)
    gain = np.maximum(optimistic - now, 0)
    scored = []
    for d in np.unique(domains).tolist():
        members = np.flatnonzero(domains == d)
        if optimistic[members].sum() < k:
            continue
        deficit = k - int(now[members].sum())
        cost_pods = cost_gpus = 0.0
        if deficit > 0:
            ranked = members[gain[members] > 0]
            ratio = pods[ranked] / gain[ranked]
            for n in ranked[np.lexsort((ranked, gpus[ranked], ratio))].tolist():
                cost_pods += pods[n]
                cost_gpus += gpus[n]
                deficit -= int(gain[n])
                if deficit <= 0:
                    break
        scored.append((cost_pods, cost_gpus, d))
    return [d for _, _, d in sorted(scored)]


def _candidates(state: ClusterState, members: np.ndarray, now: np.ndarray, optimistic: np.ndarray, k: int) -> list[int]:
    """The nodes of a domain scored exactly: the roomiest now, and the cheapest to clear (estimate)."""
    limit = max(CANDIDATES, 4 * k)
    roomy = members[now[members] > 0]
    roomy = roomy[np.lexsort((roomy, -now[roomy]))][:limit]
    pods, gpus = _movable_load(state)
    gain = optimistic[members] - now[members]
    clearable = members[gain > 0]
    ratio = pods[clearable] / (optimistic[clearable] - now[clearable])
    clearable = clearable[np.lexsort((clearable, gpus[clearable], ratio))][:limit]
    return sorted(set(roomy.tolist()) | set(clearable.tolist()))


def _try_domain(
    state: ClusterState, group: EjectionGroup, request: Request, members: np.ndarray, now: np.ndarray, optimistic: np.ndarray
) -> list[tuple[int, int]] | None:
    """Clear nodes of one domain and start the job there; None (state as found) if that fails."""
    p, k = request.pods[0], len(request.pods)
    options = {
        n: [(int(now[n]), [])] * int(now[n] > 0) + eviction_options(state, p, n, int(now[n]), int(optimistic[n]))
        for n in _candidates(state, members, now, optimistic, k)
    }
    start = len(group.trail)
    for strict in (True, False):
        placed = _clear_and_place(state, group, request, dict(options), start, strict)
        if placed is not None:
            return placed
    return None


def _clear_and_place(
    state: ClusterState, group: EjectionGroup, request: Request, options: dict[int, list[tuple[int, list[int]]]], start: int, strict: bool
) -> list[tuple[int, int]] | None:
    """Choose nodes, relocate their evicted pods, start the job; drop a node that fails and choose
    again. ``strict``: relocated pods never land on a chosen node; otherwise they may (a chain can
    then park a small pod on the node being cleared, if the job still fits there: the rules decide)."""
    while True:
        chosen = _choose(state, options, len(request.pods))
        if chosen is None:
            return None
        blocked = frozenset(chosen) if strict else frozenset()
        failed = None
        for n, (_, evicted) in chosen.items():
            for q in sorted(evicted, key=lambda q: (-state.pod_gpus[q], -state.pod_cpus[q], q)):
                # a chain's last move is not checked against the plan's budget by ``eject``: check here
                if not group.eject(q, CHAIN_DEPTH, blocked) or len(group.trail) > group.budget:
                    failed = n
                    break
            if failed is not None:
                break
        if failed is None:
            placed = _place(state, request, list(chosen))
            if placed is not None:
                return placed
            failed = max(chosen, key=lambda n: (len(chosen[n][1]), n))  # the rules refused: drop the costliest node
        group.rollback(start)
        del options[failed]


def _choose(state: ClusterState, options: dict[int, list[tuple[int, list[int]]]], k: int) -> dict[int, tuple[int, list[int]]] | None:
    """Greedy cover of k slots: repeatedly the option (a node, raised to t slots) with the fewest extra
    evicted pods per slot gained, then GPUs per slot, then the larger gain, then the lower node."""
    chosen: dict[int, tuple[int, list[int]]] = {}
    left = k
    while left > 0:
        best = None
        for n, offers in options.items():
            have, evicted_now = chosen.get(n, (0, []))
            pods_now, gpus_now = len(evicted_now), float(state.pod_gpus[evicted_now].sum())
            for t, evicted in offers:
                if t <= have:
                    continue
                gain = min(t - have, left)
                extra_pods = max(len(evicted) - pods_now, 0)
                extra_gpus = max(float(state.pod_gpus[evicted].sum()) - gpus_now, 0.0)
                key = (extra_pods / gain, extra_gpus / gain, -gain, n, t)
                if best is None or key < best[0]:
                    best = (key, n, t, evicted)
        if best is None:
            return None
        _, n, t, evicted = best
        left -= min(t - chosen.get(n, (0, []))[0], left)
        chosen[n] = (t, evicted)
    return chosen


def _place(state: ClusterState, request: Request, nodes: list[int]) -> list[tuple[int, int]] | None:
    """Start the request's pods on ``nodes`` (roomiest first), each checked by the rules; locks them.
    None, with nothing placed, if some pod does not fit."""
    room = {n: slots_without(state, request.pods[0], n, []) for n in nodes}
    order = sorted(nodes, key=lambda n: (-room[n], n))
    placed: list[tuple[int, int]] = []
    for q in request.pods:
        target = next((n for n in order if state.fits(q, n)), None)
        if target is None:
            for r, _ in placed:
                state.unplace(r)
            return None
        state.place(q, target)
        placed.append((q, target))
    for q, _ in placed:
        state.pod_locked[q] = True
    return placed
