"""The throwaway control plane against Kubernetes' own answers: the bundled gpu-cluster List loaded, every
node Ready and every bound pod Running through the API, budgets as the real disruption controller computes
them, Jobs the List lacks derived and left alone by the Job controller, every port on 127.0.0.1, the start's
timings, a generated mixed fleet loaded as it is, a List the API server rejects (exit 2 quoting it), a port in
use (another one), up and down."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.utils import parse_quantity

from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
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


def test_a_rejected_derived_owner_names_the_pod_it_came_from(controlplane_bin: Path, tmp_path: Path) -> None:
    """A Job the List lacks is derived from its pods, the first one's spec its template: when the API server
    refuses it, the message quotes the server and names the Job, that it was derived, and the pod."""
    items = list_items(GPU_CLUSTER)
    pod = next(i for i in items if i["metadata"]["name"] == "pretrain-workers-0-0")
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-a", "gpu-b"]}]}]
            }
        }
    }
    listed = tmp_path / "bad.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    done = subprocess.run(
        [sys.executable, "-m", "planner", "controlplane", "up", "--from", str(listed), "--state-dir", str(tmp_path / "state")],
        capture_output=True,
        text=True,
        env=binary_env(controlplane_bin),
        timeout=900,
    )
    assert done.returncode == 2, done.stderr
    assert "Job research/pretrain-workers-0, which the List lacks and the loader derived from its 4 pod(s)" in done.stderr
    assert "pod research/pretrain-workers-0-0's spec is its template" in done.stderr
    assert "must be only one value" in done.stderr and "Traceback" not in done.stderr  # the API server's own message


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


def owned_by_job(items: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The List's pods by (namespace, name) of the Job their controller reference names."""
    jobs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for item in items:
        refs = [r for r in item["metadata"].get("ownerReferences", []) if r.get("controller")]
        if item["kind"] == "Pod" and refs and refs[0]["kind"] == "Job":
            jobs.setdefault((item["metadata"]["namespace"], refs[0]["name"]), []).append(item)
    return jobs


def test_jobs_the_list_lacks_are_derived_and_keep_exactly_their_pods(controlplane: Running) -> None:
    """gpu-cluster.json's Job pods name Jobs it lacks: each whose pods share a label no other pod has is
    created (marked planner.io/derived) and owns its pods, and once the real Job controller has synced it
    wants exactly the pods the List has not ended (it creates none and deletes none). The others' pods keep
    their reference in the annotation planner.io/source-owner-references."""
    listed = owned_by_job(list_items(GPU_CLUSTER))
    derived = set(controlplane.ready["load"]["derived"].get("Job", []))
    assert "pretrain-workers-0" in derived  # four pods sharing jobset.sigs.k8s.io/jobset-name=pretrain
    jobs_api = client.BatchV1Api(config.new_client_from_config(str(controlplane.kubeconfig)))
    core = api(controlplane)
    deadline = time.monotonic() + 180
    for (namespace, name), pods in listed.items():
        if name not in derived:  # no label selects exactly its pods: the reference is dropped and kept
            for pod in pods:
                loaded = core.read_namespaced_pod(pod["metadata"]["name"], namespace)
                assert not loaded.metadata.owner_references and name in loaded.metadata.annotations["planner.io/source-owner-references"]
            continue
        job = jobs_api.read_namespaced_job(name, namespace)
        assert "planner.io/derived" in (job.metadata.annotations or {}), name
        not_ended = sum(1 for p in pods if p.get("status", {}).get("phase") not in ("Succeeded", "Failed"))
        assert job.spec.parallelism == not_ended and job.spec.completions is None, name
        while (job.status.active or 0) != not_ended and time.monotonic() < deadline:  # the controller's first sync
            time.sleep(0.5)
            job = jobs_api.read_namespaced_job(name, namespace)
        assert (job.status.active or 0) == not_ended, (name, job.status)
        owned = [
            p for p in core.list_namespaced_pod(namespace).items if any(r.uid == job.metadata.uid and r.controller for r in p.metadata.owner_references or [])
        ]
        assert sum(1 for p in owned if p.status.phase not in ("Succeeded", "Failed") and p.metadata.deletion_timestamp is None) == not_ended, name
        ended = {p["metadata"]["name"] for p in pods if p.get("status", {}).get("phase") in ("Succeeded", "Failed")}
        assert {p.metadata.name for p in owned} >= ended, name


def listening_addresses(pid: int) -> list[str]:
    """The local addresses (ip:port) of the TCP sockets the process listens on, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            if table == "tcp":
                ip = str(ipaddress.IPv4Address(raw[::-1]))
            else:
                ip = str(ipaddress.IPv6Address(b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))))
            found.append(f"{ip}:{int(port, 16)}")
    return found


def test_every_listening_socket_is_on_127_0_0_1(controlplane: Running) -> None:
    """Nothing the control plane runs listens beyond 127.0.0.1: the API server, etcd's client and peer ports,
    and no other component's port."""
    addresses = listening_addresses(controlplane.pid)
    assert f"127.0.0.1:{controlplane.ready['apiserverPort']}" in addresses
    assert f"127.0.0.1:{controlplane.ready['etcdClientPort']}" in addresses
    assert all(a.startswith("127.0.0.1:") for a in addresses), addresses


def test_ready_json_says_when_each_step_was_done(controlplane: Running) -> None:
    """ready.json times each step of the start (wall and CPU seconds since the process started), in order."""
    wall, cpu = controlplane.ready["secondsSinceStart"], controlplane.ready["cpuSecondsSinceStart"]
    order = [
        "etcdServing",
        "apiServerServing",
        "load classes",
        "load nodes",
        "load owners",
        "load budgets",
        "load pods",
        "loaded",
        "componentsStarted",
        "ready",
    ]
    assert [wall[step] for step in order] == sorted(wall[step] for step in order)
    assert [cpu[step] for step in order] == sorted(cpu[step] for step in order)
    assert all(wall[step] <= wall["ready"] for step in ("nodesReady", "nodeLeases", "podsRunning", "pdbsComputed"))
    assert wall["ready"] == pytest.approx(controlplane.ready["readySeconds"], abs=0.01)
    load = controlplane.ready["load"]
    assert set(load["phaseSeconds"]) == {"classes", "nodes", "owners", "budgets", "pods"}
    assert load["runPods"] == load["boundPods"]  # every bound pod's node is in the List: the loader ran it


def test_the_mixed_fleet_loads_as_generated(controlplane_bin: Path, tmp_path: Path) -> None:
    """A generated mixed fleet (60 nodes) is accepted by the API server as it is, and every bound pod runs."""
    fleet = generate_kubernetes_mixed(nodes=60, seed=3)
    listed = tmp_path / "mixed.json"
    listed.write_text(json.dumps(fleet))
    state = tmp_path / "state"
    env = binary_env(controlplane_bin)
    up = subprocess.run(
        [sys.executable, "-m", "planner", "controlplane", "up", "--from", str(listed), "--state-dir", str(state)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    try:
        assert up.returncode == 0, up.stderr
        ready = json.loads((state / "ready.json").read_text())
        pods = [i for i in fleet["items"] if i["kind"] == "Pod"]
        assert ready["load"]["created"]["Pod"] == len(pods)
        assert ready["nodes"] == sum(1 for i in fleet["items"] if i["kind"] == "Node")
        running = sum(1 for p in pods if p["spec"].get("nodeName") and p["status"]["phase"] not in ("Succeeded", "Failed"))
        assert ready["runningPods"] == running
        assert len(ready["load"]["derived"]["Job"]) == len(owned_by_job(fleet["items"]))
    finally:
        subprocess.run([sys.executable, "-m", "planner", "controlplane", "down", "--state-dir", str(state)], capture_output=True, env=env, timeout=120)
