"""Pods for ``planner.adapters.kubernetes``: one pod object -> snapshot fields (``kubernetes_pod_steps``
then takes the steps that need every pod: anti-affinity groups, placements, names, jobs and budgets).

A locked pod never moves, so a rule of it the snapshot cannot express is left out without a
warning; a movable pod with such a rule is locked (placed) or keeps it out (pending), with a warning.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from planner.adapters import kubernetes_objects as k8s
from planner.adapters.kubernetes_config import (
    DESCHEDULER_EVICT,
    GIB,
    HOSTNAME_KEY,
    KUEUE_PREFERRED,
    KUEUE_REQUIRED,
    SYSTEM_CRITICAL_PRIORITY,
    ImportConfig,
    _number,
)
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object
from planner.adapters.kubernetes_resources import host_ports, named_amounts
from planner.adapters.kubernetes_run import ImportRun
from planner.cluster import POD_COUNT

FINISHED = ("Succeeded", "Failed")
POD_GROUP_KEYS = ("scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io", "scheduling.k8s.io/group-name")
"""Gang keys whose value names a PodGroup object (scheduler-plugins, new and old; Volcano)."""
INEXPRESSIBLE = "a rule the snapshot cannot express"


def pod_fields(run: ImportRun, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The snapshot fields of one pod (None for a finished pod); private keys start with '_'."""
    cfg = run.config
    meta, spec, status = (as_object(obj.get(k), k) for k in ("metadata", "spec", "status"))
    phase = status.get("phase")
    if phase in FINISHED:
        run.summary.skipped[f"{phase} pods"] += 1
        return None
    if phase not in (None, "Pending", "Running"):
        run.warn(obj, "status.phase", f"'{phase}' is not a phase the importer knows; the pod is taken to hold its requests")
    namespace = meta.get("namespace") or "default"
    labels = {str(k): str(v) for k, v in as_object(meta.get("labels"), "metadata.labels").items()}
    annotations = {str(k): str(v) for k, v in as_object(meta.get("annotations"), "metadata.annotations").items()}
    owners = [as_object(o, f"metadata.ownerReferences[{i}]") for i, o in enumerate(as_list(meta.get("ownerReferences"), "metadata.ownerReferences"))]
    node = spec.get("nodeName") or None
    if node is not None and not isinstance(node, str):
        raise KubeError("spec.nodeName", f"must be a string, got {node!r}")
    requests = k8s.pod_requests(spec)
    if cfg.node_bound_pods == "reserve" and _node_bound(owners, annotations):
        target = node or _daemon_target(spec)
        if target is None:
            run.warn(obj, "spec.nodeName", "a pending node-bound pod without a target node; its requests are not reserved")
            return None
        taken = run.reserved.setdefault(target, {})
        for name, amount in {**requests, POD_COUNT: Fraction(1)}.items():
            taken[name] = taken.get(name, Fraction(0)) + amount
        run.summary.reserved += 1
        return None
    priority = spec.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise KubeError("spec.priority", f"must be a whole number, got {priority!r}")
    lp = (priority is not None and priority < cfg.priority.lp_below) or spec.get("priorityClassName") in cfg.priority.lp_classes
    fields: dict[str, Any] = {
        "name": meta["name"],
        "namespace": namespace,
        "node": node,
        "gpus": 0,
        "uid": _uid(meta),
        "cpus": _number(requests.get("cpu", Fraction(0))),
        "memory_gib": _number(requests.get("memory", Fraction(0)) / GIB),
        "priority": "LP" if lp else "HP",
        "priority_value": priority,
        "node_selector": {str(k): str(v) for k, v in as_object(spec.get("nodeSelector"), "spec.nodeSelector").items()},
        "tolerations": _tolerations(run, obj, spec),
        "anti_affinity": [],
        "requests": named_amounts(cfg, requests, "spec.containers[*].resources.requests"),
        "host_ports": host_ports(spec),
        "job": _job_of(cfg, namespace, labels, annotations, owners),
        "_obj": obj,
        "_labels": labels,
        "_requests": requests,
        "_gang": _gang_of(cfg, labels, annotations),
        "_topology": _kueue_topology(run, obj, cfg, annotations),
    }
    reasons = _lock_reasons(cfg, meta, spec, annotations, owners, priority) if node is not None else []
    affinity = as_object(spec.get("affinity"), "spec.affinity")
    fields["node_affinity"], rules_lost = _node_affinity(affinity)
    fields["_anti_terms"], lost = _anti_affinity_terms(affinity, spec, namespace, labels)
    rules_lost += lost
    if rules_lost and not reasons:
        if node is not None:
            reasons = [INEXPRESSIBLE]
        for path, why in rules_lost:
            run.warn(
                obj,
                path,
                f"{why}; " + ("the pod is locked where it stands" if node is not None else "left out: a plan may place the pod where Kubernetes would not"),
            )
    if reasons:
        run.summary.locked[reasons[0]] += 1
    fields["locked"] = bool(reasons)
    return fields


def _uid(meta: dict[str, Any]) -> str | None:
    """``metadata.uid`` (kept: plans record it and the kubectl script checks it); None when absent."""
    uid = meta.get("uid")
    if uid is not None and not isinstance(uid, str):
        raise KubeError("metadata.uid", f"must be a string, got {uid!r}")
    return uid or None


def _node_bound(owners: list[dict], annotations: dict[str, str]) -> bool:
    """DaemonSet, mirror and static pods: they run on their node whatever a plan does."""
    return (
        any(o.get("kind") == "DaemonSet" for o in owners)
        or "kubernetes.io/config.mirror" in annotations
        or annotations.get("kubernetes.io/config.source", "api") != "api"
    )


def _daemon_target(spec: dict) -> str | None:
    """The node a pending DaemonSet pod is pinned to (matchFields metadata.name In [node])."""
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        for f in (term or {}).get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or []) == 1:
                return str(f["values"][0])
    return None


def _lock_reasons(cfg: ImportConfig, meta: dict, spec: dict, annotations: dict[str, str], owners: list[dict], priority: int | None) -> list[str]:
    """Why kube-descheduler's default evictor (or the planner's annotation) keeps the pod in place."""
    if annotations.get(cfg.locked_annotation, "").lower() == "true":
        return [f"annotation {cfg.locked_annotation}"]
    if meta.get("deletionTimestamp"):
        return ["terminating"]
    if DESCHEDULER_EVICT in annotations:
        return []
    reasons = []
    if any(o.get("kind") == "DaemonSet" for o in owners):
        reasons.append("DaemonSet")
    if "kubernetes.io/config.mirror" in annotations:
        reasons.append("mirror pod")
    elif annotations.get("kubernetes.io/config.source", "api") != "api":
        reasons.append("static pod")
    if not owners:
        reasons.append("no controller")
    volumes = as_list(spec.get("volumes"), "spec.volumes")
    if not cfg.evict_local_storage and any(isinstance(v, dict) and ("emptyDir" in v or "hostPath" in v) for v in volumes):
        reasons.append("local storage")
    if not cfg.evict_system_critical and priority is not None and priority >= SYSTEM_CRITICAL_PRIORITY:
        reasons.append("system-critical")
    return reasons


def _gang_of(cfg: ImportConfig, labels: dict[str, str], annotations: dict[str, str]) -> tuple[str, str] | None:
    """The first gang key the pod carries (label or annotation) and its value."""
    for key in cfg.gang_keys:
        value = labels.get(key) or annotations.get(key)
        if value:
            return key, value
    return None


def _job_of(cfg: ImportConfig, namespace: str, labels: dict[str, str], annotations: dict[str, str], owners: list[dict]) -> str | None:
    """A gang key's value, else the controller (a ReplicaSet folded into its Deployment)."""
    gang = _gang_of(cfg, labels, annotations)
    if gang is not None:
        return f"{namespace}/{gang[0]}={gang[1]}"
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if owner is None or owner.get("kind") in ("DaemonSet", "Node"):
        return None
    kind, name = str(owner.get("kind")), str(owner.get("name"))
    template_hash = labels.get("pod-template-hash")
    if kind == "ReplicaSet" and template_hash and name.endswith(f"-{template_hash}"):
        kind, name = "Deployment", name[: -len(template_hash) - 1]
    return f"{namespace}/{kind}/{name}"


def _kueue_topology(run: ImportRun, obj: dict, cfg: ImportConfig, annotations: dict[str, str]) -> dict[str, str] | None:
    for key, mode in ((KUEUE_REQUIRED, "required"), (KUEUE_PREFERRED, "preferred")):
        label = annotations.get(key)
        if label is None:
            continue
        level = "asw" if label in cfg.asw_labels else "spine" if label in cfg.spine_labels else None
        if level is None:
            run.warn(obj, f"metadata.annotations.{key}", f"'{label}' is neither an asw nor a spine label (asw_labels, spine_labels); ignored")
            return None
        return {"level": level, "mode": mode}
    return None


def _tolerations(run: ImportRun, obj: dict, spec: dict) -> list[dict[str, str]]:
    out = []
    for i, tol in enumerate(as_list(spec.get("tolerations"), "spec.tolerations")):
        tol = as_object(tol, f"spec.tolerations[{i}]")
        operator = tol.get("operator") or "Equal"
        key, value, effect = str(tol.get("key") or ""), str(tol.get("value") or ""), str(tol.get("effect") or "")
        if (
            operator not in ("Equal", "Exists")
            or effect not in ("", "NoSchedule", "NoExecute", "PreferNoSchedule")
            or (not key and operator != "Exists")
            or (operator == "Exists" and value)
        ):
            run.warn(obj, f"spec.tolerations[{i}]", f"toleration {tol} is not understood; left out (the pod tolerates less, never more)")
            continue
        out.append({"key": key, "operator": operator, "value": value, "effect": effect})
    return out


def _node_affinity(affinity: dict) -> tuple[list | None, list[tuple[str, str]]]:
    """The required node-affinity terms, or what cannot be expressed (path, why)."""
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = as_object(as_object(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity").get("requiredDuringSchedulingIgnoredDuringExecution"), base)
    if not required:
        return None, []
    terms = []
    for t, term in enumerate(as_list(required.get("nodeSelectorTerms"), f"{base}.nodeSelectorTerms")):
        where = f"{base}.nodeSelectorTerms[{t}]"
        term = as_object(term, where)
        if term.get("matchFields"):
            return None, [(f"{where}.matchFields", "matchFields (node names) in a required node affinity is not modelled")]
        expressions = []
        for e, expr in enumerate(as_list(term.get("matchExpressions"), f"{where}.matchExpressions")):
            expr = as_object(expr, f"{where}.matchExpressions[{e}]")
            if expr.get("operator") not in ("In", "NotIn", "Exists", "DoesNotExist"):
                return None, [(f"{where}.matchExpressions[{e}].operator", f"operator {expr.get('operator')!r} is not modelled")]
            expressions.append({"key": expr.get("key"), "operator": expr["operator"], "values": list(expr.get("values") or [])})
        if expressions:  # an empty term matches no node: it adds nothing to the OR
            terms.append(expressions)
    if not terms:
        return None, [(f"{base}.nodeSelectorTerms", "no term can match a node, so the pod fits nowhere")]
    return terms, []


def _anti_affinity_terms(affinity: dict, spec: dict, namespace: str, labels: dict[str, str]) -> tuple[list, list[tuple[str, str]]]:
    """Required anti-affinity terms on the hostname as (group, namespaces or None for all, selector);
    and the hard rules the snapshot cannot express."""
    lost = []
    for kind in ("podAffinity",):
        if as_object(affinity.get(kind), f"spec.affinity.{kind}").get("requiredDuringSchedulingIgnoredDuringExecution"):
            lost.append((f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution", "required pod affinity is not modelled"))
    for i, c in enumerate(as_list(spec.get("topologySpreadConstraints"), "spec.topologySpreadConstraints")):
        if isinstance(c, dict) and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
            lost.append((f"spec.topologySpreadConstraints[{i}]", "a DoNotSchedule topology spread is not modelled"))
    terms = []
    base = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    anti = as_object(affinity.get("podAntiAffinity"), "spec.affinity.podAntiAffinity")
    for t, term in enumerate(as_list(anti.get("requiredDuringSchedulingIgnoredDuringExecution"), base)):
        where = f"{base}[{t}]"
        term = as_object(term, where)
        if term.get("topologyKey") != HOSTNAME_KEY:
            lost.append((f"{where}.topologyKey", f"anti-affinity on '{term.get('topologyKey')}' (only {HOSTNAME_KEY} is modelled)"))
            continue
        ns_selector = term.get("namespaceSelector")
        if ns_selector:  # non-empty: resolved against the Namespace objects' labels once all are read
            ns_selector = k8s.check_selector(ns_selector, f"{where}.namespaceSelector")
        selector = k8s.check_selector(term.get("labelSelector"), f"{where}.labelSelector")
        if selector is None:
            continue  # a null selector matches no pod: the term constrains nothing
        selector = {"matchLabels": dict(selector.get("matchLabels") or {}), "matchExpressions": list(selector.get("matchExpressions") or [])}
        for key in as_list(term.get("matchLabelKeys"), f"{where}.matchLabelKeys"):
            if key in labels:
                selector["matchLabels"][key] = labels[key]
        for key in as_list(term.get("mismatchLabelKeys"), f"{where}.mismatchLabelKeys"):
            if key in labels:
                selector["matchExpressions"].append({"key": key, "operator": "NotIn", "values": [labels[key]]})
        listed = sorted(set(as_list(term.get("namespaces"), f"{where}.namespaces")))
        if ns_selector:
            namespaces: Any = {"listed": listed, "selector": ns_selector}
            scope = f"{','.join(listed)}+ns({k8s.selector_text(ns_selector)})"
        else:
            namespaces = None if ns_selector == {} else listed or [namespace]
            scope = ",".join(namespaces) if namespaces else "*"
        group = f"anti:{scope}/{k8s.selector_text(selector)}"
        terms.append((group, namespaces, selector))
    return terms, lost


__all__ = ["FINISHED", "INEXPRESSIBLE", "POD_GROUP_KEYS", "pod_fields"]
