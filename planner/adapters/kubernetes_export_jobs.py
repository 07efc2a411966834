"""How the export writes a snapshot job: as a controller (Job, StatefulSet, a Deployment's ReplicaSet)
or a gang (JobSet, PodGroup) named so that the importer reads the same job back, with its
PodDisruptionBudget and PodGroup."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from planner.adapters.kubernetes_budgets import SCALED_KINDS
from planner.adapters.kubernetes_config import KUEUE_PREFERRED, KUEUE_REQUIRED, ImportConfig
from planner.adapters.kubernetes_pods import POD_GROUP_KEYS
from planner.adapters.kubernetes_quantities import LABEL_VALUE, label_name, name_ok, object_uid
from planner.cluster import Job, Pod

JOBSET_KEY = "jobset.sigs.k8s.io/jobset-name"
POD_GROUP_KEY = POD_GROUP_KEYS[0]
INSTANCE_LABEL = "app.kubernetes.io/instance"


@dataclass(frozen=True)
class Controller:
    """How a job is written: its owner reference, the labels of its pods and the importer's name."""

    kind: str
    name: str
    labels: dict[str, str]
    imported_as: str
    annotations: dict[str, str] = field(default_factory=dict)
    min_member: int | None = None
    """The PodGroup's minMember, for a gang written with one."""


def controller(cfg: ImportConfig, errors: list[str], j: int, job: Job, pods: list[Pod]) -> Controller:
    """How job ``j`` is written (its problems added to ``errors``)."""
    namespaces = {p.namespace or "default" for p in pods}
    if len(namespaces) > 1:
        errors.append(f"jobs[{j}]: job '{job.name}' has pods in namespaces {', '.join(sorted(namespaces))}; a Kubernetes controller owns pods of one namespace")
    ns = min(namespaces)
    kind, name, gang = imported_name(cfg, job.name, ns)
    count, least = len(pods), job.min_available
    one_by_one = least == 1 and count > 1 and job.topology is None  # what the importer reads a controller's pods as
    whole = least is None or least >= count
    pod_group = POD_GROUP_KEY if POD_GROUP_KEY in cfg.gang_keys else None
    if kind is not None and not (one_by_one or count == 1 or (whole and job.topology is not None)):
        errors.append(
            f"jobs[{j}].min_available: job '{job.name}' is named as a {kind}, whose pods the importer reads "
            f"as starting {'one by one (min_available 1)' if job.topology is None else 'whole'}; "
            "rename the job or set min_available to match"
        )
    if kind is None and gang is None:
        name = job.name
        if job.topology is not None and whole:
            gang = JOBSET_KEY if JOBSET_KEY in cfg.gang_keys else pod_group or (cfg.gang_keys[0] if cfg.gang_keys else None)
            if gang is None:
                errors.append(f"jobs[{j}].topology: config.gang_keys is empty; a topology job needs a gang label")
        elif not one_by_one and count > 1:
            gang = pod_group
            if gang is None:
                errors.append(f"jobs[{j}]: a gang of {count} pods needs the PodGroup key {POD_GROUP_KEY} in config.gang_keys")
        kind = "StatefulSet" if gang is None and count > 1 and all(p.priority == "HP" for p in pods) else "Job"
    min_member = None
    if gang is not None and (gang == pod_group or not whole):
        if gang not in POD_GROUP_KEYS:
            errors.append(f"jobs[{j}].min_available: job '{job.name}' is a {gang} gang, which carries no minimum; the importer reads it as starting whole")
        min_member = count if whole else least
    annotations = {}
    if job.topology is not None:
        keys = cfg.asw_labels if job.topology.level == "asw" else cfg.spine_labels
        if keys:
            annotations[KUEUE_REQUIRED if job.topology.mode == "required" else KUEUE_PREFERRED] = keys[0]
        else:
            errors.append(f"jobs[{j}].topology: config.{job.topology.level}_labels is empty")
    if gang is not None:
        if not LABEL_VALUE.match(name) or len(name) > 63:
            errors.append(f"jobs[{j}].name: '{name}' is not a label value (at most 63 characters)")
        owner_kind, owner_name = "Job", f"{name}-workers-0"
        labels = {gang: name}
        imported_as = f"{ns}/{gang}={name}"
    else:
        owner_kind, owner_name = kind or "Job", name
        labels = {}
        imported_as = f"{ns}/{owner_kind}/{name}"
        if owner_kind == "Deployment":  # pods are owned by the Deployment's ReplicaSet
            template_hash = hashlib.sha256(name.encode()).hexdigest()[:10]
            owner_kind, owner_name = "ReplicaSet", f"{name}-{template_hash}"
            labels["pod-template-hash"] = template_hash
    name_ok(owner_name, f"jobs[{j}].name", errors)
    labels[INSTANCE_LABEL] = label_name(f"{owner_kind.lower()}-{owner_name}")
    return Controller(owner_kind, owner_name, labels, imported_as, annotations, min_member)


def imported_name(cfg: ImportConfig, job: str, namespace: str) -> tuple[str | None, str, str | None]:
    """(Kind, name, None) or (None, value, gang key) when ``job`` is a name the importer writes."""
    prefix = f"{namespace}/"
    if not job.startswith(prefix):
        return None, job, None
    rest = job[len(prefix) :]
    for key in cfg.gang_keys:
        if rest.startswith(f"{key}="):
            return None, rest[len(key) + 1 :], key
    kind, _, name = rest.partition("/")
    if name and re.fullmatch(r"[A-Z][A-Za-z0-9]*", kind) and kind not in ("DaemonSet", "Node"):
        return kind, name, None
    return None, job, None


def budget(job: Job, ctl: Controller, pods: list[Pod]) -> dict[str, Any]:
    """The PodDisruptionBudget of a job with a disruption budget, written so that the disruption
    controller allows the job's ``max_unavailable`` now (clipped to its running pods), its pending pods
    counted as the controller counts them (expected, not healthy): a controller with a scale (the
    exported pods are all its replicas) gets ``maxUnavailable`` of the budget plus its pending pods; any
    other owner (a batch Job, a gang), which has no scale, an integer ``minAvailable`` of its running
    pods less the budget."""
    namespace = ctl.imported_as.split("/", 1)[0]
    name = ctl.labels[INSTANCE_LABEL].lower().replace("_", "-")
    assert job.disruption is not None  # callers pass jobs with a budget
    allowed = job.disruption.max_unavailable
    running = sum(1 for p in pods if p.node is not None)
    rule = {"maxUnavailable": allowed + len(pods) - running} if ctl.kind in SCALED_KINDS else {"minAvailable": max(0, running - allowed)}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "uid": object_uid("pdb", namespace, ctl.kind, ctl.name)},
        "spec": {**rule, "selector": {"matchLabels": {INSTANCE_LABEL: ctl.labels[INSTANCE_LABEL]}}},
    }


def pod_group(ctl: Controller, errors: list[str]) -> dict[str, Any]:
    """The PodGroup of a gang written with a minimum."""
    namespace, gang = ctl.imported_as.split("/", 1)
    name = gang.split("=", 1)[1]
    name_ok(name, f"jobs: PodGroup of '{ctl.imported_as}'", errors)
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "uid": object_uid("podgroup", namespace, name)},
        "spec": {"minMember": ctl.min_member},
    }
