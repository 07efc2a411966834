"""The workloads of ``kubernetes_mixed``'s clusters: priority classes, affinity terms, PodDisruptionBudgets and
the controllers (serving Deployments, training gangs, batch Jobs, notebooks, MIG jobs, StatefulSets, API
servers with their caches), each made by the ``Builder`` and placed where it fits, or not added."""

from __future__ import annotations

from typing import Any

from planner.instances.kubernetes_mixed_build import (
    DEFAULT_TOLERATIONS,
    INFERENCE_TAINT,
    PRODUCTS,
    Builder,
    GiB,
    MiB,
    NodeState,
)

TRAINING = ("training", 10000)
SERVING = ("inference-critical", 100000)
NOTEBOOKS = ("notebooks", 500)
SPOT = ("spot", -100)
SYSTEM = ("system-node-critical", 2000001000)
EXISTS = [{"operator": "Exists"}]


def _required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}}


def _node_selector(selector: dict[str, str] | None) -> dict[str, Any]:
    """The pod spec fields (``Builder.pod``'s ``**spec``) that pin a pod to the nodes ``selector``
    labels: none without a selector."""
    return {"nodeSelector": selector} if selector else {}


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


def _pdb(b: Builder, name: str, namespace: str, app: str) -> None:
    spec = {"selector": {"matchLabels": {"app": app}}} | ({"maxUnavailable": 1} if b.rng.random() < 0.6 else {"minAvailable": "50%"})
    b.items.append(
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": f"{name}-pdb", "namespace": namespace, "uid": b.uid()}, "spec": spec}
    )


def _deployment(
    b: Builder, app: str, namespace: str, replicas: int, make: Any, pool: list[NodeState], *, anti: bool = False, pdb: bool = True
) -> list[dict[str, Any]]:
    rs = f"{app}-{b.suffix(10)}"
    pods = [make(f"{rs}-{b.suffix(5)}", ("ReplicaSet", rs), {"app": app, "pod-template-hash": rs[len(app) + 1 :]}) for _ in range(replicas)]
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
        spec: dict[str, Any] = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_anti_term(app, namespace, form)]}}}
        if h100:
            spec["affinity"] |= _required(
                [_expr("nvidia.com/gpu.product", "In", "NVIDIA-L40S")],
                [_expr("nvidia.com/gpu.product", "In", "NVIDIA-H100-80GB-HBM3"), _expr("nvidia.com/mig.strategy", "DoesNotExist")],
            )
        elif rng.random() < 0.4:
            spec["nodeSelector"] = {"node-pool": "inference"}
        init = None
        if rng.random() < 0.3:
            init = [b.container("istio-proxy", 100, 128 * MiB, sidecar=True), b.container("model-download", 4000, 16 * GiB)]
        if rng.random() < 0.1:
            spec |= {"runtimeClassName": "kata-nvidia", "overhead": {"cpu": "250m", "memory": "160Mi"}}
        server = b.container("server", cpu, mem, {"nvidia.com/gpu": gpus}, limits_only=rng.random() < 0.3, ports=[{"containerPort": 8000, "protocol": "TCP"}])
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
        pod = b.pod(
            name,
            namespace,
            ("Job", owner),
            [trainer, b.container("metrics-agent", 200, 256 * MiB)],
            labels=labels,
            priority=TRAINING,
            init=[b.container("fetch-checkpoint", 8000, 32 * GiB)],
            nodeSelector=selector,
        )
        pod["spec"]["restartPolicy"] = "Never"
        if annotations:
            pod["metadata"]["annotations"] = annotations
        pods.append(pod)
    if not b.place(pods, pool):
        return False
    if kind == "podgroup":
        b.items.append(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": job, "namespace": namespace, "uid": b.uid()},
                "spec": {"minMember": size},
            }
        )
    elif kind == "volcano":
        b.items.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": f"{job}-pg", "namespace": namespace, "uid": b.uid()},
                "spec": {"minMember": size},
            }
        )
    return True


def _batch(b: Builder, family: str, pool: list[NodeState]) -> bool:
    """A one-pod Job of 1-4 GPUs with one of the node-affinity forms real users write (each one its
    own family's nodes meet: ``Lt`` on H100s only, ``matchFields`` ``NotIn`` each name of the other family: the API
    server allows one value in a ``metadata.name`` requirement)."""
    rng = b.rng
    kind = rng.choice(["eval", "finetune", "sweep", "preprocess"])
    name = b.next(kind)
    form = rng.randrange(6 if family == "train-h100" else 5)
    other = b.by_family["train-h200" if family == "train-h100" else "train-h100"]
    spec: dict[str, Any] = {}
    if form == 4 and other:
        avoid = sorted(rng.sample([n.name for n in other], k=min(2, len(other))))
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [_expr("nvidia.com/gpu.count", "Gt", "3")],
                            # one name per requirement: the API server allows a metadata.name In/NotIn one value only
                            "matchFields": [_expr("metadata.name", "NotIn", name) for name in avoid],
                        }
                    ]
                }
            }
        }
    elif form == 5:
        spec["affinity"] = _required([_expr("nvidia.com/gpu.memory", "Lt", "100000"), _expr("nvidia.com/gpu.present", "Exists")])
    elif form in (0, 4):
        spec["affinity"] = _required(
            [_expr("nvidia.com/gpu.memory", "Gt", "40000"), _expr("nvidia.com/gpu.replicas", "DoesNotExist"), _expr("node-pool", "NotIn", "mig", "inference")]
        )
    elif form == 1:
        spec["affinity"] = _required(
            [
                _expr("nvidia.com/gpu.product", "NotIn", "NVIDIA-L40S", "NVIDIA-L4-SHARED", "NVIDIA-L4"),
                _expr("nvidia.com/gpu.present", "Exists"),
                _expr("nvidia.com/mig.strategy", "DoesNotExist"),
            ]
        )
    elif form == 2:
        spec["nodeSelector"] = {"nvidia.com/gpu.product": PRODUCTS[family][0]}
    else:
        spec["affinity"] = _required([_expr("nvidia.com/gpu.family", "In", "hopper"), _expr("nvidia.com/mig.strategy", "DoesNotExist")])
    gpus = rng.choice([1, 1, 2, 4])
    main = b.container("main", rng.choice([6000, 12_000, 20_000]), rng.choice([64, 102, 128]) * GiB, {"nvidia.com/gpu": gpus}, eph=rng.choice([0, 100 * GiB]))
    pod = b.pod(
        f"{name}-{b.suffix(5)}",
        rng.choice(["research", "speech", "vision", "llm-train"]),
        ("Job", name),
        [main],
        labels={"app": kind, "job-name": name},
        priority=rng.choice([TRAINING, SPOT]),
        **spec,
    )
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
    jupyter = b.container(
        "jupyter",
        rng.choice([2000, 3000, 4000]),
        rng.choice([12 * GiB, 11776 * MiB, 16 * 10**9, 19968 * MiB]),
        {resource: count},
        eph=rng.choice([0, 20 * GiB]),
    )
    pod = b.pod(
        f"{sts}-0",
        rng.choice(["notebooks", "research"]),
        ("StatefulSet", sts),
        [jupyter],
        priority=NOTEBOOKS,
        labels={"app": "notebook", "user": user, "statefulset.kubernetes.io/pod-name": f"{sts}-0"},
        **_node_selector(selector),
    )
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
        return b.pod(
            name,
            namespace,
            owner,
            [b.container("server", cpu, mem, {profile: 1}, limits_only=rng.random() < 0.3)],
            labels=labels,
            priority=SERVING,
            **_node_selector(selector),
        )

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
        spec["affinity"] |= _required([_expr("nvidia.com/gpu.present", "DoesNotExist"), _expr("node-role.kubernetes.io/control-plane", "DoesNotExist")])
    else:
        spec["nodeSelector"] = {"node-pool": "cpu"}
    cpu, mem, eph = rng.choice([2000, 8000, 12_000]), rng.choice([23, 64, 89]) * GiB, rng.choice([5, 10]) * GiB
    init = [b.container("init-perms", 100, 64 * MiB)] if rng.random() < 0.5 else None
    pods = [
        b.pod(
            f"{app}-{i}",
            namespace,
            ("StatefulSet", app),
            [b.container(app.rsplit("-", 1)[0], cpu, mem, eph=eph)],
            labels={"app": app, "statefulset.kubernetes.io/pod-name": f"{app}-{i}"},
            init=init,
            **spec,
        )
        for i in range(replicas)
    ]
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
        return b.pod(name, namespace, owner, [b.container("api", cpu, mem)], labels=labels, **_node_selector(selector))

    pods = _deployment(b, app, namespace, rng.choice([1, 2, 3]), make, pool)
    if pods and rng.random() < 0.3:
        host = next(n for n in pool if n.name == pods[0]["spec"]["nodeName"])
        cache = b.next("cache")
        pod = b.pod(
            f"{cache}-{b.suffix(10)}-{b.suffix(5)}",
            namespace,
            ("ReplicaSet", cache),
            [b.container("cache", 500, GiB)],
            labels={"app": cache},
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
                    ]
                }
            },
        )
        b.place([pod], [host])
    return bool(pods)
