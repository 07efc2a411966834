"""Per-pod static rules: whether a pod may go to a node whatever else is there (GPU model, selector,
resources by name, taints, node affinity, schedulable), gathered in ``STATIC_CHECKS`` and ``may_arrive``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from planner.cluster import POD_COUNT
from planner.rules.base import (
    GPU_MODEL,
    NODE_AFFINITY,
    NODE_SELECTOR,
    RESOURCE_NOT_OFFERED,
    TAINT,
    UNSCHEDULABLE,
    RuleBreak,
)

if TYPE_CHECKING:
    from planner.cluster import (
        Node,
        NodeSelectorRequirement,
        Pod,
        Taint,
        Toleration,
    )


def gpu_model_allowed(pod: Pod, node: Node) -> bool:
    return not pod.gpu_models or node.gpu_model in pod.gpu_models


def selector_matches(pod: Pod, node: Node) -> bool:
    labels = node.labels
    return all(labels.get(key) == value for key, value in pod.node_selector.items())


def requested(pod: Pod) -> dict[str, int]:
    """What ``pod`` charges a node that lists its ``resources``: its named requests and one pod slot."""

    return {**pod.requests, POD_COUNT: 1}


def offered_amount(node: Node, name: str) -> int | None:
    """How much of resource ``name`` the node offers; None when it sets no limit (a node that does
    not list its resources, or lists them without a ``pods`` count)."""

    if node.resources is None or (name == POD_COUNT and name not in node.resources):
        return None
    return node.resources.get(name, 0)


def unoffered_resources(pod: Pod, node: Node) -> list[str]:
    """The resources ``pod`` requests that ``node`` does not offer at all (none when the node does
    not list its resources)."""
    if node.resources is None:
        return []
    return sorted(name for name, amount in pod.requests.items() if amount > 0 and node.resources.get(name, 0) <= 0)


def conflict_groups(pod: Pod) -> list[str]:
    """The groups no two pods on one node may share: anti-affinity groups and host ports (a port
    and protocol; kube-scheduler's NodePorts, every host IP taken as overlapping)."""
    if not pod.host_ports:
        return pod.anti_affinity
    return [*pod.anti_affinity, *sorted({f"hostPort {h.protocol}/{h.port}" for h in pod.host_ports})]


def may_receive(node: Node) -> bool:
    """Whether pods may move onto the node (pods already there may stay on a cordoned node)."""
    return node.schedulable


BINDING_EFFECTS = ("NoSchedule", "NoExecute")
"""Taint effects that keep a pod off a node unless tolerated; PreferNoSchedule only steers scoring."""


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' toleration match: the effect is empty or equal, the key is empty (with Exists)
    or equal, and Exists matches any value while Equal needs the same value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    return toleration.operator == "Exists" or toleration.value == taint.value


def untolerated_taints(pod: Pod, node: Node) -> list[Taint]:
    """The node's NoSchedule/NoExecute taints that none of the pod's tolerations match."""
    return [taint for taint in node.taints if taint.effect in BINDING_EFFECTS and not any(tolerates(t, taint) for t in pod.tolerations)]


def requirement_matches(requirement: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    """One node-affinity expression against node labels (a missing label satisfies NotIn and
    DoesNotExist, as in Kubernetes)."""
    value = labels.get(requirement.key)
    if requirement.operator == "In":
        return value is not None and value in requirement.values
    if requirement.operator == "NotIn":
        return value is None or value not in requirement.values
    if requirement.operator == "Exists":
        return value is not None
    return value is None  # DoesNotExist


def node_affinity_matches(pod: Pod, node: Node) -> bool:
    """The pod's required node affinity holds on the node: some term has all its expressions true."""
    if pod.node_affinity is None:
        return True
    return any(all(requirement_matches(r, node.labels) for r in term) for term in pod.node_affinity)


def static_rule_breaks(pod: Pod, node: Node) -> list[RuleBreak]:
    """The per-pod static rules an arriving pod breaks on ``node``: schedulable, GPU model, selector,
    taints and node affinity. They depend on the pod and the node only, so the fast forms evaluate
    them once per (pod signature, node profile)."""
    breaks = []
    if not may_receive(node):
        breaks.append(RuleBreak(UNSCHEDULABLE, node.name, pod.name, f"node '{node.name}' is not schedulable"))
    if not gpu_model_allowed(pod, node):
        breaks.append(RuleBreak(GPU_MODEL, node.name, pod.name, f"pod '{pod.name}' allows {pod.gpu_models}, node '{node.name}' has '{node.gpu_model}'"))
    if not selector_matches(pod, node):
        breaks.append(RuleBreak(NODE_SELECTOR, node.name, pod.name, f"node '{node.name}' labels do not satisfy node_selector {pod.node_selector}"))
    untolerated = untolerated_taints(pod, node)
    if untolerated:
        shown = ", ".join(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in untolerated)
        breaks.append(RuleBreak(TAINT, node.name, pod.name, f"pod '{pod.name}' does not tolerate taint {shown} of node '{node.name}'"))
    if not node_affinity_matches(pod, node):
        breaks.append(RuleBreak(NODE_AFFINITY, node.name, pod.name, f"node '{node.name}' labels match no term of pod '{pod.name}''s required node_affinity"))
    missing = unoffered_resources(pod, node)
    if missing:
        breaks.append(
            RuleBreak(RESOURCE_NOT_OFFERED, node.name, pod.name, f"pod '{pod.name}' requests {', '.join(missing)}, which node '{node.name}' does not offer")
        )
    return breaks


def tolerated(pod: Pod, node: Node) -> bool:
    """The pod tolerates every NoSchedule/NoExecute taint of the node."""
    return not untolerated_taints(pod, node)


def resources_offered(pod: Pod, node: Node) -> bool:
    """The node offers every resource the pod requests (a node that does not list its resources offers all)."""
    return not unoffered_resources(pod, node)


STATIC_CHECKS: tuple[Callable[[Pod, Node], bool], ...] = (
    gpu_model_allowed,
    selector_matches,
    tolerated,
    node_affinity_matches,
    resources_offered,
)
"""The per-pod rules of ``may_arrive`` beside ``may_receive``. Each reads one field of the pod
(``gpu_models``, ``node_selector``, ``tolerations``, ``node_affinity``, the names ``requests`` asks
for), so a fast form may evaluate each once per distinct value of its field (``state_build._eligibility``)."""


def may_arrive(pod: Pod, node: Node) -> bool:
    """Whether the per-pod static rules let ``pod`` arrive on ``node`` (resources aside)."""
    return may_receive(node) and all(check(pod, node) for check in STATIC_CHECKS)
