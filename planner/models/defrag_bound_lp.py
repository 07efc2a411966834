"""The class LP bound on empty nodes (issue 45): a relaxation tighter than the closed form of
``defrag_bound.py`` that still runs in seconds at 40,000 nodes, proven in exact arithmetic.

Why the closed form is loose. It pools each resource over a *region* (nodes joined when one pod may
end on both), so a pod pinned to a 1-GPU A10 node may "use" an 8-GPU H800 node's capacity as long
as some other pod links the two; and it splits pods across nodes freely, so eight 1-GPU pods pinned
to 1-GPU nodes "fit" on one of them. On the locked ASI repro of issue 45 that gave 250 where 124 is
optimal.

The relaxation R' solved here. Movable pods are grouped into *pod classes* q (same static
signature, same topology domain when a job requires one switch or spine or under ``same_asw``, same
demand, same anti-affinity groups; a pod whose home its static rules would refuse, a cordoned node,
keeps its home in its key), with m_q pods. Nodes are grouped into *node classes* c (same capacities,
same set of pod signatures allowed, same switch and spine when a class's domain needs them); the
nodes holding a locked pod are grouped apart, with their residual room summed. Variables:
``y_c`` in [0, N_c], the unlocked nodes of c left non-empty, and ``x_qc >= 0`` the pods of q ending
on c, for c allowed to q (or q's home class). Rows:

* (assign) ``sum_c x_qc = m_q``;
* (capacity) per resource r (GPUs, CPUs, memory): ``sum_q d_qr x_qc <= cap_r(c) y_c`` on unlocked
  classes, ``<= sum of the residuals`` on locked ones;
* (per-node count) ``x_qc <= k_qc y_c``, k_qc the most pods of q one node of c holds (the floor of
  capacity over demand, per resource and for whole GPUs); on locked classes ``x_qc <= sum over the
  nodes of their k``;
* (anti-affinity) per group g: ``sum_{q in g} x_qc <= y_c``, and on locked classes at most the
  locked nodes without a locked pod of g.

Every plan gives a point of R' (count its pods per class pair and its non-empty unlocked nodes), so
``unlocked nodes - min sum_c y_c`` bounds its empty nodes. The proof does not trust the LP solver:
from HiGHS's row duals (any duals at all) the bound ``L = sum_i pi_i b_i + sum_j min(0, r_j) u_j``
(weak duality over the variables' box, ``pi`` clipped to the sign each row's finite side allows) is
recomputed with ``fractions.Fraction``; ``min sum y >= ceil(L)`` then holds exactly, whatever the
floating-point error of the solve.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner import rules
from planner.limits import MoveBudget
from planner.models.highs import _highs, _interrupt_after, _quiet_stdout
from planner.models.lp_certificate import _certified_minimum, _Lp
from planner.models.share_devices import add_device_rows
from planner.state import PENDING, ClusterState

MAX_PAIRS = 150_000
"""The most (pod class, node class) pairs the LP is built with: its variables, counted before the
build. 60,000 at 37,707 ASI-like nodes as the engine plans them (solved in under a second); a
10,000-node mixed Kubernetes fleet (MIG profiles, named resources, taints, anti-affinity) needs
406,000 and is not solved in 30 s: there the closed form stands, deterministically, instead of a
build and solve cut by the time limit."""

TIME_LIMIT_S = 30.0
"""Default wall-time limit of the LP's build and solve (the exact check comes on top): about 10 s at
37,707 nodes on a loaded 2-core machine, well under a second at 1,000."""


@dataclass(frozen=True)
class LpBound:
    """``bound``: the proven bound on empty nodes, None when the LP did not finish (``note`` says why)."""

    bound: int | None
    note: str
    pod_classes: int
    node_classes: int
    wall_s: float


def class_lp_bound(
    state: ClusterState, budget: MoveBudget, time_limit_s: float = TIME_LIMIT_S, max_pairs: int = MAX_PAIRS, cuts: Sequence[tuple[np.ndarray, np.ndarray]] = ()
) -> LpBound:
    """The class LP bound on ``state`` (locks as the plan sees them); ``budget`` gives ``same_asw``;
    not built (bound None, with a note) beyond ``max_pairs`` variables or ``time_limit_s``. ``cuts``:
    (region per node, fewest unlocked nodes non-empty per region) that every plan meets (the closed
    form's, ``closed_form_bound``), added as rows on the node classes covering each region."""
    start = time.perf_counter()
    n_nodes = len(state.node_names)
    placed = state.pod_node != PENDING
    locked_pod = placed & state.pod_locked
    locked_node = np.zeros(n_nodes, dtype=bool)
    locked_node[state.pod_node[locked_pod]] = True
    unlocked_total = int((~locked_node).sum())
    movable = np.flatnonzero(placed & ~state.pod_locked)
    if not len(movable):
        return LpBound(unlocked_total, "no movable pod", 0, 0, time.perf_counter() - start)
    if time_limit_s <= 0:
        return LpBound(None, "no time was left for the class LP", 0, 0, time.perf_counter() - start)
    try:
        lp, pods, nodes = _build(state, budget, movable, locked_pod, locked_node, start + time_limit_s, max_pairs, cuts)
    except _OutOfTime as late:
        return LpBound(None, f"the class LP was not built within {time_limit_s:g} s ({late})", 0, 0, time.perf_counter() - start)
    except _TooLarge as large:
        return LpBound(None, str(large), 0, 0, time.perf_counter() - start)
    left = time_limit_s - (time.perf_counter() - start)
    duals, status = _solve(lp, left) if left > 0 else (None, "building it took the time limit")
    if duals is None:
        return LpBound(
            None,
            f"the class LP ({pods} pod classes, {nodes} node classes) was not solved within {time_limit_s:g} s ({status})",
            pods,
            nodes,
            time.perf_counter() - start,
        )
    least = math.ceil(_certified_minimum(lp, duals))
    return LpBound(unlocked_total - max(least, 0), "", pods, nodes, time.perf_counter() - start)


@dataclass
class _Pods:
    """The movable pods' classes: per class its signature index, topology kind (0 free, 1 switch, 2
    spine) and domain, demand row (GPUs, CPUs, memory) and index, home (a refused home, else -1),
    size, anti-affinity groups; and per pod its class."""

    sig: np.ndarray
    kind: np.ndarray
    dom: np.ndarray
    demand: np.ndarray
    dem: np.ndarray
    whole: np.ndarray
    share: np.ndarray
    home: np.ndarray
    count: np.ndarray
    groups: list[tuple[int, ...]]
    of_pod: np.ndarray


def _pod_classes(state: ClusterState, budget: MoveBudget, movable: np.ndarray, used_sigs: np.ndarray) -> _Pods:
    home = state.pod_node[movable]
    level = np.append(state.job_level, 0)[state.pod_job[movable]]  # a pod without a job (-1) reads the trailing 0
    kind = np.where((level == 1) | (budget.asw is not None), 1, np.where(level == 2, 2, 0))
    domain = np.where(kind == 1, state.asw_domain[home], np.where(kind == 2, state.spine_domain[home], -1))
    sig = state.pod_signature[movable]
    home_key = np.where(state.eligible[sig, home], -1, home)  # a pod its rules would refuse at home (cordoned) may still stay
    group_ids: dict[tuple[int, ...], int] = {}
    aa = np.array([group_ids.setdefault(tuple(sorted(state.pod_groups[p])), len(group_ids)) for p in movable.tolist()], dtype=np.int64)
    whole = state.pod_whole[movable].astype(np.float64)
    sizes = np.stack([whole, whole + state.pod_share[movable], state.pod_cpus[movable], state.pod_mem[movable]], axis=1)
    keys = np.column_stack([np.searchsorted(used_sigs, sig), kind, domain, sizes, aa, home_key]).astype(np.float64)
    classes, first, of_pod, count = np.unique(keys, axis=0, return_index=True, return_inverse=True, return_counts=True)
    dem = np.unique(classes[:, 3:7], axis=0, return_inverse=True)[1]  # rows of the demands ``_build`` takes (the same unique)
    return _Pods(
        classes[:, 0].astype(np.int64),
        classes[:, 1].astype(np.int64),
        classes[:, 2].astype(np.int64),
        classes[:, 4:7],
        dem.reshape(-1),
        classes[:, 3],
        state.pod_share[movable[first]],
        classes[:, 8].astype(np.int64),
        count,
        [state.pod_groups[int(movable[i])] for i in first.tolist()],  # a class shares its groups
        of_pod.reshape(-1),
    )


class _OutOfTime(Exception):
    """The LP's build passed its deadline."""


class _TooLarge(Exception):
    """The LP would have more than ``MAX_PAIRS`` variables."""


def _build(
    state: ClusterState,
    budget: MoveBudget,
    movable: np.ndarray,
    locked_pod: np.ndarray,
    locked_node: np.ndarray,
    deadline: float,
    max_pairs: int,
    cuts: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[_Lp, int, int]:
    """The LP. Nodes form *fine classes* (locked or not, capacities, allowed signatures, switch and
    spine when some pod class is held to one, a refused home apart) inside *groups* (the same
    without switch and spine). A pod class held to a domain gets a variable per fine class of its
    domain, any other one per group: the rows of a fine class count only the held pods on it, those
    of a group everything on its fine classes (sums of the per-class rows: a relaxation of them)."""
    n_nodes = len(state.node_names)
    used_sigs = np.unique(state.pod_signature[movable])
    pods = _pod_classes(state, budget, movable, used_sigs)
    pattern_of = np.unique(state.eligible[used_sigs].T, axis=0, return_inverse=True)[1].reshape(-1)
    allows = np.zeros((int(pattern_of.max()) + 1, len(used_sigs)), dtype=bool)
    allows[pattern_of, :] = state.eligible[used_sigs].T
    special = np.full(n_nodes, -1, dtype=np.int64)
    special[pods.home[pods.home >= 0]] = pods.home[pods.home >= 0]
    sizes = sorted({int(w) for w in pods.whole.tolist() if w > 1})
    pods.demand = _demand_dims(pods.whole, pods.demand[:, 0] - pods.whole, pods.demand[:, 1], pods.demand[:, 2], sizes)
    caps = _node_dims(state.cap_gpus.astype(np.float64), state.cap_cpus, state.cap_mem, sizes)
    base = np.column_stack([locked_node, np.where(locked_node[:, None], -1.0, caps), pattern_of, special]).astype(np.float64)
    held_asw, held_spine = bool((pods.kind == 1).any()), bool((pods.kind == 2).any())
    where = np.column_stack([state.asw_domain if held_asw else np.zeros(n_nodes), state.spine_domain if held_spine else np.zeros(n_nodes)])
    fine_keys, fine_of = np.unique(np.column_stack([base, where]), axis=0, return_inverse=True)
    fine_of = fine_of.reshape(-1)
    group_keys, group_of_fine = np.unique(fine_keys[:, : base.shape[1]], axis=0, return_inverse=True)
    group_of_fine = group_of_fine.reshape(-1)
    n_fine, n_groups = len(fine_keys), len(group_keys)
    fine_count = np.bincount(fine_of, minlength=n_fine)
    n_dims = caps.shape[1]
    g_locked, g_pattern = group_keys[:, 0] > 0, group_keys[:, 1 + n_dims].astype(np.int64)
    g_cap = group_keys[:, 1 : 1 + n_dims]

    # room: capacity per node left by the locked pods; per distinct demand the pods one node holds
    locked_demand = _demand_dims(
        state.pod_whole[locked_pod].astype(np.float64), state.pod_share[locked_pod], state.pod_cpus[locked_pod], state.pod_mem[locked_pod], sizes
    )
    use = np.stack([np.bincount(state.pod_node[locked_pod], weights=locked_demand[:, r], minlength=n_nodes) for r in range(n_dims)], axis=1)
    room = np.maximum(caps - use, 0.0)
    free_devices = np.floor(np.minimum(room[:, 0], room[:, 3]) + rules.EPS)  # whole GPUs the locked pods leave, at most
    for i, t in enumerate(sizes):
        room[:, 5 + i] = _largest_sums([z for z in sizes if z >= t], int(state.cap_gpus.max(initial=0)))[free_devices.astype(np.int64)]
    room = np.where(locked_node[:, None], room, caps)
    demands = np.unique(np.column_stack([pods.whole, pods.demand]), axis=0)
    per_node = _per_node(room, demands)  # (nodes, distinct demands)
    per_fine = np.zeros((n_fine, len(demands)), dtype=np.int64)
    np.add.at(per_fine, fine_of, np.where(locked_node[:, None], per_node, 0))
    per_group = np.zeros((n_groups, len(demands)), dtype=np.int64)
    np.add.at(per_group, group_of_fine, per_fine)
    one_unlocked = np.zeros((n_groups, len(demands)), dtype=np.int64)
    one_unlocked[group_of_fine[fine_of[~locked_node]]] = per_node[~locked_node]  # a node of an unlocked group
    residual_fine = np.zeros((n_fine, n_dims))
    np.add.at(residual_fine, fine_of[locked_node], room[locked_node])
    residual_group = np.zeros((n_groups, n_dims))
    np.add.at(residual_group, group_of_fine, residual_fine)

    fines_of = [np.flatnonzero(group_of_fine == g).tolist() for g in range(n_groups)]
    lp = _Lp([], [], [], [], [])
    y = {c: lp.var(float(fine_count[c]), 1.0) for c in np.flatnonzero(~(fine_keys[:, 0] > 0)).tolist()}
    kept: dict[int, int] = {}  # unlocked group -> a variable equal to the sum of its fine classes' y
    for g in np.flatnonzero(~g_locked).tolist():
        if len(fines_of[g]) == 1:
            kept[g] = y[fines_of[g][0]]
        else:
            kept[g] = lp.var(float(fine_count[fines_of[g]].sum()))
            lp.row([(kept[g], 1.0), *((y[c], -1.0) for c in fines_of[g])], 0.0, 0.0)
    home_fine = np.zeros((len(pods.count), n_fine), dtype=bool)
    home_fine[pods.of_pod, fine_of[state.pod_node[movable]]] = True
    # the variables: (pod class, fine class) for held classes, (pod class, group) for the others
    on_fine: dict[int, list[tuple[int, int]]] = {}
    on_group: dict[int, list[tuple[int, int]]] = {}
    by_pod: list[list[tuple[int, float]]] = [[] for _ in pods.count]
    fine_in_domain: dict[tuple[int, int], np.ndarray] = {}
    asw_of_fine = np.zeros(n_fine, dtype=np.int64)
    spine_of_fine = np.zeros(n_fine, dtype=np.int64)
    asw_of_fine[fine_of], spine_of_fine[fine_of] = state.asw_domain, state.spine_domain
    pairs = _pairs_at_most(pods, allows, g_pattern, group_of_fine, fine_in_domain, asw_of_fine, spine_of_fine)
    if pairs > max_pairs:
        raise _TooLarge(
            f"the class LP would have up to {pairs:,} variables ({len(pods.count):,} pod classes, {n_fine:,} node classes; "
            f"at most {max_pairs:,} are built): not built"
        )
    for q in range(len(pods.count)):
        if q % 512 == 0 and time.perf_counter() > deadline:
            raise _OutOfTime(f"{q:,} of {len(pods.count):,} pod classes")
        m, d, sig = int(pods.count[q]), int(pods.dem[q]), int(pods.sig[q])
        homes = np.flatnonzero(home_fine[q])
        if pods.kind[q]:
            key = (int(pods.kind[q]), int(pods.dom[q]))
            if key not in fine_in_domain:
                fine_in_domain[key] = np.flatnonzero((asw_of_fine if key[0] == 1 else spine_of_fine) == key[1])
            cand = fine_in_domain[key]
            cand = np.union1d(cand[allows[g_pattern[group_of_fine[cand]], sig]], homes)
            for c in cand.tolist():
                g = int(group_of_fine[c])
                k = int(per_fine[c, d]) if g_locked[g] else int(one_unlocked[g, d])
                k = min(max(k, 1) if c in homes else k, m)
                if k:
                    v = lp.var(float(k) if g_locked[g] else float(m))
                    by_pod[q].append((v, 1.0))
                    on_fine.setdefault(c, []).append((q, v))
                    on_group.setdefault(g, []).append((q, v))
                    if not g_locked[g]:
                        lp.row([(v, 1.0), (y[c], -float(k))], None, 0.0)  # per-node count (and presence)
        else:
            cand = np.union1d(np.flatnonzero(allows[g_pattern, sig]), group_of_fine[homes])
            for g in cand.tolist():
                k = int(per_group[g, d]) if g_locked[g] else int(one_unlocked[g, d])
                k = min(max(k, 1) if g in group_of_fine[homes] else k, m)
                if k:
                    v = lp.var(float(k) if g_locked[g] else float(m))
                    by_pod[q].append((v, 1.0))
                    on_group.setdefault(g, []).append((q, v))
                    if not g_locked[g]:
                        lp.row([(v, 1.0), (kept[g], -float(k))], None, 0.0)
    for q, terms in enumerate(by_pod):
        lp.row(terms, float(pods.count[q]), float(pods.count[q]))  # assign
    taken_fine: dict[tuple[int, int], int] = {}  # (fine class, anti-affinity group) -> locked nodes holding a locked pod of it
    taken_group: dict[tuple[int, int], int] = {}
    for a, n in _locked_group_nodes(state, locked_pod):
        c = int(fine_of[n])
        taken_fine[(c, a)] = taken_fine.get((c, a), 0) + 1
        taken_group[(int(group_of_fine[c]), a)] = taken_group.get((int(group_of_fine[c]), a), 0) + 1
    for c, members in on_fine.items():
        g = int(group_of_fine[c])
        cover = [(y[c], 1.0)] if not g_locked[g] else []
        free = {a: int(fine_count[c]) - taken_fine.get((c, a), 0) for q, _ in members for a in pods.groups[q]}
        _capacity_rows(lp, pods, members, cover, g_cap[g], residual_fine[c], free)
    for g, members in on_group.items():
        cover = [(kept[g], 1.0)] if not g_locked[g] else []
        total = int(fine_count[fines_of[g]].sum())
        free = {a: total - taken_group.get((g, a), 0) for q, _ in members for a in pods.groups[q]}
        _capacity_rows(lp, pods, members, cover, g_cap[g], residual_group[g], free)
    group_of_node = group_of_fine[fine_of]
    locked_whole = np.bincount(state.pod_node[locked_pod], weights=state.pod_whole[locked_pod].astype(np.float64), minlength=n_nodes)
    locked_room = np.bincount(group_of_node, weights=np.maximum(state.cap_gpus - locked_whole, 0.0) * locked_node, minlength=n_groups)
    locked_shares: dict[int, list[float]] = {}
    for p in np.flatnonzero(locked_pod & (state.pod_share > 0)).tolist():
        locked_shares.setdefault(int(group_of_node[state.pod_node[p]]), []).append(float(state.pod_share[p]))
    add_device_rows(lp, on_group, pods.share, pods.whole, pods.count, kept, g_cap[:, 0], np.bincount(group_of_fine, fine_count), locked_room, locked_shares)
    for region, fewest in cuts:  # the unlocked nodes of a region lie in these fine classes: their y sum covers them
        covering = np.unique(np.column_stack([region, fine_of])[(region >= 0) & ~locked_node], axis=0)
        for label in np.flatnonzero(fewest).tolist():
            lp.row([(y[c], 1.0) for c in covering[covering[:, 0] == label, 1].tolist()], float(fewest[label]), None)
    return lp, len(pods.count), n_fine


def _pairs_at_most(
    pods: _Pods,
    allows: np.ndarray,
    g_pattern: np.ndarray,
    group_of_fine: np.ndarray,
    fine_in_domain: dict[tuple[int, int], np.ndarray],
    asw_of_fine: np.ndarray,
    spine_of_fine: np.ndarray,
) -> int:
    """The (pod class, node class) pairs the build below would consider, at most (each class's home
    classes left out: a few per class): node groups allowing the class's signature, or for a class
    held in a switch or spine the fine classes of that domain allowing it. ``fine_in_domain`` is filled."""
    per_sig_groups = allows[g_pattern].sum(axis=0)
    free = pods.kind == 0
    total = int(per_sig_groups[pods.sig[free]].sum())
    held = Counter(zip(pods.kind[~free].tolist(), pods.dom[~free].tolist(), pods.sig[~free].tolist()))
    for (kind, dom, sig), classes in held.items():
        if (kind, dom) not in fine_in_domain:
            fine_in_domain[(kind, dom)] = np.flatnonzero((asw_of_fine if kind == 1 else spine_of_fine) == dom)
        cand = fine_in_domain[(kind, dom)]
        total += int(allows[g_pattern[group_of_fine[cand]], sig].sum()) * classes
    return total


def _capacity_rows(
    lp: _Lp,
    pods: _Pods,
    members: list[tuple[int, int]],
    cover: list[tuple[int, float]],
    cap: np.ndarray,
    residual: np.ndarray,
    free: dict[int, int],
) -> None:
    """Per resource the pods ``members`` put on a set of nodes fit: within ``cap`` times the unlocked
    nodes kept (``cover``: their y variables), or the locked nodes' ``residual``; and an
    anti-affinity group's pods there take distinct nodes (on locked nodes: the ``free`` ones, without a
    locked pod of the group)."""
    for r in range(len(cap)):
        terms = [(v, float(pods.demand[q, r])) for q, v in members if pods.demand[q, r] > 0]
        if terms:
            lp.row([*terms, *((yc, -float(cap[r])) for yc, _ in cover)], None, 0.0) if cover else lp.row(terms, None, float(residual[r]))
    groups: dict[int, list[tuple[int, float]]] = {}
    for q, v in members:
        for g in pods.groups[q]:
            groups.setdefault(g, []).append((v, 1.0))
    for g, terms in groups.items():
        if cover:
            lp.row([*terms, *((yc, -1.0) for yc, _ in cover)], None, 0.0)
        else:
            lp.row(terms, None, float(free[g]))


def _locked_group_nodes(state: ClusterState, locked_pod: np.ndarray) -> set[tuple[int, int]]:
    """(anti-affinity group, node) for every locked pod's groups: no other pod of the group may join it."""
    return {(g, int(state.pod_node[p])) for p in np.flatnonzero(locked_pod).tolist() for g in state.pod_groups[p]}


HALF_TOLERANCE = 1e-6
"""Shares within this of a boundary (1/3, 1/2, 2/3) count on its lower side in the device rows below."""


def _demand_dims(whole: np.ndarray, share: np.ndarray, cpus: np.ndarray, mem: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Per pod its demand in each dimension of a node's capacity (``_node_dims``): GPUs, CPUs, memory;
    two device counts, whole GPUs plus a dual feasible function of the share (a GPU's shares sum to
    at most 1, so their values do too): u(s) = 1 above 1/2, 1/2 at 1/2, else 0; and v(s) = 1 above
    2/3, 1/2 above 1/3, else 0; and per size t in ``sizes`` the whole GPUs of pods of t or more."""
    tol = HALF_TOLERANCE
    u = np.where(share > 0.5 + tol, 1.0, np.where(np.abs(share - 0.5) <= tol, 0.5, 0.0))
    v = np.where(share > 2 / 3 + tol, 1.0, np.where(share > 1 / 3 + tol, 0.5, 0.0))
    big = [np.where(whole >= t, whole, 0.0) for t in sizes]
    return np.column_stack([whole + share, cpus, mem, whole + u, whole + v, *big]).astype(np.float64)


def _node_dims(gpus: np.ndarray, cpus: np.ndarray, mem: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Per node its capacity in each dimension of ``_demand_dims``: the pods of t or more GPUs take at
    most the largest sum of such sizes within its GPUs (``_largest_sums``)."""
    top = int(gpus.max(initial=0))
    big = [_largest_sums([z for z in sizes if z >= t], top)[gpus.astype(np.int64)] for t in sizes]
    return np.column_stack([gpus, cpus, mem, gpus, gpus, *big]).astype(np.float64)


def _largest_sums(sizes: list[int], top: int) -> np.ndarray:
    """reach[c]: the largest sum of ``sizes`` (each any number of times) that is at most c, c = 0..top."""
    possible = np.zeros(top + 1, dtype=bool)
    possible[0] = True
    for c in range(1, top + 1):
        possible[c] = any(c >= z and possible[c - z] for z in sizes)
    reach: np.ndarray = np.maximum.accumulate(np.where(possible, np.arange(top + 1), 0))
    return reach


def _per_node(room: np.ndarray, demands: np.ndarray) -> np.ndarray:
    """(nodes, demands): the most pods of each demand row (whole GPUs, then ``_demand_dims``) a node
    with ``room`` (``_node_dims``) holds, by each dimension and by its free whole GPUs."""
    most = np.full((len(room), len(demands)), np.iinfo(np.int32).max, dtype=np.float64)
    for r in range(room.shape[1]):
        need = demands[:, 1 + r]
        positive = need > rules.EPS
        most[:, positive] = np.minimum(most[:, positive], np.floor((room[:, r, None] + rules.EPS) / need[None, positive]))
    whole = demands[:, 0] > 0
    free = np.floor(room[:, 0] + rules.EPS)
    most[:, whole] = np.minimum(most[:, whole], np.floor(free[:, None] / demands[None, whole, 0]))
    counts: np.ndarray = np.maximum(most, 0.0).astype(np.int64)
    return counts


def _solve(lp: _Lp, time_limit_s: float) -> tuple[list[float] | None, str]:
    """HiGHS's row duals at the LP's optimum (None when it is not solved to optimality in time) and its status."""
    import highspy  # deferred: HiGHS (a compiled solver), only when the LP bound is asked for

    h = _highs(highspy, 1)
    h.setOptionValue("time_limit", float(time_limit_s))
    inf = highspy.kHighsInf
    n = len(lp.cost)
    h.addVars(n, np.zeros(n), np.array(lp.upper, dtype=np.float64))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(lp.cost, dtype=np.float64))
    h.changeObjectiveSense(highspy.ObjSense.kMinimize)
    starts = np.frombuffer(lp.starts, dtype=np.int64)[:-1].astype(np.int32)
    index = np.frombuffer(lp.cols, dtype=np.int32)
    value = np.frombuffer(lp.coefs, dtype=np.float64)
    lower = np.array([-inf if lo is None else lo for lo in lp.lo], dtype=np.float64)
    upper = np.array([inf if hi is None else hi for hi in lp.hi], dtype=np.float64)
    h.addRows(len(lp.lo), lower, upper, len(index), starts, index, value)
    _interrupt_after(h, highspy, time_limit_s)
    try:
        with _quiet_stdout():
            h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            return None, h.modelStatusToString(status)
        return list(h.getSolution().row_dual), "optimal"
    finally:
        # highspy's Highs holds its callback objects and each holds it back: only the cyclic collector
        # frees it, and a plan pauses that collector (runtime/gc_pause.py), so the model and the
        # solver's work space (about 90 MB at 37,707 nodes) stayed allocated to the end of the plan.
        # Breaking the cycle frees them when ``h`` goes.
        h.callbacks = []
