"""Node scores: rank the feasible nodes for a pod (higher is better), Kubernetes-framework style.

Filtering (may pod p go on node n?) is ``ClusterState.feasible_nodes``, the fast form of ``rules``;
a score only orders nodes that already passed it. Every score has the signature
``score(state, p, nodes) -> np.ndarray`` over an array of node indexes and is vectorised with numpy.

Both scores follow the kube-scheduler ``NodeResourcesFit`` strategies over three resources with equal
weights, GPUs, CPUs and memory, each as a fraction of the node's capacity *after* placing the pod.
A resource the node does not have (zero capacity, e.g. GPUs on a CPU-only node) is left out of the
average, as Kubernetes does. Scores are floats in [0, 1] rather than Kubernetes' integers 0..100.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from planner.state import ClusterState

Score = Callable[..., np.ndarray]
"""``score(state, p, nodes, allocated=None)``; ``allocated`` optionally gives ``gpus_allocated`` of
every node, so a caller scoring several times in one state computes it once."""


def gpus_allocated(state: ClusterState, nodes: np.ndarray | None = None) -> np.ndarray:
    """GPUs allocated on ``nodes`` (default all): whole GPUs plus the sum of the shares on them."""
    allocated = state.allocated_gpus()
    return allocated if nodes is None else allocated[nodes]


def mean_used_fraction(state: ClusterState, p: int, nodes: np.ndarray, allocated: np.ndarray | None = None) -> np.ndarray:
    """Mean over GPUs, CPUs and memory of the used fraction of each node once p is on it.

    A resource the node does not have (zero capacity) is left out of its mean.
    """
    total = np.zeros(len(nodes))
    count = np.zeros(len(nodes))
    for used, capacity in (
        (
            (gpus_allocated(state, nodes) if allocated is None else allocated[nodes]) + state.pod_gpus[p],
            state.cap_gpus[nodes].astype(np.float64),
        ),
        (state.used_cpus[nodes] + state.pod_cpus[p], state.cap_cpus[nodes]),
        (state.used_mem[nodes] + state.pod_mem[p], state.cap_mem[nodes]),
    ):
        if len(nodes) and capacity.min() > 0:
            total += np.minimum(used / capacity, 1.0)
            count += 1
        else:
            present = capacity > 0
            total += np.where(present, np.minimum(used / np.where(present, capacity, 1.0), 1.0), 0.0)
            count += present
    return total / np.maximum(count, 1)


def least_allocated(state: ClusterState, p: int, nodes: np.ndarray, allocated: np.ndarray | None = None) -> np.ndarray:
    """Kubernetes LeastAllocated ("spread", the default): mean free fraction after placing p."""
    return 1.0 - mean_used_fraction(state, p, nodes, allocated)


def most_allocated(state: ClusterState, p: int, nodes: np.ndarray, allocated: np.ndarray | None = None) -> np.ndarray:
    """Kubernetes MostAllocated ("binpack"): mean used fraction after placing p."""
    return mean_used_fraction(state, p, nodes, allocated)


SCORES: dict[str, Score] = {"spread": least_allocated, "binpack": most_allocated}
"""Score function of each scored scheduling policy."""
