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
from planner.validate.preempt import surplus_units, validate_preempt
from tests.support.preempt_oracle import optimum

REPROS = Path(__file__).resolve().parents[1] / "data" / "repros"
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
    plan = PreemptPlan(
        job="J",
        now_s=10000,
        placements=[Placement(pod="J-0", node="n0")],
        victims=[Victim(pod="a", node="n0", job="g", lost_gpu_s=20000.0), Victim(pod="b", node="n1", job="g", lost_gpu_s=20000.0)],
    )
    assert validate_preempt(cluster, plan) == []
    assert surplus_units(cluster, plan) == 1


def test_a_gang_of_min_available_2_is_still_evicted_whole() -> None:
    """Above 1 the gang is one victim unit (documented): leaving a replica running splits it."""
    snapshot = repro("claims-preempt-minavail1-crash.json")
    snapshot["jobs"][0]["min_available"] = 2
    cluster = parse_cluster(json.dumps(snapshot))
    plan = PreemptPlan(job="J", now_s=10000, placements=[Placement(pod="J-0", node="n0")], victims=[Victim(pod="a", node="n0", job="g", lost_gpu_s=20000.0)])
    assert [v.kind for v in validate_preempt(cluster, plan)] == ["victim_gang_split"]


SHARES_STRANDED = {
    "version": 1,
    "time_s": 1000.0,
    "nodes": [
        {"name": "n0", "gpus": 4, "cpus": 16, "memory_gib": 32, "asw": "a"},
        {"name": "n1", "gpus": 8, "cpus": 16, "memory_gib": 32, "asw": "a"},
        {"name": "n2", "gpus": 1, "cpus": 16, "memory_gib": 32, "asw": "a"},
    ],
    "pods": [
        {"name": "p0", "node": "n0", "gpus": 4, "cpus": 1, "memory_gib": 2, "priority": "LP", "started_s": 0.0},
        {"name": "p1", "node": "n1", "gpus": 4, "cpus": 1, "memory_gib": 2, "priority": "LP", "started_s": 0.0, "anti_affinity": ["g1"]},
        {"name": "h", "node": "n2", "gpus": 0.5, "cpus": 1, "memory_gib": 2, "priority": "HP"},
        {"name": "j0", "node": None, "job": "J", "gpus": 0.25, "cpus": 1, "memory_gib": 2, "priority": "HP", "anti_affinity": ["g1"]},
        {"name": "j1", "node": None, "job": "J", "gpus": 0.5, "cpus": 1, "memory_gib": 2, "priority": "HP"},
    ],
    "jobs": [{"name": "J"}],
}
"""j0 (0.25 GPU, anti-affinity with p1) fits only beside h on n2, j1 anywhere: nothing need be evicted.
SpotGPU best-fits j1 beside h first and strands j0 (4,000 GPU-s); FlexTopo finds the free plan; the
exact model, which gives each share pod a whole device, cannot."""


@pytest.mark.parametrize("solver", ["cpsat", "highs"])
def test_exact_never_reports_worse_than_a_heuristic_it_could_start_from(solver: str) -> None:
    cluster = parse_cluster(json.dumps(SHARES_STRANDED))
    flextopo = plan_preempt(cluster, "J", options("flextopo"))
    assert flextopo.metrics["lost_gpu_s"] == 0 == optimum(SHARES_STRANDED, "J")
    plan = plan_preempt(cluster, "J", options("exact", solver))
    assert validate_preempt(cluster, plan) == []
    assert plan.metrics["lost_gpu_s"] <= flextopo.metrics["lost_gpu_s"]
    assert plan.report.status in ("optimal", "feasible")


def test_compare_exact_is_at_least_as_good_as_its_heuristic() -> None:
    cluster = parse_cluster(json.dumps(SHARES_STRANDED))
    both = plan_preempt(cluster, "J", PreemptOptions(method="compare", heuristic="flextopo", time_limit_s=5.0, solver_workers=1))
    assert both.gap["lost_gpu_s"]["exact"] <= both.gap["lost_gpu_s"]["heuristic"] == 0
