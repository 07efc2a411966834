"""Allocation of pending jobs on a cluster: the counterexample at node level, required switches, the validator."""

from __future__ import annotations

import pytest

from planner.cluster import Cluster
from planner.engine.allocate import AllocateOptions, locality_cost, plan_allocate
from planner.engine.defrag import PlanOptionError
from planner.plans import Placement
from planner.validate.allocate import validate_allocate
from tests.support.allocate_clusters import switches_cluster


def test_largest_first_spans_two_switches_where_algorithm_2_spans_five():
    """seed-specs D at node level: free capacities {96, 32, 8, 8, 8, 8} GPUs, a 128-GPU job."""
    cluster = switches_cluster({"a": 12, "b": 4, "c": 1, "d": 1, "e": 1, "f": 1}, 128)
    ours = plan_allocate(cluster, AllocateOptions(method="largest-first"))
    published = plan_allocate(cluster, AllocateOptions(method="alg2"))
    assert ours.metrics["per_job"]["j"]["asws"] == 2 and ours.metrics["per_job"]["j"]["min_asws"] == 2
    assert round(ours.metrics["per_job"]["j"]["entropy"], 3) == 0.562
    assert published.metrics["per_job"]["j"]["asws"] == 5 and round(published.metrics["per_job"]["j"]["entropy"], 3) == 0.909
    for plan in (ours, published):
        assert validate_allocate(cluster, plan) == [] and len(plan.placements) == 128


def test_kueue_least_free_capacity_packs_small_switches_first():
    cluster = switches_cluster({"a": 12, "b": 4, "c": 1, "d": 1, "e": 1, "f": 1}, 128)
    plan = plan_allocate(cluster, AllocateOptions(method="kueue-leastfree"))
    assert plan.metrics["per_job"]["j"]["asws"] == 6 and validate_allocate(cluster, plan) == []
    single = plan_allocate(switches_cluster({"a": 4, "b": 2, "c": 3}, 16), AllocateOptions(method="kueue-leastfree"))
    assert {p.node.split("-")[0] for p in single.placements} == {"b"}  # the least free switch that holds it


def test_cpus_limit_the_usable_capacity():
    """12 CPUs per GPU on 96-CPU nodes: each 8-GPU node takes 8 pods; with 48 CPUs only 4."""
    cluster = switches_cluster({"a": 2, "b": 1}, 16)
    data = cluster.model_dump()
    for node in data["nodes"][:2]:
        node["cpus"] = 48
    plan = plan_allocate(Cluster.model_validate(data))
    assert plan.metrics["per_job"]["j"]["asws"] == 2  # a holds 8 pods only, b the other 8


def test_a_required_job_takes_the_smallest_switch_that_holds_it_or_waits():
    cluster = switches_cluster({"a": 4, "b": 2, "c": 3}, 16, {"level": "asw", "mode": "required"})
    plan = plan_allocate(cluster)
    assert {p.node.split("-")[0] for p in plan.placements} == {"b"} and plan.unplaced == []
    too_big = switches_cluster({"a": 4, "b": 2}, 40, {"level": "asw", "mode": "required"})
    plan = plan_allocate(too_big)
    assert plan.placements == [] and plan.unplaced[0].job == "j" and "the roomiest asw takes 32" in plan.unplaced[0].reason


def test_the_validator_refuses_a_split_required_job_and_an_overfull_node():
    cluster = switches_cluster({"a": 1, "b": 1}, 2, {"level": "asw", "mode": "required"})
    split = plan_allocate(cluster).model_copy(update={"placements": [Placement(pod="j-0", node="a-0"), Placement(pod="j-1", node="b-0")]})
    assert "job_topology" in {v.kind for v in validate_allocate(cluster, split)}
    crowded = switches_cluster({"a": 1}, 9)
    plan = plan_allocate(crowded)
    assert plan.placements == [] and plan.unplaced
    forced = plan.model_copy(update={"placements": [Placement(pod=f"j-{i}", node="a-0") for i in range(9)], "unplaced": []})
    assert "over_capacity" in {v.kind for v in validate_allocate(crowded, forced)}


def test_locality_cost_weights_pairs():
    # 2 GPUs on node 0 and 1 on node 1 under one switch, 1 GPU on node 2 elsewhere
    import numpy as np

    assert locality_cost({0: 2, 1: 1, 2: 1}, np.array([0, 0, 1])) == 2 * 1 + 3 * 10


@pytest.mark.parametrize(("jobs", "message"), [(["nope"], "unknown job 'nope'")])
def test_bad_jobs_are_refused(jobs, message):
    with pytest.raises(PlanOptionError, match=message):
        plan_allocate(switches_cluster({"a": 1}, 2), AllocateOptions(jobs=jobs))


def test_cli_allocates_validates_and_refuses(tmp_path):
    import json
    import subprocess
    import sys

    snapshot = tmp_path / "s.json"
    snapshot.write_text(switches_cluster({"a": 12, "b": 4, "c": 1, "d": 1, "e": 1, "f": 1}, 128).model_dump_json(exclude_defaults=True))
    plan = tmp_path / "p.json"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True, timeout=120)

    assert run("allocate", str(snapshot), "--method", "alg2", "--out", str(plan)).returncode == 0
    assert json.loads(plan.read_text())["metrics"]["per_job"]["j"]["asws"] == 5
    checked = run("validate", str(snapshot), str(plan))
    assert checked.returncode == 0 and "valid: 128 placement(s)" in checked.stdout
    broken = json.loads(plan.read_text())
    broken["placements"].append(dict(broken["placements"][0]))
    plan.write_text(json.dumps(broken))
    assert run("validate", str(snapshot), str(plan)).returncode == 1
    refused = run("allocate", str(snapshot), "--jobs", "nope")
    assert refused.returncode == 2 and "--jobs: unknown job 'nope'" in refused.stderr


@pytest.mark.parametrize("solver", ["cpsat", "highs"])
def test_exact_joint_allocation_proves_its_optimum(solver):
    """Two required jobs on switches of 32 and 24 GPUs: both start, each under one switch, and the
    solver proves that 56 GPUs is the most that can start; greedy never beats it."""
    nodes = [{"name": f"{asw}-{k}", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": asw} for asw, count in (("a", 4), ("b", 3)) for k in range(count)]
    pods = [{"name": f"big-{i}", "job": "big", "gpus": 1, "cpus": 1} for i in range(24)]
    pods += [{"name": f"huge-{i}", "job": "huge", "gpus": 2, "cpus": 1} for i in range(16)]
    required = {"level": "asw", "mode": "required"}
    cluster = Cluster.model_validate({"nodes": nodes, "pods": pods, "jobs": [{"name": "big", "topology": required}, {"name": "huge", "topology": required}]})
    greedy = plan_allocate(cluster)
    exact = plan_allocate(cluster, AllocateOptions(method="exact", solver=solver, time_limit_s=10, solver_workers=2))
    assert exact.report.status == "optimal" and exact.report.objective == 56 == exact.report.bound
    assert greedy.report.objective <= exact.report.objective
    assert validate_allocate(cluster, exact) == [] and exact.metrics["jobs_placed"] == 2
