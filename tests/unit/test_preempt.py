"""Preemption planning: hand cases from the papers, the validator's checks, the cost model, bad input."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import numpy as np
import pytest

from planner import rules
from planner.cluster import Cluster, SnapshotError
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.plans import Placement, PreemptPlan, Victim
from planner.preempt_state import PreemptState
from planner.snapshot import parse_cluster
from planner.validate.preempt import surplus_units, validate_preempt
from tests.support.preempt_clusters import numa_node_cluster, prefix_counterexample, standby_cluster

METHODS = ["spotgpu", "spotgpu-paper", "flextopo", "k8s-default", "volcano", "random", "exact"]


def victims_of(plan: PreemptPlan) -> list[str]:
    return sorted(v.pod for v in plan.victims)


def test_spotgpu_evicts_the_cheapest_cover_not_the_published_prefix():
    cluster = prefix_counterexample()
    corrected = plan_preempt(cluster, "hp", PreemptOptions(method="spotgpu"))
    paper = plan_preempt(cluster, "hp", PreemptOptions(method="spotgpu-paper"))
    assert victims_of(corrected) == ["c"] and corrected.metrics["lost_gpu_s"] == 3.0
    assert corrected.metrics["surplus_victims"] == 0
    assert victims_of(paper) == ["a", "b", "c"] and paper.metrics["lost_gpu_s"] == 6.0
    assert paper.metrics["surplus_victims"] == 2


@pytest.mark.parametrize("solver", ["cpsat", "highs"])
def test_exact_proves_the_counterexample_optimum(solver):
    plan = plan_preempt(prefix_counterexample(), "hp", PreemptOptions(method="exact", solver=solver, time_limit_s=5))
    assert plan.report.status == "optimal"
    assert plan.report.objective == 3.0 and plan.report.bound == 3.0 and plan.report.gap == 0.0
    assert victims_of(plan) == ["c"]


def test_guaranteed_numa_frees_the_cheaper_socket():
    cluster = numa_node_cluster()
    for method in ("spotgpu", "exact"):
        plan = plan_preempt(cluster, "B", PreemptOptions(method=method))
        assert victims_of(plan) == ["c67", "d4", "d5"], method
        assert plan.placements[0].gpu_indexes == [4, 5, 6, 7]
        assert plan.metrics["lost_gpu_s"] == 6.0 and plan.metrics["topology_hit"]
    flextopo = plan_preempt(cluster, "B", PreemptOptions(method="flextopo"))
    assert flextopo.placements[0].gpu_indexes == [0, 1, 2, 3]  # fewest victims, lowest priority sum
    assert flextopo.metrics["lost_gpu_s"] == 160.0


def test_numa_unaware_default_preemption_is_refused_at_admission():
    """DefaultPreemption counts GPUs: it keeps the high-priority C pod and the oldest D pods, frees
    GPUs 1, 3, 4, 5 across both sockets, and a guaranteed pod cannot start there."""
    plan = plan_preempt(numa_node_cluster(), "B", PreemptOptions(method="k8s-default"))
    assert plan.report.status == "heuristic"  # a failed heuristic proves nothing: spotgpu places the pod
    assert plan.placements == [] and plan.victims == []
    assert "without regard to NUMA" in plan.report.reason


def test_hp_locked_and_standby_pods_are_never_victims():
    base = prefix_counterexample().model_dump()
    for pod in base["pods"][:3]:
        pod["gpus"] = 2
    base["pods"][2]["priority"] = "HP"  # c
    base["pods"][0]["locked"] = True  # a
    cluster = Cluster.model_validate(base)
    for method in METHODS:
        plan = plan_preempt(cluster, "hp", PreemptOptions(method=method))
        assert plan.report.status == "infeasible", method  # only b may go: 2 GPUs free + 2 < 4


def test_a_standby_reservation_is_never_given_away():
    plan = plan_preempt(standby_cluster(4), "hp", PreemptOptions(method="spotgpu"))
    assert victims_of(plan) == ["x"]  # the cheaper spot pod; s keeps its reservation (4 + 4 <= 8)
    for method in METHODS:  # 6 GPUs would eat into the reservation: no eviction helps
        plan = plan_preempt(standby_cluster(6), "hp", PreemptOptions(method=method))
        assert plan.report.status == "infeasible" and plan.victims == [], method


def test_a_spot_job_at_spot_priority_does_not_preempt_but_a_higher_one_does():
    base = prefix_counterexample().model_dump()
    base["pods"][3]["priority"] = "LP"
    plan = plan_preempt(Cluster.model_validate(base), "hp", PreemptOptions(method="spotgpu"))
    assert plan.report.status == "infeasible" and "left by pods that may not be evicted" in plan.report.reason
    base["pods"][3]["priority_value"] = 500  # FlexTopo's C (500, preemptible) over D (200)
    plan = plan_preempt(Cluster.model_validate(base), "hp", PreemptOptions(method="spotgpu"))
    assert victims_of(plan) == ["c"]


def gang_cluster(topology: bool) -> Cluster:
    """Two switches of two 8-GPU nodes; a spot gang spans switch a; an HP job of two 8-GPU pods."""
    nodes = [{"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "a" if i < 2 else "b"} for i in range(4)]
    pods = [
        {"name": "g0", "gpus": 8, "cpus": 1, "node": "n0", "priority": "LP", "job": "gang", "started_s": 0},
        {"name": "g1", "gpus": 8, "cpus": 1, "node": "n1", "priority": "LP", "job": "gang", "started_s": 0},
        {"name": "s2", "gpus": 8, "cpus": 1, "node": "n2", "priority": "LP", "started_s": 90},
        {"name": "s3", "gpus": 4, "cpus": 1, "node": "n3", "priority": "LP", "started_s": 95},
        {"name": "h0", "gpus": 8, "cpus": 1, "job": "hp"},
        {"name": "h1", "gpus": 8, "cpus": 1, "job": "hp"},
    ]
    job = {"name": "hp", "topology": {"level": "asw", "mode": "required"}} if topology else {"name": "hp"}
    return Cluster.model_validate({"time_s": 100, "nodes": nodes, "pods": pods, "jobs": [{"name": "gang"}, job]})


def test_a_gang_is_evicted_whole_and_paid_in_full():
    plan = plan_preempt(gang_cluster(topology=False), "hp", PreemptOptions(method="spotgpu"))
    # s2 (80 GPU-s) and s3 (20) beat the gang (1600): both HP pods land on switch b
    assert victims_of(plan) == ["s2", "s3"] and plan.metrics["lost_gpu_s"] == 100.0
    exact = plan_preempt(gang_cluster(topology=False), "hp", PreemptOptions(method="exact", time_limit_s=5))
    assert exact.report.status == "optimal" and exact.metrics["lost_gpu_s"] == 100.0


def test_required_switch_is_honoured_by_every_method():
    cluster = gang_cluster(topology=True)
    for method in METHODS:
        plan = plan_preempt(cluster, "hp", PreemptOptions(method=method))
        if plan.placements:
            assert plan.metrics["asws"] == 1, method
        assert validate_preempt(cluster, plan) == []


def test_min_available_places_only_what_the_gang_needs():
    data = gang_cluster(topology=False).model_dump()
    data["jobs"][1]["min_available"] = 1
    cluster = Cluster.model_validate(data)
    plan = plan_preempt(cluster, "hp", PreemptOptions(method="exact", time_limit_s=5))
    assert plan.report.status == "optimal" and len(plan.placements) >= 1
    assert plan.metrics["lost_gpu_s"] == 20.0  # s3 alone frees n3 for one pod


# ----------------------------------------------------------------------------------------------
# The validator
# ----------------------------------------------------------------------------------------------


def test_validator_rejects_what_the_rules_forbid():
    cluster = numa_node_cluster()
    good = plan_preempt(cluster, "B", PreemptOptions(method="spotgpu"))
    assert validate_preempt(cluster, good) == []

    def kinds(**changes) -> set[str]:
        return {v.kind for v in validate_preempt(cluster, good.model_copy(update=changes))}

    assert "devices" in kinds(placements=[Placement(pod="b", node="n0", gpu_indexes=[0, 1, 2, 3])])  # 0-2 still held
    unaligned = [Placement(pod="b", node="n0", gpu_indexes=[3, 4, 5, 6])]
    trimmed = [v for v in good.victims if v.pod != "c67"]
    assert "over_capacity" in kinds(victims=trimmed)
    assert rules.NUMA_GUARANTEED in {v.kind for v in validate_preempt(cluster, good.model_copy(update={"placements": unaligned}))}
    wrong_cost = [v.model_copy(update={"lost_gpu_s": v.lost_gpu_s + 1}) for v in good.victims]
    assert "lost_work_mismatch" in kinds(victims=wrong_cost)
    assert "gang_incomplete" in kinds(placements=[])
    hp = Victim(pod="b", node="n0", job="B", lost_gpu_s=0)
    assert "victim_not_running" in kinds(victims=[*good.victims, hp])


def test_validator_refuses_split_gangs_and_protected_victims():
    cluster = gang_cluster(topology=False)
    plan = PreemptPlan(
        job="hp",
        now_s=100,
        placements=[Placement(pod="h0", node="n0"), Placement(pod="h1", node="n2")],
        victims=[Victim(pod="g0", node="n0", job="gang", lost_gpu_s=800), Victim(pod="s2", node="n2", lost_gpu_s=80)],
    )
    assert {v.kind for v in validate_preempt(cluster, plan)} == {"victim_gang_split"}
    data = cluster.model_dump()
    data["pods"][2]["locked"] = True
    locked = Cluster.model_validate(data)
    assert rules.VICTIM_LOCKED in {v.kind for v in validate_preempt(locked, plan)}


def test_surplus_counts_victims_the_plan_did_not_need():
    cluster = gang_cluster(topology=False)
    plan = PreemptPlan(
        job="hp",
        now_s=100,
        placements=[Placement(pod="h0", node="n2"), Placement(pod="h1", node="n3")],
        victims=[
            Victim(pod="s2", node="n2", lost_gpu_s=80),
            Victim(pod="s3", node="n3", lost_gpu_s=20),
            Victim(pod="g0", node="n0", job="gang", lost_gpu_s=800),
            Victim(pod="g1", node="n1", job="gang", lost_gpu_s=800),
        ],
    )
    assert validate_preempt(cluster, plan) == []
    assert surplus_units(cluster, plan) == 1


# ----------------------------------------------------------------------------------------------
# The cost model
# ----------------------------------------------------------------------------------------------


def test_last_checkpoint_comes_from_the_interval_when_not_given():
    pod = Cluster.model_validate(
        {
            "nodes": [{"name": "n", "gpus": 8, "cpus": 8, "memory_gib": 8}],
            "pods": [{"name": "p", "gpus": 2, "cpus": 1, "node": "n", "priority": "LP", "started_s": 100, "checkpoint_interval_s": 60}],
            "time_s": 390,
        }
    ).pods[0]
    assert rules.last_checkpoint_s(pod, 390) == 340 and rules.lost_gpu_s(pod, 390) == 100
    assert rules.lost_gpu_s(pod.model_copy(update={"checkpoint_s": 385.0}), 390) == 10
    assert rules.lost_gpu_s(pod.model_copy(update={"checkpoint_interval_s": None}), 390) == 580


def test_array_lost_work_equals_the_rule():
    rng = random.Random(7)
    pods = []
    for i in range(300):
        started = rng.uniform(0, 1000)
        pod = {"name": f"p{i}", "gpus": rng.choice([0.25, 1, 2, 8]), "cpus": 1, "node": "n", "priority": "LP"}
        if rng.random() < 0.8:
            pod["started_s"] = started
        if rng.random() < 0.4:
            pod["checkpoint_interval_s"] = rng.choice([7.5, 60, 1800])
        if rng.random() < 0.3:
            pod["checkpoint_s"] = rng.uniform(started, 1000)
        pods.append(pod)
    cluster = Cluster.model_validate({"time_s": 1000, "nodes": [{"name": "n", "gpus": 1024, "cpus": 1000, "memory_gib": 1}], "pods": pods})
    now = 1000.0
    array = PreemptState(cluster).lost_gpu_s(now)
    for pod, value in zip(cluster.pods, array.tolist()):
        assert math.isclose(value, rules.lost_gpu_s(pod, now), rel_tol=1e-12, abs_tol=1e-9)


# ----------------------------------------------------------------------------------------------
# Bad input: exit 2 naming the field or option
# ----------------------------------------------------------------------------------------------


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], input=stdin, capture_output=True, text=True, timeout=120)


@pytest.fixture
def snapshot_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(prefix_counterexample().model_dump(mode="json", exclude_defaults=True)))
    return str(path)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--job", "nope"], "--job: unknown job 'nope'; pending jobs (one may be asked for): 'hp'"),
        (["--job", "HP"], "--job: unknown job 'HP'; pending jobs (one may be asked for): 'hp'"),
        (["--job", "hpp"], "--job: unknown job 'hpp'; did you mean 'hp'?; pending jobs (one may be asked for): 'hp'"),
        (["--job", "hp", "--now", "50"], "--now: 50 is before pods[0].started_s"),
        (["--job", "hp", "--alpha", "0.3"], "--alpha: method 'spotgpu' does not use it"),
        (["--job", "hp", "--method", "flextopo", "--alpha", "2"], "--alpha"),
        (["--job", "hp", "--method", "exact", "--time-limit", "nan"], "--time-limit"),
    ],
)
def test_bad_requests_exit_2_naming_the_option(snapshot_file, args, named):
    result = run_cli("preempt", snapshot_file, *args)
    assert result.returncode == 2, result.stderr
    assert named in result.stderr and "Traceback" not in result.stderr


def test_a_running_job_is_not_pending(tmp_path):
    data = prefix_counterexample().model_dump(mode="json", exclude_defaults=True)
    data["pods"][3]["node"] = "n0"
    data["pods"][3]["gpus"] = 0
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    result = run_cli("preempt", str(path), "--job", "hp")
    assert result.returncode == 2 and "is not pending" in result.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["pods"][0].update(gpu_indexes=[0, 1]), "pods[0].gpu_indexes: lists 2 devices"),
        (lambda d: d["pods"][0].update(gpu_indexes=[9]), "pods[0].gpu_indexes: [9] outside 0..5"),
        (lambda d: (d["pods"][0].update(gpu_indexes=[1]), d["pods"][1].update(gpu_indexes=[1])), "GPU 1 of node 'n0' is already held"),
        (lambda d: d["pods"][3].update(gpu_indexes=[1]), "pods[3].gpu_indexes: pod 'h' is pending"),
        (
            lambda d: d["nodes"][0].update(
                numa=[{"name": "a", "gpu_indexes": [0], "cpus": 40, "socket": 0}, {"name": "b", "gpu_indexes": [0], "cpus": 40, "socket": 1}]
            ),
            "a GPU belongs to one NUMA domain",
        ),
        (
            lambda d: d["nodes"][0].update(
                numa=[{"name": "a", "gpu_indexes": [0], "cpus": 40, "socket": 0}, {"name": "b", "gpu_indexes": [1], "cpus": 40, "socket": 1}]
            ),
            "the domains hold 80 CPUs",
        ),
        (lambda d: d["jobs"][0].update(min_available=3), "jobs[0].min_available: 3 but the job has 1 pods"),
        (lambda d: d["pods"][0].update(checkpoint_interval_s=0), "pods[0].checkpoint_interval_s"),
    ],
)
def test_inconsistent_device_and_numa_fields_are_refused(change, message):
    data = prefix_counterexample().model_dump(mode="json", exclude_defaults=True)
    change(data)
    with pytest.raises(SnapshotError) as err:
        parse_cluster(json.dumps(data))
    assert any(message in problem for problem in err.value.problems), err.value.problems


def test_infeasible_is_a_plan_not_an_error(tmp_path):
    data = prefix_counterexample().model_dump(mode="json", exclude_defaults=True)
    data["pods"][3]["gpus"] = 7
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    result = run_cli("preempt", str(path), "--job", "hp")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["report"]["status"] == "infeasible" and plan["placements"] == [] and "even with every" in plan["report"]["reason"]


def test_cli_plan_validates_and_reports_surplus(snapshot_file, tmp_path):
    out = tmp_path / "p.json"
    assert run_cli("preempt", snapshot_file, "--job", "hp", "--method", "spotgpu-paper", "--out", str(out)).returncode == 0
    result = run_cli("validate", snapshot_file, str(out))
    assert result.returncode == 0 and "2 surplus victim gang(s)" in result.stdout
    plan = json.loads(out.read_text())
    plan["victims"] = plan["victims"][:1]
    out.write_text(json.dumps(plan))
    result = run_cli("validate", snapshot_file, str(out))
    assert result.returncode == 1 and "over_capacity" in result.stdout


def test_same_decision_same_plan():
    cluster = gang_cluster(topology=True)
    for method in METHODS:
        a = plan_preempt(cluster, "hp", PreemptOptions(method=method))
        b = plan_preempt(cluster, "hp", PreemptOptions(method=method))
        assert a.placements == b.placements and a.victims == b.victims, method


def test_state_is_not_changed_by_a_decision():
    cluster = gang_cluster(topology=False)
    state = PreemptState(cluster)
    before = state.cs.pod_node.copy()
    plan_preempt(cluster, "hp", PreemptOptions(method="spotgpu"), state=state)
    assert np.array_equal(state.cs.pod_node, before)


def test_reactivation_evicts_the_cheapest_spot_pod_on_its_node():
    from planner.engine.preempt import plan_reactivate

    cluster = standby_cluster(4)
    for method in ("spotgpu", "exact", "k8s-default"):
        plan = plan_reactivate(cluster, "s", PreemptOptions(method=method))
        assert plan.reactivate == "s" and plan.job == "s"
        assert [(p.pod, p.node) for p in plan.placements] == [("s", "n0")]
        assert victims_of(plan) == ["x"] and plan.metrics["lost_gpu_s"] == 40.0, method
        assert validate_preempt(cluster, plan) == []
    moved = plan.model_copy(update={"placements": [Placement(pod="s", node="n1")]})
    assert {v.kind for v in validate_preempt(cluster, moved)} == {"reactivation"}
    short = plan.model_copy(update={"victims": []})
    assert "over_capacity" in {v.kind for v in validate_preempt(cluster, short)}


def test_reactivate_needs_a_standby_pod(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(standby_cluster(4).model_dump_json(exclude_defaults=True))
    result = run_cli("preempt", str(path), "--reactivate", "x")
    assert result.returncode == 2 and "--reactivate: pod 'x' is not on standby" in result.stderr
    result = run_cli("preempt", str(path), "--reactivate", "s", "--job", "hp")
    assert result.returncode == 2 and "give one" in result.stderr
    result = run_cli("preempt", str(path), "--reactivate", "s")
    assert result.returncode == 0 and json.loads(result.stdout)["reactivate"] == "s"


def test_spotgpu_isolated_places_hp_where_it_would_go_without_spot_and_evicts_the_cheapest_there():
    """n0 holds an HP pod (4 GPUs) and two spot pods (2 GPUs each, 50 and 20 s of lost work per
    GPU); n1 is empty. spotgpu starts the new 4-GPU HP pod on n1 for free; spotgpu-isolated packs
    it beside the HP pod on n0, as an HP-only cluster would, evicting both spot pods (200 GPU-s):
    the HP layout then does not depend on where spot work happened to run."""
    cluster = Cluster.model_validate(
        {
            "time_s": 100,
            "nodes": [{"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 64} for i in range(2)],
            "pods": [
                {"name": "hp-old", "gpus": 4, "cpus": 1, "node": "n0", "priority": "HP", "started_s": 0},
                {"name": "s1", "gpus": 2, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 50},
                {"name": "s2", "gpus": 2, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 80},
                {"name": "h", "gpus": 4, "cpus": 1, "job": "hp"},
            ],
            "jobs": [{"name": "hp"}],
        }
    )
    free = plan_preempt(cluster, "hp", PreemptOptions(method="spotgpu"))
    assert [(p.pod, p.node) for p in free.placements] == [("h", "n1")] and not free.victims
    isolated = plan_preempt(cluster, "hp", PreemptOptions(method="spotgpu-isolated"))
    assert [(p.pod, p.node) for p in isolated.placements] == [("h", "n0")]
    assert victims_of(isolated) == ["s1", "s2"] and isolated.metrics["lost_gpu_s"] == 2 * 50 + 2 * 20


def test_lexsort_first_is_the_head_of_the_lexsort_order_ties_included() -> None:
    from planner.heuristics.gang import lexsort_first

    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 40, 300):
        for _ in range(20):  # few distinct values: many ties, some full ties across every key
            keys = (rng.integers(0, 3, size), rng.integers(0, 2, size) == 1, rng.integers(0, 3, size).astype(float) / 2)
            assert lexsort_first(keys) == int(np.lexsort(keys)[0])


def test_lazy_costs_are_those_of_the_pods_placed_when_asked() -> None:
    """Ask.of with ``cost_of`` reads costs on first use, for the pods placed when it was made: a
    victim evicted in between (as a gang's earlier pod does) still costs what it did."""
    from planner.preempt_state import Ask

    cluster = standby_cluster(4)
    ps = PreemptState(cluster)
    job = cluster.job_index()["hp"]
    eager = Ask.of(ps, job, 100.0)
    lazy = Ask.of(ps, job, 100.0, cost_of=lambda placed: np.where(placed, ps.lost_gpu_s(100.0), 0.0))
    x = ps.cs.pod_names.index("x")
    ps.evict(x)
    assert lazy.pod_cost[x] == eager.pod_cost[x] == 4 * 10.0  # x started at 90: 10 s on 4 GPUs
    assert lazy.unit_cost.tolist() == eager.unit_cost.tolist()
    assert lazy.victims.tolist() == eager.victims.tolist()


def test_spotgpu_isolated_takes_the_cheapest_of_nodes_the_hp_view_cannot_tell_apart():
    """Three 8-GPU nodes alike but for their switch, each full with one 8-GPU spot pod; at t=100 an
    HP pod needs a whole node. The HP view sees three clear nodes of one class (no job asks for a
    switch), so the pod takes the one whose eviction loses least: s2, 8 x (100 - 80) = 160 GPU-s,
    not n0's 720 (the first by name). A fourth node with more CPUs is another class: its spot pod
    would lose only 40 GPU-s, but the HP view ranks classes without looking at spot work."""
    nodes = [{"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "a" if i < 2 else "b"} for i in range(3)]
    nodes.append({"name": "n3", "gpus": 8, "cpus": 96, "memory_gib": 64, "asw": "b"})
    cluster = Cluster.model_validate(
        {
            "time_s": 100,
            "nodes": nodes,
            "pods": [{"name": f"s{i}", "gpus": 8, "cpus": 1, "node": f"n{i}", "priority": "LP", "started_s": start} for i, start in enumerate((10, 50, 80, 95))]
            + [{"name": "h", "gpus": 8, "cpus": 1, "job": "hp"}],
            "jobs": [{"name": "hp"}],
        }
    )
    plan = plan_preempt(cluster, "hp", PreemptOptions(method="spotgpu-isolated"))
    assert [(p.pod, p.node) for p in plan.placements] == [("h", "n2")]
    assert victims_of(plan) == ["s2"] and plan.metrics["lost_gpu_s"] == 8 * 20
    assert victims_of(plan_preempt(cluster, "hp", PreemptOptions(method="spotgpu"))) == ["s3"]  # the cheapest anywhere


def test_node_classes_ignore_switches_unless_a_job_asks_for_a_topology():
    from planner.heuristics.spotgpu import node_classes
    from planner.preempt_state import PreemptState
    from planner.state import ClusterState

    def classes(topology: dict | None) -> list[int]:
        cluster = Cluster.model_validate(
            {
                "nodes": [
                    {"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "a"},
                    {"name": "n1", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "b"},
                    {"name": "n2", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "b", "eviction_count": 3},
                    {"name": "n3", "gpus": 8, "cpus": 32, "memory_gib": 64, "asw": "b"},
                ],
                "pods": [{"name": "p", "gpus": 1, "cpus": 1, "job": "j"}],
                "jobs": [{"name": "j", **({"topology": topology} if topology else {})}],
            }
        )
        return node_classes(PreemptState(cluster, ClusterState(cluster))).tolist()

    free = classes(None)
    assert free[0] == free[1] == free[2] != free[3]
    tied = classes({"level": "asw", "mode": "required"})
    assert tied[0] != tied[1] == tied[2] != tied[3]


def test_node_classes_split_on_a_label_only_when_some_pod_selects_it():
    """Kubernetes nodes carry a unique hostname label: it must not make every node its own class,
    unless a pod's node selector or affinity reads it."""
    from planner.heuristics.spotgpu import node_classes
    from planner.preempt_state import PreemptState
    from planner.state import ClusterState

    def classes(pod_rules: dict) -> list[int]:
        cluster = Cluster.model_validate(
            {
                "nodes": [
                    {"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 64, "labels": {"kubernetes.io/hostname": f"n{i}", "pool": "a" if i < 2 else "b"}}
                    for i in range(3)
                ],
                "pods": [{"name": "p", "gpus": 1, "cpus": 1, "job": "j", **pod_rules}],
                "jobs": [{"name": "j"}],
            }
        )
        return node_classes(PreemptState(cluster, ClusterState(cluster))).tolist()

    assert len(set(classes({}))) == 1
    by_pool = classes({"node_selector": {"pool": "a"}})
    assert by_pool[0] == by_pool[1] != by_pool[2]
    by_host = classes({"node_affinity": [[{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n0"]}]]})
    assert len(set(by_host)) == 3
