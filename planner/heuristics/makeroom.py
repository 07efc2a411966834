"""Make room for pending jobs: few migrations that let each named job start (issue 12, heuristic).

For one job (its pending pods, all of one shape) the heuristic works on the array state:

* *Filter* (``heuristics/room.py``): a node's usable room for the job is ``topology.node_slots`` (static rules, whole GPUs,
  CPUs, memory, anti-affinity). Its *optimistic* room counts every movable pod as gone (locked and
  standby pods stay). For a ``required`` job, a domain's room is bounded further by the pods *bound*
  to it (``bound_pods``: pods of jobs required under one switch or spine, which no move can take out
  of it, and every pod under ``same_asw``): they must stay on its nodes (``domain_room``). When no
  domain (the whole cluster, or one switch) has the room, the job cannot start whatever moves: that
  is the reason, found without search.
* *Score* (``heuristics/room_offers.py``): for each candidate node and each slot count ``t`` it
  could offer, the eviction sets that get it there (largest movable pods first, and pods that fit on
  another node now first; each pruned of pods it does not need). Domains are tried cheapest first
  (the estimated cost to evict, counting full clears); inside one, nodes are chosen greedily by
  eviction cost per slot gained, then GPUs per slot, free room first. The cost of an offer of the
  ``MEASURED`` cheapest nodes is *measured*: the moves its pods' relocation takes, chains included,
  by a trial undone at once (a pod that fits nowhere now costs its chain, not one move); the other
  offers are estimated (one per pod, a bound pod ``BOUND_COST``: it must be rehomed inside the domain,
  where room is scarcest; one more per pod that fits on no other node now).
* *Clear*: the chosen nodes are cleared one at a time, every evicted pod relocated with IPC's
  ejection chains (``ipc.EjectionGroup.eject``, depth 2: a direct move, else one pod of a
  destination ejected first), bound pods first, within the move budgets. A node whose pods cannot
  all be relocated has its moves undone and is replaced (the nodes cleared before it stay cleared);
  nodes that received relocated pods are scored again. Then the job's pods are started on the
  chosen nodes, each checked with ``state.fits``.

A job with ``min_available`` below its pods is tried whole first, then with that many pods (the
filter's proof asks room for that many); the rest then start where they fit without moves.

So every move is sequentially legal (``waves.sequence_to_waves`` makes waves of them) and every
placement is legal on the state after the last move. Jobs are served largest first; a placed job's
pods are locked in the working state, so a later job never moves them. Impossibility is proven for
each job alone on the snapshot, before any is served: room that runs out only beside the pods of
jobs served before is the heuristic's own doing, and the reason says it is no proof. It is a heuristic: no claim
of fewest moves (``tests/unit/test_makeroom.py`` compares it with a brute force on tiny clusters).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from planner.heuristics.ipc import EjectionGroup, GroupTask, IpcOptions
from planner.heuristics.room import (
    LEVEL_NAMES,
    Request,
    bound_pods,
    domain_room,
    domains_of,
    optimistic_slots,
    unplaceable_reason,
)
from planner.heuristics.room_offers import Offers, eviction_options, node_offers, slots_without
from planner.heuristics.topology import node_slots
from planner.limits import MoveBudget
from planner.state import ClusterState
from planner.waves import Step

__all__ = [
    "Outcome",
    "Request",
    "bound_pods",
    "domain_room",
    "domains_of",
    "eviction_options",
    "make_room",
    "optimistic_slots",
    "slots_without",
    "unplaceable_reason",
]

CHAIN_DEPTH = 2
"""Ejection chains of depth 2: move the pod directly, or eject one pod of its destination first."""
MAX_DOMAINS = 8
"""Switches (or spines) tried per ``required`` job, cheapest estimate first."""
CANDIDATES = 64
"""Nodes scored exactly per domain, at least (4 x the pods still to place when more): the rest are
ranked by a vectorised estimate only, which keeps a 37,707-node cluster cheap."""
BOUND_COST = 3.0
"""A pod bound to the job's domain counts as this many pods when choosing nodes to clear: it must
be rehomed inside the domain, where room is scarcest."""


@dataclass
class Outcome:
    """What the heuristic did for one request: its moves (execution order) and placements, or why not."""

    name: str
    moves: list[Step] = field(default_factory=list)
    placements: list[tuple[int, int]] = field(default_factory=list)
    reason: str | None = None


def make_room(state: ClusterState, requests: list[Request], budget: MoveBudget, seed: int = 0) -> list[Outcome]:
    """One outcome per request, in the order served (largest GPU demand first, then as given; a job
    that found no room beside those served before it first, when that starts more): the moves of
    all outcomes in this order are sequentially legal. ``state`` ends with the moves made
    and the placed pods placed (and locked); ``budget`` is spent by the moves."""
    order = sorted(range(len(requests)), key=lambda i: (-demand(state, requests[i]), i))
    # impossibility is proven on the snapshot itself, for each job alone: once a job is served, its
    # pods (placed where the heuristic chose) hold room no other plan has to give them
    proofs = {i: unplaceable_reason(state, requests[i], optimistic_slots(state, requests[i].pods[0]), budget) for i in order}
    if len(requests) == 1:
        return _serve_in_order(state, requests, budget, seed, order, proofs)
    # a job that found no room beside the jobs served before it is served first in a second try; the
    # try that starts more jobs (then makes fewer moves) is kept
    tries: list[tuple[tuple[int, int, int], tuple[ClusterState, MoveBudget], list[Outcome]]] = []
    for attempt in range(2):
        if attempt:
            failed = [i for i, outcome in zip(order, tries[0][2]) if outcome.reason is not None and proofs[i] is None]
            if not failed:
                break
            order = failed + [i for i in order if i not in failed]
        trial, spent = state.clone(), budget.copy()
        trial.pod_locked = state.pod_locked.copy()
        outcomes = _serve_in_order(trial, requests, spent, seed, order, proofs)
        key = (sum(o.reason is None for o in outcomes), -sum(len(o.moves) for o in outcomes), -attempt)
        tries.append((key, (trial, spent), outcomes))
    _, (trial, spent), outcomes = max(tries, key=lambda t: t[0])
    state.__dict__.update(trial.__dict__)  # ``state`` and ``budget`` end as the kept try left them
    budget.__dict__.update(spent.__dict__)
    return outcomes


def _serve_in_order(
    state: ClusterState, requests: list[Request], budget: MoveBudget, seed: int, order: list[int], proofs: dict[int, str | None]
) -> list[Outcome]:
    """Serve the requests in ``order`` on ``state``: those ``proofs`` show impossible are not tried."""
    served: list[str] = []
    outcomes = []
    for i in order:
        if proofs[i] is not None:
            outcomes.append(Outcome(requests[i].name, reason=proofs[i]))
            continue
        outcomes.append(_serve(state, requests[i], budget, (seed, 0, i), served))
        if outcomes[-1].reason is None:
            served.append(requests[i].name)
    return outcomes


def demand(state: ClusterState, request: Request) -> float:
    return float(state.pod_gpus[request.pods].sum())


# ----------------------------------------------------------------------------------------------
# One request
# ----------------------------------------------------------------------------------------------


def _serve(state: ClusterState, request: Request, budget: MoveBudget, seed: tuple[int, int, int], served: list[str] | None = None) -> Outcome:
    """Make room for one request on ``state``, where the jobs ``served`` before it are placed (and locked)."""
    p = request.pods[0]
    optimistic = optimistic_slots(state, p)
    reason = unplaceable_reason(state, request, optimistic, budget)
    if reason is not None:
        if not served:
            return Outcome(request.name, reason=reason)
        # the room is short only beside the pods the heuristic started for the jobs served first
        return Outcome(
            request.name,
            reason=(
                f"no room left for it once {', '.join(served)} started where the heuristic put them (they could start elsewhere: "
                "a heuristic, this is not a proof that none exists)"
            ),
        )
    now = node_slots(state, p)
    domains = domains_of(state, request.level)
    bound = bound_pods(state, request.level, budget)
    group = EjectionGroup(GroupTask(state, IpcOptions(depth=CHAIN_DEPTH, seed=seed[0]), seed, budget))
    group.into_empty = True
    tried = 0
    # the whole job, else (``min_available``) its minimum, the other pods then starting where they fit
    for gang in dict.fromkeys((len(request.pods), request.need)):
        whole = Request(request.name, request.pods[:gang], request.level)
        room, _ = domain_room(state, whole, optimistic, budget)
        for d in _domains_cheapest_first(state, domains, now, optimistic, gang, room, bound)[:MAX_DOMAINS]:
            tried += 1
            placed = _try_domain(state, group, whole, np.flatnonzero(domains == d), now, optimistic, bound)
            if placed is not None:
                moves = list(group.trail)
                budget.spend_all(moves)
                return Outcome(request.name, moves=moves, placements=placed + _place_extras(state, request.pods[gang:], placed))
    where = f"in the {tried} cheapest {LEVEL_NAMES[request.level]}(s) " if request.level else ""
    return Outcome(
        request.name,
        reason=f"no plan found {where}by clearing nodes with ejection chains of depth {CHAIN_DEPTH} within the move budgets "
        "(a heuristic: this is not a proof that none exists)",
    )


def _movable_load(state: ClusterState, bound: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the cost of its movable pods (a pod bound to its domain counts ``BOUND_COST``) and their GPUs."""
    s = state
    movable = (s.pod_node >= 0) & ~s.pod_locked
    weight = np.ones(len(s.pod_names)) if bound is None else np.where(bound, BOUND_COST, 1.0)
    n_nodes = len(s.node_names)
    return (
        np.bincount(s.pod_node[movable], weights=weight[movable], minlength=n_nodes),
        np.bincount(s.pod_node[movable], weights=s.pod_gpus[movable], minlength=n_nodes),
    )


def _domains_cheapest_first(
    state: ClusterState,
    domains: np.ndarray,
    now: np.ndarray,
    optimistic: np.ndarray,
    k: int,
    room: np.ndarray | None = None,
    bound: np.ndarray | None = None,
) -> list[int]:
    """Domains whose room (``room`` per domain, else the optimistic room) holds the job, by estimated
    cost to evict (whole nodes cleared, best cost per slot first), then GPUs, then domain index."""
    pods, gpus = _movable_load(state, bound)
    gain = np.maximum(optimistic - now, 0)
    if room is None:
        room = np.bincount(domains, weights=optimistic)
    scored = []
    for d in np.flatnonzero(room >= k).tolist():
        members = np.flatnonzero(domains == d)
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


def _candidates(state: ClusterState, members: np.ndarray, now: np.ndarray, optimistic: np.ndarray, k: int, bound: np.ndarray | None = None) -> list[int]:
    """The nodes of a domain scored exactly: the roomiest now, and the cheapest to clear (estimate)."""
    limit = max(CANDIDATES, 4 * k)
    roomy = members[now[members] > 0]
    roomy = roomy[np.lexsort((roomy, -now[roomy]))][:limit]
    pods, gpus = _movable_load(state, bound)
    gain = optimistic[members] - now[members]
    clearable = members[gain > 0]
    ratio = pods[clearable] / (optimistic[clearable] - now[clearable])
    clearable = clearable[np.lexsort((clearable, gpus[clearable], ratio))][:limit]
    return sorted(set(roomy.tolist()) | set(clearable.tolist()))


def _try_domain(
    state: ClusterState,
    group: EjectionGroup,
    request: Request,
    members: np.ndarray,
    now: np.ndarray,
    optimistic: np.ndarray,
    bound: np.ndarray,
) -> list[tuple[int, int]] | None:
    """Clear nodes of one domain and start the job there; None (state as found) if that fails."""
    p = request.pods[0]
    offers = {n: node_offers(state, p, n, int(optimistic[n])) for n in _candidates(state, members, now, optimistic, len(request.pods), bound)}
    start = len(group.trail)
    for strict in (True, False):
        placed = _clear_and_place(state, group, request, dict(offers), optimistic, bound, strict)
        if placed is not None:
            return placed
        group.rollback(start)
    return None


def _clear_and_place(
    state: ClusterState, group: EjectionGroup, request: Request, offers: Offers, optimistic: np.ndarray, bound: np.ndarray, strict: bool
) -> list[tuple[int, int]] | None:
    """Choose nodes, clear them one by one, start the job. A node whose pods cannot all be relocated
    is put back as it was (its moves undone; nodes cleared before it stay cleared) and the choice is
    completed without it; nodes that received relocated pods are offered again as they now are.
    ``strict``: relocated pods never land on a chosen node; otherwise they may (a chain can then
    park a small pod on the node being cleared, if the job still fits there: the rules decide)."""
    p, k = request.pods[0], len(request.pods)
    cleared: dict[int, tuple[int, list[int]]] = {}
    measured = _measure(state, group, offers, k, bound, strict)

    known: dict[tuple[int, int, tuple[int, ...]], float] = {}  # (state version, node, evicted) -> cost

    def cost_of(n: int, evicted: list[int]) -> float:
        key = (state.version, n, tuple(evicted))
        if key not in known:
            cost = measured.get(key[1:])
            if cost is None:  # not measured: the estimate
                cost = _estimate(state, evicted, bound)
            elif math.isinf(cost):  # the trial failed: last (the chains may find more once other nodes are cleared)
                cost = FAILED_TRIAL + _estimate(state, evicted, bound)
            known[key] = cost
        return known[key]

    while True:
        chosen = _choose(state, offers, k, bound, cleared, cost_of)
        if chosen is None:
            return None
        blocked = frozenset(chosen) if strict else frozenset()
        for n in sorted(set(chosen) - set(cleared), key=lambda n: (_cost(state, chosen[n][1], bound), n)):
            mark = len(group.trail)
            t, evicted = chosen[n]
            if not _relocate(state, group, [q for q in evicted if state.pod_node[q] == n], bound, blocked) or slots_without(state, p, n, []) < t:
                group.rollback(mark)
                del offers[n]
                if len(group.trail) >= group.budget:
                    return None
                break
            cleared[n] = chosen[n]
            for m in {destination for _, _, destination in group.trail[mark:]} & set(offers) - set(cleared):
                offers[m] = node_offers(state, p, m, int(optimistic[m]))
                measured = {key: cost for key, cost in measured.items() if key[0] != m}
        else:
            return _place(state, request, list(chosen))


def _relocate(state: ClusterState, group: EjectionGroup, pods: list[int], bound: np.ndarray, blocked: frozenset[int]) -> bool:
    """Move ``pods`` off their node with ejection chains, bound pods (the hardest to rehome) first, largest first."""
    for q in sorted(pods, key=lambda q: (not bound[q], -state.pod_gpus[q], -state.pod_cpus[q], q)):
        # a chain's last move is not checked against the plan's budget by ``eject``: check here
        if not group.eject(q, CHAIN_DEPTH, blocked) or len(group.trail) > group.budget:
            return False
    return True


MEASURED = 24
"""Nodes whose offers are measured by a trial relocation (moves made, then undone), the cheapest by
``_estimate`` per slot first, at least (2 x the job's pods when more)."""


FAILED_TRIAL = 1000.0
"""Added to the estimate of an offer whose trial relocation failed."""


def _estimate(state: ClusterState, evicted: list[int], bound: np.ndarray) -> float:
    """``_cost``, plus one for each evicted pod that fits on no other node now (it needs a chain)."""
    return _cost(state, evicted, bound) + sum(not state.room_anywhere(q) or not state.feasible_nodes(q).any() for q in evicted)


def _measure(state: ClusterState, group: EjectionGroup, offers: Offers, k: int, bound: np.ndarray, strict: bool) -> dict[tuple[int, tuple[int, ...]], float]:
    """The moves that relocating each offer's evicted pods takes (a trial, undone; inf when it fails),
    for the offers of the ``MEASURED`` nodes cheapest by estimate per slot."""
    ranked = sorted((_estimate(state, evicted, bound) / max(min(t, k), 1), n) for n, options in offers.items() for t, evicted in options if evicted)
    nodes = list(dict.fromkeys(n for _, n in ranked))[: max(MEASURED, 2 * k)]
    measured: dict[tuple[int, tuple[int, ...]], float] = {}
    for n in nodes:
        for t, evicted in offers[n]:
            if not evicted or (n, tuple(evicted)) in measured:
                continue
            mark = len(group.trail)
            ok = _relocate(state, group, evicted, bound, frozenset([n]) if strict else frozenset())
            measured[n, tuple(evicted)] = float(len(group.trail) - mark) if ok else math.inf
            group.rollback(mark)
    return measured


def _cost(state: ClusterState, evicted: list[int], bound: np.ndarray) -> float:
    """Eviction cost of a set of pods: one per pod, ``BOUND_COST`` per pod bound to its domain."""
    return float(len(evicted) + (BOUND_COST - 1) * bound[evicted].sum())


def _choose(
    state: ClusterState,
    offers: Offers,
    k: int,
    bound: np.ndarray | None = None,
    cleared: dict[int, tuple[int, list[int]]] | None = None,
    cost_of: Callable[[int, list[int]], float] | None = None,
) -> dict[int, tuple[int, list[int]]] | None:
    """Greedy cover of k slots, starting from the nodes ``cleared`` (kept as they are): repeatedly the
    offer (a node, raised to t slots) with the least extra eviction cost per slot gained, then GPUs per
    slot, then the larger gain, then the lower node. ``cost_of(node, evicted)``: an offer's cost
    (default ``_cost``); an infinite cost is no offer."""
    bound = np.zeros(len(state.pod_names), dtype=bool) if bound is None else bound
    costed = cost_of if cost_of is not None else (lambda n, evicted: _cost(state, evicted, bound))
    chosen: dict[int, tuple[int, list[int]]] = dict(cleared or {})
    left = k - sum(t for t, _ in chosen.values())
    while left > 0:
        best = None
        for n, options in offers.items():
            if cleared and n in cleared:
                continue
            have, evicted_now = chosen.get(n, (0, []))
            cost_now, gpus_now = (costed(n, evicted_now) if evicted_now else 0.0), float(state.pod_gpus[evicted_now].sum())
            for t, evicted in options:
                if t <= have:
                    continue
                gain = min(t - have, left)
                cost = costed(n, evicted) if evicted else 0.0
                if math.isinf(cost):
                    continue
                extra_cost = max(cost - cost_now, 0.0)
                extra_gpus = max(float(state.pod_gpus[evicted].sum()) - gpus_now, 0.0)
                key = (extra_cost / gain, extra_gpus / gain, -gain, n, t)
                if best is None or key < best[0]:
                    best = (key, n, t, evicted)
        if best is None:
            return None
        _, n, t, evicted = best
        left -= min(t - chosen.get(n, (0, []))[0], left)
        chosen[n] = (t, evicted)
    return chosen


def _place_extras(state: ClusterState, pods: list[int], placed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Start the pods of a job beyond its ``min_available`` where they fit now (the job's nodes first,
    then in node order; the rules, a required topology included, checked by ``state.fits``); locks them."""
    nodes = list(dict.fromkeys(n for _, n in placed))
    others = [n for n in range(len(state.node_names)) if n not in set(nodes)]
    extras: list[tuple[int, int]] = []
    for q in pods:
        target = next((n for n in nodes + others if state.fits(q, n)), None)
        if target is not None:
            state.place(q, target)
            state.pod_locked[q] = True
            extras.append((q, target))
    return extras


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
