"""GPU sharing and gangs in ``planner import kubernetes`` (issue 13, item 1): time-slicing replicas,
koordinator and aliyun share resources, MIG slices as their own model, PodGroup ``minMember``, and
controllers' pods starting one by one; what the snapshot cannot hold is a warning naming the object
and field. Expected values are worked out by hand in each test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner import rules
from planner.adapters.kubernetes import import_kubernetes
from planner.adapters.kubernetes_config import load_config
from planner.cli import app
from planner.cluster import Cluster, Job, Node, Pod, SnapshotError
from planner.engine.allocate import AllocateOptions, plan_allocate

runner = CliRunner()


def resource(key: str) -> str:
    """'nvidia__com_gpu__shared' -> 'nvidia.com/gpu.shared', 'aliyun__com_gpu_mem' -> 'aliyun.com/gpu-mem'."""
    vendor, _, name = key.partition("__")
    domain, _, name = name.partition("_")
    return f"{vendor}.{domain}/{name.replace('__', '.').replace('_', '-')}"


def node(name: str, labels: dict[str, str] | None = None, **resources: str) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "512Gi", **{resource(k): v for k, v in resources.items()}}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "L40S", **(labels or {})}},
        "spec": {},
        "status": {"allocatable": allocatable},
    }


def pod(name: str, where: str | None, requests: dict[str, str], owner: str = "Deployment", **meta: Any) -> dict[str, Any]:
    owners = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner, "uid": "u", "controller": True}] if owner else []
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", **requests}}}]}
    if where:
        spec["nodeName"] = where
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "ownerReferences": owners, **meta},
        "spec": spec,
        "status": {"phase": "Running" if where else "Pending"},
    }


def imported(*items: dict[str, Any], config: str | None = None) -> tuple[Cluster, list[str]]:
    result = import_kubernetes([(json.dumps({"kind": "List", "items": list(items)}), "in.json")], load_config(config))
    return result.cluster, result.warnings


def by_name(cluster: Cluster) -> dict[str, Any]:
    return {x.name: x for x in [*cluster.nodes, *cluster.pods, *cluster.jobs]}


# ----------------------------------------------------------------------------------------------
# Shares
# ----------------------------------------------------------------------------------------------


def test_time_slicing_without_renaming_divides_the_advertised_gpus_by_the_replicas() -> None:
    replicas = {"nvidia.com/gpu.replicas": "4"}
    cluster, warnings = imported(
        node("ts", replicas, nvidia__com_gpu="16"),
        pod("a", "ts", {"nvidia.com/gpu": "1"}),
        pod("b", "ts", {"nvidia.com/gpu": "2"}),
        pod("c", "ts", {"nvidia.com/gpu": "4"}),
        pod("d", None, {"nvidia.com/gpu": "1"}),
    )
    x = by_name(cluster)
    assert x["ts"].gpus == 4  # 16 replicas / 4
    assert (x["a"].gpus, x["b"].gpus, x["c"].gpus) == (0.25, 0.5, 1)
    assert x["d"].gpus == 1  # pending: read as a whole GPU (documented; never understated)
    assert warnings == []


def test_renamed_time_slicing_koordinator_and_aliyun_shares() -> None:
    cluster, warnings = imported(
        node("ts", {"nvidia.com/gpu.replicas": "8"}, nvidia__com_gpu__shared="32"),
        node("koord", nvidia__com_gpu="8", koordinator__sh_gpu_core="800", koordinator__sh_gpu_memory_ratio="800"),
        node("ali", aliyun__com_gpu_mem="96", aliyun__com_gpu_count="4"),
        pod("t", "ts", {"nvidia.com/gpu.shared": "2"}),
        pod("k", "koord", {"koordinator.sh/gpu-core": "50", "koordinator.sh/gpu-memory-ratio": "30"}),
        pod("k2", "koord", {"koordinator.sh/gpu-core": "200"}),
        pod("m", "ali", {"aliyun.com/gpu-mem": "6"}),
        pod("pending", None, {"aliyun.com/gpu-mem": "12"}),
    )
    x = by_name(cluster)
    assert (x["ts"].gpus, x["koord"].gpus, x["ali"].gpus) == (4, 8, 4)  # 32/8 replicas; 8 = 800/100; gpu-count
    assert x["t"].gpus == 0.25  # 2 of 8 replicas
    assert x["k"].gpus == 0.5  # the larger of gpu-core 50% and memory ratio 30%
    assert x["k2"].gpus == 2  # 200% of a GPU: two whole GPUs
    assert x["m"].gpus == 0.25 and x["pending"].gpus == 0.5  # 6 and 12 GiB of 24 GiB per GPU (96 / 4)
    assert warnings == []


def test_a_pending_share_against_nodes_that_differ_takes_the_smallest_units_with_a_warning() -> None:
    cluster, warnings = imported(
        node("a", aliyun__com_gpu_mem="64", aliyun__com_gpu_count="4"),  # 16 GiB per GPU
        node("b", aliyun__com_gpu_mem="320", aliyun__com_gpu_count="4"),  # 80 GiB per GPU
        pod("p", None, {"aliyun.com/gpu-mem": "8"}),
    )
    assert by_name(cluster)["p"].gpus == 0.5  # 8 of 16, never the 0.1 of the larger GPUs
    assert len(warnings) == 1 and warnings[0].startswith("Pod ml/p: spec.containers[*].resources.requests.aliyun.com/gpu-mem: nodes count 16, 80")


def test_requests_without_a_snapshot_form_lock_placed_pods_and_leave_pending_ones_out() -> None:
    cluster, warnings = imported(
        node("ts", {"nvidia.com/gpu.replicas": "4"}, nvidia__com_gpu="16"),
        pod("odd", "ts", {"nvidia.com/gpu": "6"}),  # 1.5 GPUs of replicas over two devices
        pod("nowhere", None, {"nvidia.com/gpu.shared": "1"}),
    )  # no node offers it
    x = by_name(cluster)
    assert x["odd"].locked and x["odd"].gpus == 2 and "nowhere" not in x
    assert any(w.startswith("Pod ml/odd: spec.containers[*].resources.requests: 1.5 GPUs is neither a share") for w in warnings)
    assert any(
        w.startswith("Pod ml/nowhere: spec.containers[*].resources.requests.nvidia.com/gpu.shared: nvidia.com/gpu.shared is offered by no node")
        and "left out" in w
        for w in warnings
    )


def test_disagreeing_gpu_resources_warn_and_take_the_most() -> None:
    cluster, warnings = imported(node("k", nvidia__com_gpu="8", koordinator__sh_gpu_core="400"))
    assert cluster.nodes[0].gpus == 8
    assert warnings == [("Node k: status.allocatable: its GPU resources disagree (8 by nvidia.com/gpu, 4 by koordinator.sh/gpu-core / 100); 8 GPUs taken")]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            node("ts", {"nvidia.com/gpu.replicas": "zero"}, nvidia__com_gpu="8"),
            "Node ts: metadata.labels.nvidia.com/gpu.replicas: 'zero' is not a positive whole number",
        ),
        (
            node("ts", {"nvidia.com/gpu.replicas": "3"}, nvidia__com_gpu="8"),
            "Node ts: status.allocatable: nvidia.com/gpu / 3 replicas gives 2.66667 GPUs; a node has whole GPUs",
        ),
        (node("ts", nvidia__com_gpu__shared="8"), "Node ts: metadata.labels.nvidia.com/gpu.replicas: missing: the node offers nvidia.com/gpu.shared"),
        (node("ali", aliyun__com_gpu_mem="64"), "Node ali: status.allocatable.aliyun.com/gpu-mem: offered by a node with no device count"),
    ],
)
def test_unreadable_gpu_resources_are_errors_naming_the_node_and_field(item: dict[str, Any], message: str) -> None:
    with pytest.raises(SnapshotError) as err:
        imported(item)
    assert any(p.startswith(message) for p in err.value.problems), err.value.problems


def test_a_share_config_with_two_unit_sources_is_refused_by_key(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("gpu_shares:\n  - {resource: x.io/gpu, units_per_gpu: 100, units_per_gpu_label: x.io/replicas}\n")
    listed = tmp_path / "l.json"
    listed.write_text(json.dumps({"kind": "List", "items": [node("a", nvidia__com_gpu="1")]}))
    result = runner.invoke(app, ["import", "kubernetes", str(listed), "--config", str(bad)])
    assert result.exit_code == 2 and "gpu_shares" in result.stderr and "not both" in result.stderr
    assert "Traceback" not in result.output


# ----------------------------------------------------------------------------------------------
# MIG
# ----------------------------------------------------------------------------------------------


def test_mig_slices_of_one_profile_are_their_own_model() -> None:
    cluster, warnings = imported(
        node("mig", {"nvidia.com/gpu.product": "A100-80GB"}, nvidia__com_mig_1g__10gb="7"),
        node("whole", nvidia__com_gpu="8"),
        pod("e", "mig", {"nvidia.com/mig-1g.10gb": "1"}),
        pod("f", None, {"nvidia.com/mig-1g.10gb": "2"}),
        pod("g", None, {"nvidia.com/mig-3g.40gb": "1"}),
    )
    x = by_name(cluster)
    assert (x["mig"].gpu_model, x["mig"].gpus) == ("A100-80GB-MIG-1g.10gb", 7)
    assert x["e"].gpu_models == x["f"].gpu_models == ["A100-80GB-MIG-1g.10gb"] and x["f"].gpus == 2
    assert x["g"].gpu_models == ["MIG-3g.40gb"] and x["g"].requests == {"nvidia.com/mig-3g.40gb": 1}
    # no node offers the profile: it can start nowhere, and the import says so (issue 40: never silently)
    assert warnings == ["Pod ml/g: spec.containers[*].resources.requests: nvidia.com/mig-3g.40gb: no node offers it; the pod cannot be placed"]


def test_a_node_of_mixed_mig_profiles_is_planned_per_profile() -> None:
    """Issue 40: a mixed-profile MIG node is planned per profile by name instead of cordoned: a 1g
    pod may arrive while a 1g slice is free, never on the 3g slice, and never beyond its profile."""
    cluster, warnings = imported(
        node("mixed", nvidia__com_mig_1g__10gb="4", nvidia__com_mig_3g__40gb="1"),
        node("single", nvidia__com_mig_1g__10gb="7"),
        pod("a", "mixed", {"nvidia.com/mig-3g.40gb": "1"}),
        pod("b", "single", {"nvidia.com/mig-1g.10gb": "1"}),
        pod("two", None, {"nvidia.com/mig-3g.40gb": "1", "nvidia.com/mig-1g.10gb": "1"}),
    )
    x = by_name(cluster)
    assert (x["mixed"].schedulable, x["mixed"].gpus, x["mixed"].gpu_model) == (True, 5, "L40S-MIG-mixed")
    assert x["mixed"].resources == {"nvidia.com/mig-1g.10gb": 4, "nvidia.com/mig-3g.40gb": 1}
    assert not x["a"].locked and "two" not in x
    assert x["b"].gpu_models == ["L40S-MIG-1g.10gb", "L40S-MIG-mixed"]
    assert not any(w.startswith("Node mixed") for w in warnings)
    assert any(w.startswith("Pod ml/two: spec.containers[*].resources.requests: MIG slices of 1g.10gb, 3g.40gb are not one GPU model") for w in warnings)
    mixed, b = x["mixed"], x["b"]
    assert rules.may_arrive(b, mixed) and rules.pods_fit(mixed, [x["a"]], [b])
    # four 1g pods fill the 1g slices; a fifth would need the 3g slice, which Kubernetes never gives it
    fourth = [b.model_copy(update={"name": f"b{i}"}) for i in range(4)]
    assert rules.pods_fit(mixed, [x["a"]], fourth) and not rules.pods_fit(mixed, [x["a"]], [*fourth, b])
    three_g = x["a"].model_copy(update={"name": "a2"})
    assert not rules.pods_fit(mixed, [x["a"]], [three_g])  # one 3g slice, already held


# ----------------------------------------------------------------------------------------------
# Gangs and controllers
# ----------------------------------------------------------------------------------------------


def pod_group(name: str, member: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": name, "namespace": "ml"}, "spec": {"minMember": member}}


def test_pod_group_min_member_and_controllers() -> None:
    gang = {"labels": {"scheduling.x-k8s.io/pod-group": "g"}}
    cluster, warnings = imported(
        node("a", nvidia__com_gpu="8"),
        *(pod(f"g-{i}", None, {"nvidia.com/gpu": "1"}, owner="", **gang) for i in range(4)),
        pod_group("g", 3),
        *(pod(f"h-{i}", None, {"nvidia.com/gpu": "1"}, owner="", labels={"scheduling.x-k8s.io/pod-group": "h"}) for i in range(2)),
        pod_group("h", 5),  # at or above its pods: all of them
        *(pod(f"s-{i}", None, {"nvidia.com/gpu": "1"}, owner="web") for i in range(3)),
        pod("solo", None, {"nvidia.com/gpu": "1"}, owner="solo"),
        pod_group("unused", 2),
    )
    x = by_name(cluster)
    assert x["ml/scheduling.x-k8s.io/pod-group=g"].min_available == 3
    assert x["ml/scheduling.x-k8s.io/pod-group=h"].min_available is None
    assert x["ml/StatefulSet/web"].min_available == 1  # a controller's pods start one by one
    assert x["ml/StatefulSet/solo"].min_available is None  # one pod: nothing to say
    assert warnings == ["PodGroup ml/unused: metadata.name: no pod names this PodGroup; it constrains nothing"]


def test_a_gang_whose_pod_group_is_missing_starts_whole_with_a_warning() -> None:
    cluster, warnings = imported(
        node("a", nvidia__com_gpu="8"), *(pod(f"g-{i}", None, {}, owner="", labels={"scheduling.x-k8s.io/pod-group": "g"}) for i in range(2))
    )
    assert cluster.jobs[0].min_available is None
    assert warnings == [
        (
            "Pod ml/g-0: metadata.labels.scheduling.x-k8s.io/pod-group: PodGroup 'g' is not in the input; job "
            "'ml/scheduling.x-k8s.io/pod-group=g' is taken to start whole (give kubectl get podgroups -A -o json too)"
        )
    ]


def test_a_bad_min_member_exits_2_naming_the_pod_group(tmp_path: Path) -> None:
    listed = tmp_path / "l.json"
    listed.write_text(json.dumps({"kind": "List", "items": [node("a", nvidia__com_gpu="1"), pod_group("g", "three")]}))
    result = runner.invoke(app, ["import", "kubernetes", str(listed)])
    assert result.exit_code == 2 and "PodGroup ml/g: spec.minMember: must be a whole number" in result.stderr
    assert "Traceback" not in result.output


# ----------------------------------------------------------------------------------------------
# min_available with pods already running (the allocation side of imported gangs)
# ----------------------------------------------------------------------------------------------


def running_gang(required: bool) -> Cluster:
    """Job j: two pods running on node a (switch s0), min_available 2, two pending; room for one more
    pod on a (s0) and for four on b (s1)."""
    nodes = [Node(name="a", gpus=3, cpus=64, memory_gib=256, asw="s0"), Node(name="b", gpus=8, cpus=64, memory_gib=256, asw="s1")]
    pods = [Pod(name=f"r{i}", job="j", node="a", gpus=1, cpus=1) for i in range(2)]
    pods += [Pod(name=f"p{i}", job="j", gpus=1, cpus=1) for i in range(2)]
    topology = {"level": "asw", "mode": "required"} if required else None
    return Cluster(nodes=nodes, pods=pods, jobs=[Job(name="j", min_available=2, topology=topology)])


@pytest.mark.parametrize("method", ["largest-first", "alg2", "exact"])
@pytest.mark.parametrize("required", [False, True])
def test_a_job_at_its_minimum_starts_the_pods_that_fit(required: bool, method: str) -> None:
    options = {"time_limit_s": 5.0, "solver_workers": 1} if method == "exact" else {}
    plan = plan_allocate(running_gang(required), AllocateOptions(method=method, **options))
    placed = {p.pod: p.node for p in plan.placements}
    assert not plan.unplaced
    if required:  # only one more pod fits under s0, where the running pods hold the job
        assert list(placed.values()) == ["a"]
    else:
        assert sorted(placed) == ["p0", "p1"]
