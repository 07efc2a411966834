"""NUMA alignment (FlexTopo): sockets, domains and where a pod's CPUs come from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from planner.rules.base import EPS

if TYPE_CHECKING:
    from planner.cluster import (
        Node,
        Pod,
    )

ALIGN_NUMA = "numa"
ALIGN_SOCKET = "socket"
ALIGN_CROSS_SOCKET = "cross-socket"
"""Alignment tiers of a pod's devices, best first: all in one NUMA domain; in one socket; spanning sockets."""
NUMA_GUARANTEED = "numa_guaranteed"


def device_domains(node: Node) -> list[int]:
    """NUMA domain (index into ``node.numa``) of each GPU device; -1 where none is declared."""
    owner = [-1] * node.gpus
    for d, domain in enumerate(node.numa or ()):
        for g in domain.gpu_indexes:
            if 0 <= g < node.gpus:
                owner[g] = d
    return owner


def domain_socket(node: Node, d: int) -> int:
    """The socket of NUMA domain d (a domain without a socket is a socket of its own)."""
    socket = (node.numa or [])[d].socket
    return socket if socket is not None else -1 - d


def attributed_cpus(node: Node, pods: Iterable[Pod]) -> list[float]:
    """CPUs each NUMA domain gives the pods, by the attribution rule: a pod holding devices draws
    its CPUs evenly from its devices' domains (cpus x devices in the domain / devices); pods
    without devices draw from the node as a whole and from no domain."""
    owner = device_domains(node)
    used = [0.0] * len(node.numa or ())
    for pod in pods:
        if not pod.gpu_indexes or pod.standby:
            continue
        each = pod.cpus / len(pod.gpu_indexes)
        for g in pod.gpu_indexes:
            if 0 <= g < len(owner) and owner[g] >= 0:
                used[owner[g]] += each
    return used


def alignment_tier(node: Node, gpu_indexes: Sequence[int]) -> str:
    """How well ``gpu_indexes`` of ``node`` are aligned: one domain, one socket, or across sockets."""
    owner = device_domains(node)
    domains = {owner[g] for g in gpu_indexes}
    if -1 in domains:
        return ALIGN_CROSS_SOCKET
    if len(domains) <= 1:
        return ALIGN_NUMA
    return ALIGN_SOCKET if len({domain_socket(node, d) for d in domains}) == 1 else ALIGN_CROSS_SOCKET


def numa_guaranteed_breaks(node: Node, pod: Pod, gpu_indexes: Sequence[int] | None, others: Sequence[Pod]) -> list[str]:
    """Why ``pod`` on ``gpu_indexes`` of ``node`` is not NUMA-guaranteed next to ``others`` (the
    other pods on the node, with their devices): every device in one socket, and each of its
    devices' domains with room for the CPUs the pod draws from it (``attributed_cpus``)."""
    if not node.numa:
        return [f"node '{node.name}' declares no NUMA domains, so alignment cannot be guaranteed"]
    if pod.gpus >= 1 and not gpu_indexes:
        return [f"pod '{pod.name}' has no gpu_indexes on node '{node.name}'"]
    unknown = [p.name for p in others if p.gpus > 0 and p.gpu_indexes is None and not p.standby]
    if unknown:
        return [f"pods on node '{node.name}' without gpu_indexes ({', '.join(sorted(unknown)[:3])}) make its devices unknown"]
    indexes = list(gpu_indexes or ())
    owner = device_domains(node)
    problems = []
    outside = [g for g in indexes if owner[g] < 0]
    if outside:
        problems.append(f"GPUs {outside} of node '{node.name}' are in no NUMA domain")
    elif alignment_tier(node, indexes) == ALIGN_CROSS_SOCKET:
        problems.append(f"pod '{pod.name}' on GPUs {indexes} of node '{node.name}' spans sockets")
    if indexes and not outside:
        used = attributed_cpus(node, others)
        each = pod.cpus / len(indexes)
        need: dict[int, float] = {}
        for g in indexes:
            need[owner[g]] = need.get(owner[g], 0.0) + each
        for d, cpus in sorted(need.items()):
            domain = node.numa[d]
            if used[d] + cpus > domain.cpus + EPS:
                problems.append(
                    f"NUMA domain '{domain.name}' of node '{node.name}' has {domain.cpus - used[d]:g} CPUs free, pod '{pod.name}' draws {cpus:g} from it"
                )
    return problems
