"""The default disruption budget (issue 42, item 1): without ``max_nodes_per_wave`` every defrag and
make-room plan touches at most 10% of the nodes in its scope per wave, rounded up (Karpenter's default
``NodePool`` budget) and at least 2; '100%' lifts it; jobs' PodDisruptionBudgets hold whatever the
options; the report says which limits were in force and where each came from. The same default over
REST and from ``planner submit`` (``tests/service/test_default_budget_service.py``): it lives in the
options model, not in a shell. Counts below are taken from the plan JSON here, not by the code under test."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, Disruption
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.plans import DefragPlan
from planner.validate.defrag import validate

runner = CliRunner()


def largest_wave(plan: DefragPlan) -> int:
    """The most nodes one wave touches (as source or destination)."""
    return max((len({m.from_ for m in wave} | {m.to for m in wave}) for wave in plan.waves), default=0)


def moves(plan: DefragPlan) -> list[tuple[str, str, str]]:
    return [(m.pod, m.from_, m.to) for m in plan.moves()]


def limits_of(plan: DefragPlan) -> dict:
    assert plan.report is not None
    return plan.report.model_extra["limits"]


@pytest.fixture(scope="module")
def asi200() -> Cluster:
    return generate_asi(nodes=200, seed=3)


def test_without_limits_a_wave_touches_at_most_a_tenth_of_the_nodes_rounded_up(asi200: Cluster) -> None:
    unlimited = plan_defrag(asi200, DefragOptions(max_nodes_per_wave="100%"))
    default = plan_defrag(asi200, DefragOptions())
    assert isinstance(unlimited, DefragPlan) and isinstance(default, DefragPlan)
    assert largest_wave(unlimited) > 20, "the instance needs a wave wider than the budget"
    assert largest_wave(default) <= 20  # ceil(0.10 * 200)
    # the budget splits waves and costs nothing else: the same moves in the same order, the same nodes vacated
    assert moves(default) == moves(unlimited) and default.vacated_nodes == unlimited.vacated_nodes
    assert len(default.waves) > len(unlimited.waves) == default.report.model_extra["waves_before_wave_limits"]
    assert validate(asi200, default, DefragOptions(max_nodes_per_wave=20).limits(200)) == []
    assert limits_of(default)["max_nodes_per_wave"] == {"value": 20, "source": "default", "rule": "10% of 200 nodes in scope, rounded up"}
    assert limits_of(default)["move_once"] == {"value": True, "source": "default"}
    assert limits_of(unlimited)["max_nodes_per_wave"] == {"value": None, "source": "given", "rule": "100%: no limit"}
    assert "waves_before_wave_limits" not in unlimited.report.model_extra


def test_an_explicit_limit_overrides_the_default_and_is_reported_as_given(asi200: Cluster) -> None:
    default = plan_defrag(asi200, DefragOptions())
    share = plan_defrag(asi200, DefragOptions(max_nodes_per_wave="10%"))
    count = plan_defrag(asi200, DefragOptions(max_nodes_per_wave=8, max_moves=40, move_once=True))
    assert share.waves == default.waves  # 10% given is the default's 10%
    assert limits_of(share)["max_nodes_per_wave"] == {"value": 20, "source": "given", "rule": "10% of 200 nodes in scope, rounded up"}
    assert largest_wave(count) <= 8
    assert limits_of(count) == {
        "max_moves": {"value": 40, "source": "given"},
        "max_nodes_per_wave": {"value": 8, "source": "given"},
        "move_once": {"value": True, "source": "given"},
    }
    lifted = plan_defrag(asi200, DefragOptions(move_once=False))
    assert limits_of(lifted)["move_once"] == {"value": False, "source": "given"}


def test_the_share_is_of_the_nodes_in_scope_and_at_least_two() -> None:
    assert [DefragOptions().limits(n).max_nodes_per_wave for n in (1, 10, 20, 21, 200, 5000)] == [2, 2, 2, 3, 20, 500]
    base = generate_asi(nodes=60, seed=4)
    nodes = [n.model_copy(update={"labels": {**n.labels, "pool": "a" if i < 30 else "b"}}) for i, n in enumerate(base.nodes)]
    pooled = base.model_copy(update={"nodes": nodes})
    plan = plan_defrag(pooled, DefragOptions(node_selector="pool=a"))
    assert limits_of(plan)["max_nodes_per_wave"] == {"value": 3, "source": "default", "rule": "10% of 30 nodes in scope, rounded up"}
    assert plan.moves() and largest_wave(plan) <= 3
    small = plan_defrag(generate_asi(nodes=8, seed=0), DefragOptions())
    rule = "10% of 8 nodes in scope, rounded up, at least 2 (a move touches two nodes)"
    assert limits_of(small)["max_nodes_per_wave"] == {"value": 2, "source": "default", "rule": rule}


# n0 holds two 2-GPU pods; the locked 5-GPU pods on n1 and n2 leave room for one each: 'big' (8 GPUs)
# starts on n0 once both leave, two independent moves touching three nodes, one wave without a budget
MAKE_ROOM = {
    "nodes": [{"name": n, "gpus": 8, "cpus": 96, "memory_gib": 512} for n in ("n0", "n1", "n2")],
    "pods": [
        {"name": "a", "gpus": 2, "cpus": 1, "node": "n0"},
        {"name": "b", "gpus": 2, "cpus": 1, "node": "n0"},
        {"name": "x", "gpus": 5, "cpus": 1, "node": "n1", "locked": True},
        {"name": "y", "gpus": 5, "cpus": 1, "node": "n2", "locked": True},
        {"name": "big", "gpus": 8, "cpus": 1},
    ],
}


@pytest.mark.parametrize("method", ["heuristic", "exact"])
def test_make_room_plans_get_the_default_budget_too(method: str) -> None:
    cluster = Cluster.model_validate(MAKE_ROOM)
    unlimited = plan_defrag(cluster, DefragOptions(method=method, make_room=["big"], max_nodes_per_wave="100%"))
    default = plan_defrag(cluster, DefragOptions(method=method, make_room=["big"]))
    assert [len(w) for w in unlimited.waves] == [2] and [len(w) for w in default.waves] == [1, 1]
    assert sorted(moves(default)) == sorted(moves(unlimited)) and default.placements == unlimited.placements != []
    assert limits_of(default)["max_nodes_per_wave"]["value"] == 2


def test_a_jobs_disruption_budget_holds_by_default_and_is_reported() -> None:
    base = generate_asi(nodes=60, seed=2)  # its unlimited plan moves several pods of one job in one wave
    cluster = base.model_copy(update={"jobs": [j.model_copy(update={"disruption": Disruption(max_unavailable=1)}) for j in base.jobs]})
    job = {p.name: p.job for p in cluster.pods}
    plan = plan_defrag(cluster, DefragOptions(max_nodes_per_wave="100%"))  # even with the node budget lifted
    assert plan.moves()
    assert max(max(Counter(job[m.pod] for m in wave if job[m.pod]).values(), default=0) for wave in plan.waves) == 1
    budgets = len(cluster.jobs)
    assert limits_of(plan)["disruption_budgets"] == {
        "value": budgets,
        "source": "snapshot",
        "rule": f"{budgets} job(s) with disruption.max_unavailable (a PodDisruptionBudget)",
    }


def test_the_command_line_states_the_limits_and_refuses_bad_values(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(generate_asi(nodes=60, seed=4).model_dump_json())
    table = runner.invoke(app, ["defrag", str(path), "-o", "table"])
    assert table.exit_code == 0, table.output
    assert "Limits in force" in table.output and "default: 10% of 60 nodes in scope, rounded up" in table.output
    out = tmp_path / "plan.json"
    assert runner.invoke(app, ["defrag", str(path), "--out", str(out)]).exit_code == 0
    plan = json.loads(out.read_text())
    assert plan["report"]["limits"]["max_nodes_per_wave"] == {"value": 6, "source": "default", "rule": "10% of 60 nodes in scope, rounded up"}
    assert max(len({m["from"] for m in w} | {m["to"] for m in w}) for w in plan["waves"]) <= math.ceil(0.1 * 60)
    # planner validate checks only the limits given: the default plan against 6 passes, against 5 does not
    assert runner.invoke(app, ["validate", str(path), str(out), "--max-nodes-per-wave", "6"]).exit_code == 0
    assert runner.invoke(app, ["validate", str(path), str(out), "--max-nodes-per-wave", "4"]).exit_code == 1
    for value, message in (("0", "must be at least 2"), ("-5", "must be at least 2"), ("150%", "give a node count"), ("abc", "give a node count")):
        refused = runner.invoke(app, ["defrag", str(path), "--max-nodes-per-wave", value])
        assert refused.exit_code == 2 and refused.output.startswith(f"error: --max-nodes-per-wave: {message}"), refused.output
        assert value in refused.output and "'100%' lifts the default budget" in refused.output and "Traceback" not in refused.output
