"""A small fragmented cluster as a kubectl List for ``planner apply``'s tests: GPU nodes with a Deployment (its
ReplicaSet and pods), a StatefulSet, a Job and bare pods (annotated evictable, so the importer lets the planner
move them), each under a PodDisruptionBudget, the pods spread over the nodes at random by a seed.

Built here rather than from ``instances/kubernetes_mixed*``: that fleet has no Deployment, Job or bare pod
objects (its Jobs are dropped by the loader and its owners derived), and the executor's paths differ by owner kind.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

NAMESPACE = "apps"
NODE_GPUS = 8
PAUSE = "registry.k8s.io/pause:3.10"


def _node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(NODE_GPUS), "ephemeral-storage": "500Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "spec": {},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def _spec(gpus: int, restart: str = "Always") -> dict[str, Any]:
    requests = {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": str(gpus)}
    return {
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": 5,
        "containers": [{"name": "main", "image": PAUSE, "resources": {"requests": requests, "limits": {"nvidia.com/gpu": str(gpus)}}}],
    }


def _owner(kind: str, name: str, api: str) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": kind,
        "name": name,
        "uid": f"00000000-0000-4000-8000-{hashlib.sha256(f'{kind}/{name}'.encode()).hexdigest()[:12]}",
        "controller": True,
    }


def _pod(name: str, labels: dict[str, str], spec: dict[str, Any], node: str, uid: int, owner: dict[str, Any] | None, bare: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": dict(labels), "uid": f"11111111-0000-4000-8000-{uid:012d}"}
    if owner:
        meta["ownerReferences"] = [owner]
    if bare:
        meta["annotations"] = {"descheduler.alpha.kubernetes.io/evict": "true"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {**spec, "nodeName": node}, "status": {"phase": "Running"}}


def _pdb(name: str, labels: dict[str, str], **budget: Any) -> dict[str, Any]:
    spec = {"selector": {"matchLabels": labels}, **budget}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}


def apply_cluster(seed: int, nodes: int = 8, scale: int = 1) -> dict[str, Any]:
    """The List: ``nodes`` nodes of 8 GPUs; web (Deployment, 4 x 1 GPU, maxUnavailable 1), db (StatefulSet,
    3 x 1 GPU, OnDelete, minAvailable 2), train (Job, 3 x 2 GPUs, maxUnavailable 1 of its pods by minAvailable 2)
    and solo-0..2 (bare, 1 GPU, minAvailable 2); every pod on a node drawn by ``seed`` (at most 3 GPUs per node
    used, so the cluster is fragmented and defrag has nodes to vacate). ``scale`` multiplies every workload's
    pods (give ``nodes`` about 8 x ``scale``)."""
    rng = random.Random(seed)
    names = [f"gpu-{i:02d}" for i in range(nodes)]
    used = dict.fromkeys(names, 0)

    def place(gpus: int) -> str:
        choices = [n for n in names if used[n] + gpus <= 3]
        node = rng.choice(choices)
        used[node] += gpus
        return node

    items: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
    items += [_node(n) for n in names]
    web_labels = {"app": "web"}
    web_spec = _spec(1)
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": NAMESPACE},
            "spec": {"replicas": 4 * scale, "selector": {"matchLabels": web_labels}, "template": {"metadata": {"labels": web_labels}, "spec": web_spec}},
        }
    )
    rs_labels = {**web_labels, "pod-template-hash": "5d8f7c9b6"}
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web-5d8f7c9b6", "namespace": NAMESPACE, "labels": rs_labels, "ownerReferences": [_owner("Deployment", "web", "apps/v1")]},
            "spec": {"replicas": 4 * scale, "selector": {"matchLabels": rs_labels}, "template": {"metadata": {"labels": rs_labels}, "spec": web_spec}},
        }
    )
    db_labels = {"app": "db"}
    db_spec = _spec(1)
    items.append(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": NAMESPACE},
            "spec": {
                "replicas": 3 * scale,
                "serviceName": "db",
                "podManagementPolicy": "Parallel",
                "updateStrategy": {"type": "OnDelete"},
                "selector": {"matchLabels": db_labels},
                "template": {"metadata": {"labels": db_labels}, "spec": db_spec},
            },
        }
    )
    job_labels = {"job": "train"}
    job_spec = _spec(2, restart="Never")
    items.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": NAMESPACE},
            "spec": {
                "parallelism": 3 * scale,
                "completions": 3 * scale,
                "backoffLimit": 20,
                "manualSelector": True,
                "selector": {"matchLabels": job_labels},
                "template": {"metadata": {"labels": job_labels}, "spec": job_spec},
            },
        }
    )
    items += [
        _pdb("web", web_labels, maxUnavailable=1),
        _pdb("db", db_labels, minAvailable=2),
        _pdb("train", job_labels, minAvailable=2),
        _pdb("solo", {"app": "solo"}, minAvailable=2),
    ]
    uid = 0
    pods: list[dict[str, Any]] = []
    web_suffixes = ["x7k2p", "q9w4m", "b3n8r", "t5v6z"] + [f"s{i:04d}" for i in range(4 * scale - 4)]
    for suffix in web_suffixes:
        uid += 1
        pods.append(_pod(f"web-5d8f7c9b6-{suffix}", rs_labels, web_spec, place(1), uid, _owner("ReplicaSet", "web-5d8f7c9b6", "apps/v1")))
    for i in range(3 * scale):
        uid += 1
        labels = {**db_labels, "apps.kubernetes.io/pod-index": str(i), "statefulset.kubernetes.io/pod-name": f"db-{i}"}
        pod = _pod(f"db-{i}", labels, db_spec, place(1), uid, _owner("StatefulSet", "db", "apps/v1"))
        pod["spec"]["hostname"] = f"db-{i}"
        pod["spec"]["subdomain"] = "db"
        pods.append(pod)
    for suffix in ["h2c4d", "k8f1g", "m3p7s"] + [f"j{i:04d}" for i in range(3 * scale - 3)]:
        uid += 1
        pods.append(_pod(f"train-{suffix}", job_labels, job_spec, place(2), uid, _owner("Job", "train", "batch/v1")))
    for i in range(3 * scale):
        uid += 1
        pods.append(_pod(f"solo-{i}", {"app": "solo"}, _spec(1), place(1), uid, None, bare=True))
    return {"apiVersion": "v1", "kind": "List", "items": items + pods}
