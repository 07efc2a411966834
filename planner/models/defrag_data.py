"""The data of the exact defragmentation model (``models/defrag.py``): each pod's resources in the
model's integer units, the locked usage of each node, each movable pod's eligible nodes (from the
rules, via the state), the classes of interchangeable pods, and the deadline of the build."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np

from planner.limits import MoveBudget
from planner.models.units import Scale, scale_for
from planner.state import ClusterState


class ModelTimeout(TimeoutError):
    """Building the model took the whole time limit (a huge instance, forced)."""


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise ModelTimeout("building the model took the whole time limit")


def class_key(state: ClusterState, p: int, domain: int) -> tuple[object, ...]:
    """Pods with equal keys are interchangeable for every rule and resource."""
    return (
        int(state.pod_whole[p]),
        float(state.pod_share[p]),
        float(state.pod_cpus[p]),
        float(state.pod_mem[p]),
        int(state.pod_signature[p]),
        state.pod_groups[p],
        domain,
        tuple(state.pod_res[p].tolist()),
    )


class DefragData:
    """Integer resources, locked usage and eligibility, derived from ``rules`` via the state."""

    def __init__(
        self, state: ClusterState, movable: list[int], forbidden: set[tuple[int, int]] | frozenset[tuple[int, int]], budget: MoveBudget, deadline: float | None
    ):
        self.state = s = state
        self.movable = movable
        n_nodes = len(s.node_names)
        placed = np.flatnonzero(s.pod_node >= 0)
        shares = s.pod_share[placed]
        self.cpu_scale = scale_for(s.pod_cpus[placed].tolist(), s.cap_cpus.tolist())
        self.mem_scale = scale_for(s.pod_mem[placed].tolist(), s.cap_mem.tolist())
        self.share_scale = scale_for(shares[shares > 0].tolist(), [1.0]) if (shares > 0).any() else Scale(1, True)
        self.exact_units = self.cpu_scale.exact and self.mem_scale.exact and self.share_scale.exact
        self.cpu = [self.cpu_scale.request(c) for c in s.pod_cpus.tolist()]
        self.mem = [self.mem_scale.request(m) for m in s.pod_mem.tolist()]
        self.share = [self.share_scale.request(x) if x > 0 else 0 for x in s.pod_share.tolist()]
        self.device = self.share_scale.capacity(1.0)
        self.gpu_units = [int(s.pod_whole[p]) * self.share_scale.unit + self.share[p] for p in range(len(s.pod_names))]
        self.cap_gpu = s.cap_gpus.astype(int).tolist()
        self.cap_cpu = [self.cpu_scale.capacity(c) for c in s.cap_cpus.tolist()]
        self.cap_mem = [self.mem_scale.capacity(m) for m in s.cap_mem.tolist()]
        self.locked_whole = [0] * n_nodes
        self.locked_cpu = [0] * n_nodes
        self.locked_mem = [0] * n_nodes
        self.locked_shares: dict[int, list[int]] = defaultdict(list)
        self.locked_res = np.zeros(s.cap_res.shape, dtype=np.int64)
        self.has_locked = [False] * n_nodes
        locked_groups: dict[int, set[int]] = defaultdict(set)
        for p in np.flatnonzero(s.pod_locked & (s.pod_node >= 0)).tolist():
            n = int(s.pod_node[p])
            self.has_locked[n] = True
            self.locked_whole[n] += int(s.pod_whole[p])
            self.locked_cpu[n] += self.cpu[p]
            self.locked_mem[n] += self.mem[p]
            self.locked_res[n] += s.pod_res[p]
            if s.pod_share[p] > 0:
                self.locked_shares[n].append(p)
            locked_groups[n].update(s.pod_groups[p])
        self.home = {p: int(s.pod_node[p]) for p in movable}
        self.same_asw = budget.asw is not None
        self.domain = {}
        self.eligible: dict[int, list[int]] = {}
        all_nodes = np.arange(n_nodes)
        for k, p in enumerate(movable):
            if k % 256 == 0:
                _check_deadline(deadline)
            home = self.home[p]
            ok = s.eligible[s.pod_signature[p]] & budget.destinations(home)
            domain_array = s._pod_scalars[p][5]
            self.domain[p] = -1 if domain_array is None else int(domain_array[home])
            if domain_array is not None:
                ok &= domain_array == self.domain[p]
            ok &= s.cap_gpus >= s.pod_whole[p] + (1 if s.pod_share[p] > 0 else 0)
            nodes = [n for n in all_nodes[ok].tolist() if not (locked_groups.get(n, set()) & set(s.pod_groups[p]))]
            nodes = [n for n in nodes if (p, n) not in forbidden and self._fits_alone(p, n)]
            if home not in nodes:
                nodes.append(home)
            self.eligible[p] = sorted(nodes)

    def _fits_alone(self, p: int, n: int) -> bool:
        """p fits n beside the locked pods alone (cheap pruning of hopeless pairs)."""
        return (
            self.cpu[p] <= self.cap_cpu[n] - self.locked_cpu[n]
            and self.mem[p] <= self.cap_mem[n] - self.locked_mem[n]
            and self.state.pod_whole[p] <= self.cap_gpu[n] - self.locked_whole[n]
            and bool((self.state.pod_res[p] <= self.state.cap_res[n] - self.locked_res[n]).all())
        )

    def classes(self) -> list[list[int]]:
        by_key: dict[tuple[object, ...], list[int]] = defaultdict(list)
        for p in self.movable:
            asw = int(self.state.asw_domain[self.home[p]]) if self.same_asw else -1
            by_key[(*class_key(self.state, p, self.domain[p]), asw)].append(p)
        return [by_key[k] for k in sorted(by_key, key=lambda k: by_key[k][0])]
