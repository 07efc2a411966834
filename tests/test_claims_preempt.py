"""The audit's false claims in preemption (issue 40, part 3), pinned on its repros and tiny hand cases.

Each repro is a copy of ``../shared/repros/<name>`` in ``tests/data/repros/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.plans import Placement, PreemptPlan, Victim
from planner.snapshot import parse_cluster
from planner.validate_preempt import surplus_units, validate_preempt
from tests.preempt_oracle import optimum

REPROS = Path(__file__).parent / "data" / "repros"
HEURISTICS = ("spotgpu", "spotgpu-paper", "spotgpu-isolated", "flextopo", "k8s-default", "volcano", "random")


def repro(name: str) -> dict:
    return json.loads((REPROS / name).read_text())


def options(method: str, solver: str = "cpsat") -> PreemptOptions:
    if method == "exact":
        return PreemptOptions(method="exact", solver=solver, time_limit_s=5.0, solver_workers=1)
    return PreemptOptions(method=method)


@pytest.mark.parametrize("method", [*HEURISTICS, "exact"])
def test_min_available_1_replicas_are_evicted_one_by_one(method: str) -> None:
    """claims-preempt-minavail1-crash: a Deployment-like job (min_available 1) loses one replica for J;
    the plan validates (no victim_gang_split) and has no surplus victim."""
    snapshot = repro("claims-preempt-minavail1-crash.json")
    cluster = parse_cluster(json.dumps(snapshot))
    plan = plan_preempt(cluster, "J", options(method))
    assert validate_preempt(cluster, plan) == []
    assert len(plan.victims) == 1
    assert plan.metrics["lost_gpu_s"] == pytest.approx(optimum(snapshot, "J"))
    assert plan.metrics["surplus_victims"] == 0


def test_surplus_victims_counts_replicas_of_a_min_available_1_job() -> None:
    """Evicting both replicas where one frees room enough: one surplus victim (a pod), not zero."""
    snapshot = repro("claims-preempt-minavail1-crash.json")
    cluster = parse_cluster(json.dumps(snapshot))
    plan = PreemptPlan(job="J", now_s=10000, placements=[Placement(pod="J-0", node="n0")],
                       victims=[Victim(pod="a", node="n0", job="g", lost_gpu_s=20000.0),
                                Victim(pod="b", node="n1", job="g", lost_gpu_s=20000.0)])
    assert validate_preempt(cluster, plan) == []
    assert surplus_units(cluster, plan) == 1


def test_a_gang_of_min_available_2_is_still_evicted_whole() -> None:
    """Above 1 the gang is one victim unit (documented): leaving a replica running splits it."""
    snapshot = repro("claims-preempt-minavail1-crash.json")
    snapshot["jobs"][0]["min_available"] = 2
    cluster = parse_cluster(json.dumps(snapshot))
    plan = PreemptPlan(job="J", now_s=10000, placements=[Placement(pod="J-0", node="n0")],
                       victims=[Victim(pod="a", node="n0", job="g", lost_gpu_s=20000.0)])
    assert [v.kind for v in validate_preempt(cluster, plan)] == ["victim_gang_split"]
