"""Resources by name and host ports, for ``planner.adapters.kubernetes``: what kube-scheduler's
NodeResourcesFit and NodePorts check, carried into the snapshot as it is.

A node's ``resources`` are its allocatable of every resource besides CPU and memory (whole GPUs,
each MIG profile, time-slicing replicas under either name, share units, RDMA devices,
``ephemeral-storage``, hugepages, the ``pods`` count), less what its node-bound pods request; a
pod's ``requests`` the same names from its effective request. Quantities are whole numbers in the
resource's base unit, rounded up as the scheduler rounds them (``Quantity.Value()``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from functools import lru_cache
from typing import Any

from planner.adapters.kubernetes_config import ImportConfig
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object
from planner.adapters.kubernetes_run import ImportRun
from planner.cluster import MAX_RESOURCE, POD_COUNT
from planner.kubernetes_names import resource_name_problem
from planner.rules import gpu_devices_needed

UNNAMED = ("cpu", "memory")
"""Resources the snapshot holds in ``cpus`` and ``memory_gib``."""
PROTOCOLS = ("TCP", "UDP", "SCTP")


def ignored(cfg: ImportConfig, resource: str) -> bool:
    """A resource the configuration says to leave out (``ignored_resources``, '*' ends a prefix)."""
    return bool(cfg.ignored_resources) and _ignored(tuple(cfg.ignored_resources), resource)


@lru_cache(maxsize=4096)
def _ignored(patterns: tuple[str, ...], resource: str) -> bool:
    return any(resource == r or (r.endswith("*") and resource.startswith(r[:-1])) for r in patterns)


def named_amounts(cfg: ImportConfig, amounts: dict[str, Fraction], path: str) -> dict[str, int]:
    """The named resources of ``amounts`` as whole base units (zero amounts left out)."""
    out: dict[str, int] = {}
    for name, amount in amounts.items():
        problem = resource_name_problem(name)
        if problem:
            raise KubeError(f"{path}.{name}", problem)
        if name in UNNAMED or ignored(cfg, name) or amount <= 0:
            continue
        whole = math.ceil(amount)
        if whole > MAX_RESOURCE:
            raise KubeError(f"{path}.{name}", f"{whole} is more than the planner reads ({MAX_RESOURCE}); is the quantity a typo?")
        out[name] = whole
    return out


def node_resources(cfg: ImportConfig, amounts: dict[str, Fraction], where: str) -> dict[str, int]:
    """A node's allocatable by name (``pods`` included, as every pod takes one)."""
    return named_amounts(cfg, amounts, where) | ({POD_COUNT: math.ceil(amounts[POD_COUNT])} if POD_COUNT in amounts and not ignored(cfg, POD_COUNT) else {})


def less_node_bound(resources: dict[str, int], taken: dict[str, Fraction], cfg: ImportConfig) -> tuple[dict[str, int], list[str]]:
    """A node's resources less its node-bound pods' requests (and their pod slots); the names that
    would go below zero."""
    left = dict(resources)
    short = []
    for name, amount in named_amounts(cfg, taken, "reserved").items():
        if name in left:
            left[name] -= amount
            if left[name] < 0:
                short.append(f"{name} {left[name]}")
    return left, short


def host_ports(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The host ports a pod binds: every container's ``hostPort`` (init containers included, as
    NodePorts reads them), and under ``hostNetwork`` every container port."""
    network = spec.get("hostNetwork") is True
    found: dict[tuple[int, str, str], dict[str, Any]] = {}
    for kind in ("initContainers", "containers"):
        for i, container in enumerate(as_list(spec.get(kind), f"spec.{kind}")):
            if isinstance(container, dict) and container.get("ports") in (None, []):
                continue  # most containers: nothing to check or read (and no path strings to build)
            container = as_object(container, f"spec.{kind}[{i}]")
            for k, port in enumerate(as_list(container.get("ports"), f"spec.{kind}[{i}].ports")):
                path = f"spec.{kind}[{i}].ports[{k}]"
                port = as_object(port, path)
                number = port.get("hostPort") or (port.get("containerPort") if network else None)
                if number is None:
                    continue
                if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535:
                    raise KubeError(f"{path}.hostPort", f"must be a port number 1-65535, got {number!r}")
                protocol = port.get("protocol") or "TCP"
                if protocol not in PROTOCOLS:
                    raise KubeError(f"{path}.protocol", f"must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
                host_ip = port.get("hostIP") or ""
                if not isinstance(host_ip, str):
                    raise KubeError(f"{path}.hostIP", f"must be a string, got {host_ip!r}")
                found[(number, protocol, host_ip)] = {"port": number, "protocol": protocol, "host_ip": host_ip}
    return [found[k] for k in sorted(found)]


def check_named_capacity(run: ImportRun) -> None:
    """Pods whose requests their own node cannot hold by name, or that no node offers.

    A placed pod asking for a resource its node offers too little of (a device plugin that reports
    fewer devices than are in use) keeps running in Kubernetes: the node is planned as full of that
    resource (its ``resources`` raised to what its pods use, with a warning) and those pods are
    locked, so nothing leaves or arrives that the real allocatable would refuse. A pod asking for a
    resource no node offers is warned about; placed, it is locked.
    """
    offered = {name for node in run.nodes for name, amount in (node.resources or {}).items() if amount > 0}
    nodes = {node.name: node for node in run.nodes}
    used: dict[str, dict[str, int]] = defaultdict(dict)
    on_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for fields in run.pods:
        missing = sorted(set(fields["requests"]) - offered)
        if missing:
            run.warn(
                fields["_obj"],
                "spec.containers[*].resources.requests",
                f"{', '.join(missing)}: no node offers it" + ("; the pod is locked where it stands" if fields["node"] else "; the pod cannot be placed"),
            )
            if fields["node"] is not None:
                run.lock_pod(fields, "requests a resource no node offers")
        if fields["node"] is None:
            continue
        on_node[fields["node"]].append(fields)
        for name, amount in {**fields["requests"], POD_COUNT: 1}.items():
            used[fields["node"]][name] = used[fields["node"]].get(name, 0) + amount
    for node_name, here in on_node.items():
        node = nodes.get(node_name)
        needed = gpu_devices_needed(fields["gpus"] for fields in here)
        if node is not None and needed > node.gpus:
            run.warnings.append(
                f"Node {node_name}: status.allocatable: its pods hold {needed} GPU(s), it offers {node.gpus} (a device "
                f"plugin reporting fewer devices than are in use); planned as full, and its GPU pods stay where they are"
            )
            node.gpus = needed
            for fields in here:
                if fields["gpus"]:
                    run.lock_pod(fields, "its node offers fewer GPUs than its pods hold")
    for node_name, totals in used.items():
        node = nodes.get(node_name)
        if node is None or node.resources is None:
            continue
        over = {name: total for name, total in totals.items() if (name != POD_COUNT or name in node.resources) and total > node.resources.get(name, 0)}
        for name, total in sorted(over.items()):
            run.warnings.append(
                f"Node {node_name}: status.allocatable.{name}: its pods request {total}, it offers "
                f"{node.resources.get(name, 0)}; planned as full of {name}, and its pods that request it stay where they are"
            )
            node.resources[name] = total
            for fields in on_node[node_name]:
                if name == POD_COUNT or fields["requests"].get(name):
                    run.lock_pod(fields, f"its node offers less {name} than its pods use")
