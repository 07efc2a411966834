"""The victim-selection baselines users run today, on one node each: Kubernetes DefaultPreemption
(``K8sDefault``), Volcano's preempt action (``Volcano``) and the ASI paper's random ablation
(``RandomVictims``); ``baseline_policy`` picks one by name. Node choice comes from ``gang``, the
covers from ``victims``."""

from __future__ import annotations

import math

import numpy as np

from planner.heuristics import gang
from planner.heuristics.victims import Fitter, k8s_cover, node_units, ordered_cover
from planner.preempt_state import PreemptState


class _Baseline:
    """Shared node filtering of the baselines: non-preemptive placement by least idle GPUs (pack),
    then a cover per candidate node."""

    reprieve = False
    numa_aware = False

    def place_free(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):
        nodes = np.flatnonzero(ps.cs.feasible_nodes(p) & allowed)
        if not len(nodes):
            return None
        idle = ps.cs.cap_gpus[nodes] - ps.cs.allocated_gpus()[nodes]
        return gang.first_fitting(ps, ask, p, nodes[np.lexsort((gang.name_rank(ps)[nodes], idle))], numa_mode=None)

    def candidates(self, ps: PreemptState, ask, p: int, allowed: np.ndarray) -> np.ndarray:
        nodes = np.flatnonzero(gang.preemptable_nodes(ps, ask, p, allowed))
        return nodes[np.argsort(gang.name_rank(ps)[nodes], kind="stable")]

    @staticmethod
    def fitter(ps: PreemptState, ask, p: int, n: int) -> Fitter:
        return lambda leaving: ps.fit(p, n, leaving, None, devices=False)  # the baselines know no NUMA


def _start(ps: PreemptState, unit: int) -> float:
    starts = [float(ps.started_s[q]) for q in ps.placed_pods_of(unit)]
    return max((s for s in starts if not math.isnan(s)), default=0.0)


MIN_CANDIDATES_ABSOLUTE = 100
MIN_CANDIDATES_PERCENT = 10


class K8sDefault(_Baseline):
    name = "k8s-default"
    """Kubernetes DefaultPreemption (``pkg/scheduler/framework/plugins/defaultpreemption``).

    Per node: remove every lower-priority pod, then reprieve them highest priority first (earlier
    start first) while the preemptor still fits. Among nodes: fewest PodDisruptionBudget violations
    (none are modelled, so 0 everywhere), the lowest highest-victim priority, the smallest sum of
    victim priorities, the fewest victims, the latest start of the highest-priority victims, then
    node order. Kubernetes knows no gangs: a victim's gang goes with it (and is paid in full).
    Like the scheduler's dry run it stops after max(100, 10% of the nodes) candidate nodes
    (``minCandidateNodesAbsolute``, ``minCandidateNodesPercentage``), scanning in name order from the
    first node (Kubernetes starts at a random offset; a fixed one keeps plans reproducible).
    """

    def place_preempting(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):
        best = None
        nodes = self.candidates(ps, ask, p, allowed).tolist()
        wanted = min(len(ps.cs.node_names), max(MIN_CANDIDATES_ABSOLUTE, int(len(ps.cs.node_names) * MIN_CANDIDATES_PERCENT / 100)))
        found = 0
        for n in nodes:
            if found >= wanted:
                break  # the dry run stops once it has enough candidate nodes
            units = node_units(ps, n, ask.victims, ask.unit_cost)
            top = {u: int(max(ps.priority[list(units.pods_here[u])])) for u in units.units}
            reprieve = sorted(units.units, key=lambda u: (-top[u], _start(ps, u), u))
            cover = k8s_cover(self.fitter(ps, ask, p, n), units, reprieve)
            if cover is None:
                continue
            found += 1
            pods = list(cover.leaving)
            prios = [int(ps.priority[q]) for q in pods]
            highest = max(prios, default=-(2**31))
            latest = -max((float(np.nan_to_num(ps.started_s[q])) for q in pods if ps.priority[q] == highest), default=0.0)
            key = (highest, sum(prio + 2**31 for prio in prios), len(pods), latest)
            if best is None or key < best[0]:
                best = (key, n, cover)
        return None if best is None else (best[1], best[2])


class Volcano(_Baseline):
    name = "volcano"
    """Volcano's preempt action: nodes in order of the binpack score (least idle GPUs, then name);
    on each, victims lowest priority first (newest first among equals) until the preemptor fits;
    the first node where that succeeds wins. Nothing is trimmed (volcano#5984)."""

    def place_preempting(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):
        nodes = self.candidates(ps, ask, p, allowed)
        idle = ps.cs.cap_gpus[nodes] - ps.cs.allocated_gpus()[nodes]
        for n in nodes[np.lexsort((gang.name_rank(ps)[nodes], idle))].tolist():
            units = node_units(ps, n, ask.victims, ask.unit_cost)
            low = {u: int(min(ps.priority[list(units.pods_here[u])])) for u in units.units}
            order = sorted(units.units, key=lambda u: (low[u], -_start(ps, u), u))
            cover = ordered_cover(self.fitter(ps, ask, p, n), units, order)
            if cover is not None:
                return n, cover
        return None


class RandomVictims(_Baseline):
    name = "random"
    """The ASI paper's ablation baseline: a uniformly random node that can host the pod once its
    candidates are gone, and victims in random order until the pod fits (seeded)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def place_preempting(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):
        nodes = self.candidates(ps, ask, p, allowed).tolist()
        self.rng.shuffle(nodes)
        for n in nodes:
            units = node_units(ps, n, ask.victims, ask.unit_cost)
            order = list(units.units)
            self.rng.shuffle(order)
            cover = ordered_cover(self.fitter(ps, ask, p, n), units, order)
            if cover is not None:
                return n, cover
        return None


def baseline_policy(method: str, seed: int = 0) -> gang.Policy:
    if method == "k8s-default":
        return K8sDefault()
    if method == "volcano":
        return Volcano()
    if method == "random":
        return RandomVictims(seed)
    raise ValueError(f"unknown baseline {method!r}")
