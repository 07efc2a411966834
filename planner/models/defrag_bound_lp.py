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
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from planner import rules
from planner.limits import MoveBudget
from planner.state import PENDING, ClusterState

TIME_LIMIT_S = 10.0
"""Default wall-time limit of the LP solve (the build and the exact check come on top)."""


@dataclass(frozen=True)
class LpBound:
    """``bound``: the proven bound on empty nodes, None when the LP did not finish (``note`` says why)."""

    bound: int | None
    note: str
    pod_classes: int
    node_classes: int
    wall_s: float


@dataclass
class _Lp:
    """minimise cost . z  s.t.  lo <= A z <= hi, 0 <= z <= upper (A in CSR rows of (col, coef))."""

    cost: list[float]
    upper: list[float]
    rows: list[list[tuple[int, float]]]
    lo: list[float | None]
    hi: list[float | None]

    def var(self, upper: float, cost: float = 0.0) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, terms: list[tuple[int, float]], lo: float | None, hi: float | None) -> None:
        self.rows.append(terms)
        self.lo.append(lo)
        self.hi.append(hi)


def class_lp_bound(state: ClusterState, budget: MoveBudget, time_limit_s: float = TIME_LIMIT_S) -> LpBound:
    """The class LP bound on ``state`` (locks as the plan sees them); ``budget`` gives ``same_asw``."""
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
    lp, pods, nodes = _build(state, budget, movable, locked_pod, locked_node)
    left = time_limit_s - (time.perf_counter() - start)
    duals, status = _solve(lp, left) if left > 0 else (None, "not started: building it took the time limit")
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


def _build(state: ClusterState, budget: MoveBudget, movable: np.ndarray, locked_pod: np.ndarray, locked_node: np.ndarray) -> tuple[_Lp, int, int]:
    home = state.pod_node[movable]
    level = np.append(state.job_level, 0)[state.pod_job[movable]]  # a pod without a job (-1) reads the trailing 0
    kind = np.where((level == 1) | (budget.asw is not None), 1, np.where(level == 2, 2, 0))
    domain = np.where(kind == 1, state.asw_domain[home], np.where(kind == 2, state.spine_domain[home], -1))
    sig = state.pod_signature[movable]
    used_sigs, sig_index = np.unique(sig, return_inverse=True)
    allowed_home = state.eligible[sig, home]
    home_key = np.where(allowed_home, -1, home)  # a pod its rules would refuse at home (cordoned) may still stay
    group_ids: dict[tuple[int, ...], int] = {}
    aa = np.array([group_ids.setdefault(tuple(sorted(state.pod_groups[p])), len(group_ids)) for p in movable.tolist()], dtype=np.int64)
    whole = state.pod_whole[movable].astype(np.float64)
    gpus = whole + state.pod_share[movable]
    cpus, mem = state.pod_cpus[movable], state.pod_mem[movable]
    pod_keys = np.stack([sig_index, kind, domain, whole, gpus, cpus, mem, aa, home_key], axis=1).astype(np.float64)
    classes, first_pod, pod_class, counts = np.unique(pod_keys, axis=0, return_index=True, return_inverse=True, return_counts=True)
    pod_class = pod_class.reshape(-1)
    q_sig = classes[:, 0].astype(np.int64)
    q_kind, q_dom = classes[:, 1].astype(np.int64), classes[:, 2].astype(np.int64)
    q_whole, q_gpus, q_cpus, q_mem = classes[:, 3], classes[:, 4], classes[:, 5], classes[:, 6]
    q_home = classes[:, 8].astype(np.int64)

    # node classes
    n_nodes = len(state.node_names)
    pattern = np.unique(state.eligible[used_sigs].T, axis=0, return_inverse=True)[1].reshape(-1)
    need_asw, need_spine = bool((q_kind == 1).any()), bool((q_kind == 2).any())
    special = np.full(n_nodes, -1, dtype=np.int64)
    special[q_home[q_home >= 0]] = q_home[q_home >= 0]
    unlocked = ~locked_node
    caps = np.where(unlocked[:, None], np.stack([state.cap_gpus.astype(np.float64), state.cap_cpus, state.cap_mem], axis=1), -1.0)
    node_keys = np.column_stack(
        [
            locked_node.astype(np.float64),
            caps,
            pattern,
            state.asw_domain if need_asw else np.full(n_nodes, -1),
            state.spine_domain if need_spine else np.full(n_nodes, -1),
            special,
        ]
    ).astype(np.float64)
    node_classes, node_class = np.unique(node_keys, axis=0, return_inverse=True)
    node_class = node_class.reshape(-1)
    n_classes = len(node_classes)
    c_locked = node_classes[:, 0] > 0
    c_cap = node_classes[:, 1:4]
    c_pattern = node_classes[:, 4].astype(np.int64)
    c_asw, c_spine = node_classes[:, 5].astype(np.int64), node_classes[:, 6].astype(np.int64)
    c_count = np.bincount(node_class, minlength=n_classes)
    pattern_allows = np.zeros((int(c_pattern.max()) + 1, len(used_sigs)), dtype=bool)
    pattern_allows[pattern, :] = state.eligible[used_sigs].T
    allowed = pattern_allows[c_pattern][:, q_sig].T  # (pod classes, node classes)
    allowed &= np.where(q_kind[:, None] == 1, c_asw[None, :] == q_dom[:, None], True)
    allowed &= np.where(q_kind[:, None] == 2, c_spine[None, :] == q_dom[:, None], True)
    homes = np.flatnonzero(q_home >= 0)
    allowed[homes, node_class[q_home[homes]]] = True  # such a home is a class of its own (``special``)
    home_pair = np.zeros_like(allowed)
    home_pair[pod_class, node_class[home]] = True
    allowed |= home_pair

    # the locked nodes' room, and the rows
    locked_use = [
        np.bincount(state.pod_node[locked_pod], weights=d[locked_pod], minlength=n_nodes)
        for d in (state.pod_whole + state.pod_share, state.pod_cpus, state.pod_mem)
    ]
    room = np.maximum(np.stack([state.cap_gpus - locked_use[0], state.cap_cpus - locked_use[1], state.cap_mem - locked_use[2]], axis=1), 0.0)
    demand = np.stack([q_gpus, q_cpus, q_mem], axis=1)
    residual = np.zeros((n_classes, 3))
    np.add.at(residual, node_class[locked_node], room[locked_node])
    order = np.argsort(node_class, kind="stable")
    first = np.searchsorted(node_class[order], np.arange(n_classes + 1))
    lp = _Lp([], [], [], [], [])
    y = {c: lp.var(float(c_count[c]), 1.0) for c in np.flatnonzero(~c_locked & allowed.any(axis=0)).tolist()}
    by_class: dict[int, list[tuple[int, int]]] = {}  # node class -> (pod class, variable)
    by_pod: list[list[tuple[int, float]]] = [[] for _ in range(len(classes))]
    for q, c in zip(*np.nonzero(allowed)):
        q, c = int(q), int(c)
        m = int(counts[q])
        if c_locked[c]:
            k = int(_per_node(room[order[first[c] : first[c + 1]]], demand[q], q_whole[q], m).sum())
        else:
            k = int(_per_node(c_cap[c][None, :], demand[q], q_whole[q], m)[0])
        if home_pair[q, c]:
            k = max(k, 1)  # it is there now
        k = min(k, m)
        if k == 0:
            continue
        v = lp.var(float(k) if c_locked[c] else float(m))
        by_pod[q].append((v, 1.0))
        by_class.setdefault(c, []).append((q, v))
        if not c_locked[c]:
            lp.row([(v, 1.0), (y[c], -float(k))], None, 0.0)  # per-node count (and presence)
    for q, terms in enumerate(by_pod):
        lp.row(terms, float(counts[q]), float(counts[q]))  # assign
    q_groups = [state.pod_groups[int(movable[i])] for i in first_pod.tolist()]  # a class shares its groups
    locked_taken = _locked_group_nodes(state, locked_pod)
    for c, members in by_class.items():
        for r in range(3):
            terms = [(v, float(demand[q, r])) for q, v in members if demand[q, r] > 0]
            if not terms:
                continue
            if c_locked[c]:
                lp.row(terms, None, float(residual[c, r]))
            else:
                lp.row([*terms, (y[c], -float(c_cap[c, r]))], None, 0.0)
        groups: dict[int, list[tuple[int, float]]] = {}
        for q, v in members:
            for g in q_groups[q]:
                groups.setdefault(g, []).append((v, 1.0))
        for g, terms in groups.items():
            if c_locked[c]:
                free = int(c_count[c]) - sum(1 for n in order[first[c] : first[c + 1]].tolist() if (g, n) in locked_taken)
                lp.row(terms, None, float(free))
            else:
                lp.row([*terms, (y[c], -1.0)], None, 0.0)
    return lp, len(classes), n_classes


def _locked_group_nodes(state: ClusterState, locked_pod: np.ndarray) -> set[tuple[int, int]]:
    """(anti-affinity group, node) for every locked pod's groups: no other pod of the group may join it."""
    return {(g, int(state.pod_node[p])) for p in np.flatnonzero(locked_pod).tolist() for g in state.pod_groups[p]}


def _per_node(room: np.ndarray, demand: np.ndarray, whole: float, m: int) -> np.ndarray:
    """Per node (rows of ``room``: GPUs, CPUs, memory) the most pods of one class it holds, at most ``m``."""
    most = np.full(len(room), float(m))
    for r in range(3):
        if demand[r] > rules.EPS:
            most = np.minimum(most, np.floor((room[:, r] + rules.EPS) / demand[r]))
    if whole > 0:
        most = np.minimum(most, np.floor((np.floor(room[:, 0] + rules.EPS)) / whole))
    counts: np.ndarray = np.maximum(most, 0.0).astype(np.int64)
    return counts


def _solve(lp: _Lp, time_limit_s: float) -> tuple[list[float] | None, str]:
    """HiGHS's row duals at the LP's optimum (None when it is not solved to optimality in time) and its status."""
    import highspy  # deferred: HiGHS (a compiled solver), only when the LP bound is asked for

    from planner.models.highs import _highs, _interrupt_after, _quiet_stdout

    h = _highs(highspy, 1)
    h.setOptionValue("time_limit", float(time_limit_s))
    inf = highspy.kHighsInf
    n = len(lp.cost)
    h.addVars(n, np.zeros(n), np.array(lp.upper, dtype=np.float64))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(lp.cost, dtype=np.float64))
    h.changeObjectiveSense(highspy.ObjSense.kMinimize)
    starts = np.cumsum([0] + [len(t) for t in lp.rows])[:-1].astype(np.int32)
    index = np.array([v for t in lp.rows for v, _ in t], dtype=np.int32)
    value = np.array([a for t in lp.rows for _, a in t], dtype=np.float64)
    lower = np.array([-inf if lo is None else lo for lo in lp.lo], dtype=np.float64)
    upper = np.array([inf if hi is None else hi for hi in lp.hi], dtype=np.float64)
    h.addRows(len(lp.rows), lower, upper, len(index), starts, index, value)
    _interrupt_after(h, highspy, time_limit_s)
    with _quiet_stdout():
        h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        return None, h.modelStatusToString(status)
    return list(h.getSolution().row_dual), "optimal"


def _certified_minimum(lp: _Lp, row_duals: list[float]) -> Fraction:
    """A lower bound on the LP's minimum, exact: weak duality with ``row_duals`` as multipliers.

    For any multipliers pi (pi_i >= 0 only where row i has a lower side, <= 0 only where it has an
    upper side) and every z in the box [0, u] satisfying the rows,
    ``cost.z = (cost - A'pi).z + pi.Az >= sum_j min(0, r_j) u_j + sum_i pi_i side_i``."""
    pi: list[Fraction] = []
    total = Fraction(0)
    for d, lo, hi in zip(row_duals, lp.lo, lp.hi):
        side = lo if d > 0 else hi
        if d == 0 or side is None:
            pi.append(Fraction(0))
            continue
        f = Fraction(d).limit_denominator(1 << 20)
        pi.append(f)
        total += f * Fraction(side)
    reduced = [Fraction(c) for c in lp.cost]
    for i, terms in enumerate(lp.rows):
        f = pi[i]
        if f:
            for v, a in terms:
                reduced[v] -= f * Fraction(a)
    for r, u in zip(reduced, lp.upper):
        if r < 0:
            total += r * Fraction(u)
    return total
