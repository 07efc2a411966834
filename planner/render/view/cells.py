"""The numbers the views draw, per access switch and GPU model: idle GPUs, empty nodes and the large
requests (ASI Fig. 14 shapes) that fit within the switch; and each node's state for the node grid.

The cells add up to the cluster's own measures, so a picture and the plan's metrics never disagree:
per GPU model, the idle GPUs and empty nodes of a model's cells sum to ``metrics.summary``'s
``by_model`` values, and its large requests to ``capacity.large_job_capacity``'s ``within_asw``
(a node with no switch is a switch of its own there; here such nodes share the row ``(no switch)``,
which adds their per-node counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.capacity import gpu_slots
from planner.cluster import Cluster
from planner.metrics import CPU_ONLY, Shape, parse_shape
from planner.rules.node import topology_domain
from planner.state import ClusterState

FIG14_SHAPES = ("128g1536c", "256g3072c")
"""The large requests the views count by default: 16 and 32 eight-GPU nodes with 12 CPUs per GPU (the
shapes of ``planner report --requests`` in the documentation)."""

NO_SWITCH = "(no switch)"


@dataclass(frozen=True)
class Measure:
    """One quantity of the heatmap: its key, its label and what it means."""

    key: str
    label: str
    definition: str


def measures(shapes: list[Shape]) -> list[Measure]:
    """The heatmap's quantities: idle GPUs, empty nodes, then one per large-request shape."""
    base = [
        Measure("idle_gpus", "idle GPUs", "GPUs not allocated to a pod (whole devices and the unused part of shared ones)"),
        Measure("empty_nodes", "empty nodes", "nodes with no pod"),
    ]
    return base + [
        Measure(f"requests_{s}", f"{s.gpus:g}-GPU requests", f"requests of {s} (GPUs, CPUs) that fit within the switch (ASI Fig. 14)") for s in shapes
    ]


def default_shapes() -> list[Shape]:
    return [parse_shape(text) for text in FIG14_SHAPES]


def switch_of(node: Any) -> str:
    return node.asw if node.asw is not None else NO_SWITCH


def model_of(node: Any) -> str:
    return CPU_ONLY if node.gpus == 0 else (node.gpu_model or "unknown-model")


@dataclass
class Grid:
    """Rows (switches) x columns (GPU models) of each measure: ``values[measure][row][column]``, None
    where no node of that model hangs under that switch."""

    switches: list[str]
    models: list[str]
    values: dict[str, list[list[float | None]]]


def switch_model_cells(state: ClusterState, shapes: list[Shape], switches: list[str] | None = None, models: list[str] | None = None) -> Grid:
    """Per (switch, GPU model): idle GPUs, empty nodes and the large requests of each shape that fit
    within the switch. ``switches``/``models`` fix the rows and columns (to draw before and after alike)."""
    assert state.cluster is not None
    nodes = state.cluster.nodes
    row_names = [switch_of(n) for n in nodes]
    col_names = [model_of(n) for n in nodes]
    switches = switches if switches is not None else sorted(set(row_names))
    models = models if models is not None else sorted(set(col_names) - {CPU_ONLY}) + ([CPU_ONLY] if CPU_ONLY in col_names else [])
    row_index = {name: i for i, name in enumerate(switches)}
    col_index = {name: j for j, name in enumerate(models)}
    rows = np.array([row_index[name] for name in row_names], dtype=np.int64)
    cols = np.array([col_index[name] for name in col_names], dtype=np.int64)
    present = np.zeros((len(switches), len(models)), dtype=bool)
    present[rows, cols] = True
    idle = np.zeros(present.shape)
    np.add.at(idle, (rows, cols), state.cap_gpus - state.allocated_gpus())
    empty = np.zeros(present.shape)
    np.add.at(empty, (rows, cols), (state.pod_count() == 0).astype(np.float64))
    values = {"idle_gpus": _masked(np.round(idle, 6), present), "empty_nodes": _masked(empty, present)}
    domains = [topology_domain(n, "asw") for n in nodes]
    for shape in shapes:
        values[f"requests_{shape}"] = _masked(_within_switch(state, shape, domains, rows, cols, present.shape), present)
    return Grid(switches, models, values)


def _within_switch(state: ClusterState, shape: Shape, domains: list[str], rows: np.ndarray, cols: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """floor(slots / G) per (switch domain, model), added into its (row, column): capacity.py's rule."""
    slots = gpu_slots(state, shape)
    per_domain: dict[tuple[str, int], int] = {}
    where: dict[tuple[str, int], tuple[int, int]] = {}
    for n, domain in enumerate(domains):
        if state.cap_gpus[n] <= 0:
            continue
        key = (domain, int(cols[n]))
        per_domain[key] = per_domain.get(key, 0) + int(slots[n])
        where[key] = (int(rows[n]), int(cols[n]))
    out = np.zeros(size)
    for key, total in per_domain.items():
        out[where[key]] += total // int(shape.gpus)
    return out


def _masked(values: np.ndarray, present: np.ndarray) -> list[list[float | None]]:
    return [
        [(int(v) if float(v).is_integer() else float(v)) if p else None for v, p in zip(row, mask, strict=True)]
        for row, mask in zip(values, present, strict=True)
    ]


def difference(after: list[list[float | None]], before: list[list[float | None]]) -> list[list[float | None]]:
    return [[None if a is None or b is None else round(a - b, 6) for a, b in zip(ra, rb, strict=True)] for ra, rb in zip(after, before, strict=True)]


NODE_STATES = ("busy", "emptied by the plan", "empty before and after", "filled by the plan", "cordoned")
"""The node grid's states of a node, before and after a plan (codes 0..4)."""


def node_states(before: ClusterState, after: ClusterState) -> list[int]:
    """Per node its code in ``NODE_STATES``."""
    busy_before = (before.pod_count() > 0).tolist()
    busy_after = (after.pod_count() > 0).tolist()
    codes = []
    for b, a, schedulable in zip(busy_before, busy_after, before.schedulable.tolist(), strict=True):
        if not schedulable and not b and not a:
            codes.append(4)
        else:
            codes.append(0 if b and a else 1 if b else 3 if a else 2)
    return codes


def switch_grid(cluster: Cluster, codes: list[int]) -> dict[str, Any]:
    """The node grid: one row per switch, one cell per node under it (in snapshot order)."""
    by_switch: dict[str, list[int]] = {}
    for n, node in enumerate(cluster.nodes):
        by_switch.setdefault(switch_of(node), []).append(n)
    switches = sorted(by_switch)
    width = max((len(v) for v in by_switch.values()), default=0)
    z: list[list[int | None]] = []
    names: list[list[str | None]] = []
    for switch in switches:
        members = by_switch[switch]
        z.append([codes[n] for n in members] + [None] * (width - len(members)))
        names.append([cluster.nodes[n].name for n in members] + [None] * (width - len(members)))
    return {"switches": switches, "z": z, "names": names}
