"""The exact joint allocation against a brute force written here, and the batch baselines.

The oracle enumerates every assignment of every pending pod to a node (or none) on tiny clusters,
keeps those where each node's GPUs and CPUs hold, each gang is all-or-nothing and each ``required``
job sits under one switch, and ranks them lexicographically: GPUs started, then switches spanned
(summed over jobs), then entropy over switches (summed). The model must reach that optimum and say
so; what it reports is recomputed here from the placements, not read from its metrics.
"""

from __future__ import annotations

import math
import random

import pytest

from planner.cluster import Cluster
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.heuristics.topology import slurm_tree
from planner.models.topology import counts, entropy_phase, formulation
from planner.validate.allocate import validate_allocate
from tests.support import allocate_oracle


def tiny_cluster(seed: int, twins: bool = False) -> Cluster:
    """2-3 switches of 1-3 small nodes, partly used, and 2-4 pending jobs that contend for them;
    ``twins``: the last job is a copy of the first (same pods, same topology)."""
    rng = random.Random(seed)
    nodes = []
    for s in range(rng.randint(2, 3)):
        for k in range(rng.randint(1, 3)):
            nodes.append({"name": f"s{s}-n{k}", "gpus": 4, "cpus": rng.choice([8, 16]), "memory_gib": 64, "asw": f"s{s}", "spine": "p0" if s < 2 else "p1"})
    pods, jobs = [], []
    for j in range(rng.randint(2, 4)):
        per = rng.choice([1, 1, 2, 4])
        count = rng.randint(1, 8 // per + 1)
        cpus = rng.choice([1, 2, 3]) * per
        jobs.append({"name": f"j{j}", **({"topology": {"level": "asw", "mode": "required"}} if rng.random() < 0.3 else {})})
        pods += [{"name": f"j{j}-{i}", "job": f"j{j}", "gpus": per, "cpus": cpus} for i in range(count)]
    if twins:
        copy = {**jobs[0], "name": "jz"}
        jobs.append(copy)
        pods += [{**p, "name": p["name"].replace("j0-", "jz-"), "job": "jz"} for p in pods if p["job"] == "j0"]
    for n in rng.sample(nodes, k=len(nodes) // 2):
        pods.append({"name": f"run-{n['name']}", "node": n["name"], "gpus": rng.choice([1, 2, 3]), "cpus": 2})
    return Cluster.model_validate({"nodes": nodes, "pods": pods, "jobs": jobs})


def entropy(counts: list[float]) -> float:
    total = sum(counts)
    return -sum(c / total * math.log(c / total) for c in counts if c > 0) if total else 0.0


def key_of(cluster: Cluster, where: dict[str, str]) -> tuple[float, int, float]:
    """(GPUs started, switches spanned, entropy) of pod -> node placements."""
    asw = {n.name: n.asw for n in cluster.nodes}
    per_job: dict[str, dict[str, float]] = {}
    gpus = 0.0
    for pod in cluster.pods:
        if pod.name in where:
            per_job.setdefault(pod.job, {}).setdefault(asw[where[pod.name]], 0.0)
            per_job[pod.job][asw[where[pod.name]]] += pod.gpus
            gpus += pod.gpus
    return gpus, sum(len(v) for v in per_job.values()), sum(entropy(list(v.values())) for v in per_job.values())


_OPTIMA: dict[str, tuple[float, int, float]] = {}


def brute_force(cluster: Cluster) -> tuple[float, int, float]:
    """The lexicographic optimum of ``cluster``, enumerated once per snapshot content in a test run
    (the same tiny clusters are checked against it with each solver; the enumeration is most of the
    time those tests take)."""
    key = cluster.model_dump_json()
    if key not in _OPTIMA:
        _OPTIMA[key] = _enumerate(cluster)
    return _OPTIMA[key]


def _enumerate(cluster: Cluster) -> tuple[float, int, float]:
    """The lexicographic optimum (most GPUs, fewest switches, least entropy) by enumeration
    (``tests/support/allocate_oracle.py``)."""
    return allocate_oracle.optimum(cluster.model_dump(mode="json"))


@pytest.mark.parametrize("solver, rows", [("cpsat", "multisets"), ("highs", "multisets"), ("auto", "multisets"), ("highs", "pairing")])
def test_the_joint_model_reaches_the_brute_force_optimum(solver, rows, monkeypatch):
    """``rows``: the entropy phase's count-multiset rows (the default), or with none allowed
    (PARTITION_LIMIT 0) the count pairings it falls back on for jobs with too many multisets. With
    HiGHS, the LP bound proves some starts optimal (no search) and the entropy search of the others
    runs on the model compacted by reduced-cost fixing (``models/reduced_cost.py``)."""
    if rows == "pairing":
        monkeypatch.setattr(counts, "PARTITION_LIMIT", 0)
    confined = floored = paired = loose = partitioned = 0
    phase_b_proofs = entropy_proofs = fixed_then_searched = 0
    for seed in range(20):
        cluster = tiny_cluster(seed)
        plan = plan_allocate(cluster, AllocateOptions(method="exact", solver=solver, time_limit_s=20, solver_workers=2))
        assert validate_allocate(cluster, plan) == [], seed
        assert plan.report.status == "optimal" and plan.report.objective_levels == ["gpus", "switches", "entropy"], (seed, plan.report)
        got = key_of(cluster, {p.pod: p.node for p in plan.placements})
        want = brute_force(cluster)
        assert got[:2] == want[:2], (seed, got, want)
        assert abs(got[2] - want[2]) <= (getattr(plan.report, "entropy_tolerance_nats", None) or 0.0) + 1e-9, (seed, got, want)
        assert plan.report.bound == want[0] and plan.report.switches_bound == want[1]
        confined += getattr(plan.report, "entropy_jobs_confined", 0) or 0
        floored += getattr(plan.report, "entropy_counts_floored", 0) or 0
        paired += getattr(plan.report, "entropy_jobs_paired", 0) or 0
        loose += getattr(plan.report, "entropy_jobs_loosely_paired", 0) or 0
        partitioned += getattr(plan.report, "entropy_jobs_partitioned", 0) or 0
        phase_b_proofs += getattr(plan.report, "gpus_switches_proof", None) == "proven by the LP bound"
        entropy_proofs += getattr(plan.report, "phase_entropy_solver", None) == "lp-bound"
        fixed_then_searched += getattr(plan.report, "phase_entropy_solver", None) == "highs" and getattr(plan.report, "entropy_columns_fixed", None) is not None
    assert confined > 0  # the switch-slack reduction of the entropy phase was exercised and agreed
    assert floored > 0  # so were the count floors (a used switch holds at least N less what the others can)
    if solver != "cpsat":  # the LP bound proved some starts optimal for GPUs and switches, and for entropy
        assert phase_b_proofs > 0 and (rows == "pairing" or (entropy_proofs > 0 and fixed_then_searched > 0)), (
            phase_b_proofs,
            entropy_proofs,
            fixed_then_searched,
        )
    if rows == "multisets":
        assert partitioned > 0  # one multiset of counts chosen per job
    else:  # the count pairing of jobs on at most two switches, and its loose form
        assert partitioned == 0 and paired > 0 and loose > 0


def test_twin_jobs_in_entropy_order_keep_the_brute_force_optimum():
    """Two jobs no row tells apart get 'entropy of the first >= the second': a symmetry cut that must
    not cost the optimum (the oracle ranks every placement of both)."""
    ordered = 0
    for seed in (s for s in range(30) if s not in (0, 11, 24)):  # their oracles take 5-30 s (five jobs)
        cluster = tiny_cluster(seed, twins=True)
        plan = plan_allocate(cluster, AllocateOptions(method="exact", solver="highs", time_limit_s=20, solver_workers=2))
        assert validate_allocate(cluster, plan) == [], seed
        assert plan.report.status == "optimal", (seed, plan.report)
        got, want = key_of(cluster, {p.pod: p.node for p in plan.placements}), brute_force(cluster)
        assert got[:2] == want[:2], (seed, got, want)
        assert abs(got[2] - want[2]) <= (getattr(plan.report, "entropy_tolerance_nats", None) or 0.0) + 1e-9, (seed, got, want)
        ordered += getattr(plan.report, "entropy_twins_ordered", 0) or 0
    assert ordered > 0


def test_auto_keeps_largest_first_when_the_proof_says_it_is_optimal_and_the_exact_plan_when_better():
    for seed in range(20):
        cluster = tiny_cluster(seed)
        want = brute_force(cluster)
        greedy = plan_allocate(cluster, AllocateOptions(method="largest-first"))
        auto = plan_allocate(cluster, AllocateOptions(method="auto", time_limit_s=20, solver_workers=2))
        got = key_of(cluster, {p.pod: p.node for p in auto.placements})
        assert got[:2] == want[:2] and auto.report.status == "optimal", seed
        g = key_of(cluster, {p.pod: p.node for p in greedy.placements})
        assert auto.report.chosen == ("largest-first" if g[:2] == want[:2] and g[2] <= want[2] + 1e-6 else "exact"), seed


def test_an_elastic_gang_keeps_entropy_out_of_the_claim():
    cluster = tiny_cluster(3)
    data = cluster.model_dump()
    data["jobs"][0]["min_available"] = 1
    cluster = Cluster.model_validate(data)
    plan = plan_allocate(cluster, AllocateOptions(method="exact", time_limit_s=20, solver_workers=2))
    assert validate_allocate(cluster, plan) == []
    # entropy was asked and cannot be optimised: not "optimal", though GPUs and switches are proven
    assert plan.report.status == "feasible" and "min_available" in plan.report.entropy
    assert plan.report.objective_levels == ["gpus", "switches", "entropy"] and plan.report.proven_levels == ["gpus", "switches"]
    two = plan_allocate(cluster, AllocateOptions(method="exact", time_limit_s=20, solver_workers=2, entropy=False))
    assert two.report.status == "optimal" and two.report.objective_levels == two.report.proven_levels == ["gpus", "switches"]
    assert two.report.objective == plan.report.objective


def test_an_entropy_level_skipped_for_size_is_not_claimed(monkeypatch):
    """Over the indicator limit the entropy level is skipped: the plan is feasible, its GPUs and
    switches still proven, and both must equal the brute force's."""
    monkeypatch.setattr(entropy_phase, "ENTROPY_INDICATOR_LIMIT", 0)
    skipped = 0
    for seed in range(12):
        cluster = tiny_cluster(seed)
        plan = plan_allocate(cluster, AllocateOptions(method="exact", time_limit_s=20, solver_workers=2))
        if "count indicators" not in (getattr(plan.report, "entropy", None) or ""):
            continue  # no job may span switches here: nothing to skip
        skipped += 1
        got, want = key_of(cluster, {p.pod: p.node for p in plan.placements}), brute_force(cluster)
        assert plan.report.status == "feasible" and plan.report.proven_levels == ["gpus", "switches"], (seed, plan.report)
        assert got[:2] == want[:2], (seed, got, want)
        auto = plan_allocate(cluster, AllocateOptions(method="auto", time_limit_s=20, solver_workers=2))
        assert auto.report.status != "optimal" and auto.report.proven_levels == ["gpus", "switches"], (seed, auto.report)
        assert key_of(cluster, {p.pod: p.node for p in auto.placements})[:2] == want[:2], seed
    assert skipped >= 3


def test_compare_reports_both_plans_and_the_gap():
    cluster = tiny_cluster(5)
    both = plan_allocate(cluster, AllocateOptions(method="compare", time_limit_s=20, solver_workers=2))
    assert both.kind == "allocate-compare"
    g, e = key_of(cluster, {p.pod: p.node for p in both.heuristic.placements}), key_of(cluster, {p.pod: p.node for p in both.exact.placements})
    assert both.gap["gpus"] == e[0] - g[0] and both.gap["switches"] == g[1] - e[1]
    assert both.gap["exact"]["switches"] == e[1] and both.exact.report.status == "optimal"


def test_slurm_stays_under_the_smallest_spine_that_holds_the_job():
    # switches 0, 1 under spine 0 (room 6 + 6), switches 2, 3 under spine 1 (room 10 + 1)
    caps, parents = [6, 6, 10, 1], [0, 0, 1, 1]
    assert slurm_tree(caps, 4, parents) == [(0, 4)]  # one switch holds it: the smallest that does
    assert slurm_tree(caps, 11, parents) == [(2, 10), (3, 1)]  # spine 1 (11) is the best fit
    assert slurm_tree(caps, 12, parents) == [(0, 6), (1, 6)]
    assert slurm_tree(caps, 16, parents) == [(2, 10), (0, 6)]  # no spine holds it: the whole fabric
    assert slurm_tree(caps, 24, parents) is None


def test_random_spread_is_seeded_and_valid():
    nodes = [{"name": f"s{s}-n{k}", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": f"s{s}"} for s in range(3) for k in range(4)]
    pods = [{"name": f"j-{i}", "job": "j", "gpus": 2, "cpus": 8} for i in range(12)]
    cluster = Cluster.model_validate({"nodes": nodes, "pods": pods, "jobs": [{"name": "j"}]})
    one = plan_allocate(cluster, AllocateOptions(method="random", seed=7))
    again = plan_allocate(cluster, AllocateOptions(method="random", seed=7))
    assert one.placements == again.placements and validate_allocate(cluster, one) == []
    other = [plan_allocate(cluster, AllocateOptions(method="random", seed=s)).placements for s in range(8)]
    assert len({tuple((p.pod, p.node) for p in pl) for pl in other}) > 1


def test_a_pod_no_node_could_hold_is_refused_naming_it():
    from planner.cluster import SnapshotError

    cluster = tiny_cluster(0)
    data = cluster.model_dump()
    first = next(i for i, p in enumerate(data["pods"]) if p["node"] is None)
    data["pods"][first]["cpus"] = 500
    with pytest.raises(SnapshotError, match=rf"pods\[{first}\].*no node could hold it even empty"):
        plan_allocate(Cluster.model_validate(data), AllocateOptions(method="largest-first"))


def test_a_pod_no_node_tolerates_is_refused_naming_it():
    from planner.cluster import SnapshotError

    cluster = tiny_cluster(0)
    data = cluster.model_dump()
    for node in data["nodes"]:
        node["taints"] = [{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]
    first = next(i for i, p in enumerate(data["pods"]) if p["node"] is None)
    with pytest.raises(SnapshotError, match=rf"pods\[{first}\].*its tolerations: no node could hold it even empty"):
        plan_allocate(Cluster.model_validate(data), AllocateOptions(method="largest-first"))
    for pod in data["pods"]:
        pod["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    assert plan_allocate(Cluster.model_validate(data), AllocateOptions(method="largest-first")).placements


def test_cli_compare_table_generate_batch_and_bad_shapes(tmp_path):
    import json
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True, timeout=300)

    snapshot = tmp_path / "s.json"
    made = run("generate", "asi", "--nodes", "200", "--seed", "2", "--scheduler", "binpack", "--allocation", "0.5", "--large-jobs", "4", "--out", str(snapshot))
    assert made.returncode == 0, made.stderr
    data = json.loads(snapshot.read_text())
    batch = [j for j in data["jobs"] if j["name"].startswith("batch-")]
    assert len(batch) == 4 and {j["topology"]["level"] for j in batch} == {"asw"}
    shown = run("allocate", str(snapshot), "--jobs", ",".join(j["name"] for j in batch), "--method", "compare", "--time-limit", "20", "--format", "table")
    assert shown.returncode == 0, shown.stderr
    assert "greedy: largest-first heuristic" in shown.stdout and "exact: exact optimal" in shown.stdout and "GPUs started: greedy" in shown.stdout
    plan = tmp_path / "p.json"
    assert run("allocate", str(snapshot), "--method", "slurm", "--out", str(plan)).returncode == 0
    assert run("validate", str(snapshot), str(plan)).returncode == 0
    first = next(i for i, p in enumerate(data["pods"]) if p.get("job") == "batch-000")
    data["pods"][first]["gpus"] = 16
    snapshot.write_text(json.dumps(data))
    refused = run("allocate", str(snapshot), "--method", "largest-first")
    assert refused.returncode == 2 and f"pods[{first}]" in refused.stderr and "no node could hold it even empty" in refused.stderr
    assert "Traceback" not in refused.stderr
    unused = run("allocate", str(snapshot), "--method", "slurm", "--seed", "4")
    assert unused.returncode == 2 and "--seed" in unused.stderr


def test_per_node_packing_rows_agree_with_the_brute_force(monkeypatch):
    """Classes with too many packing patterns get per-node rows instead: force that everywhere."""
    monkeypatch.setattr(formulation, "PATTERN_LIMIT", 0)
    for seed in (1, 13, 15, 18, 19):
        cluster = tiny_cluster(seed)
        plan = plan_allocate(cluster, AllocateOptions(method="exact", solver="highs", time_limit_s=20, solver_workers=2))
        assert plan.report.node_classes > 0 and plan.report.status == "optimal", seed
        assert validate_allocate(cluster, plan) == []
        assert key_of(cluster, {p.pod: p.node for p in plan.placements})[:2] == brute_force(cluster)[:2], seed


def test_count_multisets_are_every_partition_within_the_ranges():
    """The entropy phase's multisets: every partition of n into fewest..most parts in [low, high]
    (brute force over sorted tuples), each once, and None past the cap."""
    import itertools

    for n in range(1, 13):
        for low, high in ((1, n), (2, 5), (3, 3), (1, 4)):
            for fewest, most in ((1, 1), (1, 3), (2, 4), (3, 12)):
                want = {c for size in range(fewest, most + 1) for c in itertools.combinations_with_replacement(range(high, low - 1, -1), size) if sum(c) == n}
                got = counts._partitions(n, low, high, fewest, most, 10_000)
                assert got is not None and len(got) == len(set(got)) and set(got) == want, (n, low, high, fewest, most)
    assert len(counts._partitions(12, 1, 12, 1, 12, 77)) == 77  # p(12) = 77 fits the cap
    assert counts._partitions(12, 1, 12, 1, 12, 76) is None
