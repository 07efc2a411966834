"""The import steps that need every pod (``planner.adapters.kubernetes`` runs them after ``kubernetes_pods``
has read each pod): anti-affinity groups over a label index, GPUs once every node is known, placements whose
node no longer fits, names unique across namespaces, and the jobs with their budgets and minimum sizes."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from planner.adapters import kubernetes_objects as k8s
from planner.adapters.kubernetes_budgets import BudgetPod, disruptions_allowed, unfinished_by_controller
from planner.adapters.kubernetes_gpus import mig_models, pending_units, pod_gpus
from planner.adapters.kubernetes_pods import POD_GROUP_KEYS
from planner.adapters.kubernetes_run import ImportRun
from planner.cluster import Job


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
        run.warn(
            fields["_obj"],
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[*].namespaceSelector",
            "no Namespace objects in the input (add namespaces to the kubectl command); the term is applied to every namespace",
        )
        return None
    chosen = {name for name, labels in run.namespace_labels.items() if k8s.selector_matches(scope["selector"], {"kubernetes.io/metadata.name": name, **labels})}
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
                    run.warn(
                        fields["_obj"],
                        f"spec.containers[*].resources.requests.{resource}",
                        "nodes count "
                        f"{', '.join(f'{float(u):g}' for u in differing[resource])} units per GPU; pending pods' "
                        f"shares are taken against the smallest ({float(units[resource]):g}), never understated",
                    )
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
            run.warn(
                fields["_obj"],
                "spec.nodeSelector",
                f"node '{node}' no longer has the labels {fields['node_selector']}; the pod is locked where it stands and its selector left out",
            )
            fields["node_selector"] = {}
            run.lock_pod(fields, "nodeSelector no longer met")


def unique_names(run: ImportRun) -> None:
    """Snapshot pod names are the Kubernetes names; a name used in two namespaces becomes
    '<namespace>/<name>' for each of its pods, with a warning."""
    counts = Counter(fields["name"] for fields in run.pods)
    for fields in run.pods:
        if counts[fields["name"]] > 1:
            run.warn(
                fields["_obj"],
                "metadata.name",
                f"'{fields['name']}' is used in several namespaces; the snapshot names it '{fields['namespace']}/{fields['name']}'",
            )
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
    limits = _budget_limits(run, index)
    minimum = _min_available(run, topology)
    return [
        Job.model_validate(
            {
                "name": name,
                "topology": topology[name],
                "min_available": minimum.get(name),
                "disruption": {"max_unavailable": limits[name]} if name in limits else None,
            }
        )
        for name in topology
    ]


def _budget_limits(run: ImportRun, index: LabelIndex) -> dict[str, int]:
    """Each job's ``max_unavailable``: the disruptions its budgets allow now, as the disruption
    controller counts them (``kubernetes_budgets``), split evenly over the jobs a budget selects; a
    job under several budgets takes the least."""
    every = LabelIndex([{"namespace": p.namespace, "_labels": p.labels} for p in run.budget_pods])
    replicas_seen = unfinished_by_controller(run.budget_pods, run.scales)
    limits: dict[str, int] = {}
    for budget in run.budgets:
        obj = budget["obj"]
        matched = [run.pods[i] for i in index.matching(budget["selector"], [budget["namespace"]])]
        if not matched:
            run.warn(obj, "spec.selector", "selects no pod in the input; the budget constrains nothing")
            continue
        run.summary.budgets += 1
        selected = [run.budget_pods[i] for i in every.matching(budget["selector"], [budget["namespace"]])]
        allowed = _allowed_now(run, budget, selected, replicas_seen)
        jobs = Counter(f["job"] for f in matched)
        jobless = jobs.pop(None, 0)
        if jobless:
            run.warn(
                obj, "spec.selector", f"selects {jobless} pod(s) that belong to no job (no controller, DaemonSet or static); the budget is not carried for them"
            )
        if len(jobs) > 1:
            share = allowed // len(jobs)
            run.warn(
                obj,
                "spec.selector",
                f"selects pods of {len(jobs)} jobs ({', '.join(sorted(jobs))}); its budget of {allowed} is split evenly: max_unavailable {share} each",
            )
            allowed = share
        for job in jobs:
            limits[job] = min(limits.get(job, allowed), allowed)
    return limits


def _allowed_now(run: ImportRun, budget: dict[str, Any], selected: list[BudgetPod], replicas_seen: dict[tuple[str, str, str], int]) -> int:
    """The disruptions ``budget`` allows now (the smaller of the count from its pods and its
    ``status.disruptionsAllowed``), with warnings where pods not ready, a missing scale or the
    status lower it."""
    obj = budget["obj"]
    found = disruptions_allowed(budget["spec"], selected, budget["disrupted"], run.scales, replicas_seen)
    for note in found.notes:
        run.warn(obj, "spec", note)
    if found.allowed < found.nominal:
        run.warn(
            obj,
            "spec",
            f"{found.expected - found.healthy} of its {found.expected} expected pod(s) are not healthy (pending, not ready or terminating), "
            f"which spends its budget: {found.allowed} disruption(s) allowed now, not {found.nominal}",
        )
    observed = budget["observed"]
    if observed is not None and observed != found.allowed:
        run.warn(
            obj,
            "status.disruptionsAllowed",
            f"{observed} in the input, {found.allowed} from its pods as the disruption controller counts them; the smaller, {min(observed, found.allowed)}, is kept",
        )
    return found.allowed if observed is None else min(observed, found.allowed)


def _min_available(run: ImportRun, topology: dict[str, dict | None]) -> dict[str, int]:
    """Jobs that may start with fewer than all their pods. A gang named by a PodGroup in the input takes
    its ``minMember`` (below the pods it has; at or above: all of them); a gang without one starts
    whole. A controller's pods (Deployment, StatefulSet, batch Job...) start one by one: min_available 1,
    unless the job asks for a topology (Kueue places such a pod set whole)."""
    pods: Counter[str] = Counter(f["job"] for f in run.pods if f["job"] is not None)
    first: dict[str | None, dict[str, Any]] = {}  # job -> its first pod's fields
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
                run.warn(
                    fields["_obj"],
                    f"metadata.labels.{gang[0]}",
                    f"PodGroup '{gang[1]}' is not in the input; job '{job}' is taken to start whole (give kubectl get podgroups -A -o json too)",
                )
            continue
        group["_used"] = True
        member = group["min_member"]
        if 1 <= member < pods[job]:
            minimum[job] = member
    for group in run.pod_groups.values():
        if not group.get("_used"):
            run.warn(group["obj"], "metadata.name", "no pod names this PodGroup; it constrains nothing")
    return minimum


__all__ = ["LabelIndex", "anti_affinity_groups", "budgets_to_jobs", "check_placements", "resolve_gpus", "unique_names"]
