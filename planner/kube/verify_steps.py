"""The pods ``planner verify`` asks kube-scheduler about, and how it reads the scheduler's answer.

* A moving pod's **replacement** (``replacement``): the pod as its author wrote it (labels, annotations, spec), a new
  name, a required node affinity to the move's target (a ``metadata.name`` field requirement added to each of its own
  node selector terms, so its other node rules still hold), no server-set fields. Two things differ from the
  original, each for a reason: its controller is the namespace's hold Deployment (``verify_hold``: a pod with a
  controller is never adopted by the ReplicaSet, StatefulSet or Job whose selector its labels match, so the labels
  stay whole for budgets, anti-affinity and spread, and no controller deletes it as an excess pod), and its
  PriorityClass has the same value with ``preemptionPolicy: Never`` (a replacement that does not fit is refused;
  it never makes room by preempting pods the plan leaves in place).
* A **pending pod's placement** (``pin_pending``): the pod itself (its name, UID and owner kept), held by the
  control plane's scheduling gate ``planner.io/hold``; while a pod is gated Kubernetes allows adding node selector
  requirements to its terms, so the same ``metadata.name`` requirement is added and the gate removed in one update.
* **The answer** (``verdict``): a pod bound to a node is admitted; a pod whose ``PodScheduled`` condition is
  ``False`` with reason ``Unschedulable`` is refused, with kube-scheduler's own message (``scheduler_reason`` keeps
  the part about the target, ``plugin_of`` names the plugin from the reasons kube-scheduler v1.37's Filter plugins
  write)."""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass
from typing import Any

SOURCE_UID = "planner.io/source-uid"
COPY_OF = "planner.io/copy-of"
RUN_LABEL = "planner.io/verify"
"""Label on every pod a verify run asks the scheduler about (replacements and released pending pods), so one
label-selected list finds them all."""
LOAD_GATE = "planner.io/hold"
"""The gate ``planner controlplane up`` puts on every pending pod of the List."""
DEFAULT_SCHEDULER = "default-scheduler"
NODE_FIELD = "metadata.name"
MIRROR_ANNOTATIONS = ("kubernetes.io/config.mirror", "kubernetes.io/config.source", "kubernetes.io/config.hash", "kubernetes.io/config.seen")
SERVER_SET_SPEC = ("nodeName", "priority", "preemptionPolicy", "schedulingGates", "ephemeralContainers")

REASON_PLUGINS = (
    ("untolerated taint", "TaintToleration"),
    ("taints that the pod didn't tolerate", "TaintToleration"),
    ("Insufficient ", "NodeResourcesFit"),
    ("Too many pods", "NodeResourcesFit"),
    ("didn't have free ports", "NodePorts"),
    ("anti-affinity rules", "InterPodAffinity"),
    ("didn't match pod affinity rules", "InterPodAffinity"),
    ("node affinity/selector", "NodeAffinity"),
    ("topology spread constraints", "PodTopologySpread"),
    ("were unschedulable", "NodeUnschedulable"),
    ("didn't match the requested node name", "NodeName"),
    ("exceed max volume count", "NodeVolumeLimits"),
    ("had no available volume zone", "VolumeZone"),
    ("had no available disk", "VolumeRestrictions"),
    ("ReadWriteOncePod", "VolumeRestrictions"),
    ("free storage", "VolumeBinding"),
    ("volume node affinity", "VolumeBinding"),
    ("unbound immediate PersistentVolumeClaims", "VolumeBinding"),
    ("resource claim", "DynamicResources"),
    ("ResourceClaim", "DynamicResources"),
    ("cannot allocate all claims", "DynamicResources"),
)
"""kube-scheduler v1.37's Filter reasons (the ``ErrReason`` strings of pkg/scheduler/framework/plugins) and their plugin."""
PINNED_ELSEWHERE = re.compile(r"^\d+ node\(s\) didn't satisfy plugin\(s\) \[NodeAffinity\]$|^\d+ node\(s\) didn't match Pod's node affinity/selector$")
"""The part of a pinned pod's message that counts the other nodes (its own node affinity leaves them out)."""


@dataclass(frozen=True)
class Verdict:
    """kube-scheduler's answer for one pod: ``node`` when it bound the pod, else ``message`` (FailedScheduling)."""

    node: str | None
    message: str | None = None

    @property
    def admitted(self) -> bool:
        return self.node is not None


def short_name(name: str, key: str, prefix: str = "v") -> str:
    """A new pod name from ``name`` (shortened) and a 6-hex suffix of ``key``: unique per run, wave and pod."""
    suffix = hashlib.sha256(key.encode()).hexdigest()[:6]
    return f"{name[:50].rstrip('-.')}-{prefix}{suffix}"


def pin_terms(spec: dict[str, Any], node: str) -> None:
    """Add ``metadata.name In [node]`` to each of the pod's required node selector terms (a pod without required
    node affinity gets one term with it). An empty term matches no node and cannot be added to: it stays empty."""
    requirement = {"key": NODE_FIELD, "operator": "In", "values": [node]}
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        terms = [{"matchFields": [requirement]}]
    else:
        for term in terms:
            if term.get("matchExpressions") or term.get("matchFields"):
                term["matchFields"] = [*(term.get("matchFields") or []), dict(requirement)]
    required["nodeSelectorTerms"] = terms
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity


def replacement(pod: dict[str, Any], target: str, name: str, run_id: str, holder: dict[str, str], priority_class: str | None) -> dict[str, Any]:
    """The replacement of ``pod`` (its raw object) pinned to ``target`` (see the module docstring)."""
    meta = pod["metadata"]
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != SOURCE_UID and k not in MIRROR_ANNOTATIONS}
    annotations[COPY_OF] = str(meta.get("uid"))
    labels = {**(meta.get("labels") or {}), RUN_LABEL: run_id}
    spec = copy.deepcopy(pod["spec"])
    for field in SERVER_SET_SPEC:
        spec.pop(field, None)
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    spec["schedulerName"] = DEFAULT_SCHEDULER
    pin_terms(spec, target)
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": holder["name"], "uid": holder["uid"], "controller": True, "blockOwnerDeletion": False}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": meta["namespace"], "labels": labels, "annotations": annotations, "ownerReferences": [owner]},
        "spec": spec,
    }


def pin_pending(pod: dict[str, Any], node: str, run_id: str) -> list[str]:
    """Narrow the gated pending ``pod`` (its raw object, changed in place for an update) to ``node`` and remove the
    load gate; returns the gates that still hold it (other than ours: the scheduler will not see it then)."""
    spec = pod["spec"]
    pin_terms(spec, node)
    remaining = [g for g in spec.get("schedulingGates") or [] if g.get("name") != LOAD_GATE]
    if remaining:
        spec["schedulingGates"] = remaining
    else:
        spec.pop("schedulingGates", None)
    pod["metadata"]["labels"] = {**(pod["metadata"].get("labels") or {}), RUN_LABEL: run_id}
    return [str(g.get("name")) for g in remaining]


def verdict(pod: Any) -> Verdict | None:
    """kube-scheduler's answer for ``pod`` (a ``View``) so far: bound, refused, or None (not yet decided)."""
    if pod.spec.node_name:
        return Verdict(pod.spec.node_name)
    for condition in (pod.status.conditions if pod.status else None) or []:
        if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
            return Verdict(None, " ".join(str(condition.message or "Unschedulable").split()))
    return None


def scheduler_reason(message: str) -> str:
    """The part of kube-scheduler's ``0/N nodes are available: ...`` message about the pod's one node: the count of
    the other nodes (left out by the pod's own pinning) and the preemption report dropped."""
    head = message.split(" preemption:", 1)[0].rstrip(". ")
    if "nodes are available:" not in head:
        return head
    reasons = [r.strip() for r in head.split("nodes are available:", 1)[1].split(",")]
    kept = [r for r in reasons if r and not PINNED_ELSEWHERE.match(r)]
    return ", ".join(kept) or head


def plugin_of(message: str) -> str | None:
    """The Filter plugin whose reason ``message`` gives (None: a reason this table does not know)."""
    named = re.search(r"didn't satisfy plugin\(s\) \[([^\]]+)\]", scheduler_reason(message))
    if named:
        return named.group(1)
    for fragment, plugin in REASON_PLUGINS:
        if fragment in scheduler_reason(message):
            return plugin
    return None


def never_class_name(value: int) -> str:
    """The PriorityClass of a replacement: the pod's priority value, ``preemptionPolicy: Never``."""
    return f"planner-verify-never-{value}" if value >= 0 else f"planner-verify-never-m{-value}"
