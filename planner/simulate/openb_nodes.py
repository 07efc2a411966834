"""The openb CSV files (Alibaba's cluster-trace-gpu-v2023 node and pod lists) read into the per-GPU
model of ``heuristics/gpu_nodes.py``, and a replay's end written back as a planner snapshot."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from planner.cluster import Cluster, SnapshotError
from planner.heuristics.gpu_nodes import MILLI, GpuNodes, Trace
from planner.instances.openb import _number, _rows

NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")


# ----------------------------------------------------------------------------------------------
# Reading the openb CSV files (columns as in Alibaba's cluster-trace-gpu-v2023)
# ----------------------------------------------------------------------------------------------


def read_gpu_nodes(path: Path) -> GpuNodes:
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
    return Trace(names, np.array(cpu, dtype=np.int64), np.array(mem, dtype=np.int64), np.array(num, dtype=np.int64), np.array(milli, dtype=np.int64), models)


def _integer(path: Path, row: int, column: str, value: float) -> int:
    if value != math.floor(value):
        raise SnapshotError([f"{path}: row {row + 2}, column {column}: must be a whole number, got {value}"])
    return int(value)


def to_cluster(nodes: GpuNodes, trace: Trace, placed: list[tuple[int, int]]) -> Cluster:
    """The planner snapshot of a replay's end: ``placed`` lists (pod index in ``trace``, node)."""
    return Cluster.model_validate(
        {
            "nodes": [
                {
                    "name": nodes.names[n],
                    "gpus": int(nodes.gpus[n]),
                    "cpus": nodes.cpu_cap[n] / 1000,
                    "memory_gib": nodes.mem_cap[n] / 1024,
                    "gpu_model": nodes.model_names[nodes.model[n]],
                }
                for n in range(len(nodes.names))
            ],
            "pods": [
                {
                    "name": f"{trace.names[p]}#{k}",
                    "node": nodes.names[n],
                    "cpus": trace.cpu[p] / 1000,
                    "memory_gib": trace.mem[p] / 1024,
                    "gpus": (trace.gpu_milli[p] / MILLI if trace.num_gpu[p] == 1 and trace.gpu_milli[p] < MILLI else float(trace.num_gpu[p])),
                    **({"gpu_models": list(trace.models[p])} if trace.models[p] else {}),
                }
                for k, (p, n) in enumerate(placed)
            ],
        }
    )
