"""``metrics.stranded`` (``planner report --shape``) against a count written here from the pods: per GPU
model and for the cluster, the requests of a shape that fit. A shape is multi-node when it has more GPUs
than the cluster's largest node, for every model alike; a request takes the GPUs of one model (from one
access switch when multi-node), so the cluster's count is the sum of the models'. Before the fix a model
of smaller nodes counted a multi-node request the cluster count did not (``report --shape`` printed 1
for the cluster beside 1 + 1 for its two models)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import metrics
from planner.metrics import Shape
from planner.snapshot import parse_cluster


@st.composite
def whole_gpu_clusters(draw: Any) -> dict[str, Any]:
    """Nodes of two GPU models (and CPU-only ones) of 0-16 GPUs under two switches or none, some
    cordoned; whole-GPU pods placed where they fit."""
    nodes = [
        {
            "name": f"n{i}",
            "gpus": draw(st.sampled_from([0, 4, 8, 8, 16])),
            "gpu_model": draw(st.sampled_from(["A", "B"])),
            "cpus": draw(st.sampled_from([16.0, 64.0, 128.0])),
            "memory_gib": draw(st.sampled_from([64.0, 512.0])),
            "asw": draw(st.sampled_from(["s0", "s1", None])),
            "schedulable": draw(st.sampled_from([True, True, True, False])),
        }
        for i in range(draw(st.integers(1, 8)))
    ]
    used = defaultdict(lambda: [0, 0.0, 0.0])
    pods = []
    for k in range(draw(st.integers(0, 12))):
        at = draw(st.integers(0, len(nodes) - 1))
        gpus, cpus, memory = draw(st.integers(0, 8)), draw(st.sampled_from([1.0, 8.0, 24.0])), draw(st.sampled_from([4.0, 32.0, 128.0]))
        node, load = nodes[at], used[at]
        if load[0] + gpus <= node["gpus"] and load[1] + cpus <= node["cpus"] and load[2] + memory <= node["memory_gib"]:
            load[0], load[1], load[2] = load[0] + gpus, load[1] + cpus, load[2] + memory
            pods.append({"name": f"p{k}", "node": node["name"], "gpus": gpus, "cpus": cpus, "memory_gib": memory})
    return {"nodes": nodes, "pods": pods}


def requests_that_fit(snapshot: dict[str, Any], shape: Shape) -> dict[str, int]:
    """Per GPU model, the requests of ``shape`` that fit (see the module docstring), from the pods."""
    free: dict[str, list[float]] = {n["name"]: [n["gpus"], n["cpus"], n["memory_gib"]] for n in snapshot["nodes"]}
    for pod in snapshot["pods"]:
        for k, field in enumerate(("gpus", "cpus", "memory_gib")):
            free[pod["node"]][k] -= pod[field]
    largest = max(n["gpus"] for n in snapshot["nodes"])
    multi_node = shape.gpus > largest

    def most(amount: float, need: float) -> float:
        return math.floor(amount / need) if need > 0 else math.inf

    per_model: dict[str, int] = defaultdict(int)
    pools: dict[tuple[str, str], float] = defaultdict(float)
    for node in snapshot["nodes"]:
        if node["gpus"] == 0:
            continue
        model = node["gpu_model"]
        per_model[model] += 0
        if not node["schedulable"]:
            continue
        gpus, cpus, memory = free[node["name"]]
        if multi_node:  # GPU slots, each with its share of the request's CPUs and memory, pooled per switch
            switch = node["asw"] or f"node:{node['name']}"
            pools[(switch, model)] += min(gpus, most(cpus, shape.cpus / shape.gpus), most(memory, shape.memory_gib / shape.gpus))
        else:
            per_model[model] += int(min(gpus // shape.gpus, most(cpus, shape.cpus), most(memory, shape.memory_gib)))
    for (_, model), slots in pools.items():
        per_model[model] += int(slots // shape.gpus)
    return dict(per_model)


SHAPES = st.sampled_from([Shape(4, 8), Shape(8, 64), Shape(8, 0, 256), Shape(16, 32), Shape(16, 64, 600), Shape(24, 48), Shape(32, 0)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(whole_gpu_clusters(), SHAPES)
def test_requests_that_fit_per_model_and_for_the_cluster_match_the_count_from_the_pods(snapshot: dict[str, Any], shape: Shape) -> None:
    result = metrics.stranded(parse_cluster(json.dumps(snapshot)), shape)
    want = requests_that_fit(snapshot, shape)
    assert {model: part["requests_fit"] for model, part in result["by_model"].items()} == want
    assert result["requests_fit"] == sum(want.values())
    largest = max(n["gpus"] for n in snapshot["nodes"])
    assert result["multi_node"] == (0 < largest < shape.gpus) and result["largest_node_gpus"] == largest
    for field in ("gpus_usable", "idle_gpus"):
        assert result[field] == sum(part[field] for part in result["by_model"].values())
    for cause, value in result["stranded_by_cause"].items():
        assert value == sum(part["stranded_by_cause"][cause] for part in result["by_model"].values())


def test_a_model_of_smaller_nodes_does_not_make_a_request_multi_node() -> None:
    """The report's case: two empty 8-GPU nodes of one model under one switch beside an empty 16-GPU node:
    a 16-GPU request is one pod (the largest node holds it), so it fits once, on the 16-GPU node."""
    snapshot = {
        "nodes": [
            {"name": "a0", "gpus": 8, "cpus": 128, "memory_gib": 1024, "gpu_model": "A100", "asw": "s1"},
            {"name": "a1", "gpus": 8, "cpus": 128, "memory_gib": 1024, "gpu_model": "A100", "asw": "s1"},
            {"name": "b0", "gpus": 16, "cpus": 256, "memory_gib": 2048, "gpu_model": "H200", "asw": "s2"},
        ]
    }
    result = metrics.stranded(parse_cluster(json.dumps(snapshot)), Shape(16, 64))
    assert not result["multi_node"] and result["largest_node_gpus"] == 16
    assert (result["requests_fit"], result["by_model"]["A100"]["requests_fit"], result["by_model"]["H200"]["requests_fit"]) == (1, 0, 1)
    assert result["by_model"]["A100"]["stranded_by_cause"]["stranded_gpus"] == 16
