"""``--max-moves-per-namespace`` (issue 13, item 3): at most N moves of one namespace's pods in any one
wave (koordinator's ``maxMigratingPerNamespace`` limits migrations at once; a make-before-break wave
runs at once). Like the other per-wave limits it splits waves and never costs a move; the counts
below are taken from the plan and the snapshot here, not by the code under test."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, Node, Pod
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.limits import MoveLimits
from planner.plans import DefragPlan, Move
from planner.validate import validate

runner = CliRunner()


def namespaced(cluster: Cluster) -> Cluster:
    """Every pod in one of two namespaces (half in none: 'default')."""
    return cluster.model_copy(update={"pods": [p.model_copy(update={"namespace": "ml" if i % 2 else None})
                                               for i, p in enumerate(cluster.pods)]})


def most_per_namespace(cluster: Cluster, plan: DefragPlan) -> int:
    namespace = {p.name: p.namespace or "default" for p in cluster.pods}
    return max((max(Counter(namespace[m.pod] for m in wave).values()) for wave in plan.waves if wave), default=0)


@pytest.mark.parametrize("method", ["heuristic", "descheduler"])
def test_the_limit_splits_waves_and_loses_no_move(method: str) -> None:
    cluster = namespaced(generate_asi(nodes=60, seed=4))
    free = plan_defrag(cluster, DefragOptions(method=method))
    limited = plan_defrag(cluster, DefragOptions(method=method, max_moves_per_namespace=1))
    assert most_per_namespace(cluster, free) > 1, "the instance must move several pods of a namespace in a wave"
    assert most_per_namespace(cluster, limited) == 1
    assert Counter((m.pod, m.from_, m.to) for m in limited.moves()) == Counter((m.pod, m.from_, m.to) for m in free.moves())
    assert limited.vacated_nodes == free.vacated_nodes and len(limited.waves) > len(free.waves)


def test_the_validator_names_the_namespace_and_wave() -> None:
    nodes = [Node(name=f"n{i}", gpus=4, cpus=8, memory_gib=32) for i in range(4)]
    pods = [Pod(name="a", namespace="ml", gpus=1, cpus=1, node="n0"), Pod(name="b", namespace="ml", gpus=1, cpus=1, node="n1"),
            Pod(name="c", gpus=1, cpus=1, node="n2")]
    cluster = Cluster(nodes=nodes, pods=pods)
    wave = [Move(pod=p, **{"from": f"n{i}"}, to="n3") for i, p in enumerate("abc")]
    plan = DefragPlan(waves=[wave], vacated_nodes=["n0", "n1", "n2"])
    assert validate(cluster, plan, MoveLimits(max_moves_per_namespace=2)) == []
    found = validate(cluster, plan, MoveLimits(max_moves_per_namespace=1))
    assert [(v.kind, v.message) for v in found] == [
        ("max_moves_per_namespace", "2 pods of namespace 'ml' move in wave 0; max_moves_per_namespace is 1")]


def test_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    cluster = namespaced(generate_asi(nodes=60, seed=4))
    path.write_text(cluster.model_dump_json())
    assert runner.invoke(app, ["defrag", str(path), "--out", str(tmp_path / "free.json")]).exit_code == 0
    bad = runner.invoke(app, ["validate", str(path), str(tmp_path / "free.json"), "--max-moves-per-namespace", "2"])
    assert bad.exit_code == 1 and "max_moves_per_namespace is 2" in bad.output, bad.output
    limited = runner.invoke(app, ["defrag", str(path), "--max-moves-per-namespace", "2", "--out", str(tmp_path / "limited.json")])
    assert limited.exit_code == 0, limited.output
    ok = runner.invoke(app, ["validate", str(path), str(tmp_path / "limited.json"), "--max-moves-per-namespace", "2"])
    assert ok.exit_code == 0, ok.output
    plan = DefragPlan.model_validate(json.loads((tmp_path / "limited.json").read_text()))
    assert most_per_namespace(cluster, plan) <= 2
    refused = runner.invoke(app, ["defrag", str(path), "--max-moves-per-namespace", "0"])
    assert refused.exit_code == 2 and "--max-moves-per-namespace" in refused.output and "Traceback" not in refused.output
