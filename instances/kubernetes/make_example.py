"""Write instances/kubernetes/gpu-cluster.json: a small, realistic `kubectl get nodes,pods,pdb -A -o json`
List of a GPU cluster (deterministic; rerun after changing it: .venv/bin/python instances/kubernetes/make_example.py).

Two leaf switches under one spine (NVIDIA topograph labels), 8-GPU H100 nodes and 4-GPU L40S inference
nodes tainted dedicated=inference:NoSchedule, one cordoned node and two CPU nodes; DaemonSets on every
node (the device plugin with hostPath, node-exporter), a static kube-proxy mirror pod, an etcd
StatefulSet with hostname anti-affinity and a PDB, an inference Deployment tolerating the taint with a
required node affinity on the GPU product and a 50% PDB, a JobSet gang asking Kueue for one leaf, a
batch Job with an emptyDir scratch volume, a pending pod, a finished pod and a cron job's pod.
GPU sharing: an L40S node time-sliced by NVIDIA's device plugin (each GPU advertised 4 times, GPU
feature discovery's `nvidia.com/gpu.replicas: "4"`) running notebooks of one replica each, and an
A100 node split into MIG 1g.10gb slices (the device plugin's mixed strategy) serving an embedding
Deployment; a Volcano job whose PodGroup lets it start with 2 of its 3 workers.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_name("gpu-cluster.json")


def node(name: str, gpus: int, product: str, leaf: str, cpu: str = "96", memory: str = "1024Gi", taints=(), cordoned=False,
         resource: str = "nvidia.com/gpu", extra_labels=None):
    labels = {"kubernetes.io/hostname": name, "network.topology.nvidia.com/leaf": leaf,
              "network.topology.nvidia.com/spine": "spine-a", "node.kubernetes.io/instance-type": "gpu", **(extra_labels or {})}
    if gpus:
        labels["nvidia.com/gpu.product"] = product
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "900Gi"}
    if gpus:
        allocatable[resource] = str(gpus)
    spec = {"taints": list(taints)} if taints else {}
    if cordoned:
        spec["unschedulable"] = True
        spec.setdefault("taints", []).append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"capacity": allocatable, "allocatable": allocatable}}


def pod(name, namespace, node_name, owner=None, cpu="1", memory="1Gi", gpus=0, labels=None, annotations=None, phase="Running",
        resource="nvidia.com/gpu", **spec):
    limits = {resource: str(gpus)} if gpus else {}
    meta = {"name": name, "namespace": namespace, "labels": labels or {}, "uid": f"uid-{namespace}-{name}"}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": owner[2], "uid": f"uid-{owner[2]}", "controller": True}]
    body = {"containers": [{"name": "main", "image": "registry.example/app:1",
                            "resources": {"requests": {"cpu": cpu, "memory": memory, **limits}, "limits": limits}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": phase}}


def pdb(name, namespace, match, **budget):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": match}, **budget}}


def build() -> dict:
    inference_taint = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
    nodes = [node(f"h100-{i}", 8, "NVIDIA-H100-80GB-HBM3", "leaf-1" if i < 4 else "leaf-2") for i in range(8)]
    nodes += [node(f"l40s-{i}", 4, "NVIDIA-L40S", "leaf-2", cpu="64", memory="512Gi", taints=[inference_taint]) for i in range(3)]
    nodes.append(node("h100-8", 8, "NVIDIA-H100-80GB-HBM3", "leaf-2", cordoned=True))
    nodes += [node(f"cpu-{i}", 0, "", "leaf-1", cpu="64", memory="256Gi") for i in range(2)]
    nodes.append(node("l40s-ts-0", 16, "NVIDIA-L40S-SHARED", "leaf-2", cpu="64", memory="512Gi",
                      extra_labels={"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "4"}))
    nodes.append(node("a100-mig-0", 14, "NVIDIA-A100-SXM4-80GB", "leaf-1", resource="nvidia.com/mig-1g.10gb",
                      extra_labels={"nvidia.com/mig.strategy": "mixed"}))
    pods = []
    for n in nodes:  # DaemonSets: the device plugin (hostPath) on GPU nodes, node-exporter everywhere
        name = n["metadata"]["name"]
        everywhere = [{"operator": "Exists"}]
        if "nvidia.com/gpu" in n["status"]["allocatable"]:
            pods.append(pod(f"nvidia-device-plugin-{name}", "gpu-operator", name, ("apps/v1", "DaemonSet", "nvidia-device-plugin"),
                            cpu="50m", memory="64Mi", tolerations=everywhere,
                            volumes=[{"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}}]))
        pods.append(pod(f"node-exporter-{name}", "monitoring", name, ("apps/v1", "DaemonSet", "node-exporter"),
                        cpu="100m", memory="128Mi", tolerations=everywhere))
    pods.append(pod("kube-proxy-cpu-0", "kube-system", "cpu-0", ("v1", "Node", "cpu-0"), cpu="100m", memory="64Mi",
                    annotations={"kubernetes.io/config.mirror": "abc", "kubernetes.io/config.source": "file"}, priority=2000001000))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "etcd"}}}]}}
    for i, where in enumerate(["cpu-0", "cpu-1", "h100-0"]):
        pods.append(pod(f"etcd-{i}", "platform", where, ("apps/v1", "StatefulSet", "etcd"), cpu="2", memory="8Gi",
                        labels={"app": "etcd"}, affinity=anti))
    serving = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-L40S", "NVIDIA-H100-80GB-HBM3"]}]}]}}}
    for i, where in enumerate(["l40s-0", "l40s-1", "h100-5", "h100-6"]):
        pods.append(pod(f"llm-serve-7d9f8-{i}", "serving", where, ("apps/v1", "ReplicaSet", "llm-serve-7d9f8"), cpu="8", memory="64Gi",
                        gpus=1, labels={"app": "llm-serve", "pod-template-hash": "7d9f8"}, affinity=serving,
                        tolerations=[inference_taint], priority=1000, priorityClassName="serving"))
    for i, where in enumerate(["h100-0", "h100-1", "h100-2", "h100-3"]):
        pods.append(pod(f"pretrain-workers-0-{i}", "research", where, ("batch/v1", "Job", "pretrain-workers-0"), cpu="48", memory="512Gi",
                        gpus=8 if i < 3 else 4, labels={"jobset.sigs.k8s.io/jobset-name": "pretrain", "batch.kubernetes.io/job-completion-index": str(i)},
                        annotations={"kueue.x-k8s.io/podset-required-topology": "network.topology.nvidia.com/leaf"}, priority=500))
    for i, where in enumerate(["h100-4", "h100-5", "h100-6", "h100-7", "h100-8"]):
        pods.append(pod(f"finetune-{i}", "research", where, ("batch/v1", "Job", f"finetune-{i}"), cpu="12", memory="96Gi", gpus=2,
                        labels={"team": "nlp"}, priority=-100, priorityClassName="spot"))
    pods.append(pod("eval-scratch", "research", "h100-7", ("batch/v1", "Job", "eval"), cpu="4", memory="32Gi", gpus=1,
                    volumes=[{"name": "scratch", "emptyDir": {}}], priority=-100, priorityClassName="spot"))
    pods.append(pod("notebook-alice", "research", "h100-4", ("apps/v1", "StatefulSet", "notebook-alice"), cpu="4", memory="32Gi", gpus=1,
                    annotations={"planner.io/locked": "true"}))
    pods.append(pod("report-28911", "research", "cpu-1", ("batch/v1", "Job", "report-28911"), cpu="2", memory="4Gi", phase="Succeeded"))
    pods.append(pod("train-big-0", "research", None, ("batch/v1", "Job", "train-big"), cpu="64", memory="512Gi", gpus=8, phase="Pending",
                    priority=500))
    for i in range(3):  # notebooks on one time-sliced replica each (a quarter of an L40S)
        pods.append(pod(f"notebook-{i}", "research", "l40s-ts-0", ("apps/v1", "StatefulSet", "notebooks"), cpu="2", memory="16Gi",
                        gpus=1, labels={"app": "notebooks"}, priority=100))
    for i, where in enumerate(["a100-mig-0", "a100-mig-0", None]):  # an embedding service on MIG slices
        pods.append(pod(f"embed-5c4b7-{i}", "serving", where, ("apps/v1", "ReplicaSet", "embed-5c4b7"), cpu="2", memory="8Gi", gpus=1,
                        resource="nvidia.com/mig-1g.10gb", labels={"app": "embed", "pod-template-hash": "5c4b7"},
                        phase="Running" if where else "Pending", priority=1000))
    for i, where in enumerate(["h100-3", "h100-3", None]):  # a Volcano job: starts with 2 of its 3 workers
        pods.append(pod(f"sweep-worker-{i}", "research", where, ("batch.volcano.sh/v1alpha1", "Job", "sweep"), cpu="8", memory="64Gi",
                        gpus=1, annotations={"scheduling.k8s.io/group-name": "sweep"},
                        phase="Running" if where else "Pending", priority=-100, priorityClassName="spot", schedulerName="volcano"))
    groups = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": {"name": "sweep", "namespace": "research"},
               "spec": {"minMember": 2, "queue": "default"}}]
    budgets = [pdb("etcd", "platform", {"app": "etcd"}, maxUnavailable=1),
               pdb("llm-serve", "serving", {"app": "llm-serve"}, minAvailable="50%")]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [*nodes, *pods, *budgets, *groups]}


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
