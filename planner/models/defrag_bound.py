"""A valid upper bound on the empty nodes any defrag plan can reach, at any scale (issue 16).

The bound is the optimum of a relaxation R of the defrag problem, solved in closed form:

* (a) every movable pod ends on a node its static rules allow (``ClusterState.eligible``) or on its
  own node; under ``same_asw``, or when its job requires one switch (one spine), on a node under its
  current switch (spine), since make-before-break never lets such a pod leave it;
* (b) per resource (GPUs, CPUs, memory, and presence: a pod makes its node non-empty), the pods that
  must share a set of nodes fit there *in total* (items may split across nodes);
* (b') pods sharing an anti-affinity group end on distinct nodes;
* (b'') for each size t of whole-GPU pods, the pods of t or more GPUs fit in total where a node offers
  only the largest sum of their sizes within its free whole GPUs (a 3-GPU hole takes no 4-GPU pod);
* (c) a node holding a locked (or standby, or held by the limits) pod never ends empty;
* (d) emptying a node takes at least one move per movable pod on it: their total is within
  ``max_moves``, and each within ``max_moves_per_node``.

Every legal plan satisfies (a)-(d), so R's optimum bounds the plan's empty nodes. R drops bin packing
(a pod is not split), device-level packing of GPU shares, anti-affinity beyond (b'), pod-count limits,
NUMA, wave and namespace limits and all intermediate states: relaxing constraints only raises the
optimum.

Solving R. For resource r, join two nodes when some pod with positive demand for r may end on both
(union over the pods' allowed sets): the *r-regions*. A pod's demand for r lands inside its region,
regions are disjoint, so in each region j the non-empty nodes K must satisfy
``sum_{locked n in j} residual_r(n) + sum_{unlocked n in K and j} cap_r(n) >= demand_r(j)``
(residual: capacity less the locked pods' use). The fewest unlocked nodes doing so, k_r(j), take the
largest capacities first (an exchange argument), and sum_j k_r(j) <= |K unlocked| for every r. So

    capacity bound = nodes - locked nodes - max_r sum_j k_r(j)

and likewise for (b'') with r = "gpus>=t" (demand: those pods' GPUs; capacity: the largest sum of
their sizes within the node's free whole GPUs, ``_largest_sums``), and with r = anti-affinity, where k(j) is the largest over groups g of the unlocked nodes g's
movable pods in region j need besides the locked nodes free of g (``_anti_affinity_extra_nodes``).

and (d) gives, with c(n) the movable pods on an unlocked node n (only nodes with c(n) within the
per-node limit can empty), taking the nodes with fewest pods first,

    budget bound = unlocked nodes without movable pods + max { k : k smallest c(n) sum to <= max_moves }.

The bound is the smaller of the two; both hold for every plan, so their minimum does.

Stronger, still at any scale (issue 45): the class LP of ``defrag_bound_lp.py`` keeps each pod class
on the node classes it may use and counts whole pods per node, proven in exact arithmetic. The
reported bound is the smallest of the closed form and the class LP (``method`` says which gives it);
when the LP does not finish within its time limit the closed form stands and ``note`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner import rules
from planner.limits import UNLIMITED, MoveBudget
from planner.models.defrag_bound_lp import TIME_LIMIT_S, _largest_sums, class_lp_bound
from planner.models.share_devices import devices_per_label
from planner.state import PENDING, ClusterState


@dataclass(frozen=True)
class EmptiesBound:
    bound: int
    capacity_bound: int
    budget_bound: int
    binding: str  # which resource (or "budget") gives the closed form
    method: str = "closed-form"  # which relaxation gives ``bound``: "closed-form" or "class-lp"
    class_lp: int | None = None  # the class LP's bound, None when it was not computed
    note: str = ""  # why a stronger bound is missing (the LP timed out), else empty


def empties_bound(state: ClusterState, budget: MoveBudget, time_limit_s: float | None = TIME_LIMIT_S) -> EmptiesBound:
    """The bound on ``state`` (locks as the plan sees them) under ``budget`` (the limits' account):
    the smaller of the closed form and the class LP (within ``time_limit_s``; None: closed form only)."""
    cuts: list[tuple[np.ndarray, np.ndarray]] = []
    closed = closed_form_bound(state, budget, cuts)
    if time_limit_s is None:
        return closed
    lp = class_lp_bound(state, budget, time_limit_s, cuts=cuts)
    if lp.bound is None:
        return EmptiesBound(closed.bound, closed.capacity_bound, closed.budget_bound, closed.binding, note=f"{lp.note}; the closed-form bound stands")
    method = "class-lp" if lp.bound < closed.bound else "closed-form"
    return EmptiesBound(min(closed.bound, lp.bound), closed.capacity_bound, closed.budget_bound, closed.binding, method, lp.bound)


def closed_form_bound(state: ClusterState, budget: MoveBudget, cuts: list[tuple[np.ndarray, np.ndarray]] | None = None) -> EmptiesBound:
    """The closed-form relaxation alone (this module's docstring); ``cuts`` (when given) gets, per
    resource, each node's region and the fewest unlocked nodes each region keeps non-empty."""
    n_nodes = len(state.node_names)
    placed = state.pod_node != PENDING
    locked_pod = placed & state.pod_locked
    movable = np.flatnonzero(placed & ~state.pod_locked)
    locked_node = np.zeros(n_nodes, dtype=bool)
    locked_node[state.pod_node[locked_pod]] = True
    home = state.pod_node[movable]

    gpus = state.pod_whole.astype(np.float64) + state.pod_share
    demands = {
        "gpus": (gpus, state.cap_gpus.astype(np.float64)),
        "cpus": (state.pod_cpus, state.cap_cpus),
        "memory": (state.pod_mem, state.cap_mem),
    }
    used_locked = {name: np.bincount(state.pod_node[locked_pod], weights=demand[locked_pod], minlength=n_nodes) for name, (demand, _) in demands.items()}
    extra_by = {}
    for name, (demand, cap) in demands.items():
        residual = np.maximum(cap - used_locked[name], 0.0) * locked_node
        mask = demand[movable] > rules.EPS
        if name == "gpus":
            extra_by[name] = _gpu_devices_extra_nodes(state, budget, movable[mask], home[mask], locked_pod, locked_node, cuts)
            continue
        extra_by[name] = _fewest_extra_nodes(state, budget, movable[mask], home[mask], demand, cap, residual, locked_node, cuts=cuts)
    whole = state.pod_whole[movable]
    hole = np.floor(np.maximum(state.cap_gpus - used_locked["gpus"], 0.0) + rules.EPS).astype(np.int64)  # free whole GPUs
    for t in sorted({int(g) for g in whole.tolist() if g > 1}):
        # pods of t or more whole GPUs: a node takes at most the largest sum of such sizes that fits
        # its free whole GPUs (sizes repeat freely: an upper bound on any real set of them)
        sizes = sorted({int(g) for g in whole.tolist() if g >= t})
        reach = _largest_sums(sizes, int(state.cap_gpus.max(initial=0)))
        big = np.where(state.pod_whole >= t, state.pod_whole, 0).astype(np.float64)
        mask = whole >= t
        extra_by[f"gpus>={t}"] = _fewest_extra_nodes(
            state,
            budget,
            movable[mask],
            home[mask],
            big,
            reach[state.cap_gpus].astype(np.float64),
            reach[np.minimum(hole, len(reach) - 1)] * locked_node,
            locked_node,
            cuts=cuts,
        )
    presence = _regions(state, budget, movable, home) if len(movable) else None  # one region map for both uses below
    extra_by["presence"] = _fewest_extra_nodes(
        state,
        budget,
        movable,
        home,
        np.ones(len(state.pod_names)),
        np.full(n_nodes, np.inf),
        np.where(locked_node, np.inf, 0.0),
        locked_node,
        presence,
        cuts=cuts,
    )
    extra_by["anti_affinity"] = _anti_affinity_extra_nodes(state, movable, home, locked_pod, locked_node, presence)
    binding = max(extra_by, key=lambda k: extra_by[k])
    capacity = n_nodes - int(locked_node.sum()) - extra_by[binding]

    pods_on = np.bincount(home, minlength=n_nodes)
    unlocked = ~locked_node
    free_empty = int((unlocked & (pods_on == 0)).sum())
    candidates = unlocked & (pods_on > 0)
    if budget.bounded_nodes:
        candidates &= pods_on <= budget.node_left
    counts = np.sort(pods_on[candidates])
    if budget.bounded_moves and budget.moves_left < UNLIMITED:
        emptiable = int(np.searchsorted(np.cumsum(counts), budget.moves_left, side="right"))
    else:
        emptiable = len(counts)
    by_budget = free_empty + emptiable
    bound = min(capacity, by_budget)
    return EmptiesBound(bound, capacity, by_budget, binding if capacity <= by_budget else "budget")


def _fewest_extra_nodes(
    state: ClusterState,
    budget: MoveBudget,
    pods: np.ndarray,
    home: np.ndarray,
    demand: np.ndarray,
    cap: np.ndarray,
    residual: np.ndarray,
    locked_node: np.ndarray,
    regions: tuple[np.ndarray, int] | None = None,
    added: np.ndarray | None = None,
    cuts: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> int:
    """Sum over the regions of ``pods`` (``regions``, when already computed for them) of the fewest
    unlocked nodes whose capacity, with the locked nodes' residual, holds the region's demand (plus
    ``added``, per region, when given). ``cuts`` gets (region per node, fewest per region)."""
    if not len(pods):
        return 0
    region, count = regions if regions is not None else _regions(state, budget, pods, home)
    inside = region >= 0
    need = np.bincount(region[home], weights=demand[pods], minlength=count)
    if added is not None:
        need = need + added
    with np.errstate(invalid="ignore"):
        held = np.bincount(region[inside], weights=residual[inside], minlength=count)
    fewest = np.zeros(count, dtype=np.int64)
    for label in np.flatnonzero(need > 0).tolist():
        tolerance = rules.EPS * max(1.0, float(need[label]))
        short = need[label] - held[label]
        if not short > tolerance:  # the locked nodes' room holds it (or is unlimited)
            continue
        caps = np.sort(cap[inside & (region == label) & ~locked_node])[::-1]
        fewest[label] = min(int(np.searchsorted(np.cumsum(caps), short - tolerance, side="left")) + 1, len(caps))
    if cuts is not None and fewest.any():
        cuts.append((region, fewest))
    return int(fewest.sum())


def _gpu_devices_extra_nodes(
    state: ClusterState,
    budget: MoveBudget,
    pods: np.ndarray,
    home: np.ndarray,
    locked_pod: np.ndarray,
    locked_node: np.ndarray,
    cuts: list[tuple[np.ndarray, np.ndarray]] | None,
) -> int:
    """(b) for GPUs counted in devices: in each GPU region j (of ``pods``, the movable GPU pods) the
    non-empty nodes hold the whole GPUs of j's movable pods plus D_j devices for the shares, D_j a
    lower bound on the devices j's movable shares and the locked shares on j's locked nodes need
    (``share_devices``; a share takes room on one device no whole-GPU pod holds). A locked node
    offers the devices its locked whole-GPU pods leave (its locked shares are in D_j)."""
    if not len(pods):
        return 0
    region, count = _regions(state, budget, pods, home)
    share_label = np.full(len(state.pod_names), -1, dtype=np.int64)
    share_label[pods] = region[home]
    locked_at = np.flatnonzero(locked_pod)
    share_label[locked_at] = region[state.pod_node[locked_at]]
    devices = devices_per_label(state.pod_share, share_label, count).astype(np.float64)
    whole = state.pod_whole.astype(np.float64)
    used = np.bincount(state.pod_node[locked_pod], weights=whole[locked_pod], minlength=len(state.node_names))
    residual = np.maximum(state.cap_gpus - used, 0.0) * locked_node
    return _fewest_extra_nodes(state, budget, pods, home, whole, state.cap_gpus.astype(np.float64), residual, locked_node, (region, count), devices, cuts)


def _anti_affinity_extra_nodes(
    state: ClusterState, movable: np.ndarray, home: np.ndarray, locked_pod: np.ndarray, locked_node: np.ndarray, presence: tuple[np.ndarray, int] | None
) -> int:
    """Sum over the presence regions j of max over anti-affinity groups g of the unlocked nodes g's
    movable pods in j need: they end on distinct nodes of j, none holding a locked pod of g, so
    non-empty nodes in j >= m(g, j) + locked nodes of g in j, and the unlocked ones among them
    >= m(g, j) - (locked nodes in j without a pod of g)."""
    pairs = [(p, g) for p in movable.tolist() for g in state.pod_groups[p]]
    if not pairs or presence is None:
        return 0
    region, count = presence
    pod_region = dict(zip(movable.tolist(), region[home].tolist()))
    members = np.array([(g, pod_region[p]) for p, g in pairs], dtype=np.int64)
    keys, moving = np.unique(members, axis=0, return_counts=True)  # (group, region) -> movable members
    locked_in = np.bincount(region[locked_node & (region >= 0)], minlength=count)  # locked nodes per region
    taken: dict[tuple[int, int], int] = {}  # (group, region) -> locked nodes there holding a pod of the group
    seen = set()
    for p in np.flatnonzero(locked_pod).tolist():
        n = int(state.pod_node[p])
        for g in state.pod_groups[p]:
            if region[n] >= 0 and (g, n) not in seen:
                seen.add((g, n))
                taken[(g, int(region[n]))] = taken.get((g, int(region[n])), 0) + 1
    need = np.zeros(count, dtype=np.int64)
    for (g, j), m in zip(keys.tolist(), moving.tolist()):
        need[j] = max(need[j], m - (int(locked_in[j]) - taken.get((g, j), 0)))
    return int(need.sum())


def _regions(state: ClusterState, budget: MoveBudget, pods: np.ndarray, home: np.ndarray) -> tuple[np.ndarray, int]:
    """Per node its region (0 .. count-1), -1 for nodes none of ``pods`` may end on; and the count."""
    n_nodes = len(state.node_names)
    pod_job = state.pod_job[pods]
    level = np.append(state.job_level, 0)[pod_job]  # a pod without a job (-1) reads the trailing 0
    under_asw = (level == 1) | (budget.asw is not None)  # same_asw keeps every pod under its switch, inside its spine
    kind = np.where(under_asw, 1, np.where(level == 2, 2, 0))
    domain = np.where(kind == 1, state.asw_domain[home], np.where(kind == 2, state.spine_domain[home], -1))
    groups, inverse = np.unique(np.stack([state.pod_signature[pods], kind, domain], axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    parent = list(range(len(groups)))

    def find(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    owner = np.full(n_nodes, -1, dtype=np.int64)
    for g, (signature, k, d) in enumerate(groups.tolist()):
        nodes = state.eligible[signature].copy()
        if k == 1:
            nodes &= state.asw_domain == d
        elif k == 2:
            nodes &= state.spine_domain == d
        nodes[home[inverse == g]] = True  # staying home is always allowed
        idx = np.flatnonzero(nodes)
        for other in np.unique(owner[idx]).tolist():
            if other >= 0:
                parent[find(other)] = g  # g is still a root: only later groups point at it
        owner[idx] = g
    roots = np.array([find(g) for g in range(len(groups))], dtype=np.int64)
    labels, compact = np.unique(roots, return_inverse=True)
    return np.where(owner >= 0, compact.reshape(-1)[np.maximum(owner, 0)], -1), len(labels)
