"""``planner verify`` against Kubernetes' own answers, on one control plane for the whole file: the bundled
gpu-cluster List plus two bare pods binding host port 9400 (on h100-6 and h100-7, for the host-port case).

Hand-broken plans first, each refused with the right reason and leaving the cluster as it was (the refused
replacement deleted, the pod where it ran): a move onto a tainted node (TaintToleration), onto a node without the
MIG profile (NodeResourcesFit), onto a host-port clash (NodePorts), against required anti-affinity
(InterPodAffinity), an eviction over a budget (the Eviction API's 429 naming it); a plan for another snapshot (exit 2,
nothing changed). Then the tests that change the cluster, in this order: an accepted wave (make-before-break, the
replacement of a ReplicaSet's pod not adopted, the ReplicaSet's own new pod held by the gate) and a preemption whose
third victim the List's own budget refuses."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from planner.kube.apply_client import Kube, connect
from planner.kube.controlplane import Running, start, stop
from planner.kube.verify import VerifyOptions, verify_plan
from planner.kube.verify_hold import HOLD_GATE, HOLDER_NAME
from planner.kube.verify_steps import RUN_LABEL
from planner.plans import parse_plan
from tests.support.controlplane import binary_env
from tests.support.paths import INSTANCES

GPU_CLUSTER = INSTANCES / "kubernetes" / "gpu-cluster.json"
PORT = 9400


def _port_pod(name: str, node: str) -> dict[str, Any]:
    container = {"name": "agent", "image": "registry.example.com/agent:1", "resources": {"requests": {"cpu": "100m"}}}
    container["ports"] = [{"containerPort": PORT, "hostPort": PORT, "protocol": "TCP"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "research", "uid": f"uid-{name}", "labels": {"app": name}},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


@pytest.fixture(scope="module")
def cluster(controlplane_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, Kube]]:
    work = tmp_path_factory.mktemp("verify")
    items = json.loads(GPU_CLUSTER.read_text())["items"] + [_port_pod("port-a", "h100-6"), _port_pod("port-b", "h100-7")]
    listed = work / "list.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    running = start(str(listed), work / "state", timeout_s=900, binary=controlplane_bin)
    try:
        yield running, connect(str(running.kubeconfig), None)
    finally:
        stop(work / "state")


def uid(name: str) -> str:
    return f"uid-{name}" if name.startswith("port-") else next(f"uid-{ns}-{name}" for ns in ("research", "serving", "platform") if _listed(ns, name))


def _listed(namespace: str, name: str) -> bool:
    return any(
        i["kind"] == "Pod" and i["metadata"]["name"] == name and i["metadata"].get("namespace") == namespace
        for i in json.loads(GPU_CLUSTER.read_text())["items"]
    )


def defrag(*waves: list[tuple[str, str, str]]) -> dict[str, Any]:
    moves = [[{"pod": p, "from": a, "to": b, "uid": uid(p)} for p, a, b in wave] for wave in waves]
    return {"version": 1, "kind": "defrag", "waves": moves, "vacated_nodes": []}


def verify(kube: Kube, plan: dict[str, Any], run_id: str) -> dict[str, Any]:
    return verify_plan(kube, parse_plan(json.dumps(plan)), run_id, VerifyOptions(step_timeout_s=180), lambda *a, **k: None)


def where(kube: Kube, namespace: str, name: str) -> str | None:
    return kube.core.read_namespaced_pod(name, namespace).spec.node_name


def labelled(kube: Kube, run_id: str) -> list[Any]:
    return kube.core.list_pod_for_all_namespaces(label_selector=f"{RUN_LABEL}={run_id}").items


def wait_for(check: Any, what: str, timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")


@pytest.mark.parametrize(
    ("pod", "source", "target", "plugin", "fragment"),
    [
        ("finetune-1", "h100-5", "l40s-2", "TaintToleration", "untolerated taint"),
        ("embed-5c4b7-0", "a100-mig-0", "h100-7", "NodeResourcesFit", "Insufficient nvidia.com/mig-1g.10gb"),
        ("port-b", "h100-7", "h100-6", "NodePorts", "didn't have free ports for the requested pod ports"),
        ("etcd-0", "cpu-0", "h100-0", "InterPodAffinity", "anti-affinity rules"),
    ],
    ids=["tainted-node", "no-mig-profile", "host-port-clash", "anti-affinity"],
)
def test_a_hand_broken_move_is_refused_by_the_plugin(cluster: tuple[Running, Kube], pod: str, source: str, target: str, plugin: str, fragment: str) -> None:
    _, kube = cluster
    namespace = uid(pod).split("-")[1] if not pod.startswith("port-") else "research"
    result = verify(kube, defrag([(pod, source, target)]), f"broken-{plugin.lower()}")
    assert result["checked"] == {"moves": 1, "evictions": 0, "placements": 0}
    assert result["refused"] == 1
    [refusal] = result["refusals"]
    assert (refusal["step"], refusal["pod"], refusal["node"], refusal["from"], refusal["by"]) == ("move", pod, target, source, "kube-scheduler")
    assert refusal["plugin"] == plugin, refusal
    assert fragment in refusal["message"] and refusal["message"].startswith("0/16 nodes are available"), refusal["message"]
    assert "didn't satisfy plugin(s) [NodeAffinity]" not in refusal["reason"]  # the other 15 nodes, left out by the pin
    assert where(kube, namespace, pod) == source  # the pod stays; its replacement is gone
    wait_for(lambda: not labelled(kube, f"broken-{plugin.lower()}"), "the refused replacement deleted")


def test_an_eviction_over_a_budget_is_refused_naming_it(cluster: tuple[Running, Kube]) -> None:
    """The replacement is admitted and Ready, but the budget (made to keep 5 pods: the 4 replicas and the
    replacement) allows no disruption: the Eviction API answers 429 naming it, and the replacement is removed."""
    _, kube = cluster
    policy = client.PolicyV1Api(kube.api_client)
    original = policy.read_namespaced_pod_disruption_budget("llm-serve", "serving")
    policy.patch_namespaced_pod_disruption_budget("llm-serve", "serving", {"spec": {"minAvailable": 5}})
    try:
        result = verify(kube, defrag([("llm-serve-7d9f8-2", "h100-5", "h100-4")]), "broken-budget")
    finally:
        policy.patch_namespaced_pod_disruption_budget("llm-serve", "serving", {"spec": {"minAvailable": original.spec.min_available}})
    assert result["checked"] == {"moves": 1, "evictions": 1, "placements": 0}
    assert result["accepted"] == {"moves": 1, "evictions": 0, "placements": 0}  # admitted by kube-scheduler, refused by the budget
    [refusal] = result["refusals"]
    assert (refusal["step"], refusal["by"], refusal["budgets"]) == ("eviction", "Eviction API", ["serving/llm-serve"])
    assert refusal["message"].startswith("429") and "disruption budget llm-serve needs 5 healthy pods" in refusal["message"], refusal["message"]
    assert where(kube, "serving", "llm-serve-7d9f8-2") == "h100-5"
    wait_for(lambda: not labelled(kube, "broken-budget"), "the replacement of the refused move deleted")


def test_a_plan_for_another_snapshot_is_exit_2_naming_the_pod(cluster: tuple[Running, Kube], controlplane_bin: Path, tmp_path: Path) -> None:
    running, kube = cluster
    plan = defrag([("finetune-0", "h100-4", "h100-7")], [("finetune-1", "h100-6", "h100-4")])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    done = subprocess.run(
        [sys.executable, "-m", "planner", "verify", str(path), "--kubeconfig", str(running.kubeconfig)],
        capture_output=True,
        text=True,
        env=binary_env(controlplane_bin),
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "waves[1][0].from: the plan moves pod 'finetune-1' from node 'h100-6'; in the cluster it is on node 'h100-5'" in done.stderr
    assert "nothing was changed" in done.stderr and "Traceback" not in done.stderr
    assert where(kube, "research", "finetune-0") == "h100-4"
    admission = client.AdmissionregistrationV1Api(kube.api_client)
    assert not [p for p in admission.list_mutating_admission_policy().items if p.metadata.name == "planner-verify-hold"]


# -- the tests below change the cluster (they run last, in this order) -----------------------------------------


def test_an_accepted_wave_moves_make_before_break_and_nothing_adopts_the_replacements(cluster: tuple[Running, Kube]) -> None:
    _, kube = cluster
    result = verify(kube, defrag([("finetune-1", "h100-5", "h100-4"), ("llm-serve-7d9f8-2", "h100-5", "h100-4")]), "accepted")
    assert (result["refused"], result["checked"], result["skipped"]) == (0, {"moves": 2, "evictions": 2, "placements": 0}, [])
    replacements = {p.metadata.annotations["planner.io/copy-of"]: p for p in labelled(kube, "accepted")}
    assert len(replacements) == 2
    for pod in replacements.values():
        assert pod.spec.node_name == "h100-4" and pod.status.phase == "Running"
        [owner] = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.controller) == ("Deployment", HOLDER_NAME, True)
    serving = next(p for p in replacements.values() if p.metadata.namespace == "serving")
    assert serving.metadata.labels["app"] == "llm-serve" and serving.metadata.labels["pod-template-hash"] == "7d9f8"
    names = {p.metadata.name for p in kube.core.list_namespaced_pod("serving").items}
    assert "llm-serve-7d9f8-2" not in names  # evicted
    # the ReplicaSet saw its pod go and made a new one: held by the gate, never scheduled; it did not adopt the replacement
    fresh = wait_for(
        lambda: [
            p
            for p in kube.core.list_namespaced_pod("serving", label_selector="app=llm-serve").items
            if p.metadata.owner_references[0].kind == "ReplicaSet" and not p.spec.node_name
        ],
        "the ReplicaSet's new pod",
    )
    assert [g.name for g in fresh[0].spec.scheduling_gates] == [HOLD_GATE]
    time.sleep(2)  # the ReplicaSet has synced (it made its pod): the replacement is still there, still the hold's
    again = kube.core.read_namespaced_pod(serving.metadata.name, "serving")
    assert again.metadata.owner_references[0].name == HOLDER_NAME and again.metadata.deletion_timestamp is None


def test_a_preemption_over_the_lists_budget_is_refused_at_the_third_victim(cluster: tuple[Running, Kube]) -> None:
    """llm-serve's budget keeps 50% of its 4 replicas: two of three victims are evicted, the third refused."""
    _, kube = cluster
    victims = [("llm-serve-7d9f8-0", "l40s-0"), ("llm-serve-7d9f8-1", "l40s-1"), ("llm-serve-7d9f8-3", "h100-6")]
    plan = {"version": 1, "kind": "preempt", "job": "research/Job/train-big", "now_s": 0.0, "placements": []}
    plan["victims"] = [{"pod": p, "node": n, "job": "serving/Deployment/llm-serve", "lost_gpu_s": 0.0} for p, n in victims]
    result = verify(kube, copy.deepcopy(plan), "preempt-budget")
    assert result["checked"]["evictions"] == 3 and result["accepted"]["evictions"] == 2
    [refusal] = result["refusals"]
    assert (refusal["step"], refusal["pod"], refusal["budgets"]) == ("eviction", "llm-serve-7d9f8-3", ["serving/llm-serve"])
    assert refusal["message"].startswith("429") and "llm-serve" in refusal["message"]


def test_a_placement_kube_scheduler_makes_room_for_by_preempting_is_refused(cluster: tuple[Running, Kube]) -> None:
    """train-big-0 (8 GPUs, priority 500) placed on h100-4, where finetune-0 and notebook-alice (priority 100) hold 3
    GPUs: kube-scheduler refuses it (Insufficient nvidia.com/gpu), then preempts them and binds it; the plan, which
    names no victim, is refused with the scheduler's first answer."""
    _, kube = cluster
    plan = {"version": 1, "kind": "allocate", "placements": [{"pod": "train-big-0", "node": "h100-4"}]}
    result = verify(kube, plan, "preempting")
    assert result["checked"]["placements"] == 1 and result["accepted"]["placements"] == 0
    [refusal] = result["refusals"]
    assert (refusal["step"], refusal["pod"], refusal["node"], refusal["plugin"]) == ("placement", "train-big-0", "h100-4", "NodeResourcesFit")
    assert "Insufficient nvidia.com/gpu" in refusal["message"], refusal["message"]
