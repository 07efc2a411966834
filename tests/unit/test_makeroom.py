"""Make room for a pending job (defrag --make-room): hand-made clusters, a brute force, bad input."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from planner import rules
from planner.cli import app
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.engine.defrag import PlanOptionError
from planner.plans import DefragPlan, Placement
from planner.snapshot import consistency_problems
from planner.state import ClusterState
from planner.validate.defrag import apply_plan, validate
from tests.support.defrag_over_http import plan_over_http
from tests.support.makeroom_clusters import CHAIN, ONE_MOVE, REQUIRED, cluster, tiny_cluster
from tests.support.makeroom_oracle import oracle_min_moves

runner = CliRunner()


def room(c: Cluster, names: list[str], **options: object) -> DefragPlan:
    plan = plan_defrag(c, DefragOptions(make_room=names, **options))
    assert isinstance(plan, DefragPlan)
    limits = DefragOptions(make_room=names, **options).limits(len(c.nodes))
    assert validate(c, plan, limits) == []
    return plan


def moves(plan: DefragPlan) -> list[tuple[str, str, str]]:
    return [(m.pod, m.from_, m.to) for m in plan.moves()]


def test_one_move_is_the_only_way_and_the_plan_places_the_pod() -> None:
    plan = room(ONE_MOVE, ["big"])
    assert len(plan.moves()) == 1 and plan.report.moves == 1 and plan.report.gpus_moved == 4
    ((_pod, source, _),) = moves(plan)
    assert plan.placements == [Placement(pod="big", node=source)]
    assert plan.metrics.per_job == {"big": {"placed": True, "moves": 1, "gpus_moved": 4.0, "nodes": [source]}}
    assert plan.unplaced == [] and plan.report.jobs_placed == 1


def test_an_ejection_chain_is_the_only_way() -> None:
    assert oracle_min_moves(CHAIN, ["big"]) == 2  # no single move does it
    plan = room(CHAIN, ["big"])
    assert moves(plan) == [("d", "n1", "n2"), ("a", "n0", "n1")]
    assert [len(w) for w in plan.waves] == [1, 1]  # d leaves n1 before a arrives (make-before-break)
    assert plan.placements == [Placement(pod="big", node="n0")]


def test_no_moves_when_the_job_already_fits() -> None:
    c = cluster([("n0", 8), ("n1", 8)], [{"name": "a", "gpus": 4, "node": "n0"}, {"name": "p", "gpus": 8}])
    plan = room(c, ["p"])
    assert plan.waves == [] and plan.placements == [Placement(pod="p", node="n1")]
    assert plan.report.reason == "every named job that starts fits without moves"


def test_a_required_job_gets_a_switch_cleared() -> None:
    plan = room(REQUIRED, ["j"])
    assert sorted(m[:2] for m in moves(plan)) == [("a", "s1-0"), ("b", "s1-1")]  # to s2, around the locked pods
    assert {p.node for p in plan.placements} == {"s1-0", "s1-1"} and len(plan.placements) == 2
    assert plan.metrics.per_job["j"] == {"placed": True, "moves": 2, "gpus_moved": 4.0, "nodes": ["s1-0", "s1-1"]}


def test_budgets_are_honoured_and_a_job_beyond_them_is_unplaced() -> None:
    plan = room(REQUIRED, ["j"], same_asw=True)  # a and b cannot leave s1; s2 is locked
    assert plan.waves == [] and plan.placements == [] and [u.job for u in plan.unplaced] == ["j"]
    assert plan.unplaced[0].reason.endswith(
        "has room for 1 of its 2 pod(s) of 8 GPU(s), 1 CPUs, 0 GiB (2 if its pods could leave it, which under same_asw they cannot)"
    )
    wide = REQUIRED.model_copy(update={"nodes": [*REQUIRED.nodes, REQUIRED.nodes[0].model_copy(update={"name": "s1-2"})]})
    plan = room(wide, ["j"], same_asw=True)  # a third, empty node in s1: a joins b, the job takes the two others
    assert moves(plan) == [("a", "s1-0", "s1-1")] and {p.node for p in plan.placements} == {"s1-0", "s1-2"}
    assert room(ONE_MOVE, ["big"], max_moves=0).unplaced[0].job == "big"
    assert room(CHAIN, ["big"], max_moves=1).placements == []


def test_locked_pods_never_move() -> None:
    c = cluster(
        [("n0", 8), ("n1", 8)], [{"name": "a", "gpus": 4, "node": "n0", "locked": True}, {"name": "b", "gpus": 4, "node": "n1"}, {"name": "big", "gpus": 8}]
    )
    plan = room(c, ["big"])
    assert moves(plan) == [("b", "n1", "n0")] and plan.placements == [Placement(pod="big", node="n1")]


def test_a_job_that_cannot_fit_anywhere_gets_its_reason_without_search() -> None:
    nodes = [(f"s{s}-{k}", 8, f"s{s}") for s in range(125) for k in range(8)]
    pods = [{"name": f"r{i}", "gpus": 1, "node": name} for i, (name, _, _) in enumerate(nodes)]
    pods += [{"name": f"j-{i}", "job": "j", "gpus": 8} for i in range(9)]  # 9 nodes under one switch: no switch has 9
    c = cluster(nodes, pods, [{"name": "j", "topology": {"level": "asw", "mode": "required"}}])
    started = time.perf_counter()
    plan = room(c, ["j"])
    assert time.perf_counter() - started < 2.0  # 1,000 nodes: state, reason, metrics and validation
    assert plan.waves == [] and plan.placements == []
    (unplaced,) = plan.unplaced
    assert unplaced.reason.startswith(
        "the job requires one asw; even with every movable pod moved away the roomiest asw (asw:s0) has room for 8 of its 9 pod(s) of 8 GPU(s)"
    )


def test_two_jobs_are_served_largest_first_and_the_first_placed_never_moves() -> None:
    c = cluster(
        [("n0", 8), ("n1", 8), ("n2", 8)],
        [{"name": "a", "gpus": 4, "node": "n0"}, {"name": "b", "gpus": 4, "node": "n1"}, {"name": "small", "gpus": 4}, {"name": "big", "gpus": 8}],
    )
    plan = room(c, ["small", "big"])
    assert {p.pod for p in plan.placements} == {"small", "big"} and plan.report.jobs_placed == 2
    assert list(plan.metrics.per_job) == ["small", "big"]


def test_same_input_and_seed_give_the_same_plan() -> None:
    assert room(CHAIN, ["big"], seed=3).model_dump(exclude={"report"}) == room(CHAIN, ["big"], seed=3).model_dump(exclude={"report"})


# ----------------------------------------------------------------------------------------------
# The validator checks the placements on the end state
# ----------------------------------------------------------------------------------------------


def test_the_validator_refuses_placements_that_break_the_rules_after_the_last_wave() -> None:
    plan = room(ONE_MOVE, ["big"])
    wrong = plan.model_copy(update={"placements": [Placement(pod="big", node="n1")]})  # n1 is full after the move
    assert [v.kind for v in validate(ONE_MOVE, wrong)] == [rules.OVER_CAPACITY]
    running = plan.model_copy(update={"placements": [Placement(pod="b", node="n0")]})
    assert [v.kind for v in validate(ONE_MOVE, running)] == ["pod_not_pending"]
    split = room(REQUIRED, ["j"]).model_copy(update={"placements": [Placement(pod="j-0", node="s1-0")]})
    assert "gang_incomplete" in [v.kind for v in validate(REQUIRED, split)]


# ----------------------------------------------------------------------------------------------
# Brute force: every sequence of up to 3 single legal moves (make-before-break), rules/ only
# ----------------------------------------------------------------------------------------------


def test_the_heuristic_never_beats_the_brute_force_and_finds_a_plan_when_one_exists() -> None:
    found = missed = 0
    for seed in range(120):
        c = tiny_cluster(seed)
        best = oracle_min_moves(c, ["j"])
        plan = room(c, ["j"])
        placed = bool(plan.placements)
        if placed:
            # measured node choice: the brute force's minimum on every one of these (seed 249 is the
            # first of 0-599 where it is not; the estimate alone missed it on 167, 175 and 6 more)
            assert best is not None and len(plan.moves()) == best, seed
            end = apply_plan(c, plan)
            assert {p.pod for p in plan.placements} == {p.name for p in c.pods if p.job == "j"}
            assert all(end.pods[k].node is not None for k, p in enumerate(c.pods) if p.node is not None)
        if best is not None:
            found += 1
            missed += not placed
        else:
            assert not placed or len(plan.moves()) > 3, seed
    assert found >= 40 and missed == 0, (found, missed)


# n0's one pod (8 GPUs) fits nowhere now: clearing n0 is one eviction but five moves (e0's four pods
# out first, then it); n1's two 2-GPU pods each fit on d0 or d1 as they stand: two moves
CHOICE = cluster(
    [("n0", 8), ("n1", 8), ("d0", 8), ("d1", 8), ("e0", 8)],
    [
        {"name": "whole", "gpus": 8, "node": "n0"},
        {"name": "l", "gpus": 2, "node": "n1", "locked": True},
        *[{"name": f"s{i}", "gpus": 2, "node": "n1"} for i in range(2)],
        {"name": "c", "gpus": 4, "node": "d0", "locked": True},
        {"name": "e", "gpus": 4, "node": "d1", "locked": True},
        *[{"name": f"f{i}", "gpus": 2, "node": "e0"} for i in range(4)],
        {"name": "big", "gpus": 6},
    ],
)


def test_the_node_chosen_is_the_one_whose_pods_relocate_in_fewest_moves() -> None:
    plan = room(CHOICE, ["big"])
    assert plan.placements == [Placement(pod="big", node="n1")] and sorted(m[0] for m in moves(plan)) == ["s0", "s1"]
    assert oracle_min_moves(CHOICE, ["big"]) == 2


# ----------------------------------------------------------------------------------------------
# Pods bound to their switch: the filter counts them, the heuristic rehomes them inside it
# ----------------------------------------------------------------------------------------------

# s1 could hold a 2-node job if t-0 and t-1 left, but t is required under one asw: they stay in s1,
# where only s1-0 and s1-1 can hold an 8-GPU pod. s2's nodes are half taken by locked pods.
HELD = cluster(
    [("s1-0", 8, "s1"), ("s1-1", 8, "s1"), ("s1-2", 8, "s1"), ("s2-0", 8, "s2"), ("s2-1", 8, "s2")],
    [
        {"name": "t-0", "job": "t", "gpus": 8, "node": "s1-0"},
        {"name": "t-1", "job": "t", "gpus": 8, "node": "s1-1"},
        {"name": "l-0", "gpus": 4, "node": "s1-2", "locked": True},
        {"name": "l-1", "gpus": 4, "node": "s2-0", "locked": True},
        {"name": "l-2", "gpus": 4, "node": "s2-1", "locked": True},
        {"name": "j-0", "job": "j", "gpus": 8},
        {"name": "j-1", "job": "j", "gpus": 8},
    ],
    [{"name": "t", "topology": {"level": "asw", "mode": "required"}}, {"name": "j", "topology": {"level": "asw", "mode": "required"}}],
)


def test_pods_of_a_switch_bound_job_count_against_its_switch() -> None:
    started = time.perf_counter()
    plan = room(HELD, ["j"])
    assert plan.placements == [] and plan.waves == []
    assert plan.unplaced[0].reason == (
        "the job requires one asw; even with every movable pod moved away the roomiest asw (asw:s1) has room for 0 of its "
        "2 pod(s) of 8 GPU(s), 1 CPUs, 0 GiB (2 if its pods of jobs required under one asw could leave it, which they cannot)"
    )
    assert not end_state_holds(HELD, "j")
    assert time.perf_counter() - started < 1.0
    spare = [HELD.nodes[0].model_copy(update={"name": f"{a}-9", "asw": a}) for a in ("s2", "s3")]  # one empty node each
    loose = HELD.jobs[0].model_copy(update={"topology": None})
    free = HELD.model_copy(update={"jobs": [loose, HELD.jobs[1]], "nodes": [*HELD.nodes, *spare]})  # t not required: it may go to s2
    assert end_state_holds(free, "j") and len(room(free, ["j"]).moves()) == 2


def test_a_bound_pod_is_rehomed_inside_its_switch_and_the_others_anywhere() -> None:
    # the job needs s1-0 and s1-1; b (bound to s1) can only go to s1-2, once c leaves it for s2
    c = cluster(
        [("s1-0", 8, "s1"), ("s1-1", 8, "s1"), ("s1-2", 8, "s1"), ("s2-0", 8, "s2")],
        [
            {"name": "b-0", "job": "b", "gpus": 4, "node": "s1-0"},
            {"name": "b-1", "job": "b", "gpus": 4, "node": "s1-2", "locked": True},
            {"name": "a", "gpus": 2, "node": "s1-1"},
            {"name": "c", "gpus": 4, "node": "s1-2"},
            {"name": "j-0", "job": "j", "gpus": 8},
            {"name": "j-1", "job": "j", "gpus": 8},
        ],
        [{"name": "b", "topology": {"level": "asw", "mode": "required"}}, {"name": "j", "topology": {"level": "asw", "mode": "required"}}],
    )
    plan = room(c, ["j"])
    assert sorted(moves(plan)) == [("a", "s1-1", "s2-0"), ("b-0", "s1-0", "s1-2"), ("c", "s1-2", "s2-0")]
    assert {p.node for p in plan.placements} == {"s1-0", "s1-1"}
    assert oracle_min_moves(c, ["j"]) == 3


# ----------------------------------------------------------------------------------------------
# Property: every plan replays legally; a refusal is given where no end state holds the job
# ----------------------------------------------------------------------------------------------


def end_state_holds(c: Cluster, name: str, same_asw: bool = False) -> bool:
    """Brute force over end states (GPUs as amounts, so GPU shares never pack worse than they can,
    CPUs, memory, switches and spines only: a relaxation of the rules): can the pending pods of
    ``name`` (``min_available`` of them when set) start once the movable pods are put anywhere they fit, each pod of a
    required job staying in its domain (a move out would break the job mid-way), every pod in its
    switch under ``same_asw``?"""
    nodes = list(c.nodes)
    jobs = {j.name: j for j in c.jobs}
    where = {n.name: k for k, n in enumerate(nodes)}
    left = [[float(n.gpus), n.cpus, n.memory_gib] for n in nodes]
    movable = []
    for pod in c.pods:
        if pod.node is None:
            continue
        if pod.locked:
            for r, used in enumerate((pod.gpus, pod.cpus, pod.memory_gib)):
                left[where[pod.node]][r] -= used
            continue
        home = nodes[where[pod.node]]
        job = jobs.get(pod.job)
        levels = ["asw"] * same_asw + ([job.topology.level] if job is not None and job.topology is not None and job.topology.mode == "required" else [])
        allowed = [k for k, n in enumerate(nodes) if all(rules.topology_domain(n, lv) == rules.topology_domain(home, lv) for lv in levels)]
        movable.append(((pod.gpus, pod.cpus, pod.memory_gib), allowed))
    movable.sort(key=lambda m: -m[0][0])
    job = jobs[name]
    pending = [p for p in c.pods if p.node is None and p.job == name]
    pending = pending[: rules.gang_need(job.min_available, len(pending), 0)]  # a gang minimum starts the job
    shape = (pending[0].gpus, pending[0].cpus, pending[0].memory_gib)

    def pack(i: int) -> bool:
        if i == len(movable):
            return True
        size, allowed = movable[i]
        for k in allowed:
            if all(left[k][r] >= size[r] - 1e-9 for r in range(3)):
                for r in range(3):
                    left[k][r] -= size[r]
                ok = pack(i + 1)
                for r in range(3):
                    left[k][r] += size[r]
                if ok:
                    return True
        return False

    for chosen in itertools.combinations_with_replacement(range(len(nodes)), len(pending)):
        if not rules.job_topology_ok(job, [nodes[k] for k in chosen]):
            continue
        for k in chosen:
            for r in range(3):
                left[k][r] -= shape[r]
        ok = all(min(row) >= -1e-9 for row in left) and pack(0)
        for k in chosen:
            for r in range(3):
                left[k][r] += shape[r]
        if ok:
            return True
    return False


@st.composite
def held_clusters(draw) -> tuple[Cluster, bool, int | None]:
    """Up to 5 nodes under 3 switches (2 spines); running pods (GPU shares among them), some locked,
    some in jobs required under their switch or spine; one pending job of 1-3 pods (whole GPUs or
    shares), maybe with a gang minimum. With the same_asw flag and a move budget."""
    switches = {"s0": "sp0", "s1": "sp0", "s2": "sp1"}
    nodes = []
    for k in range(draw(st.integers(3, 6))):
        asw = draw(st.sampled_from(sorted(switches)))
        gpus = 8 if k == 0 else draw(st.sampled_from([4, 6, 8]))  # one node could hold any pending pod
        nodes.append({"name": f"n{k}", "gpus": gpus, "cpus": 32, "memory_gib": 256, "asw": asw, "spine": switches[asw]})
    pods = []
    for node in nodes:
        free, free_cpus = node["gpus"], node["cpus"]
        for i in range(5):  # mostly full nodes: room has to be made
            gpus = draw(st.sampled_from([1, 2, 2, 3, 4, 8, 0.5, 0.3]))
            cpus = draw(st.sampled_from([1, 8]))
            if gpus > free or cpus > free_cpus or draw(st.integers(0, 3)) == 0:
                continue  # the snapshot stays consistent: its nodes hold their pods (five 8-CPU pods would not fit 32 CPUs)
            free -= gpus
            free_cpus -= cpus
            bound = draw(st.sampled_from([None, None, "asw", "spine"]))
            job = {None: None, "asw": f"a-{node['asw']}", "spine": f"s-{node['spine']}"}[bound]
            pods.append(
                {
                    "name": f"{node['name']}-{i}",
                    "gpus": gpus,
                    "cpus": cpus,
                    "memory_gib": 16,
                    "node": node["name"],
                    "locked": draw(st.booleans()) and draw(st.booleans()),
                    **({"job": job} if job else {}),
                }
            )
    shape = {"gpus": draw(st.sampled_from([2, 3, 4, 8, 8, 0.5])), "cpus": draw(st.sampled_from([1, 16])), "memory_gib": 64}
    count = draw(st.integers(1, 3))
    pods += [{"name": f"j-{i}", "job": "j", **shape} for i in range(count)]
    level = draw(st.sampled_from([None, "asw", "spine"]))
    least = draw(st.sampled_from([None, None, *range(1, count + 1)]))
    jobs = [{"name": "j", **({"topology": {"level": level, "mode": "required"}} if level else {}), **({"min_available": least} if least else {})}]
    jobs += [{"name": f"a-{a}", "topology": {"level": "asw", "mode": "required"}} for a in switches]
    jobs += [{"name": f"s-{s}", "topology": {"level": "spine", "mode": "required"}} for s in set(switches.values())]
    snapshot = Cluster.model_validate({"nodes": nodes, "pods": pods, "jobs": jobs})
    assert consistency_problems(snapshot) == [], consistency_problems(snapshot)  # what a loaded snapshot is
    return snapshot, draw(st.booleans()) and draw(st.booleans()), draw(st.sampled_from([None, None, 1, 3]))


def replay(c: Cluster, plan: DefragPlan, name: str) -> None:
    """Every move legal when made (make-before-break, rules via ``ClusterState.fits``), no locked pod
    moved, pending pods of ``name`` (all, or at least ``min_available``) placed once each where they
    fit after the last move."""
    state = ClusterState(c)
    for move in plan.moves():
        p, n = state.pod_index[move.pod], state.node_index[move.to]
        assert not c.pods[p].locked and state.node_names[state.pod_node[p]] == move.from_
        assert state.fits(p, n), move
        state.move(p, n)
    placed = [state.pod_index[p.pod] for p in plan.placements]
    pending = [i for i, p in enumerate(c.pods) if p.node is None and p.job == name]
    job = {j.name: j for j in c.jobs}[name]
    assert len(set(placed)) == len(placed) and set(placed) <= set(pending)
    assert len(placed) >= rules.gang_need(job.min_available, len(pending), 0)  # the whole gang, or its minimum
    for p in plan.placements:
        q, n = state.pod_index[p.pod], state.node_index[p.node]
        assert state.fits(q, n), p
        state.place(q, n)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(held_clusters())
def test_every_plan_replays_and_a_job_no_end_state_holds_is_refused_with_a_reason(case: tuple[Cluster, bool, int | None]) -> None:
    c, same_asw, max_moves = case
    plan = room(c, ["j"], same_asw=same_asw, max_moves=max_moves)  # the validator too, with the limits
    holds = end_state_holds(c, "j", same_asw)
    if plan.placements:
        assert holds
        replay(c, plan, "j")
        assert max_moves is None or len(plan.moves()) <= max_moves
        return
    (unplaced,) = plan.unplaced
    assert unplaced.job == "j" and unplaced.reason
    proof = "even with every movable pod moved away" in unplaced.reason
    assert proof or "not a proof that none exists" in unplaced.reason
    if proof:  # and sound: a proof is only given where no end state holds the job
        assert not holds, unplaced.reason


# ----------------------------------------------------------------------------------------------
# Bad input: exit 2 on the command line naming the option
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["nope"], "unknown job or pod 'nope'"),
        (["a"], "pod 'a' is already running on node 's1-0'"),
        (["j-0"], "pod 'j-0' belongs to job 'j'; name the job"),
        (["empty"], "job 'empty' has no pending pod"),
        (["run"], "job 'run' is already running"),
        (["j", "j"], "'j' is named twice"),
    ],
)
def test_bad_names_are_refused_naming_them(names: list[str], message: str) -> None:
    c = REQUIRED.model_copy(
        update={
            "jobs": [*REQUIRED.jobs, *Cluster.model_validate({"nodes": [], "jobs": [{"name": "empty"}, {"name": "run"}]}).jobs],
            "pods": [*REQUIRED.pods, REQUIRED.pods[0].model_copy(update={"name": "r0", "job": "run"})],
        }
    )
    with pytest.raises(PlanOptionError) as err:
        plan_defrag(c, DefragOptions(make_room=names))
    assert err.value.field == "make_room" and message in str(err.value)


def test_make_room_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(CHAIN.model_dump_json())
    ok = runner.invoke(app, ["defrag", str(path), "--make-room", "big"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["placements"] == [{"pod": "big", "node": "n0", "gpu_indexes": None}]
    for args, named in (
        (["--make-room", "nope"], "--make-room: unknown job or pod 'nope'"),
        (["--make-room", "a"], "--make-room: pod 'a' is already running on node 'n0'"),
        (["--make-room", "big", "--method", "hybrid"], "--make-room: method 'hybrid' does not use it"),
        (["--make-room", "big", "--depth", "2"], "--depth: make_room does not use it"),
    ):
        bad = runner.invoke(app, ["defrag", str(path), *args])
        assert bad.exit_code == 2 and named in bad.output, bad.output
    table = runner.invoke(app, ["defrag", str(path), "--make-room", "big", "--format", "table"])
    assert table.exit_code == 0 and "Make room: named jobs" in table.stdout and "n0" in table.stdout, table.output


# ----------------------------------------------------------------------------------------------
# Over HTTP: POST /v1/defrag with options.make_room
# ----------------------------------------------------------------------------------------------


def test_make_room_over_http_plans_valid_placements_and_refuses_bad_names(tmp_path: Path) -> None:
    refused = [
        ({"make_room": ["nope"]}, "options.make_room: unknown job or pod 'nope'"),
        ({"make_room": ["big"], "rounds": 2}, "make_room does not use it"),
    ]
    plan = plan_over_http(tmp_path, CHAIN, {"make_room": ["big"]}, refused)
    assert plan.placements == [Placement(pod="big", node="n0")]
    assert validate(CHAIN, plan) == []


def test_a_share_bound_to_its_switch_may_fill_a_locked_shares_device() -> None:
    """Found by the property above: under same_asw a movable 0.5-GPU pod can join a locked 0.5 share on
    its device, so the switch's other pods leave room for both 4-GPU pods of j (n0-4 -> n0 as n1-3 moves);
    counting that device as taken claimed 'even with every movable pod moved away ... room for 0'."""
    c = Cluster.model_validate_json(
        '{"nodes":[{"name":"n0","gpus":8,"cpus":32,"memory_gib":256,"asw":"s1","spine":"sp0"},'
        '{"name":"n1","gpus":8,"cpus":32,"memory_gib":256,"asw":"s1","spine":"sp0"},'
        '{"name":"n2","gpus":4,"cpus":32,"memory_gib":256,"asw":"s0","spine":"sp0"}],'
        '"pods":[{"name":"n0-0","node":"n0","gpus":0.5,"cpus":1,"memory_gib":16},{"name":"n0-2","node":"n0","gpus":1,"cpus":1,"memory_gib":16},'
        '{"name":"n0-3","node":"n0","gpus":0.5,"cpus":1,"memory_gib":16,"locked":true},{"name":"n0-4","node":"n0","gpus":1,"cpus":1,"memory_gib":16},'
        '{"name":"n1-0","node":"n1","gpus":3,"cpus":1,"memory_gib":16},{"name":"n1-3","node":"n1","gpus":1,"cpus":1,"memory_gib":16},'
        '{"name":"n1-4","node":"n1","gpus":1,"cpus":1,"memory_gib":16},'
        '{"name":"j-0","job":"j","gpus":4,"cpus":1,"memory_gib":64},{"name":"j-1","job":"j","gpus":4,"cpus":1,"memory_gib":64}],'
        '"jobs":[{"name":"j","topology":{"level":"asw","mode":"required"}}]}'
    )
    assert end_state_holds(c, "j", True)
    plan = room(c, ["j"], same_asw=True, max_moves=None)
    assert plan.placements or "even with every movable pod moved away" not in plan.unplaced[0].reason
