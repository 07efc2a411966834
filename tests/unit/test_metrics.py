"""metrics.py on hand-made clusters whose numbers can be checked by hand."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import metrics
from planner.cluster import Cluster
from planner.metrics import Shape, parse_shape
from tests.support.clusters import make_cluster, node, pod
from tests.support.strategies import clusters


@pytest.fixture
def mixed() -> Cluster:
    return make_cluster(
        [
            node("full", gpu_model="A100", asw="x"),
            node("part", gpu_model="A100", asw="x"),
            node("empty", gpu_model="H800", asw="y"),
            {"name": "cpu-busy", "gpus": 0, "cpus": 16, "memory_gib": 64},
            {"name": "cpu-idle", "gpus": 0, "cpus": 16, "memory_gib": 64},
        ],
        [
            pod("f", "full", gpus=8),
            pod("p1", "part", gpus=2),
            pod("p2", "part", gpus=0.5),
            pod("p3", "part", gpus=0.25),
            pod("c", "cpu-busy", gpus=0, cpus=16),
            pod("wait", None, gpus=4),
        ],
    )


def test_summary_counts_empty_full_and_slack(mixed: Cluster) -> None:
    s = metrics.summary(mixed)
    assert (s["nodes"], s["gpu_nodes"], s["gpus"]) == (5, 3, 24)
    assert s["allocated_gpus"] == pytest.approx(10.75)
    assert (s["empty_nodes"], s["full_nodes"], s["nodes_with_slack"]) == (2, 2, 1)
    assert s["gfr"] == pytest.approx(1 / 5)
    assert s["gar"] == pytest.approx(10.75 / 24)
    assert (s["pending_pods"], s["pending_gpus"]) == (1, 4)
    assert s["by_model"]["A100"]["nodes_with_slack"] == 1
    assert s["by_model"]["H800"]["empty_nodes"] == 1
    assert s["by_model"]["cpu-only"]["full_nodes"] == 1


def test_stranded_gpus_by_cause_for_8g64c() -> None:
    c = make_cluster(
        [
            node("fits", cpus=96),
            node("cpu-short", cpus=96),
            node("three-left", cpus=96),
            node("shared", cpus=96),
            node("cordoned", cpus=96, schedulable=False),
        ],
        [
            pod("hog", "cpu-short", gpus=0, cpus=40),
            pod("five", "three-left", gpus=5, cpus=8),
            pod("s1", "shared", gpus=0.5, cpus=1),
            pod("s2", "shared", gpus=0.25, cpus=1),
        ],
    )
    r = metrics.stranded(c, parse_shape("8g64c"))
    assert r["requests_fit"] == 1 and r["gpus_usable"] == 8 and not r["multi_node"]
    assert r["stranded_by_cause"] == {
        "fractional": 0.25,  # the idle quarter of the shared device
        "stranded_gpus": 3 + 7,  # three left after the 5-GPU pod, seven whole ones beside the shared device
        "insufficient_cpu": 8,  # eight GPUs but only 56 CPUs free
        "insufficient_memory": 0,
        "topology": 0,
        "unschedulable": 8,
    }
    assert r["idle_gpus"] == pytest.approx(8 + 8 + 3 + 7.25 + 8)


def test_multi_node_shape_must_fit_under_one_switch() -> None:
    split = make_cluster([node("a", asw="A"), node("b", asw="B"), node("c", asw="B", cpus=32)], [pod("x", "c", gpus=0, cpus=8)])
    r = metrics.stranded(split, parse_shape("16g128c"))
    assert r["multi_node"] and r["requests_fit"] == 0
    # c contributes 3 slots (24 free CPUs at 8 CPUs per GPU): 8 + 8 + 3 = 19 slots, one request cluster-wide
    assert r["stranded_by_cause"]["topology"] == 16
    assert r["stranded_by_cause"]["stranded_gpus"] == 3
    assert r["stranded_by_cause"]["insufficient_cpu"] == 5
    together = make_cluster([node("a", asw="A"), node("b", asw="A")])
    assert metrics.stranded(together, Shape(16, 128))["requests_fit"] == 1


def test_fgd_of_the_fig15_cluster_by_hand(fig15: Cluster) -> None:
    # Workload: 1, 2, 2, 5, 6, 7 GPUs. Node 0 (6 idle) cannot run 7 (p=1/6): 6/6 = 1.
    # Nodes 1-3 (1 idle) run only the 1-GPU task: 1 GPU x 5/6 each.
    assert metrics.fgd(fig15)["fragmented_gpus"] == pytest.approx(1 + 3 * 5 / 6)


def test_fgd_counts_devices_too_small_for_a_share_task() -> None:
    c = make_cluster([node("n", gpus=2)], [pod("a", "n", gpus=0.7), pod("b", "n", gpus=1)])
    share_task = [metrics.TaskClass(0.5, 0, 0, (), 1.0)]
    # The other device is whole-used, so the 0.5 task cannot run: all idle capacity (0.3) counts.
    assert metrics.fgd(c, share_task)["fragmented_gpus"] == pytest.approx(0.3)
    c2 = make_cluster([node("n", gpus=2)], [pod("a", "n", gpus=0.7)])
    assert metrics.fgd(c2, share_task)["fragmented_gpus"] == pytest.approx(0.3)  # runs on the idle device; 0.3 is a fragment
    assert metrics.fgd(c2, [metrics.TaskClass(0.2, 0, 0, (), 1.0)])["fragmented_gpus"] == 0


def test_per_asw_free_gpus_and_whole_nodes(mixed: Cluster) -> None:
    rows = {r["asw"]: r for r in metrics.per_asw(mixed)}
    assert rows["x"]["free_gpus"] == 5 and rows["x"]["free_whole_nodes"] == 0
    assert rows["y"]["free_gpus"] == 8 and rows["y"]["free_whole_nodes"] == 1
    assert rows["(none)"]["nodes"] == 2


@pytest.mark.parametrize("text,expected", [("8g64c", Shape(8, 64)), ("1g", Shape(1, 0)), ("8g64c512m", Shape(8, 64, 512)), ("4G12.5C", Shape(4, 12.5))])
def test_parse_shape(text: str, expected: Shape) -> None:
    assert parse_shape(text) == expected


@pytest.mark.parametrize("text", ["", "0g8c", "8c", "0.5g", "eight"])
def test_bad_shapes_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="is not of the form"):
        parse_shape(text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.sampled_from([Shape(1, 2), Shape(2, 16, 32), Shape(8, 64), Shape(16, 32), Shape(4, 0)]))
def test_idle_gpus_split_exactly_into_usable_and_stranded_causes(cluster: Cluster, shape: Shape) -> None:
    r = metrics.stranded(cluster, shape)
    for part in [r, *r["by_model"].values()]:
        assert part["gpus_usable"] + sum(part["stranded_by_cause"].values()) == pytest.approx(part["idle_gpus"], abs=1e-6)
        assert all(v >= -1e-9 for v in part["stranded_by_cause"].values())
    s = metrics.summary(cluster)
    assert s["empty_nodes"] + s["full_nodes"] + s["nodes_with_slack"] == s["nodes"]
    f = metrics.fgd(cluster)
    assert -1e-9 <= f["fragmented_gpus"] <= s["idle_gpus"] + 1e-9
