"""Lost work in defrag plans: what the moved pods that carry checkpoints lose by restarting from them
(the preemption cost model, GPUs x time since the last checkpoint), computed by hand here."""

from __future__ import annotations

import pytest

from planner.cluster import Cluster, Node, Pod
from planner.engine import DefragOptions, plan_defrag


def _cluster(mover: Pod) -> Cluster:
    nodes = [Node(name="n0", gpus=4, cpus=16, memory_gib=64), Node(name="n1", gpus=4, cpus=16, memory_gib=64)]
    stayer = Pod(name="stay", gpus=2, cpus=1, memory_gib=1, node="n1")
    return Cluster(nodes=nodes, pods=[mover.model_copy(update={"node": "n0"}), stayer], time_s=1000.0)


@pytest.mark.parametrize(
    ("fields", "lost"),
    [
        ({"checkpoint_s": 100.0}, 1 * 900.0),  # one GPU since the checkpoint at 100 s
        ({"started_s": 0.0, "checkpoint_interval_s": 300.0}, 1 * 100.0),  # last periodic checkpoint at 900 s
    ],
)
def test_a_moved_pod_with_a_checkpoint_loses_the_work_since_it(fields: dict, lost: float) -> None:
    plan = plan_defrag(_cluster(Pod(name="mover", gpus=1, cpus=1, memory_gib=1, **fields)), DefragOptions())
    assert [(m.pod, m.from_, m.to) for m in plan.moves()] == [("mover", "n0", "n1")]
    extra = plan.report.model_extra
    assert extra["lost_gpu_s"] == pytest.approx(lost)
    assert extra["moved_without_checkpoint"] == 0


def test_pods_without_checkpoints_are_counted_not_priced() -> None:
    plan = plan_defrag(_cluster(Pod(name="mover", gpus=1, cpus=1, memory_gib=1, started_s=10.0)), DefragOptions())
    assert len(plan.moves()) == 1
    extra = plan.report.model_extra
    assert "lost_gpu_s" not in extra and "moved_without_checkpoint" not in extra


@pytest.mark.parametrize("method", ["heuristic", "exact"])
def test_make_room_reports_each_jobs_lost_work(method: str) -> None:
    nodes = [Node(name="n0", gpus=4, cpus=16, memory_gib=64), Node(name="n1", gpus=4, cpus=16, memory_gib=64)]
    pods = [
        Pod(name="small", gpus=2, cpus=1, memory_gib=1, node="n0", checkpoint_s=400.0),
        Pod(name="other", gpus=2, cpus=1, memory_gib=1, node="n1", locked=True),
        Pod(name="big", gpus=4, cpus=1, memory_gib=1),
    ]
    cluster = Cluster(nodes=nodes, pods=pods, time_s=1000.0)
    extra = {"time_limit_s": 10.0, "solver_workers": 2} if method == "exact" else {}
    plan = plan_defrag(cluster, DefragOptions(method=method, make_room=["big"], **extra))
    assert [(m.pod, m.from_, m.to) for m in plan.moves()] == [("small", "n0", "n1")] and plan.placements
    job = plan.metrics.per_job["big"]
    assert job["lost_gpu_s"] == pytest.approx(2 * 600.0) and job["moved_without_checkpoint"] == 0
