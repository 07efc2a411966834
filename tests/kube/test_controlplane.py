"""The throwaway control plane against Kubernetes' own answers: the bundled gpu-cluster List loaded, every
node Ready and every bound pod Running through the API, budgets as the real disruption controller computes
them, a List the API server rejects (exit 2 quoting it), a port in use (another one), up and down."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.utils import parse_quantity

from planner.kube.controlplane import Running
from tests.support.controlplane import binary_env
from tests.support.paths import INSTANCES

GPU_CLUSTER = INSTANCES / "kubernetes" / "gpu-cluster.json"


def list_items(path: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(path.read_text())["items"]
    return items


def api(running: Running) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(running.kubeconfig)))


def condition(obj: Any, kind: str) -> str | None:
    for c in obj.status.conditions or []:
        if c.type == kind:
            return str(c.status)
    return None


def test_every_node_ready_every_bound_pod_running(controlplane: Running) -> None:
    items = list_items(GPU_CLUSTER)
    core = api(controlplane)
    nodes = {n.metadata.name: n for n in core.list_node().items}
    listed_nodes = [i for i in items if i["kind"] == "Node"]
    assert set(nodes) == {n["metadata"]["name"] for n in listed_nodes}
    for listed in listed_nodes:
        node = nodes[listed["metadata"]["name"]]
        assert condition(node, "Ready") == "True", node.metadata.name
        assert {k: parse_quantity(v) for k, v in node.status.allocatable.items()} == {k: parse_quantity(v) for k, v in listed["status"]["allocatable"].items()}
        assert [t.key for t in node.spec.taints or []] == [t["key"] for t in listed["spec"].get("taints", [])]
    leases = client.CoordinationV1Api(config.new_client_from_config(str(controlplane.kubeconfig))).list_namespaced_lease("kube-node-lease").items
    assert {lease.metadata.name for lease in leases} >= set(nodes)
    pods = {(p.metadata.namespace, p.metadata.name): p for p in core.list_pod_for_all_namespaces().items}
    listed_pods = [i for i in items if i["kind"] == "Pod"]
    assert set(pods) == {(p["metadata"].get("namespace") or "default", p["metadata"]["name"]) for p in listed_pods}
    for listed in listed_pods:
        pod = pods[(listed["metadata"].get("namespace") or "default", listed["metadata"]["name"])]
        assert pod.spec.node_name == listed["spec"].get("nodeName")
        if listed.get("status", {}).get("phase") in ("Succeeded", "Failed"):  # finished: ends as the List recorded
            assert pod.status.phase == listed["status"]["phase"] and condition(pod, "Ready") == "False", pod.metadata.name
        elif pod.spec.node_name:
            assert pod.status.phase == "Running" and condition(pod, "Ready") == "True", pod.metadata.name
            assert pod.status.pod_ip and all(cs.ready and cs.state.running for cs in pod.status.container_statuses)
        else:  # pending in the List: held by the gate until a replay releases it
            assert pod.status.phase == "Pending"
            assert [g.name for g in pod.spec.scheduling_gates] == ["planner.io/hold"]
        if listed["metadata"].get("uid"):
            assert pod.metadata.annotations["planner.io/source-uid"] == listed["metadata"]["uid"]


def test_budgets_as_the_disruption_controller_computes_them(controlplane: Running) -> None:
    """Each budget's status is the real controller's: observed at its generation, and disruptionsAllowed
    equal to the healthy pods it selects minus those it must keep (0 when its scale is unknown)."""
    policy = client.PolicyV1Api(config.new_client_from_config(str(controlplane.kubeconfig)))
    core = api(controlplane)
    budgets = policy.list_pod_disruption_budget_for_all_namespaces().items
    assert {b.metadata.name for b in budgets} == {i["metadata"]["name"] for i in list_items(GPU_CLUSTER) if i["kind"] == "PodDisruptionBudget"}
    for budget in budgets:
        assert budget.status.observed_generation == budget.metadata.generation
        selector = ",".join(f"{k}={v}" for k, v in budget.spec.selector.match_labels.items())
        selected = core.list_namespaced_pod(budget.metadata.namespace, label_selector=selector).items
        healthy = sum(1 for p in selected if condition(p, "Ready") == "True")
        assert budget.status.current_healthy == healthy
        assert budget.status.disruptions_allowed == max(0, healthy - budget.status.desired_healthy)


def test_a_rejected_object_is_exit_2_quoting_the_server(controlplane_bin: Path, tmp_path: Path) -> None:
    items = list_items(GPU_CLUSTER)
    bad = json.loads(json.dumps(next(i for i in items if i["kind"] == "Pod" and i["spec"].get("nodeName"))))
    bad["metadata"]["name"] = "bad-pod"
    bad["spec"]["containers"][0]["name"] = "Not_A_DNS_Label"
    listed = tmp_path / "bad.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*items, bad]}))
    done = subprocess.run(
        [sys.executable, "-m", "planner", "controlplane", "up", "--from", str(listed), "--state-dir", str(tmp_path / "state")],
        capture_output=True,
        text=True,
        env=binary_env(controlplane_bin),
        timeout=900,
    )
    assert done.returncode == 2, done.stderr
    namespace = bad["metadata"]["namespace"]
    assert f"Pod {namespace}/bad-pod" in done.stderr
    assert "Not_A_DNS_Label" in done.stderr and "Invalid value" in done.stderr  # the API server's own message
    assert "Traceback" not in done.stderr


def test_up_on_a_port_in_use_takes_another_and_down_removes_the_state(controlplane_bin: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        state = tmp_path / "state"
        kubeconfig = tmp_path / "kubeconfig"
        env = binary_env(controlplane_bin)
        up = subprocess.run(
            [
                sys.executable,
                "-m",
                "planner",
                "controlplane",
                "up",
                "--from",
                str(GPU_CLUSTER),
                "--profile",
                "binpack",
                "--port",
                str(busy),
                "--state-dir",
                str(state),
                "--kubeconfig-out",
                str(kubeconfig),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        try:
            assert up.returncode == 0, up.stderr
            assert up.stdout.strip() == str(kubeconfig)
            ready = json.loads((state / "ready.json").read_text())
            assert ready["portWasInUse"] and ready["apiserverPort"] != busy and ready["profile"] == "binpack"
            assert f"port {busy} was in use" in up.stderr
            written = yaml.safe_load(kubeconfig.read_text())
            assert [c["cluster"]["server"] for c in written["clusters"]] == [f"https://127.0.0.1:{ready['apiserverPort']}"]
            assert kubeconfig.stat().st_mode & 0o777 == 0o600
            core = client.CoreV1Api(config.new_client_from_config(str(kubeconfig)))  # CA-verified, token
            assert len(core.list_node().items) == sum(1 for i in list_items(GPU_CLUSTER) if i["kind"] == "Node")
        finally:
            down = subprocess.run(
                [sys.executable, "-m", "planner", "controlplane", "down", "--state-dir", str(state)], capture_output=True, text=True, env=env, timeout=120
            )
        assert down.returncode == 0, down.stderr
        assert not state.exists()
        pid = ready["pid"]
        assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] == "Z"


@pytest.mark.parametrize("bad", ["not json at all {", '{"kind": "Pod"}'])
def test_a_list_the_reader_refuses_never_starts_anything(controlplane_bin: Path, tmp_path: Path, bad: str) -> None:
    listed = tmp_path / "bad.json"
    listed.write_text(bad)
    done = subprocess.run(
        [sys.executable, "-m", "planner", "controlplane", "up", "--from", str(listed), "--state-dir", str(tmp_path / "state")],
        capture_output=True,
        text=True,
        env=binary_env(controlplane_bin),
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert "error:" in done.stderr and "Traceback" not in done.stderr
