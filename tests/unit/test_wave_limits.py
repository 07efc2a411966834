"""Per-wave disruption limits (issue 13, item 3): moves per wave, nodes a wave touches (a count or a
share of the cluster, rounded up as Karpenter's budgets are) and moves touching one node per wave.
They split waves and never cost a move; every method honours them and the validator checks them."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, Node, Pod
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.limits import MoveLimits
from planner.plans import DefragPlan, Move
from planner.validate.defrag import validate

runner = CliRunner()


def _wave_counts(plan: DefragPlan) -> list[tuple[int, int, int]]:
    """(moves, nodes touched, most moves touching one node) of each wave, counted here."""
    counts = []
    for wave in plan.waves:
        touches = Counter([m.from_ for m in wave] + [m.to for m in wave])
        counts.append((len(wave), len(touches), max(touches.values())))
    return counts


@pytest.mark.parametrize("method", ["heuristic", "random", "descheduler", "repack", "hybrid"])
@pytest.mark.parametrize(
    ("limits", "bounds"),
    [
        ({"max_moves_per_wave": 3}, (3, None, None)),
        ({"max_nodes_per_wave": "10%"}, (None, 6, None)),  # 10% of 60 nodes
        ({"max_nodes_per_wave": 5, "max_moves_per_node_per_wave": 1}, (None, 5, 1)),
    ],
)
def test_every_method_obeys_the_wave_limits_and_loses_no_move(method: str, limits: dict, bounds: tuple) -> None:
    cluster = generate_asi(nodes=60, seed=4)
    extra = {"time_limit_s": 3.0, "solver_workers": 1} if method == "hybrid" else {}
    free = plan_defrag(cluster, DefragOptions(method=method, max_nodes_per_wave="100%", **extra))
    limited = plan_defrag(cluster, DefragOptions(method=method, **{"max_nodes_per_wave": "100%", **limits}, **extra))
    assert free.moves(), "the instance needs moves"
    if method != "hybrid":  # the hybrid's search is timed: its plans may differ run to run
        assert Counter((m.pod, m.from_, m.to) for m in limited.moves()) == Counter((m.pod, m.from_, m.to) for m in free.moves())
        assert limited.vacated_nodes == free.vacated_nodes
    most_moves, most_nodes, per_node = bounds
    for moves, nodes, busiest in _wave_counts(limited):
        assert most_moves is None or moves <= most_moves
        assert most_nodes is None or nodes <= most_nodes
        assert per_node is None or busiest <= per_node
    if any(w[0] > (most_moves or math.inf) or w[1] > (most_nodes or math.inf) or w[2] > (per_node or math.inf) for w in _wave_counts(free)):
        assert len(limited.waves) > len(free.waves)
        assert limited.report.model_extra["waves_before_wave_limits"] == len(free.waves)


def test_a_share_of_nodes_is_rounded_up_and_at_least_two() -> None:
    assert DefragOptions(max_nodes_per_wave="10%").limits(60).max_nodes_per_wave == 6
    assert DefragOptions(max_nodes_per_wave="10%").limits(25).max_nodes_per_wave == 3
    assert DefragOptions(max_nodes_per_wave="1%").limits(25).max_nodes_per_wave == 2
    assert DefragOptions(max_nodes_per_wave="100%").limits(7).max_nodes_per_wave is None  # 100% lifts the default budget
    assert DefragOptions(max_nodes_per_wave=9).limits(7).max_nodes_per_wave == 9


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1, "must be at least 2"),
        ("0%", "above 0%"),
        ("150%", "at most 100%"),
        ("ten", "give a node count"),
    ],
)
def test_bad_nodes_per_wave_are_refused(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        DefragOptions(max_nodes_per_wave=value)


def test_the_validator_names_each_wave_that_breaks_a_limit() -> None:
    nodes = [Node(name=f"n{i}", gpus=4, cpus=8, memory_gib=32) for i in range(4)]
    pods = [Pod(name=f"p{i}", gpus=1, cpus=1, memory_gib=1, node=f"n{i}") for i in range(3)]
    cluster = Cluster(nodes=nodes, pods=pods)
    wave = [Move(pod="p0", **{"from": "n0"}, to="n3"), Move(pod="p1", **{"from": "n1"}, to="n3"), Move(pod="p2", **{"from": "n2"}, to="n3")]
    plan = DefragPlan(waves=[wave], vacated_nodes=["n0", "n1", "n2"])
    assert validate(cluster, plan, MoveLimits()) == []
    kinds = Counter(v.kind for v in validate(cluster, plan, MoveLimits(max_moves_per_wave=2, max_nodes_per_wave=3, max_moves_per_node_per_wave=2)))
    assert kinds == {"max_moves_per_wave": 1, "max_nodes_per_wave": 1, "max_moves_per_node_per_wave": 1}


def test_wave_limits_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(generate_asi(nodes=60, seed=4).model_dump_json())
    free = runner.invoke(app, ["defrag", str(path), "--max-nodes-per-wave", "100%", "--out", str(tmp_path / "free.json")])
    assert free.exit_code == 0, free.output
    bad = runner.invoke(app, ["validate", str(path), str(tmp_path / "free.json"), "--max-nodes-per-wave", "10%"])
    assert bad.exit_code == 1 and "max_nodes_per_wave is 6" in bad.output, bad.output
    limited = runner.invoke(app, ["defrag", str(path), "--max-nodes-per-wave", "10%", "--out", str(tmp_path / "limited.json")])
    assert limited.exit_code == 0, limited.output
    ok = runner.invoke(app, ["validate", str(path), str(tmp_path / "limited.json"), "--max-nodes-per-wave", "6"])
    assert ok.exit_code == 0, ok.output
    for args, named in ((["--max-nodes-per-wave", "1"], "--max-nodes-per-wave: must be at least 2"), (["--max-moves-per-wave", "0"], "--max-moves-per-wave:")):
        refused = runner.invoke(app, ["defrag", str(path), *args])
        assert refused.exit_code == 2 and named in refused.output, refused.output
    plan = json.loads((tmp_path / "limited.json").read_text())
    assert plan["report"]["waves_before_wave_limits"] < len(plan["waves"])


# ----------------------------------------------------------------------------------------------
# Jobs' disruption budgets and the namespace scope
# ----------------------------------------------------------------------------------------------


def _budgeted(max_unavailable: int | None, namespaces: tuple[str, str] = ("team-a", "team-b")) -> Cluster:
    """60 ASI-like nodes; every job gets the budget (None: none), pods alternate between two namespaces."""
    from planner.cluster import Disruption

    base = generate_asi(nodes=60, seed=2)  # its plan moves 8 pods of one job in one wave
    jobs = [j.model_copy(update={"disruption": None if max_unavailable is None else Disruption(max_unavailable=max_unavailable)}) for j in base.jobs]
    pods = [p.model_copy(update={"namespace": namespaces[i % 2]}) for i, p in enumerate(base.pods)]
    return base.model_copy(update={"jobs": jobs, "pods": pods})


def _per_job_per_wave(cluster: Cluster, plan: DefragPlan) -> int:
    job = {p.name: p.job for p in cluster.pods}
    return max((max(Counter(job[m.pod] for m in wave if job[m.pod]).values(), default=0) for wave in plan.waves), default=0)


def test_a_jobs_disruption_budget_limits_its_pods_per_wave_and_costs_no_move() -> None:
    free = plan_defrag(_budgeted(None), DefragOptions(max_nodes_per_wave="100%"))
    assert _per_job_per_wave(_budgeted(None), free) > 1, "the instance needs a wave moving two pods of one job"
    cluster = _budgeted(1)
    limited = plan_defrag(cluster, DefragOptions())
    assert _per_job_per_wave(cluster, limited) == 1
    assert sorted(m.pod for m in limited.moves()) == sorted(m.pod for m in free.moves())
    # the flag gives the same budget to jobs without one
    flagged = plan_defrag(_budgeted(None), DefragOptions(max_unavailable_per_job=1))
    assert _per_job_per_wave(_budgeted(None), flagged) == 1
    # the validator checks the snapshot's budgets even when no limit is asked for
    violations = validate(cluster, free, MoveLimits())
    assert violations and {v.kind for v in violations} == {"max_unavailable"}


def test_a_budget_of_zero_holds_the_jobs_pods() -> None:
    cluster = _budgeted(0)
    plan = plan_defrag(cluster, DefragOptions())
    in_jobs = {p.name for p in cluster.pods if p.job is not None}
    assert not [m for m in plan.moves() if m.pod in in_jobs]
    assert plan.report.model_extra["pods_held"]["disruption_budget"] == sum(1 for p in cluster.pods if p.name in in_jobs and p.node and not p.locked)


def test_the_namespace_scope_holds_pods_out_of_it() -> None:
    cluster = _budgeted(None)
    namespace = {p.name: p.namespace for p in cluster.pods}
    only = plan_defrag(cluster, DefragOptions(only_namespaces=["team-a"]))
    assert only.moves() and {namespace[m.pod] for m in only.moves()} == {"team-a"}
    excluded = plan_defrag(cluster, DefragOptions(exclude_namespaces=["team-a"]))
    assert excluded.moves() and "team-a" not in {namespace[m.pod] for m in excluded.moves()}
    free = plan_defrag(cluster, DefragOptions())
    kinds = {v.kind for v in validate(cluster, free, DefragOptions(exclude_namespaces=["team-b"]).limits(60))}
    assert kinds == {"namespace_out_of_scope"}


def test_limit_costs_price_each_limit_against_a_plan_without_it() -> None:
    cluster = _budgeted(0)  # every job's budget is 0: its pods are held
    options = DefragOptions(max_moves=30, exclude_namespaces=["team-b"], limit_costs=True)
    plan = plan_defrag(cluster, options)
    costs = plan.report.model_extra["limit_costs"]
    assert set(costs) == {"max_moves", "exclude_namespaces", "move_once", "disruption_budgets"}
    without_budget = plan_defrag(cluster, DefragOptions(exclude_namespaces=["team-b"]))
    assert costs["max_moves"]["vacated_nodes_without"] == len(without_budget.vacated_nodes)
    assert costs["max_moves"]["vacated_nodes_cost"] == len(without_budget.vacated_nodes) - len(plan.vacated_nodes)
    free_jobs = cluster.model_copy(update={"jobs": [j.model_copy(update={"disruption": None}) for j in cluster.jobs]})
    without_pdbs = plan_defrag(free_jobs, DefragOptions(max_moves=30, exclude_namespaces=["team-b"]))
    assert costs["disruption_budgets"]["moves_without"] == len(without_pdbs.moves())
    assert "limit_costs" not in (plan_defrag(cluster, DefragOptions(max_moves=30)).report.model_extra or {})
