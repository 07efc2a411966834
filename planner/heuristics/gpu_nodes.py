"""Per-GPU cluster state for placement replays (the FGD and PWR papers' node model), on numpy arrays.

A node holds free CPU (milli-CPUs), free memory (MiB) and, per GPU device, its free share in milli-GPUs
(1000 = idle). A pod asks for CPU, memory and either nothing (CPU-only), a *share* of one GPU
(``num_gpu == 1`` and ``gpu_milli < 1000``) or ``num_gpu`` whole GPUs, optionally of given models.

Feasibility is the trace simulator's filter, which is ``rules``'s on this model: CPU and memory fit;
a GPU pod needs an allowed GPU model; a share needs one device with at least its milli free; k whole
GPUs need k idle devices. A share lands on one device chosen by the policy (so the per-device layout is
always one that ``rules``'s device packing accepts; ``simulate/openb_nodes.to_cluster`` lets a test
check that). The placement scores (``share_scores``) and the placement simulator share this model.

Devices a node does not have are stored as 0 free: they never fit a GPU pod and add nothing to sums.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MILLI = 1000


@dataclass
class Trace:
    """Pods of a trace as arrays, in file order. ``models``: per pod, the allowed GPU model names
    (empty: any)."""

    names: list[str]
    cpu: np.ndarray  # milli-CPUs
    mem: np.ndarray  # MiB
    num_gpu: np.ndarray
    gpu_milli: np.ndarray  # per GPU; 1000 for whole GPUs
    models: list[tuple[str, ...]]

    @property
    def total_milli(self) -> np.ndarray:
        """GPU milli each pod asks for in all (0 for CPU-only pods)."""
        return self.gpu_milli * self.num_gpu

    def take(self, order: np.ndarray) -> Trace:
        idx = order.tolist()
        return Trace([self.names[i] for i in idx], self.cpu[order], self.mem[order], self.num_gpu[order], self.gpu_milli[order], [self.models[i] for i in idx])


@dataclass
class GpuNodes:
    """Mutable per-GPU state of a cluster. ``gpu_free[n, g]``: free milli of device g of node n."""

    names: list[str]
    model_names: list[str]
    model: np.ndarray  # index into model_names
    gpus: np.ndarray
    cpu_cap: np.ndarray
    mem_cap: np.ndarray
    cpu_free: np.ndarray = field(init=False)
    mem_free: np.ndarray = field(init=False)
    gpu_free: np.ndarray = field(init=False)
    tags: np.ndarray = field(init=False)  # [n, t]: GPU pods of tag t on node n (``pod_tag``)

    def __post_init__(self) -> None:
        self.cpu_free = self.cpu_cap.astype(np.int64).copy()
        self.mem_free = self.mem_cap.astype(np.int64).copy()
        width = max(1, int(self.gpus.max(initial=0)))
        self.gpu_free = np.where(np.arange(width)[None, :] < self.gpus[:, None], MILLI, 0).astype(np.int64)
        self.tags = np.zeros((len(self.names), width + 1), dtype=np.int64)

    @property
    def capacity_milli(self) -> int:
        return int(self.gpus.sum()) * MILLI

    def used_milli(self) -> int:
        return self.capacity_milli - int(self.gpu_free.sum())

    def model_mask(self, models: tuple[str, ...]) -> np.ndarray:
        """Nodes whose GPU model is allowed (all when ``models`` is empty)."""
        if not models:
            return np.ones(len(self.names), dtype=bool)
        allowed = [i for i, m in enumerate(self.model_names) if m in models]
        return np.isin(self.model, allowed)

    def feasible(self, cpu: int, mem: int, num_gpu: int, milli: int, model_ok: np.ndarray) -> np.ndarray:
        """Nodes that can take the pod now (a boolean mask)."""
        ok = (self.cpu_free >= cpu) & (self.mem_free >= mem)
        if num_gpu == 0:
            return ok
        ok &= model_ok
        if milli < MILLI:
            return ok & (self.gpu_free >= milli).any(axis=1)
        return ok & ((self.gpu_free == MILLI).sum(axis=1) >= num_gpu)

    def place(self, n: int, cpu: int, mem: int, devices: list[int], milli: int, tag: int) -> None:
        self.cpu_free[n] -= cpu
        self.mem_free[n] -= mem
        for g in devices:
            self.gpu_free[n, g] -= milli
        if tag >= 0:
            self.tags[n, tag] += 1
        if self.cpu_free[n] < 0 or self.mem_free[n] < 0 or (self.gpu_free[n] < 0).any():
            raise AssertionError(f"over-committed node {self.names[n]}")  # a policy bug, never a user error


def pod_tag(num_gpu: int, milli: int) -> int:
    """The pod's kind for GPU clustering: -1 CPU-only, 0 a share of one GPU, k for k whole GPUs."""
    if num_gpu == 0:
        return -1
    return 0 if milli < MILLI else num_gpu


def idle_devices(free: np.ndarray, count: int) -> list[int]:
    """The ``count`` lowest-indexed idle devices of one node's free vector (whole-GPU pods)."""
    return np.flatnonzero(free == MILLI)[:count].tolist()


def best_fit_device(free: np.ndarray, milli: int) -> np.ndarray:
    """The device with the least free milli that still holds ``milli`` (ties: lowest index), for one
    node's free vector or per row of ``[nodes, devices]``."""
    return np.argmin(np.where(free >= milli, free, np.iinfo(np.int64).max), axis=-1)


def after_placing(free: np.ndarray, num_gpu: int, milli: int) -> np.ndarray:
    """Rows of ``[nodes, devices]`` free milli with the pod added as the replay places it by default:
    a share on its best-fit device, whole GPUs on the lowest idle devices (each row must fit it)."""
    out = free.copy()
    if num_gpu == 1 and milli < MILLI:
        out[np.arange(len(out)), best_fit_device(free, milli)] -= milli
    elif num_gpu:
        order = np.argsort(free != MILLI, axis=1, kind="stable")[:, :num_gpu]  # idle devices first, lowest index
        np.put_along_axis(out, order, np.take_along_axis(free, order, axis=1) - milli, axis=1)
    return out
