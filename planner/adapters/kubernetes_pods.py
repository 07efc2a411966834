"""Pods, jobs and budgets for ``planner.adapters.kubernetes``: one pod object -> snapshot fields, then
the steps that need every pod (anti-affinity groups, placements, names, jobs and budgets).

A locked pod never moves, so a rule of it the snapshot cannot express is left out without a
warning; a movable pod with such a rule is locked (placed) or keeps it out (pending), with a warning.
"""

from __future__ import annotations

from collections import Counter, defaultdict
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
    object_name,
)
from planner.adapters.kubernetes_gpus import mig_models, pending_units, pod_gpus
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object
from planner.adapters.kubernetes_resources import host_ports, named_amounts
from planner.adapters.kubernetes_run import ImportRun
from planner.cluster import POD_COUNT, Job

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
        "name": meta["name"], "namespace": namespace, "node": node, "gpus": 0, "uid": _uid(meta),
        "cpus": _number(requests.get("cpu", Fraction(0))), "memory_gib": _number(requests.get("memory", Fraction(0)) / GIB),
        "priority": "LP" if lp else "HP", "priority_value": priority,
        "node_selector": {str(k): str(v) for k, v in as_object(spec.get("nodeSelector"), "spec.nodeSelector").items()},
        "tolerations": _tolerations(run, obj, spec), "anti_affinity": [],
        "requests": named_amounts(cfg, requests, "spec.containers[*].resources.requests"), "host_ports": host_ports(spec),
        "job": _job_of(cfg, namespace, labels, annotations, owners),
        "_obj": obj, "_labels": labels, "_requests": requests, "_gang": _gang_of(cfg, labels, annotations), "_topology": _kueue_topology(run, obj, cfg, annotations),
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
            run.warn(obj, path, f"{why}; " + ("the pod is locked where it stands" if node is not None else "left out: a plan may place the pod where Kubernetes would not"))
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
    return (any(o.get("kind") == "DaemonSet" for o in owners) or "kubernetes.io/config.mirror" in annotations
            or annotations.get("kubernetes.io/config.source", "api") != "api")


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
        if operator not in ("Equal", "Exists") or effect not in ("", "NoSchedule", "NoExecute", "PreferNoSchedule") \
                or (not key and operator != "Exists") or (operator == "Exists" and value):
            run.warn(obj, f"spec.tolerations[{i}]", f"toleration {tol} is not understood; left out (the pod tolerates less, never more)")
            continue
        out.append({"key": key, "operator": operator, "value": value, "effect": effect})
    return out


def _node_affinity(affinity: dict) -> tuple[list | None, list[tuple[str, str]]]:
    """The required node-affinity terms, or what cannot be expressed (path, why)."""
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = as_object(as_object(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity")
                         .get("requiredDuringSchedulingIgnoredDuringExecution"), base)
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


# ----------------------------------------------------------------------------------------------
# Steps over all pods
# ----------------------------------------------------------------------------------------------


class LabelIndex:
    """The pods by namespace and label, so that a selector is checked against the pods carrying one of
    its labels rather than against every pod (thousands of anti-affinity terms or budgets over a
    hundred thousand pods would otherwise take minutes)."""

    def __init__(self, pods: list[dict[str, Any]]):
        self.pods = pods
        self.by_namespace: dict[str, list[int]] = defaultdict(list)
        self.by_label: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        self.by_key: dict[tuple[str, str], list[int]] = defaultdict(list)
        for i, fields in enumerate(pods):
            namespace = fields["namespace"]
            self.by_namespace[namespace].append(i)
            for key, value in fields["_labels"].items():
                self.by_label[(namespace, key, value)].append(i)
                self.by_key[(namespace, key)].append(i)

    def matching(self, selector: dict[str, Any] | None, namespaces: list[str] | None) -> list[int]:
        """The pods (in input order) of ``namespaces`` (None: all) that ``selector`` selects."""
        if selector is None:
            return []
        found: list[int] = []
        for namespace in self.by_namespace if namespaces is None else namespaces:
            found += (i for i in self._candidates(selector, namespace) if k8s.selector_matches(selector, self.pods[i]["_labels"]))
        return sorted(set(found))

    def _candidates(self, selector: dict[str, Any], namespace: str) -> list[int]:
        """The smallest pool of the namespace's pods that holds every pod the selector may select."""
        pools = [self.by_namespace.get(namespace, [])]
        for key, value in (selector.get("matchLabels") or {}).items():
            pools.append(self.by_label.get((namespace, key, value), []))
        for expr in selector.get("matchExpressions") or []:
            if expr["operator"] == "In":
                pools.append([i for value in expr.get("values") or [] for i in self.by_label.get((namespace, expr["key"], value), [])])
            elif expr["operator"] == "Exists":
                pools.append(self.by_key.get((namespace, expr["key"]), []))
        return min(pools, key=len)


def anti_affinity_groups(run: ImportRun, index: LabelIndex) -> None:
    """Snapshot groups for the required anti-affinity terms, exactly: an owner O of a term (a pod that
    has it) may not share a node with a pod S the term selects. Pods that are both share the term's
    group; a selected pod that is no owner gets a group of its own with those; an owner the term does
    not select gets one group per selected pod (owners of one term may otherwise share nodes)."""
    owners: dict[str, list[int]] = defaultdict(list)
    terms: dict[str, tuple[list[str] | None, dict]] = {}
    for i, fields in enumerate(run.pods):
        for group, namespaces, selector in fields["_anti_terms"]:
            owners[group].append(i)
            if isinstance(namespaces, dict):
                namespaces = _selected_namespaces(run, fields, namespaces)
            terms[group] = (namespaces, selector)
    for group, (namespaces, selector) in terms.items():
        selected = set(index.matching(selector, namespaces))
        owner_set = set(owners[group])
        both = sorted(owner_set & selected)
        for i in both:
            _join(run.pods[i], group)
        for b in sorted(selected - owner_set):
            for i in [*both, b]:
                _join(run.pods[i], f"{group}|{_pod_key(run.pods[b])}")
        for a in sorted(owner_set - selected):
            for i in [a, *both]:
                _join(run.pods[i], f"{group}|{_pod_key(run.pods[a])}")
            for b in sorted(selected - owner_set):
                for i in (a, b):
                    _join(run.pods[i], f"{group}|{_pod_key(run.pods[a])}|{_pod_key(run.pods[b])}")


def _selected_namespaces(run: ImportRun, fields: dict[str, Any], scope: dict[str, Any]) -> list[str] | None:
    """The namespaces a term's namespaceSelector selects (Namespace objects' labels, with the name as
    ``kubernetes.io/metadata.name``), with those it lists; every namespace (None) when the input has no
    Namespace objects, with a warning: the term then binds more pods than Kubernetes' own, never fewer."""
    if not run.namespace_labels:
        run.warn(fields["_obj"], "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[*].namespaceSelector",
                 "no Namespace objects in the input (add namespaces to the kubectl command); the term is applied to every namespace")
        return None
    chosen = {name for name, labels in run.namespace_labels.items()
              if k8s.selector_matches(scope["selector"], {"kubernetes.io/metadata.name": name, **labels})}
    return sorted(chosen | set(scope["listed"]))


def _pod_key(fields: dict[str, Any]) -> str:
    return f"{fields['namespace']}/{fields['name']}"


def _join(fields: dict[str, Any], group: str) -> None:
    if group not in fields["anti_affinity"]:
        fields["anti_affinity"].append(group)


def resolve_gpus(run: ImportRun) -> None:
    """Each pod's GPUs from its requests, once every node is known (``kubernetes_gpus``). A request
    with no snapshot form locks a placed pod (counted as the devices it touches) and leaves a pending
    one out."""
    cfg = run.config
    infos = list(run.node_gpus.values())
    units, differing = pending_units(infos)
    models = mig_models(infos, cfg)
    warned: set[str] = set()
    kept = []
    for fields in run.pods:
        node = fields["node"]
        info = run.node_gpus.get(node) if node is not None else None
        found = pod_gpus(cfg, fields["_requests"], info, units, models)
        if node is None:
            for resource in sorted(set(differing) & set(fields["_requests"])):
                if resource not in warned:
                    warned.add(resource)
                    run.warn(fields["_obj"], f"spec.containers[*].resources.requests.{resource}", "nodes count "
                             f"{', '.join(f'{float(u):g}' for u in differing[resource])} units per GPU; pending pods' "
                             f"shares are taken against the smallest ({float(units[resource]):g}), never understated")
        if found.problem is not None:
            path, why = found.problem
            if node is None:
                run.warn(fields["_obj"], path, f"{why}; left out: the snapshot cannot hold this request")
                run.summary.skipped["pending pods with a GPU request the snapshot cannot hold"] += 1
                continue
            run.warn(fields["_obj"], path, f"{why}; the pod is locked where it stands, holding {int(found.gpus)} GPU(s)")
            run.lock_pod(fields, "GPU request without a snapshot form")
        fields["gpus"] = int(found.gpus) if found.gpus.denominator == 1 else float(found.gpus)
        if found.gpu_models is not None:
            fields["gpu_models"] = found.gpu_models
        kept.append(fields)
    run.pods[:] = kept



def check_placements(run: ImportRun) -> None:
    """A placed pod whose node no longer satisfies its nodeSelector (labels changed after it started:
    Kubernetes keeps it running) keeps the node, is locked and loses the selector, with a warning."""
    labels = {node.name: node.labels for node in run.nodes}
    for fields in run.pods:
        node = fields["node"]
        if node is not None and any(labels[node].get(k) != v for k, v in fields["node_selector"].items()):
            run.warn(fields["_obj"], "spec.nodeSelector", f"node '{node}' no longer has the labels {fields['node_selector']}; "
                     "the pod is locked where it stands and its selector left out")
            fields["node_selector"] = {}
            run.lock_pod(fields, "nodeSelector no longer met")


def unique_names(run: ImportRun) -> None:
    """Snapshot pod names are the Kubernetes names; a name used in two namespaces becomes
    '<namespace>/<name>' for each of its pods, with a warning."""
    counts = Counter(fields["name"] for fields in run.pods)
    for fields in run.pods:
        if counts[fields["name"]] > 1:
            run.warn(fields["_obj"], "metadata.name", f"'{fields['name']}' is used in several namespaces; the snapshot names it "
                     f"'{fields['namespace']}/{fields['name']}'")
            fields["name"] = f"{fields['namespace']}/{fields['name']}"


def budgets_to_jobs(run: ImportRun, index: LabelIndex) -> list[Job]:
    """The jobs (first appearance order) with their topology and disruption budgets."""
    topology: dict[str, dict | None] = {}
    for fields in run.pods:
        job = fields["job"]
        if job is None:
            continue
        if job not in topology:
            topology[job] = fields["_topology"]
        elif topology[job] != fields["_topology"]:
            run.warn(fields["_obj"], "metadata.annotations", f"its topology request differs from other pods of job '{job}'; the first is kept")
    limits: dict[str, int] = {}
    for budget in run.budgets:
        obj = budget["obj"]
        matched = [run.pods[i] for i in index.matching(budget["selector"], [budget["namespace"]])]
        if not matched:
            run.warn(obj, "spec.selector", "selects no pod in the input; the budget constrains nothing")
            continue
        run.summary.budgets += 1
        allowed = k8s.pdb_max_unavailable(budget["spec"], len(matched))
        jobs = Counter(f["job"] for f in matched)
        jobless = jobs.pop(None, 0)
        if jobless:
            run.warn(obj, "spec.selector", f"selects {jobless} pod(s) that belong to no job (no controller, DaemonSet or static); "
                     "the budget is not carried for them")
        if len(jobs) > 1:
            share = allowed // len(jobs)
            run.warn(obj, "spec.selector", f"selects pods of {len(jobs)} jobs ({', '.join(sorted(jobs))}); its budget of "
                     f"{allowed} is split evenly: max_unavailable {share} each")
            allowed = share
        for job in jobs:
            limits[job] = min(limits.get(job, allowed), allowed)
    minimum = _min_available(run, topology)
    return [
        Job.model_validate({"name": name, "topology": topology[name], "min_available": minimum.get(name),
                            "disruption": {"max_unavailable": limits[name]} if name in limits else None})
        for name in topology
    ]


def _min_available(run: ImportRun, topology: dict[str, dict | None]) -> dict[str, int]:
    """Jobs that may start with fewer than all their pods. A gang named by a PodGroup in the input takes
    its ``minMember`` (below the pods it has; at or above: all of them); a gang without one starts
    whole. A controller's pods (Deployment, StatefulSet, batch Job...) start one by one: min_available 1,
    unless the job asks for a topology (Kueue places such a pod set whole)."""
    pods: Counter[str] = Counter(f["job"] for f in run.pods if f["job"] is not None)
    first = {}
    for fields in run.pods:
        first.setdefault(fields["job"], fields)
    minimum: dict[str, int] = {}
    for job, fields in first.items():
        if job is None:
            continue
        gang = fields["_gang"]
        if gang is None:
            if pods[job] > 1 and topology.get(job) is None:
                minimum[job] = 1
            continue
        group = run.pod_groups.get((fields["namespace"], gang[1]))
        if group is None:
            if gang[0] in POD_GROUP_KEYS:
                run.warn(fields["_obj"], f"metadata.labels.{gang[0]}", f"PodGroup '{gang[1]}' is not in the input; job '{job}' "
                         "is taken to start whole (give kubectl get podgroups -A -o json too)")
            continue
        group["_used"] = True
        member = group["min_member"]
        if 1 <= member < pods[job]:
            minimum[job] = member
    for group in run.pod_groups.values():
        if not group.get("_used"):
            run.warn(group["obj"], "metadata.name", "no pod names this PodGroup; it constrains nothing")
    return minimum


__all__ = ["anti_affinity_groups", "budgets_to_jobs", "check_placements", "object_name", "pod_fields", "resolve_gpus", "unique_names"]
