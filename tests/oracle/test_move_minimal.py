"""The move-minimal pass after IPC (``defrag --trim``), checked against the oracle of ``tests/support/defrag_oracle.py``.

The oracle enumerates every sequence of single legal moves of a tiny snapshot, so it knows the fewest
moves of any plan ending with at least E empty nodes (``Reachable.fewest``). The pass promises: never
fewer empty nodes than IPC's plan, never more moves; ``exact`` on a whole cluster reports a
``moves_bound`` no plan with that many empty nodes beats, and ``move_minimal`` only when the plan
meets it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from pydantic import ValidationError
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, Node, Pod
from planner.engine import DefragOptions, plan_defrag
from planner.heuristics.trim import trim_plan
from planner.instances.asi import generate_asi
from planner.limits import MoveBudget
from planner.plans import DefragPlan
from planner.state import ClusterState
from tests.support.defrag_claims import Budgets, assert_budgets_honoured, assert_plan_claims_true, note_request
from tests.support.defrag_oracle import empty_nodes, replay
from tests.support.tiny_snapshots import HEALTH, budgets_strategy, snapshots

runner = CliRunner()


def _plan(cluster: Cluster, budgets: Budgets, trim: str) -> DefragPlan:
    fields = {"time_limit_s": 10, "solver_workers": 2} if trim == "exact" else {}
    # trim "off" is what the pass starts from: IPC's plan, routed again under move_once (when the
    # budgets ask for it) so that the pass's claims (moves_bound) are about the plan returned
    plan = plan_defrag(cluster, budgets.options("heuristic", trim=trim, **fields))
    assert isinstance(plan, DefragPlan)
    return plan


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(cluster=snapshots, budgets=budgets_strategy)
def test_trim_never_loses_empty_nodes_or_adds_moves_and_exact_meets_the_oracle(cluster: Cluster, budgets: Budgets) -> None:
    note_request(cluster, budgets)
    reach = budgets.explore(cluster)
    plans = {trim: _plan(cluster, budgets, trim) for trim in ("off", "greedy", "exact")}
    done = {trim: replay(cluster, plan) for trim, plan in plans.items()}  # raises at an illegal step
    empties = {trim: empty_nodes(cluster, d.end) for trim, d in done.items()}
    moves = {trim: len(d.moves) for trim, d in done.items()}
    for trim in ("greedy", "exact"):
        assert_budgets_honoured(cluster, done[trim].moves, budgets)
        assert_plan_claims_true(cluster, plans[trim], budgets, reach)
        assert empties[trim] >= empties["off"], f"trim {trim} lost empty nodes"
    assert moves["exact"] <= moves["greedy"] <= moves["off"]
    extra = plans["exact"].report.model_extra or {}
    fewest = reach.fewest(empties["off"])
    assert fewest is not None  # IPC's own plan reaches that many
    if extra.get("moves_bound") is not None:
        assert extra["moves_bound"] <= fewest.moves, "the moves bound is above the true fewest moves"
    if extra.get("move_minimal"):
        assert moves["exact"] == fewest.moves, f"move_minimal with {moves['exact']} moves; the fewest are {fewest.moves}"
    assert extra.get("moves_saved") == moves["off"] - moves["exact"]


def test_exact_trim_is_proven_move_minimal_on_an_asi_like_snapshot() -> None:
    cluster = generate_asi(nodes=60, seed=2)
    off = plan_defrag(cluster, DefragOptions(trim="off"))  # IPC's plan moving each pod once: what the pass starts from
    exact = plan_defrag(cluster, DefragOptions(trim="exact", time_limit_s=20, solver_workers=2))
    extra = exact.report.model_extra
    assert exact.report.objective >= off.report.objective
    assert exact.report.moves < off.report.moves
    assert extra["moves_before_trim"] == off.report.moves
    assert extra["trim_scope"] == "whole cluster"
    assert extra["move_minimal"] is True and extra["moves_bound"] == exact.report.moves


def test_pieces_keep_the_plan_valid_and_report_no_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.models import move_minimal

    monkeypatch.setattr(move_minimal, "WHOLE_MAX_NODES", 10)
    monkeypatch.setattr(move_minimal, "PIECE_NODES", 20)
    cluster = generate_asi(nodes=80, seed=1)
    greedy = plan_defrag(cluster, DefragOptions(trim="greedy"))
    pieces = plan_defrag(cluster, DefragOptions(trim="exact", time_limit_s=20, solver_workers=2))
    extra = pieces.report.model_extra
    assert extra["trim_scope"].endswith("piece(s) of at most 20 nodes touched by the plan")
    assert len(extra["trim_solves"]) > 1
    assert "moves_bound" not in extra and "move_minimal" not in extra
    assert pieces.report.objective >= greedy.report.objective and pieces.report.moves <= greedy.report.moves


def _three_node_cluster() -> tuple[ClusterState, int, int, int]:
    nodes = [Node(name=f"n{i}", gpus=4, cpus=16, memory_gib=64) for i in range(3)]
    pods = [
        Pod(name="a", gpus=1, cpus=1, memory_gib=1, node="n0"),
        Pod(name="b", gpus=2, cpus=1, memory_gib=1, node="n1"),
        Pod(name="c", gpus=1, cpus=1, memory_gib=1, node="n2"),
        Pod(name="d", gpus=1, cpus=1, memory_gib=1, node="n1"),
    ]
    state = ClusterState(Cluster(nodes=nodes, pods=pods))
    return state, state.pod_index["a"], state.pod_index["b"], state.pod_index["c"]


def test_greedy_collapses_a_pod_moved_twice_and_sends_a_needless_move_home() -> None:
    state, a, b, _c = _three_node_cluster()
    # a: n0 -> n1 -> n2 (twice), b: n1 -> n2 (needless: d keeps n1 busy, and b fits back)
    waves = [[(a, 0, 1)], [(a, 1, 2), (b, 1, 2)]]
    trimmed = trim_plan(state, waves, MoveBudget.of(state))
    assert trimmed.moves_before == 3
    assert trimmed.returned_home == 1
    assert [step for wave in trimmed.waves for step in wave] == [(a, 0, 2)]
    assert trimmed.gpus_moved_after == 1.0


def test_greedy_makes_way_by_re_targeting_a_pod_that_arrived() -> None:
    # n0 is vacated: a must move. The plan moves q off n1 to make room for a there; a fits n3 just
    # as well, after which q can stay: one move instead of two.
    nodes = [
        Node(name="n0", gpus=2, cpus=16, memory_gib=64),
        Node(name="n1", gpus=2, cpus=16, memory_gib=64),
        Node(name="n2", gpus=4, cpus=16, memory_gib=64),
        Node(name="n3", gpus=4, cpus=16, memory_gib=64),
    ]
    pods = [
        Pod(name="a", gpus=2, cpus=1, memory_gib=1, node="n0"),
        Pod(name="q", gpus=2, cpus=1, memory_gib=1, node="n1"),
        Pod(name="y", gpus=1, cpus=1, memory_gib=1, node="n2"),
        Pod(name="z", gpus=1, cpus=1, memory_gib=1, node="n3"),
    ]
    state = ClusterState(Cluster(nodes=nodes, pods=pods))
    a, q = state.pod_index["a"], state.pod_index["q"]
    trimmed = trim_plan(state, [[(q, 1, 2)], [(a, 0, 1)]], MoveBudget.of(state))
    assert trimmed.returned_home == 1
    assert [step for wave in trimmed.waves for step in wave] == [(a, 0, 3)]
    assert (trimmed.moves_before, trimmed.moves_after) == (2, 1)


def test_trim_options_are_checked() -> None:
    with pytest.raises(ValidationError, match="trim 'exact'"):
        DefragOptions(time_limit_s=5)  # a solver option for heuristic needs trim exact
    with pytest.raises(ValidationError, match="hybrid spends its time limit"):
        DefragOptions(method="hybrid", trim="exact")
    with pytest.raises(ValidationError, match="does not use it"):
        DefragOptions(method="random", trim="exact")
    assert DefragOptions(trim="exact", time_limit_s=5, solver="cpsat").solver == "cpsat"


def test_trim_on_the_command_line_and_over_http(tmp_path: Path) -> None:
    from tests.support.defrag_over_http import plan_over_http

    cluster = generate_asi(nodes=40, seed=3)
    path = tmp_path / "s.json"
    path.write_text(cluster.model_dump_json())
    off = json.loads(runner.invoke(app, ["defrag", str(path), "--trim", "off"]).stdout)  # what the pass starts from (move_once)
    exact = runner.invoke(app, ["defrag", str(path), "--trim", "exact", "--time-limit", "10", "--solver-workers", "2"])
    assert exact.exit_code == 0, exact.output
    report = json.loads(exact.stdout)["report"]
    assert report["moves_before_trim"] == off["report"]["moves"]
    assert report["moves"] == report["moves_bound"] and report["move_minimal"] is True
    assert report["moves_saved"] == off["report"]["moves"] - report["moves"]
    for args, named in (
        (["--time-limit", "5"], "--time-limit: method 'heuristic' does not use it"),
        (["--method", "hybrid", "--trim", "exact"], "--trim: hybrid spends its time limit"),
        (["--method", "random", "--trim", "off"], "--trim: method 'random' does not use it"),
    ):
        bad = runner.invoke(app, ["defrag", str(path), *args])
        assert bad.exit_code == 2 and named in bad.output, bad.output
    refused = [({"time_limit_s": 5}, "options.time_limit_s: method 'heuristic' does not use it")]
    plan = plan_over_http(tmp_path, cluster, {"trim": "exact", "time_limit_s": 10, "solver_workers": 2}, refused)
    assert plan.report.moves == report["moves"] and plan.report.model_extra["move_minimal"] is True
