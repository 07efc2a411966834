"""The exact make-room model (defrag --make-room --method exact|compare): the brute force's minimum,
honest claims, restricted neighbourhoods, and refused options."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.engine import DefragOptions, plan_defrag
from planner.engine.defrag import PlanOptionError
from planner.models import makeroom as model
from planner.plans import DefragComparison, DefragPlan, Placement
from planner.validate.defrag import validate
from tests.support.defrag_over_http import plan_over_http
from tests.support.makeroom_clusters import CHAIN, ONE_MOVE, REQUIRED, cluster, tiny_cluster
from tests.support.makeroom_oracle import oracle_min_moves

runner = CliRunner()
SOLVE = {"time_limit_s": 5.0, "solver_workers": 1}


def exact(c, names: list[str], **options: object) -> DefragPlan:
    opts = DefragOptions(make_room=names, method="exact", **{**SOLVE, **options})
    plan = plan_defrag(c, opts)
    assert isinstance(plan, DefragPlan)
    assert validate(c, plan, opts.limits(len(c.nodes))) == []
    return plan


@pytest.mark.parametrize("solver", ["cpsat", "highs"])
def test_the_exact_move_count_is_the_brute_force_minimum_and_claimed_optimal(solver: str) -> None:
    found = 0
    for seed in range(60):
        c = tiny_cluster(seed)
        best = oracle_min_moves(c, ["j"])
        plan = exact(c, ["j"], solver=solver, **({"deterministic": True} if solver == "cpsat" else {}))
        if best is None:  # not within 3 moves: the model proves no plan at all on these clusters
            assert plan.placements == [] and plan.report.status == "infeasible", seed
            continue
        found += 1
        assert plan.report.status == "optimal" and plan.report.moves == best == plan.report.moves_bound, seed
        assert plan.report.restricted is False and plan.report.optimal_within_neighbourhood is True
        assert {p.pod for p in plan.placements} == {p.name for p in c.pods if p.job == "j"}
    assert found >= 20


def test_exact_uses_one_move_where_the_heuristic_uses_two() -> None:
    c = tiny_cluster(249)  # the one seed of 0-599 where the heuristic makes more moves than the brute force
    assert oracle_min_moves(c, ["j"]) == 1
    heuristic = plan_defrag(c, DefragOptions(make_room=["j"]))
    assert heuristic.report.moves == 2
    plan = exact(c, ["j"])
    assert plan.report.moves == 1 and plan.report.status == "optimal" and plan.metrics.per_job["j"]["moves"] == 1


def test_exact_finds_a_three_move_plan_the_heuristic_misses() -> None:
    c = tiny_cluster(414)
    assert plan_defrag(c, DefragOptions(make_room=["j"])).placements == []
    plan = exact(c, ["j"])
    assert plan.report.moves == 3 == oracle_min_moves(c, ["j"]) and plan.report.status == "optimal"


def test_the_chain_is_routed_into_make_before_break_waves() -> None:
    plan = exact(CHAIN, ["big"])
    assert [[(m.pod, m.from_, m.to) for m in w] for w in plan.waves] == [[("d", "n1", "n2")], [("a", "n0", "n1")]]
    assert plan.placements == [Placement(pod="big", node="n0")] and plan.report.method == "makeroom-exact"


def test_budgets_hold_and_a_proof_that_none_fits_them_is_infeasible() -> None:
    plan = exact(CHAIN, ["big"], max_moves=1)
    assert plan.waves == [] and plan.placements == [] and plan.report.status == "infeasible"
    assert plan.unplaced[0].reason == "proven: no plan starts it within the move budgets"
    assert exact(REQUIRED, ["j"], same_asw=True).report.status == "infeasible"
    spread = exact(REQUIRED, ["j"], max_moves_per_node=1)  # a and b may not both land on one node
    assert spread.report.status == "optimal" and sorted(m.to for m in spread.moves()) == ["s2-0", "s2-1"]


def test_a_required_job_lands_under_one_switch() -> None:
    plan = exact(REQUIRED, ["j"])
    assert {p.node for p in plan.placements} == {"s1-0", "s1-1"} and plan.report.moves == 2


def test_a_restricted_neighbourhood_is_stated_and_never_claimed_optimal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model, "MAX_PAIRS", 1)
    monkeypatch.setattr(model, "RESTRICTED_NODES", 2)
    full = [(f"x{k}", 8) for k in range(4)]  # each full with one movable 8-GPU pod: dearer to clear than n0
    c = cluster(
        [("n0", 8), ("n1", 8), ("n2", 8), *full], [*[p.model_dump() for p in CHAIN.pods], *[{"name": f"f{k}", "gpus": 8, "node": f"x{k}"} for k in range(4)]]
    )
    plan = exact(c, ["big"])
    r = plan.report
    assert r.restricted is True and "2 candidate nodes nearest to fitting" in r.restriction and r.movable_pods == 3
    assert r.status == "feasible" and r.optimal_within_neighbourhood is True and r.moves_bound is None and r.jobs_bound is None
    assert r.moves_bound_within_neighbourhood == 2
    assert r.moves_bound_within_neighbourhood == 2 and plan.placements == [Placement(pod="big", node="n0")]


def test_locked_pods_never_move_and_shares_stay_put() -> None:
    c = cluster(
        [("n0", 8), ("n1", 8)],
        [
            {"name": "a", "gpus": 4, "node": "n0", "locked": True},
            {"name": "b", "gpus": 4, "node": "n1"},
            {"name": "s", "gpus": 0.5, "node": "n0"},
            {"name": "big", "gpus": 4},
        ],
    )
    plan = exact(c, ["big"])
    assert plan.placements == [Placement(pod="big", node="n1")] and plan.waves == []
    assert plan.report.restricted is True and "GPU shares stay" in plan.report.restriction and plan.report.status == "feasible"


def test_compare_reports_both_plans() -> None:
    c = tiny_cluster(249)
    result = plan_defrag(c, DefragOptions(make_room=["j"], method="compare", **SOLVE))
    assert isinstance(result, DefragComparison)
    assert result.heuristic.report.method == "makeroom" and result.exact.report.method == "makeroom-exact"
    assert result.gap["heuristic_moves"] == 2 and result.gap["exact_moves"] == 1 and result.gap["moves_saved"] == 1
    assert result.gap["exact_status"] == "optimal" and result.gap["restricted"] is False


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "exact", "depth": 2}, "make_room does not use it with method 'exact'"),
        ({"method": "exact", "formulation": "pod"}, "make_room does not use it with method 'exact'"),
        ({"method": "compare", "force": True}, "make_room does not use it with method 'compare'"),
        ({"method": "heuristic", "time_limit_s": 3.0}, "make_room does not use it with method 'heuristic'"),
        ({"method": "hybrid"}, "method 'hybrid' does not use it"),
    ],
)
def test_options_the_method_would_ignore_are_refused(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DefragOptions(make_room=["big"], **options)


def test_a_job_of_gpu_shares_is_refused_by_the_exact_model() -> None:
    c = cluster([("n0", 8)], [{"name": "s", "gpus": 0.5}])
    with pytest.raises(PlanOptionError) as err:
        plan_defrag(c, DefragOptions(make_room=["s"], method="exact", **SOLVE))
    assert err.value.field == "method" and "whole-GPU pods" in str(err.value)


def test_exact_and_compare_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(CHAIN.model_dump_json())
    base = ["defrag", str(path), "--make-room", "big", "--time-limit", "5", "--solver-workers", "1"]
    ok = runner.invoke(app, [*base, "--method", "exact"])
    assert ok.exit_code == 0, ok.output
    plan = json.loads(ok.stdout)
    assert plan["report"]["status"] == "optimal" and plan["placements"][0]["node"] == "n0"
    both = runner.invoke(app, [*base, "--method", "compare"])
    assert both.exit_code == 0, both.output
    assert json.loads(both.stdout)["gap"]["exact_moves"] == 2
    table = runner.invoke(app, [*base, "--method", "compare", "--format", "table"])
    assert table.exit_code == 0, table.output
    assert "make room: jobs started heuristic 1, exact 1" in table.stdout and "Make room: named jobs" in table.stdout
    bad = runner.invoke(app, [*base, "--method", "exact", "--rounds", "2"])
    assert bad.exit_code == 2 and "--rounds: make_room does not use it with method 'exact'" in bad.output, bad.output


def test_exact_make_room_over_http(tmp_path: Path) -> None:
    options = {"make_room": ["big"], "method": "exact", **SOLVE}
    plan = plan_over_http(tmp_path, ONE_MOVE, options, [({**options, "depth": 2}, "make_room does not use it with method 'exact'")])
    assert plan.report.status == "optimal" and plan.report.moves == 1
    assert validate(ONE_MOVE, plan) == []


# the restricted neighbourhood (one candidate, one destination) is n0 and d0, where n0's 6-GPU pod
# cannot go: nothing starts in it. The heuristic clears n1 into d0 and d1 (2 moves, n1 and d1 outside
# it); with its nodes added the model finds that plan too. x0 (full, its pod nowhere to go) stays
# outside, so the neighbourhood is still restricted
OUTSIDE = cluster(
    [("n0", 8), ("n1", 8), ("d0", 8), ("d1", 8), ("x0", 8)],
    [
        {"name": "a", "gpus": 6, "node": "n0"},
        {"name": "f", "gpus": 8, "node": "x0"},
        {"name": "b1", "gpus": 4, "node": "n1"},
        {"name": "b2", "gpus": 4, "node": "n1"},
        {"name": "c", "gpus": 4, "node": "d0", "locked": True},
        {"name": "e", "gpus": 4, "node": "d1", "locked": True},
        {"name": "big", "gpus": 8},
    ],
)


def _restrict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model, "MAX_PAIRS", 1)
    monkeypatch.setattr(model, "RESTRICTED_NODES", 1)
    monkeypatch.setattr(model, "RESTRICTED_DESTINATIONS", 1)


def test_the_heuristics_nodes_join_a_restricted_neighbourhood(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.engine.makeroom import make_room_requests
    from planner.limits import MoveBudget
    from planner.state import ClusterState

    _restrict(monkeypatch)
    heuristic = plan_defrag(OUTSIDE, DefragOptions(make_room=["big"]))
    assert heuristic.placements == [Placement(pod="big", node="n1")] and heuristic.report.moves == 2
    state = ClusterState(OUTSIDE)
    hood = model.neighbourhood(state, make_room_requests(OUTSIDE, ["big"]), MoveBudget.of(state), model.MAX_PAIRS)
    assert hood.restricted and state.node_names.index("n1") not in hood.nodes  # the heuristic's plan lies outside it
    assert model.solve_make_room(state, make_room_requests(OUTSIDE, ["big"]), MoveBudget.of(state), "highs", 5.0, 1).placements == {}
    plan = exact(OUTSIDE, ["big"])
    r = plan.report
    assert plan.placements == [Placement(pod="big", node="n1")] and r.moves == 2 == heuristic.report.moves
    assert r.chosen == "exact" and r.hint_used is True and r.heuristic_moves == 2
    assert r.restricted is True and "2 more nodes the heuristic plan touches" in r.restriction and r.nodes == 4
    assert r.status == "feasible" and r.optimal_within_neighbourhood is True and r.moves_bound is None and r.jobs_bound is None


def test_the_heuristics_plan_is_returned_when_the_exact_plan_is_worse(monkeypatch: pytest.MonkeyPatch) -> None:
    _restrict(monkeypatch)
    real = model.solve_make_room

    def nothing(*args: object, **kwargs: object) -> model.Solution:  # an exact solve that found no plan
        solution = real(*args, **kwargs)
        solution.target, solution.placements, solution.status, solution.moves, solution.gpus_moved = {}, {}, "timeout", 0, 0.0
        return solution

    monkeypatch.setattr(model, "solve_make_room", nothing)
    plan = exact(OUTSIDE, ["big"])
    r = plan.report
    assert plan.placements == [Placement(pod="big", node="n1")] and r.moves == 2 and plan.metrics.per_job["big"]["moves"] == 2
    assert r.chosen == "heuristic" and "the heuristic's 1 with 2" in r.chosen_why and r.model_status == "timeout"
    assert r.status == "feasible" and r.optimal_within_neighbourhood is False and r.moves_bound is None


def test_the_solver_workers_are_at_most_the_free_cores_and_exact_with_deterministic() -> None:
    busy = model.busy_cores(0.05)
    assert busy is None or 0.0 <= busy <= (os.cpu_count() or 1) + 1e-9
    assert 1 <= model.free_workers(64, False) <= len(os.sched_getaffinity(0))
    assert model.free_workers(1, False) == 1 and model.free_workers(8, True) == 8
    plan = exact(ONE_MOVE, ["big"])  # SOLVE asks for 1 worker: 1 is used whatever the machine's load
    assert plan.report.solver_workers == 1 and plan.report.moves == 1
