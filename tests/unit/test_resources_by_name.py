"""Resources by name, host ports and pools (issue 40): what kube-scheduler charges, and where a
nightly plan may move pods by default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner import rules
from planner.adapters.kubernetes import import_kubernetes
from planner.cli import app
from planner.cluster import Cluster, HostPort, Node, Pod
from planner.engine import DefragOptions, plan_defrag
from planner.pools import parse_selector
from planner.state import ClusterState
from planner.validate.defrag import validate

EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "gpu-cluster.json"
runner = CliRunner()


def whole_node(name: str, gpus: int = 8, **fields: Any) -> Node:
    return Node(name=name, gpu_model="H100", gpus=gpus, cpus=64, memory_gib=512, resources={"nvidia.com/gpu": gpus, "pods": 110}, **fields)


def test_a_time_sliced_replica_costs_a_whole_gpu_on_a_whole_gpu_node() -> None:
    """The audit's case: pods asking 2 and 1 replicas (0.75 GPU as shares) need 3 devices on a whole-GPU node."""
    node = whole_node("h", gpus=8)
    busy = Pod(name="busy", gpus=7, cpus=1, node="h", requests={"nvidia.com/gpu": 7})
    half = Pod(name="half", gpus=0.5, cpus=1, requests={"nvidia.com/gpu": 2})
    quarter = Pod(name="quarter", gpus=0.25, cpus=1, requests={"nvidia.com/gpu": 1})
    assert rules.pods_fit(node, [busy], [quarter])
    assert not rules.pods_fit(node, [busy], [half])  # 7 + 2 > 8, though 7 + 0.5 GPU fits the device view
    shortfalls = rules.resource_shortfalls(node, [busy, half, quarter])
    assert shortfalls == ["needs 10 nvidia.com/gpu, node 'h' offers 8"]
    state = ClusterState(Cluster(nodes=[node], pods=[busy, half, quarter]))
    assert state.fits(2, 0) and not state.fits(1, 0)
    assert not state.feasible_nodes(1)[0] and state.feasible_nodes(2)[0]


def test_a_resource_the_node_does_not_offer_is_a_static_rule() -> None:
    mig = Node(name="mig", gpu_model="A100-MIG-1g.10gb", gpus=7, cpus=32, memory_gib=256, resources={"nvidia.com/mig-1g.10gb": 7})
    whole = Pod(name="w", gpus=1, cpus=1, requests={"nvidia.com/gpu": 1})
    shared = Pod(name="s", gpus=0.25, cpus=1, requests={"nvidia.com/gpu.shared": 1})
    for pod, name in ((whole, "nvidia.com/gpu"), (shared, "nvidia.com/gpu.shared")):
        assert not rules.may_arrive(pod, mig)
        (brk,) = rules.static_rule_breaks(pod, mig)
        assert brk.rule == rules.RESOURCE_NOT_OFFERED and name in brk.detail
    legacy = Node(name="old", gpus=8, cpus=32, memory_gib=256)  # no resources listed: today's meaning
    assert rules.may_arrive(whole, legacy) and rules.pods_fit(legacy, [], [whole, shared])


def test_the_pod_count_and_host_ports() -> None:
    node = Node(name="n", gpus=0, cpus=64, memory_gib=64, resources={"pods": 2})
    pods = [Pod(name=f"p{i}", gpus=0, cpus=1) for i in range(3)]
    assert rules.pods_fit(node, pods[:1], pods[1:2]) and not rules.pods_fit(node, pods[:2], pods[2:])
    unlimited = Node(name="u", gpus=0, cpus=64, memory_gib=64, resources={"ephemeral-storage": 10})
    assert rules.pods_fit(unlimited, pods[:2], pods[2:])  # a node that lists no pod count sets no limit
    web = [Pod(name=f"web{i}", gpus=0, cpus=1, host_ports=[HostPort(port=8080)]) for i in range(2)]
    udp = Pod(name="dns", gpus=0, cpus=1, host_ports=[HostPort(port=8080, protocol="UDP")])
    roomy = Node(name="r", gpus=0, cpus=64, memory_gib=64)
    assert not rules.pods_fit(roomy, web[:1], web[1:]) and rules.pods_fit(roomy, web[:1], [udp])
    (brk,) = rules.node_rule_breaks(roomy, web[:1], web[1:])
    assert brk.rule == rules.ANTI_AFFINITY and "hostPort TCP/8080" in brk.detail


def test_the_readme_example_plan_keeps_every_pod_on_resources_it_can_use() -> None:
    """The audit's README example: wave 1 sent an 8 x nvidia.com/gpu worker to the MIG node and wave 2
    three time-sliced notebooks there. Now every move goes where its resources are offered and left,
    and the plan validates with the named rules."""
    imported = import_kubernetes([(EXAMPLE.read_text(), "gpu-cluster.json")])
    cluster = imported.cluster
    nodes, pods = {n.name: n for n in cluster.nodes}, {p.name: p for p in cluster.pods}
    for options in (DefragOptions(), DefragOptions(allow_product_change=True, allow_cpu_pods_on_gpu_nodes=True)):
        plan = plan_defrag(cluster, options)
        assert validate(cluster, plan) == []
        for move in plan.moves():
            destination, pod = nodes[move.to], pods[move.pod]
            assert destination.resources is not None
            assert all(destination.resources.get(name, 0) >= amount for name, amount in pod.requests.items()), move
            assert move.to != "a100-mig-0" or "nvidia.com/mig-1g.10gb" in pod.requests, move
    default = plan_defrag(cluster, DefragOptions())
    for move in default.moves():
        assert nodes[move.to].gpu_model == nodes[move.from_].gpu_model, "a pod changed its GPU product by default"
        assert pods[move.pod].gpus > 0 or nodes[move.to].gpus == 0, "a CPU-only pod moved onto a GPU node by default"
    assert default.report.pools["keep_product"] is True and default.report.pools["cpu_pods_on_gpu_nodes"] is False


def test_node_selector_scopes_the_plan_and_bad_selectors_exit_2(tmp_path: Path) -> None:
    imported = import_kubernetes([(EXAMPLE.read_text(), "gpu-cluster.json")])
    cluster = imported.cluster
    snapshot = tmp_path / "s.json"
    snapshot.write_text(cluster.model_dump_json())
    inside = {n.name for n in cluster.nodes if n.labels.get("nvidia.com/gpu.product", "").startswith("NVIDIA-H100")}
    assert inside and len(inside) < len(cluster.nodes)
    selector = "nvidia.com/gpu.product in (NVIDIA-H100-80GB-HBM3)"
    plan = plan_defrag(cluster, DefragOptions(node_selector=selector, allow_product_change=True, allow_cpu_pods_on_gpu_nodes=True))
    assert plan.moves() and all(m.from_ in inside and m.to in inside for m in plan.moves())
    assert plan.report.pools["nodes_outside_the_pool"] == len(cluster.nodes) - len(inside)
    for bad in ("pool in ()", "a=b,,", "=x", "pool notin"):
        result = runner.invoke(app, ["defrag", str(snapshot), "--node-selector", bad])
        assert result.exit_code == 2, (bad, result.output)
        assert "--node-selector" in result.stderr and "Traceback" not in result.output


def test_label_selectors_read_as_kubernetes_reads_them() -> None:
    def matches(r: Any, labels: dict[str, str]) -> bool:
        return rules.requirement_matches(r, labels)

    (r,) = parse_selector("tier notin (spot, preempt)")
    assert matches(r, {}) and matches(r, {"tier": "x"}) and not matches(r, {"tier": "spot"})
    a, b, c = parse_selector("pool=train, !cordoned ,zone")
    labels = {"pool": "train", "zone": "z1"}
    assert matches(a, labels) and matches(b, labels) and matches(c, labels) and not matches(b, {"cordoned": ""})
    with pytest.raises(ValueError):
        parse_selector("   ")


def kubectl_list(*items: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


def k_node(name: str, allocatable: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", **allocatable}},
    }


def k_pod(name: str, node: str | None, requests: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": "u-" + name, "controller": True}],
        },
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", **requests}}}], **({"nodeName": node} if node else {}), **spec},
        "status": {"phase": "Running" if node else "Pending"},
    }


def test_the_importer_carries_every_resource_by_name_and_the_ports() -> None:
    text = kubectl_list(
        k_node("a", {"nvidia.com/gpu": "8", "rdma/hca": "4", "ephemeral-storage": "100Gi"}),
        k_pod("x", "a", {"nvidia.com/gpu": "2", "rdma/hca": "1", "ephemeral-storage": "1.5Gi"}, hostNetwork=True),
    )
    doc = json.loads(text)
    doc["items"][1]["spec"]["containers"][0]["ports"] = [{"containerPort": 9100}]
    cluster = import_kubernetes([(json.dumps(doc), "l.json")]).cluster
    node, pod = cluster.nodes[0], cluster.pods[0]
    assert node.resources == {"nvidia.com/gpu": 8, "rdma/hca": 4, "ephemeral-storage": 100 * 2**30, "pods": 110}
    assert pod.requests == {"nvidia.com/gpu": 2, "rdma/hca": 1, "ephemeral-storage": 3 * 2**29}
    assert pod.host_ports == [HostPort(port=9100, protocol="TCP", host_ip="")]


def test_a_node_over_its_own_allocatable_is_planned_full_and_its_pods_stay() -> None:
    """A device plugin reporting fewer GPUs than are in use: Kubernetes keeps the pods running; the
    plan treats the node as full of that resource and locks them, with a warning (never exit 2)."""
    text = kubectl_list(
        k_node("a", {"nvidia.com/gpu": "1"}),
        k_node("b", {"nvidia.com/gpu": "8"}),
        k_pod("x", "a", {"nvidia.com/gpu": "1"}),
        k_pod("y", "a", {"nvidia.com/gpu": "1"}),
    )
    result = import_kubernetes([(text, "l.json")])
    a = next(n for n in result.cluster.nodes if n.name == "a")
    assert a.resources["nvidia.com/gpu"] == 2 and all(p.locked for p in result.cluster.pods)
    assert any(w.startswith("Node a: status.allocatable.nvidia.com/gpu: its pods request 2, it offers 1") for w in result.warnings)


@pytest.mark.parametrize(
    ("where", "bad", "field"),
    [
        ("node", {"bad name": "1"}, "status.allocatable.bad name"),
        ("pod", {"rdma/hca": "lots"}, "requests.rdma/hca"),
    ],
)
def test_an_unreadable_resource_name_or_quantity_exits_2_naming_the_field(tmp_path: Path, where: str, bad: dict[str, str], field: str) -> None:
    items = [k_node("a", bad if where == "node" else {}), k_pod("x", "a" if where == "node" else None, bad if where == "pod" else {})]
    source = tmp_path / "l.json"
    source.write_text(kubectl_list(*items))
    result = runner.invoke(app, ["import", "kubernetes", str(source)])
    assert result.exit_code == 2 and field in result.stderr and "Traceback" not in result.output, result.output


def test_the_snapshot_schema_refuses_a_bad_resource_name(tmp_path: Path) -> None:
    snapshot = tmp_path / "s.json"
    snapshot.write_text(
        json.dumps(
            {
                "version": 1,
                "nodes": [{"name": "n", "gpus": 0, "cpus": 1, "memory_gib": 1, "resources": {"a b": 1}}],
                "pods": [{"name": "p", "gpus": 0, "cpus": 1, "requests": {"pods": 1}}],
            }
        )
    )
    result = runner.invoke(app, ["report", str(snapshot)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "nodes[0].resources" in result.stderr and "not a resource name" in result.stderr


def test_pod_requests_are_read_once_per_shape_and_errors_still_name_the_field() -> None:
    """The importer reuses a controller's replicas' effective request; a caller changing one pod's dict
    changes no other pod's, and a malformed spec still gets its field path."""
    from fractions import Fraction

    from planner.adapters.kubernetes_objects import KubeError, pod_requests

    spec = {
        "containers": [{"resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": "1"}}}],
        "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}],
    }
    first = pod_requests(spec)
    assert first == {"cpu": Fraction(3, 2), "nvidia.com/gpu": Fraction(1)}
    first["cpu"] = Fraction(99)
    assert pod_requests(spec)["cpu"] == Fraction(3, 2)
    with pytest.raises(KubeError) as err:
        pod_requests({"containers": [{"resources": {"requests": {"cpu": {"nested": "1"}}}}]})
    assert err.value.path == "spec.containers[0].resources.requests.cpu"
