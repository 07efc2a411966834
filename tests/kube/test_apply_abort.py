"""``planner apply`` on the real control plane (seed 5 of tests/support/apply_cluster.py): the minimal Role of
deploy/kubernetes/planner-apply-rbac.yaml is enough and a missing permission is exit 2 naming the verb and resource; a run
killed while a bare pod's copy waits, then ``--abort``: no planner taint, label or state object is left, the copy
whose original still runs is removed, and every workload has as many Ready pods as before."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.support.apply_run import Cluster, apply_args, kill_when, planner, planner_leftovers, ready_by_app, seeded_cluster
from tests.support.paths import REPO

SEED = 5
ROLE = REPO / "deploy" / "kubernetes" / "planner-apply-rbac.yaml"
ACCOUNT = "planner-apply"


@pytest.fixture(scope="module")
def cluster(controlplane_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with seeded_cluster(SEED, tmp_path_factory.mktemp("apply-abort"), controlplane_bin) as made:
        yield made


def _account_kubeconfig(cluster: Cluster, path: Path) -> Path:
    """A kubeconfig for the ServiceAccount ``planner-apply`` (a token from the TokenRequest API)."""
    core = cluster.core()
    core.create_namespaced_service_account("default", {"metadata": {"name": ACCOUNT}})
    request = core.create_namespaced_service_account_token(ACCOUNT, "default", {"spec": {"expirationSeconds": 3600}})
    text = Path(cluster.kubeconfig).read_text()
    token = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.strip().startswith("token:"))
    path.write_text(text.replace(token, request.status.token))
    return path


def _grant(cluster: Cluster, documents: list[dict[str, Any]]) -> None:
    rbac = client.RbacAuthorizationV1Api(cluster.core().api_client)
    for doc in documents:
        if doc["kind"] == "ClusterRole":
            rbac.create_cluster_role(doc)
            rbac.create_cluster_role_binding(
                {
                    "metadata": {"name": doc["metadata"]["name"]},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": doc["metadata"]["name"]},
                    "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": "default"}],
                }
            )
        else:
            rbac.create_namespaced_role(doc["metadata"]["namespace"], doc)
            rbac.create_namespaced_role_binding(
                doc["metadata"]["namespace"],
                {
                    "metadata": {"name": doc["metadata"]["name"]},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": doc["metadata"]["name"]},
                    "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": "default"}],
                },
            )


def _revoke(cluster: Cluster, documents: list[dict[str, Any]]) -> None:
    rbac = client.RbacAuthorizationV1Api(cluster.core().api_client)
    for doc in documents:
        name = doc["metadata"]["name"]
        if doc["kind"] == "ClusterRole":
            rbac.delete_cluster_role_binding(name)
            rbac.delete_cluster_role(name)
        else:
            rbac.delete_namespaced_role_binding(name, doc["metadata"]["namespace"])
            rbac.delete_namespaced_role(name, doc["metadata"]["namespace"])


def _wait_granted(cluster: Cluster, kubeconfig: Path, expect_code: int) -> Any:
    """RBAC changes reach the authorizer through its informer: retry the dry run for a while."""
    deadline = time.monotonic() + 60
    while True:
        done = planner(["apply", str(cluster.plan_path), "--kubeconfig", str(kubeconfig), "--dry-run"], cluster.env)
        if done.returncode == expect_code or time.monotonic() > deadline:
            return done
        time.sleep(0.5)


def test_the_shipped_role_is_enough_and_a_missing_verb_is_named(cluster: Cluster, tmp_path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(ROLE.read_text()) if d]
    kubeconfig = _account_kubeconfig(cluster, tmp_path / "account")
    without_eviction = copy.deepcopy(documents)
    without_eviction[0]["rules"] = [r for r in without_eviction[0]["rules"] if r["resources"] != ["pods/eviction"]]
    try:
        _grant(cluster, without_eviction)
        refused = _wait_granted(cluster, kubeconfig, 2)
        assert refused.returncode == 2, refused.stderr
        assert "may not create pods/eviction" in refused.stderr and "deploy/kubernetes/planner-apply-rbac.yaml" in refused.stderr
        _revoke(cluster, without_eviction)
        _grant(cluster, documents)
        allowed = _wait_granted(cluster, kubeconfig, 0)
        assert allowed.returncode == 0, allowed.stderr
    finally:
        _revoke(cluster, documents)
        cluster.core().delete_namespaced_service_account(ACCOUNT, "default")
    assert planner_leftovers(cluster.core()) == {"tainted": [], "labelled": [], "configmaps": []}


def test_abort_after_a_kill_leaves_no_planner_taint_or_object(cluster: Cluster) -> None:
    core = cluster.core()
    before = ready_by_app(core)
    killed = kill_when(cluster, apply_args(cluster), {"copied"}, min_wave=0)
    assert killed["status"] == "running"
    left = planner_leftovers(core)
    assert left["tainted"] and left["configmaps"]  # the kill left its holds and its state
    aborted = planner([*apply_args(cluster, "--abort")], cluster.env)
    assert aborted.returncode == 0, aborted.stderr
    assert planner_leftovers(core) == {"tainted": [], "labelled": [], "configmaps": []}
    deadline = time.monotonic() + 60
    while ready_by_app(core) != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready_by_app(core) == before


def test_force_delete_bypasses_only_the_budget_and_says_so(cluster: Cluster, tmp_path: Path) -> None:
    """A hand-made one-move plan for a web pod whose budget allows nothing: with --force-delete the refused pod is
    deleted at the wave's deadline (counted as a forced delete), its replacement lands on the target."""
    core = cluster.core()
    pods = [p for p in core.list_namespaced_pod("apps").items if p.metadata.deletion_timestamp is None]
    web = next(p for p in pods if (p.metadata.labels or {}).get("app") == "web")
    load = {n.metadata.name: 0 for n in core.list_node().items}
    for p in pods:
        load[p.spec.node_name] = load.get(p.spec.node_name, 0) + 1
    target = min((n for n in load if n != web.spec.node_name), key=lambda n: (load[n], n))
    plan = {
        "version": 1,
        "kind": "defrag",
        "waves": [[{"pod": web.metadata.name, "from": web.spec.node_name, "to": target, "uid": web.metadata.uid}]],
        "vacated_nodes": [],
    }
    plan_path = tmp_path / "one-move.json"
    plan_path.write_text(json.dumps(plan))
    policy = client.PolicyV1Api(core.api_client)
    policy.patch_namespaced_pod_disruption_budget("web", "apps", {"spec": {"maxUnavailable": 0}})
    report_path = tmp_path / "report.json"
    try:
        deadline = time.monotonic() + 60
        while policy.read_namespaced_pod_disruption_budget("web", "apps").status.disruptions_allowed != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        done = planner(
            ["apply", str(plan_path), "--kubeconfig", cluster.kubeconfig, "--force-delete", "--wave-deadline", "2", "--json", str(report_path)], cluster.env
        )
    finally:
        policy.patch_namespaced_pod_disruption_budget("web", "apps", {"spec": {"maxUnavailable": 1}})
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text())
    assert report["forced_deletes"] == 1 and report["pdb_refusals"] >= 1 and report["evictions"] == 0
    assert report["replacements_on_target"] == 1
    assert "event=force-deleted" in done.stderr
    assert web.metadata.uid not in {p.metadata.uid for p in core.list_namespaced_pod("apps").items}
    assert planner([*["apply", str(plan_path), "--kubeconfig", cluster.kubeconfig], "--abort"], cluster.env).returncode == 0
    assert planner_leftovers(core) == {"tainted": [], "labelled": [], "configmaps": []}
