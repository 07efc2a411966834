"""The builder under ``kubernetes_mixed``: nodes of each family as Kubernetes objects, pod and
container skeletons, and the placement bookkeeping (free resources per node in the scheduler's units,
host ports, hostname anti-affinity groups) that keeps a generated List one kube-scheduler admits.

Quantities are written from integers (cpu in millicores, bytes) in the spellings kubectl users write
and read back only in those spellings (``_amount``), so no general quantity parser is needed here.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

GiB, MiB = 2**30, 2**20
SHARES = {"train-h100": 0.355, "train-h200": 0.24, "inference": 0.14, "mig": 0.08, "ts": 0.07, "cpu": 0.10}
FAMILIES = (*SHARES, "control-plane")
_HASH = "bcdfghjklmnpqrstvwxz2456789"
_OWNER_API = {"Job": "batch/v1", "Node": "v1"}
DEFAULT_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
]
INFERENCE_TAINT = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}
PRODUCTS = {"train-h100": ("NVIDIA-H100-80GB-HBM3", "81559", "hopper"), "train-h200": ("NVIDIA-H200", "143771", "hopper")}
MIG_CONFIGS = {
    "all-1g.10gb": {"1g.10gb": 56},
    "partial-1g.10gb": {"1g.10gb": 14},
    "all-3g.40gb": {"3g.40gb": 16},
    "all-balanced": {"1g.10gb": 16, "2g.20gb": 8, "3g.40gb": 8},
}


@dataclass
class NodeState:
    name: str
    family: str
    labels: dict[str, str]
    free: Counter = field(default_factory=Counter)
    taints: list[dict[str, str]] = field(default_factory=list)
    cordoned: bool = False
    ports: set = field(default_factory=set)
    anti: set = field(default_factory=set)


def cpu_quantity(millis: int) -> str:
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def memory_quantity(amount: int, rng: random.Random) -> str:
    """A byte count in one of the spellings kubectl users write."""
    if amount % GiB == 0:
        return rng.choice([f"{amount // GiB}Gi", f"{amount // GiB}Gi", f"{amount // MiB}Mi", str(amount)])
    if amount % MiB == 0:
        return f"{amount // MiB}Mi"
    if amount % 10**9 == 0:
        return rng.choice([f"{amount // 10**9}G", f"{amount // 10**9}e9"])
    return str(amount)


class Builder:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.items: list[dict[str, Any]] = []
        self.nodes: list[NodeState] = []
        self.by_family: dict[str, list[NodeState]] = {f: [] for f in FAMILIES}
        self.serial: Counter[str] = Counter()
        self.plain: set[tuple[str, str]] = set()
        self.pod_names: set[tuple[str, str]] = set()

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def suffix(self, n: int) -> str:
        return "".join(self.rng.choice(_HASH) for _ in range(n))

    def next(self, prefix: str) -> str:
        self.serial[prefix] += 1
        return f"{prefix}-{self.serial[prefix] - 1:03d}"

    # -- nodes ---------------------------------------------------------------------------------

    def node(self, family: str, index: int, leaf: int) -> None:
        rng = self.rng
        short = {"train-h100": "trn-h100", "train-h200": "trn-h200", "inference": "inf-l40s", "mig": "mig", "ts": "ts-l4", "cpu": "cpu", "control-plane": "cp"}[
            family
        ]
        labels = {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "topology.kubernetes.io/zone": f"us-east-1{'abc'[leaf % 3]}",
            "network.topology.nvidia.com/leaf": f"leaf-{leaf:03d}",
            "network.topology.nvidia.com/spine": f"spine-{leaf // 4:02d}",
        }
        alloc: dict[str, int] = {"pods": 110}
        taints: list[dict[str, str]] = []
        gpu = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8", "nvidia.com/mig.capable": "false"}
        if family in PRODUCTS:
            product, memory, arch = PRODUCTS[family]
            labels |= gpu | {
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.memory": memory,
                "nvidia.com/gpu.family": arch,
                "nvidia.com/mig.capable": "true",
                "node-pool": family,
                "feature.node.kubernetes.io/rdma.available": "true",
            }
            alloc |= {
                "cpu": rng.choice([222_000, 223_500]),
                "memory": 2013 * GiB,
                "ephemeral-storage": 1699 * GiB,
                "nvidia.com/gpu": 8,
                "rdma/rdma_shared_device_a": 1000,
            }
            name = f"{short}-{index:04d}"
        elif family == "inference":
            labels |= gpu | {
                "nvidia.com/gpu.product": "NVIDIA-L40S",
                "nvidia.com/gpu.memory": "46068",
                "nvidia.com/gpu.family": "ada-lovelace",
                "node-pool": "inference",
            }
            alloc |= {"cpu": rng.choice([126_000, 127_500]), "memory": 1007 * GiB, "ephemeral-storage": 3518 * GiB, "nvidia.com/gpu": 8}
            taints.append(dict(INFERENCE_TAINT))
            name = f"{short}-{index:04d}"
        elif family == "mig":
            base = rng.choice(["a100", "a100", "h100"])
            config = rng.choice(list(MIG_CONFIGS))
            product = "NVIDIA-A100-SXM4-80GB" if base == "a100" else "NVIDIA-H100-80GB-HBM3"
            labels |= gpu | {
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.memory": "81920",
                "nvidia.com/mig.capable": "true",
                "node-pool": "mig",
                "nvidia.com/mig.strategy": "mixed",
                "nvidia.com/mig.config": config,
                "nvidia.com/mig.config.state": "success",
            }
            alloc |= {"cpu": 254_000, "memory": 1007 * GiB, "ephemeral-storage": 1699 * GiB}
            for profile, count in MIG_CONFIGS[config].items():
                alloc[f"nvidia.com/mig-{profile}"] = count
                labels[f"nvidia.com/mig-{profile}.count"] = str(count)
            name = f"mig-{base}-{index:04d}"
        elif family == "ts":
            renamed = index % 2 == 1
            labels |= gpu | {
                "nvidia.com/gpu.product": "NVIDIA-L4" if renamed else "NVIDIA-L4-SHARED",
                "nvidia.com/gpu.memory": "23034",
                "nvidia.com/gpu.family": "ada-lovelace",
                "node-pool": "shared",
                "nvidia.com/gpu.replicas": "4",
                "nvidia.com/gpu.sharing-strategy": "time-slicing",
            }
            alloc |= {"cpu": 190_000, "memory": 755 * GiB, "ephemeral-storage": 1899 * GiB, ("nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu"): 32}
            name = f"{short}-{index:04d}"
        elif family == "cpu":
            alloc |= {"cpu": rng.choice([62_000, 94_000]), "memory": rng.choice([252, 377]) * GiB, "ephemeral-storage": 446 * GiB}
            labels["node-pool"] = "cpu"
            name = f"{short}-{index:04d}"
        else:
            alloc |= {"cpu": 15_500, "memory": 61 * GiB, "ephemeral-storage": 93 * GiB}
            labels["node-role.kubernetes.io/control-plane"] = ""
            taints.append({"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"})
            name = f"{short}-{index:02d}"
        labels["kubernetes.io/hostname"] = name
        cordoned = family in ("train-h100", "train-h200", "inference", "ts") and rng.random() < 0.02
        if cordoned:
            taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
        spec: dict[str, Any] = {"providerID": f"aws:///us-east-1a/i-{self.suffix(17)}"}
        if taints:
            spec["taints"] = taints
        if cordoned:
            spec["unschedulable"] = True
        quantities = {
            r: (cpu_quantity(v) if r == "cpu" else memory_quantity(v, rng) if r in ("memory", "ephemeral-storage") else "1k" if v == 1000 else str(v))
            for r, v in alloc.items()
        }
        self.items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "uid": self.uid(), "labels": labels},
                "spec": spec,
                "status": {"allocatable": quantities, "capacity": dict(quantities), "conditions": [{"type": "Ready", "status": "True"}]},
            }
        )
        node = NodeState(name, family, labels, Counter(alloc), taints, cordoned)
        self.nodes.append(node)
        self.by_family[family].append(node)

    # -- pods ----------------------------------------------------------------------------------

    def fits(self, node: NodeState, need: Counter, pod: dict[str, Any], anti: str | None, ports: list[int]) -> bool:
        """Whether the pod may have been bound to the node (before any cordon: pods stay on cordoned nodes)."""
        spec = pod["spec"]
        if any(node.labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
            return False
        tolerations = spec.get("tolerations") or []
        for taint in node.taints:
            if taint["key"] != "node.kubernetes.io/unschedulable" and not any(
                t.get("operator") == "Exists"
                and not t.get("key")
                or t.get("key") == taint["key"]
                and (t.get("operator") == "Exists" or t.get("value") == taint.get("value"))
                for t in tolerations
            ):
                return False
        if anti is not None and anti in node.anti or node.ports & set(ports):
            return False
        return node.free["pods"] >= 1 and all(node.free[r] >= v for r, v in need.items())

    def bind(self, node: NodeState, need: Counter, pod: dict[str, Any], anti: str | None, ports: list[int]) -> None:
        node.free.subtract(need)
        node.free["pods"] -= 1
        node.ports |= set(ports)
        if anti is not None:
            node.anti.add(anti)
        pod["spec"]["nodeName"] = node.name

    def pod(
        self,
        name: str,
        namespace: str,
        owner: tuple[str, str],
        containers: list[dict],
        *,
        labels: dict | None = None,
        priority: tuple[str, int] | None = None,
        init: list[dict] | None = None,
        **spec: Any,
    ) -> dict[str, Any]:
        """A running pod (not yet bound); a name already used in the namespace gets a new random
        suffix, as the controllers' name generators retry."""
        while (namespace, name) in self.pod_names:
            name = f"{name.rsplit('-', 1)[0]}-{self.suffix(5)}"
        self.pod_names.add((namespace, name))
        meta: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "uid": self.uid(),
            "labels": labels or {},
            "ownerReferences": [{"apiVersion": _OWNER_API.get(owner[0], "apps/v1"), "kind": owner[0], "name": owner[1], "uid": self.uid(), "controller": True}],
        }
        body: dict[str, Any] = {
            "containers": containers,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "tolerations": list(DEFAULT_TOLERATIONS),
        }
        if priority:
            body |= {"priorityClassName": priority[0], "priority": priority[1]}
        if init:
            body["initContainers"] = init
        body |= spec
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": {"phase": "Running"}}

    def container(
        self,
        name: str,
        cpu: int,
        memory: int,
        extra: dict[str, int] | None = None,
        *,
        eph: int = 0,
        limits_only: bool = False,
        ports: list[dict] | None = None,
        sidecar: bool = False,
    ) -> dict[str, Any]:
        requests = {"cpu": cpu_quantity(cpu), "memory": memory_quantity(memory, self.rng)}
        if eph:
            requests["ephemeral-storage"] = memory_quantity(eph, self.rng)
        extra = extra or {}
        limits = {r: str(v) for r, v in extra.items()}
        if not limits_only:
            requests |= limits  # else the requests default to the limits
        out: dict[str, Any] = {"name": name, "image": f"registry.example.com/{name}:1.0", "resources": {"requests": requests}}
        if limits:
            out["resources"]["limits"] = limits
        if ports:
            out["ports"] = ports
        if sidecar:
            out["restartPolicy"] = "Always"
        return out

    def place(self, pods: list[dict[str, Any]], pool: list[NodeState], *, anti: str | None = None, tries: int = 24) -> bool:
        """Bind every pod of a group (a gang: all or none) to random nodes of ``pool`` where it fits;
        ``anti``: a hostname anti-affinity group (one pod of it per node)."""
        if not pool:
            return False
        done: list[tuple[NodeState, Counter, list[int]]] = []
        for pod in pods:
            need, ports = scheduled_need(pod), host_port_numbers(pod)
            for _ in range(tries):
                node = self.rng.choice(pool)
                if self.fits(node, need, pod, anti, ports):
                    self.bind(node, need, pod, anti, ports)
                    done.append((node, need, ports))
                    break
            else:
                for node, need, ports in done:  # roll the group back
                    node.free.update(need)
                    node.free["pods"] += 1
                    node.ports -= set(ports)
                    node.anti.discard(anti)
                for pod in pods:
                    pod["spec"].pop("nodeName", None)
                return False
        self.items.extend(pods)
        return True


def scheduled_need(pod: dict[str, Any]) -> Counter:
    """At least what the scheduler counts for the pod: every container and init container and the
    overhead summed (the quantities are re-read from the integers the builder wrote)."""
    need: Counter = Counter()
    spec = pod["spec"]
    for c in spec["containers"] + spec.get("initContainers", []):
        res = c.get("resources") or {}
        for r, q in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            need[r] += _amount(r, q)
    for r, q in (spec.get("overhead") or {}).items():
        need[r] += _amount(r, q)
    return need


_UNITS = {"Ki": 2**10, "Mi": MiB, "Gi": GiB, "Ti": 2**40, "G": 10**9, "e9": 10**9, "k": 1000, "m": 1}


def _amount(resource: str, text: str) -> int:
    """The integer the builder spelled (cpu in millicores); only the builder's own spellings."""
    for suffix, factor in _UNITS.items():
        if text.endswith(suffix):
            number = int(text[: -len(suffix)])
            return number if suffix == "m" else number * factor * (1000 if resource == "cpu" else 1)
    return int(text) * (1000 if resource == "cpu" else 1)


def host_port_numbers(pod: dict[str, Any]) -> list[int]:
    host = pod["spec"].get("hostNetwork")
    return [p.get("hostPort") or p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports", []) if p.get("hostPort") or host]
