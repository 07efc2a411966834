"""IPC's early stop (``min_round_yield``): it stops at the first round whose yield is below the rule,
keeps every round before it, and a yield of 0 runs the published rule (until a round vacates nothing)."""

from __future__ import annotations

import gzip
import json

import pytest

from planner.adapters.kubernetes import import_kubernetes
from planner.engine import DefragOptions, plan_defrag
from planner.engine.defrag import DefragPlan
from planner.instances.asi import generate_asi
from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
from tests.support.paths import REPO


def _mixed_200():
    text = gzip.decompress((REPO / "tests/data/k8s-mixed-200.json.gz").read_bytes()).decode()
    return import_kubernetes([(text, "k8s-mixed-200")]).cluster


def _rounds(cluster, **options) -> tuple[list[int], list[int], int]:
    plan = plan_defrag(cluster, DefragOptions(workers=1, **options))
    assert isinstance(plan, DefragPlan)
    report = plan.report
    return list(report.vacated_per_round), list(report.ejection_attempts_per_round), len(plan.vacated_nodes)  # type: ignore[union-attr]  # extra report fields


@pytest.mark.parametrize("make", [_mixed_200, lambda: generate_asi(300, seed=3)], ids=["mixed-200", "asi-300"])
@pytest.mark.parametrize("threshold", [1.0, 5.0])
def test_stops_at_the_first_round_below_the_yield(make, threshold):
    cluster = make()
    every, every_attempts, every_vacated = _rounds(cluster, min_round_yield=0)
    kept, kept_attempts, kept_vacated = _rounds(cluster, min_round_yield=threshold)
    # the published rule: every round until one vacates nothing (or the last)
    assert all(v > 0 for v in every[:-1]) and (every[-1] == 0 or len(every) == 5)
    # the early stop keeps the full run's first rounds exactly
    assert kept == every[: len(kept)] and kept_attempts == every_attempts[: len(kept)]
    below = [1000 * v < threshold * a or v == 0 for v, a in zip(every, every_attempts, strict=True)]
    expected = below.index(True) + 1 if True in below else len(every)
    assert len(kept) == expected
    assert kept_vacated == sum(kept) <= every_vacated == sum(every)


@pytest.mark.slow
def test_the_mixed_fleet_stops_early_and_loses_little():
    """Many small pods: the second round vacates under 1 node per 1,000 attempts, so the default stops there."""
    cluster = import_kubernetes([(json.dumps(generate_kubernetes_mixed(1000, 0)), "mixed-1000")]).cluster
    every, attempts, _ = _rounds(cluster, min_round_yield=0)
    kept, _, _ = _rounds(cluster)
    assert len(kept) < len(every)
    assert sum(every) - sum(kept) <= 0.03 * sum(every)
    assert 1000 * kept[-1] < attempts[len(kept) - 1]
