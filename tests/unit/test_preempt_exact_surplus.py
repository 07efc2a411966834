"""The exact preemption plan returns the victims its placements do not need. Its model is stricter than the
rules with GPU shares (``model_exact: false``), and hypothesis found this cluster (two 4-GPU nodes, shares and
gangs) where CP-SAT's plan evicted 2 surplus victims: 3,500 GPU-s lost where the oracle's optimum is 2,500."""

from __future__ import annotations

from planner.cluster import Cluster
from planner.engine.preempt import PreemptOptions, plan_preempt

SNAPSHOT = {
    "version": 1,
    "time_s": 1000.0,
    "nodes": [
        {"name": "n0", "gpus": 4, "cpus": 16, "memory_gib": 32, "gpu_model": "A", "labels": {}, "asw": "a"},
        {"name": "n1", "gpus": 4, "cpus": 16, "memory_gib": 32, "gpu_model": "A", "labels": {}, "asw": "a"},
    ],
    "pods": [
        {"name": "p0", "node": "n0", "gpus": 4, "cpus": 1, "memory_gib": 2, "priority": "LP", "started_s": 0.0},
        {"name": "p1", "node": "n1", "gpus": 1, "cpus": 1, "memory_gib": 2, "priority": "LP", "job": "g1", "started_s": 0.0},
        {"name": "p2", "node": "n1", "gpus": 0.5, "cpus": 1, "memory_gib": 2, "priority": "LP", "job": "g1", "started_s": 0.0},
        {"name": "p3", "node": "n1", "gpus": 0.5, "cpus": 1, "memory_gib": 2, "priority": "LP", "started_s": 0.0},
        {"name": "p4", "node": "n1", "gpus": 1, "cpus": 1, "memory_gib": 2, "priority": "LP", "job": "g2", "started_s": 0.0},
        {"name": "p5", "node": "n1", "gpus": 1, "cpus": 1, "memory_gib": 2, "priority": "LP", "job": "g2", "started_s": 0.0},
        {"name": "j0", "node": None, "job": "J", "gpus": 2, "cpus": 1, "memory_gib": 2, "priority": "HP"},
        {"name": "j1", "node": None, "job": "J", "gpus": 0.5, "cpus": 1, "memory_gib": 2, "priority": "HP"},
        {"name": "j2", "node": None, "job": "J", "gpus": 2, "cpus": 1, "memory_gib": 2, "priority": "HP"},
    ],
    "jobs": [{"name": "g1"}, {"name": "g2", "min_available": 1}, {"name": "J", "min_available": 2}],
}


def test_the_exact_plan_keeps_no_surplus_victim_and_reaches_the_optimum() -> None:
    cluster = Cluster.model_validate(SNAPSHOT)
    plan = plan_preempt(cluster, "J", PreemptOptions(method="exact", solver="cpsat", time_limit_s=5.0, solver_workers=1))
    assert plan.metrics["surplus_victims"] == 0
    assert plan.metrics["lost_gpu_s"] == 2500.0  # the oracle's optimum for this cluster (tests/oracle/test_preempt_oracle.py)
    assert sorted(v.pod for v in plan.victims) == ["p1", "p2", "p5"]
