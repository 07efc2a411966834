"""The fabric of an ASI-like cluster (``asi.py``): access switches (ASWs) of 32-64 nodes, spines of 4-8
ASWs, one GPU model and node shape per ASW; the node objects; and the fill blocks of whole spines."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.cluster import Node

GPUS_PER_NODE = 8
MEMORY_GIB_PER_CPU = 8
ASW_NODES = (32, 64)
SPINE_ASWS = (4, 8)

GPU_MODELS: dict[str, tuple[float, tuple[int, ...]]] = {
    # model: (share of ASWs, CPUs per node options)
    "H800": (0.30, (192,)),
    "A100-80G": (0.30, (128, 160)),
    "H20": (0.25, (176, 192)),
    "L20": (0.15, (128, 144)),
}
BLOCK_NODES = 2048
"""Nodes per fill block (whole spines); a cluster of up to 1.5 blocks is filled as one."""


@dataclass
class Fabric:
    """Per node: ASW, spine, GPU model index, CPUs; and the model names."""

    asw: np.ndarray
    spine: np.ndarray
    model: np.ndarray
    cpus: np.ndarray
    models: list[str]

    def block(self, lo: int, hi: int) -> Fabric:
        return Fabric(self.asw[lo:hi], self.spine[lo:hi], self.model[lo:hi], self.cpus[lo:hi], self.models)


def asw_sizes(nodes: int, rng: np.random.Generator) -> np.ndarray:
    """Random ASW sizes in [32, 64] summing to ``nodes`` (one ASW holds them all below 32 nodes)."""
    low, high = ASW_NODES
    if nodes <= high:
        return np.array([nodes])
    count = min(max(round(nodes / ((low + high) / 2)), -(-nodes // high)), nodes // low)
    sizes = np.full(count, low)
    extra = nodes - low * count
    weights = rng.random(count)
    sizes += np.minimum(np.floor(extra * weights / weights.sum()).astype(np.int64), high - low)
    while (left := nodes - int(sizes.sum())) > 0:
        room = np.flatnonzero(sizes < high)
        sizes[rng.choice(room, size=min(left, len(room)), replace=False)] += 1
    return sizes


def build_fabric(nodes: int, rng: np.random.Generator) -> Fabric:
    """ASWs of 32-64 nodes, spines of 4-8 ASWs, one GPU model and node shape per ASW."""
    sizes = asw_sizes(nodes, rng)
    n_asw = len(sizes)
    spine_sizes = rng.integers(SPINE_ASWS[0], SPINE_ASWS[1] + 1, size=n_asw)
    spine_of_asw = np.repeat(np.arange(n_asw), spine_sizes)[:n_asw]
    names = list(GPU_MODELS)
    share = np.array([GPU_MODELS[m][0] for m in names])
    model_of_asw = rng.choice(len(names), size=n_asw, p=share / share.sum())
    cpus_of_asw = np.array([rng.choice(GPU_MODELS[names[m]][1]) for m in model_of_asw], dtype=np.int64)
    asw = np.repeat(np.arange(n_asw), sizes)
    return Fabric(asw, spine_of_asw[asw], model_of_asw[asw], cpus_of_asw[asw], names)


def fill_blocks(fabric: Fabric) -> list[tuple[int, int]]:
    """(first, end) node ranges of the fill blocks: whole spines, about ``BLOCK_NODES`` nodes each."""
    n = len(fabric.asw)
    if n <= 1.5 * BLOCK_NODES:
        return [(0, n)]
    spine_starts = np.flatnonzero(np.diff(fabric.spine, prepend=-1)).tolist()
    bounds = [0]
    for first in spine_starts[1:]:
        if first - bounds[-1] >= BLOCK_NODES:
            bounds.append(first)
    if n - bounds[-1] < BLOCK_NODES / 2 and len(bounds) > 1:
        bounds.pop()
    return list(zip(bounds, [*bounds[1:], n]))


def node_objects(fabric: Fabric) -> list[Node]:
    width = len(str(len(fabric.asw) - 1))
    return [
        Node(
            name=f"node-{i:0{width}d}",
            gpu_model=fabric.models[m],
            gpus=GPUS_PER_NODE,
            cpus=float(c),
            memory_gib=float(c * MEMORY_GIB_PER_CPU),
            asw=f"asw-{a:04d}",
            spine=f"spine-{s:03d}",
        )
        for i, (a, s, m, c) in enumerate(zip(fabric.asw.tolist(), fabric.spine.tolist(), fabric.model.tolist(), fabric.cpus.tolist()))
    ]
