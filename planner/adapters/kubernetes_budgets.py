"""PodDisruptionBudgets as the disruption controller counts them: how many disruptions a budget
allows now (its ``status.disruptionsAllowed``), from the pods the List holds.

kube-controller-manager's disruption controller, for a budget in namespace N with selector S:

* the pods: every Pod of N that S selects, whatever its phase;
* healthy pods: those not being deleted whose ``Ready`` condition is ``True`` (a Pending pod, or a
  Running one that is not ready, is not healthy); a pod the budget's ``status.disruptedPods`` lists
  (an eviction just granted) is not healthy either;
* the expected pods: for ``maxUnavailable`` and a percentage ``minAvailable``, the sum of the scales
  of the pods' controllers (a Deployment's ``spec.replicas`` for a ReplicaSet it owns, else the
  ReplicaSet's, StatefulSet's or ReplicationController's); pods without a controller add nothing; a
  controller without a scale (a Job, say) makes the controller fail safe: no disruption allowed. For
  an integer ``minAvailable``, the number of selected pods;
* the healthy pods it wants: ``expected - maxUnavailable`` (at least 0), or ``minAvailable``, a
  percentage of the expected pods rounded up in both cases;
* disruptions allowed: ``healthy - wanted``, and 0 when that is negative or nothing is expected.

The List rarely holds the controllers: a controller not in it counts its pods in the List that have
not finished (its replicas, as far as the List shows them). A pod with no ``Ready`` condition at all
(hand-written or generated Lists; the API server always gives one) is taken as ready when Running.
When the budget's own ``status.disruptionsAllowed`` is in the List, the smaller of the two is kept,
with a warning when they differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from planner.adapters.kubernetes_objects import KubeError, as_list, as_object

SCALED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")
"""Controllers with a scale (``spec.replicas``) the disruption controller reads."""
UNSCALED_KINDS = ("Job", "DaemonSet", "Node", "CronJob")
"""Owners without a scale subresource: the disruption controller cannot count their expected pods."""
FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class BudgetPod:
    """What the disruption controller reads of one Pod object (any phase)."""

    namespace: str
    labels: dict[str, str]
    name: str
    controller: tuple[str, str] | None  # (kind, name) of the ownerReference with controller: true
    template_hash: str | None
    phase: str | None
    ready: bool | None  # the Ready condition; None when the pod has none
    deleting: bool

    @property
    def healthy_unless_disrupted(self) -> bool:
        ready = self.phase == "Running" if self.ready is None else self.ready
        return ready and not self.deleting


@dataclass(frozen=True)
class Scale:
    """A controller object of the List: its replicas and, for a ReplicaSet, its controller."""

    replicas: int
    owner: tuple[str, str] | None


def budget_pod(obj: dict[str, Any]) -> BudgetPod:
    """The fields of a Pod object the disruption controller reads; ``KubeError`` naming a malformed one."""
    meta, status = as_object(obj.get("metadata"), "metadata"), as_object(obj.get("status"), "status")
    labels = {str(k): str(v) for k, v in as_object(meta.get("labels"), "metadata.labels").items()}
    ready: bool | None = None
    for i, condition in enumerate(as_list(status.get("conditions"), "status.conditions")):
        condition = as_object(condition, f"status.conditions[{i}]")
        if condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
    return BudgetPod(
        namespace=str(meta.get("namespace") or "default"),
        labels=labels,
        name=str(meta.get("name")),
        controller=controller_of(meta, "metadata.ownerReferences"),
        template_hash=labels.get("pod-template-hash"),
        phase=status.get("phase") if isinstance(status.get("phase"), str) else None,
        ready=ready,
        deleting=bool(meta.get("deletionTimestamp")),
    )


def controller_of(meta: dict[str, Any], path: str) -> tuple[str, str] | None:
    """The (kind, name) of the ownerReference marked ``controller: true`` (metav1.GetControllerOf)."""
    for i, owner in enumerate(as_list(meta.get("ownerReferences"), path)):
        owner = as_object(owner, f"{path}[{i}]")
        if owner.get("controller") is True:
            return str(owner.get("kind")), str(owner.get("name"))
    return None


def controller_scale(obj: dict[str, Any]) -> Scale:
    """A Deployment's, ReplicaSet's, StatefulSet's or ReplicationController's ``spec.replicas`` (1 when absent)."""
    spec = as_object(obj.get("spec"), "spec")
    replicas = spec.get("replicas", 1)
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 0 <= replicas <= 10**9:
        raise KubeError("spec.replicas", f"must be a whole number from 0 to 1,000,000,000, got {str(replicas)[:40]!r}")
    return Scale(replicas, controller_of(as_object(obj.get("metadata"), "metadata"), "metadata.ownerReferences"))


def observed_allowed(obj: dict[str, Any]) -> int | None:
    """The budget's ``status.disruptionsAllowed`` when the List has it."""
    value = as_object(obj.get("status"), "status").get("disruptionsAllowed")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise KubeError("status.disruptionsAllowed", f"must be a whole number at least 0, got {str(value)[:40]!r}")
    return value


def disrupted_pods(obj: dict[str, Any]) -> set[str]:
    """The pods of ``status.disruptedPods`` (evictions granted, the pods not yet gone)."""
    return {str(name) for name in as_object(as_object(obj.get("status"), "status").get("disruptedPods"), "status.disruptedPods")}


@dataclass
class Allowance:
    """A budget's disruptions allowed, and the counts it comes from."""

    allowed: int
    expected: int
    healthy: int
    wanted: int
    nominal: int  # what it would allow were every expected pod healthy
    notes: list[str] = field(default_factory=list)


def rounded_up(value: Any, count: int) -> int:
    """An IntOrString against ``count``: the integer, or the percentage of ``count`` rounded up (checked before)."""
    if isinstance(value, str):
        return math.ceil(Fraction(int(value[:-1]), 100) * count)
    return int(value)


def scale_key(pod: BudgetPod, scales: dict[tuple[str, str, str], Scale]) -> tuple[str, str, str] | None:
    """The controller whose scale counts for ``pod`` (a ReplicaSet's Deployment when known)."""
    if pod.controller is None:
        return None
    kind, name = pod.controller
    if kind == "ReplicaSet":
        rs = scales.get((pod.namespace, kind, name))
        if rs is not None and rs.owner is not None and rs.owner[0] == "Deployment":
            return pod.namespace, "Deployment", rs.owner[1]
        if rs is None and pod.template_hash and name.endswith(f"-{pod.template_hash}"):
            deployment = (pod.namespace, "Deployment", name[: -len(pod.template_hash) - 1])
            if deployment in scales:
                return deployment
    return pod.namespace, kind, name


def expected_scale(pods: list[BudgetPod], scales: dict[tuple[str, str, str], Scale], replicas_seen: dict[tuple[str, str, str], int]) -> tuple[int, list[str]]:
    """The sum of the selected pods' controllers' scales (a controller the List does not hold: its
    unfinished pods there); -1 with the reason when a controller has no scale (the disruption
    controller then fails safe)."""
    seen: set[tuple[str, str, str]] = set()
    total = 0
    for pod in pods:
        key = scale_key(pod, scales)
        if key is None or key in seen:
            continue
        seen.add(key)
        if key in scales:
            total += scales[key].replicas
        elif key[1] in UNSCALED_KINDS:
            why = f"its pods' controller {key[1]} {key[0]}/{key[2]} has no scale: the disruption controller allows no disruption (use an integer minAvailable)"
            return -1, [why]
        else:
            total += replicas_seen.get(key, 0)
    return total, []


def disruptions_allowed(
    spec: dict[str, Any],
    pods: list[BudgetPod],
    disrupted: set[str],
    scales: dict[tuple[str, str, str], Scale],
    replicas_seen: dict[tuple[str, str, str], int],
) -> Allowance:
    """What the disruption controller puts in ``status.disruptionsAllowed`` for a budget of ``spec``
    (checked) selecting ``pods``; ``replicas_seen``: each controller's unfinished pods in the List,
    the scale of a controller the List does not hold."""
    healthy = sum(1 for p in pods if p.healthy_unless_disrupted and p.name not in disrupted)
    notes: list[str] = []
    if spec.get("maxUnavailable") is not None:
        expected, notes = expected_scale(pods, scales, replicas_seen)
        wanted = max(0, expected - rounded_up(spec["maxUnavailable"], expected)) if expected >= 0 else 0
    elif isinstance(spec.get("minAvailable", 1), str):
        expected, notes = expected_scale(pods, scales, replicas_seen)
        wanted = rounded_up(spec["minAvailable"], expected) if expected >= 0 else 0
    else:
        expected, wanted = len(pods), int(spec.get("minAvailable", 1))
    if expected <= 0:
        return Allowance(0, max(expected, 0), healthy, wanted, 0, notes)
    return Allowance(max(0, healthy - wanted), expected, healthy, wanted, max(0, expected - wanted), notes)


def unfinished_by_controller(pods: list[BudgetPod], scales: dict[tuple[str, str, str], Scale]) -> dict[tuple[str, str, str], int]:
    """Each controller's pods in the List that have not finished (its replicas as the List shows them)."""
    counts: dict[tuple[str, str, str], int] = {}
    for pod in pods:
        key = scale_key(pod, scales)
        if key is not None and pod.phase not in FINISHED:
            counts[key] = counts.get(key, 0) + 1
    return counts


__all__ = [
    "SCALED_KINDS",
    "Allowance",
    "BudgetPod",
    "Scale",
    "budget_pod",
    "controller_scale",
    "disrupted_pods",
    "disruptions_allowed",
    "observed_allowed",
    "unfinished_by_controller",
]
