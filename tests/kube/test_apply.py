"""``planner apply --via eviction`` on the real control plane (seed 3 of tests/support/apply_cluster.py: a
Deployment, a StatefulSet, a Job and bare pods under PodDisruptionBudgets, spread over 8 GPU nodes), planned by
``planner defrag --from kubernetes``: bad input first (it must change nothing), then the plan carried out while
a watcher checks every budget at every pod event."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.support.apply_run import Cluster, PdbWatcher, apply_args, planner, planner_leftovers, ready_by_app, seeded_cluster

SEED = 3


@pytest.fixture(scope="module")
def cluster(controlplane_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with seeded_cluster(SEED, tmp_path_factory.mktemp("apply"), controlplane_bin) as made:
        yield made


def test_a_kubeconfig_that_does_not_work_is_exit_2_naming_the_context_and_the_answer(cluster: Cluster, tmp_path: Path) -> None:
    text = Path(cluster.kubeconfig).read_text()
    token = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("token:"))
    wrong = tmp_path / "wrong-token"
    wrong.write_text(text.replace(token, "not-the-token"))
    done = planner(["apply", str(cluster.plan_path), "--kubeconfig", str(wrong)], cluster.env)
    assert done.returncode == 2, done.stderr
    assert "context 'planner-controlplane'" in done.stderr or "context '" in done.stderr
    assert "401" in done.stderr and "nothing was changed" in done.stderr
    assert "Traceback" not in done.stderr
    missing = planner(["apply", str(cluster.plan_path), "--kubeconfig", cluster.kubeconfig, "--context", "nope"], cluster.env)
    assert missing.returncode == 2 and "--context 'nope': not in" in missing.stderr
    assert planner_leftovers(cluster.core()) == {"tainted": [], "labelled": [], "configmaps": []}


def test_a_plan_for_another_cluster_is_exit_2_before_the_first_wave(cluster: Cluster, tmp_path: Path) -> None:
    other = cluster.plan()
    first = other["waves"][0][0]
    first["uid"] = "99999999-0000-4000-8000-000000000000"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    before = {p.metadata.uid for p in cluster.core().list_pod_for_all_namespaces().items}
    done = planner(["apply", str(path), "--kubeconfig", cluster.kubeconfig], cluster.env)
    assert done.returncode == 2, done.stderr
    assert f"waves[0][0].pod: pod '{first['pod']}' (UID 99999999-0000-4000-8000-000000000000) is not in the cluster" in done.stderr
    assert "nothing was changed" in done.stderr
    assert {p.metadata.uid for p in cluster.core().list_pod_for_all_namespaces().items} == before
    assert planner_leftovers(cluster.core()) == {"tainted": [], "labelled": [], "configmaps": []}


def test_dry_run_changes_nothing(cluster: Cluster) -> None:
    done = planner([*apply_args(cluster, "--dry-run")], cluster.env)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["dry_run"] is True and len(shown["waves"]) == len(cluster.plan()["waves"])
    assert planner_leftovers(cluster.core()) == {"tainted": [], "labelled": [], "configmaps": []}


def _observed(policy: Any, name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        budget = policy.read_namespaced_pod_disruption_budget(name, "apps")
        if budget.status.observed_generation == budget.metadata.generation:
            return
        time.sleep(0.2)


def _stopped_and_aborted(cluster: Cluster, stopped: Any, needle: str) -> None:
    """The run exited 1 with ``needle`` in its message, left no taint and no copy, its state 'stopped'; --abort clears it."""
    core = cluster.core()
    assert stopped.returncode == 1, stopped.stderr
    assert needle in stopped.stderr, stopped.stderr
    left = planner_leftovers(core)
    assert left["tainted"] == [] and left["labelled"] == [] and len(left["configmaps"]) == 1
    assert json.loads(core.read_namespaced_config_map(left["configmaps"][0], "default").data["state.json"])["status"] == "stopped"
    aborted = planner([*apply_args(cluster, "--abort")], cluster.env)
    assert aborted.returncode == 0, aborted.stderr
    assert planner_leftovers(core) == {"tainted": [], "labelled": [], "configmaps": []}


def test_a_budget_that_refuses_until_the_deadline_stops_the_wave_cleanly(cluster: Cluster) -> None:
    """The first wave's first pod's budget set to allow no disruption: every eviction is a 429, retried until the
    wave's deadline, then exit 1 naming the pod, holds rolled back, the pod not evicted; a second budget over the
    pod (the Eviction API answers 500) stops the run the same way, quoting the server."""
    core = cluster.core()
    first = cluster.plan()["waves"][0][0]
    pod = core.read_namespaced_pod(first["pod"], "apps")
    labels = {k: v for k, v in pod.metadata.labels.items() if k in ("app", "job")}
    policy = client.PolicyV1Api(core.api_client)
    own = next(b for b in policy.list_namespaced_pod_disruption_budget("apps").items if b.spec.selector.match_labels == labels)
    original = {"minAvailable": own.spec.min_available, "maxUnavailable": own.spec.max_unavailable}
    policy.patch_namespaced_pod_disruption_budget(own.metadata.name, "apps", {"spec": {"minAvailable": None, "maxUnavailable": 0}})
    try:
        _observed(policy, own.metadata.name)
        stopped = planner([*apply_args(cluster, "--wave-deadline", "3")], cluster.env)
        _stopped_and_aborted(cluster, stopped, f"PodDisruptionBudgets still refuse the eviction of: apps/{first['pod']}")
        assert core.read_namespaced_pod(first["pod"], "apps").metadata.uid == pod.metadata.uid  # not evicted
    finally:
        policy.patch_namespaced_pod_disruption_budget(own.metadata.name, "apps", {"spec": original})
    policy.create_namespaced_pod_disruption_budget("apps", {"metadata": {"name": "second"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}})
    try:
        _observed(policy, "second")
        stopped = planner([*apply_args(cluster, "--wave-deadline", "3")], cluster.env)
        _stopped_and_aborted(cluster, stopped, "more than one PodDisruptionBudget")
    finally:
        policy.delete_namespaced_pod_disruption_budget("second", "apps")
    _observed(policy, own.metadata.name)


def test_apply_vacates_the_planned_nodes_within_every_budget(cluster: Cluster, tmp_path: Path) -> None:
    core = cluster.core()
    plan = cluster.plan()
    before = ready_by_app(core)
    watcher = PdbWatcher(core).start()
    report_path = tmp_path / "report.json"
    try:
        done = planner([*apply_args(cluster, "--json", str(report_path), "--wave-deadline", "300")], cluster.env)
    finally:
        watcher.stop()
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text())
    print(json.dumps({k: v for k, v in report.items() if k != "waves"}), file=__import__("sys").stderr)
    moves = sum(len(w) for w in plan["waves"])
    assert report["moves_done"] == moves == report["evictions"]
    assert report["nodes_vacated"] == report["nodes_vacated_planned"] == len(plan["vacated_nodes"])
    on_nodes = {p.spec.node_name for p in core.list_pod_for_all_namespaces().items}
    assert not on_nodes & set(plan["vacated_nodes"])
    assert report["replacements_on_target"] + report["replacements_elsewhere"] == moves
    assert watcher.violations == [] and watcher.events > 0
    assert len(watcher.terminated) == moves  # each moved pod once, nothing else
    assert ready_by_app(core) == before
    assert planner_leftovers(core)["tainted"] == []
    events = [e for e in core.list_namespaced_event("apps").items if e.reason == "PlannerEvicted"]
    assert len(events) == moves and all(e.source.component == "planner-apply" and report["plan"] in e.message for e in events)
    assert "nodes vacated:" in done.stdout and "on-target share" in done.stdout
    again = planner(apply_args(cluster), cluster.env)
    assert again.returncode == 2 and "--resume" in again.stderr  # a second run is refused, the state says it ran
