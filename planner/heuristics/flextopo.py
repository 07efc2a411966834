"""FlexTopo (topology-aware preemption): NUMA filter, IMP victim search, Eq. 1 scoring.

* Filtering: a ``guaranteed`` job keeps a node only if the pod's alignment can be met there once
  every potential victim is drained (already free devices count); ``best-effort`` filters nothing.
* IMP (Incremental Minimal Preemption, Algorithm 2) per node: fail fast if evicting everything does
  not help; else all victim sets of size 1, then 2, ..., returning every feasible set of the first
  size that has one. A set is tried only when the resources it frees could cover the deficit.
* Sorting, Eq. (1): S(C) = alpha * P(C) + (1 - alpha) * T(C) over candidates C = (node, victim set),
  with T = 1 when the pod's devices sit in one NUMA domain, 0.5 in one socket, 0 across sockets
  (the paper's high / medium / low tiers; it gives no values), and P(C) = min_C' sum prio(C') /
  sum prio(C) with priorities shifted to start at 1 (the paper's 1 / sum prio is about 1e-3 and would
  never weigh against T). Ties: fewer victims, then node name.

Victims are gangs ("units", evicted whole). A pod that fits without preemption goes to the node with
the best tier (then the name). FlexTopo places one pod; for a multi-pod job the pods are placed in
turn and a last pass returns victims a later pod's eviction made unneeded (as for spotgpu). FlexTopo
does not look at lost work; the benchmark shows what that costs.
"""

from __future__ import annotations

import itertools

import numpy as np

from planner import rules
from planner.heuristics import gang
from planner.heuristics.victims import Cover, node_units
from planner.preempt_state import Ask, Fit, PreemptState

TIER_SCORE = {rules.ALIGN_NUMA: 1.0, rules.ALIGN_SOCKET: 0.5, rules.ALIGN_CROSS_SOCKET: 0.0, None: 0.0}


class FlexTopo:
    name = "flextopo"
    reprieve = True  # FlexTopo knows no gangs; with them, a victim chosen for one pod can turn out unneeded
    numa_aware = True

    def __init__(self, alpha: float = 0.5):
        self.alpha = alpha

    def place_free(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Fit] | None:
        nodes = np.flatnonzero(ps.cs.feasible_nodes(p) & allowed)
        best = None
        for n in nodes[np.argsort(gang.name_rank(ps)[nodes], kind="stable")].tolist():
            fit = ps.fit(p, n, (), ask.numa_mode or "best-effort")
            if fit is None:
                continue
            score = TIER_SCORE[fit.tier]
            if best is None or score > best[0]:
                best = (score, n, fit)
                if score == 1.0:
                    break
        return None if best is None else (best[1], best[2])

    def place_preempting(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Cover] | None:
        mode = ask.numa_mode or "best-effort"
        nodes = np.flatnonzero(gang.preemptable_nodes(ps, ask, p, allowed))
        nodes = nodes[np.argsort(gang.name_rank(ps)[nodes], kind="stable")]
        shift = 1 - int(ps.priority[ask.victims].min()) if ask.victims.any() else 1
        candidates: list[tuple[int, Cover, int]] = []
        for n in nodes.tolist():
            units = node_units(ps, n, ask.victims, ask.unit_cost)
            everything = units.leaving(units.units)
            if ps.fit(p, n, everything, mode) is None:
                continue  # fail fast (and the guaranteed filter)
            for chosen, fit in _imp(ps, p, n, units, mode):
                prio = sum(int(ps.priority[q]) + shift for q in units.leaving(chosen))
                cover = Cover(tuple(chosen), sum(units.cost[u] for u in chosen), units.leaving(chosen), fit)
                candidates.append((n, cover, prio))
        if not candidates:
            return None
        lowest = min(prio for _, _, prio in candidates)
        rank = gang.name_rank(ps)

        def score(item: tuple[int, Cover, int]) -> tuple[float, int, int]:
            n, cover, prio = item
            s = self.alpha * (lowest / prio if prio > 0 else 1.0) + (1 - self.alpha) * TIER_SCORE[cover.fit.tier]
            return (-s, len(cover.leaving), int(rank[n]))

        n, cover, _ = min(candidates, key=score)
        return n, cover


def _imp(ps: PreemptState, p: int, n: int, units, mode: str):
    """IMP: every feasible victim set of the smallest size (Algorithm 2, early stop)."""
    cs = ps.cs
    need_gpus = int(cs.pod_whole[p])
    free_gpus = int(cs.cap_gpus[n] - cs.whole_used[n] - cs.share_devices[n])
    cpu_room = float(cs.cap_cpus[n] - cs.used_cpus[n])
    mem_room = float(cs.cap_mem[n] - cs.used_mem[n])
    frees = {
        u: (
            sum(int(cs.pod_whole[q]) + (1 if cs.pod_share[q] > 0 else 0) for q in units.pods_here[u]),
            sum(float(cs.pod_cpus[q]) for q in units.pods_here[u]),
            sum(float(cs.pod_mem[q]) for q in units.pods_here[u]),
        )
        for u in units.units
    }
    for k in range(1, len(units.units) + 1):
        found = []
        for chosen in itertools.combinations(units.units, k):
            gpus = free_gpus + sum(frees[u][0] for u in chosen)
            cpus = cpu_room + sum(frees[u][1] for u in chosen)
            mem = mem_room + sum(frees[u][2] for u in chosen)
            if gpus < need_gpus or cpus + rules.EPS < cs.pod_cpus[p] or mem + rules.EPS < cs.pod_mem[p]:
                continue  # cannot cover the deficit: not worth the full check
            fit = ps.fit(p, n, units.leaving(chosen), mode)
            if fit is not None:
                found.append((list(chosen), fit))
        if found:
            return found
    return []
