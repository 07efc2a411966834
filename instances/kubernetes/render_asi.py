"""Write instances/kubernetes/asi-rendered.json: a generated ASI-like cluster rendered as the
`kubectl get nodes,pods,pdb -A -o json` List that `planner import kubernetes` reads back
(deterministic; rerun after changing it: .venv/bin/python instances/kubernetes/render_asi.py).

`generate_asi(nodes=24, seed=5)` dressed as a Kubernetes cluster, then written by
`planner.adapters.kubernetes_export`: services' replicas are one StatefulSet each in namespace
`serving` (priority 1000, hostname anti-affinity, a PodDisruptionBudget of maxUnavailable 1), the
training gang with a required switch is a JobSet in `research` (Kueue's podset-required-topology on the
leaf label, priority 500), tasks are batch Jobs in `batch` (LP ones priority -100); nodes holding only
serving pods are tainted dedicated=inference:NoSchedule (the serving pods tolerate it), one more node
is cordoned; DaemonSets node-exporter everywhere and nvidia-device-plugin and dcgm-exporter on GPU
nodes. The generator's locks become `planner.io/locked` annotations. Services' replicas start one by
one (min_available 1), multi-pod tasks are PodGroup gangs. One more node, `ts-0`, is time-sliced
(NVIDIA's device plugin advertising each of its 8 GPUs 4 times, GPU feature discovery's
`nvidia.com/gpu.replicas: "4"` and `-SHARED` product) and holds six notebook pods of a quarter GPU
each, a StatefulSet in `research`.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from planner.adapters.kubernetes_export import DaemonSet, export_kubernetes
from planner.cluster import Cluster, Job, Node, Pod, Taint, Toleration
from planner.instances.asi import generate_asi

OUT = Path(__file__).with_name("asi-rendered.json")
INFERENCE = Taint(key="dedicated", value="inference", effect="NoSchedule")
DAEMONSETS = [DaemonSet("node-exporter", "monitoring", 0.1, 0.125), DaemonSet("nvidia-device-plugin", "gpu-operator", 0.05, 0.0625, True),
              DaemonSet("dcgm-exporter", "gpu-operator", 0.1, 0.5, True)]


def dressed(cluster: Cluster) -> Cluster:
    """Namespaces, controllers, priorities, budgets and taints on a generated cluster."""
    def job_of(name: str) -> str:
        kind = name.split("-", 1)[0]
        if kind == "svc":
            return "serving/StatefulSet/" + name.rsplit("-", 1)[0]
        return name

    topology = {j.name: j.topology for j in cluster.jobs}
    replicas = Counter(job_of(p.job) for p in cluster.pods)
    jobs: dict[str, Job] = {}
    pods = []
    for pod in cluster.pods:
        job = job_of(pod.job)
        kind = pod.job.split("-", 1)[0]
        namespace = {"svc": "serving", "train": "research"}.get(kind, "batch")
        value = 1000 if kind == "svc" else 500 if kind == "train" else (-100 if pod.priority == "LP" else 100)
        tolerations = [Toleration(key=INFERENCE.key, value=INFERENCE.value, effect=INFERENCE.effect)] if kind == "svc" else []
        pods.append(pod.model_copy(update={"job": job, "namespace": namespace, "priority": "LP" if value < 0 else "HP",
                                           "priority_value": value, "tolerations": tolerations}))
        jobs.setdefault(job, Job(name=job, topology=topology[pod.job], disruption={"max_unavailable": 1} if kind == "svc" else None,
                                 min_available=1 if kind == "svc" and replicas[job] > 1 else None))
    serving_only = {p.node for p in pods if p.node and p.namespace == "serving"} - {p.node for p in pods if p.node and p.namespace != "serving"}
    nodes = [n.model_copy(update={"taints": [INFERENCE]}) if n.name in serving_only else n for n in cluster.nodes]
    idle = next(n.name for n in reversed(nodes) if n.name not in serving_only)
    nodes = [n.model_copy(update={"schedulable": False}) if n.name == idle else n for n in nodes]
    first = nodes[0]
    nodes.append(Node(name=TIME_SLICED, gpus=8, cpus=first.cpus, memory_gib=first.memory_gib, gpu_model=f"{first.gpu_model}-SHARED",
                      asw=first.asw, spine=first.spine))
    notebooks = "research/StatefulSet/notebooks"
    pods += [Pod(name=f"notebooks-{i}", namespace="research", job=notebooks, node=TIME_SLICED, gpus=0.25, cpus=4, memory_gib=32,
                 priority_value=100) for i in range(6)]
    jobs[notebooks] = Job(name=notebooks, min_available=1)
    return cluster.model_copy(update={"nodes": nodes, "pods": pods, "jobs": list(jobs.values())})


TIME_SLICED = "ts-0"


def build() -> dict:
    return export_kubernetes(dressed(generate_asi(nodes=24, seed=5)), daemonsets=DAEMONSETS, time_sliced={TIME_SLICED: 4}).document


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
