"""SpotGPU (ASI paper, Sec. 4.2): non-preemptive placement first, then the least-cost preemption.

Non-preemptive: among the nodes where the pod fits (every rule, not only GPUs), prefer
  1. the least idle GPU capacity (pack);
  2. homogeneous co-location: an HP pod on a node hosting HP pods, a spot pod on a spot-dedicated
     node (one hosting no HP pod);
  3. eviction history: an HP pod on the node with the highest ``eviction_count``, a spot pod on the
     lowest;
  4. the node name.
Preemptive (HP pods only): per node the victim cover, then the node whose cover costs least
(GPU-seconds of lost work), then fewest victims, then the ranking above.

* ``spotgpu`` (corrected): the cover is the least-cost set of victim gangs that lets the pod fit,
  counting what is already idle (the node's *deficit*), found by branch and bound
  (``victims.cheapest_cover``); nodes are searched cheapest-first and the search stops once no
  node's cheapest victim can beat the best cover. A last pass returns victims a multi-pod job turned
  out not to need.
* ``spotgpu-paper``: the published rule: the shortest cheapest-first prefix of the node's spot pods
  whose GPUs reach the whole demand, idle GPUs ignored; it over-preempts (seed-specs A.2).
* ``spotgpu-isolated``: HP pods go where SpotGPU would put them if no spot pod ran (the ranking
  above on the *HP view*: idle GPUs counting only pods that may not be evicted, co-location, node
  name; no eviction history, which spot evictions write), evicting there the least-cost cover;
  spot pods as ``spotgpu``. HP jobs then start when and where they would without spot work, so
  spot work never delays them (the simulator shows that ``spotgpu``'s non-preemptive-first rule
  does: HP pods fill the room spot pods leave, and a later large HP job finds no node clear of
  HP pods), at the price of evictions a free placement elsewhere would have avoided.
"""

from __future__ import annotations

import numpy as np

from planner.heuristics import gang
from planner.heuristics.victims import Cover, cheapest_cover, node_units, prefix_cover
from planner.preempt_state import Ask, Fit, PreemptState
from planner.state import PENDING


def placement_order(ps: PreemptState, ask: Ask, p: int, nodes: np.ndarray, spot_last_names: bool = False) -> np.ndarray:
    """``nodes`` (indexes) in SpotGPU's non-preemptive preference for pod p; ``spot_last_names``
    breaks a spot pod's last ties by name from the end (the HP view fills nodes from the start)."""
    return nodes[np.lexsort(placement_keys(ps, ask, p, nodes, spot_last_names))]


def placement_keys(ps: PreemptState, ask: Ask, p: int, nodes: np.ndarray, spot_last_names: bool = False) -> tuple[np.ndarray, ...]:
    """The keys of ``placement_order`` for ``np.lexsort`` (the last one first)."""
    cs = ps.cs
    idle = cs.cap_gpus[nodes] - cs.allocated_gpus()[nodes]
    hosts_hp = cs.hp_pods_per_node[nodes] > 0
    hp = ps.cluster.pods[p].priority == "HP"
    homogeneous = hosts_hp if hp else ~hosts_hp
    evictions = _eviction_counts(ps)[nodes]
    names = gang.name_rank(ps)[nodes]
    return (-names if spot_last_names and not hp else names, -evictions if hp else evictions, ~homogeneous, idle)


def _eviction_counts(ps: PreemptState) -> np.ndarray:
    cached = getattr(ps.cs, "_eviction_counts", None)
    if cached is None:
        cached = np.array([n.eviction_count for n in ps.cluster.nodes], dtype=np.int64)
        ps.cs._eviction_counts = cached  # type: ignore[attr-defined]
    return cached


def hp_view_order(ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> np.ndarray:
    """Nodes where HP pod p fits once every allowed victim there is gone, in SpotGPU's order on the
    HP view (least idle GPUs counting only pods that stay, HP co-location, name)."""
    cs = ps.cs
    nodes = np.flatnonzero(gang.preemptable_nodes(ps, ask, p, allowed) | (cs.feasible_nodes(p) & allowed))
    if not len(nodes):
        return nodes
    placed = cs.pod_node != PENDING
    stay = placed & ~ask.victims
    n_nodes = len(cs.node_names)
    held = np.bincount(cs.pod_node[stay], weights=cs.pod_whole[stay] + cs.pod_share[stay], minlength=n_nodes)
    hosts_hp = np.bincount(cs.pod_node[placed & ps.is_hp], minlength=n_nodes) > 0
    idle = cs.cap_gpus[nodes] - held[nodes]
    return nodes[np.lexsort((gang.name_rank(ps)[nodes], ~hosts_hp[nodes], idle))]


class SpotGpu:
    """The SpotGPU policy; ``paper=True`` for the published prefix cover, ``isolated=True`` for HP
    placement on the HP view."""

    def __init__(self, paper: bool = False, isolated: bool = False):
        self.paper = paper
        self.isolated = isolated
        self.name = "spotgpu-paper" if paper else "spotgpu-isolated" if isolated else "spotgpu"
        self.reprieve = not paper
        self.retries = not paper  # other pod orders when a gang fails in the first
        self.numa_aware = not paper  # the published algorithm counts GPUs only
        self.mode_of = (lambda ask: ask.numa_mode) if self.numa_aware else (lambda ask: None)

    def place_free(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Fit] | None:
        if self.isolated and ask.preemptive and ps.is_hp[p]:
            return None  # the HP view decides, with or without victims (place_preempting)
        nodes = np.flatnonzero(ps.cs.feasible_nodes(p) & allowed)
        if not len(nodes):
            return None
        return gang.first_fitting_by_keys(ps, ask, p, nodes, placement_keys(ps, ask, p, nodes, self.isolated), self.mode_of(ask))

    def place_preempting(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Cover] | None:
        if self.isolated and ps.is_hp[p]:
            return self._place_on_hp_view(ps, ask, p, allowed)
        nodes = np.flatnonzero(gang.preemptable_nodes(ps, ask, p, allowed))
        if not len(nodes):
            return None
        low = gang.cover_lower_bounds(ps, ask, p, nodes)
        ranked = placement_order(ps, ask, p, nodes)
        position = np.empty(len(ps.cs.node_names), dtype=np.int64)
        position[ranked] = np.arange(len(ranked))
        rank = position  # rank[n]: node n's place in the non-preemptive order
        best: tuple[tuple, int, Cover] | None = None
        demand = float(ps.cs.pod_gpus[p])
        for k in np.lexsort((position[nodes], low)).tolist():
            n = int(nodes[k])
            if best is not None and (low[k], 1) > best[0][:2]:
                break  # no cover here can beat the best: every one costs at least its cheapest unit
            units = node_units(ps, n, ask.victims, ask.unit_cost)

            def fitter(leaving: tuple[int, ...], n: int = n) -> Fit | None:
                return ps.fit(p, n, leaving, self.mode_of(ask), devices=False)

            if self.paper:
                gpus_here = {u: float(ps.cs.pod_gpus[list(units.pods_here[u])].sum()) for u in units.units}
                cover = prefix_cover(fitter, units, gpus_here, demand)
            else:
                cover = cheapest_cover(fitter, units)
            if cover is None:
                continue
            key = (cover.cost, len(cover.units), int(rank[n]))
            if best is None or key < best[0]:
                best = (key, n, cover)
        if best is None:
            return None
        return best[1], best[2]

    def _place_on_hp_view(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Cover] | None:
        """The first node of the HP view where a cover exists, and its least-cost cover (none
        needed where the pod fits as things are)."""
        for n in hp_view_order(ps, ask, p, allowed).tolist():

            def fitter(leaving: tuple[int, ...], n: int = n) -> Fit | None:
                return ps.fit(p, n, leaving, self.mode_of(ask), devices=False)

            cover = cheapest_cover(fitter, node_units(ps, n, ask.victims, ask.unit_cost))
            if cover is not None:
                return n, cover
        return None
