"""Lower bounds on the cost of a victim cover, per node: which nodes a preemption decision searches,
and in what order (``spotgpu.SpotGpu.place_preempting`` stops at the first node whose bound exceeds
the best cover found).

The bound is a fractional knapsack over a node's candidate victim units, for the pod's GPU deficit and
for its CPU deficit. Its rows (what each unit frees on each node, its cost, the rows ranked per node by
cost per GPU and per CPU freed) depend on the pods' placement, the candidate victims and their costs,
not on the pod asked about: they are built once and kept while those stay the same (equal arrays), so the decisions of one state share them (issue 62: the ranking was
half of a decision's time at 1,000 nodes).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from planner.preempt_state import Ask, PreemptState
from planner.state import PENDING


def cheapest_unit_on(ps: PreemptState, ask: Ask) -> np.ndarray:
    """Per node, the cost of its cheapest candidate victim unit (inf where none): a lower bound on
    any cover of a node where the pod does not fit yet."""
    cs = ps.cs
    placed = np.flatnonzero(ask.victims & (cs.pod_node != PENDING))
    low = np.full(len(cs.node_names), np.inf)
    if len(placed):
        costs = ask.unit_cost[ps.unit[placed]]
        np.minimum.at(low, cs.pod_node[placed], costs)
    return low


@dataclass
class Ranked:
    """The (unit, node) rows of one resource, ranked by node, then by cost per unit freed, then row."""

    node: np.ndarray
    freed: np.ndarray
    cost: np.ndarray


@dataclass
class Rows:
    """What the bound reads that does not depend on the pod: built for one placement of the pods, one
    victim mask and one set of unit costs (compared whole: a decision places and undoes, so the
    state's ``version`` moves while the placement comes back)."""

    state: object
    pod_node: np.ndarray
    victims: np.ndarray
    unit_cost: np.ndarray
    cheapest: np.ndarray
    gpus: Ranked
    cpus: Ranked


_ROWS: weakref.WeakKeyDictionary[PreemptState, Rows] = weakref.WeakKeyDictionary()


def _rows(ps: PreemptState, ask: Ask) -> Rows:
    """The rows of ``ps`` for ``ask``'s victims and costs: kept from the last call when they are the same."""
    kept = _ROWS.get(ps)
    cs = ps.cs
    if (
        kept is not None
        and kept.state is cs
        and np.array_equal(kept.pod_node, cs.pod_node)
        and np.array_equal(kept.victims, ask.victims)
        and np.array_equal(kept.unit_cost, ask.unit_cost)
    ):
        return kept
    pods = np.flatnonzero(ask.victims & (cs.pod_node != PENDING))
    n_nodes = len(cs.node_names)
    where = cs.pod_node[pods]
    units = ps.unit[pods]
    # one row per (unit, node): what the unit frees on that node, and its whole cost
    key = units.astype(np.int64) * n_nodes + where
    if len(key) == 0 or (key[1:] > key[:-1]).all():  # already sorted and distinct (one pod per unit, the usual case): np.unique's answer
        rows, inverse = key, np.arange(len(key))
    else:
        rows, inverse = np.unique(key, return_inverse=True)
    row_node = rows % n_nodes
    cost = ask.unit_cost[rows // n_nodes]
    ranked = []
    for freed in (
        np.bincount(inverse, weights=cs.pod_whole[pods] + (cs.pod_share[pods] > 0), minlength=len(rows)),
        np.bincount(inverse, weights=cs.pod_cpus[pods], minlength=len(rows)),
    ):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(freed > 0, cost / np.where(freed > 0, freed, 1), np.inf)
        order = np.lexsort((ratio, row_node))
        ranked.append(Ranked(row_node[order], freed[order], cost[order]))
    made = Rows(cs, cs.pod_node.copy(), ask.victims.copy(), ask.unit_cost.copy(), cheapest_unit_on(ps, ask), ranked[0], ranked[1])
    _ROWS[ps] = made
    return made


def cover_lower_bounds(ps: PreemptState, ask: Ask, p: int, nodes: np.ndarray) -> np.ndarray:
    """Per node of ``nodes`` (ascending), a lower bound on the cost of any victim cover for pod p there:
    the fractional knapsack over its candidate units for the GPU deficit and for the CPU deficit
    (units ranked by cost per GPU or per CPU freed, the last one taken in part), and never below its
    cheapest unit (the pod fits nowhere without eviction when this is asked)."""
    cs = ps.cs
    rows = _rows(ps, ask)
    low = rows.cheapest[nodes]
    need_gpus = cs.pod_whole[p] + (1 if cs.pod_share[p] > 0 else 0)
    gpu_deficit = need_gpus - (cs.cap_gpus[nodes] - cs.whole_used[nodes] - cs.share_devices[nodes])
    cpu_deficit = cs.pod_cpus[p] - (cs.cap_cpus[nodes] - cs.used_cpus[nodes])
    local = np.full(len(cs.node_names), -1)
    local[nodes] = np.arange(len(nodes))
    for ranked, deficit in ((rows.gpus, gpu_deficit), (rows.cpus, cpu_deficit)):
        if not (deficit > 0).any():
            continue
        at = local[ranked.node]
        keep = at >= 0
        keep[keep] = deficit[at[keep]] > 0  # a node's rows all stay or all go: its bound is unchanged
        if not keep.any():
            continue
        node_sorted, freed_sorted, cost_sorted = at[keep], ranked.freed[keep], ranked.cost[keep]
        cum = np.cumsum(freed_sorted)
        first = np.flatnonzero(np.concatenate(([True], node_sorted[1:] != node_sorted[:-1])))
        start = np.repeat(first, np.diff(np.append(first, len(node_sorted))))  # each row's node's first row
        before = cum - freed_sorted - np.concatenate(([0.0], cum))[start]
        need = deficit[node_sorted]
        with np.errstate(divide="ignore", invalid="ignore"):
            take = np.clip((need - before) / np.where(freed_sorted > 0, freed_sorted, 1), 0, 1)
        take = np.where(freed_sorted > 0, take, 0)
        bound = np.bincount(node_sorted, weights=cost_sorted * take, minlength=len(nodes))
        low = np.maximum(low, bound - 1e-9 * np.maximum(1.0, bound))
    return low
