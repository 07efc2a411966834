"""Seeded mixed GPU clusters as a kubectl List (``kubectl get nodes,pods,pdb,podgroups,namespaces -A -o json``).

The families mirror a real mixed fleet (and the audit's 200-node repro), by share of the nodes:

* ``train-h100`` / ``train-h200`` (35% / 24%): 8 whole GPUs (``nvidia.com/gpu``) and
  ``rdma/rdma_shared_device_a: 1k``; gangs of 8- or 4-GPU pods asking for one rdma device each
  (scheduler-plugins PodGroups with their ``PodGroup`` object, JobSets, Volcano, Kueue with a
  required leaf topology), with an init container (checkpoint fetch), a metrics sidecar container and
  200Gi of ephemeral storage; single-GPU batch jobs with node affinity (``Gt``/``NotIn``/
  ``DoesNotExist``); notebooks; serving Deployments that may run on H100s or the inference pool.
* ``inference`` (14%): L40S, tainted ``dedicated=inference:NoSchedule``; serving Deployments with
  hostname anti-affinity (``matchLabels``, ``matchExpressions``, ``namespaces`` and
  ``namespaceSelector`` forms), PDBs, sidecar init containers (``restartPolicy: Always``), pod
  overhead (a kata runtime class).
* ``mig`` (8%): A100/H100 under the mixed MIG strategy (they keep the base ``nvidia.com/gpu.product``
  label): single-profile nodes (``all-1g.10gb``: ``nvidia.com/mig-1g.10gb`` 56, or a partial 14;
  ``all-3g.40gb``: 16) and mixed-profile nodes (``all-balanced``: 16 x 1g, 8 x 2g, 8 x 3g); Jobs and
  Deployments asking for one slice of a profile.
* ``ts`` (7%): L4 time-sliced 4 ways; half advertise ``nvidia.com/gpu: 32`` (product label
  ``NVIDIA-L4-SHARED``), half the renamed ``nvidia.com/gpu.shared: 32`` (product ``NVIDIA-L4``);
  notebooks asking for one or two replicas, with or without a selector.
* ``cpu`` (10%): StatefulSets with hostname (and some zone) anti-affinity, PDBs and init containers,
  Deployments, ``ingress-nginx`` with hostPorts 80/443, cache pods with required pod affinity to
  their API pod.
* ``control-plane`` (3 nodes): tainted; static (mirror) pods and CoreDNS.

Every node runs DaemonSet pods (kube-proxy, fluent-bit, node-exporter on hostPort 9100 with
hostNetwork; GPU nodes the device plugin and DCGM exporter; training nodes the rdma device plugin).
About 2% of nodes are cordoned. A few pods are pending (8-GPU training pods; one-GPU, shared-GPU
and MIG notebooks/jobs; a 2-GPU inference pod), finished (Succeeded/Failed) or annotated
``planner.io/locked``. Requests use many quantity spellings (``93500m``, ``1288Gi``, ``24e9``,
``16G``, plain bytes).

Pods are placed at random on nodes where they fit (counting every container and init container and
the overhead, which is at least what the scheduler counts), honouring nodeSelector, taints, hostname
anti-affinity and host ports, so the initial state is one kube-scheduler admits. About ten pods per
node. ``generate_kubernetes_mixed(nodes, seed)`` is deterministic for its arguments.
"""

from __future__ import annotations

from typing import Any

from planner.instances.kubernetes_mixed_build import (
    DEFAULT_TOLERATIONS,
    FAMILIES,
    INFERENCE_TAINT,
    PRODUCTS,
    SHARES,
    Builder,
    GiB,
    MiB,
    NodeState,
    cpu_quantity,
    host_port_numbers,
    memory_quantity,
    scheduled_need,
)
from planner.instances.kubernetes_mixed_workloads import (
    EXISTS,
    SYSTEM,
    TRAINING,
    _api_and_cache,
    _batch,
    _deployment,
    _expr,
    _gang,
    _mig,
    _notebook,
    _serving,
    _statefulset,
)

__all__ = ["FAMILIES", "SHARES", "family_counts", "generate_kubernetes_mixed"]

NAMESPACES = {
    "llm-train": "training",
    "research": "training",
    "vision": "training",
    "serving": "serving",
    "assistant": "serving",
    "search": "serving",
    "notebooks": "interactive",
    "data": "platform",
    "platform": "platform",
    "team-a": "platform",
}


def family_counts(nodes: int) -> dict[str, int]:
    """Nodes per family for a cluster of ``nodes`` (3 control-plane nodes from 20 nodes up, one below;
    at least one node of each family from 12 nodes up)."""
    control = 3 if nodes >= 20 else 1
    rest = nodes - control
    counts = {f: int(share * rest / sum(SHARES.values())) for f, share in SHARES.items()}
    if nodes >= 12:
        counts = {f: max(1, c) for f, c in counts.items()}
    counts["train-h100"] += rest - sum(counts.values())
    return {**counts, "control-plane": control}


def _gpu_share(nodes: list[NodeState], resources: tuple[str, ...]) -> float:
    total = used = 0
    for node in nodes:
        for r in resources:
            cap = int(node.labels.get(f"_{r}", 0))
            total += cap
            used += cap - node.free[r]
    return used / total if total else 1.0


def _daemons(b: Builder) -> None:
    """DaemonSet pods on every node (hostNetwork ones with host ports) and control-plane static pods."""
    for node in b.nodes:
        sets = [
            ("kube-proxy", "kube-system", 100, 0, True, [10249]),
            ("fluent-bit", "logging", 100, 128 * MiB, False, []),
            ("node-exporter", "monitoring", 100, 180 * MiB, True, [9100]),
        ]
        if "nvidia.com/gpu.present" in node.labels:
            sets += [("nvidia-device-plugin", "gpu-operator", 0, 0, False, []), ("dcgm-exporter", "gpu-operator", 0, 0, False, [])]
        if "rdma/rdma_shared_device_a" in node.free:
            sets.append(("rdma-shared-dp", "nvidia-network-operator", 50, 64 * MiB, True, []))
        for name, namespace, cpu, mem, host, ports in sets:
            res = {"cpu": cpu_quantity(cpu), **({"memory": memory_quantity(mem, b.rng)} if mem else {})} if cpu else {}
            container: dict[str, Any] = {"name": name, "image": f"registry.example.com/{name}:1.0", "resources": {"requests": res}}
            if ports:
                container["ports"] = [{"containerPort": p, "hostPort": p, "protocol": "TCP"} for p in ports]
            pod = b.pod(
                f"{name}-{b.suffix(5)}",
                namespace,
                ("DaemonSet", name),
                [container],
                labels={"app.kubernetes.io/name": name},
                priority=SYSTEM,
                hostNetwork=host,
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [_expr("metadata.name", "In", node.name)]}]}
                    }
                },
            )
            pod["spec"]["tolerations"] = EXISTS + DEFAULT_TOLERATIONS
            b.bind(node, scheduled_need(pod), pod, None, host_port_numbers(pod))
            b.items.append(pod)
        if node.family == "control-plane":
            for name, cpu, mem in (("etcd", 100, 100 * MiB), ("kube-apiserver", 250, 0), ("kube-scheduler", 100, 0)):
                pod = b.pod(
                    f"{name}-{node.name}",
                    "kube-system",
                    ("Node", node.name),
                    [
                        b.container(name, cpu, mem)
                        if mem
                        else {"name": name, "image": f"registry.example.com/{name}:1.0", "resources": {"requests": {"cpu": cpu_quantity(cpu)}}}
                    ],
                    labels={"component": name, "tier": "control-plane"},
                    priority=SYSTEM,
                    hostNetwork=True,
                )
                pod["metadata"]["annotations"] = {"kubernetes.io/config.mirror": b.suffix(12), "kubernetes.io/config.source": "file"}
                pod["spec"]["tolerations"] = [{"operator": "Exists", "effect": "NoExecute"}]
                b.bind(node, scheduled_need(pod), pod, None, [])
                b.items.append(pod)


def _fill(b: Builder, pool: list[NodeState], resources: tuple[str, ...], target: float, make: Any) -> None:
    """Add workloads from ``make`` until ``target`` of the pool's ``resources`` is requested (or 40
    workloads in a row do not fit)."""
    misses = 0
    while pool and _gpu_share(pool, resources) < target and misses < 40:
        misses = 0 if make() else misses + 1


def generate_kubernetes_mixed(nodes: int = 60, seed: int = 0, *, counts: dict[str, int] | None = None, fill: float = 0.7) -> dict[str, Any]:
    """A kubectl List of a mixed GPU cluster: ``nodes`` nodes in the families' shares (or ``counts``
    nodes per family), GPUs (CPUs on CPU nodes) requested up to about ``fill``; same arguments, same List."""
    b = Builder(seed)
    counts = counts if counts is not None else family_counts(nodes)
    leaf = 0
    for family in FAMILIES:
        for i in range(counts.get(family, 0)):
            b.node(family, i, leaf + i // 16)
        leaf += (counts.get(family, 0) + 15) // 16
    for node in b.nodes:  # capacities for the fill measure
        for r, v in list(node.free.items()):
            node.labels[f"_{r}"] = str(v)
    for ns, tier in NAMESPACES.items():
        b.items.append(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "uid": b.uid(), "labels": {"kubernetes.io/metadata.name": ns, "tier": tier}}}
        )
    _daemons(b)
    rng, fam = b.rng, b.by_family
    gpu = ("nvidia.com/gpu",)
    for family in ("train-h100", "train-h200"):
        pool = fam[family]
        serve_pool = fam["inference"] + fam["train-h100"]
        _fill(
            b,
            pool,
            gpu,
            fill,
            lambda pool=pool, family=family, serve_pool=serve_pool: rng.choices(
                [
                    lambda: _gang(b, family, pool),
                    lambda: _batch(b, family, pool),
                    lambda: _notebook(b, "nvidia.com/gpu", 1, pool, rng.choice([None, {"nvidia.com/gpu.product": PRODUCTS[family][0]}])),
                    lambda: _serving(b, serve_pool, True) if family == "train-h100" else _batch(b, family, pool),
                ],
                weights=[3, 4, 1.5, 1.5],
            )[0](),
        )
    _fill(b, fam["inference"], gpu, fill, lambda: _serving(b, fam["inference"], False))
    mig = tuple(sorted({r for n in fam["mig"] for r in n.free if r.startswith("nvidia.com/mig-")}))
    _fill(b, fam["mig"], mig, fill, lambda: _mig(b, fam["mig"]))
    plain = [n for n in fam["ts"] if "nvidia.com/gpu" in n.free]
    renamed = [n for n in fam["ts"] if "nvidia.com/gpu.shared" in n.free]
    _fill(
        b,
        plain,
        gpu,
        fill,
        lambda: _notebook(
            b,
            "nvidia.com/gpu",
            rng.choice([1, 1, 1, 2]),
            plain,
            rng.choice([None, None, {"nvidia.com/gpu.sharing-strategy": "time-slicing"}, {"nvidia.com/gpu.product": "NVIDIA-L4-SHARED"}]),
        ),
    )
    _fill(b, renamed, ("nvidia.com/gpu.shared",), fill, lambda: _notebook(b, "nvidia.com/gpu.shared", rng.choice([1, 1, 2]), renamed, None))
    cpu = fam["cpu"]
    if cpu:
        ingress = max(2, len(cpu) // 7)
        _deployment(
            b,
            "ingress-nginx-controller",
            "ingress-nginx",
            min(ingress, len(cpu)),
            lambda name, owner, labels: b.pod(
                name,
                "ingress-nginx",
                owner,
                [
                    b.container(
                        "controller",
                        1000,
                        GiB,
                        ports=[{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}, {"containerPort": 443, "hostPort": 443, "protocol": "TCP"}],
                    )
                ],
                labels=labels | {"app": "ingress-nginx"},
                nodeSelector={"node-pool": "cpu"},
            ),
            cpu,
        )
        _fill(b, cpu, ("cpu",), fill * 0.8, lambda: _statefulset(b, cpu) if rng.random() < 0.5 else _api_and_cache(b, cpu))
    if fam["control-plane"]:

        def coredns(name: str, owner: tuple[str, str], labels: dict[str, str]) -> dict[str, Any]:
            pod = b.pod(
                name,
                "kube-system",
                owner,
                [b.container("coredns", 100, 70 * MiB)],
                labels=labels | {"k8s-app": "kube-dns"},
                priority=("system-cluster-critical", 2000000000),
            )
            pod["spec"]["tolerations"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}] + DEFAULT_TOLERATIONS
            return pod

        _deployment(b, "coredns", "kube-system", 2, coredns, fam["control-plane"] + cpu)
    _leftovers(b)
    for node in b.nodes:
        for key in [k for k in node.labels if k.startswith("_")]:
            del node.labels[key]
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": b.items}


def _leftovers(b: Builder) -> None:
    """Pending pods (whole-node training pods, and per 60 nodes one of each: a one-GPU notebook, a
    shared-GPU notebook, a MIG job and a two-GPU inference pod), and finished Job pods."""
    rng = b.rng
    train = b.by_family["train-h100"] + b.by_family["train-h200"]
    # (name, CPU millicores, memory bytes, GPU resources, tolerations beyond the defaults)
    pending: list[tuple[str, int, int, dict[str, int], list[dict[str, str]] | None]]
    pending = [("train-big", 96_000, 1024 * GiB, {"nvidia.com/gpu": 8}, None)] * max(1, len(b.nodes) // 40)
    pending += [
        ("nb-pending", 2000, 16 * GiB, {"nvidia.com/gpu": 1}, None),
        ("nb-shared-pending", 2000, 8 * GiB, {"nvidia.com/gpu.shared": 1}, None),
        ("mig-pending", 2000, 16 * GiB, {"nvidia.com/mig-1g.10gb": 1}, None),
        ("serve-pending", 8000, 64 * GiB, {"nvidia.com/gpu": 2}, [dict(INFERENCE_TAINT)]),
    ] * max(1, len(b.nodes) // 60)
    for k, (kind, cpu, mem, gpus, tolerations) in enumerate(pending):
        name = f"{kind}-{k}"
        pod = b.pod(
            f"{name}-{b.suffix(5)}", "research", ("Job", name), [b.container("main", cpu, mem, gpus)], labels={"app": kind, "job-name": name}, priority=TRAINING
        )
        pod["spec"]["restartPolicy"] = "Never"
        pod["spec"]["tolerations"] += tolerations or []
        pod["status"]["phase"] = "Pending"
        b.items.append(pod)
    for k in range(max(1, len(b.nodes) // 40)):
        if not train:
            break
        name = f"done-{k:03d}"
        pod = b.pod(
            f"{name}-{b.suffix(5)}",
            "research",
            ("Job", name),
            [b.container("main", 8000, 64 * GiB, {"nvidia.com/gpu": 8})],
            labels={"app": "done", "job-name": name},
            priority=TRAINING,
        )
        pod["spec"] |= {"restartPolicy": "Never", "nodeName": rng.choice(train).name}
        pod["status"]["phase"] = rng.choice(["Succeeded", "Failed"])
        b.items.append(pod)
