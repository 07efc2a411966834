"""Victim selection on one node: which victim gangs ("units") to evict so one pod can start there.

* ``cheapest_cover``: the least-cost set (then the fewest victims), by branch and bound over the
  node's units; exact unless the search budget runs out (then the best set found, reported so).
* ``prefix_cover``: the SpotGPU paper's rule as published: units by ascending cost, the shortest
  prefix whose GPUs reach the pod's whole demand (the node's idle GPUs ignored), extended until the
  pod actually fits.
* ``k8s_cover``: Kubernetes DefaultPreemption: every candidate removed, then the highest-priority
  ones reprieved while the pod still fits.
* ``volcano_cover``: Volcano's preempt action: candidates in priority order (lowest first) until the
  pod fits, no trimming.
* ``random_cover``: the ASI paper's ablation baseline: candidates in random order until it fits.

Every cover is checked with ``PreemptState.fit``, the rules' fast form.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from planner.preempt_state import Fit, PreemptState

COVER_SEARCH_LIMIT = 20_000
"""Branch-and-bound nodes per (pod, node) before the best cover found so far is used."""


@dataclass(frozen=True)
class Cover:
    """Evict ``units`` (their pods on the node are ``leaving``) and the pod fits as ``fit`` says."""

    units: tuple[int, ...]
    cost: float
    leaving: tuple[int, ...]
    fit: Fit
    proven: bool = True

    @property
    def key(self) -> tuple[float, int]:
        return (self.cost, len(self.units))


@dataclass
class NodeUnits:
    """The candidate victim units with pods on one node: their cost and their pods there."""

    units: list[int]
    cost: dict[int, float]
    pods_here: dict[int, tuple[int, ...]]

    def leaving(self, chosen: Sequence[int]) -> tuple[int, ...]:
        return tuple(q for u in chosen for q in self.pods_here[u])


def node_units(ps: PreemptState, n: int, candidates: np.ndarray, unit_cost: np.ndarray) -> NodeUnits:
    """Units with a candidate victim pod on node n, cheapest first (ties by unit id)."""
    here: dict[int, list[int]] = {}
    for q in sorted(ps.cs.node_pods[n]):
        if candidates[q]:
            here.setdefault(int(ps.unit[q]), []).append(q)
    cost = {u: float(unit_cost[u]) for u in here}
    units = sorted(here, key=lambda u: (cost[u], u))
    return NodeUnits(units, cost, {u: tuple(here[u]) for u in units})


Fitter = Callable[[tuple[int, ...]], Fit | None]


def cheapest_cover(fitter: Fitter, units: NodeUnits, limit: int = COVER_SEARCH_LIMIT) -> Cover | None:
    """The least-cost, then smallest, set of units whose eviction lets the pod fit (None if none does).

    Depth-first branch and bound, units cheapest first; a branch stops when its cost reaches the best
    found, or when evicting every remaining unit would still not make the pod fit (feasibility only
    grows as pods leave). Starts from the greedy cover trimmed by a reprieve pass.
    """
    fit = fitter(())
    if fit is not None:
        return Cover((), 0.0, (), fit)
    everything = units.leaving(units.units)
    if fitter(everything) is None:
        return None
    best = _greedy_then_reprieve(fitter, units)
    order = units.units
    cost = units.cost
    budget = [limit]
    best_box = [best]

    def search(i: int, chosen: list[int], spent: float) -> None:
        budget[0] -= 1
        if budget[0] < 0 or i == len(order):
            return
        if (spent + cost[order[i]], len(chosen) + 1) >= best_box[0].key:
            return  # any completion adds a unit costing at least order[i]'s
        if fitter(units.leaving(chosen + list(order[i:]))) is None:
            return  # even every remaining unit would not do
        u = order[i]
        with_u = [*chosen, u]
        fit = fitter(units.leaving(with_u))
        if fit is not None:
            candidate = Cover(tuple(with_u), spent + cost[u], units.leaving(with_u), fit)
            if candidate.key < best_box[0].key:
                best_box[0] = candidate
        else:
            search(i + 1, with_u, spent + cost[u])
        search(i + 1, chosen, spent)

    search(0, [], 0.0)
    best = best_box[0]
    if budget[0] < 0:
        return Cover(best.units, best.cost, best.leaving, best.fit, proven=False)
    return best


def _cover(fitter: Fitter, units: NodeUnits, chosen: Sequence[int]) -> Cover:
    """The cover evicting ``chosen`` (which must let the pod fit)."""
    fit = fitter(units.leaving(chosen))
    assert fit is not None
    return Cover(tuple(chosen), sum(units.cost[u] for u in chosen), units.leaving(chosen), fit)


def _reprieved(fitter: Fitter, units: NodeUnits, chosen: list[int], order: Sequence[int]) -> list[int]:
    """``chosen`` without each unit, in ``order``, whose eviction the pod turns out not to need."""
    for u in order:
        trial = [v for v in chosen if v != u]
        if fitter(units.leaving(trial)) is not None:
            chosen = trial
    return chosen


def _greedy_then_reprieve(fitter: Fitter, units: NodeUnits) -> Cover:
    chosen: list[int] = []
    for u in units.units:
        chosen.append(u)
        if fitter(units.leaving(chosen)) is not None:
            break
    return _cover(fitter, units, _reprieved(fitter, units, chosen, sorted(chosen, key=lambda v: -units.cost[v])))


def prefix_cover(fitter: Fitter, units: NodeUnits, unit_gpus_here: dict[int, float], demand_gpus: float) -> Cover | None:
    """SpotGPU as published: the shortest cheapest-first prefix with sum G_t >= G_hp (idle GPUs not
    counted), extended until the pod fits."""
    if fitter(units.leaving(units.units)) is None:
        return None
    chosen: list[int] = []
    freed = 0.0
    for u in units.units:
        if freed >= demand_gpus - 1e-9 and fitter(units.leaving(chosen)) is not None:
            break
        chosen.append(u)
        freed += unit_gpus_here[u]
    return _cover(fitter, units, chosen)


def ordered_cover(fitter: Fitter, units: NodeUnits, order: Sequence[int]) -> Cover | None:
    """Units in ``order`` until the pod fits, no trimming (Volcano; the random baseline)."""
    fit = fitter(())
    if fit is not None:
        return Cover((), 0.0, (), fit)
    chosen: list[int] = []
    for u in order:
        chosen.append(u)
        if fitter(units.leaving(chosen)) is not None:
            return _cover(fitter, units, chosen)
    return None


def k8s_cover(fitter: Fitter, units: NodeUnits, reprieve_order: Sequence[int]) -> Cover | None:
    """DefaultPreemption: remove every candidate; if the pod fits, reprieve units in
    ``reprieve_order`` (highest priority first) whenever it still fits without evicting them."""
    fit = fitter(())
    if fit is not None:
        return Cover((), 0.0, (), fit)
    if fitter(units.leaving(units.units)) is None:
        return None
    return _cover(fitter, units, _reprieved(fitter, units, list(units.units), reprieve_order))


# ----------------------------------------------------------------------------------------------
# The baselines users run today: node choice and victim order
# ----------------------------------------------------------------------------------------------


class _Baseline:
    """Shared node filtering of the baselines: non-preemptive placement by least idle GPUs (pack),
    then a cover per candidate node."""

    reprieve = False
    numa_aware = False

    def place_free(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):  # type: ignore[no-untyped-def]
        from planner.heuristics import gang

        nodes = np.flatnonzero(ps.cs.feasible_nodes(p) & allowed)
        if not len(nodes):
            return None
        idle = ps.cs.cap_gpus[nodes] - ps.cs.allocated_gpus()[nodes]
        return gang.first_fitting(ps, ask, p, nodes[np.lexsort((gang.name_rank(ps)[nodes], idle))], numa_mode=None)

    def candidates(self, ps: PreemptState, ask, p: int, allowed: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
        from planner.heuristics import gang

        nodes = np.flatnonzero(gang.preemptable_nodes(ps, ask, p, allowed))
        return nodes[np.argsort(gang.name_rank(ps)[nodes], kind="stable")]

    @staticmethod
    def fitter(ps: PreemptState, ask, p: int, n: int) -> Fitter:  # type: ignore[no-untyped-def]
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

    def place_preempting(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):  # type: ignore[no-untyped-def]
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

    def place_preempting(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):  # type: ignore[no-untyped-def]
        from planner.heuristics import gang

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

    def place_preempting(self, ps: PreemptState, ask, p: int, allowed: np.ndarray):  # type: ignore[no-untyped-def]
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


def baseline_policy(method: str, seed: int = 0):  # type: ignore[no-untyped-def]
    if method == "k8s-default":
        return K8sDefault()
    if method == "volcano":
        return Volcano()
    if method == "random":
        return RandomVictims(seed)
    raise ValueError(f"unknown baseline {method!r}")
