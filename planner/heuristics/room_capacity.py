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

from planner.graph_components import component_labels
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
    arrive = state.schedulable & (state.cap_gpus > 0)
    placed = np.flatnonzero((state.pod_node >= 0) & ~state.pod_locked & ((state.pod_whole > 0) | (state.pod_share > 0)))
    signatures, of_pod = np.unique(state.pod_signature[placed], return_inverse=True)
    reach = np.full(len(signatures), -1, dtype=np.int64)  # per signature: one group it may arrive in (all of them linked)
    ends: list[tuple[np.ndarray, np.ndarray]] = []
    for i, signature in enumerate(signatures.tolist()):
        targets = np.unique(groups[state.eligible[signature] & arrive])
        if targets.size:
            reach[i] = targets[0]
            ends.append((np.full(targets.size - 1, targets[0]), targets[1:]))
    home, target = groups[state.pod_node[placed]], reach[of_pod.reshape(-1)]
    linked = (home >= 0) & (target >= 0)
    ends.append((home[linked], target[linked]))  # a pod's home group and where it may go
    of_group = component_labels(count, np.concatenate([e[0] for e in ends]), np.concatenate([e[1] for e in ends]))
    free = np.where(arrive, state.cap_gpus - state.whole_used - state.share_sum, 0.0)
    at = groups >= 0
    unused = np.bincount(of_group[groups[at]], weights=free[at], minlength=int(of_group.max(initial=-1)) + 1)
    return Components(of_group, unused)
