"""The room oracle of the exact room model's tests (``tests/oracle/test_room_exact.py``,
``tests/oracle/test_room_levels.py``): tiny clusters as snapshot dicts, their Fig. 14 within-switch counts
and a brute force over every move set, written from the dicts (independent of the planner)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from planner.cluster import Cluster


def snapshot(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Cluster:
    return Cluster.model_validate({"nodes": nodes, "pods": pods})


def counts_of(nodes: list[dict[str, Any]], where: dict[str, str], pods: list[dict[str, Any]], shapes: list[tuple[int, float]]) -> tuple[int, ...] | None:
    """The Fig. 14 within-switch counts of ``shapes`` ((GPUs, CPUs) of the whole request) with every pod
    on ``where[pod]``; None if some node is over its GPUs or CPUs."""
    used = {node["name"]: [0, 0.0] for node in nodes}
    shares = {node["name"]: 0.0 for node in nodes}
    for pod in pods:
        if pod["gpus"] < 1:  # halves of a GPU: k of them take ceil(k / 2) devices
            shares[where[pod["name"]]] += pod["gpus"]
        else:
            used[where[pod["name"]]][0] += pod["gpus"]
        used[where[pod["name"]]][1] += pod["cpus"]
    for name, total in shares.items():
        used[name][0] += math.ceil(total)
    if any(used[node["name"]][0] > node["gpus"] or used[node["name"]][1] > node["cpus"] for node in nodes):
        return None
    out = []
    for gpus, cpus in shapes:
        per_group: dict[tuple[str | None, str], int] = {}  # per GPU model and switch
        for node in nodes:
            free_gpus, free_cpus = node["gpus"] - used[node["name"]][0], node["cpus"] - used[node["name"]][1]
            slots = free_gpus if cpus == 0 else min(free_gpus, int(Fraction(free_cpus) * gpus // Fraction(cpus)))
            key = (node.get("gpu_model"), node["asw"])
            per_group[key] = per_group.get(key, 0) + slots
        out.append(sum(slots // gpus for slots in per_group.values()))
    return tuple(out)


def largest_group(nodes: list[dict[str, Any]]) -> int:
    """The most GPUs of one GPU model under one switch (a shape above it is refused)."""
    per_group: dict[tuple[str | None, str], int] = {}
    for node in nodes:
        key = (node.get("gpu_model"), node["asw"])
        per_group[key] = per_group.get(key, 0) + node["gpus"]
    return max(per_group.values())


def may_end_on(pod: dict[str, Any], node: dict[str, Any], nodes: list[dict[str, Any]], allow_product_change: bool) -> bool:
    """The default pool policy (``planner/pools.py``, restated): a placed GPU pod keeps the GPU model it runs on
    unless ``allow_product_change``; these pods name no GPU model of their own and every node has GPUs."""
    if pod["gpus"] == 0 or allow_product_change:
        return True
    home = next(n for n in nodes if n["name"] == pod["node"])
    return node.get("gpu_model") == home.get("gpu_model")


def end_states(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], allow_product_change: bool = False) -> Iterator[dict[str, str]]:
    """Every placement of the movable pods on nodes they may end on (``may_end_on``), capacity unchecked: pod -> node."""
    movable = [pod for pod in pods if not pod.get("locked")]
    home = {pod["name"]: pod["node"] for pod in pods}
    choices = [[node["name"] for node in nodes if may_end_on(pod, node, nodes, allow_product_change)] for pod in movable]
    for targets in itertools.product(*choices):
        yield {**home, **{pod["name"]: target for pod, target in zip(movable, targets)}}


def brute(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], shapes: list[tuple[int, float]], max_moves: int | None, allow_product_change: bool = False
) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    """(counts now, the lexicographically best counts of any end state moving at most ``max_moves`` pods,
    the fewest moves reaching them, the fewest GPUs moved with those moves)."""
    home = {pod["name"]: pod["node"] for pod in pods}
    now = counts_of(nodes, home, pods, shapes)
    assert now is not None
    best: tuple[tuple[int, ...], int, int] | None = None
    for where in end_states(nodes, pods, allow_product_change):
        moved = [pod for pod in pods if where[pod["name"]] != pod["node"]]
        if max_moves is not None and len(moved) > max_moves:
            continue
        counts = counts_of(nodes, where, pods, shapes)
        if counts is None:
            continue
        key = (counts, -len(moved), -sum(pod["gpus"] for pod in moved))
        if best is None or key > (best[0], -best[1], -best[2]):
            best = (counts, len(moved), sum(pod["gpus"] for pod in moved))
    assert best is not None  # the snapshot itself is an end state
    return now, best[0], best[1], best[2]


@st.composite
def tiny(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[int, float]], int | None]:
    nodes = []
    for s in range(draw(st.integers(2, 3))):
        for k in range(draw(st.integers(1, 2))):
            nodes.append({"name": f"n{s}{k}", "gpus": draw(st.sampled_from([2, 4])), "cpus": draw(st.sampled_from([4, 8])), "memory_gib": 64, "asw": f"asw{s}"})
    nodes = nodes[:5]
    free = {node["name"]: [node["gpus"], node["cpus"]] for node in nodes}
    pods = []
    for i in range(draw(st.integers(1, 4))):
        node = draw(st.sampled_from([node["name"] for node in nodes]))
        gpus, cpus = draw(st.sampled_from([0, 0.5, 1, 2])), draw(st.integers(1, 3))
        if free[node][0] >= math.ceil(gpus) and free[node][1] >= cpus:
            free[node][0] -= math.ceil(gpus)  # a half takes a device of its own here: the snapshot fits either way
            free[node][1] -= cpus
            pods.append({"name": f"p{i}", "gpus": gpus, "cpus": cpus, "node": node, "locked": draw(st.booleans()) and i % 3 == 0})
    shapes = [(draw(st.sampled_from([2, 4, 6])), float(draw(st.sampled_from([0, 1, 2]))))]
    if draw(st.booleans()):
        shapes.append((draw(st.integers(1, shapes[0][0] - 1) if shapes[0][0] > 1 else st.just(1)), float(draw(st.sampled_from([0, 1])))))
    return nodes, pods, shapes, draw(st.none() | st.integers(0, 3))


@st.composite
def tiny_multiples(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[int, float]], int | None]:
    """``tiny`` with two shapes whose slot rows are the same (the same CPUs per GPU) and whose G are
    multiples, as the default 256g3072c, 128g1536c, 64g768c: the model's joint levels apply."""
    nodes, pods, _, max_moves = draw(tiny())
    unit, times, per_gpu = draw(st.sampled_from([1, 2])), draw(st.sampled_from([2, 3])), draw(st.sampled_from([0, 1]))
    return nodes, pods, [(unit * times, float(per_gpu * unit * times)), (unit, float(per_gpu * unit))], max_moves


@st.composite
def tiny_products(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[int, float]], int | None]:
    """``tiny`` on two GPU models (each node's drawn), mostly without a move budget: a GPU pod keeps its
    model by default, so the exact model falls apart into one piece per model (``models/room_pieces.py``)
    unless a CPU-only pod that may move joins them."""
    nodes, pods, shapes, _ = draw(tiny())
    for node in nodes:
        node["gpu_model"] = draw(st.sampled_from(["A", "B"]))
    return nodes, pods, shapes, draw(st.sampled_from([None, None, None, 1, 2]))
