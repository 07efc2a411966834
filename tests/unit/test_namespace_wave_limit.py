"""``--max-moves-per-namespace`` (issue 13, item 3): at most N moves of one namespace's pods in any one
wave (koordinator's ``maxMigratingPerNamespace`` limits migrations at once; a make-before-break wave
runs at once). A pod without a namespace is in 'default'. Like the other per-wave limits it splits
waves and never costs a move; the counts below are taken from the plan and snapshot JSON here, not by
the code under test."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.validate.defrag import validate
from tests.support.defrag_over_http import plan_over_http

runner = CliRunner()

# n0 holds three pods of namespace 'ml', n1 three pods without a namespace ('default'); the locked
# pods on n2 and n3 leave room for them: vacating n0 and n1 takes six independent moves, one wave
SNAPSHOT = {
    "nodes": [{"name": n, "gpus": 8, "cpus": 96, "memory_gib": 512} for n in ("n0", "n1", "n2", "n3")],
    "pods": [
        *({"name": f"ml-{i}", "namespace": "ml", "gpus": 1, "cpus": 1, "node": "n0"} for i in range(3)),
        *({"name": f"web-{i}", "gpus": 1, "cpus": 1, "node": "n1"} for i in range(3)),
        {"name": "x", "namespace": "ml", "gpus": 5, "cpus": 1, "node": "n2", "locked": True},
        {"name": "y", "gpus": 5, "cpus": 1, "node": "n3", "locked": True},
    ],
}


def per_namespace(snapshot: dict, plan: dict) -> list[Counter]:
    """Moves of each namespace in each wave of plan JSON (a pod without a namespace is in 'default')."""
    namespace = {p["name"]: p.get("namespace") or "default" for p in snapshot["pods"]}
    return [Counter(namespace[m["pod"]] for m in wave) for wave in plan["waves"]]


def moves(plan: dict) -> Counter:
    return Counter((m["pod"], m["from"], m["to"]) for wave in plan["waves"] for m in wave)


def plan_json(tmp_path: Path, name: str, *args: str) -> dict:
    out = tmp_path / f"{name}.json"
    result = runner.invoke(app, ["defrag", str(tmp_path / "s.json"), *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


@pytest.mark.parametrize("method", ["heuristic", "descheduler", "repack", "exact"])
def test_the_limit_splits_waves_and_loses_no_move(tmp_path: Path, method: str) -> None:
    (tmp_path / "s.json").write_text(json.dumps(SNAPSHOT))
    free = plan_json(tmp_path, "free", "--method", method, "--max-nodes-per-wave", "100%")  # no limits (the default budget is 2 of these 4 nodes)
    limited = plan_json(tmp_path, "limited", "--method", method, "--max-nodes-per-wave", "100%", "--max-moves-per-namespace", "1")
    assert max(wave["ml"] for wave in per_namespace(SNAPSHOT, free)) >= 3, "the plan must move 3 pods of 'ml' in one wave"
    assert max(wave["default"] for wave in per_namespace(SNAPSHOT, free)) >= 2, "and 2 pods without a namespace"
    assert all(max(wave.values()) == 1 for wave in per_namespace(SNAPSHOT, limited))
    assert moves(limited) == moves(free) and limited["vacated_nodes"] == free["vacated_nodes"] == ["n0", "n1"]
    assert limited["report"]["waves_before_wave_limits"] == len(free["waves"]) < len(limited["waves"])


def test_a_realistic_plan_obeys_it_too() -> None:
    base = generate_asi(nodes=60, seed=4)
    cluster = base.model_copy(update={"pods": [p.model_copy(update={"namespace": "ml" if i % 2 else None}) for i, p in enumerate(base.pods)]})
    snapshot = json.loads(cluster.model_dump_json())
    free = plan_defrag(cluster, DefragOptions(max_nodes_per_wave="100%")).model_dump(mode="json", by_alias=True)
    limited = plan_defrag(cluster, DefragOptions(max_nodes_per_wave="100%", max_moves_per_namespace=2)).model_dump(mode="json", by_alias=True)
    assert max(max(wave.values()) for wave in per_namespace(snapshot, free)) > 2
    assert max(max(wave.values()) for wave in per_namespace(snapshot, limited)) == 2
    assert moves(limited) == moves(free) and limited["vacated_nodes"] == free["vacated_nodes"]


def test_planner_validate_names_each_namespace_and_wave_over_the_limit(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(SNAPSHOT))
    move = [("ml-0", "n0", "n2"), ("ml-1", "n0", "n2"), ("web-0", "n1", "n3"), ("web-1", "n1", "n3")]
    plan = {"version": 1, "kind": "defrag", "waves": [[{"pod": p, "from": a, "to": b} for p, a, b in move]], "vacated_nodes": []}
    (tmp_path / "p.json").write_text(json.dumps(plan))
    check = ["validate", str(tmp_path / "s.json"), str(tmp_path / "p.json"), "--max-moves-per-namespace"]
    assert runner.invoke(app, [*check, "2"]).exit_code == 0
    bad = runner.invoke(app, [*check, "1"])
    assert bad.exit_code == 1, bad.output
    assert "2 pods of namespace 'ml' move in wave 0; max_moves_per_namespace is 1" in bad.output
    assert "2 pods of namespace 'default' move in wave 0; max_moves_per_namespace is 1" in bad.output
    assert bad.output.count("max_moves_per_namespace:") == 2
    refused = runner.invoke(app, [*check, "0"])
    assert refused.exit_code == 2 and "--max-moves-per-namespace" in refused.output and "Traceback" not in refused.output


def test_bad_values_are_refused_naming_the_flag(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text(json.dumps(SNAPSHOT))
    for value in ("0", "-1"):
        refused = runner.invoke(app, ["defrag", str(tmp_path / "s.json"), "--max-moves-per-namespace", value])
        assert refused.exit_code == 2 and "--max-moves-per-namespace:" in refused.output and "Traceback" not in refused.output


def test_make_room_obeys_it() -> None:
    # big (8 GPUs) starts on n0 once its three 'ml' pods leave for n1
    snapshot = {
        "nodes": [{"name": n, "gpus": 8, "cpus": 96, "memory_gib": 512} for n in ("n0", "n1")],
        "pods": [
            *({"name": f"ml-{i}", "namespace": "ml", "gpus": 2, "cpus": 1, "node": "n0"} for i in range(3)),
            {"name": "z", "gpus": 2, "cpus": 1, "node": "n1", "locked": True},
            {"name": "big", "gpus": 8, "cpus": 1},
        ],
    }
    cluster = Cluster.model_validate(snapshot)
    for method in ("heuristic", "exact"):
        free = plan_defrag(cluster, DefragOptions(method=method, make_room=["big"])).model_dump(mode="json", by_alias=True)
        options = DefragOptions(method=method, make_room=["big"], max_moves_per_namespace=1)
        plan = plan_defrag(cluster, options)
        assert validate(cluster, plan, options.limits(len(cluster.nodes))) == []
        limited = plan.model_dump(mode="json", by_alias=True)
        assert max(wave["ml"] for wave in per_namespace(snapshot, free)) == 3
        assert [dict(wave) for wave in per_namespace(snapshot, limited)] == [{"ml": 1}] * 3
        assert moves(limited) == moves(free) and limited["placements"] == free["placements"] != []


def test_it_costs_no_vacated_node_so_limit_costs_does_not_price_it() -> None:
    plan = plan_defrag(Cluster.model_validate(SNAPSHOT), DefragOptions(max_moves_per_namespace=1, limit_costs=True))
    assert set(plan.report.model_extra["limit_costs"]) == {"move_once"}  # on by default


def test_over_http_a_bad_value_gets_422_naming_the_field_and_a_good_one_is_obeyed(tmp_path: Path) -> None:
    refused = [({"max_moves_per_namespace": 0}, "options.max_moves_per_namespace"), ({"max_moves_per_namespace": "two"}, "options.max_moves_per_namespace")]
    plan = plan_over_http(tmp_path, Cluster.model_validate(SNAPSHOT), {"max_moves_per_namespace": 1}, refused)
    limited = plan.model_dump(mode="json", by_alias=True)
    assert all(max(wave.values()) == 1 for wave in per_namespace(SNAPSHOT, limited)) and len(moves(limited)) == 6
