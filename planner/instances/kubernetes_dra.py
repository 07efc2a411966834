"""A seeded mixed fleet as a kubectl List: DRA nodes (whole GPUs of two products, static MIG partitions),
device-plugin nodes and nodes with both, with the NVIDIA DRA driver's device classes, pods on per-pod
claims from ResourceClaimTemplates (any GPU, an H100 with at least 40Gi, a MIG 1g.10gb slice), pairs of
pods sharing one allocated ResourceClaim, device-plugin pods, and pending pods of each sort.

Placed claims are allocated as kube-scheduler would (specific devices of the pod's node, recorded in the
claim's ``status.allocation`` and the pod's ``status.resourceClaimStatuses``), so ``planner import
kubernetes`` reads the List as a cluster that runs, and ``planner controlplane up --from`` can load it.
"""

from __future__ import annotations

import random
from typing import Any

DRIVER = "gpu.nvidia.com"
NAMESPACE = "ml"
CLASSES = {
    "gpu.nvidia.com": f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "gpu"',
    "mig.nvidia.com": f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].type == "mig"',
}
TEMPLATES: dict[str, tuple[str, list[str], int]] = {
    # name: (device class, request selectors, count)
    "any-gpu": ("gpu.nvidia.com", [], 1),
    "two-gpus": ("gpu.nvidia.com", [], 2),
    "h100-40g": (
        "gpu.nvidia.com",
        [f'device.attributes["{DRIVER}"].productName == "NVIDIA H100 80GB HBM3"', f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'],
        1,
    ),
    "mig-1g": ("mig.nvidia.com", [f'device.attributes["{DRIVER}"].profile == "1g.10gb"'], 1),
}
PRODUCTS = ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3")


def _meta(name: str, namespace: str | None = None, **more: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", **more}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _device(name: str, attributes: dict[str, Any], memory: str) -> dict[str, Any]:
    attrs = {k: ({"int": v} if isinstance(v, int) else {"string": v}) for k, v in attributes.items()}
    return {"name": name, "attributes": attrs, "capacity": {"memory": {"value": memory}}}


def _node(name: str, shape: str, rng: random.Random, twin: bool) -> tuple[dict[str, Any], dict[str, Any] | None, list[tuple[str, str]]]:
    """The Node, its ResourceSlice (None for device-plugin only, and for the twin) and its DRA devices as
    (name, what they are); the twin offers the same devices as device-plugin resources."""
    allocatable = {"cpu": "96", "memory": "768Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name}
    devices: list[dict[str, Any]] = []
    serves: list[tuple[str, str]] = []
    if shape in ("plugin", "both"):
        allocatable["nvidia.com/gpu"] = "8" if shape == "plugin" else "4"
    if shape in ("gpu", "both"):
        product = rng.choice(PRODUCTS)
        for g in range(8 if shape == "gpu" else 4):
            devices.append(_device(f"gpu-{g}", {"type": "gpu", "productName": product, "index": g, "uuid": f"GPU-{name}-{g}"}, "80Gi"))
            serves.append((f"gpu-{g}", "h100" if "H100" in product else "a100"))
    if shape == "mig":
        for g in range(2):
            for s in range(7):
                devices.append(_device(f"gpu-{g}-mig-1g10gb-{s}", {"type": "mig", "profile": "1g.10gb", "parentIndex": g}, "10Gi"))
                serves.append((f"gpu-{g}-mig-1g10gb-{s}", "mig"))
    if twin and devices:
        kinds = {k for _, k in serves}
        if kinds == {"mig"}:
            allocatable["nvidia.com/mig-1g.10gb"] = str(len(devices))
            labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"
        else:
            allocatable["nvidia.com/gpu"] = str(int(allocatable.get("nvidia.com/gpu", "0")) + len(devices))
            labels["nvidia.com/gpu.product"] = "NVIDIA-H100-80GB-HBM3" if "h100" in kinds else "NVIDIA-A100-SXM4-80GB"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": _meta(name, labels=labels), "status": {"allocatable": allocatable}}
    if not devices or twin:
        return node, None, serves
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": _meta(f"{name}-{DRIVER}"),
        "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1}, "devices": devices},
    }
    return node, slice_, serves


def _fits(template: str, kind: str) -> bool:
    return {"any-gpu": kind in ("a100", "h100"), "two-gpus": kind in ("a100", "h100"), "h100-40g": kind == "h100", "mig-1g": kind == "mig"}[template]


def _pod(
    name: str, node: str | None, claims: list[dict[str, Any]], statuses: list[dict[str, str]], gpus: int = 0, resource: str = "nvidia.com/gpu"
) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": "4", "memory": "32Gi"}
    if gpus:
        requests[resource] = str(gpus)
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{name}", "uid": f"uid-job-{name}", "controller": True}
    resources: dict[str, Any] = {"requests": requests, **({"limits": {resource: str(gpus)}} if gpus else {})}  # extended resources need limits
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/train:1", "resources": resources}]}
    if claims:
        spec["resourceClaims"] = claims
        spec["containers"][0]["resources"]["claims"] = [{"name": c["name"]} for c in claims]
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if statuses:
        status["resourceClaimStatuses"] = statuses
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(name, NAMESPACE, ownerReferences=[owner]), "spec": spec, "status": status}


def _claim(name: str, template: str | None, spec: dict[str, Any], node: str, devices: list[str], users: list[str]) -> dict[str, Any]:
    results = [{"request": "gpu", "driver": DRIVER, "pool": node, "device": d} for d in devices]
    meta = _meta(name, NAMESPACE, **({"annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"}} if template else {}))
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": spec,
        "status": {
            "allocation": {
                "devices": {"results": results},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]},
            },
            "reservedFor": [{"resource": "pods", "name": u, "uid": f"uid-{u}"} for u in users],
        },
    }


def _claim_spec(template: str) -> dict[str, Any]:
    cls, selectors, count = TEMPLATES[template]
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def _twin_pod(name: str, node: str | None, template: str, locked: bool = False, gpus: bool = True) -> dict[str, Any]:
    """The device-plugin twin of a DRA pod: the same devices as extended resources, the product selector as a
    node selector on the product label, a pod sharing a claim locked as the DRA import locks it."""
    count = TEMPLATES[template][2] if gpus else 0
    pod = _pod(name, node, [], [], count, "nvidia.com/mig-1g.10gb" if template == "mig-1g" else "nvidia.com/gpu")
    if template == "h100-40g":
        pod["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    if locked:
        pod["metadata"]["annotations"] = {"planner.io/locked": "true"}
    return pod


def dra_fleet(nodes: int = 16, seed: int = 0, fill: float = 0.6, pending: int = 4, twin: bool = False) -> dict[str, Any]:
    """The List (``kind: List``) of a mixed fleet of ``nodes`` nodes; deterministic for a seed. ``twin``:
    the same fleet with every DRA device a device-plugin resource (no DRA objects), for comparisons."""
    if not 1 <= nodes <= 20_000:
        raise ValueError(f"nodes: {nodes} is not in 1..20,000")
    rng = random.Random(seed)
    items: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE)}]
    items += (
        []
        if twin
        else [
            *(
                {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": _meta(n), "spec": {"selectors": [{"cel": {"expression": e}}]}}
                for n, e in CLASSES.items()
            ),
            *(
                {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": _meta(t, NAMESPACE), "spec": {"spec": _claim_spec(t)}}
                for t in TEMPLATES
            ),
        ]
    )
    pods: list[dict[str, Any]] = []
    claims: list[dict[str, Any]] = []
    shapes = ("gpu", "gpu", "mig", "plugin", "both")
    for n in range(nodes):
        name = f"node-{n:05d}"
        node, slice_, free = _node(name, shapes[n % len(shapes)], rng, twin)
        items.append(node)
        if slice_ is not None:
            items.append(slice_)
        budget = int(len(free) * fill)
        while budget > 0 and free:
            kind = free[0][1]
            template = rng.choice([t for t in TEMPLATES if _fits(t, kind)])
            count = TEMPLATES[template][2]
            if count > min(budget, len(free)):
                break
            taken, free = free[:count], free[count:]
            budget -= count
            pod = f"p-{n:05d}-{len(pods)}"
            if template == "any-gpu" and rng.random() < 0.25 and count == 1:  # a pair sharing one named claim
                shared = f"shared-{pod}"
                users = [pod, f"{pod}-peer"]
                if twin:
                    pods += [_twin_pod(u, name, template, locked=True, gpus=u == pod) for u in users]
                    continue
                claims.append(_claim(shared, None, _claim_spec(template), name, [d for d, _ in taken], users))
                pods += [_pod(u, name, [{"name": "gpu", "resourceClaimName": shared}], []) for u in users]
                continue
            claim = f"{pod}-gpu-{rng.randrange(16**5):05x}"
            if twin:
                pods.append(_twin_pod(pod, name, template))
                continue
            claims.append(_claim(claim, template, _claim_spec(template), name, [d for d, _ in taken], [pod]))
            pods.append(_pod(pod, name, [{"name": "gpu", "resourceClaimTemplateName": template}], [{"name": "gpu", "resourceClaimName": claim}]))
        plugin = {"plugin": 8, "both": 4}.get(shapes[n % len(shapes)], 0)
        if plugin:
            pods.append(_pod(f"p-{n:05d}-{len(pods)}", name, [], [], gpus=rng.choice([1, 2]) if plugin >= 2 else 1))
    for i in range(pending):
        template = list(TEMPLATES)[i % len(TEMPLATES)]
        if twin:
            pods.append(_twin_pod(f"pending-{i}", None, template))
            continue
        pods.append(_pod(f"pending-{i}", None, [{"name": "gpu", "resourceClaimTemplateName": template}], []))
    return {"apiVersion": "v1", "kind": "List", "items": items + claims + pods}
