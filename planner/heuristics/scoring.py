"""Node scores: rank the feasible nodes for a pod (higher is better), Kubernetes-framework style.

Filtering (may pod p go on node n?) is ``ClusterState.feasible_nodes``, the fast form of ``rules.py``;
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

Score = Callable[[ClusterState, int, np.ndarray], np.ndarray]


def gpus_allocated(state: ClusterState, nodes: np.ndarray) -> np.ndarray:
    """GPUs allocated on ``nodes``: whole GPUs plus the sum of the shares (not the devices they pack on)."""
    used = state.whole_used[nodes].astype(np.float64)
    shares = {n: s for n, s in state.node_shares.items() if s}
    if shares:
        dense = np.zeros(len(state.node_names))
        keys = np.fromiter(shares.keys(), dtype=np.int64, count=len(shares))
        dense[keys] = [sum(s) for s in shares.values()]
        used += dense[nodes]
    return used


def used_fractions_after(state: ClusterState, p: int, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(3 x len(nodes)) used fraction of GPUs, CPUs and memory once p is on each node, and which count.

    The second array marks the resources each node has (capacity > 0); the others are excluded.
    """
    capacity = np.stack(
        [state.cap_gpus[nodes].astype(np.float64), state.cap_cpus[nodes], state.cap_mem[nodes]]
    )
    used = np.stack(
        [
            gpus_allocated(state, nodes) + state.pod_gpus[p],
            state.used_cpus[nodes] + state.pod_cpus[p],
            state.used_mem[nodes] + state.pod_mem[p],
        ]
    )
    present = capacity > 0
    fraction = np.divide(used, capacity, out=np.zeros_like(used), where=present)
    return np.clip(fraction, 0.0, 1.0), present


def _mean_over_present(values: np.ndarray, present: np.ndarray) -> np.ndarray:
    count = present.sum(axis=0)
    total = np.where(present, values, 0.0).sum(axis=0)
    return np.divide(total, count, out=np.zeros(values.shape[1]), where=count > 0)


def least_allocated(state: ClusterState, p: int, nodes: np.ndarray) -> np.ndarray:
    """Kubernetes LeastAllocated ("spread", the default): mean free fraction after placing p."""
    fraction, present = used_fractions_after(state, p, nodes)
    return _mean_over_present(1.0 - fraction, present)


def most_allocated(state: ClusterState, p: int, nodes: np.ndarray) -> np.ndarray:
    """Kubernetes MostAllocated ("binpack"): mean used fraction after placing p."""
    fraction, present = used_fractions_after(state, p, nodes)
    return _mean_over_present(fraction, present)


SCORES: dict[str, Score] = {"spread": least_allocated, "binpack": most_allocated}
"""Score function of each scored scheduling policy."""
