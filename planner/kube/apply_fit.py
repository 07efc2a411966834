"""Whether a pod fits a node by its requests, as kube-scheduler's resource filter counts it: the node's
allocatable less the requests of the pods bound to it that have not finished (terminating pods still count:
their resources are not free until they are gone), and the pod count against ``allocatable.pods``.

Used by ``--steer fit`` to find the nodes that compete with a target for a replacement. Only resources are
counted: a node that fits by resources but not by another rule (a taint, an affinity) is tainted needlessly,
which costs a patch, never a wrong placement. A quantity the parser refuses counts as not fitting."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from planner.adapters.kubernetes_objects import KubeError, parse_quantity, pod_requests

FINISHED = ("Succeeded", "Failed")
PODS = "pods"


def requests_of(spec: dict[str, Any]) -> dict[str, Fraction]:
    """The pod's effective requests, plus one ``pods``; a spec the parser refuses asks for nothing it can
    be matched on (an empty request fits anywhere, so its competitors are every node with a pod slot)."""
    try:
        need = pod_requests(spec)
    except (KubeError, ValueError, TypeError, AttributeError):
        need = {}
    need[PODS] = Fraction(1)
    return need


def _allocatable(node: dict[str, Any]) -> dict[str, Fraction]:
    room: dict[str, Fraction] = {}
    for name, value in ((node.get("status") or {}).get("allocatable") or {}).items():
        try:
            room[name] = parse_quantity(value, f"status.allocatable.{name}")
        except (KubeError, ValueError, TypeError):
            room[name] = Fraction(0)
    return room


def free_by_node(nodes: dict[str, dict[str, Any]], pods: list[Any]) -> dict[str, dict[str, Fraction]]:
    """Per node, allocatable less what its unfinished pods request (``pods`` as ``View`` objects)."""
    free = {name: _allocatable(node) for name, node in nodes.items()}
    for pod in pods:
        room = free.get(pod.spec.node_name or "")
        if room is None or (pod.status and pod.status.phase in FINISHED):
            continue
        for name, amount in requests_of(pod.raw.get("spec") or {}).items():
            room[name] = room.get(name, Fraction(0)) - amount
    return free


def fits(need: dict[str, Fraction], room: dict[str, Fraction]) -> bool:
    """Every resource the pod requests (a positive amount) is free on the node."""
    return all(amount <= 0 or room.get(name, Fraction(0)) >= amount for name, amount in need.items())
