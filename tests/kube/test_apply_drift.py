"""Drift injected during wave 2 of a run on the real control plane (seed 2 of tests/support/apply_cluster.py:
7 waves, gpu-00 the target of waves 1-5, gpu-06 of waves 6-7), each kind on a fresh cluster: a pod the plan
moves later deleted, the Deployment scaled up, a later target cordoned, a new pod bound to a later target.

``--on-drift stop`` stops before the next wave with the difference listed (exit 1, state ``stopped``, no taint
left); ``--on-drift replan`` plans the rest from the live cluster, says what changed and why, and ends with
every node of the effective plan vacated, no budget broken at any instant and every workload Ready."""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.apply_cluster import NAMESPACE
from tests.support.apply_run import Cluster, PdbWatcher, apply_args, planner_leftovers, ready_by_app, run_with_fault, seeded_cluster

SEED = 2
LATER_TARGET = "gpu-06"
LATER_POD = "db-2"


def _delete_pod(cluster: Cluster) -> tuple[str, dict[str, int]]:
    cluster.core().delete_namespaced_pod(LATER_POD, NAMESPACE)
    return f"pod '{NAMESPACE}/{LATER_POD}' (node 'gpu-04') is gone", {}


def _scale(cluster: Cluster) -> tuple[str, dict[str, int]]:
    from kubernetes import client

    client.AppsV1Api(cluster.core().api_client).patch_namespaced_deployment_scale("web", NAMESPACE, {"spec": {"replicas": 5}})
    return f"ReplicaSet {NAMESPACE}/web-5d8f7c9b6 has 5 pods, 4 before: scaled up", {"web": 1}


def _cordon(cluster: Cluster) -> tuple[str, dict[str, int]]:
    cluster.core().patch_node(LATER_TARGET, {"spec": {"unschedulable": True}})
    return f"node '{LATER_TARGET}' was cordoned", {}


def _intruder(cluster: Cluster) -> tuple[str, dict[str, int]]:
    """A pod bound straight to the later target (no scheduler), taking 6 of its 8 GPUs."""
    requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "6"}
    body = {
        "metadata": {"name": "intruder", "labels": {"app": "intruder"}},
        "spec": {
            "nodeName": LATER_TARGET,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": requests, "limits": {"nvidia.com/gpu": "6"}}}],
        },
    }
    cluster.core().create_namespaced_pod(NAMESPACE, body)
    return f"pod '{NAMESPACE}/intruder' is new (on node '{LATER_TARGET}')", {"intruder": 1}


FAULTS: dict[str, Callable[[Cluster], tuple[str, dict[str, int]]]] = {
    "pod-deleted": _delete_pod,
    "workload-scaled": _scale,
    "node-cordoned": _cordon,
    "pod-on-target": _intruder,
}


def _inject(cluster: Cluster, fault: str, *extra: str, report: Path | None = None) -> tuple[Any, str, dict[str, int], dict[str, int], PdbWatcher]:
    core = cluster.core()
    before = ready_by_app(core)
    watcher = PdbWatcher(core).start()
    found: list[tuple[str, dict[str, int]]] = []
    args = apply_args(cluster, *extra, *(["--json", str(report)] if report else []))
    try:
        done, _state = run_with_fault(cluster, args, {"evicting", "evicted", "done"}, 1, lambda: found.append(FAULTS[fault](cluster)))
    finally:
        watcher.stop()
    needle, more = found[0]
    return done, needle, before, more, watcher


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_drift_in_wave_2_stops_before_the_next_wave_with_the_difference(fault: str, controlplane_bin: Path, tmp_path: Path) -> None:
    with seeded_cluster(SEED, tmp_path, controlplane_bin) as cluster:
        waves = len(cluster.plan()["waves"])
        done, needle, _before, _more, watcher = _inject(cluster, fault, "--on-drift", "stop")
        assert done.returncode == 1, done.stderr
        after = re.search(r"drift after wave (\d+): the cluster moved under the plan; stopped before wave (\d+)", done.stderr)
        assert after, done.stderr
        assert 2 <= int(after.group(1)) < waves and int(after.group(2)) == int(after.group(1)) + 1
        assert needle in done.stderr
        assert "event=drift" in done.stderr and "--on-drift replan" in done.stderr
        core = cluster.core()
        left = planner_leftovers(core)
        assert left["tainted"] == [] and len(left["configmaps"]) == 1
        state = json.loads(core.read_namespaced_config_map(left["configmaps"][0], "default").data["state.json"])
        assert state["status"] == "stopped" and state["next_wave"] == int(after.group(1))
        assert any(needle in line for line in state["drift"])
        assert watcher.violations == []


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_drift_in_wave_2_is_replanned_and_the_run_ends_valid(fault: str, controlplane_bin: Path, tmp_path: Path) -> None:
    with seeded_cluster(SEED, tmp_path, controlplane_bin) as cluster:
        report_path = tmp_path / "report.json"
        done, needle, before, more, watcher = _inject(cluster, fault, "--on-drift", "replan", "--wave-deadline", "300", report=report_path)
        assert done.returncode == 0, done.stderr
        report = json.loads(report_path.read_text())
        assert report["replans"], done.stderr
        print(
            fault, json.dumps({k: report[k] for k in ("replans", "nodes_vacated", "nodes_vacated_planned", "moves_done", "on_target_share")}), file=sys.stderr
        )
        first = report["replans"][0]
        assert any(needle in line for line in first["why"]) and first["after_wave"] >= 2
        assert {"moves_kept", "moves_dropped", "moves_added", "vacated_lost", "vacated_gained"} <= set(first["changes"])
        assert "event=replanned" in done.stderr and f"re-planned after wave {first['after_wave']}" in done.stdout
        assert report["nodes_vacated"] == report["nodes_vacated_planned"] and report["nodes_vacated_planned"] >= 1
        assert watcher.violations == []
        core = cluster.core()
        if fault == "node-cordoned":
            assert not [m for m in first["changes"]["moves_added"] if m.endswith(f"->{LATER_TARGET}")]
        expected = {k: before.get(k, 0) + more.get(k, 0) for k in {*before, *more}}
        deadline = time.monotonic() + 120
        while ready_by_app(core) != expected and time.monotonic() < deadline:
            time.sleep(0.5)
        assert ready_by_app(core) == expected
        assert planner_leftovers(core)["tainted"] == []
