"""The CPU-only rule of the pool policy where the cluster has no CPU-only node (issue 59: a CPU-only pod
was moved onto another GPU node while the report said ``cpu_pods_on_gpu_nodes: false``, no note). The
rule keeps CPU-only pods to the CPU-only nodes; with none it cannot apply, and the report says so: what
the plan may do (``cpu_pods_on_gpu_nodes: true``) and why, in a note. Where CPU-only nodes exist, a
CPU-only pod never arrives on a GPU node and the report says ``false``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.cluster import Cluster
from planner.engine.defrag import DefragOptions, plan_defrag
from planner.plans import DefragPlan
from planner.pools import PoolPolicy, apply_pools
from tests.support.planner_here import planner


def gpu_only(pending_cpu_pod: bool = False, cpu_node: bool = False) -> Cluster:
    """Three 8-GPU nodes: n0 holds a 4-GPU pod, n1 only a CPU-only pod (moving it to n0 vacates n1), n2
    a 2-GPU pod; with ``cpu_node``, a CPU-only node c0 too (full: the CPU-only pod has nowhere to go)."""
    nodes = [{"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 512, "gpu_model": "H100", "asw": "s0"} for i in range(3)]
    pods: list[dict[str, Any]] = [
        {"name": "train", "gpus": 4, "cpus": 8, "node": "n0"},
        {"name": "web", "gpus": 0, "cpus": 4, "memory_gib": 8, "node": "n1"},
        {"name": "eval", "gpus": 2, "cpus": 8, "node": "n2"},
    ]
    if cpu_node:
        nodes.append({"name": "c0", "gpus": 0, "cpus": 8, "memory_gib": 16, "asw": "s0"})
        pods.append({"name": "db", "gpus": 0, "cpus": 8, "memory_gib": 16, "node": "c0"})
    if pending_cpu_pod:
        pods.append({"name": "cron", "gpus": 0, "cpus": 2, "memory_gib": 4})
    return Cluster.model_validate({"nodes": nodes, "pods": pods})


def plan_and_pools(cluster: Cluster, **options: Any) -> tuple[set[str], dict[str, Any]]:
    plan = plan_defrag(cluster, DefragOptions(**options))
    assert isinstance(plan, DefragPlan)
    return {m.pod for m in plan.moves()}, plan.report.pools  # type: ignore[attr-defined]  # an extra field of the report


def test_without_a_cpu_only_node_the_report_says_the_rule_could_not_apply() -> None:
    moved, pools = plan_and_pools(gpu_only())
    assert "web" in moved  # n1 is vacated: the CPU-only pod moves to another GPU node
    assert pools["cpu_pods_on_gpu_nodes"] is True and pools["cpu_pods_kept_off_gpu_nodes"] == 0
    note = (
        "CPU-only pods are not kept off GPU nodes: the cluster has no CPU-only node to keep them to, so 1 movable CPU-only pod(s) "
        "on GPU nodes may move to other GPU nodes (lock them, or scope the plan with --node-selector, to keep them in place)"
    )
    assert pools["notes"] == [note]
    moved, allowed = plan_and_pools(gpu_only(), allow_cpu_pods_on_gpu_nodes=True)
    assert "web" in moved and allowed["cpu_pods_on_gpu_nodes"] is True and "notes" not in allowed


def test_with_a_cpu_only_node_the_rule_holds_and_the_report_says_false() -> None:
    moved, pools = plan_and_pools(gpu_only(cpu_node=True))
    assert "web" not in moved and pools["cpu_pods_on_gpu_nodes"] is False and "notes" not in pools


def test_a_gpu_only_cluster_without_cpu_only_pods_has_nothing_to_say() -> None:
    cluster = gpu_only()
    cluster = cluster.model_copy(update={"pods": [p for p in cluster.pods if p.gpus > 0]})
    _, report = apply_pools(cluster, PoolPolicy())
    assert report.cpu_pods_on_gpu_nodes is False and report.notes == []


def test_a_pending_cpu_only_pod_is_named_in_the_note() -> None:
    _, report = apply_pools(gpu_only(pending_cpu_pod=True), PoolPolicy())
    assert report.cpu_pods_on_gpu_nodes is True
    assert "1 movable CPU-only pod(s) on GPU nodes may move to other GPU nodes and 1 pending CPU-only pod(s) may start on GPU nodes" in report.notes[0]


def test_the_command_line_report_holds(tmp_path: Path) -> None:
    path = tmp_path / "gpu-only.json"
    path.write_text(gpu_only().model_dump_json())
    done = planner("defrag", str(path), "-o", "json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert "web" in {m["pod"] for wave in plan["waves"] for m in wave}
    assert plan["report"]["pools"]["cpu_pods_on_gpu_nodes"] is True and plan["report"]["pools"]["notes"]


def test_a_model_name_shared_by_gpu_and_cpu_only_nodes_is_reported_as_the_rule_not_applied() -> None:
    cluster = gpu_only(cpu_node=True)
    nodes = [n.model_copy(update={"gpu_model": "H100"}) if n.gpus == 0 else n for n in cluster.nodes]
    _, report = apply_pools(cluster.model_copy(update={"nodes": nodes}), PoolPolicy())
    assert report.cpu_pods_on_gpu_nodes is True and "share the model name(s) ['H100']" in report.notes[0]
