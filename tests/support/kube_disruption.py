"""The disruption controller's arithmetic (kube-controller-manager, ``pkg/controller/disruption``),
written from its behaviour independently of the importer, on raw kubectl objects: what a
PodDisruptionBudget's ``status.disruptionsAllowed`` is for the pods of a List.

Steps as the controller takes them (``trySync``):

1. ``getPodsForPdb``: the Pods of the budget's namespace its selector selects (any phase; a missing
   selector selects nothing, an empty one everything);
2. ``getExpectedPodCount``: with ``maxUnavailable`` the expected count is the sum of the scales of the
   pods' controllers (``getExpectedScale``: each controller once; a pod without a controller adds
   nothing; a controller without a scale is an error, and the controller fails safe with 0), and the
   desired healthy count ``expected - maxUnavailable`` (a percentage rounded up), at least 0; with a
   percentage ``minAvailable`` the same expected count and ``minAvailable`` of it rounded up; with an
   integer ``minAvailable`` the number of selected pods and that integer;
3. ``countHealthyPods``: pods without a ``deletionTimestamp``, not listed in ``status.disruptedPods``,
   whose ``Ready`` condition is ``True``;
4. ``updatePdbStatus``: ``disruptionsAllowed = healthy - desired``, 0 when negative or when nothing is
   expected.

Scales: a ReplicaSet owned by a Deployment takes the Deployment's ``spec.replicas``; a ReplicaSet,
StatefulSet or ReplicationController its own; a Job, DaemonSet or Node has none. Two readings the
planner documents for Lists that leave things out, and this oracle shares: a controller whose object
is not in the List has as many replicas as it has pods there that have not finished (a Deployment is
then found only through a ReplicaSet object or the ``pod-template-hash`` of a Deployment in the List),
and a pod with no ``Ready`` condition at all is ready when its phase is ``Running``. A budget with
neither field is read as ``minAvailable: 1`` (policy/v1beta1's default, the importer's documented choice).
"""

from __future__ import annotations

import math
from typing import Any


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def _scaled(value: int | str, total: int) -> int:
    """intstr.GetScaledValueFromIntOrPercent with roundUp true."""
    if isinstance(value, int):
        return value
    return math.ceil(int(value.rstrip("%")) * total / 100)


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return status.get("phase") == "Running"


def _controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    return next((ref for ref in obj["metadata"].get("ownerReferences") or [] if ref.get("controller") is True), None)


class DisruptionController:
    """The controller's view of one List: its Pods and controller objects."""

    def __init__(self, items: list[dict[str, Any]]):
        self.pods = [item for item in items if item["kind"] == "Pod"]
        self.objects = {
            (item["metadata"].get("namespace") or "default", item["kind"], item["metadata"]["name"]): item
            for item in items
            if item["kind"] in ("Deployment", "ReplicaSet", "StatefulSet", "ReplicationController")
        }

    def _namespace(self, obj: dict[str, Any]) -> str:
        return obj["metadata"].get("namespace") or "default"

    def pods_for(self, pdb: dict[str, Any]) -> list[dict[str, Any]]:
        namespace = self._namespace(pdb)
        selector = (pdb.get("spec") or {}).get("selector")
        return [p for p in self.pods if self._namespace(p) == namespace and _selects(selector, p["metadata"].get("labels") or {})]

    def _finder(self, pod: dict[str, Any]) -> tuple[tuple[str, str, str], int | None] | None:
        """The controller of ``pod`` that carries its scale and that scale (None: it has none); None: no controller."""
        key = self._finder_key(pod)
        if key is None:
            return None
        if key in self.objects:
            return key, int((self.objects[key].get("spec") or {}).get("replicas", 1))
        if key[1] in ("Job", "DaemonSet", "Node", "CronJob"):
            return key, None
        unfinished = [p for p in self.pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        return key, sum(1 for other in unfinished if self._finder_key(other) == key)

    def _finder_key(self, pod: dict[str, Any]) -> tuple[str, str, str] | None:
        ref = _controller_ref(pod)
        if ref is None:
            return None
        namespace, kind, name = self._namespace(pod), ref["kind"], ref["name"]
        if kind == "ReplicaSet":
            rs = self.objects.get((namespace, "ReplicaSet", name))
            owner = _controller_ref(rs) if rs is not None else None
            if owner is not None and owner["kind"] == "Deployment":
                return namespace, "Deployment", owner["name"]
            template = (pod["metadata"].get("labels") or {}).get("pod-template-hash")
            if rs is None and template and name.endswith("-" + template) and (namespace, "Deployment", name[: -len(template) - 1]) in self.objects:
                return namespace, "Deployment", name[: -len(template) - 1]
        return namespace, kind, name

    def expected_scale(self, pods: list[dict[str, Any]]) -> int | None:
        """getExpectedScale: the controllers' scales summed; None when one has no scale (an error)."""
        scales: dict[tuple[str, str, str], int] = {}
        for pod in pods:
            found = self._finder(pod)
            if found is None:
                continue  # an unmanaged pod
            key, scale = found
            if scale is None:
                return None
            scales[key] = scale
        return sum(scales.values())

    def disruptions_allowed(self, pdb: dict[str, Any]) -> int:
        """``status.disruptionsAllowed`` as the controller computes it, then (the importer's rule)
        the smaller of that and the budget's own ``status.disruptionsAllowed`` when the List has one."""
        spec = pdb.get("spec") or {}
        pods = self.pods_for(pdb)
        if spec.get("maxUnavailable") is not None:
            expected = self.expected_scale(pods)
            if expected is None:
                return 0  # failSafe
            desired = max(0, expected - _scaled(spec["maxUnavailable"], expected))
        elif isinstance(spec.get("minAvailable"), str):
            expected = self.expected_scale(pods)
            if expected is None:
                return 0
            desired = _scaled(spec["minAvailable"], expected)
        else:
            expected, desired = len(pods), spec.get("minAvailable", 1)
        disrupted = set((pdb.get("status") or {}).get("disruptedPods") or {})
        healthy = sum(1 for p in pods if not p["metadata"].get("deletionTimestamp") and p["metadata"]["name"] not in disrupted and _ready(p))
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            return 0
        observed = (pdb.get("status") or {}).get("disruptionsAllowed")
        return allowed if observed is None else min(allowed, observed)
