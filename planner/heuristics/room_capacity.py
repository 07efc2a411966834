"""Where the GPUs a room needs can come from: the groups of the room count linked by the pods that may
move between them (issue 44).

A move keeps every placed pod placed, and a GPU pod can only arrive on a schedulable GPU node its
static rules allow (``ClusterState.eligible``; the pool policy has already narrowed them, so by default
a pod keeps its GPU product). Link two groups of the count (GPU model and domain,
``switch_room.domain_groups``) when a movable placed GPU pod sits in one and may arrive in the other,
and close over the links: each *component* is a set of whole groups, and every pod on a schedulable
node of a component ends, after any plan, on a schedulable node of the same component. So the GPU
slots the component's nodes can offer after any plan are at most

    unused(C) = sum over the schedulable GPU nodes n of C of (C_gpu n - whole GPUs on n - shares on n)

(a node's shares take at least their sum in devices), and the requests of G GPUs its groups hold are
at most floor(unused(C) / G) together. By default the components are the GPU models, so this bounds
the count per product where the cluster-wide count of free GPUs (the bound before it) let the free
GPUs of one product make room for another's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.state import ClusterState

EPS = 1e-9


@dataclass(frozen=True)
class Components:
    """Per group (``domain_groups`` numbering) its component, and per component its unused GPUs."""

    of_group: np.ndarray
    unused_gpus: np.ndarray

    def most(self, gpus: int) -> np.ndarray:
        """Per component, the most requests of ``gpus`` GPUs its groups can hold together."""
        return np.floor(self.unused_gpus / gpus + EPS).astype(np.int64)


def capacity_components(state: ClusterState, groups: np.ndarray) -> Components:
    """The components of the module docstring for the groups ``groups`` (per node, -1 off GPU nodes)."""
    count = int(groups.max(initial=-1)) + 1
    parent = list(range(count))

    def find(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    def union(a: int, b: int) -> None:
        a, b = find(a), find(b)
        if a != b:
            parent[max(a, b)] = min(a, b)

    arrive = state.schedulable & (state.cap_gpus > 0)
    placed = np.flatnonzero((state.pod_node >= 0) & ~state.pod_locked & ((state.pod_whole > 0) | (state.pod_share > 0)))
    reach: dict[int, int | None] = {}  # per signature: one group it may arrive in (all of them united), None if none
    for p in placed.tolist():
        signature = int(state.pod_signature[p])
        if signature not in reach:
            targets = np.unique(groups[state.eligible[signature] & arrive]).tolist()
            for g in targets[1:]:
                union(targets[0], g)
            reach[signature] = targets[0] if targets else None
        home, target = int(groups[state.pod_node[p]]), reach[signature]
        if home >= 0 and target is not None:
            union(home, target)
    roots = [find(g) for g in range(count)]
    _, of_group = np.unique(np.array(roots, dtype=np.int64), return_inverse=True)
    free = np.where(arrive, state.cap_gpus - state.whole_used - state.share_sum, 0.0)
    at = groups >= 0
    unused = np.bincount(of_group[groups[at]], weights=free[at], minlength=int(of_group.max(initial=-1)) + 1)
    return Components(of_group.astype(np.int64), unused)
