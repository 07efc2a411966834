"""Fragmentation and efficiency measures of a cluster (names follow their sources).

* ``summary``: nodes, empty nodes, nodes with slack (holding pods but not full), GFR (share of nodes
  neither empty nor full, Kant: of all nodes, CPU-only ones too), GAR (allocated GPUs / GPUs),
  allocated and idle GPUs, pending pods.
  A GPU node is full when all its GPUs are allocated; a CPU-only node when all its CPUs are.
* ``stranded``: for a request shape such as 8 GPUs + 64 CPUs, how many requests fit and why the other
  idle GPUs cannot host one (ASI paper, Fig. 13 and 14); the cluster's counts are the sums of the
  GPU models' (a request takes the GPUs of one model).
* ``fgd``: expected fragmentation of each node and of the cluster for a target workload (FGD, ATC'23).
* ``per_asw``: free GPUs and free whole nodes under each access switch.

Every measure is given for the whole cluster and per GPU model. All work on ``ClusterState`` arrays.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner import rules
from planner.cluster import Cluster
from planner.state import ClusterState

CPU_ONLY = "cpu-only"


def _model_key(model: str, gpus: int) -> str:
    return CPU_ONLY if gpus == 0 else (model or "unknown-model")


def exact_total(values: np.ndarray | list[float]) -> float:
    """The correctly rounded sum of ``values``: the same whatever their order (``math.fsum``)."""
    return math.fsum(values.tolist() if isinstance(values, np.ndarray) else values)


def allocated_total(state: ClusterState, idx: np.ndarray) -> float:
    """GPUs allocated on nodes ``idx``: whole GPUs plus the exact sum of every share on them.

    Summed over the shares themselves, not over per-node subtotals, so it is the same number however
    the pods are spread over the nodes and in whatever order they got there: a plan's claimed
    metrics and the validator's replay agree bit for bit, and moves never change the cluster's total.
    """
    shares = [share for n in idx.tolist() for share in state.node_shares.get(n, ())]
    return int(state.whole_used[idx].sum()) + math.fsum(shares)


def node_groups(state: ClusterState) -> dict[str, np.ndarray]:
    """Node indexes per GPU model (CPU-only nodes under ``cpu-only``), in first-seen order."""
    keys = [_model_key(n.gpu_model, n.gpus) for n in state.require_cluster().nodes]
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return {key: np.array(idx, dtype=np.int64) for key, idx in groups.items()}


# ----------------------------------------------------------------------------------------------
# Summary
# ----------------------------------------------------------------------------------------------


def _summary_of(state: ClusterState, idx: np.ndarray, allocated: np.ndarray, count: np.ndarray) -> dict[str, Any]:
    gpus = state.cap_gpus[idx]
    alloc = allocated[idx]
    pods = count[idx]
    gpu_node = gpus > 0
    empty = pods == 0
    full = np.where(gpu_node, alloc >= gpus - rules.EPS, state.used_cpus[idx] >= state.cap_cpus[idx] - rules.EPS)
    slack = ~empty & ~full
    total_gpus = int(gpus.sum())
    allocated_gpus = allocated_total(state, idx)
    n = len(idx)
    return {
        "nodes": n,
        "gpu_nodes": int(gpu_node.sum()),
        "gpus": total_gpus,
        "allocated_gpus": round(allocated_gpus, 6),
        "idle_gpus": round(total_gpus - allocated_gpus, 6),
        "empty_nodes": int(empty.sum()),
        "full_nodes": int((full & ~empty).sum()),
        "nodes_with_slack": int(slack.sum()),
        "gfr": round(float(slack.sum()) / n, 6) if n else 0.0,
        "gar": round(allocated_gpus / total_gpus, 6) if total_gpus else 0.0,
        "pods": int(pods.sum()),
    }


def summary(cluster: Cluster | ClusterState) -> dict[str, Any]:
    """The headline measures, for the cluster and ``by_model``; what plans carry as before/after."""
    state = cluster if isinstance(cluster, ClusterState) else ClusterState(cluster)
    allocated = state.allocated_gpus()
    count = state.pod_count()
    result = _summary_of(state, np.arange(len(state.node_names)), allocated, count)
    pending = state.pod_node < 0
    result["pending_pods"] = int(pending.sum())
    result["pending_gpus"] = round(exact_total(state.pod_gpus[pending]), 6)
    result["by_model"] = {key: _summary_of(state, idx, allocated, count) for key, idx in node_groups(state).items()}
    return result


# ----------------------------------------------------------------------------------------------
# Device layout: free capacity of each GPU device
# ----------------------------------------------------------------------------------------------


def device_free(state: ClusterState) -> np.ndarray:
    """(nodes x max GPUs) free capacity per device; padding columns beyond a node's GPUs are 0.

    Whole-GPU pods occupy whole devices; shares sit on devices as packed by ``rules.pack_shares``.
    """
    width = int(state.cap_gpus.max()) if len(state.cap_gpus) else 0
    column = np.arange(width)[None, :]
    cap = state.cap_gpus[:, None]
    used_whole = state.whole_used[:, None]
    free = ((column >= used_whole) & (column < cap)).astype(np.float64)
    for n, shares in state.node_shares.items():
        start = int(state.whole_used[n])
        for k, fill in enumerate(rules.pack_shares(shares)):
            free[n, start + k] = max(0.0, 1.0 - fill)
    return free


# ----------------------------------------------------------------------------------------------
# Stranded GPUs for a request shape (ASI paper, Fig. 13-14)
# ----------------------------------------------------------------------------------------------

_SHAPE = re.compile(r"^(?P<g>\d+)g(?:(?P<c>\d+(?:\.\d+)?)c)?(?:(?P<m>\d+(?:\.\d+)?)m)?$")


@dataclass(frozen=True)
class Shape:
    """A request: ``gpus`` whole GPUs with ``cpus`` CPUs and ``memory_gib`` GiB (for all its GPUs)."""

    gpus: int
    cpus: float = 0.0
    memory_gib: float = 0.0

    def __str__(self) -> str:
        text = f"{self.gpus}g{self.cpus:g}c"
        return text + (f"{self.memory_gib:g}m" if self.memory_gib else "")


MAX_SHAPE_GPUS = 1 << 20
"""A request of more GPUs than this is a typo (1,024 nodes of 1,024 GPUs)."""


def parse_shape(text: str) -> Shape:
    """'8g64c' -> 8 GPUs and 64 CPUs; an optional 'NNNm' adds GiB of memory ('8g64c512m')."""
    match = _SHAPE.match(text.strip().lower()) if len(text) <= 64 else None
    if not match or int(match["g"]) < 1:
        raise ValueError(f"shape '{text[:64]}' is not of the form <GPUs>g<CPUs>c[<GiB>m] with at least one whole GPU, e.g. 8g64c")
    shape = Shape(int(match["g"]), float(match["c"] or 0), float(match["m"] or 0))
    if shape.gpus > MAX_SHAPE_GPUS or shape.cpus > 1e9 or shape.memory_gib > 1e9:
        raise ValueError(f"shape '{text}' asks for more than {MAX_SHAPE_GPUS:,} GPUs or 10^9 CPUs or GiB: a typo?")
    return shape


CAUSES = ("fractional", "stranded_gpus", "insufficient_cpu", "insufficient_memory", "topology", "unschedulable")


def _stranded_of(state: ClusterState, idx: np.ndarray, shape: Shape, allocated: np.ndarray, multi_node: bool) -> dict[str, Any]:
    """``stranded``'s measures over the GPU nodes among ``idx`` (one GPU model's), for a request that is
    multi-node or not as decided for the whole cluster."""
    idx = idx[state.cap_gpus[idx] > 0]
    free_dev = (state.cap_gpus - state.whole_used - state.share_devices)[idx]
    fractional = (state.share_devices[idx] - (allocated[idx] - state.whole_used[idx])).clip(min=0)
    free_cpu = state.cap_cpus[idx] - state.used_cpus[idx]
    free_mem = state.cap_mem[idx] - state.used_mem[idx]
    ok = state.schedulable[idx]
    causes = dict.fromkeys(CAUSES, 0.0)
    causes["fractional"] = float(fractional.sum())
    causes["unschedulable"] = float(free_dev[~ok].sum())
    free_dev = np.where(ok, free_dev, 0)

    def limit(free: np.ndarray, need: float) -> np.ndarray:
        return np.floor((free + rules.EPS) / need).astype(np.int64) if need > 0 else np.full(len(free), 1 << 40)

    if not multi_node:
        by_gpu = free_dev // shape.gpus
        by_cpu = limit(free_cpu, shape.cpus)
        by_mem = limit(free_mem, shape.memory_gib)
        fits = np.minimum(by_gpu, np.minimum(by_cpu, by_mem))
        left = free_dev - fits * shape.gpus
        blocked = left >= shape.gpus  # GPUs for another request, but not the CPUs or memory
        cpu_bound = blocked & (by_cpu <= by_mem)
        causes["insufficient_cpu"] = float(left[cpu_bound].sum())
        causes["insufficient_memory"] = float(left[blocked & ~cpu_bound].sum())
        causes["stranded_gpus"] = float(left[~blocked].sum())
        requests = int(fits.sum())
    else:
        # Multi-node request: nodes contribute GPU slots (with their share of CPUs and memory) to a
        # pool per access switch; a request must come from one switch's pool.
        slots = np.minimum(free_dev, limit(free_cpu, shape.cpus / shape.gpus))
        slots = np.minimum(slots, limit(free_mem, shape.memory_gib / shape.gpus))
        short = free_dev - slots
        by_cpu = limit(free_cpu, shape.cpus / shape.gpus)
        cpu_bound = by_cpu <= limit(free_mem, shape.memory_gib / shape.gpus)
        causes["insufficient_cpu"] = float(short[cpu_bound].sum())
        causes["insufficient_memory"] = float(short[~cpu_bound].sum())
        pools: Counter[int] = Counter()
        for n, s in zip(state.asw_domain[idx].tolist(), slots.tolist()):
            pools[n] += s
        requests = sum(pool // shape.gpus for pool in pools.values())
        anywhere = int(slots.sum()) // shape.gpus
        causes["topology"] = float((anywhere - requests) * shape.gpus)
        causes["stranded_gpus"] = float(slots.sum() - anywhere * shape.gpus)
    idle = float(state.cap_gpus[idx].sum()) - allocated_total(state, idx)
    return {"requests_fit": int(requests), "idle_gpus": idle, "stranded_by_cause": causes}


def _stranded_fields(shape: Shape, multi_node: bool, largest: int, part: dict[str, Any]) -> dict[str, Any]:
    return {
        "shape": str(shape),
        "multi_node": multi_node,
        "largest_node_gpus": largest,
        "requests_fit": part["requests_fit"],
        "gpus_usable": part["requests_fit"] * shape.gpus,
        "idle_gpus": round(part["idle_gpus"], 6),
        "stranded_by_cause": {k: round(v, 6) for k, v in part["stranded_by_cause"].items()},
    }


def stranded(cluster: Cluster | ClusterState, shape: Shape) -> dict[str, Any]:
    """How many ``shape`` requests fit, and why the remaining idle GPUs cannot host one.

    Idle GPUs split exactly into: used by the requests that fit, fractional leftovers (idle parts of
    shared devices), stranded GPUs (too few whole GPUs left on the node, or across the cluster),
    insufficient CPU or memory (enough GPUs, not enough CPUs/memory), topology (enough slots
    cluster-wide but not under one access switch; multi-node shapes only) and unschedulable nodes.

    A shape with more GPUs than the cluster's largest node is a multi-node request, decided once for
    every GPU model (a model of smaller nodes does not make it multi-node there). A request takes the
    GPUs of one model, so the cluster's counts are the sums of ``by_model``'s (CPU-only nodes hold no GPUs).
    """
    state = cluster if isinstance(cluster, ClusterState) else ClusterState(cluster)
    allocated = state.allocated_gpus()
    largest = int(state.cap_gpus.max()) if len(state.cap_gpus) else 0
    multi_node = largest > 0 and shape.gpus > largest
    parts = {key: _stranded_of(state, idx, shape, allocated, multi_node) for key, idx in node_groups(state).items() if key != CPU_ONLY}
    gpu_nodes = np.flatnonzero(state.cap_gpus > 0)
    total = {
        "requests_fit": sum(p["requests_fit"] for p in parts.values()),
        "idle_gpus": float(state.cap_gpus[gpu_nodes].sum()) - allocated_total(state, gpu_nodes),
        "stranded_by_cause": {cause: exact_total([p["stranded_by_cause"][cause] for p in parts.values()]) for cause in CAUSES},
    }
    result = _stranded_fields(shape, multi_node, largest, total)
    result["by_model"] = {key: _stranded_fields(shape, multi_node, largest, part) for key, part in parts.items()}
    return result


# ----------------------------------------------------------------------------------------------
# FGD expected fragmentation (Weng et al., ATC'23)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskClass:
    """One kind of task in the target workload, with its popularity."""

    gpus: float
    cpus: float
    memory_gib: float
    gpu_models: tuple[str, ...]
    weight: float


def workload_of(cluster: Cluster) -> list[TaskClass]:
    """The pod-size distribution of the snapshot itself (every pod, running or pending)."""
    counts = Counter((p.gpus, p.cpus, p.memory_gib, tuple(sorted(p.gpu_models))) for p in cluster.pods)
    total = sum(counts.values())
    return [TaskClass(g, c, m, models, k / total) for (g, c, m, models), k in sorted(counts.items())]


def node_fragmentation(state: ClusterState, workload: list[TaskClass], free: np.ndarray | None = None) -> np.ndarray:
    """Expected fragmentation F_n(M) = sum_m p_m F_n(m) of every node, in GPUs.

    F_n(m) is all the node's idle GPU capacity when task m cannot run there (GPUs, CPUs, memory,
    GPU model or a cordoned node), and otherwise the idle capacity of the devices whose free part is
    below what m needs of one device (FGD, Sec. 3).
    """
    free = device_free(state) if free is None else free
    idle_total = free.sum(axis=1)
    whole_free = (free >= 1 - rules.EPS).sum(axis=1)
    free_cpu = state.cap_cpus - state.used_cpus
    free_mem = state.cap_mem - state.used_mem
    model_names: dict[str, int] = {}
    node_model = np.array([model_names.setdefault(n.gpu_model, len(model_names)) for n in state.require_cluster().nodes])
    result = np.zeros(len(state.node_names))
    for task in workload:
        runs = state.schedulable & (free_cpu + rules.EPS >= task.cpus) & (free_mem + rules.EPS >= task.memory_gib)
        if task.gpu_models:
            runs &= np.isin(node_model, [model_names[m] for m in task.gpu_models if m in model_names])
        if 0 < task.gpus < 1:
            runs &= (free >= task.gpus - rules.EPS).any(axis=1)
            per_device_need = task.gpus
        else:
            runs &= whole_free >= task.gpus
            per_device_need = 1.0 if task.gpus >= 1 else 0.0
        below = (free < per_device_need - rules.EPS) & (free > 0)
        frag = np.where(runs, (free * below).sum(axis=1), idle_total)
        result += task.weight * frag
    result[state.cap_gpus == 0] = 0.0
    return result


def fgd(cluster: Cluster | ClusterState, workload: list[TaskClass] | None = None) -> dict[str, Any]:
    """Cluster expected fragmentation (sum over nodes) and its share of idle GPUs, overall and per model."""
    state = cluster if isinstance(cluster, ClusterState) else ClusterState(cluster)
    workload = workload_of(state.require_cluster()) if workload is None else workload
    frag = node_fragmentation(state, workload)
    idle = state.cap_gpus - state.allocated_gpus()

    def of(idx: np.ndarray) -> dict[str, float]:
        total_idle = float(idle[idx].sum())
        f = float(frag[idx].sum())
        return {"fragmented_gpus": round(f, 6), "fragmented_share_of_idle": round(f / total_idle, 6) if total_idle > 0 else 0.0}

    result: dict[str, Any] = of(np.arange(len(state.node_names)))
    result["workload_classes"] = len(workload)
    result["by_model"] = {key: of(idx) for key, idx in node_groups(state).items() if key != CPU_ONLY}
    return result


# ----------------------------------------------------------------------------------------------
# Per access switch
# ----------------------------------------------------------------------------------------------


def per_asw(cluster: Cluster | ClusterState) -> list[dict[str, Any]]:
    """Per access switch: nodes, GPUs, free GPUs (idle whole devices on schedulable nodes), free whole nodes."""
    state = cluster if isinstance(cluster, ClusterState) else ClusterState(cluster)
    free_dev = np.where(state.schedulable, state.cap_gpus - state.whole_used - state.share_devices, 0)
    empty = (state.pod_count() == 0) & state.schedulable & (state.cap_gpus > 0)
    rows: dict[str, dict[str, Any]] = {}
    for n, node in enumerate(state.require_cluster().nodes):
        key = node.asw if node.asw is not None else "(none)"
        row = rows.setdefault(key, {"asw": key, "gpu_model": set(), "nodes": 0, "gpus": 0, "free_gpus": 0, "free_whole_nodes": 0})
        row["nodes"] += 1
        row["gpus"] += int(state.cap_gpus[n])
        row["free_gpus"] += int(free_dev[n])
        row["free_whole_nodes"] += int(empty[n])
        if node.gpus:
            row["gpu_model"].add(node.gpu_model)
    for row in rows.values():
        row["gpu_model"] = ",".join(sorted(row["gpu_model"]))
    return sorted(rows.values(), key=lambda r: r["asw"])


def report(cluster: Cluster, shape: Shape | None = None) -> dict[str, Any]:
    """Everything ``planner report`` prints."""
    state = ClusterState(cluster)
    result: dict[str, Any] = {"time_s": cluster.time_s, "summary": summary(state), "fgd": fgd(state)}
    if shape is not None:
        result["stranded"] = stranded(state, shape)
    result["per_asw"] = per_asw(state)
    return result
