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
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings, target
from hypothesis import strategies as st

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod, Topology
from planner.engine import DefragOptions, plan_defrag
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.makeroom import make_room_requests
from planner.heuristics.makeroom import _serve_in_order, optimistic_slots, unplaceable_reason
from planner.limits import MoveBudget
from planner.plans import DefragPlan
from planner.snapshot import consistency_problems, dump_cluster, parse_cluster
from planner.state import ClusterState
from planner.validate.defrag import validate
from tests.support.defrag_oracle import explore, final_states
from tests.support.tiny_snapshots import THIRD

REPROS = Path(__file__).resolve().parents[1] / "data" / "repros"
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


def starts_on(c: Cluster, where: dict[int, int], *names: str) -> bool:
    """Can every job of ``names`` start (``need`` of its pods each, all rules, GPU shares packed)
    together beside the pods at ``where``?"""
    residents: dict[int, list[Pod]] = {n: [] for n in range(len(c.nodes))}
    for p, n in where.items():
        residents[n].append(c.pods[p])
    choices = []
    for name in names:
        pods, job, need = pending_of(c, name)
        options = [
            chosen
            for chosen in itertools.combinations_with_replacement(range(len(c.nodes)), need)
            if job is None or rules.job_topology_ok(job, [c.nodes[n] for n in chosen])
        ]
        choices.append([list(zip(pods, chosen)) for chosen in options])
    for picks in itertools.product(*choices):
        arriving: dict[int, list[Pod]] = {}
        for pod, n in itertools.chain(*picks):
            arriving.setdefault(n, []).append(pod)
        if all(not rules.node_rule_breaks(c.nodes[n], residents[n], a) for n, a in arriving.items()):
            return True
    return False


def some_end_state_starts(c: Cluster, *names: str, same_asw: bool = False, max_moves: int | None = None) -> bool:
    return any(starts_on(c, where, *names) for where, _ in final_states(c, max_moves, same_asw=same_asw))


def assert_proofs_sound(c: Cluster, plan: DefragPlan, same_asw: bool = False, max_moves: int | None = None) -> None:
    """Every reason that claims a proof holds: no end state starts the job (none moving more pods
    than ``max_moves`` where the reason says "within the move budgets"; with the jobs the plan
    starts, where it says "together with" them)."""
    started = [name for name, job in (plan.metrics.per_job if plan.metrics else {}).items() if job.get("placed")]
    for unplaced in plan.unplaced:
        if PROOF in unplaced.reason or unplaced.reason.startswith("proven"):
            jobs = [unplaced.job, *started] if "together with" in unplaced.reason else [unplaced.job]
            budget = max_moves if "within the move budgets" in unplaced.reason else None
            assert not some_end_state_starts(c, *jobs, same_asw=same_asw, max_moves=budget), f"{unplaced.job}: {unplaced.reason}"


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


GANG_MINIMUM = parse_cluster(
    '{"version": 1, "nodes": [{"name": "n0", "gpus": 1, "cpus": 8, "memory_gib": 8}, {"name": "n1", "gpus": 1, "cpus": 8, "memory_gib": 8}],'
    ' "pods": [{"name": "a", "gpus": 1, "cpus": 1, "node": "n0", "locked": true},'
    ' {"name": "j-0", "job": "j", "gpus": 1, "cpus": 1}, {"name": "j-1", "job": "j", "gpus": 1, "cpus": 1}],'
    ' "jobs": [{"name": "j", "min_available": 1}]}'
)
"""Job j (2 x 1 GPU) starts with 1 pod (min_available); only n1's one GPU is free, and a is locked."""


@pytest.mark.parametrize("method", ["heuristic", "exact"])
def test_a_job_starts_with_its_gang_minimum(method: str) -> None:
    c = GANG_MINIMUM
    assert some_end_state_starts(c, "j")
    plan = make_room(c, ["j"], **({"method": "exact", "time_limit_s": 5.0, "solver_workers": 1} if method == "exact" else {}))
    assert_proofs_sound(c, plan)
    assert [(p.pod, p.node) for p in plan.placements] == [("j-0", "n1")] and plan.unplaced == []
    if method == "exact":
        assert plan.report.status == "optimal" and plan.report.moves == 0


@pytest.mark.parametrize("names", [["J0", "J1"], ["J1", "J0"]])
def test_no_impossibility_is_claimed_that_holds_only_after_the_heuristics_own_choices(names: list[str]) -> None:
    # J1 (3 x 2 GPUs, required under one switch) starts on n1 (switch a) once p4 leaves it, if J0
    # starts elsewhere (n1 and n2): the exact method starts both with that one move. Served first,
    # J0 takes n1; what is left for J1 is the heuristic's own doing, not a proof
    c = repro("claims-makeroom-conditional-proof.json")
    assert some_end_state_starts(c, "J0") and some_end_state_starts(c, "J1")
    state = ClusterState(c)
    requests = make_room_requests(c, ["J0", "J1"])
    proofs = {i: unplaceable_reason(state, r, optimistic_slots(state, r.pods[0])) for i, r in enumerate(requests)}
    assert proofs == {0: None, 1: None}  # each job alone could start
    first, second = _serve_in_order(state, requests, MoveBudget.of(state), 0, [0, 1], proofs)
    assert first.reason is None and second.reason is not None
    assert PROOF not in second.reason and "not a proof" in second.reason, second.reason
    # the heuristic tries again with J1 served first, and starts both with the one move
    plan = make_room(c, names)
    assert_proofs_sound(c, plan)
    assert plan.unplaced == [] and len(plan.moves()) == 1
    exact = make_room(c, names, method="exact", time_limit_s=10, solver_workers=1)
    assert exact.unplaced == [] and len(exact.moves()) == 1


# ----------------------------------------------------------------------------------------------
# Random tiny snapshots with GPU shares and gang minimums, against the oracle
# ----------------------------------------------------------------------------------------------

SHARES = [0.5, 0.3, 0.7, THIRD, 0.25]
PLACED_GPUS = [1.0, 2.0, *SHARES, 0.5]
PENDING_GPUS = [1.0, 2.0, 0.5, 0.3, THIRD]


@st.composite
def room_clusters(draw: st.DrawFn) -> tuple[Cluster, dict[str, Any]]:
    """2-4 small nodes under two switches, 3-6 running pods (GPU shares among them, some locked),
    and one pending job j of 1-3 alike pods (whole GPUs or shares), maybe with ``min_available``
    and a required switch, and maybe a lone pending pod w named with it; with move limits. Pods go first-fit from a drawn node where the snapshot
    stays consistent."""
    nodes = [
        Node(
            name=f"n{i}",
            gpus=draw(st.sampled_from([1, 2, 4, 1])),
            cpus=draw(st.sampled_from([8.0, 4.0])),
            memory_gib=draw(st.sampled_from([64.0, 8.0])),
            asw=draw(st.sampled_from(["a", "b"])),
        )
        for i in range(draw(st.integers(2, 4)))
    ]
    pods: list[Pod] = []
    for i in range(draw(st.integers(3, 6))):
        candidate = Pod(
            name=f"p{i}",
            gpus=draw(st.sampled_from(PLACED_GPUS)),
            cpus=draw(st.sampled_from([0.5, 1.0, 2.0])),
            memory_gib=draw(st.sampled_from([1.0, 4.0])),
            anti_affinity=draw(st.sampled_from([[], [], [], ["g"]])),
            locked=draw(st.sampled_from([False] * 4 + [True])),
        )
        first = draw(st.integers(0, len(nodes) - 1))
        for k in range(len(nodes)):
            placed = [*pods, candidate.model_copy(update={"node": nodes[(first + k) % len(nodes)].name})]
            if not consistency_problems(Cluster(nodes=nodes, pods=placed)):
                pods = placed
                break
    count = draw(st.integers(1, 3))
    largest = max(n.gpus for n in nodes)  # some node could hold the pending pod, or the request is refused
    shape = {
        "gpus": draw(st.sampled_from([g for g in PENDING_GPUS if g <= largest])),
        "cpus": 1.0,
        "memory_gib": draw(st.sampled_from([1.0, 4.0])),
        "anti_affinity": draw(st.sampled_from([[], [], [], ["g"]])),
    }
    pods += [Pod(name=f"j-{i}", job="j", **shape) for i in range(count)]
    minimum = draw(st.sampled_from([None, None, *range(1, count + 1)]))
    topology = draw(st.sampled_from([None, None, Topology(level="asw", mode="required")]))
    job = Job(name="j", topology=topology, min_available=minimum)
    limits = {"max_moves": draw(st.sampled_from([None, None, 1, 2])), "same_asw": draw(st.booleans()) and draw(st.booleans()), "move_once": draw(st.booleans())}
    if draw(st.integers(0, 3)) == 0:  # a second request: a lone pending pod, served with j
        pods.append(Pod(name="w", gpus=draw(st.sampled_from([g for g in PENDING_GPUS if g <= largest])), cpus=1.0, memory_gib=1.0))
    return parse_cluster(dump_cluster(Cluster(nodes=nodes, pods=pods, jobs=[job]))), limits


def fewest_moves_to_start(c: Cluster, name: str, limits: dict[str, Any]) -> int | None:
    """Fewest moves of any plan within ``limits`` after which ``name`` can start (None: no plan)."""
    reach = explore(c, limits["max_moves"], None, limits["same_asw"], limits["move_once"])
    row = {n.name: k for k, n in enumerate(c.nodes)}
    placed = [p for p, pod in enumerate(c.pods) if pod.node is not None]
    movable = [p for p in placed if not c.pods[p].locked]
    fixed = {p: row[c.pods[p].node] for p in placed if c.pods[p].locked}
    best = None
    for where, cost in sorted(reach.costs.items(), key=lambda item: item[1].moves):
        if best is not None and cost.moves >= best:
            break
        if starts_on(c, fixed | dict(zip(movable, where)), name):
            best = cost.moves
    return best


def _options(limits: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**{k: v for k, v in limits.items() if v not in (None, False) or k == "move_once"}, **fields}


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(case=room_clusters())
def test_make_room_claims_hold_with_shares_and_gang_minimums(case: tuple[Cluster, dict[str, Any]]) -> None:
    c, limits = case
    note(f"snapshot: {dump_cluster(c)}\nlimits: {limits}")
    best = fewest_moves_to_start(c, "j", limits)
    note(f"oracle: fewest moves {best}")
    target(float(best or 0), label="oracle: fewest moves")  # towards snapshots where room must be made
    _, _, need = pending_of(c, "j")
    names = ["j", "w"] if any(p.name == "w" for p in c.pods) else ["j"]
    plan = make_room(c, names, **_options(limits))
    note(f"heuristic: {plan.model_dump(exclude={'report'})}")
    event(f"oracle: {'no plan' if best is None else f'{best} move(s)'}; need {need} of {len(pending_of(c, 'j')[0])}")
    event(f"heuristic: {'placed' if plan.placements else plan.unplaced[0].reason.split(';')[0][:40]}")
    assert_proofs_sound(c, plan, limits["same_asw"], limits["max_moves"])
    started = {p.pod for p in plan.placements}
    if any(name.startswith("j-") for name in started):  # a plan that starts j has at least j's fewest moves
        assert best is not None and len(plan.moves()) >= best
        assert sum(name.startswith("j-") for name in started) >= need
    whole = float(c.pods[[p.name for p in c.pods].index("j-0")].gpus).is_integer()
    if not whole:
        return  # the exact model starts whole-GPU pods only (and refuses a job of shares)
    if any(p.name == "w" for p in c.pods) and not float(c.pods[[p.name for p in c.pods].index("w")].gpus).is_integer():
        return
    exact = make_room(c, names, **_options(limits, method="exact", time_limit_s=5.0, solver_workers=1))
    report = exact.report
    extra = report.model_extra or {}
    note(f"exact: {exact.model_dump(exclude={'report'})} status={report.status} extra={extra}")
    assert_proofs_sound(c, exact, limits["same_asw"], limits["max_moves"])
    event(f"exact: {report.status}")
    exact_started = [p.pod for p in exact.placements if p.pod.startswith("j-")]
    if exact_started:
        assert best is not None and len(exact.moves()) >= best and len(exact_started) >= need
    if len(names) > 1:
        return  # the fewest moves for both jobs together is not the oracle's (j's alone)
    if report.status == "optimal":
        assert exact.placements and len(exact.moves()) == best, f"optimal with {len(exact.moves())} moves; the fewest are {best}"
    if report.status == "infeasible" or any(u.reason.startswith("proven") for u in exact.unplaced):
        assert best is None, f"claimed that no plan starts j; one of {best} moves does"
    if extra.get("moves_bound") is not None and best is not None:
        assert extra["moves_bound"] <= best
