"""Large-job capacity (ASI Fig. 14): how many multi-node requests the free GPUs could take.

For a request of G GPUs needing c CPUs and m GiB per GPU (``128g1536c``: 128 GPUs, 12 CPUs each), a
node offers ``min(free whole GPUs, free CPUs / c, free GiB / m)`` GPU slots (schedulable nodes only).
Per GPU model the report counts the requests that fit

* across switches: floor(slots of the model / G), as if the network did not matter;
* within one switch: the sum over access switches of floor(slots under the switch / G), what an
  ASW-local request can really get;
* and, pooling every GPU model, across switches (heterogeneous GPUs allowed).

The counting rule is seed-specs D's; the paper gives the figure without numbers.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
from pydantic import Field

from planner.cluster import Cluster, SnapshotError
from planner.metrics import Shape, parse_shape
from planner.state import ClusterState
from planner.validate import validate_plan
from planner.validate.defrag import apply_plan


def gpu_slots(state: ClusterState, shape: Shape, nodes: np.ndarray | None = None) -> np.ndarray:
    """GPU slots per node for a request of ``shape`` (per-GPU CPUs and memory); of ``nodes`` only when given."""
    at = slice(None) if nodes is None else nodes
    slots = (state.cap_gpus[at] - state.whole_used[at] - state.share_devices[at]).astype(np.float64)
    per_gpu_cpu = shape.cpus / shape.gpus
    per_gpu_mem = shape.memory_gib / shape.gpus
    if per_gpu_cpu > 0:
        slots = np.minimum(slots, np.floor((state.cap_cpus[at] - state.used_cpus[at] + 1e-9) / per_gpu_cpu))
    if per_gpu_mem > 0:
        slots = np.minimum(slots, np.floor((state.cap_mem[at] - state.used_mem[at] + 1e-9) / per_gpu_mem))
    slots[~state.schedulable[at]] = 0
    return np.maximum(slots, 0).astype(np.int64)


def large_job_capacity(cluster: Cluster | ClusterState, shapes: list[Shape]) -> list[dict[str, Any]]:
    """Per request shape: per GPU model the requests that fit across and within switches, and pooled."""
    state = cluster if isinstance(cluster, ClusterState) else ClusterState(cluster)
    gpu_nodes, by_model = _model_masks(state)
    out = []
    for shape in shapes:
        slots = gpu_slots(state, shape)
        per_model: dict[str, Any] = {}
        for model, mask, asws in by_model:
            within_slots = np.bincount(asws, weights=slots[mask]) if mask.any() else np.zeros(0)
            per_model[model] = {
                "usable_gpus": int(slots[mask].sum()),
                "across_asw": int(slots[mask].sum() // shape.gpus),
                "within_asw": int(np.floor(within_slots / shape.gpus).sum()),
            }
        out.append(
            {
                "shape": str(shape),
                "per_model": per_model,
                "heterogeneous_across_asw": int(slots[gpu_nodes].sum() // shape.gpus),
            }
        )
    return out


_MODEL_MASKS: weakref.WeakKeyDictionary[ClusterState, tuple[Any, np.ndarray, list[tuple[str, np.ndarray, np.ndarray]]]] = weakref.WeakKeyDictionary()


def _model_masks(state: ClusterState) -> tuple[np.ndarray, list[tuple[str, np.ndarray, np.ndarray]]]:
    """The GPU nodes, and per GPU model (by name) the mask of its GPU nodes and their access switches.
    A state's nodes do not change: built once per state and node list (every preemption plan's metrics
    count the large requests twice; the per-node model names cost a third of that at 1,000 nodes)."""
    kept = _MODEL_MASKS.get(state)
    if kept is not None and kept[0] is state.cluster:
        return kept[1], kept[2]
    models = state.cluster.nodes if state.cluster is not None else []
    model_of = np.array([n.gpu_model or "(unnamed)" for n in models]) if models else np.array([], dtype=str)
    gpu_nodes = state.cap_gpus > 0
    by_model = []
    for model in sorted(set(model_of[gpu_nodes].tolist())):
        mask = gpu_nodes & (model_of == model)
        by_model.append((model, mask, state.asw_domain[mask]))
    _MODEL_MASKS[state] = (state.cluster, gpu_nodes, by_model)
    return gpu_nodes, by_model


DEFAULT_LARGE_REQUESTS = ("64g768c", "128g1536c", "256g3072c")
"""The large requests every plan's metrics count (ASI Fig. 14's 64, 128 and 256 GPUs, 12 CPUs per GPU as
on the ASI nodes: 8 GPUs and 96 CPUs); ``large_requests`` in the options changes them."""


def large_requests_field() -> Any:
    """The ``large_requests`` option of a planner's options model (checked by ``checked_shapes``)."""
    return Field(
        list(DEFAULT_LARGE_REQUESTS),
        min_length=1,
        max_length=16,
        description="Request shapes ('128g1536c': GPUs, CPUs, optional GiB) whose counts before and after the plan its metrics report.",
    )


def checked_shapes(value: list[str]) -> list[str]:
    """The shapes as given, once each reads as one (a ValueError naming the bad one otherwise)."""
    for text in value:
        parse_shape(text)
    return value


def large_requests_of(
    state: ClusterState, placements: list[Any], shapes: list[Shape], before: dict[str, Any] | None = None, evicted: tuple[str, ...] | list[str] = ()
) -> dict[str, Any]:
    """The large requests (``large_request_counts``) that fit before and after the ``evicted`` pods
    leave and ``placements`` (``{pod, node}``) start, counted on ``state`` (the snapshot's: the
    changes are made and undone on it). A placement of a pod already placed (a standby pod woken on
    its node) is left as it is."""
    before = before if before is not None else large_request_counts(state, shapes)
    gone = [(q, int(state.pod_node[q])) for q in (state.pod_index[name] for name in evicted) if state.pod_node[q] >= 0]
    for q, _ in gone:
        state.unplace(q)
    placed = [(state.pod_index[p.pod], state.node_index[p.node]) for p in placements]
    placed = [(q, n) for q, n in placed if state.pod_node[q] < 0]
    for q, n in placed:
        state.place(q, n)
    after = large_request_counts(state, shapes)
    for q, _ in placed:
        state.unplace(q)
    for q, n in gone:
        state.place(q, n)
    return {"before": before, "after": after}


def large_request_counts(state: ClusterState, shapes: list[Shape]) -> dict[str, Any]:
    """Per request shape the requests of that size the free GPUs could take: ``across_switches``
    (any models pooled, the network ignored), ``within_one_switch`` (one model, one access switch:
    what a topology-bound job can get) and per model both; ``large_job_capacity`` in brief, for a
    plan's ``metrics.before`` and ``metrics.after``."""
    out: dict[str, Any] = {}
    for item in large_job_capacity(state, shapes):
        per_model = item["per_model"]
        out[item["shape"]] = {
            "across_switches": item["heterogeneous_across_asw"],
            "within_one_switch": sum(m["within_asw"] for m in per_model.values()),
            "by_model": {model: {"across_switches": m["across_asw"], "within_one_switch": m["within_asw"]} for model, m in per_model.items()},
        }
    return out


def after_plan(cluster: Cluster, plan: Any) -> Cluster:
    """The snapshot once ``plan`` (defrag, preempt or allocate) is carried out; the plan must be
    valid for it (checked, so a report never shows the effect of an impossible plan)."""
    problems = validate_plan(cluster, plan)
    if plan.kind == "defrag":
        after = apply_plan(cluster, plan)
    else:
        gone = {v.pod for v in plan.victims} if plan.kind == "preempt" else set()
        placed = {p.pod: p for p in plan.placements}
        pods = []
        for pod in cluster.pods:
            if pod.name in gone:
                pods.append(pod.model_copy(update={"node": None, "gpu_indexes": None}))
            elif pod.name in placed:
                target = placed[pod.name]
                pods.append(pod.model_copy(update={"node": target.node, "gpu_indexes": getattr(target, "gpu_indexes", None), "standby": False}))
            else:
                pods.append(pod)
        after = cluster.model_copy(update={"pods": pods})
    if problems:
        raise SnapshotError([f"--plan: the plan is not valid for this snapshot: {problems[0]}"])
    return after
