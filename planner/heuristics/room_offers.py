"""The make-room heuristic's offers: for one node, the slot counts it could give a job's pod and the
pods to evict for each (``heuristics/makeroom.py`` chooses among them)."""

from __future__ import annotations

import math
from collections.abc import Callable

from planner import rules
from planner.state import ClusterState


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
    devices = int(s.cap_gpus[n]) - int(s.whole_used[n]) + int(s.pod_whole[evicted].sum())
    free_cpus = float(s.cap_cpus[n] - s.used_cpus[n] + s.pod_cpus[evicted].sum())
    free_mem = float(s.cap_mem[n] - s.used_mem[n] + s.pod_mem[evicted].sum())
    slots = len(s.pod_names)
    if s.pod_share[p] > 0:  # shares pack beside the node's shares (two halves on one device)
        slots = rules.share_slots(devices, shares, float(s.pod_share[p]))
    elif s.pod_whole[p] > 0:
        slots = (devices - len(rules.pack_shares(shares))) // int(s.pod_whole[p])
    for free, each in ((free_cpus, float(s.pod_cpus[p])), (free_mem, float(s.pod_mem[p]))):
        if each > 0:
            slots = min(slots, math.floor((free + 1e-9) / each))
    if groups:
        slots = min(slots, 1)
    return max(slots, 0)


def eviction_options(
    state: ClusterState,
    p: int,
    n: int,
    now: int,
    most: int,
    slots_of: Callable[[list[int]], int] | None = None,
    first: Callable[[int], bool] | None = None,
) -> list[tuple[int, list[int]]]:
    """For each slot count t in (now, most]: the movable pods of n to evict for t slots (largest
    first until enough, then pruned of any not needed, smallest first kept out). Unreachable t omitted.
    ``slots_of(evicted)``: n's slots once ``evicted`` left (default: pods shaped like p, ``slots_without``).
    ``first(q)``: pods for which it is true are taken before the others (largest first within each)."""
    s = state
    slots = slots_of if slots_of is not None else (lambda evicted: slots_without(s, p, n, evicted))
    ahead = first if first is not None else (lambda q: True)
    movable = sorted((q for q in s.node_pods[n] if not s.pod_locked[q]), key=lambda q: (not ahead(q), -s.pod_gpus[q], -s.pod_cpus[q], -s.pod_mem[q], q))
    options = []
    k = 0  # the shortest prefix of ``movable`` with t slots is no shorter than the one with t - 1: the scan goes on from there
    for t in range(now + 1, most + 1):
        while k < len(movable) and slots(movable[:k]) < t:
            k += 1
        chosen = movable[:k]
        if slots(chosen) < t:
            break
        for q in sorted(chosen, key=lambda q: (s.pod_gpus[q], s.pod_cpus[q], q), reverse=True):
            rest = [r for r in chosen if r != q]
            if slots(rest) >= t:
                chosen = rest
        options.append((t, chosen))
    return options


Offers = dict[int, list[tuple[int, list[int]]]]
"""Per candidate node, the slot counts it could offer and the pods to evict for each."""


def node_offers(state: ClusterState, p: int, n: int, most: int) -> list[tuple[int, list[int]]]:
    """Per slot count, the eviction sets of ``eviction_options``: largest pods first, and pods that
    fit elsewhere now first (each then a single move, no chain), when the two differ."""
    now = slots_without(state, p, n, [])
    options: list[tuple[int, list[int]]] = [(now, [])] * int(now > 0) + eviction_options(state, p, n, now, most)
    seen = {(t, tuple(sorted(evicted))) for t, evicted in options}
    for t, evicted in eviction_options(state, p, n, now, most, first=lambda q: bool(state.feasible_nodes(q).any())):
        if (t, tuple(sorted(evicted))) not in seen:
            options.append((t, evicted))
    return options
