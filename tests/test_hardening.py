"""Hardening regressions (issue 9): each test pins one mechanism that failed under adversarial input."""

from __future__ import annotations

import json
import random

import pytest

from planner import metrics
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.snapshot import parse_cluster
from planner.state import ClusterState
from planner.validate import validate
from tests.conftest import make_cluster, node, pod

# ----------------------------------------------------------------------------------------------
# One way to compute metrics: no valid plan is thrown away over float rounding
# ----------------------------------------------------------------------------------------------


def _rounding_snapshot() -> Cluster:
    """GAR 0.0171875 sits on a 6-decimal rounding boundary; summed in two orders it rounded both ways."""
    return make_cluster(
        [node(f"n{i}", cpus=64, memory_gib=64) for i in range(8)],
        [pod("p0", "n4", gpus=0.3), pod("p1", "n7", gpus=0.1), pod("p2", "n3", gpus=0.7)],
    )


@pytest.mark.parametrize("method", ["heuristic", "random", "descheduler", "repack", "exact"])
def test_a_plan_is_not_rejected_over_the_order_gpu_shares_were_summed_in(method: str) -> None:
    cluster = _rounding_snapshot()
    extra = {"threshold": 1.0} if method in ("random", "descheduler") else {}
    plan = plan_defrag(cluster, DefragOptions(method=method, workers=1, **extra))
    assert validate(cluster, plan) == []
    assert plan.metrics.after["gar"] == metrics.summary(ClusterState(cluster))["gar"]  # moves never change GAR


def test_allocation_is_the_same_whatever_order_shares_arrive_and_leave_in() -> None:
    rng = random.Random(5)
    shares = [rng.choice([0.1, 0.3, 0.7, 1 / 3, 0.45, 0.15]) for _ in range(40)]
    cluster = make_cluster([node("a", gpus=64), node("b", gpus=64)], [pod(f"p{i}", "a", gpus=s) for i, s in enumerate(shares)])
    fresh = ClusterState(cluster)
    churned = ClusterState(cluster)
    order = list(range(len(shares)))
    rng.shuffle(order)
    for p in order:  # every share leaves for b and comes back, in a random order
        churned.move(p, 1)
    rng.shuffle(order)
    for p in order:
        churned.move(p, 0)
    assert churned.share_sum.tolist() == fresh.share_sum.tolist()
    assert metrics.summary(churned) == metrics.summary(fresh)


def test_metrics_do_not_depend_on_the_order_of_pods_in_the_snapshot() -> None:
    cluster = _rounding_snapshot()
    data = json.loads(cluster.model_dump_json())
    data["pods"].reverse()
    assert metrics.summary(parse_cluster(json.dumps(data))) == metrics.summary(cluster)
