"""``ClusterState`` places a snapshot's pods with array sums (``state_build.place_all``, issue 62):
the state it builds is the one placing the pods one by one gives, field by field, bit for bit."""

from __future__ import annotations

import gzip
import json
import pickle

import numpy as np
import pytest

import planner.state as state_module
from planner.instances.spot import spot_cluster
from planner.snapshot import load_cluster, parse_cluster
from planner.state import ClusterState
from tests.support.paths import INSTANCES, REPO


def one_by_one(state, pods, nodes):
    """The reference: ``place`` per pod, in pod order, the shares packed at the end."""
    state._bulk = True
    for p, n in zip(pods.tolist(), nodes.tolist()):
        state.place(p, n)
    state._bulk = False


def same_state(a: ClusterState, b: ClusterState) -> list[str]:
    differ = []
    for key, value in a.__dict__.items():
        other = b.__dict__[key]
        if key == "cluster":
            continue
        if isinstance(value, np.ndarray):
            if value.dtype != other.dtype or not np.array_equal(value, other):
                differ.append(key)
        elif pickle.dumps(value) != pickle.dumps(other):
            differ.append(key)
    return differ


def hand_cluster():
    """Shares, named resources, anti-affinity groups and a switch-required job on four nodes."""
    nodes = [
        {"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 512, "asw": f"a{i // 2}", "resources": {"pods": 110, "example.com/nic": 4}} for i in range(4)
    ]
    pods = [
        {"name": "s1", "node": "n0", "gpus": 0.5, "cpus": 1.5, "requests": {"example.com/nic": 1}},
        {"name": "s2", "node": "n0", "gpus": 0.25, "cpus": 0.1, "anti_affinity": ["web"]},
        {"name": "s3", "node": "n1", "gpus": 0.75, "cpus": 0.2, "anti_affinity": ["web", "db"], "requests": {"example.com/nic": 1}},
        {"name": "w1", "node": "n2", "gpus": 2, "cpus": 3.3, "job": "train", "requests": {"example.com/nic": 2}},
        {"name": "w2", "node": "n3", "gpus": 2, "cpus": 3.3, "job": "train"},
        {"name": "p", "node": None, "gpus": 1, "cpus": 1},
    ]
    jobs = [{"name": "train", "topology": {"level": "spine", "mode": "required"}}]
    return parse_cluster(json.dumps({"nodes": nodes, "pods": pods, "jobs": jobs}))


def clusters():
    yield "asi-500", load_cluster(INSTANCES / "asi-500.json")
    with gzip.open(INSTANCES / "asi-500-locked.json.gz", "rt") as f:
        yield "asi-500-locked", parse_cluster(f.read())
    with gzip.open(REPO / "tests" / "data" / "k8s-mixed-200.json.gz", "rt") as f:
        text = f.read()
    if '"nodes"' in text[:200]:
        yield "k8s-mixed", parse_cluster(text)
    yield "spot", spot_cluster(nodes=60, seed=3)
    yield "hand", hand_cluster()
    yield "standby", load_cluster(REPO / "tests" / "data" / "standby-reactivate.json")


@pytest.mark.parametrize("name,cluster", list(clusters()), ids=lambda v: v if isinstance(v, str) else "")
def test_bulk_placement_builds_the_pod_by_pod_state(monkeypatch, name, cluster):
    bulk = ClusterState(cluster)
    monkeypatch.setattr(state_module, "place_all", one_by_one)
    reference = ClusterState(cluster)
    assert same_state(bulk, reference) == []
    assert int(bulk.pods_per_node.sum()) == sum(1 for p in cluster.pods if p.node is not None)


def test_bulk_sums_float_requests_in_pod_order():
    """CPUs that do not add associatively (0.1 + 0.2 + 0.3 differs by order): the bulk sums match."""
    nodes = [{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 512}]
    pods = [{"name": f"p{i}", "node": "n0", "gpus": 0, "cpus": c, "memory_gib": c} for i, c in enumerate([0.1, 0.2, 0.3, 1e-9, 7.7])]
    cluster = parse_cluster(json.dumps({"nodes": nodes, "pods": pods}))
    total = 0.0
    for c in (0.1, 0.2, 0.3, 1e-9, 7.7):
        total += c
    state = ClusterState(cluster)
    assert state.used_cpus[0] == total and state.used_mem[0] == total
