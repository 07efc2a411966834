"""Preemption plans checked against an independent brute force (``tests/support/preempt_oracle.py``).

The oracle re-reads the semantics from the specification (victims, gangs, lost work, node rules,
GPU shares packed on devices, required topology, ``min_available`` of the job and of victim gangs) and knows the true least lost work of every tiny decision by
enumerating every subset of evictable gangs and every assignment of the job's pods. Every method's
plan must be legal by the oracle (and by ``validate_preempt``), cost what the oracle says its
victims cost, never beat the optimum, and report its surplus victims truthfully; the exact model's
``optimal``, ``bound`` and ``infeasible`` are claims checked against the optimum, with both solvers.

First the oracle itself is pinned on hand cases and cross-checked with the validator on random
decisions; then hand cases of the planner; then property tests over random tiny snapshots.

Claims checked: ``infeasible`` (from any method) means no legal decision exists; ``optimal`` means
the oracle's optimum; ``bound`` is at most it; SpotGPU gives up only when nothing is legal, is exact
on one-pod jobs and leaves no surplus victim; exact never reports a plan worse than a deterministic
heuristic's (it starts from them). Failures are kept failing, nothing is xfail: the hand
tests ``test_min_available_lets_any_of_the_pods_start`` and ``test_spotgpu_finds_a_placement_when_one_exists``
are the smallest reproductions found.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import note as _note
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from planner.cluster import Cluster
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.plans import Placement, PreemptPlan, Victim
from planner.snapshot import parse_cluster
from planner.validate.preempt import validate_preempt
from tests.support.preempt_oracle import (
    SPOT_JOBS_PREEMPT,
    Decision,
    best_decision,
    cost_of,
    is_legal,
    legality_problems,
    optimum,
    pod_cost,
    surplus_units,
)

JOB = "J"
TOL = 1e-6
HEURISTICS = ("spotgpu", "spotgpu-paper", "flextopo", "k8s-default", "volcano", "random")
SOLVERS = ("cpsat", "highs")
STATUSES = {"optimal", "feasible", "timeout", "infeasible", "heuristic"}

FINDINGS: Counter[str] = Counter()
"""What the methods did that is allowed but worth knowing: a heuristic giving up or paying more than
the optimum, the exact model without a proof (printed after the module; a failing run counts its
shrinking replays too)."""


@pytest.fixture(scope="module", autouse=True)
def _report_findings(request: pytest.FixtureRequest):
    yield
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if reporter is not None and capture is not None and FINDINGS:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line("preempt oracle, counts (examples, shrinking included): " + ", ".join(f"{k}={v}" for k, v in sorted(FINDINGS.items())))


def note(text: str) -> None:
    """``hypothesis.note`` inside a property test; nothing in a plain one."""
    if currently_in_test_context():
        _note(text)


def options(method: str, solver: str | None = None, seed: int = 0) -> PreemptOptions:
    if method == "exact":
        return PreemptOptions(method="exact", solver=solver or "cpsat", time_limit_s=5.0, solver_workers=1)
    if method == "random":
        return PreemptOptions(method="random", seed=seed)
    return PreemptOptions(method=method)


def cluster_of(snapshot: dict[str, Any]) -> Cluster:
    return parse_cluster(json.dumps(snapshot))


# ----------------------------------------------------------------------------------------------
# Checking one plan
# ----------------------------------------------------------------------------------------------


def check_plan(snapshot: dict[str, Any], cluster: Cluster, plan: PreemptPlan, opt: float | None, label: str) -> float | None:
    """Every claim of ``plan`` against the oracle; its lost work (None when it places nothing)."""
    note(f"{label}: {plan.model_dump_json()}")
    assert plan.job == JOB
    assert plan.now_s == snapshot["time_s"]
    assert validate_preempt(cluster, plan) == [], label
    report = plan.report
    assert report is not None and report.status in STATUSES, label
    placements = {p.pod: p.node for p in plan.placements}
    evicted = {v.pod for v in plan.victims}
    assert len(placements) == len(plan.placements), f"{label}: a pod placed twice"
    assert len(evicted) == len(plan.victims), f"{label}: a victim listed twice"
    if report.status == "infeasible":
        assert not plan.placements and not plan.victims, f"{label}: an infeasible plan that does something"
        assert opt is None, f"{label}: claims infeasible, the oracle's optimum is {opt}"
    if not plan.placements:
        # an empty plan: proven infeasible, or a heuristic (or a timed-out solver) that gave up
        assert not plan.victims, f"{label}: victims without placements"
        assert report.status in ("infeasible", "heuristic", "timeout"), f"{label}: status {report.status} without placements"
        assert (report.model_extra or {}).get("reason"), f"{label}: an empty plan without a reason"
        return None

    problems = legality_problems(snapshot, JOB, placements, evicted)
    assert not problems, f"{label}: illegal by the oracle: {problems}"
    assert opt is not None, f"{label}: a legal plan where the oracle finds none"

    decision = Decision(snapshot, JOB)
    pods = {p["name"]: p for p in snapshot["pods"]}
    for victim in plan.victims:
        pod = pods[victim.pod]
        assert pod.get("priority", "HP") == "LP", f"{label}: HP victim {victim.pod}"
        assert not pod.get("locked") and not pod.get("standby"), f"{label}: locked/standby victim {victim.pod}"
        assert decision.may_be_victim(victim.pod), f"{label}: victim {victim.pod} not below the job's priority"
        assert victim.node == pod["node"] and victim.job == pod.get("job"), label
        assert victim.lost_gpu_s == pytest.approx(pod_cost(pod, snapshot["time_s"]), abs=TOL), label
    units = {decision.unit_of[q] for q in evicted}
    for unit in units:
        assert set(decision.unit_pods[unit]) <= evicted, f"{label}: gang {unit} split"

    cost = cost_of(snapshot, evicted)
    assert plan.metrics["lost_gpu_s"] == pytest.approx(cost, abs=TOL), label
    assert report.objective == pytest.approx(cost, abs=TOL), label
    assert plan.metrics["victims"] == len(evicted), label
    assert plan.metrics["victim_gangs"] == len(units), label
    assert plan.metrics["placed_pods"] == len(placements), label
    assert cost >= opt - TOL, f"{label}: lost work {cost} below the optimum {opt}"
    assert plan.metrics["surplus_victims"] == surplus_units(snapshot, JOB, placements, evicted), f"{label}: surplus count"

    nodes = {n["name"]: n for n in snapshot["nodes"]}
    held: dict[str, set[int]] = {}
    for placement in plan.placements:
        if placement.gpu_indexes is None:
            continue
        devices = placement.gpu_indexes
        assert all(0 <= g < nodes[placement.node]["gpus"] for g in devices), f"{label}: devices {placement}"
        if 0 < pods[placement.pod]["gpus"] < 1:  # a share: one device, which others may share
            assert len(devices) == 1, f"{label}: devices {placement}"
            continue
        assert len(devices) == len(set(devices)) == pods[placement.pod]["gpus"], f"{label}: devices {placement}"
        taken = held.setdefault(placement.node, set())
        assert not taken & set(devices), f"{label}: a device given twice on {placement.node}"
        taken.update(devices)
    return cost


def check_exact(snapshot: dict[str, Any], cluster: Cluster, opt: float | None, solver: str) -> PreemptPlan:
    label = f"exact/{solver}"
    plan = plan_preempt(cluster, JOB, options("exact", solver))
    assert isinstance(plan, PreemptPlan)
    cost = check_plan(snapshot, cluster, plan, opt, label)
    report = plan.report
    assert report is not None and report.solver == solver
    if report.status == "infeasible":
        assert opt is None, f"{label}: says infeasible, the oracle's optimum is {opt}"
    if opt is None:
        if (report.model_extra or {}).get("model_exact", True):
            assert report.status == "infeasible", f"{label}: status {report.status} where no decision is legal"
        else:
            FINDINGS[f"exact-{solver}-inexact-model-no-proof"] += 1
        return plan
    if report.status == "optimal":
        assert cost is not None and cost == pytest.approx(opt, abs=TOL), f"{label}: optimal {cost}, the optimum is {opt}"
        assert plan.metrics["surplus_victims"] == 0, f"{label}: an optimal plan with surplus victims"
    else:
        FINDINGS[f"exact-{solver}-{report.status}"] += 1
    if report.bound is not None:
        assert report.bound <= opt + TOL, f"{label}: bound {report.bound} above the optimum {opt}"
        if cost is not None:
            assert opt <= cost + TOL
    if cost is not None:
        assert plan.metrics["surplus_victims"] == 0, f"{label}: surplus victims"
    return plan


# ----------------------------------------------------------------------------------------------
# Random tiny snapshots
# ----------------------------------------------------------------------------------------------

GROUPS = ([], [], [], [], ["g1"], ["g2"], ["g1", "g2"])


def rare(draw: st.DrawFn, k: int) -> bool:
    """True about once in k draws. Not an endpoint of the range (Hypothesis favours those), and
    false at 0, so shrinking turns it off."""
    return draw(st.integers(0, 100 * k)) % k == 1


def pick(draw: st.DrawFn, options: Sequence[Any]) -> Any:
    """One of ``options``, near uniformly (the first is the one favoured and shrunk to)."""
    return options[draw(st.integers(0, 100 * len(options))) % len(options)]


@st.composite
def snapshots(draw: st.DrawFn, single_pod: bool = False, min_available: bool = True, shares: bool = True) -> dict[str, Any]:
    """2-4 nodes, 2-6 running pods (some in gangs of 2 across nodes, some of them with
    ``min_available`` 1 or 2; some pods GPU shares), a pending job J of 1-3 pods (sometimes with
    ``min_available``, sometimes of GPU shares)."""
    time_s = pick(draw, [1000.0, 1234.5])
    nodes = []
    for i in range(pick(draw, [3, 2, 4])):
        node: dict[str, Any] = {
            "name": f"n{i}",
            "gpus": pick(draw, [4, 2, 8, 6, 4]),
            "cpus": pick(draw, [16, 8, 4, 64]),
            "memory_gib": pick(draw, [32, 16, 256]),
            "gpu_model": pick(draw, ["A", "B"]),
            "labels": pick(draw, [{}, {"zone": "z1"}, {"zone": "z2"}]),
        }
        asw = pick(draw, ["a", "a", "b", None])
        if asw is not None:
            node["asw"] = asw
        if rare(draw, 12):
            node["schedulable"] = False
        nodes.append(node)

    free = {n["name"]: [n["gpus"], n["cpus"], n["memory_gib"]] for n in nodes}
    groups_on: dict[str, set[str]] = {n["name"]: set() for n in nodes}
    pods: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []

    def running(name: str, job: str | None, avoid: str | None) -> dict[str, Any] | None:
        roomy = [n["name"] for n in nodes if min(free[n["name"]][:2]) >= 1 and free[n["name"]][2] >= 2]
        order = [n for n in roomy if n != avoid] or roomy
        if not order:
            return None
        where = pick(draw, order)
        room = free[where]
        gpus = [g for g in (4, 2, 1) if g <= room[0] + 1e-9]  # the largest that fits first: full nodes
        cpus = [c for c in (1, 2, 4, 8) if c <= room[1]]
        memory = [m for m in (2, 4, 8, 16) if m <= room[2]]
        if not gpus or not cpus or not memory:
            return None
        if shares and rare(draw, 4):  # shares that pack exactly (on ceil(their sum) devices): the snapshot stays valid
            gpus = [pick(draw, [0.5, 0.25])]
        pod: dict[str, Any] = {
            "name": name,
            "node": where,
            "gpus": pick(draw, [gpus[0], gpus[0], *gpus]),
            "cpus": pick(draw, cpus),
            "memory_gib": pick(draw, memory),
            "priority": "HP" if rare(draw, 5) else "LP",
        }
        if job is not None:
            pod["job"] = job
        value = pick(draw, [None, None, None, None, None, -10, 0, 5, 500, 999, 1200])
        if value is not None:
            pod["priority_value"] = value
        if rare(draw, 10):
            pod["locked"] = True
        if pod["priority"] == "HP" and rare(draw, 4):
            pod["standby"] = True  # only running HP pods stand by: they lend their GPUs, keep a reservation
        started = pick(draw, [0.0, 100.0, 400.0, 700.0, 950.0, 999.0, time_s, None])
        if started is not None:
            pod["started_s"] = started
        if rare(draw, 3):
            low = started or 0.0
            pod["checkpoint_s"] = pick(draw, [low, (low + time_s) / 2, time_s - 1.0, time_s])
            pod["checkpoint_s"] = max(low, pod["checkpoint_s"])
        if rare(draw, 3):
            pod["checkpoint_interval_s"] = pick(draw, [7.0, 60.0, 250.0, 1000.0, 2500.0, 0.3])
        groups = [g for g in pick(draw, GROUPS) if g not in groups_on[where]]
        if groups:
            pod["anti_affinity"] = groups
            groups_on[where].update(groups)
        room[0] -= pod["gpus"]
        room[1] -= pod["cpus"]
        room[2] -= pod["memory_gib"]
        return pod

    target = pick(draw, [6, 5, 4, 6, 3, 2])
    g = 0
    while len(pods) < target:
        before = len(pods)
        if target - len(pods) >= 2 and not rare(draw, 2):
            g += 1
            gang = f"g{g}"
            first = running(f"p{len(pods)}", gang, None)
            if first is not None:
                pods.append(first)
                second = running(f"p{len(pods)}", gang, first["node"])
                if second is not None:
                    pods.append(second)
                jobs.append({"name": gang})
                if rare(draw, 10):  # a gang with a member still pending
                    pods.append({"name": f"p{len(pods)}", "node": None, "gpus": 1, "cpus": 1, "job": gang, "priority": "LP"})
                if min_available and second is not None and rare(draw, 3):  # replicas one by one, or a gang of 2 at least
                    jobs[-1]["min_available"] = pick(draw, [1, 2])
        else:
            pod = running(f"p{len(pods)}", None, None)
            if pod is not None:
                pods.append(pod)
        if len(pods) == before:
            break  # the cluster is full

    size = 1 if single_pod else pick(draw, [2, 3, 1])
    spot = rare(draw, 10)
    for k in range(size):
        pod = {
            "name": f"j{k}",
            "node": None,
            "job": JOB,
            "gpus": pick(draw, [2, 4, 1, 4, *([0.5, 0.3] if shares else [])]),
            "cpus": pick(draw, [1, 2, 4, 8]),
            "memory_gib": pick(draw, [2, 4, 8, 16]),
            "priority": "LP" if spot and k == 0 else "HP",
        }
        value = pick(draw, [None, None, None, None, None, None, 1000, 1100, 500, 5])
        if value is not None:
            pod["priority_value"] = value
        if rare(draw, 8):
            pod["gpu_models"] = pick(draw, [["A"], ["B"], ["A", "B"]])
        if rare(draw, 10):
            pod["node_selector"] = {"zone": "z1"}
        if rare(draw, 4):
            pod["anti_affinity"] = pick(draw, GROUPS[-3:])
        pods.append(pod)
    job: dict[str, Any] = {"name": JOB}
    if rare(draw, 3):
        job["topology"] = {"level": "asw", "mode": "required"}
    if min_available and size > 1 and rare(draw, 2):
        job["min_available"] = draw(st.integers(1, size))
    jobs.append(job)
    return {"version": 1, "time_s": time_s, "nodes": nodes, "pods": pods, "jobs": jobs}


def random_decision(snapshot: dict[str, Any], rng: random.Random) -> tuple[dict[str, str], set[str]]:
    """Some decision, legal or not (the oracle and the validator must agree on which)."""
    decision = Decision(snapshot, JOB)
    k = rng.randint(1, len(decision.job_pods))
    chosen = rng.sample(decision.job_pods, k)
    nodes = [n["name"] for n in snapshot["nodes"]]
    placements = {p: rng.choice(nodes) for p in chosen}
    units = list(decision.unit_pods)
    evicted = decision.evicted_pods(rng.sample(units, rng.randint(0, len(units))))
    if evicted and rng.random() < 0.2:
        evicted.discard(rng.choice(sorted(evicted)))  # maybe a split gang
    return placements, evicted


def plan_of(snapshot: dict[str, Any], placements: dict[str, str], evicted: set[str]) -> PreemptPlan:
    pods = {p["name"]: p for p in snapshot["pods"]}
    return PreemptPlan(
        job=JOB,
        now_s=snapshot["time_s"],
        placements=[Placement(pod=p, node=n) for p, n in placements.items()],
        victims=[Victim(pod=q, node=pods[q]["node"], job=pods[q].get("job"), lost_gpu_s=pod_cost(pods[q], snapshot["time_s"])) for q in sorted(evicted)],
    )


# ----------------------------------------------------------------------------------------------
# The oracle pinned by hand
# ----------------------------------------------------------------------------------------------


def _node(name: str, gpus: int = 8, **fields: Any) -> dict[str, Any]:
    return {"name": name, "gpus": gpus, "cpus": 64, "memory_gib": 512, **fields}


def _pod(name: str, on: str | None, gpus: int, **fields: Any) -> dict[str, Any]:
    return {"name": name, "node": on, "gpus": gpus, "cpus": fields.pop("cpus", 1), **fields}


def _snap(nodes: list[dict], pods: list[dict], jobs: list[dict] = (), time_s: float = 100.0) -> dict[str, Any]:
    names = {j["name"] for j in jobs}
    jobs = list(jobs) + [{"name": p["job"]} for p in pods if p.get("job") and p["job"] not in names]
    unique = list({j["name"]: j for j in jobs}.values())
    return {"version": 1, "time_s": time_s, "nodes": nodes, "pods": pods, "jobs": unique}


# one node of 6 GPUs, full of spot pods costing 1, 2 and 3 GPU-seconds on 1, 1 and 4 GPUs
PREFIX = _snap(
    [_node("n0", 6)],
    [
        _pod("a", "n0", 1, priority="LP", started_s=99.0),
        _pod("b", "n0", 1, priority="LP", started_s=98.0),
        _pod("c", "n0", 4, priority="LP", started_s=99.25),
        _pod("j0", None, 4, job=JOB),
    ],
)

HP_CHEAP = _snap(
    [_node("n0", 4), _node("n1", 4)],
    [
        _pod("hp", "n0", 4, priority="HP", priority_value=0, started_s=100.0),  # costs nothing, may not go
        _pod("lp", "n1", 4, priority="LP", started_s=0.0),  # 400 GPU-s
        _pod("j0", None, 4, job=JOB),
    ],
)

LOCKED_CHEAP = _snap(
    [_node("n0", 4), _node("n1", 4)],
    [
        _pod("locked", "n0", 4, priority="LP", locked=True, started_s=100.0),
        _pod("standby", "n1", 4, priority="HP", standby=True, started_s=100.0),  # reserves n1's 4 GPUs
        _pod("lp", "n1", 0, priority="LP", started_s=0.0),
        _pod("lp2", "n0", 0, priority="LP", started_s=0.0),
        _pod("j0", None, 4, job=JOB),
    ],
)

LOCKED_OR_EXPENSIVE = _snap(
    [_node("n0", 4), _node("n1", 4)],
    [
        _pod("locked", "n0", 4, priority="LP", locked=True, started_s=100.0),
        _pod("lp", "n1", 4, priority="LP", started_s=50.0),  # 200 GPU-s
        _pod("j0", None, 4, job=JOB),
    ],
)

SPOT_JOB = _snap(  # a spot job at the spot priority: no victim is of lower priority
    [_node("n0", 4)],
    [
        _pod("lp", "n0", 4, priority="LP", started_s=100.0),
        _pod("j0", None, 2, job=JOB, priority="LP"),
    ],
)

SPOT_JOB_ABOVE = _snap(  # a spot job of priority 500 over a spot pod of 0 (the rule the project chose)
    [_node("n0", 4)],
    [
        _pod("lp", "n0", 4, priority="LP", priority_value=0, started_s=0.0),
        _pod("j0", None, 2, job=JOB, priority="LP", priority_value=500),
    ],
)

GANG_ACROSS = _snap(
    [_node("n0", 4, asw="a"), _node("n1", 4, asw="a")],
    [
        # a cheap gang with one locked member elsewhere may not go; an expensive single may
        _pod("g0", "n0", 4, job="g", priority="LP", started_s=99.0),
        _pod("g1", "n1", 2, job="g", priority="LP", locked=True, started_s=99.0),
        _pod("s", "n1", 2, priority="LP", started_s=0.0),
        _pod("j0", None, 2, job=JOB),
    ],
)


def test_oracle_prefix_case():
    assert optimum(PREFIX, JOB) == pytest.approx(3.0)
    assert best_decision(PREFIX, JOB) == (3.0, {"j0": "n0"}, {"c"})
    assert cost_of(PREFIX, {"a", "b", "c"}) == pytest.approx(6.0)
    assert surplus_units(PREFIX, JOB, {"j0": "n0"}, {"a", "b", "c"}) == 2
    assert not is_legal(PREFIX, JOB, {"j0": "n0"}, {"a", "b"})
    assert not is_legal(PREFIX, JOB, {}, set())


def test_oracle_refuses_hp_locked_standby_and_spot_preemption():
    assert optimum(HP_CHEAP, JOB) == pytest.approx(400.0)
    assert not is_legal(HP_CHEAP, JOB, {"j0": "n0"}, {"hp"})
    assert optimum(LOCKED_CHEAP, JOB) is None
    assert optimum(LOCKED_OR_EXPENSIVE, JOB) == pytest.approx(200.0)
    assert optimum(SPOT_JOB, JOB) is None
    assert not is_legal(SPOT_JOB, JOB, {"j0": "n0"}, {"lp"})
    assert optimum(SPOT_JOB_ABOVE, JOB) == (400.0 if SPOT_JOBS_PREEMPT else None)
    assert is_legal(SPOT_JOB_ABOVE, JOB, {"j0": "n0"}, {"lp"}) == SPOT_JOBS_PREEMPT
    assert optimum(GANG_ACROSS, JOB) == pytest.approx(200.0)
    assert not is_legal(GANG_ACROSS, JOB, {"j0": "n1"}, {"g0", "g1"})
    assert not is_legal(GANG_ACROSS, JOB, {"j0": "n0"}, {"g0"})


def test_oracle_cost_model():
    now = 1000.0
    assert pod_cost({"gpus": 2, "started_s": 400.0}, now) == 1200.0
    assert pod_cost({"gpus": 2, "started_s": 400.0, "checkpoint_s": 900.0}, now) == 200.0
    assert pod_cost({"gpus": 2, "started_s": 400.0, "checkpoint_interval_s": 250.0}, now) == 2 * 100.0  # 400+500=900
    assert pod_cost({"gpus": 1, "checkpoint_interval_s": 300.0}, now) == 100.0  # from 0: 900
    assert pod_cost({"gpus": 4}, now) == 4000.0
    assert pod_cost({"gpus": 1, "started_s": 0.0, "checkpoint_s": 10.0, "checkpoint_interval_s": 300.0}, now) == 990.0


def test_oracle_rules_by_hand():
    snap = _snap(
        [_node("n0", 4, asw="a", gpu_model="A", labels={"zone": "z1"}), _node("n1", 4, asw="b", gpu_model="B"), _node("n2", 4, schedulable=False)],
        [
            _pod("r", "n0", 1, priority="HP", anti_affinity=["g"]),
            _pod("j0", None, 1, job=JOB),
            _pod("j1", None, 1, job=JOB, anti_affinity=["g"], gpu_models=["A"]),
        ],
        jobs=[{"name": JOB, "topology": {"level": "asw", "mode": "required"}}],
    )
    assert not is_legal(snap, JOB, {"j0": "n0", "j1": "n0"}, set())  # anti-affinity with r
    assert not is_legal(snap, JOB, {"j0": "n0", "j1": "n1"}, set())  # two asws
    assert not is_legal(snap, JOB, {"j0": "n1", "j1": "n1"}, set())  # model B
    assert not is_legal(snap, JOB, {"j0": "n2", "j1": "n2"}, set())  # unschedulable
    assert not is_legal(snap, JOB, {"j0": "n0"}, set())  # the whole gang is needed
    assert optimum(snap, JOB) is None
    snap["jobs"][-1]["min_available"] = 1
    assert is_legal(snap, JOB, {"j0": "n0"}, set()) and optimum(snap, JOB) == 0.0


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(), st.randoms(use_true_random=False))
def test_oracle_agrees_with_the_validator(snapshot: dict[str, Any], rng: random.Random):
    """The oracle's witness is legal and has no surplus; on random decisions the oracle and
    ``validate_preempt`` agree on legality (two readings of the same rules)."""
    cluster = cluster_of(snapshot)
    best = best_decision(snapshot, JOB)
    if best is not None:
        cost, placements, evicted = best
        assert is_legal(snapshot, JOB, placements, evicted)
        assert cost == pytest.approx(cost_of(snapshot, evicted))
        assert surplus_units(snapshot, JOB, placements, evicted) == 0
        assert validate_preempt(cluster, plan_of(snapshot, placements, evicted)) == []
    for _ in range(6):
        placements, evicted = random_decision(snapshot, rng)
        ours = legality_problems(snapshot, JOB, placements, evicted)
        theirs = validate_preempt(cluster, plan_of(snapshot, placements, evicted))
        note(f"{placements} {evicted}: oracle {ours}, validator {theirs}")
        assert (not ours) == (not theirs)
        if not ours:
            assert best is not None and cost_of(snapshot, evicted) >= best[0] - TOL


# ----------------------------------------------------------------------------------------------
# The planner on hand cases
# ----------------------------------------------------------------------------------------------


def _plan(snapshot: dict[str, Any], method: str, solver: str | None = None) -> PreemptPlan:
    plan = plan_preempt(cluster_of(snapshot), JOB, options(method, solver))
    assert isinstance(plan, PreemptPlan)
    return plan


def test_prefix_counterexample():
    cluster = cluster_of(PREFIX)
    corrected = _plan(PREFIX, "spotgpu")
    assert check_plan(PREFIX, cluster, corrected, 3.0, "spotgpu") == pytest.approx(3.0)
    assert {v.pod for v in corrected.victims} == {"c"}
    assert corrected.metrics["surplus_victims"] == 0
    paper = _plan(PREFIX, "spotgpu-paper")
    assert check_plan(PREFIX, cluster, paper, 3.0, "spotgpu-paper") == pytest.approx(6.0)
    assert {v.pod for v in paper.victims} == {"a", "b", "c"}
    assert paper.metrics["surplus_victims"] == 2
    for solver in SOLVERS:
        exact = check_exact(PREFIX, cluster, 3.0, solver)
        assert exact.report.status == "optimal" and {v.pod for v in exact.victims} == {"c"}


@pytest.mark.parametrize("snapshot,victims", [(HP_CHEAP, {"lp"}), (LOCKED_OR_EXPENSIVE, {"lp"}), (GANG_ACROSS, {"s"})], ids=["hp", "locked", "gang"])
def test_protected_pods_are_never_victims(snapshot: dict[str, Any], victims: set[str]):
    cluster = cluster_of(snapshot)
    opt = optimum(snapshot, JOB)
    for method in HEURISTICS:
        plan = _plan(snapshot, method)
        check_plan(snapshot, cluster, plan, opt, method)
        if plan.placements:
            assert {v.pod for v in plan.victims} == victims, method
    assert {v.pod for v in _plan(snapshot, "spotgpu").victims} == victims
    for solver in SOLVERS:
        assert {v.pod for v in check_exact(snapshot, cluster, opt, solver).victims} == victims


@pytest.mark.parametrize("snapshot", [SPOT_JOB, LOCKED_CHEAP], ids=["spot-job", "all-protected"])
def test_no_legal_decision_is_infeasible_everywhere(snapshot: dict[str, Any]):
    cluster = cluster_of(snapshot)
    assert optimum(snapshot, JOB) is None
    for method in HEURISTICS:
        plan = _plan(snapshot, method)
        check_plan(snapshot, cluster, plan, None, method)
        assert plan.report.status == "infeasible" and not plan.placements and not plan.victims, method
    for solver in SOLVERS:
        check_exact(snapshot, cluster, None, solver)


def test_a_spot_job_with_a_higher_priority_value():
    cluster = cluster_of(SPOT_JOB_ABOVE)
    opt = optimum(SPOT_JOB_ABOVE, JOB)
    for method in HEURISTICS:
        check_plan(SPOT_JOB_ABOVE, cluster, _plan(SPOT_JOB_ABOVE, method), opt, method)
    assert check_plan(SPOT_JOB_ABOVE, cluster, _plan(SPOT_JOB_ABOVE, "spotgpu"), opt, "spotgpu") == opt
    for solver in SOLVERS:
        check_exact(SPOT_JOB_ABOVE, cluster, opt, solver)


# min_available 1 of 2: the second pod alone starts free, so the optimum is 0 in both
MIN_AVAILABLE_CHEAPER = _snap(  # the first pod would need a victim costing 200
    [_node("n0", 2), _node("n1", 1)],
    [
        _pod("v", "n0", 2, priority="LP", started_s=0.0),
        _pod("j0", None, 2, job=JOB),
        _pod("j1", None, 1, job=JOB),
    ],
    jobs=[{"name": JOB, "min_available": 1}],
)

MIN_AVAILABLE_FIRST_NOWHERE = _snap(  # the first pod fits no node at all
    [_node("n0", 2)],
    [_pod("j0", None, 4, job=JOB), _pod("j1", None, 1, job=JOB)],
    jobs=[{"name": JOB, "min_available": 1}],
)

# two empty nodes; j1 needs model A, j0 takes either: j0 must not take the A node
GREEDY_ORDER = _snap(
    [_node("n0", 2, gpu_model="A"), _node("n1", 2, gpu_model="B")],
    [_pod("j0", None, 2, job=JOB), _pod("j1", None, 2, job=JOB, gpu_models=["A"])],
)


@pytest.mark.parametrize("snapshot", [MIN_AVAILABLE_CHEAPER, MIN_AVAILABLE_FIRST_NOWHERE], ids=["cheaper", "first-nowhere"])
@pytest.mark.parametrize("method", ["spotgpu", "exact/cpsat", "exact/highs"])
def test_min_available_lets_any_of_the_pods_start(snapshot: dict[str, Any], method: str):
    """``min_available`` pods of the job, any of them: not the first ones in snapshot order."""
    assert optimum(snapshot, JOB) == 0.0
    cluster = cluster_of(snapshot)
    if method == "spotgpu":
        check_plan(snapshot, cluster, _plan(snapshot, "spotgpu"), 0.0, "spotgpu")  # may cost more, never claim infeasible
    else:
        solver = method.split("/")[1]
        plan = check_exact(snapshot, cluster, 0.0, solver)
        assert plan.placements and plan.metrics["lost_gpu_s"] == 0.0, f"{method}: {plan.report}"


def test_spotgpu_finds_a_placement_when_one_exists():
    assert best_decision(GREEDY_ORDER, JOB) == (0, {"j0": "n1", "j1": "n0"}, set())
    cluster = cluster_of(GREEDY_ORDER)
    plan = _plan(GREEDY_ORDER, "spotgpu")
    assert check_plan(GREEDY_ORDER, cluster, plan, 0.0, "spotgpu") == 0.0, f"spotgpu gave up: {plan.report}"
    for solver in SOLVERS:
        check_exact(GREEDY_ORDER, cluster, 0.0, solver)


def test_compare_pairs_the_same_decisions():
    cluster = cluster_of(PREFIX)
    both = plan_preempt(cluster, JOB, PreemptOptions(method="compare", heuristic="spotgpu-paper", time_limit_s=5.0, solver_workers=1))
    assert check_plan(PREFIX, cluster, both.heuristic, 3.0, "compare/heuristic") == pytest.approx(6.0)
    assert check_plan(PREFIX, cluster, both.exact, 3.0, "compare/exact") == pytest.approx(3.0)
    assert both.gap["lost_gpu_s"] == {"heuristic": 6.0, "exact": 3.0}


# ----------------------------------------------------------------------------------------------
# The planner on random tiny snapshots
# ----------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(snapshots())
def test_every_method_against_the_oracle(snapshot: dict[str, Any]):
    note(json.dumps(snapshot))
    cluster = cluster_of(snapshot)
    opt = optimum(snapshot, JOB)
    note(f"optimum: {opt}")
    heuristic_costs = {}
    for method in HEURISTICS:
        plan = plan_preempt(cluster, JOB, options(method, seed=7))
        cost = check_plan(snapshot, cluster, plan, opt, method)
        heuristic_costs[method] = cost
        if cost is None and opt is not None:
            FINDINGS[f"{method}-gave-up-but-optimum-exists"] += 1
        elif cost is not None and cost > opt + TOL:
            FINDINGS[f"{method}-above-optimum"] += 1
        if method == "spotgpu" and len([p for p in snapshot["pods"] if p.get("job") == JOB]) == 1:
            # one pod: the per-node search is exhaustive. A gang is placed pod by pod (in a few
            # orders), which can miss a placement; those are counted in FINDINGS, and exact is the
            # complete method (checked above against the oracle).
            assert cost is not None or opt is None, f"spotgpu found nothing, the optimum is {opt}"
            if cost is not None:
                assert plan.metrics["surplus_victims"] == 0
            if len(Decision(snapshot, JOB).job_pods) == 1 and cost is not None:
                assert cost == pytest.approx(opt, abs=TOL), f"spotgpu on one pod: {cost}, the optimum is {opt}"
    for solver in SOLVERS:
        exact = check_exact(snapshot, cluster, opt, solver)
        # exact starts from every deterministic heuristic's plan: it never reports a worse one
        cost = exact.metrics.get("lost_gpu_s") if exact.placements else None
        for method, h in heuristic_costs.items():
            if method != "random" and h is not None:
                assert cost is not None and cost <= h + TOL, f"exact/{solver}: {cost}, {method} found {h}"


@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(snapshots(single_pod=True))
def test_spotgpu_is_exact_on_one_pod(snapshot: dict[str, Any]):
    """SpotGPU's per-node cover is exact and it takes the cheapest node: on a one-pod job its lost
    work is the optimum."""
    note(json.dumps(snapshot))
    cluster = cluster_of(snapshot)
    opt = optimum(snapshot, JOB)
    plan = plan_preempt(cluster, JOB, options("spotgpu"))
    cost = check_plan(snapshot, cluster, plan, opt, "spotgpu")
    if opt is None:
        assert cost is None
        return
    assert cost is not None, f"spotgpu found nothing, the optimum is {opt}"
    assert cost == pytest.approx(opt, abs=TOL), f"spotgpu on one pod: {cost}, the optimum is {opt}"
    assert plan.metrics["surplus_victims"] == 0
    paper = plan_preempt(cluster, JOB, options("spotgpu-paper"))
    paper_cost = check_plan(snapshot, cluster, paper, opt, "spotgpu-paper")
    assert paper_cost is None or paper_cost >= opt - TOL
