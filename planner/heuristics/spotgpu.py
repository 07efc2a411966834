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
* ``spotgpu-isolated``: HP pods are placed on the *HP view*, the cluster as it would be if no
  spot pod ran (idle GPUs counting only the pods that may not be evicted), whether or not spot pods
  run: the least idle GPUs, then co-location, then keys that do not depend on spot work (the node's
  class, its first staying pod by name; ``hp_view_keys``); no eviction history, which spot
  evictions write. The only ties left are among *clear* nodes (no staying pod) of one class, which
  the HP view cannot tell apart: there the pod takes the one whose victim cover costs least.
  Spot pods as ``spotgpu``. By induction over decisions, the HP pods then sit as in a replay of the
  HP jobs alone under this policy, up to swapping identical nodes, and start at the same times:
  spot work never delays them (the simulator shows that ``spotgpu``'s non-preemptive-first rule
  does: HP pods fill the room spot pods leave, and a later large HP job finds no node clear of
  HP pods). The freedom among clear nodes is what keeps evictions cheap: with ties broken by name
  instead, the simulator's spot jobs lost twice the GPU-hours.
"""

from __future__ import annotations

import numpy as np

from planner.heuristics import gang
from planner.heuristics.cover_bounds import cover_lower_bounds
from planner.heuristics.victims import Cover, cheapest_cover, node_units, prefix_cover
from planner.preempt_state import Ask, Fit, PreemptState


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
        ps.cs._eviction_counts = cached  # type: ignore[attr-defined]  # a cache the heuristic keeps on the state it reads (ClusterState does not declare it)
    return cached


def hp_view_ranked(ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Nodes where HP pod p fits once every allowed victim there is gone, in SpotGPU's order on the
    HP view (least idle GPUs counting only the pods that stay, HP co-location, then keys a replay
    without the victims ranks the same way, then the node name), and their ``hp_view_keys`` in
    that order."""
    stay = gang.stay_sums(ps, ask)
    nodes = np.flatnonzero(gang.preemptable_nodes(ps, ask, p, allowed, stay) | (ps.cs.feasible_nodes(p) & allowed))
    keys = hp_view_keys(ps, nodes, stay)
    order = np.lexsort((gang.name_rank(ps)[nodes], *keys))
    return nodes[order], tuple(key[order] for key in keys)


def hp_view_keys(ps: PreemptState, nodes: np.ndarray, stay: gang.StaySums) -> tuple[np.ndarray, ...]:
    """The HP view's keys of ``nodes`` for ``np.lexsort`` (the last one first): the first pod by
    name among those that stay (-1 where none does), the node's class (``node_classes``), HP
    co-location (an HP pod that stays), idle GPUs counting only the pods that stay.

    None of them depends on the victims or on which of two identical nodes holds what, so two
    replays of the same HP arrivals, one with spot pods and one without, rank their nodes alike:
    nodes that differ in these keys are in the same order in both, and the only ties left are among
    *clear* nodes (no pod that stays) of one class, which the HP view cannot tell apart.
    ``stay``: the ask's ``gang.stay_sums``."""
    cs = ps.cs
    n_nodes = len(cs.node_names)
    held = stay.whole
    shares = cs.pod_share[stay.pods]
    if shares.any():
        held = held + np.bincount(stay.where, weights=shares, minlength=n_nodes)
    hosts_hp = np.bincount(stay.where[ps.is_hp[stay.pods]], minlength=n_nodes) > 0
    first_staying = np.full(n_nodes, len(cs.pod_names), dtype=np.int64)
    np.minimum.at(first_staying, stay.where, pod_name_rank(ps)[stay.pods])
    first_staying[first_staying == len(cs.pod_names)] = -1
    return (first_staying[nodes], node_classes(ps)[nodes], ~hosts_hp[nodes], cs.cap_gpus[nodes] - held[nodes])


def node_classes(ps: PreemptState) -> np.ndarray:
    """Per node, a rank shared by exactly the nodes no rule can tell apart: the same model, GPUs,
    CPUs, memory, taints, NUMA and power profile, schedulability; the same values of the labels some
    pod of the snapshot selects on (a hostname label no pod selects does not split nodes); the same
    switches too when some job asks for a topology (else no rule reads them). Names and eviction
    counts aside. The classes depend on the snapshot's pods only through those selectors and
    topologies, so a replay whose jobs use neither (the simulator's) keeps them from window to
    window, with or without spot jobs, as the HP-alone equivalence needs."""
    cached = getattr(ps.cs, "_node_classes", None)
    if cached is None:
        ignored = {"name", "eviction_count", "labels"} | (set() if ps.cs.job_level.any() else {"asw", "spine"})
        read = sorted(
            {key for pod in ps.cluster.pods for key in pod.node_selector} | {r.key for pod in ps.cluster.pods for term in pod.node_affinity or () for r in term}
        )
        keys = [n.model_dump_json(exclude=ignored) + repr([n.labels.get(k) for k in read]) for n in ps.cluster.nodes]
        ranks = {k: r for r, k in enumerate(sorted(set(keys)))}
        cached = np.array([ranks[k] for k in keys], dtype=np.int64)
        ps.cs._node_classes = cached  # type: ignore[attr-defined]  # a cache the heuristic keeps on the state it reads (ClusterState does not declare it)
    return cached


def pod_name_rank(ps: PreemptState) -> np.ndarray:
    """Rank of each pod's name in sorted order."""
    cached = getattr(ps.cs, "_pod_name_rank", None)
    if cached is None:
        cached = ps.cs._pod_name_rank = gang.sorted_rank(ps.cs.pod_names)  # type: ignore[attr-defined]  # a cache the heuristic keeps on the state it reads (ClusterState does not declare it)
    return cached


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
        if self.isolated and ps.is_hp[p]:
            if ask.preemptive:
                return None  # the HP view decides, with or without victims (place_preempting)
            found = self._place_on_hp_view(ps, ask, p, allowed)  # nothing to evict: the same view
            return None if found is None else (found[0], found[1].fit)
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
        low = cover_lower_bounds(ps, ask, p, nodes)
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
            fitter = ps.fitter(p, n, self.mode_of(ask), devices=False)

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
        """The first node of the HP view where a cover exists and its least-cost cover (none needed
        where the pod fits as things are); where that node is clear, the clear node of its class
        whose cover costs least instead (the HP view cannot tell them apart)."""
        order, (first_staying, classes, _, idle) = hp_view_ranked(ps, ask, p, allowed)
        for k, n in enumerate(order.tolist()):
            cover = self._cover_on(ps, ask, p, n)
            if cover is None:
                continue
            if first_staying[k] >= 0:
                return n, cover
            alike = order[(first_staying == -1) & (classes == classes[k]) & (idle == idle[k])]
            return self._cheapest_of_alike(ps, ask, p, alike, n, cover)
        return None

    def _cover_on(self, ps: PreemptState, ask: Ask, p: int, n: int) -> Cover | None:
        return cheapest_cover(ps.fitter(p, n, self.mode_of(ask), devices=False), node_units(ps, n, ask.victims, ask.unit_cost))

    def _cheapest_of_alike(self, ps: PreemptState, ask: Ask, p: int, alike: np.ndarray, n: int, cover: Cover) -> tuple[int, Cover]:
        """Among the clear nodes ``alike`` (n, whose cover is given, first), the one whose cover costs
        least, then has fewest victims, then comes first by name; searched cheapest bound first and
        stopped once no bound can beat the best."""
        if not cover.units or len(alike) == 1:
            return n, cover
        best = ((cover.cost, len(cover.units), int(gang.name_rank(ps)[n])), n, cover)
        others = alike[alike != n]
        low = cover_lower_bounds(ps, ask, p, others)
        free = ps.cs.feasible_nodes(p)[others]
        low = np.where(free, 0.0, low)  # where the pod fits as things are, no eviction is needed
        names = gang.name_rank(ps)[others]
        for j in np.lexsort((names, low)).tolist():
            if (low[j], 0) > best[0][:2]:
                break
            m = int(others[j])
            found = self._cover_on(ps, ask, p, m)
            if found is not None:
                key = (found.cost, len(found.units), int(names[j]))
                if key < best[0]:
                    best = (key, m, found)
        return best[1], best[2]
