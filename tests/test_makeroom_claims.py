"""Issue 40, part 3: make-room's "impossible" reasons are proofs, checked against brute force.

A reason that says a job cannot start "even with every movable pod moved away" (``heuristics/room.py``)
claims that no plan starts it. The oracle here enumerates every end state of the movable pods that
the rules accept node by node (``oracle.final_states``: a superset of what plans reach) and tries
every way to start the job's pods on it, GPU shares packed by ``rules``; a proof is sound only when
no end state starts the job. The audit's inputs are in ``tests/data/repros``.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from planner import rules
from planner.cluster import Cluster, Job, Pod
from planner.engine import DefragOptions, plan_defrag
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.plans import DefragPlan
from planner.snapshot import parse_cluster
from planner.validate import validate
from tests.oracle import final_states

REPROS = Path(__file__).parent / "data" / "repros"
PROOF = "even with every movable pod moved away"


def repro(name: str) -> Cluster:
    return parse_cluster((REPROS / name).read_text())


def pending_of(c: Cluster, name: str) -> tuple[list[Pod], Job | None, int]:
    """The pending pods of a job (or the lone pending pod ``name``), the job, and how many must start."""
    jobs = {j.name: j for j in c.jobs}
    pods = [p for p in c.pods if p.node is None and (p.job == name or (p.job is None and p.name == name))]
    job = jobs.get(name)
    need = len(pods) if job is None or job.min_available is None else min(job.min_available, len(pods))
    return pods, job, need


def starts_on(c: Cluster, where: dict[int, int], name: str) -> bool:
    """Can ``name`` start (``need`` of its pods, all rules, GPU shares packed) beside the pods at ``where``?"""
    pods, job, need = pending_of(c, name)
    residents: dict[int, list[Pod]] = {n: [] for n in range(len(c.nodes))}
    for p, n in where.items():
        residents[n].append(c.pods[p])
    for chosen in itertools.combinations_with_replacement(range(len(c.nodes)), need):
        if job is not None and not rules.job_topology_ok(job, [c.nodes[n] for n in chosen]):
            continue
        arriving: dict[int, list[Pod]] = {}
        for pod, n in zip(pods, chosen):
            arriving.setdefault(n, []).append(pod)
        if all(not rules.node_rule_breaks(c.nodes[n], residents[n], a) for n, a in arriving.items()):
            return True
    return False


def some_end_state_starts(c: Cluster, name: str, same_asw: bool = False) -> bool:
    return any(starts_on(c, where, name) for where, _ in final_states(c, same_asw=same_asw))


def assert_proofs_sound(c: Cluster, plan: DefragPlan, same_asw: bool = False) -> None:
    for unplaced in plan.unplaced:
        if PROOF in unplaced.reason or unplaced.reason.startswith("proven"):
            assert not some_end_state_starts(c, unplaced.job, same_asw), f"{unplaced.job}: {unplaced.reason}"


def make_room(c: Cluster, names: list[str], **options: object) -> DefragPlan:
    chosen = DefragOptions(make_room=names, **options)
    plan = plan_defrag(c, chosen)
    assert isinstance(plan, DefragPlan)
    assert validate(c, plan, chosen.limits(len(c.nodes))) == []
    return plan


def test_a_share_fits_beside_a_locked_share() -> None:
    # q0 (0.5 GPU) fits now on n0's one device beside the locked p0 (0.3): no move, no "room for 0"
    c = repro("claims-makeroom-locked-share-proof.json")
    assert some_end_state_starts(c, "q0")
    plan = make_room(c, ["q0"])
    assert_proofs_sound(c, plan)
    assert [(p.pod, p.node) for p in plan.placements] == [("q0", "n0")] and plan.moves() == []


def test_two_halves_of_one_job_share_a_device() -> None:
    c = repro("claims-makeroom-share-job-proof.json")
    assert some_end_state_starts(c, "J")
    plan = make_room(c, ["J"])
    assert_proofs_sound(c, plan)
    assert sorted((p.pod, p.node) for p in plan.placements) == [("J-0", "n0"), ("J-1", "n0")]


def test_allocate_starts_two_halves_on_one_device() -> None:
    c = repro("claims-makeroom-share-job-proof.json")
    plan = plan_allocate(c, AllocateOptions(method="largest-first"))
    assert [u.reason for u in plan.unplaced] == []
    assert sorted((p.pod, p.node) for p in plan.placements) == [("J-0", "n0"), ("J-1", "n0")]


@pytest.mark.parametrize("names", [["J0", "J1"], ["J1", "J0"]])
def test_no_impossibility_is_claimed_that_holds_only_after_the_heuristics_own_choices(names: list[str]) -> None:
    # J1 (3 x 2 GPUs, required under one switch) starts on n1 (switch a) once p4 leaves it, if J0
    # starts elsewhere (n1 and n2): the exact method starts both with that one move. The heuristic
    # puts J0 on n1 first; what is left for J1 is its own choice, not a proof
    c = repro("claims-makeroom-conditional-proof.json")
    assert some_end_state_starts(c, "J0") and some_end_state_starts(c, "J1")
    plan = make_room(c, names)
    assert_proofs_sound(c, plan)
    for unplaced in plan.unplaced:
        assert PROOF not in unplaced.reason and "not a proof" in unplaced.reason, unplaced.reason
    exact = make_room(c, names, method="exact", time_limit_s=10, solver_workers=1)
    assert exact.unplaced == [] and len(exact.moves()) == 1
