"""Issue 40, part 3: defrag claims that must hold for the problem asked, ``move_once`` included.

Each snapshot is an audit input (``tests/data/repros``); the truth comes from the independent oracle
(``tests/support/defrag_oracle.py``: every sequence of single legal moves, each pod moved at most once under
``move_once``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.plans import DefragComparison, DefragPlan
from planner.snapshot import parse_cluster
from planner.validate.defrag import validate
from tests.support.defrag_claims import Budgets, assert_comparison_claims_true, assert_plan_claims_true
from tests.support.defrag_oracle import best_plan, replay
from tests.support.tiny_snapshots import topology_cluster

REPROS = Path(__file__).resolve().parents[1] / "data" / "repros"


def repro(name: str) -> Cluster:
    return parse_cluster((REPROS / name).read_text())


MOVE_ONCE = "claims-defrag-false-optimal-moveonce.json"


def test_the_oracle_on_the_move_once_snapshot() -> None:
    # with detours p8 parks on n0 and moves on: 2 empty nodes in 5 moves; moving each pod once,
    # p0 -> n3 (beside p7's 0.7 share) empties n0, and no plan empties two
    cluster = repro(MOVE_ONCE)
    free = best_plan(cluster)
    once = best_plan(cluster, move_once=True)
    assert (free.empties, free.moves) == (2, 5)
    assert (once.empties, once.moves, once.path) == (1, 1, [("p0", "n0", "n3")])


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize("method", ["exact", "auto"])
def test_exact_claims_are_about_the_move_once_plan_it_returns(method: str, solver: str) -> None:
    cluster = repro(MOVE_ONCE)
    budgets = Budgets()  # move_once, the default
    plan = plan_defrag(cluster, budgets.options(method, solver=solver, solver_workers=1))
    assert isinstance(plan, DefragPlan) and plan.report is not None
    assert_plan_claims_true(cluster, plan, budgets, budgets.explore(cluster))
    assert validate(cluster, plan, DefragOptions().limits(len(cluster.nodes))) == []
    assert (plan.report.objective, plan.report.moves) == (1, 1), "the exact method misses the 1-move plan"
    assert plan.report.status == "feasible"  # the bound (2) holds, but 1 is not proven the optimum


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_compare_claims_are_about_the_move_once_plans(solver: str) -> None:
    cluster = repro(MOVE_ONCE)
    budgets = Budgets()
    comparison = plan_defrag(cluster, budgets.options("compare", solver=solver, solver_workers=1))
    assert isinstance(comparison, DefragComparison)
    assert_comparison_claims_true(cluster, comparison, budgets, budgets.explore(cluster))


def test_trim_exact_moves_bound_is_about_the_plan_returned() -> None:
    cluster = repro(MOVE_ONCE)
    budgets = Budgets()
    plan = plan_defrag(cluster, budgets.options("heuristic", trim="exact", time_limit_s=10, solver_workers=1))
    assert isinstance(plan, DefragPlan) and plan.report is not None
    reach = budgets.explore(cluster)
    assert_plan_claims_true(cluster, plan, budgets, reach)
    extra = plan.report.model_extra or {}
    fewest = reach.fewest(int(plan.report.objective or 0))
    assert fewest is not None
    assert extra.get("moves_bound") is None or extra["moves_bound"] <= len(replay(cluster, plan).moves)
    if extra.get("move_minimal"):
        assert plan.report.moves == fewest.moves


def test_an_empty_move_once_plan_does_not_claim_no_node_could_be_vacated() -> None:
    # IPC vacated nodes here; only moving each pod once lost moves. The reason must not say otherwise.
    cluster = repro(MOVE_ONCE)
    plan = plan_defrag(cluster, DefragOptions(workers=1))
    assert plan.report is not None
    if plan.report.moves == 0:
        assert "no candidate node could be vacated" not in (plan.report.model_extra or {}).get("reason", "")
    assert plan.report.objective == 1  # the waves before IPC moves a pod again vacate n0


@pytest.mark.parametrize("method", ["exact", "auto"])
def test_an_empty_exact_plan_states_no_proof_it_does_not_have(method: str) -> None:
    # moving each pod once, the topology snapshot's second empty node is out of reach (p2 would
    # park on n2 and move on); the model's bound is 2, the plan empties 1 (n2, empty from the start)
    cluster = topology_cluster()
    budgets = Budgets()
    plan = plan_defrag(cluster, budgets.options(method, solver_workers=1))
    assert isinstance(plan, DefragPlan) and plan.report is not None
    assert_plan_claims_true(cluster, plan, budgets, budgets.explore(cluster))
    assert plan.report.moves == 0 and plan.report.status == "feasible"
    reason = (plan.report.model_extra or {})["reason"]
    assert "not proven" in reason and "ejection chains" not in reason, reason
