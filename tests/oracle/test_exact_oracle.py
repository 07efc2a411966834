"""The planner's proofs checked against an independent oracle (``tests/support/defrag_oracle.py``) on tiny snapshots.

``status: optimal``, ``bound``, ``gap``, ``lexicographic_optimal``, ``moves_bound`` and the budgets
(``max_moves``, ``max_moves_per_node``, ``same_asw``) are claims. The oracle enumerates every
sequence of single legal moves, so on snapshots of at most 4 nodes and 5 movable pods it knows the
true lexicographic optimum (most empty nodes, then fewest moves, then fewest GPUs moved) under the
same budgets, and every plan is replayed wave by wave by the oracle's own make-before-break replay.

First the oracle itself is pinned on hand-checked snapshots; then hand reproductions of claims the
planner has got wrong; then property tests over random tiny snapshots whose requests (1/3 GPU,
0.3 GiB, ...) do not convert exactly to the integer units a solver model may use: the oracle
against brute force over one-wave plans, and the exact, hybrid, auto and compare methods against
the oracle.
"""

from __future__ import annotations

import itertools
import json
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings, target
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.cluster import Cluster
from planner.engine import PlanOptionError, plan_defrag
from planner.plans import DefragComparison, DefragPlan
from planner.snapshot import parse_cluster
from tests.support import defrag_oracle as oracle
from tests.support.clusters import make_cluster, node, pod
from tests.support.defrag_claims import Budgets, assert_budgets_honoured, assert_comparison_claims_true, assert_plan_claims_true, note_request
from tests.support.defrag_oracle import Reachable, empty_nodes, gpus_moved, replay
from tests.support.tiny_snapshots import HEALTH, THIRD, budgets_strategy, snapshots, topology_cluster

best_plan = partial(oracle.best_plan, pools=False)
"""The hand-made snapshots below cross GPU models on purpose: their oracle has no pools."""
explore = partial(oracle.explore, pools=False)


# ----------------------------------------------------------------------------------------------
# Hand snapshots (the topology snapshot, which other tests share, is in tests/support/tiny_snapshots.py)
# ----------------------------------------------------------------------------------------------

SNAPSHOT_CHAIN = json.dumps(
    {
        "version": 1,
        "nodes": [
            {"name": "n0", "gpus": 2, "cpus": 4, "memory_gib": 16, "asw": "a", "gpu_model": "A"},
            {"name": "n1", "gpus": 1, "cpus": 4, "memory_gib": 16, "asw": "a", "gpu_model": "A"},
            {"name": "n2", "gpus": 4, "cpus": 8, "memory_gib": 32, "asw": "a", "gpu_model": "B"},
            {"name": "n3", "gpus": 1, "cpus": 4, "memory_gib": 16, "asw": "a", "gpu_model": "B"},
        ],
        "pods": [
            {"name": "p0", "gpus": 1, "cpus": 4, "memory_gib": 16, "node": "n3"},
            {"name": "p1", "gpus": 2, "cpus": 2, "memory_gib": 4, "anti_affinity": ["g"], "node": "n0"},
            {"name": "p2", "gpus": 1, "cpus": 2, "memory_gib": 4, "node": "n2"},
            {"name": "p3", "gpus": 2, "cpus": 1, "memory_gib": 16, "node": "n2"},
        ],
        "jobs": [],
    }
)
"""Snapshot 1: n1 starts empty; emptying n3 as well needs p2 to step aside to n1 and come back."""


def chain_cluster() -> Cluster:
    return parse_cluster(SNAPSHOT_CHAIN)


def thirds_cluster() -> Cluster:
    """Three shares of 1/3 (as the float 0.333...): a and b on n0, c on n1; all fit one device."""
    nodes = [node("n0", gpus=1, cpus=8, memory_gib=64), node("n1", gpus=1, cpus=8, memory_gib=64)]
    return make_cluster(nodes, [pod("a", "n0", THIRD), pod("b", "n0", THIRD), pod("c", "n1", THIRD)])


def memory_cluster(other_memory_gib: float) -> Cluster:
    """n0's 1 GiB is filled exactly by pinned pods of 0.3, 0.3 and 0.4 GiB; d and e sit alone on n1, n2.

    With ``other_memory_gib`` 0, d and e may join n0 (it has GPUs and CPUs to spare), with 1 they cannot.
    """
    nodes = [
        {"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 1, "gpu_model": "X"},
        {"name": "n1", "gpus": 8, "cpus": 64, "memory_gib": 64},
        {"name": "n2", "gpus": 8, "cpus": 64, "memory_gib": 64},
    ]
    pinned = [pod(name, "n0", 1, memory_gib=gib, gpu_models=["X"]) for name, gib in (("a", 0.3), ("b", 0.3), ("c", 0.4))]
    free = [pod("d", "n1", 1, memory_gib=other_memory_gib), pod("e", "n2", 1, memory_gib=other_memory_gib)]
    return make_cluster(nodes, pinned + free)


def two_switch_cluster() -> Cluster:
    """Two 8-GPU nodes under different switches: x (1 GPU) on n0 under a, y (2 GPUs) on n1 under b."""
    return make_cluster([node("n0", asw="a"), node("n1", asw="b")], [pod("x", "n0", 1), pod("y", "n1", 2)])


# ----------------------------------------------------------------------------------------------
# The oracle itself, on hand-checked answers
# ----------------------------------------------------------------------------------------------


def test_oracle_needs_five_moves_to_empty_a_second_node_in_the_chain_snapshot() -> None:
    # Only n0 (2 GPUs) and n2 (4) can hold all 6 GPUs, and the CPUs and memory force p3 onto n0 and
    # p0, p1, p2 onto n2. p1 and p3 can only swap once n2 has room, so p2 must step aside to n1 and
    # come back: p0, p1, p3 once and p2 twice is 5 moves, 2+2+1+1+1 = 7 GPUs.
    best = best_plan(chain_cluster())
    assert (best.empties, best.moves, best.gpus_moved) == (2, 5, 7.0)
    assert best.end == {"p0": "n2", "p1": "n2", "p2": "n2", "p3": "n0"}
    reach = explore(chain_cluster())
    one = reach.fewest(1)
    assert one is not None and one.moves == 0  # n1 is empty from the start
    assert reach.fewest(3) is None


def test_oracle_on_the_topology_snapshot_under_each_budget() -> None:
    # p0 (job j0, required asw) never leaves switch b; p1 runs only on model A (n1, n3); n3's 16 GiB
    # holds one 16 GiB pod and nothing else. The only second empty node: p0 -> n0 and p1, p2 -> n1,
    # which needs p2 parked on n2 (switch a) first: p2->n2, p0->n0, p1->n1, p2->n1 = 4 moves, 5 GPUs.
    free = best_plan(topology_cluster())
    assert (free.empties, free.moves, free.gpus_moved) == (2, 4, 5.0)
    assert free.end == {"p0": "n0", "p1": "n1", "p2": "n1"}
    capped = best_plan(topology_cluster(), max_moves=3)
    assert (capped.empties, capped.moves) == (1, 0)  # n2 is empty from the start
    assert best_plan(topology_cluster(), same_asw=True).empties == 1  # p2 cannot park on n2
    assert best_plan(topology_cluster(), max_moves_per_node=1).empties == 1  # parking touches n2 twice
    assert best_plan(topology_cluster(), max_moves=4).moves == 4


def test_oracle_packs_three_float_thirds_on_one_device() -> None:
    best = best_plan(thirds_cluster())
    assert (best.empties, best.moves) == (1, 1)
    assert best.gpus_moved == THIRD


def test_oracle_on_the_exactly_full_memory_snapshot() -> None:
    # d and e with 1 GiB cannot join n0 (its 1 GiB is full), so one of them joins the other.
    best = best_plan(memory_cluster(1))
    assert (best.empties, best.moves, best.gpus_moved) == (1, 1, 1.0)
    # without memory they both fit n0 beside a, b, c: two empty nodes in two moves
    best = best_plan(memory_cluster(0))
    assert (best.empties, best.moves, best.gpus_moved) == (2, 2, 2.0)
    assert best.end["d"] == best.end["e"] == "n0"


def test_oracle_honours_switches_and_per_node_budgets() -> None:
    assert (best_plan(two_switch_cluster()).empties, best_plan(two_switch_cluster()).moves) == (1, 1)
    assert best_plan(two_switch_cluster()).gpus_moved == 1.0  # x moves, not y
    assert best_plan(two_switch_cluster(), same_asw=True).empties == 0
    assert best_plan(two_switch_cluster(), max_moves_per_node=0).empties == 0
    assert best_plan(two_switch_cluster(), max_moves=0).empties == 0


def test_replay_rejects_a_wave_that_only_fits_as_a_sequence() -> None:
    # p2 -> n1 then p1 -> n2 is legal; in one wave n2 would hold p2's old copy, p3 and p1: 5 GPUs.
    cluster = chain_cluster()
    sequence = {"waves": [[{"pod": "p2", "from": "n2", "to": "n1"}], [{"pod": "p1", "from": "n0", "to": "n2"}]]}
    assert replay(cluster, sequence).end["p1"] == "n2"
    squeezed = {"waves": [[{"pod": "p2", "from": "n2", "to": "n1"}, {"pod": "p1", "from": "n0", "to": "n2"}]]}
    with pytest.raises(AssertionError, match="needs 5 GPUs"):
        replay(cluster, squeezed)


def test_replay_rejects_a_required_job_changing_switch() -> None:
    cluster = topology_cluster()
    with pytest.raises(AssertionError, match="job j0"):
        replay(cluster, {"waves": [[{"pod": "p0", "from": "n1", "to": "n2"}]]})  # n2 fits p0, switch a does not


def test_replay_of_the_five_move_chain_empties_two_nodes() -> None:
    cluster = chain_cluster()
    steps = [("p2", "n2", "n1"), ("p1", "n0", "n2"), ("p3", "n2", "n0"), ("p0", "n3", "n2"), ("p2", "n1", "n2")]
    done = replay(cluster, {"waves": [[{"pod": p, "from": s, "to": d}] for p, s, d in steps]})
    assert empty_nodes(cluster, done.end) == 2 and gpus_moved(cluster, done.moves) == 7


# ----------------------------------------------------------------------------------------------
# Checking a plan's claims against the oracle (the checks are in tests/support/defrag_claims.py)
# ----------------------------------------------------------------------------------------------


def plan_for(cluster: Cluster, budgets: Budgets, method: str, **fields: Any) -> DefragPlan:
    plan = plan_defrag(cluster, budgets.options(method, **fields))
    assert isinstance(plan, DefragPlan)
    return plan


# ----------------------------------------------------------------------------------------------
# Hand reproductions of claims the planner must get right
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_exact_does_not_prove_one_empty_node_when_two_are_reachable(solver: str) -> None:
    cluster = chain_cluster()
    reach = explore(cluster)
    plan = plan_for(cluster, Budgets(), method="exact", solver=solver)
    report = plan.report
    assert report is not None and report.objective is not None
    assert report.bound is None or report.bound >= 2
    if report.objective < 2:
        assert report.status == "feasible"
    assert_plan_claims_true(cluster, plan, Budgets(), reach)


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize(
    "budgets, empties, moves",
    [(Budgets(max_moves=3), 1, 0), (Budgets(same_asw=True), 1, 0), (Budgets(), 2, 4)],
    ids=["max_moves=3", "same_asw", "free"],
)
def test_exact_claims_on_the_topology_snapshot_are_true(solver: str, budgets: Budgets, empties: int, moves: int) -> None:
    # (empties, moves): the optimum under the budgets, as worked out in the oracle's test above
    cluster = topology_cluster()
    plan = plan_for(cluster, budgets, method="exact", solver=solver)
    report = plan.report
    assert report is not None
    done = replay(cluster, plan)
    assert_budgets_honoured(cluster, done.moves, budgets)  # at most 3 moves; no pod changes switch
    assert report.status != "optimal" or report.objective == empties
    if (report.model_extra or {}).get("lexicographic_optimal"):
        assert (report.objective, report.moves) == (empties, moves)
    assert_plan_claims_true(cluster, plan, budgets, budgets.explore(cluster))


def test_hybrid_keeps_pods_under_their_switch_and_within_per_node_budgets() -> None:
    cluster = two_switch_cluster()
    same = plan_for(cluster, Budgets(same_asw=True), method="hybrid")
    assert [m.pod for m in same.moves()] == [], "x crossed from switch a to switch b under same_asw"
    frozen = plan_for(cluster, Budgets(max_moves_per_node=0), method="hybrid")
    assert frozen.moves() == [], "moves under max_moves_per_node=0"
    for budgets in (Budgets(same_asw=True), Budgets(max_moves_per_node=0), Budgets()):
        assert_plan_claims_true(cluster, plan_for(cluster, budgets, method="hybrid"), budgets, budgets.explore(cluster))


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_exact_packs_three_float_thirds_and_bounds_truthfully(solver: str) -> None:
    cluster = thirds_cluster()
    plan = plan_for(cluster, Budgets(), method="exact", solver=solver)
    report = plan.report
    assert report is not None
    assert report.objective == 1
    assert report.bound is not None and report.bound >= 1
    assert report.gap is not None and report.gap >= 0
    assert_plan_claims_true(cluster, plan, Budgets(), explore(cluster))


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize("other_memory_gib, optimum", [(1, 1), (0, 2)], ids=["d-e-1GiB", "d-e-no-memory"])
def test_exact_solves_the_exactly_full_memory_snapshot(solver: str, other_memory_gib: float, optimum: int) -> None:
    cluster = memory_cluster(other_memory_gib)
    plan = plan_for(cluster, Budgets(), method="exact", solver=solver)
    report = plan.report
    assert report is not None
    assert (report.status, report.objective) == ("optimal", optimum)
    assert_plan_claims_true(cluster, plan, Budgets(), explore(cluster))


def spread_cluster() -> Cluster:
    """Four 1-GPU pods spread over three 8-GPU nodes of one switch: a full repack moves at least two."""
    nodes = [node("n0", asw="a"), node("n1", asw="a"), node("n2", asw="a")]
    return make_cluster(nodes, [pod("a", "n0"), pod("b", "n1"), pod("c", "n2"), pod("d", "n2")])


def plan_or_refusal(cluster: Cluster, budgets: Budgets, method: str, option: str) -> DefragPlan | None:
    """The plan, or None when the planner refuses the request with an error naming ``option``."""
    try:
        return plan_for(cluster, budgets, method=method)
    except (PlanOptionError, ValidationError) as err:
        assert option in str(err), f"{method} refused the request without naming {option}: {err}"
        return None


@pytest.mark.parametrize("method", ["repack", "random", "descheduler"])
def test_baselines_never_cross_switches_under_same_asw(method: str) -> None:
    for cluster in (two_switch_cluster(), topology_cluster()):
        plan = plan_or_refusal(cluster, Budgets(same_asw=True), method, "same_asw")
        if plan is not None:
            assert_budgets_honoured(cluster, replay(cluster, plan).moves, Budgets(same_asw=True))


@pytest.mark.parametrize("method", ["repack", "random", "descheduler"])
@pytest.mark.parametrize(
    "budgets, option",
    [(Budgets(max_moves=1), "max_moves"), (Budgets(max_moves_per_node=1), "max_moves_per_node"), (Budgets(max_moves=0), "max_moves")],
    ids=["max_moves=1", "max_moves_per_node=1", "max_moves=0"],
)
def test_baselines_honour_move_budgets_or_refuse_them(method: str, budgets: Budgets, option: str) -> None:
    cluster = spread_cluster()
    plan = plan_or_refusal(cluster, budgets, method, option)
    if plan is not None:
        assert_budgets_honoured(cluster, replay(cluster, plan).moves, budgets)


# ----------------------------------------------------------------------------------------------
# Random tiny snapshots (the strategies are in tests/support/tiny_snapshots.py)
# ----------------------------------------------------------------------------------------------


def _aim(cluster: Cluster, reach: Reachable, plan: DefragPlan) -> None:
    """Steer generation towards snapshots where plans are hard to get right.

    Random tiny snapshots rarely need more than one move, and almost never a detour (a pod moved
    twice, or parked and moved on), the case where make-before-break routing and the move budgets
    interact; hypothesis's targeting climbs towards them, and towards plans short of the optimum.
    """
    best = reach.best()
    start = {p.name: p.node for p in cluster.pods}
    target(float(best.moves), label="oracle: fewest moves to the optimum")
    target(float(best.moves - sum(1 for p, at in best.end.items() if start[p] != at)), label="oracle: detour moves")
    if plan.report is not None:
        target(float(plan.report.moves), label="plan: moves")
        target(float(best.empties - (plan.report.objective or 0)), label="plan: empty nodes short of the optimum")


def _one_wave_plans(cluster: Cluster) -> list[list[tuple[str, str, str]]]:
    """Every plan of at most one wave: each movable pod stays or moves straight to another node."""
    movable = [p for p in cluster.pods if p.node is not None and not p.locked]
    names = [n.name for n in cluster.nodes]
    plans = []
    for ends in itertools.product(names, repeat=len(movable)):
        plans.append([(p.name, str(p.node), end) for p, end in zip(movable, ends) if end != p.node])
    return plans


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(cluster=snapshots, budgets=budgets_strategy)
def test_oracle_optimum_replays_and_no_one_wave_plan_beats_it(cluster: Cluster, budgets: Budgets) -> None:
    """The oracle's own optimal path is legal and as claimed, and brute force over one-wave plans
    (each of which is also a sequence of single moves) never finds a better one."""
    note_request(cluster, budgets)
    best = budgets.explore(cluster).best()
    done = replay(cluster, {"waves": [[{"pod": p, "from": s, "to": d}] for p, s, d in best.path]})
    assert_budgets_honoured(cluster, done.moves, budgets)
    assert {p: done.end[p] for p in best.end} == best.end
    assert (empty_nodes(cluster, done.end), len(done.moves), gpus_moved(cluster, done.moves)) == (
        best.empties,
        best.moves,
        best.gpus_exact,
    )
    pods, nodes = {p.name: p for p in cluster.pods}, {n.name: n for n in cluster.nodes}
    for moves in _one_wave_plans(cluster):
        try:
            end = replay(cluster, {"waves": [[{"pod": p, "from": s, "to": d} for p, s, d in moves]]}).end
            assert_budgets_honoured(cluster, moves, budgets)
            assert not budgets.pools or all(oracle.pool_allows(cluster, pods[p], nodes[s], nodes[d]) for p, s, d in moves)
        except AssertionError:
            continue
        score = (empty_nodes(cluster, end), -len(moves), -gpus_moved(cluster, moves))
        assert score <= (best.empties, -best.moves, -best.gpus_exact), f"one wave {moves} beats the oracle"


@settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(
    cluster=snapshots,
    budgets=budgets_strategy,
    solver=st.sampled_from(["cpsat", "highs"]),
    formulation=st.sampled_from(["auto", "pod", "class"]),
    lexicographic=st.sampled_from(["two-phase", "weighted"]),
)
def test_exact_claims_hold_against_the_oracle(cluster: Cluster, budgets: Budgets, solver: str, formulation: str, lexicographic: str) -> None:
    note_request(cluster, budgets, solver=solver, formulation=formulation, lexicographic=lexicographic)
    reach = budgets.explore(cluster)
    plan = plan_for(cluster, budgets, method="exact", solver=solver, formulation=formulation, lexicographic=lexicographic)
    _aim(cluster, reach, plan)
    assert_plan_claims_true(cluster, plan, budgets, reach)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(cluster=snapshots, budgets=budgets_strategy, method=st.sampled_from(["hybrid", "auto"]), solver=st.sampled_from(["cpsat", "highs"]))
def test_hybrid_and_auto_claims_hold_against_the_oracle(cluster: Cluster, budgets: Budgets, method: str, solver: str) -> None:
    note_request(cluster, budgets, method=method, solver=solver)
    reach = budgets.explore(cluster)
    plan = plan_for(cluster, budgets, method=method, solver=solver)
    _aim(cluster, reach, plan)
    assert_plan_claims_true(cluster, plan, budgets, reach)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(cluster=snapshots, budgets=budgets_strategy, solver=st.sampled_from(["cpsat", "highs"]))
def test_compare_claims_and_gap_hold_against_the_oracle(cluster: Cluster, budgets: Budgets, solver: str) -> None:
    note_request(cluster, budgets, method="compare", solver=solver)
    reach = budgets.explore(cluster)
    comparison = plan_defrag(cluster, budgets.options("compare", solver=solver))
    assert isinstance(comparison, DefragComparison)
    _aim(cluster, reach, comparison.exact)
    assert_comparison_claims_true(cluster, comparison, budgets, reach)
