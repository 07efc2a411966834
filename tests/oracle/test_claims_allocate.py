"""The audit's false claims in topology allocation (issue 40, part 3): switches are access switches.

The README and ``--help`` promise jobs "on as few access switches as possible"; a spine job's model
counted spines, so ``exact`` (HiGHS) said ``optimal`` on 2 access switches where 1 suffices. The
oracle (``tests/support/allocate_oracle.py``) enumerates every placement of tiny clusters with spine jobs
(``required``: one spine; ``preferred``: no rule) and ranks them: GPUs started, then access switches
spanned (summed over jobs), then entropy over access switches (summed). Repros are copies of ``../shared/repros/<name>``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from planner.cluster import Cluster
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.validate.allocate import validate_allocate
from tests.support.allocate_oracle import key_of, optimum

REPROS = Path(__file__).resolve().parents[1] / "data" / "repros"


def spine_cluster(seed: int) -> dict:
    """Two spines of one or two access switches of 1-2 small nodes (some nodes without an asw), partly
    used, and 1-3 pending jobs, most of them spine jobs (required or preferred)."""
    rng = random.Random(seed)
    nodes = []
    for s in range(2):
        for a in range(rng.randint(1, 2)):
            for k in range(rng.randint(1, 2)):
                node = {"name": f"p{s}a{a}n{k}", "gpus": rng.choice([2, 4]), "cpus": rng.choice([8, 16]), "memory_gib": 64, "spine": f"p{s}"}
                if rng.random() < 0.8:
                    node["asw"] = f"p{s}a{a}"
                nodes.append(node)
    pods, jobs = [], []
    for j in range(rng.randint(1, 3)):
        per = rng.choice([1, 1, 2])
        count = rng.randint(2, 4)
        kind = rng.choice(["spine-required", "spine-required", "spine-preferred", "asw-required", None])
        topology = None if kind is None else {"level": kind.split("-")[0], "mode": kind.split("-")[1]}
        jobs.append({"name": f"j{j}", **({"topology": topology} if topology else {})})
        cpus = rng.choice([1, 2]) * per
        pods += [{"name": f"j{j}-{i}", "job": f"j{j}", "gpus": per, "cpus": cpus} for i in range(count)]
    for n in rng.sample(nodes, k=len(nodes) // 2):
        pods.append({"name": f"run-{n['name']}", "node": n["name"], "gpus": 1, "cpus": 2})
    return {"nodes": nodes, "pods": pods, "jobs": jobs}


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_a_spine_job_is_placed_on_the_fewest_access_switches(solver: str) -> None:
    """claims-alloc-spine-switches: J0 (spine, required) fits one access switch (n1 + n4 under 'a');
    HiGHS said optimal on n1 + n3 (2 access switches, 1 spine)."""
    snapshot = json.loads((REPROS / "claims-alloc-spine-switches.json").read_text())
    cluster = Cluster.model_validate(snapshot)
    plan = plan_allocate(cluster, AllocateOptions(method="exact", solver=solver, time_limit_s=5, solver_workers=1))
    assert validate_allocate(cluster, plan) == []
    assert plan.report.status == "optimal"
    got = key_of(snapshot, {p.pod: p.node for p in plan.placements})
    assert got[:2] == optimum(snapshot)[:2] == (2.0, 1)
    assert plan.report.switches_bound == 1 and plan.metrics["per_job"]["J0"]["spines"] == 1


def test_largest_first_puts_a_spine_job_on_the_fewest_access_switches() -> None:
    snapshot = json.loads((REPROS / "claims-alloc-spine-switches.json").read_text())
    cluster = Cluster.model_validate(snapshot)
    plan = plan_allocate(cluster, AllocateOptions(method="largest-first"))
    assert plan.metrics["per_job"]["J0"]["asws"] == plan.metrics["per_job"]["J0"]["min_asws"] == 1


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_exact_claims_with_spine_jobs_hold_against_a_optimum(solver: str) -> None:
    """``optimal`` means the oracle's optimum on every level; ``bound`` and ``switches_bound`` bound it."""
    optimal = 0
    for seed in range(24):
        snapshot = spine_cluster(seed)
        cluster = Cluster.model_validate(snapshot)
        plan = plan_allocate(cluster, AllocateOptions(method="exact", solver=solver, time_limit_s=5, solver_workers=1))
        assert validate_allocate(cluster, plan) == [], seed
        got, want = key_of(snapshot, {p.pod: p.node for p in plan.placements}), optimum(snapshot)
        assert (got[0], -got[1]) <= (want[0], -want[1]), (seed, got, want)
        if plan.report.bound is not None:
            assert plan.report.bound >= want[0], (seed, plan.report.bound, want)
        if plan.report.switches_bound is not None and got[0] == want[0]:
            assert plan.report.switches_bound <= want[1], (seed, plan.report.switches_bound, want)
        for job, m in plan.metrics["per_job"].items():  # reported at both levels
            assert m["asws"] >= m["spines"] >= 1, (seed, job, m)
        if plan.report.status == "optimal":
            optimal += 1
            assert got[:2] == want[:2], (seed, got, want)
            assert abs(got[2] - want[2]) <= (getattr(plan.report, "entropy_tolerance_nats", None) or 0.0) + 1e-9, (seed, got, want)
    assert optimal >= 20


def share_cluster() -> dict:
    """Three pods of 0.3 GPU: one node of either switch holds all three on one device."""
    nodes = [
        {"name": "n0", "gpus": 1, "cpus": 16, "memory_gib": 64, "asw": "a"},
        {"name": "n1", "gpus": 2, "cpus": 16, "memory_gib": 64, "asw": "b"},
        {"name": "n2", "gpus": 1, "cpus": 16, "memory_gib": 64, "asw": "b"},
    ]
    pods = [{"name": "run", "node": "n2", "gpus": 0.5, "cpus": 1}, *({"name": f"s-{i}", "job": "s", "gpus": 0.3, "cpus": 1} for i in range(3))]
    return {"nodes": nodes, "pods": pods, "jobs": [{"name": "s"}]}


@pytest.mark.parametrize("method", ["largest-first", "kueue-bestfit", "slurm"])
def test_largest_first_packs_gpu_shares_on_one_switch(method: str) -> None:
    """A share pod takes part of a device: n0 or n1 holds all three pods (one switch); counting a whole
    device per share pod spread the job over both switches and said 2 were the fewest."""
    snapshot = share_cluster()
    cluster = Cluster.model_validate(snapshot)
    plan = plan_allocate(cluster, AllocateOptions(method=method))
    assert validate_allocate(cluster, plan) == []
    metrics = plan.metrics["per_job"]["s"]
    assert (metrics["asws"], metrics["min_asws"], metrics["nodes"]) == (1, 1, 1)
    assert key_of(snapshot, {p.pod: p.node for p in plan.placements}) == optimum(snapshot)


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_exact_never_returns_worse_than_its_start_with_gpu_shares(solver: str) -> None:
    """With shares the model is not exact (a share pod takes a device in it): it claims nothing, and
    it returns its largest-first start when that is better (one switch, not two)."""
    snapshot = share_cluster()
    cluster = Cluster.model_validate(snapshot)
    plan = plan_allocate(cluster, AllocateOptions(method="exact", solver=solver, time_limit_s=5, solver_workers=1))
    assert validate_allocate(cluster, plan) == []
    assert plan.report.status == "feasible" and plan.report.model_exact is False
    assert key_of(snapshot, {p.pod: p.node for p in plan.placements}) == optimum(snapshot)
    assert plan.metrics["switches"] == plan.metrics["per_job"]["s"]["asws"] == 1


def two_spines(caps: dict[str, tuple[str, int]], mode: str) -> dict:
    """One node per access switch (name -> (spine, free GPUs)) and a spine job of 4 one-GPU pods."""
    nodes = [{"name": f"n-{a}", "gpus": g, "cpus": 16, "memory_gib": 64, "asw": a, "spine": p} for a, (p, g) in caps.items()]
    pods = [{"name": f"s-{i}", "job": "s", "gpus": 1, "cpus": 1} for i in range(4)]
    return {"nodes": nodes, "pods": pods, "jobs": [{"name": "s", "topology": {"level": "spine", "mode": mode}}]}


@pytest.mark.parametrize(
    "mode, caps",
    [
        ("preferred", {"a": ("p0", 3), "c": ("p1", 2), "d": ("p1", 2)}),  # one spine (p1) is {2, 2}; {3, 1} spans two
        ("required", {"a": ("p0", 2), "b": ("p0", 2), "c": ("p1", 3), "d": ("p1", 1)}),  # both spines need 2 switches
    ],
)
def test_largest_first_gives_a_spine_job_the_least_entropy(mode: str, caps: dict) -> None:
    """Largest-first's promise for one job (fewest access switches, then least entropy) holds for spine
    jobs: a required one takes the spine where it spreads least, a preferred one is not held to a spine."""
    snapshot = two_spines(caps, mode)
    cluster = Cluster.model_validate(snapshot)
    plan = plan_allocate(cluster, AllocateOptions(method="largest-first"))
    got, want = key_of(snapshot, {p.pod: p.node for p in plan.placements}), optimum(snapshot)
    assert got[:2] == want[:2] == (4.0, 2) and got[2] == pytest.approx(want[2]) == pytest.approx(0.562335, abs=1e-6)
