"""Snapshot format v1: every malformed input is rejected with field-path messages; valid ones round-trip."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

from planner.cluster import SnapshotError
from planner.snapshot import cluster_to_dict, dump_cluster, parse_cluster
from tests.support.clusters import make_cluster, node, pod
from tests.support.malformed_snapshots import MALFORMED, with_pods
from tests.support.paths import FIG15
from tests.support.strategies import clusters


def problems_of(data: object) -> list[str]:
    text = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(SnapshotError) as err:
        parse_cluster(text, source="snap.json")
    return err.value.problems


@pytest.mark.parametrize("case,snapshot,expected", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_snapshot_is_rejected_with_field_path(case: str, snapshot: object, expected: str) -> None:
    problems = problems_of(snapshot)
    assert any(expected in p for p in problems), problems


def test_every_problem_is_reported_not_just_the_first() -> None:
    problems = problems_of(with_pods(pod("a", "n-9"), pod("a", "n-0", job="x")))
    assert any("pods[1].name: duplicate name 'a'" in p for p in problems)
    assert any("pods[0].node: unknown node 'n-9'" in p for p in problems)
    assert any("pods[1].job: unknown job 'x'" in p for p in problems)


def test_required_topology_under_one_asw_is_accepted() -> None:
    nodes = [node("n-0", asw="a"), node("n-1", asw="a")]
    jobs = [{"name": "j", "topology": {"level": "asw", "mode": "required"}}]
    cluster = make_cluster(nodes, [pod("x", "n-0", job="j"), pod("y", "n-1", job="j")], jobs)
    assert len(cluster.pods) == 2


def test_preferred_topology_may_span_switches() -> None:
    nodes = [node("n-0", asw="a"), node("n-1", asw="b")]
    jobs = [{"name": "j", "topology": {"level": "asw", "mode": "preferred"}}]
    cluster = make_cluster(nodes, [pod("x", "n-0", job="j"), pod("y", "n-1", job="j")], jobs)
    assert cluster.jobs[0].topology.mode == "preferred"


def test_pods_may_stay_on_a_cordoned_node() -> None:
    cluster = make_cluster([node("n-0", schedulable=False)], [pod("p", "n-0")])
    assert cluster.pods[0].node == "n-0"


def test_whole_float_gpus_are_the_same_number() -> None:
    cluster = make_cluster([node("n-0", gpus=8.0)], [pod("p", "n-0", gpus=2.0)])
    assert cluster.nodes[0].gpus == 8 and isinstance(cluster.nodes[0].gpus, int)
    assert json.loads(dump_cluster(cluster))["pods"][0]["gpus"] == 2


def test_defaults_follow_the_format() -> None:
    cluster = make_cluster([{"name": "n", "gpus": 0, "cpus": 4, "memory_gib": 8}], [{"name": "p", "gpus": 0, "cpus": 1}])
    n, p = cluster.nodes[0], cluster.pods[0]
    assert (cluster.version, cluster.time_s, cluster.jobs) == (1, 0, [])
    assert (n.gpu_model, n.asw, n.spine, n.labels, n.schedulable, n.eviction_count) == ("", None, None, {}, True, 0)
    assert (p.job, p.node, p.memory_gib, p.gpu_models, p.priority, p.locked) == (None, None, 0, [], "HP", False)
    assert (p.node_selector, p.anti_affinity, p.checkpoint_s, p.started_s, p.standby) == ({}, [], None, None, False)


def test_fig15_instance_loads() -> None:
    cluster = parse_cluster(FIG15.read_text())
    assert [n.name for n in cluster.nodes] == ["node-0", "node-1", "node-2", "node-3"]
    assert sum(p.locked for p in cluster.pods) == 3


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_generated_snapshots_round_trip_through_json_unchanged(cluster) -> None:
    text = dump_cluster(cluster)
    again = parse_cluster(text)
    assert again == cluster
    assert cluster_to_dict(again) == json.loads(text)
