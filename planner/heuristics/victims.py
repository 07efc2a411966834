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

Every cover is checked with ``PreemptState.fit``, the rules' fast form. The baselines that pick nodes
and call these covers are in ``preempt_baselines``.
"""

from __future__ import annotations

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
    cost = [units.cost[u] for u in order]
    pods = [units.pods_here[u] for u in order]
    suffix: list[tuple[int, ...]] = [()] * (len(order) + 1)  # suffix[i]: the pods of order[i:], in order
    for i in range(len(order) - 1, -1, -1):
        suffix[i] = pods[i] + suffix[i + 1]
    budget = [limit]
    best_box = [best]
    best_key = [best.key]

    # ``leaving`` is the pods of ``chosen`` in order, carried along: units.leaving(chosen) without rebuilding it
    def search(i: int, chosen: list[int], leaving: tuple[int, ...], spent: float) -> None:
        budget[0] -= 1
        if budget[0] < 0 or i == len(order):
            return
        if (spent + cost[i], len(chosen) + 1) >= best_key[0]:
            return  # any completion adds a unit costing at least order[i]'s
        if fitter(leaving + suffix[i]) is None:
            return  # even every remaining unit would not do
        with_u, with_leaving = [*chosen, order[i]], leaving + pods[i]
        fit = fitter(with_leaving)
        if fit is not None:
            candidate = Cover(tuple(with_u), spent + cost[i], with_leaving, fit)
            if candidate.key < best_key[0]:
                best_box[0], best_key[0] = candidate, candidate.key
        else:
            search(i + 1, with_u, with_leaving, spent + cost[i])
        search(i + 1, chosen, leaving, spent)

    search(0, [], (), 0.0)
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
