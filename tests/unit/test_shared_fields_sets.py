"""A snapshot's nodes, pods and jobs read with the same fields given share one pydantic fields-set
(issue 62: a set per model was 91 MiB of a 702 MiB plan at 37,707 nodes), and what each model says
was given stays what its JSON gave, through a plan of every kind."""

from __future__ import annotations

import json

from planner.engine.defrag import DefragOptions, plan_defrag
from planner.engine.preempt import plan_preempt
from planner.snapshot import load_cluster
from tests.support.paths import INSTANCES


def _given(path) -> dict[str, list[set[str]]]:
    data = json.loads(path.read_text())
    return {kind: [set(item) for item in data.get(kind, [])] for kind in ("nodes", "pods", "jobs")}


def test_models_with_the_same_fields_given_share_one_set() -> None:
    path = INSTANCES / "asi-500.json"
    cluster = load_cluster(path)
    given = _given(path)
    for kind in ("nodes", "pods", "jobs"):
        models = getattr(cluster, kind)
        assert [m.model_fields_set for m in models] == given[kind]
        distinct_sets = {id(m.__pydantic_fields_set__) for m in models}
        assert len(distinct_sets) == len({frozenset(g) for g in given[kind]}), kind


def _spot_snapshot(tmp_path):
    """20 nodes of spot pods (some with a checkpoint interval given, some without) and pending HP jobs."""
    nodes, pods = [], []
    for i in range(20):
        nodes.append({"name": f"n-{i}", "gpus": 8, "cpus": 96, "memory_gib": 768, "asw": f"asw-{i // 4}"})
        for k in range(8):
            pod = {"name": f"spot-{i}-{k}", "node": f"n-{i}", "gpus": 1.0, "cpus": 8, "memory_gib": 32, "priority": "LP", "started_s": 10.0 * k}
            if k % 3 == 0:
                pod["checkpoint_interval_s"] = 600.0
            pods.append(pod)
    pods += [{"name": f"hp-{j}", "job": f"hp-{j}", "gpus": 4, "cpus": 16, "memory_gib": 64} for j in range(3)]
    path = tmp_path / "spot.json"
    path.write_text(json.dumps({"time_s": 86_400.0, "nodes": nodes, "pods": pods, "jobs": [{"name": f"hp-{j}"} for j in range(3)]}))
    return path


def test_plans_leave_what_was_given_as_it_was(tmp_path) -> None:
    """No planner assigns a field of a snapshot's model (which would add to every model sharing its set)."""
    for path, plan in ((INSTANCES / "asi-500.json", lambda c: plan_defrag(c, DefragOptions())), (_spot_snapshot(tmp_path), lambda c: plan_preempt(c, "hp-0"))):
        cluster = load_cluster(path)
        plan(cluster)
        given = _given(path)
        for kind in ("nodes", "pods", "jobs"):
            assert [m.model_fields_set for m in getattr(cluster, kind)] == given[kind], (path.name, kind)
