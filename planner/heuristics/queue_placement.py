"""Placement policies of the queueing replay (``simulate/queueing.py``, Kant) on an array of free GPUs
per node, nodes in leaf groups of ``group_nodes``. A job's pods are one pod of fewer GPUs than a
node, or whole-node pods. Placement of a job's pods (in its pool, nodes ``[lo, hi)``):

* ``spread``: each pod on the feasible node with the most free GPUs (Kubernetes' default
  LeastAllocated on GPUs; ties: lowest index);
* ``binpack``: each pod on the feasible node with the fewest free GPUs (ties: lowest index);
* ``e-binpack`` (Kant's E-Binpack; its formulas are not published, these are our choices): a job
  smaller than a node goes, binpacked, to the groups already holding small jobs, and opens an empty
  group only when none has room (whole groups stay free for large jobs); a multi-node job takes whole
  free nodes from the fewest groups, best fit (the group with the fewest free nodes that holds it,
  else groups in decreasing free nodes), and never puts a node-sized pod on a partly used node.
* ``e-spread`` (Kant's E-Spread; zone size and overflow rule are not published, ours): the first
  ``zone_nodes`` nodes of each pool (whole groups) are the inference zone. An inference job smaller
  than a node is spread there (most free GPUs first); when the zone has no room it is E-Binpacked in
  the rest of the pool. Training jobs never enter the zone and are E-Binpacked in the rest.
"""

from __future__ import annotations

import math

import numpy as np

PLACEMENTS = ("spread", "binpack", "e-binpack", "e-spread")


def place_pods(
    free: np.ndarray,
    pods: list[int],
    per_node: int,
    group_nodes: int,
    placement: str,
    lo: int = 0,
    hi: int | None = None,
    zone_nodes: int = 0,
    inference: bool = False,
) -> list[int] | None:
    """Nodes for ``pods`` (GPUs of each; one entry per pod, indexes into ``free``) under ``placement``
    on the nodes [lo, hi) (whole groups), or None when they cannot start there. ``zone_nodes``:
    e-spread's inference zone at the start of [lo, hi) (a small ``inference`` pod tries it first)."""
    hi = len(free) if hi is None else hi
    if placement == "e-spread":
        if inference and len(pods) == 1 and pods[0] < per_node and zone_nodes:
            nodes = _place_local(free[lo : lo + zone_nodes], pods, per_node, group_nodes, "spread")
            if nodes is not None:
                return [n + lo for n in nodes]
        lo, placement = lo + zone_nodes, "e-binpack"  # training, large inference jobs and the zone's overflow
    nodes = _place_local(free[lo:hi], pods, per_node, group_nodes, placement)
    return None if nodes is None else [n + lo for n in nodes]


def _place_local(free: np.ndarray, pods: list[int], per: int, group_nodes: int, placement: str) -> list[int] | None:
    if len(pods) == 1 and pods[0] < per:
        fits = np.flatnonzero(free >= pods[0])
        if not len(fits):
            return None
        if placement == "e-binpack":
            group = fits // group_nodes
            used_group = np.zeros(math.ceil(len(free) / group_nodes), dtype=bool)
            partly = np.flatnonzero(free < per)
            used_group[partly // group_nodes] = True
            preferred = fits[used_group[group]]
            if len(preferred):
                fits = preferred
        return [int(fits[np.argmax(free[fits])] if placement == "spread" else fits[np.argmin(free[fits])])]
    idle = free == per
    if placement in ("binpack", "spread"):  # whole-node pods: any policy takes idle nodes, lowest index first
        chosen = np.flatnonzero(idle)[: len(pods)]
        return chosen.tolist() if len(chosen) == len(pods) else None
    if idle.sum() < len(pods):
        return None
    groups = math.ceil(len(free) / group_nodes)
    idle_per_group = np.bincount(np.flatnonzero(idle) // group_nodes, minlength=groups)
    holds = np.flatnonzero(idle_per_group >= len(pods))
    if len(holds):
        order = [int(holds[np.argmin(idle_per_group[holds])])]
    else:
        order = np.argsort(-idle_per_group, kind="stable").tolist()
    picked: list[int] = []
    for g in order:
        members = np.flatnonzero(idle[g * group_nodes : (g + 1) * group_nodes]) + g * group_nodes
        picked.extend(members[: len(pods) - len(picked)].tolist())
        if len(picked) == len(pods):
            return picked
    return None  # pragma: no cover - idle.sum() >= pods guarantees enough
