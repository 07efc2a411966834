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

__all__ = ["FAMILIES", "SHARES", "family_counts", "generate_kubernetes_mixed"]

NAMESPACES = {"llm-train": "training", "research": "training", "vision": "training", "serving": "serving", "assistant": "serving",
              "search": "serving", "notebooks": "interactive", "data": "platform", "platform": "platform", "team-a": "platform"}

# ----------------------------------------------------------------------------------------------
# Workloads
# ----------------------------------------------------------------------------------------------

TRAINING = ("training", 10000)
SERVING = ("inference-critical", 100000)
NOTEBOOKS = ("notebooks", 500)
SPOT = ("spot", -100)
SYSTEM = ("system-node-critical", 2000001000)
EXISTS = [{"operator": "Exists"}]


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


def _required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": list(t)} for t in terms]}}}


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values else {})}


def _anti_term(app: str, namespace: str, form: int, topology: str = "kubernetes.io/hostname") -> dict[str, Any]:
    """A required anti-affinity term on ``app``: matchLabels or matchExpressions (form 0/1), a
    ``namespaces`` list (2) or a ``namespaceSelector`` on the namespace's name (3)."""
    selector = {"matchLabels": {"app": app}} if form % 2 == 0 else {"matchExpressions": [_expr("app", "In", app)]}
    term: dict[str, Any] = {"labelSelector": selector, "topologyKey": topology}
    if form == 2:
        term["namespaces"] = [namespace]
    elif form == 3:
        term["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return term


def _gpu_share(nodes: list[NodeState], resources: tuple[str, ...]) -> float:
    total = used = 0
    for node in nodes:
        for r in resources:
            cap = int(node.labels.get(f"_{r}", 0))
            total += cap
            used += cap - node.free[r]
    return used / total if total else 1.0


def _pdb(b: Builder, name: str, namespace: str, app: str) -> None:
    spec = {"selector": {"matchLabels": {"app": app}}} | (
        {"maxUnavailable": 1} if b.rng.random() < 0.6 else {"minAvailable": "50%"})
    b.items.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": f"{name}-pdb", "namespace": namespace, "uid": b.uid()}, "spec": spec})


def _daemons(b: Builder) -> None:
    """DaemonSet pods on every node (hostNetwork ones with host ports) and control-plane static pods."""
    for node in b.nodes:
        sets = [("kube-proxy", "kube-system", 100, 0, True, [10249]), ("fluent-bit", "logging", 100, 128 * MiB, False, []),
                ("node-exporter", "monitoring", 100, 180 * MiB, True, [9100])]
        if "nvidia.com/gpu.present" in node.labels:
            sets += [("nvidia-device-plugin", "gpu-operator", 0, 0, False, []), ("dcgm-exporter", "gpu-operator", 0, 0, False, [])]
        if "rdma/rdma_shared_device_a" in node.free:
            sets.append(("rdma-shared-dp", "nvidia-network-operator", 50, 64 * MiB, True, []))
        for name, namespace, cpu, mem, host, ports in sets:
            res = {"cpu": cpu_quantity(cpu), **({"memory": memory_quantity(mem, b.rng)} if mem else {})} if cpu else {}
            container = {"name": name, "image": f"registry.example.com/{name}:1.0", "resources": {"requests": res}}
            if ports:
                container["ports"] = [{"containerPort": p, "hostPort": p, "protocol": "TCP"} for p in ports]
            pod = b.pod(f"{name}-{b.suffix(5)}", namespace, ("DaemonSet", name), [container],
                        labels={"app.kubernetes.io/name": name}, priority=SYSTEM, hostNetwork=host,
                        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchFields": [_expr("metadata.name", "In", node.name)]}]}}})
            pod["spec"]["tolerations"] = EXISTS + DEFAULT_TOLERATIONS
            b.bind(node, scheduled_need(pod), pod, None, host_port_numbers(pod))
            b.items.append(pod)
        if node.family == "control-plane":
            for name, cpu, mem in (("etcd", 100, 100 * MiB), ("kube-apiserver", 250, 0), ("kube-scheduler", 100, 0)):
                pod = b.pod(f"{name}-{node.name}", "kube-system", ("Node", node.name),
                            [b.container(name, cpu, mem) if mem else {"name": name, "resources": {"requests": {"cpu": cpu_quantity(cpu)}}}],
                            labels={"component": name, "tier": "control-plane"}, priority=SYSTEM, hostNetwork=True)
                pod["metadata"]["annotations"] = {"kubernetes.io/config.mirror": b.suffix(12), "kubernetes.io/config.source": "file"}
                pod["spec"]["tolerations"] = [{"operator": "Exists", "effect": "NoExecute"}]
                b.bind(node, scheduled_need(pod), pod, None, [])
                b.items.append(pod)


def _deployment(b: Builder, app: str, namespace: str, replicas: int, make: Any, pool: list[NodeState], *,
                anti: bool = False, pdb: bool = True) -> list[dict[str, Any]]:
    rs = f"{app}-{b.suffix(10)}"
    pods = [make(f"{rs}-{b.suffix(5)}", ("ReplicaSet", rs), {"app": app, "pod-template-hash": rs[len(app) + 1:]}) for _ in range(replicas)]
    if b.place(pods, pool, anti=f"{namespace}/{app}" if anti else None):
        if pdb and replicas > 1:
            _pdb(b, app, namespace, app)
        return pods
    return []


def _serving(b: Builder, pool: list[NodeState], h100: bool) -> bool:
    """A serving Deployment: 1-2 GPUs per replica, the inference toleration, hostname anti-affinity;
    sometimes the L40S-or-H100 affinity, a node-pool selector, sidecars, overhead."""
    rng = b.rng
    namespace = rng.choice(["serving", "assistant", "search"])
    app = b.next(rng.choice(["llm-serve", "rerank", "asr", "tts", "vlm", "chat", "codegen"]))
    gpus, form = rng.choice([1, 1, 1, 2]), rng.randrange(4)
    cpu, mem = rng.choice([4000, 10_000, 12_000, 16_500]), rng.choice([48, 96, 115, 141]) * GiB

    def make(name: str, owner: tuple[str, str], labels: dict[str, str]) -> dict[str, Any]:
        spec: dict[str, Any] = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            _anti_term(app, namespace, form)]}}}
        if h100:
            spec["affinity"] |= _required([_expr("nvidia.com/gpu.product", "In", "NVIDIA-L40S")],
                                          [_expr("nvidia.com/gpu.product", "In", "NVIDIA-H100-80GB-HBM3"),
                                           _expr("nvidia.com/mig.strategy", "DoesNotExist")])
        elif rng.random() < 0.4:
            spec["nodeSelector"] = {"node-pool": "inference"}
        init = None
        if rng.random() < 0.3:
            init = [b.container("istio-proxy", 100, 128 * MiB, sidecar=True), b.container("model-download", 4000, 16 * GiB)]
        if rng.random() < 0.1:
            spec |= {"runtimeClassName": "kata-nvidia", "overhead": {"cpu": "250m", "memory": "160Mi"}}
        server = b.container("server", cpu, mem, {"nvidia.com/gpu": gpus}, limits_only=rng.random() < 0.3,
                             ports=[{"containerPort": 8000, "protocol": "TCP"}])
        pod = b.pod(name, namespace, owner, [server], labels=labels, priority=SERVING, init=init, **spec)
        pod["spec"]["tolerations"] = [dict(INFERENCE_TAINT)] + DEFAULT_TOLERATIONS
        return pod

    return bool(_deployment(b, app, namespace, rng.choice([1, 2, 2, 3]), make, pool, anti=True))


def _gang(b: Builder, family: str, pool: list[NodeState]) -> bool:
    """A gang of 8- or 4-GPU training pods: PodGroup, JobSet, Volcano or Kueue (on one leaf)."""
    rng = b.rng
    kind = rng.choice(["podgroup", "jobset", "volcano", "kueue"])
    namespace = rng.choice(["llm-train", "research", "vision"])
    product = PRODUCTS[family][0]
    job = b.next(f"{rng.choice(['pretrain', 'moe', 'vit', 'sft', 'diffusion'])}-{family[-4:]}")
    gpus = rng.choice([8, 4])
    size = rng.choice([2, 2, 3, 4]) if gpus == 8 else rng.choice([2, 4, 6])
    rdma = rng.random() < 0.7
    selector = {"nvidia.com/gpu.product": product}
    if kind == "kueue":
        leaves = sorted({n.labels["network.topology.nvidia.com/leaf"] for n in pool})
        selector["network.topology.nvidia.com/leaf"] = rng.choice(leaves)
        pool = [n for n in pool if n.labels["network.topology.nvidia.com/leaf"] == selector["network.topology.nvidia.com/leaf"]]
    pods = []
    for i in range(size):
        labels, annotations = {"app": job, "batch.kubernetes.io/job-completion-index": str(i)}, {}
        owner, name = job, f"{job}-{i}-{b.suffix(5)}"
        if kind in ("jobset", "kueue"):
            owner, name = f"{job}-workers-0", f"{job}-workers-0-{i}-{b.suffix(5)}"
            labels |= {"jobset.sigs.k8s.io/jobset-name": job, "jobset.sigs.k8s.io/replicatedjob-name": "workers"}
            if kind == "kueue":
                labels |= {"kueue.x-k8s.io/queue-name": "training", "kueue.x-k8s.io/podset": "workers"}
                annotations["kueue.x-k8s.io/podset-required-topology"] = "network.topology.nvidia.com/leaf"
        elif kind == "podgroup":
            labels["scheduling.x-k8s.io/pod-group"] = job
        else:
            labels["volcano.sh/job-name"] = job
            annotations["scheduling.k8s.io/group-name"] = f"{job}-pg"
        extra = {"nvidia.com/gpu": gpus} | ({"rdma/rdma_shared_device_a": 1} if rdma else {})
        trainer = b.container("trainer", 165_000 if gpus == 8 else 93_500, (1288 if gpus == 8 else 460) * GiB, extra, eph=200 * GiB)
        pod = b.pod(name, namespace, ("Job", owner), [trainer, b.container("metrics-agent", 200, 256 * MiB)], labels=labels,
                    priority=TRAINING, init=[b.container("fetch-checkpoint", 8000, 32 * GiB)], nodeSelector=selector)
        pod["spec"]["restartPolicy"] = "Never"
        if annotations:
            pod["metadata"]["annotations"] = annotations
        pods.append(pod)
    if not b.place(pods, pool):
        return False
    if kind == "podgroup":
        b.items.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                        "metadata": {"name": job, "namespace": namespace, "uid": b.uid()}, "spec": {"minMember": size}})
    elif kind == "volcano":
        b.items.append({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                        "metadata": {"name": f"{job}-pg", "namespace": namespace, "uid": b.uid()}, "spec": {"minMember": size}})
    return True


def _batch(b: Builder, family: str, pool: list[NodeState]) -> bool:
    """A one-pod Job of 1-4 GPUs with one of the node-affinity forms real users write (each one its
    own family's nodes meet: ``Lt`` on H100s only, ``matchFields NotIn`` names of the other family)."""
    rng = b.rng
    kind = rng.choice(["eval", "finetune", "sweep", "preprocess"])
    name = b.next(kind)
    form = rng.randrange(6 if family == "train-h100" else 5)
    other = b.by_family["train-h200" if family == "train-h100" else "train-h100"]
    spec: dict[str, Any] = {}
    if form == 4 and other:
        avoid = sorted(rng.sample([n.name for n in other], k=min(2, len(other))))
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [_expr("nvidia.com/gpu.count", "Gt", "3")], "matchFields": [_expr("metadata.name", "NotIn", *avoid)]}]}}}
    elif form == 5:
        spec["affinity"] = _required([_expr("nvidia.com/gpu.memory", "Lt", "100000"), _expr("nvidia.com/gpu.present", "Exists")])
    elif form in (0, 4):
        spec["affinity"] = _required([_expr("nvidia.com/gpu.memory", "Gt", "40000"), _expr("nvidia.com/gpu.replicas", "DoesNotExist"),
                                      _expr("node-pool", "NotIn", "mig", "inference")])
    elif form == 1:
        spec["affinity"] = _required([_expr("nvidia.com/gpu.product", "NotIn", "NVIDIA-L40S", "NVIDIA-L4-SHARED", "NVIDIA-L4"),
                                      _expr("nvidia.com/gpu.present", "Exists"), _expr("nvidia.com/mig.strategy", "DoesNotExist")])
    elif form == 2:
        spec["nodeSelector"] = {"nvidia.com/gpu.product": PRODUCTS[family][0]}
    else:
        spec["affinity"] = _required([_expr("nvidia.com/gpu.family", "In", "hopper"), _expr("nvidia.com/mig.strategy", "DoesNotExist")])
    gpus = rng.choice([1, 1, 2, 4])
    main = b.container("main", rng.choice([6000, 12_000, 20_000]), rng.choice([64, 102, 128]) * GiB, {"nvidia.com/gpu": gpus},
                       eph=rng.choice([0, 100 * GiB]))
    pod = b.pod(f"{name}-{b.suffix(5)}", rng.choice(["research", "speech", "vision", "llm-train"]), ("Job", name), [main],
                labels={"app": kind, "job-name": name}, priority=rng.choice([TRAINING, SPOT]), **spec)
    pod["spec"]["restartPolicy"] = "Never"
    if rng.random() < 0.2:
        pod["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    if rng.random() < 0.05:
        pod["metadata"]["annotations"] = {"planner.io/locked": "true"}
    return b.place([pod], pool)


def _notebook(b: Builder, resource: str, count: int, pool: list[NodeState], selector: dict[str, str] | None) -> bool:
    rng = b.rng
    user = rng.choice(["alice", "bob", "carol", "dave", "erin", "heidi", "ivan", "judy"])
    sts = b.next(f"nb-{user}")
    jupyter = b.container("jupyter", rng.choice([2000, 3000, 4000]), rng.choice([12 * GiB, 11776 * MiB, 16 * 10**9, 19968 * MiB]),
                          {resource: count}, eph=rng.choice([0, 20 * GiB]))
    pod = b.pod(f"{sts}-0", rng.choice(["notebooks", "research"]), ("StatefulSet", sts), [jupyter], priority=NOTEBOOKS,
                labels={"app": "notebook", "user": user, "statefulset.kubernetes.io/pod-name": f"{sts}-0"},
                **({"nodeSelector": selector} if selector else {}))
    return b.place([pod], pool)


def _mig(b: Builder, pool: list[NodeState]) -> bool:
    rng = b.rng
    node = rng.choice(pool)
    profile = rng.choice([r for r in node.free if r.startswith("nvidia.com/mig-")])
    short = profile.split("-", 1)[1].split(".")[0]
    fitting = [n for n in pool if profile in n.free]
    selector = {"nvidia.com/gpu.product": node.labels["nvidia.com/gpu.product"]} if rng.random() < 0.3 else None
    namespace = rng.choice(["research", "search", "serving"])
    cpu, mem = rng.choice([2000, 4000]), rng.choice([16 * GiB, 24 * 10**9, 40 * GiB])

    def make(name: str, owner: tuple[str, str], labels: dict[str, str]) -> dict[str, Any]:
        return b.pod(name, namespace, owner, [b.container("server", cpu, mem, {profile: 1}, limits_only=rng.random() < 0.3)],
                     labels=labels, priority=SERVING, **({"nodeSelector": selector} if selector else {}))

    if rng.random() < 0.5:
        job = b.next(f"mig-job-{short}")
        pod = make(f"{job}-{b.suffix(5)}", ("Job", job), {"app": "mig-job", "job-name": job})
        pod["spec"]["restartPolicy"] = "Never"
        return b.place([pod], fitting)
    return bool(_deployment(b, b.next(f"embed-{short}"), namespace, rng.choice([2, 3, 4]), make, fitting, pdb=False))


def _statefulset(b: Builder, pool: list[NodeState]) -> bool:
    """A CPU StatefulSet with hostname (or zone) anti-affinity, ephemeral storage, init containers, a PDB."""
    rng = b.rng
    base = rng.choice(["clickhouse", "redis", "etcd", "kafka", "zookeeper", "postgres", "prometheus", "elasticsearch"])
    namespace = rng.choice(["data", "platform", "team-a", "observability"])
    app = base if rng.random() < 0.15 and (namespace, base) not in b.plain else b.next(base)
    b.plain.add((namespace, app))  # a plain name may recur in another namespace: pod names used twice
    zone = rng.random() < 0.1
    replicas = 2 if zone else 3
    term = _anti_term(app, namespace, rng.randrange(2), "topology.kubernetes.io/zone" if zone else "kubernetes.io/hostname")
    spec: dict[str, Any] = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}
    if rng.random() < 0.5:
        spec["affinity"] |= _required([_expr("nvidia.com/gpu.present", "DoesNotExist"),
                                       _expr("node-role.kubernetes.io/control-plane", "DoesNotExist")])
    else:
        spec["nodeSelector"] = {"node-pool": "cpu"}
    cpu, mem, eph = rng.choice([2000, 8000, 12_000]), rng.choice([23, 64, 89]) * GiB, rng.choice([5, 10]) * GiB
    init = [b.container("init-perms", 100, 64 * MiB)] if rng.random() < 0.5 else None
    pods = [b.pod(f"{app}-{i}", namespace, ("StatefulSet", app), [b.container(app.rsplit("-", 1)[0], cpu, mem, eph=eph)],
                  labels={"app": app, "statefulset.kubernetes.io/pod-name": f"{app}-{i}"}, init=init, **spec) for i in range(replicas)]
    if zone:
        by_zone: dict[str, list[NodeState]] = {}
        for n in pool:
            by_zone.setdefault(n.labels["topology.kubernetes.io/zone"], []).append(n)
        zones = rng.sample(sorted(by_zone), k=min(replicas, len(by_zone)))
        if len(zones) < replicas or not all(b.place([p], by_zone[z]) for p, z in zip(pods, zones)):
            return False  # (a pod placed before a failure stays: it is still a valid, smaller StatefulSet)
    elif not b.place(pods, pool, anti=f"{namespace}/{app}"):
        return False
    _pdb(b, app, namespace, app)
    return True


def _api_and_cache(b: Builder, pool: list[NodeState]) -> bool:
    """A CPU Deployment, and sometimes a cache pod that must share a node with one of its pods."""
    rng = b.rng
    namespace = rng.choice(["data", "platform", "team-a"])
    app = b.next("api")
    cpu, mem = rng.choice([500, 1000, 2500]), rng.choice([2 * GiB, 7680 * MiB, 7516192768])
    selector = {"node-pool": "cpu"} if rng.random() < 0.5 else None

    def make(name: str, owner: tuple[str, str], labels: dict[str, str]) -> dict[str, Any]:
        return b.pod(name, namespace, owner, [b.container("api", cpu, mem)], labels=labels, **({"nodeSelector": selector} if selector else {}))

    pods = _deployment(b, app, namespace, rng.choice([1, 2, 3]), make, pool)
    if pods and rng.random() < 0.3:
        host = next(n for n in pool if n.name == pods[0]["spec"]["nodeName"])
        cache = b.next("cache")
        pod = b.pod(f"{cache}-{b.suffix(10)}-{b.suffix(5)}", namespace, ("ReplicaSet", cache), [b.container("cache", 500, GiB)],
                    labels={"app": cache}, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}})
        b.place([pod], [host])
    return bool(pods)


def _fill(b: Builder, pool: list[NodeState], resources: tuple[str, ...], target: float, make: Any) -> None:
    """Add workloads from ``make`` until ``target`` of the pool's ``resources`` is requested (or 40
    workloads in a row do not fit)."""
    misses = 0
    while pool and _gpu_share(pool, resources) < target and misses < 40:
        misses = 0 if make() else misses + 1


def generate_kubernetes_mixed(nodes: int = 60, seed: int = 0, *, counts: dict[str, int] | None = None,
                              fill: float = 0.7) -> dict[str, Any]:
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
        b.items.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "uid": b.uid(), "labels": {
            "kubernetes.io/metadata.name": ns, "tier": tier}}})
    _daemons(b)
    rng, fam = b.rng, b.by_family
    gpu = ("nvidia.com/gpu",)
    for family in ("train-h100", "train-h200"):
        pool = fam[family]
        serve_pool = fam["inference"] + fam["train-h100"]
        _fill(b, pool, gpu, fill, lambda pool=pool, family=family, serve_pool=serve_pool: rng.choices(
            [lambda: _gang(b, family, pool), lambda: _batch(b, family, pool),
             lambda: _notebook(b, "nvidia.com/gpu", 1, pool, rng.choice([None, {"nvidia.com/gpu.product": PRODUCTS[family][0]}])),
             lambda: _serving(b, serve_pool, True) if family == "train-h100" else _batch(b, family, pool)],
            weights=[3, 4, 1.5, 1.5])[0]())
    _fill(b, fam["inference"], gpu, fill, lambda: _serving(b, fam["inference"], False))
    mig = tuple(sorted({r for n in fam["mig"] for r in n.free if r.startswith("nvidia.com/mig-")}))
    _fill(b, fam["mig"], mig, fill, lambda: _mig(b, fam["mig"]))
    plain = [n for n in fam["ts"] if "nvidia.com/gpu" in n.free]
    renamed = [n for n in fam["ts"] if "nvidia.com/gpu.shared" in n.free]
    _fill(b, plain, gpu, fill, lambda: _notebook(b, "nvidia.com/gpu", rng.choice([1, 1, 1, 2]), plain, rng.choice(
        [None, None, {"nvidia.com/gpu.sharing-strategy": "time-slicing"}, {"nvidia.com/gpu.product": "NVIDIA-L4-SHARED"}])))
    _fill(b, renamed, ("nvidia.com/gpu.shared",), fill, lambda: _notebook(b, "nvidia.com/gpu.shared", rng.choice([1, 1, 2]), renamed, None))
    cpu = fam["cpu"]
    if cpu:
        ingress = max(2, len(cpu) // 7)
        _deployment(b, "ingress-nginx-controller", "ingress-nginx", min(ingress, len(cpu)), lambda name, owner, labels: b.pod(
            name, "ingress-nginx", owner, [b.container("controller", 1000, GiB, ports=[
                {"containerPort": 80, "hostPort": 80, "protocol": "TCP"}, {"containerPort": 443, "hostPort": 443, "protocol": "TCP"}])],
            labels=labels | {"app": "ingress-nginx"}, nodeSelector={"node-pool": "cpu"}), cpu)
        _fill(b, cpu, ("cpu",), fill * 0.8, lambda: _statefulset(b, cpu) if rng.random() < 0.5 else _api_and_cache(b, cpu))
    if fam["control-plane"]:
        def coredns(name: str, owner: tuple[str, str], labels: dict[str, str]) -> dict[str, Any]:
            pod = b.pod(name, "kube-system", owner, [b.container("coredns", 100, 70 * MiB)], labels=labels | {"k8s-app": "kube-dns"},
                        priority=("system-cluster-critical", 2000000000))
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
    pending = [("train-big", 96_000, 1024 * GiB, {"nvidia.com/gpu": 8}, None)] * max(1, len(b.nodes) // 40)
    pending += [("nb-pending", 2000, 16 * GiB, {"nvidia.com/gpu": 1}, None), ("nb-shared-pending", 2000, 8 * GiB, {"nvidia.com/gpu.shared": 1}, None),
                ("mig-pending", 2000, 16 * GiB, {"nvidia.com/mig-1g.10gb": 1}, None),
                ("serve-pending", 8000, 64 * GiB, {"nvidia.com/gpu": 2}, [dict(INFERENCE_TAINT)])] * max(1, len(b.nodes) // 60)
    for k, (kind, cpu, mem, gpus, tolerations) in enumerate(pending):
        name = f"{kind}-{k}"
        pod = b.pod(f"{name}-{b.suffix(5)}", "research", ("Job", name), [b.container("main", cpu, mem, gpus)],
                    labels={"app": kind}, priority=TRAINING)
        pod["spec"]["restartPolicy"] = "Never"
        pod["spec"]["tolerations"] += tolerations or []
        pod["status"]["phase"] = "Pending"
        b.items.append(pod)
    for k in range(max(1, len(b.nodes) // 40)):
        if not train:
            break
        name = f"done-{k:03d}"
        pod = b.pod(f"{name}-{b.suffix(5)}", "research", ("Job", name),
                    [b.container("main", 8000, 64 * GiB, {"nvidia.com/gpu": 8})], labels={"app": "done"}, priority=TRAINING)
        pod["spec"] |= {"restartPolicy": "Never", "nodeName": rng.choice(train).name}
        pod["status"]["phase"] = rng.choice(["Succeeded", "Failed"])
        b.items.append(pod)
