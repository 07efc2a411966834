"""One job on as few access switches as possible: the ASI paper's Algorithm 2 and largest-first.

Both work on *capacities*: how many pods of the job's shape each switch can take (``slots``), and the
job's demand in pods. A switch's usable capacity counts only what pods can use: nodes that pass the
pod's static rules, with GPUs, CPUs and memory for a whole pod (see ``switch_slots``).

* ``alg2`` is Algorithm 2 as published (ASI Sec. 4.1): repeatedly take the switch whose chunk,
  ``min(Cap(s), G_rem)``, gives the partial plan the least entropy, entropy being computed over the
  partial plan's own total (the reading under which its first step is an all-way tie); ties go to
  the lowest switch index. It is not optimal (seed-specs D: capacities {96, 32, 8, 8, 8, 8} and G =
  128 give 5 switches where 2 suffice).
* ``largest_first`` fills switches in decreasing order of capacity and places the last remainder in
  the smallest unused switch that holds it (best fit). Its allocation vector majorises every
  feasible one, so it minimises the switches spanned and the entropy (Schur-concave) at once.

Allocations are lists of ``(switch, pods)`` in the order taken; ``None`` when the switches together
cannot hold the demand (a gang is all or nothing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from planner import rules

Allocation = list[tuple[int, int]]


def entropy(counts: Sequence[float]) -> float:
    """ASI Eq. 1 in nats: H = -sum p_i log p_i with p_i = g_i / sum g (0 for one switch or none)."""
    total = math.fsum(counts)
    if total <= 0:
        return 0.0
    return max(0.0, -math.fsum((c / total) * math.log(c / total) for c in counts if c > 0))  # never -0.0


def alg2(capacities: Sequence[int], demand: int) -> Allocation | None:
    """Algorithm 2 as published: the least-entropy next chunk, ties to the lowest switch index."""
    if demand <= 0:
        return []
    if sum(capacities) < demand:
        return None
    plan: Allocation = []
    left = demand
    available = [s for s, cap in enumerate(capacities) if cap > 0]
    while left > 0 and available:
        taken = [n for _, n in plan]
        best = min(available, key=lambda s: (entropy([*taken, min(capacities[s], left)]), s))
        n = min(capacities[best], left)
        plan.append((best, n))
        left -= n
        available.remove(best)
    return plan if left == 0 else None


def largest_first(capacities: Sequence[int], demand: int) -> Allocation | None:
    """Fill the largest switches; the last remainder goes to the smallest unused switch that holds it."""
    if demand <= 0:
        return []
    if sum(capacities) < demand:
        return None
    order = sorted((s for s, cap in enumerate(capacities) if cap > 0), key=lambda s: (-capacities[s], s))
    plan: Allocation = []
    left = demand
    for k, s in enumerate(order):
        if capacities[s] >= left:
            # the remainder: best fit among the switches not used yet
            rest = order[k:]
            fit = min((t for t in rest if capacities[t] >= left), key=lambda t: (capacities[t], t))
            plan.append((fit, left))
            return plan
        plan.append((s, capacities[s]))
        left -= capacities[s]
    return None  # unreachable: the capacities hold the demand


def least_free_first(capacities: Sequence[int], demand: int) -> Allocation | None:
    """Kueue TAS ``LeastFreeCapacity``: the switch that holds the whole job with the least free
    capacity, else switches taken from the least free up (packs small remnants, spans more)."""
    if demand <= 0:
        return []
    if sum(capacities) < demand:
        return None
    order = sorted((s for s, cap in enumerate(capacities) if cap > 0), key=lambda s: (capacities[s], s))
    whole = [s for s in order if capacities[s] >= demand]
    if whole:
        return [(whole[0], demand)]
    plan: Allocation = []
    left = demand
    for s in order:
        n = min(capacities[s], left)
        plan.append((s, n))
        left -= n
        if left == 0:
            break
    return plan


def min_switches(capacities: Sequence[int], demand: int) -> int | None:
    """The fewest switches that can hold the demand (the largest ones), None if none can."""
    if demand <= 0:
        return 0
    total = 0
    for k, cap in enumerate(sorted(capacities, reverse=True), start=1):
        total += cap
        if total >= demand:
            return k
    return None


def slurm_tree(capacities: Sequence[int], demand: int, parents: Sequence[int]) -> Allocation | None:
    """Slurm's ``topology/tree`` placement as its Topology Guide describes it: the lowest-level switch
    that can satisfy the request, then its leaf switches by best fit. Here: the smallest access
    switch that holds the job; else the smallest spine (``parents[s]``: switch s's spine) whose
    switches together hold it, else the whole fabric; within it, repeatedly the smallest unused
    switch that holds the remainder, else the roomiest one (our reading of "best fit" over leaves).
    It can span more switches than largest-first: it stays under one spine."""
    if demand <= 0:
        return []
    if sum(capacities) < demand:
        return None
    whole = [s for s, cap in enumerate(capacities) if cap >= demand]
    if whole:
        return [(min(whole, key=lambda s: (capacities[s], s)), demand)]
    totals: dict[int, int] = {}
    for s, cap in enumerate(capacities):
        totals[parents[s]] = totals.get(parents[s], 0) + cap
    holding = [p for p, total in totals.items() if total >= demand]
    chosen = min(holding, key=lambda p: (totals[p], p)) if holding else None
    leaves = [s for s, cap in enumerate(capacities) if cap > 0 and (chosen is None or parents[s] == chosen)]
    plan: Allocation = []
    left = demand
    while left > 0:
        fits = [s for s in leaves if capacities[s] >= left]
        s = min(fits, key=lambda t: (capacities[t], t)) if fits else max(leaves, key=lambda t: (capacities[t], -t))
        take = min(capacities[s], left)
        plan.append((s, take))
        leaves.remove(s)
        left -= take
    return plan


CHOOSERS = {"largest-first": largest_first, "kueue-bestfit": largest_first, "alg2": alg2, "kueue-leastfree": least_free_first}
"""Kueue TAS's ``BestFit`` profile takes domains from the most free capacity down and best-fits the
last one: on switch capacities that is largest-first."""


# ----------------------------------------------------------------------------------------------
# Usable capacity and node assignment on a cluster state
# ----------------------------------------------------------------------------------------------


def node_slots(state, p: int) -> np.ndarray:
    """Per node, how many pods shaped like pod p it can still take (its static rules, whole GPUs,
    CPUs, memory and named resources; GPU shares pack onto devices beside the node's shares as
    ``rules.pack_shares`` packs them; one at most where the pod has an anti-affinity group). Pods of
    one job share a shape, so this is the switch capacity Algorithm 2 and largest-first work on."""
    cs = state
    eligible = cs.eligible[cs.pod_signature[p]].copy()
    free_gpus = cs.cap_gpus - cs.whole_used - cs.share_devices
    whole = int(cs.pod_whole[p])
    big = np.iinfo(np.int64).max // 4
    slots = np.full(len(cs.node_names), big, dtype=np.int64)
    if cs.pod_share[p] > 0:  # shares pack beside the node's shares (two halves on one device)
        slots = np.minimum(slots, rules.share_slots_per_node(cs.cap_gpus - cs.whole_used, cs.node_shares, float(cs.pod_share[p])))
    elif whole:
        slots = np.minimum(slots, free_gpus // whole)
    for cap, used, need in ((cs.cap_cpus, cs.used_cpus, cs.pod_cpus[p]), (cs.cap_mem, cs.used_mem, cs.pod_mem[p])):
        if need > 0:
            slots = np.minimum(slots, np.floor((cap - used + 1e-9) / need).astype(np.int64))
    for r in np.flatnonzero(cs.pod_res[p]).tolist():  # named resources (NodeResourcesFit)
        slots = np.minimum(slots, (cs.cap_res[:, r] - cs.used_res[:, r]) // int(cs.pod_res[p, r]))
    groups = cs.pod_groups[p]
    if groups:
        slots = np.minimum(slots, 1)
        for g in groups:
            for n in cs.group_nodes.get(g, {}):
                eligible[n] = False
    slots[~eligible] = 0
    slots[slots >= big // 2] = len(cs.pod_names)  # a pod needing nothing fits as often as there are pods
    if cs.has_standby and cs._reserve[p] is not None:  # an HP pod: the node's HP reservations (standby pods') must fit too
        for n in np.flatnonzero((cs.standby_on > 0) & (slots > 0)).tolist():
            slots[n] = _reserved_slots(cs, p, n, int(slots[n]))
    return np.maximum(slots, 0)


def _reserved_slots(cs, p: int, n: int, most: int) -> int:
    """How many of ``most`` pods shaped like HP pod p node n's HP reservations (its HP pods, standby
    ones included: ``rules.resource_shortfalls``) leave room for."""
    whole, cpus, mem, share = cs._reserve[p]
    if cpus > 0:
        most = min(most, int(np.floor((cs.cap_cpus[n] - cs.hp_cpus[n] + rules.EPS) / cpus)))
    if mem > 0:
        most = min(most, int(np.floor((cs.cap_mem[n] - cs.hp_mem[n] + rules.EPS) / mem)))
    shares = list(cs.hp_shares.get(n, ()))
    devices_left = int(cs.cap_gpus[n]) - int(cs.hp_whole[n])
    if whole:
        most = min(most, (devices_left - len(rules.pack_shares(shares))) // whole)
    elif share:
        fit = 0
        while fit < most and devices_left >= len(rules.pack_shares([*shares, *[share] * (fit + 1)])):
            fit += 1
        most = fit
    return max(most, 0)


def allocate_job(state, pods: list[int], domains: np.ndarray, method: str, rng: np.random.Generator | None = None) -> tuple[list[tuple[int, int]], str | None]:
    """Place ``pods`` (one job, one shape) on nodes: switches chosen by ``method`` (a ``CHOOSERS``
    key or ``slurm``) on usable capacity, nodes within a switch filled roomiest first; ``random``
    spreads the pods over uniformly drawn nodes with room (``rng``). ``domains``: each node's switch
    (-1: not allowed). Returns the (pod, node) pairs, or [] and the reason when the job does not fit."""
    if not pods:
        return [], None
    slots = node_slots(state, pods[0])
    slots[domains < 0] = 0
    too_small = f"{len(pods)} pods of this shape need more room than the switches have together ({int(slots.sum())} pods)"
    if method == "random":
        return _random_spread(slots, pods, rng if rng is not None else np.random.default_rng(0), too_small)
    ids, inverse = np.unique(domains, return_inverse=True)
    capacities = np.bincount(inverse, weights=slots, minlength=len(ids)).astype(np.int64).tolist()
    if method == "slurm":
        parent = np.zeros(len(ids), dtype=np.int64)
        parent[inverse] = state.spine_domain
        plan = slurm_tree(capacities, len(pods), parent.tolist())
    else:
        plan = CHOOSERS[method](capacities, len(pods))
    if plan is None:
        return [], too_small
    placed: list[tuple[int, int]] = []
    queue = list(pods)
    for switch, count in plan:
        members = np.flatnonzero((inverse == switch) & (slots > 0))
        for n in members[np.lexsort((members, -slots[members]))].tolist():
            take = min(int(slots[n]), count)
            for _ in range(take):
                placed.append((queue.pop(0), n))
            count -= take
            if count == 0:
                break
    return placed, None


def _random_spread(slots: np.ndarray, pods: list[int], rng: np.random.Generator, too_small: str) -> tuple[list[tuple[int, int]], str | None]:
    """Random spread: each pod on a node drawn uniformly from those with room left (all or nothing)."""
    if int(slots.sum()) < len(pods):
        return [], too_small
    left = slots.copy()
    placed: list[tuple[int, int]] = []
    for p in pods:
        open_nodes = np.flatnonzero(left > 0)
        n = int(open_nodes[rng.integers(len(open_nodes))])
        left[n] -= 1
        placed.append((p, n))
    return placed, None
