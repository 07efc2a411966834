"""Allocation of pending gangs whose pods carry a required node affinity (issue 59: ``pod_shape`` read
the affinity's terms as objects they are not, and ``planner allocate`` exited 3 on every such gang),
on hand-made snapshots and on a generated mixed fleet through the command line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from planner.cluster import Cluster, HostPort
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.common import PlanOptionError, pod_shape
from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
from planner.validate.allocate import validate_allocate
from tests.support.planner_here import planner

RDMA = "feature.node.kubernetes.io/rdma.available"


def rdma_cluster(affinities: list[list[list[dict[str, Any]]]]) -> Cluster:
    """Four 8-GPU nodes, two with RDMA; one pending 8-GPU pod per affinity, all of job 'g'."""
    nodes = [{"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 512, "asw": "s0", "labels": {RDMA: "true"} if i < 2 else {}} for i in range(4)]
    pods = [{"name": f"g-{i}", "job": "g", "gpus": 8, "cpus": 8, "node_affinity": terms} for i, terms in enumerate(affinities)]
    return Cluster.model_validate({"nodes": nodes, "pods": pods, "jobs": [{"name": "g"}]})


RDMA_TERM = [{"key": RDMA, "operator": "In", "values": ["true"]}, {"key": "spot", "operator": "DoesNotExist"}]


def test_a_gang_with_a_required_node_affinity_is_placed_on_the_nodes_it_allows() -> None:
    # the same affinity written in two orders (terms ORed, expressions ANDed, values a set): one shape
    other_order = [[{"key": "never", "operator": "Exists"}], list(reversed(RDMA_TERM))]
    cluster = rdma_cluster([[RDMA_TERM, [{"key": "never", "operator": "Exists"}]], other_order])
    assert pod_shape(cluster.pods[0]) == pod_shape(cluster.pods[1])
    hash(pod_shape(cluster.pods[0]))  # a shape is a dictionary key
    for method in ("largest-first", "alg2", "kueue-bestfit", "exact"):
        plan = plan_allocate(cluster, AllocateOptions(method=method, **({"time_limit_s": 5.0} if method == "exact" else {})))
        assert sorted(p.node for p in plan.placements) == ["n0", "n1"], method
        assert validate_allocate(cluster, plan) == []


def test_a_gang_whose_pods_differ_in_affinity_is_refused_by_name() -> None:
    cluster = rdma_cluster([[RDMA_TERM], [[{"key": RDMA, "operator": "Exists"}]]])
    assert pod_shape(cluster.pods[0]) != pod_shape(cluster.pods[1])
    with pytest.raises(PlanOptionError, match=r"pods\[1\] of job 'g' differs in shape or rules from 'g-0'"):
        plan_allocate(cluster, AllocateOptions(method="largest-first"))


def test_named_resources_and_host_ports_tell_shapes_apart() -> None:
    cluster = rdma_cluster([[RDMA_TERM], [RDMA_TERM]])
    first = cluster.pods[0]
    assert pod_shape(first) != pod_shape(first.model_copy(update={"requests": {"rdma/rdma_shared_device_a": 1}}))
    assert pod_shape(first) != pod_shape(first.model_copy(update={"host_ports": [HostPort(port=9100)]}))


def with_pending_rdma_gang(items: list[dict[str, Any]]) -> tuple[str, int]:
    """The List with its first rdma training gang unscheduled (pending) and given a required node
    affinity on the rdma label, as users pin RDMA jobs; returns the gang's name and size."""
    gangs: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        labels = item["metadata"].get("labels") or {}
        asks_rdma = any("rdma/rdma_shared_device_a" in (c.get("resources", {}).get("requests") or {}) for c in item.get("spec", {}).get("containers", []))
        if item["kind"] == "Pod" and asks_rdma and "app" in labels:
            gangs.setdefault(labels["app"], []).append(item)
    name, pods = next(iter(sorted(gangs.items())))
    for pod in pods:
        pod["spec"].pop("nodeName")
        pod["status"] = {"phase": "Pending"}
        pod["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": RDMA, "operator": "In", "values": ["true"]}]}]
                }
            }
        }
    return name, len(pods)


@pytest.mark.parametrize("seed", [0, 1])
def test_allocate_on_a_generated_mixed_fleet_with_a_pending_rdma_gang(tmp_path: Path, seed: int) -> None:
    doc = copy.deepcopy(generate_kubernetes_mixed(60, seed))
    gang, size = with_pending_rdma_gang(doc["items"])
    source = tmp_path / "fleet.json"
    source.write_text(json.dumps(doc))
    done = planner("allocate", str(source), "--from", "kubernetes", "--method", "largest-first", "-o", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    plan = json.loads(done.stdout)
    job = next(name for name in plan["metrics"]["per_job"] if gang in name)
    placed = [p for p in plan["placements"] if p["pod"].startswith(gang)]
    assert len(placed) == size and job not in {u["job"] for u in plan["unplaced"]}, plan["unplaced"]
    rdma_nodes = {item["metadata"]["name"] for item in doc["items"] if item["kind"] == "Node" and item["metadata"]["labels"].get(RDMA) == "true"}
    assert {p["node"] for p in placed} <= rdma_nodes
