"""The DRA addition to snapshot format v1: it round-trips, and a snapshot whose claims hold devices the
rules refuse (a device of another node, one device under two claims, nodes without resources) is refused
naming the field."""

from __future__ import annotations

import json

import pytest

from planner.cluster import SnapshotError
from planner.snapshot import dump_cluster, parse_cluster
from tests.support.dra_lists import fleet, imported


@pytest.fixture(scope="module")
def snapshot() -> dict:
    return json.loads(dump_cluster(imported(fleet(10, 3)).cluster))


def _held(snap):
    return [(i, p) for i, p in enumerate(snap["pods"]) if p.get("device_claims") and p.get("node") and p["device_claims"][0]["requests"][0]["devices"]]


def test_the_dra_fields_round_trip(snapshot):
    cluster = parse_cluster(json.dumps(snapshot))
    assert json.loads(dump_cluster(cluster)) == snapshot
    assert any(n.devices for n in cluster.nodes) and any(p.device_claims for p in cluster.pods)


def test_a_snapshot_without_dra_fields_is_unchanged_by_the_addition():
    plain = {"version": 1, "nodes": [{"name": "n", "gpus": 8, "cpus": 64, "memory_gib": 512}], "pods": [{"name": "p", "node": "n", "gpus": 8, "cpus": 1}]}
    written = dump_cluster(parse_cluster(json.dumps(plain)))
    assert "devices" not in written and "device_claims" not in written


def test_one_device_under_two_claims_is_refused(snapshot):
    snap = json.loads(json.dumps(snapshot))
    (_, first), (j, second) = [(i, p) for i, p in _held(snap) if p.get("node") == "node-00002"][:2]
    second["device_claims"][0]["requests"][0]["devices"] = first["device_claims"][0]["requests"][0]["devices"]
    with pytest.raises(SnapshotError) as err:
        parse_cluster(json.dumps(snap))
    assert f"pods[{j}].device_claims: device '{first['device_claims'][0]['requests'][0]['devices'][0]}' is held by claims" in str(err.value)


def test_a_device_of_another_node_is_refused(snapshot):
    snap = json.loads(json.dumps(snapshot))
    i, pod = _held(snap)[0]
    pod["device_claims"][0]["requests"][0]["devices"] = ["gpu.nvidia.com/elsewhere/gpu-0"]
    with pytest.raises(SnapshotError) as err:
        parse_cluster(json.dumps(snap))
    assert (
        f"pods[{i}].device_claims: claim '{pod['device_claims'][0]['claim']}' holds device 'gpu.nvidia.com/elsewhere/gpu-0', which node '{pod['node']}' does not publish"
        in str(err.value)
    )


def test_claims_need_nodes_that_list_resources(snapshot):
    snap = json.loads(json.dumps(snapshot))
    snap["pods"] = [p for p in snap["pods"] if p.get("node") != "node-00003"]
    del snap["nodes"][3]["resources"]
    with pytest.raises(SnapshotError) as err:
        parse_cluster(json.dumps(snap))
    assert "nodes[3].resources: missing; pods with device_claims need every node to list its resources" in str(err.value)
