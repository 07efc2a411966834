"""The room plans' move-minimal pass (``heuristics/room_trim.py``): it never lowers a shape's count,
never adds a move, leaves every pod legal where it ends, and undoes exchanges the count does not need."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cluster import Cluster
from planner.heuristics.room_trim import retarget_dropped, trim_room_end_state
from planner.heuristics.switch_room import RoomShape, room_counts
from planner.heuristics.trim import target_of
from planner.instances.asi import generate_asi
from planner.limits import MoveBudget, MoveLimits
from planner.metrics import parse_shape
from planner.state import PENDING, ClusterState
from planner.waves import target_to_waves


def movers(start: ClusterState, end: ClusterState) -> int:
    return int(((end.pod_node != start.pod_node) & (start.pod_node != PENDING)).sum())


def over_capacity(cluster: Cluster, end: ClusterState) -> list[str]:
    """Nodes whose whole-GPU, CPU or memory requests exceed the node, summed here from the snapshot's pods."""
    used: dict[str, list[float]] = {node.name: [0.0, 0.0, 0.0] for node in cluster.nodes}
    names = end.node_names
    for p, pod in enumerate(cluster.pods):
        n = int(end.pod_node[p])
        if n == PENDING:
            continue
        row = used[names[n]]
        row[0] += pod.gpus if pod.gpus >= 1 else 0.0
        row[1] += pod.cpus
        row[2] += pod.memory_gib
    return [
        node.name
        for node in cluster.nodes
        if used[node.name][0] > node.gpus + 1e-9 or used[node.name][1] > node.cpus + 1e-9 or used[node.name][2] > node.memory_gib + 1e-9
    ]


def shuffled(state: ClusterState, seed: int, tries: int) -> ClusterState:
    """An end state: up to ``tries`` movable pods each moved to a random node where the rules let it be."""
    rng = np.random.default_rng(seed)
    end = state.clone()
    movable = np.flatnonzero((state.pod_node >= 0) & ~state.pod_locked)
    for p in rng.choice(movable, size=min(tries, len(movable)), replace=False).tolist():
        options = np.flatnonzero(end.feasible_nodes(p))
        options = options[options != end.pod_node[p]]
        if len(options):
            end.move(p, int(rng.choice(options)))
    return end


ROOMS = [RoomShape(parse_shape(s)) for s in ("32g384c", "16g192c", "8g96c")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), tries=st.integers(1, 40))
def test_trim_keeps_every_count_and_never_adds_a_move(seed: int, tries: int) -> None:
    cluster = generate_asi(24, seed % 7, allocation=0.6 + 0.05 * (seed % 5))
    start = ClusterState(cluster)
    end = shuffled(start, seed, tries)
    assert not over_capacity(cluster, end)
    counts, moved = room_counts(end, ROOMS), movers(start, end)
    returned = trim_room_end_state(start, end, ROOMS)
    after = room_counts(end, ROOMS)
    assert all(a >= b for a, b in zip(after, counts)), (counts, after)
    assert movers(start, end) == moved - returned  # each pod sent home is a move saved, and no move is added
    assert not over_capacity(cluster, end)
    locked = np.flatnonzero(start.pod_locked)
    assert (end.pod_node[locked] == start.pod_node[locked]).all()


def two_switches(gpus: int = 4) -> Cluster:
    """Two switches of two 8-GPU nodes; each of a0 and b0 holds a ``gpus``-GPU pod of its own."""
    nodes = [{"name": n, "gpus": 8, "cpus": 96, "memory_gib": 1024, "gpu_model": "H800", "asw": n[0]} for n in ("a0", "a1", "b0", "b1")]
    pods = [
        {"name": "pa", "gpus": gpus, "cpus": 8, "memory_gib": 64, "node": "a0"},
        {"name": "pb", "gpus": gpus, "cpus": 8, "memory_gib": 64, "node": "b0"},
        {"name": "fill-a1", "gpus": 8, "cpus": 8, "memory_gib": 64, "node": "a1", "locked": True},
        {"name": "fill-b1", "gpus": 8, "cpus": 8, "memory_gib": 64, "node": "b1", "locked": True},
    ]
    return Cluster.model_validate({"nodes": nodes, "pods": pods})


@pytest.mark.parametrize("gpus", [4, 8])  # 8: each home is full until the other pod leaves it (``_swap_home``)
def test_an_exchange_the_counts_do_not_need_is_undone(gpus: int) -> None:
    cluster = two_switches(gpus)
    start = ClusterState(cluster)
    end = start.clone()
    pa, pb = cluster.pods[0], cluster.pods[1]
    index = {pod.name: p for p, pod in enumerate(cluster.pods)}
    node = {name: n for n, name in enumerate(start.node_names)}
    end.move(index[pa.name], node["b0"])
    end.move(index[pb.name], node["a0"])
    shapes = [RoomShape(parse_shape("4g8c"))]
    assert room_counts(end, shapes) == room_counts(start, shapes) == [2 if gpus == 4 else 0]  # the same free GPUs per switch either way
    returned = trim_room_end_state(start, end, shapes)
    assert returned == 2 and movers(start, end) == 0


def test_a_move_that_makes_room_stays() -> None:
    cluster = two_switches()
    start = ClusterState(cluster)
    end = start.clone()
    index = {pod.name: p for p, pod in enumerate(cluster.pods)}
    node = {name: n for n, name in enumerate(start.node_names)}
    end.move(index["pb"], node["a0"])  # b0 ends empty: an 8-GPU room on switch b
    shapes = [RoomShape(parse_shape("8g16c"))]
    assert room_counts(end, shapes) == [1] and room_counts(start, shapes) == [0]
    assert trim_room_end_state(start, end, shapes) == 0
    assert int(end.pod_node[index["pb"]]) == node["a0"]


def test_a_dropped_exchange_is_retargeted_to_a_node_with_room_and_routes() -> None:
    """Two full nodes exchange their 8-GPU pods (a cycle the router cannot start under ``move_once``);
    re-targeting one pod to the free node of the other switch keeps the 8-GPU count and routes."""
    nodes = [{"name": n, "gpus": 8, "cpus": 96, "memory_gib": 1024, "gpu_model": "H800", "asw": s} for n, s in (("n1", "a"), ("n2", "a"), ("n3", "b"))]
    pods = [
        {"name": "p1", "gpus": 8, "cpus": 8, "memory_gib": 64, "node": "n1"},
        {"name": "p2", "gpus": 8, "cpus": 8, "memory_gib": 64, "node": "n2"},
    ]
    cluster = Cluster.model_validate({"nodes": nodes, "pods": pods})
    start = ClusterState(cluster)
    budget = MoveBudget.of(start, MoveLimits(move_once=True))
    target = {0: 1, 1: 0}
    routed = target_to_waves(start.clone(), target, budget)
    assert len(routed.dropped) == 2 and not routed.waves
    end = start.clone()
    end.move(0, 1)
    end.move(1, 0)
    shapes = [RoomShape(parse_shape("8g16c"))]
    assert retarget_dropped(start, end, shapes, routed.dropped, budget) == 1
    assert int(end.pod_node[0]) == 2 and room_counts(end, shapes) == [1]  # p1 to n3: switch a gets n2's room
    again = target_to_waves(start.clone(), target_of(start, end), budget)
    assert not again.dropped and [[(p, d) for p, _, d in w] for w in again.waves] == [[(0, 2)], [(1, 0)]]
