"""Per-GPU cluster state for placement replays (the FGD and PWR papers' node model), on numpy arrays.

A node holds free CPU (milli-CPUs), free memory (MiB) and, per GPU device, its free share in milli-GPUs
(1000 = idle). A pod asks for CPU, memory and either nothing (CPU-only), a *share* of one GPU
(``num_gpu == 1`` and ``gpu_milli < 1000``) or ``num_gpu`` whole GPUs, optionally of given models.

Feasibility is the trace simulator's filter, which is ``rules.py``'s on this model: CPU and memory fit;
a GPU pod needs an allowed GPU model; a share needs one device with at least its milli free; k whole
GPUs need k idle devices. A share lands on one device chosen by the policy (so the per-device layout is
always one that ``rules.py``'s device packing accepts; ``to_cluster`` lets a test check that).

Devices a node does not have are stored as 0 free: they never fit a GPU pod and add nothing to sums.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from planner.cluster import Cluster, SnapshotError

MILLI = 1000
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


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
        return Trace([self.names[i] for i in idx], self.cpu[order], self.mem[order], self.num_gpu[order], self.gpu_milli[order],
                     [self.models[i] for i in idx])


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


# ----------------------------------------------------------------------------------------------
# Reading the openb CSV files (columns as in Alibaba's cluster-trace-gpu-v2023)
# ----------------------------------------------------------------------------------------------


def read_gpu_nodes(path: Path) -> GpuNodes:
    from planner.instances.openb import _number, _rows

    _, rows = _rows(path, NODE_COLUMNS)
    if not rows:
        raise SnapshotError([f"{path}: no nodes"])
    models = sorted({r["model"] or "" for r in rows})
    return GpuNodes(
        names=[r["sn"] for r in rows],
        model_names=models,
        model=np.array([models.index(r["model"] or "") for r in rows], dtype=np.int64),
        gpus=np.array([_integer(path, i, "gpu", _number(path, i, "gpu", r["gpu"])) for i, r in enumerate(rows)], dtype=np.int64),
        cpu_cap=np.array([_integer(path, i, "cpu_milli", _number(path, i, "cpu_milli", r["cpu_milli"])) for i, r in enumerate(rows)], dtype=np.int64),
        mem_cap=np.array([_integer(path, i, "memory_mib", _number(path, i, "memory_mib", r["memory_mib"])) for i, r in enumerate(rows)], dtype=np.int64),
    )


def read_trace(path: Path) -> Trace:
    """A pod list. ``gpu_milli`` above 1000 is clipped to 1000 (as the FGD artifact's converter does);
    a GPU pod with ``gpu_milli`` 0, or a multi-GPU pod asking for less than whole GPUs, is refused."""
    from planner.instances.openb import _number, _rows

    _, rows = _rows(path, POD_COLUMNS)
    if not rows:
        raise SnapshotError([f"{path}: no pods"])
    names, cpu, mem, num, milli, models = [], [], [], [], [], []
    for i, r in enumerate(rows):
        n_gpu = _integer(path, i, "num_gpu", _number(path, i, "num_gpu", r["num_gpu"]))
        m = min(MILLI, _integer(path, i, "gpu_milli", _number(path, i, "gpu_milli", r["gpu_milli"])))
        if n_gpu and m == 0:
            raise SnapshotError([f"{path}: row {i + 2}, column gpu_milli: a pod with num_gpu {n_gpu} must ask for more than 0 milli-GPUs"])
        if n_gpu > 1 and m < MILLI:
            raise SnapshotError([f"{path}: row {i + 2}, column gpu_milli: a pod of {n_gpu} GPUs asks for whole GPUs (1000), got {m}"])
        names.append(r["name"])
        cpu.append(_integer(path, i, "cpu_milli", _number(path, i, "cpu_milli", r["cpu_milli"])))
        mem.append(_integer(path, i, "memory_mib", _number(path, i, "memory_mib", r["memory_mib"])))
        num.append(n_gpu)
        milli.append(m if n_gpu else 0)
        spec = (r.get("gpu_spec") or "").strip()
        models.append(tuple(sorted(s for s in spec.split("|") if s)))
    return Trace(names, np.array(cpu, dtype=np.int64), np.array(mem, dtype=np.int64), np.array(num, dtype=np.int64),
                 np.array(milli, dtype=np.int64), models)


def _integer(path: Path, row: int, column: str, value: float) -> int:
    if value != math.floor(value):
        raise SnapshotError([f"{path}: row {row + 2}, column {column}: must be a whole number, got {value}"])
    return int(value)


def to_cluster(nodes: GpuNodes, trace: Trace, placed: list[tuple[int, int]]) -> Cluster:
    """The planner snapshot of a replay's end: ``placed`` lists (pod index in ``trace``, node)."""
    return Cluster.model_validate({
        "nodes": [{"name": nodes.names[n], "gpus": int(nodes.gpus[n]), "cpus": nodes.cpu_cap[n] / 1000, "memory_gib": nodes.mem_cap[n] / 1024,
                   "gpu_model": nodes.model_names[nodes.model[n]]} for n in range(len(nodes.names))],
        "pods": [{"name": f"{trace.names[p]}#{k}", "node": nodes.names[n], "cpus": trace.cpu[p] / 1000, "memory_gib": trace.mem[p] / 1024,
                  "gpus": (trace.gpu_milli[p] / MILLI if trace.num_gpu[p] == 1 and trace.gpu_milli[p] < MILLI else float(trace.num_gpu[p])),
                  **({"gpu_models": list(trace.models[p])} if trace.models[p] else {})}
                 for k, (p, n) in enumerate(placed)],
    })
