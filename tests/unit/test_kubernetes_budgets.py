"""PodDisruptionBudgets on import, on hand-made Lists whose answers are worked out here (issue 59): a
Pending replica spends the budget (``maxUnavailable: 1`` over three replicas, one Pending, allows no
disruption, so no plan may move the other two), and so do not-ready and terminating pods; a
controller's scale, a batch Job's missing one and the budget's own status count as the disruption
controller counts them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.adapters.kubernetes import import_kubernetes
from planner.cluster import SnapshotError
from planner.engine.defrag import DefragOptions, plan_defrag
from tests.support.planner_here import planner

WEB = "serving/Deployment/web"


def node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": {"allocatable": allocatable}}


def pod(name: str, on: str | None, owner: tuple[str, str], gpus: int = 1, labels: dict[str, str] | None = None, state: str = "ready") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": str(gpus)}}}]}
    if on is not None:
        spec["nodeName"] = on
    ready = {"ready": "True", "not-ready": "False", "pending": "False"}[state]
    status = {"phase": "Pending" if state == "pending" else "Running", "conditions": [{"type": "Ready", "status": ready}]}
    owner_ref = {"apiVersion": "apps/v1", "kind": owner[0], "name": owner[1], "uid": f"uid-{owner[1]}", "controller": True}
    meta = {"name": name, "namespace": "serving", "uid": f"uid-{name}", "labels": labels or {}, "ownerReferences": [owner_ref]}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def web(states: tuple[str, str, str] = ("ready", "ready", "pending")) -> list[dict[str, Any]]:
    """Three replicas of Deployment web (ReplicaSet web-7f9c): web-0 on n0, web-1 on n1, web-2 pending with no node."""
    labels = {"app": "web", "pod-template-hash": "7f9c"}
    where = ("n0", "n1", None)
    return [pod(f"web-{i}", where[i], ("ReplicaSet", "web-7f9c"), labels=labels, state=states[i]) for i in range(3)]


def pdb(rule: dict[str, Any], status: dict[str, Any] | None = None, app: str = "web") -> dict[str, Any]:
    budget = {"kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": f"{app}-pdb", "namespace": "serving"}}
    return {**budget, "spec": {"selector": {"matchLabels": {"app": app}}, **rule}, **({"status": status} if status else {})}


def fleet(*items: dict[str, Any]) -> dict[str, Any]:
    """Two 8-GPU nodes; a 4-GPU batch pod on n0 beside web-0, so that a defrag would empty n1 by moving web-1."""
    return {"kind": "List", "items": [node("n0"), node("n1"), pod("batch-0", "n0", ("Job", "batch"), gpus=4), *items]}


def imported(doc: dict[str, Any]) -> tuple[dict[str, int | None], list[str]]:
    result = import_kubernetes([(json.dumps(doc), "fleet.json")])
    return {j.name: j.disruption.max_unavailable if j.disruption else None for j in result.cluster.jobs}, result.warnings


def test_a_pending_replica_spends_the_budget_and_the_plan_moves_neither_other_replica(tmp_path: Path) -> None:
    doc = fleet(*web(), pdb({"maxUnavailable": 1}))
    budgets, warnings = imported(doc)
    assert budgets[WEB] == 0  # expected 3, healthy 2, wanted 3 - 1 = 2: 0 allowed
    assert any(
        w.startswith("PodDisruptionBudget serving/web-pdb: spec: 1 of its 3 expected pod(s) are not healthy")
        and w.endswith("0 disruption(s) allowed now, not 1")
        for w in warnings
    ), warnings
    cluster = import_kubernetes([(json.dumps(doc), "fleet.json")]).cluster
    plan = plan_defrag(cluster, DefragOptions())
    moved = {m.pod for m in plan.moves()}
    assert not moved & {"web-0", "web-1"}
    # the same List with every replica running: the budget allows one, and the plan moves web-1 to empty n1
    running = fleet(*web(("ready", "ready", "ready")), pdb({"maxUnavailable": 1}))
    running["items"][-2]["spec"]["nodeName"] = "n1"
    cluster = import_kubernetes([(json.dumps(running), "fleet.json")]).cluster
    assert {j.name: j.disruption.max_unavailable for j in cluster.jobs if j.disruption} == {WEB: 1}
    assert "web-1" in {m.pod for m in plan_defrag(cluster, DefragOptions()).moves()}
    # and through the command line, as an operator runs it
    source = tmp_path / "fleet.json"
    source.write_text(json.dumps(doc))
    done = planner("defrag", str(source), "--from", "kubernetes", "-o", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not {m["pod"] for wave in json.loads(done.stdout)["waves"] for m in wave} & {"web-0", "web-1"}


@pytest.mark.parametrize(
    ("rule", "states", "allowed"),
    [
        ({"maxUnavailable": 1}, ("ready", "not-ready", "ready"), 0),  # Running but not Ready: not healthy
        ({"maxUnavailable": 2}, ("ready", "ready", "pending"), 1),
        ({"maxUnavailable": "34%"}, ("ready", "ready", "ready"), 2),  # 34% of 3 rounded up is 2
        ({"maxUnavailable": "33%"}, ("ready", "ready", "pending"), 0),  # 0.99 rounds up to 1: wanted 2, healthy 2
        ({"minAvailable": 2}, ("ready", "ready", "pending"), 0),
        ({"minAvailable": 1}, ("ready", "ready", "pending"), 1),
        ({"minAvailable": "50%"}, ("ready", "ready", "ready"), 1),  # 1.5 rounds up to 2
        ({"minAvailable": "0%"}, ("ready", "not-ready", "pending"), 1),
    ],
)
def test_budgets_count_healthy_pods_with_kubernetes_rounding(rule: dict[str, Any], states: tuple[str, str, str], allowed: int) -> None:
    replicas = web(states)
    if states[2] != "pending":
        replicas[2]["spec"]["nodeName"] = "n1"
    budgets, _ = imported(fleet(*replicas, pdb(rule)))
    assert budgets[WEB] == allowed


def test_a_controller_in_the_list_gives_the_expected_pods() -> None:
    # the Deployment wants 5 replicas, 3 exist (one pending): expected 5, wanted 5 - 2 = 3, healthy 2
    deployment = {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "web", "namespace": "serving"}, "spec": {"replicas": 5}}
    budgets, _ = imported(fleet(*web(), pdb({"maxUnavailable": 2}), deployment))
    assert budgets[WEB] == 0
    deployment["spec"]["replicas"] = 2  # scaled down, the pending pod about to go: wanted 0, healthy 2
    budgets, _ = imported(fleet(*web(), pdb({"maxUnavailable": 2}), deployment))
    assert budgets[WEB] == 2


def test_a_batch_job_has_no_scale_and_its_budget_allows_nothing() -> None:
    jobs = [pod(f"train-{i}", "n1", ("Job", "train"), labels={"app": "train"}) for i in range(2)]
    budgets, warnings = imported(fleet(*jobs, pdb({"maxUnavailable": 1}, app="train")))
    assert budgets["serving/Job/train"] == 0
    assert any("controller Job serving/train has no scale" in w for w in warnings), warnings
    budgets, _ = imported(fleet(*jobs, pdb({"minAvailable": 1}, app="train")))  # an integer minAvailable works for any owner
    assert budgets["serving/Job/train"] == 1


def test_the_budgets_own_status_is_kept_when_smaller_and_said() -> None:
    running = web(("ready", "ready", "ready"))
    running[2]["spec"]["nodeName"] = "n1"
    budgets, warnings = imported(fleet(*running, pdb({"maxUnavailable": 2}, {"disruptionsAllowed": 1})))
    assert budgets[WEB] == 1
    assert "PodDisruptionBudget serving/web-pdb: status.disruptionsAllowed: 1 in the input, 2 from its pods" in " ".join(warnings)
    budgets, _ = imported(fleet(*running, pdb({"maxUnavailable": 2}, {"disruptionsAllowed": 3})))
    assert budgets[WEB] == 2
    budgets, _ = imported(fleet(*running, pdb({"maxUnavailable": 2}, {"disruptedPods": {"web-0": "2026-01-01T00:00:00Z"}})))
    assert budgets[WEB] == 1  # an eviction granted: web-0 is about to go


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("status", {"disruptionsAllowed": -1}, "status.disruptionsAllowed: must be a whole number at least 0"),
        ("status", {"disruptionsAllowed": "2"}, "status.disruptionsAllowed: must be a whole number at least 0"),
        ("status", {"disruptedPods": ["web-0"]}, "status.disruptedPods: must be an object"),
        ("replicas", "three", "Deployment serving/web: spec.replicas: must be a whole number"),
        ("spec", "150%", "spec.maxUnavailable: a percentage must be at most 100%, got '150%'"),
        ("spec", "9" * 5000 + "%", "spec.maxUnavailable: must be a whole number or a percentage such as '50%', got \"9999"),
    ],
)
def test_malformed_budget_status_and_scales_are_refused_by_field(where: str, value: Any, message: str) -> None:
    deployment = {"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "web", "namespace": "serving"}, "spec": {"replicas": 3}}
    budget = pdb({"maxUnavailable": 1})
    if where == "status":
        budget["status"] = value
    elif where == "spec":
        budget["spec"]["maxUnavailable"] = value
    else:
        deployment["spec"]["replicas"] = value
    with pytest.raises(SnapshotError, match=message.replace(".", r"\.")):
        import_kubernetes([(json.dumps(fleet(*web(), budget, deployment)), "fleet.json")])
