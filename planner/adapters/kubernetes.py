"""Snapshots from Kubernetes objects: ``kubectl get nodes,pods,pdb -A -o json``.

``import_kubernetes(texts, config)`` reads one or more JSON (or YAML) documents, each a List (any
``kind: ...List`` with ``items``) or single objects (Node, Pod, PodDisruptionBudget, PodGroup, ...), and returns the
snapshot with the warnings and a summary. The mapping, with the configuration keys that steer it
(``planner import kubernetes --print-config`` shows the defaults, ``kubernetes_config.DEFAULT_CONFIG``):

* Nodes: ``status.allocatable`` (``capacity`` if absent, with a warning): ``cpu`` in cores,
  ``memory`` in GiB, GPUs and the model from ``gpu_resources``, ``gpu_count_resources``,
  ``gpu_shares``, time-slicing replicas and MIG slices (``kubernetes_gpus``) and ``gpu_model_label``; ``asw`` and
  ``spine`` from the first of ``asw_labels`` / ``spine_labels`` the node carries, else from Volcano
  HyperNodes in the input (``hypernode_tiers``; ``kubernetes_hypernodes``); every label;
  ``spec.taints``; ``spec.unschedulable`` (cordoned) -> ``schedulable: false``.
* Pods: finished ones (Succeeded, Failed) are left out; the others are placed on ``spec.nodeName``
  or pending without one. Requests as the scheduler computes them (``kubernetes_objects``);
  ``namespace``; ``spec.priority`` -> ``priority_value``, LP when below ``priority.lp_below`` or
  of a class in ``priority.lp_classes``, HP otherwise; ``nodeSelector``, tolerations, the required
  node affinity (In, NotIn, Exists, DoesNotExist); required pod anti-affinity on
  ``kubernetes.io/hostname`` -> an ``anti_affinity`` group named after its namespace and selector,
  which every pod that selector matches joins.
* Locked (never moved), as kube-descheduler's default evictor decides: DaemonSet pods, mirror and
  static pods, pods without an owner, pods with local storage (emptyDir, hostPath) unless
  ``evict_local_storage``, system-critical pods (priority >= 2,000,000,000) unless
  ``evict_system_critical``, terminating pods, pods annotated ``locked_annotation: "true"``; the
  descheduler's ``descheduler.alpha.kubernetes.io/evict`` annotation lifts the descheduler's checks
  (not the planner's own annotation). A hard rule the snapshot cannot express (pod affinity, anti-
  affinity on another topology key, a DoNotSchedule topology spread, Gt/Lt or matchFields node
  affinity) locks a placed pod with a warning; on a pending pod it is left out with a warning.
* Jobs: a gang label or annotation (``gang_keys``: PodGroup, Volcano, JobSet, LeaderWorkerSet,
  Kueue pod groups) names the job ``<namespace>/<key>=<value>``; otherwise the controller owner
  (a ReplicaSet folded into its Deployment through ``pod-template-hash``) names it
  ``<namespace>/<Kind>/<name>``. DaemonSet and static pods belong to none. Kueue's
  ``kueue.x-k8s.io/podset-required-topology`` (``-preferred-``) on an asw or spine label gives the
  job its topology. A gang starts whole unless a PodGroup object (scheduler-plugins or Volcano) of
  its name has a ``minMember`` below its pods (``min_available``); a controller's pods start one by
  one (``min_available`` 1) unless the job has a topology.
* DRA (``resource.k8s.io/v1`` DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates):
  devices onto nodes and claims onto pods as resources by name (``kubernetes_dra``).
* PodDisruptionBudgets -> ``disruption.max_unavailable`` of the jobs of the pods they select: the
  disruptions the budget allows now, as the disruption controller counts them (``kubernetes_budgets``:
  Pending, not-ready and terminating pods spend it; Deployments, ReplicaSets, StatefulSets and
  ReplicationControllers in the input give their scale); a budget over several jobs is split evenly,
  rounded down, so their sum never exceeds it; a job under several budgets takes the least.

Anything not understood is a warning naming the object (kind namespace/name) and the field path.
Input the snapshot cannot be built from (unreadable documents, bad quantities, a pod on an unknown
node, a malformed configuration) raises ``SnapshotError`` naming the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from planner.adapters import kubernetes_objects as k8s
from planner.adapters.kubernetes_budgets import SCALED_KINDS, budget_pod, controller_scale, disrupted_pods, observed_allowed
from planner.adapters.kubernetes_config import GIB, ImportConfig, _number, object_name
from planner.adapters.kubernetes_documents import read_documents
from planner.adapters.kubernetes_dra import resolve_dra
from planner.adapters.kubernetes_dra_claims import add_dra_gpus
from planner.adapters.kubernetes_dra_devices import DRA_KINDS
from planner.adapters.kubernetes_gpus import node_gpus, pod_gpus
from planner.adapters.kubernetes_hypernodes import hypernode_topology
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object
from planner.adapters.kubernetes_pod_steps import (
    LabelIndex,
    anti_affinity_groups,
    budgets_to_jobs,
    check_placements,
    resolve_gpus,
    unique_names,
)
from planner.adapters.kubernetes_pods import pod_fields
from planner.adapters.kubernetes_resources import check_named_capacity, less_node_bound, node_resources
from planner.adapters.kubernetes_run import ImportRun, KubeSummary
from planner.cluster import Cluster, Node, Pod, SnapshotError
from planner.kubernetes_names import metadata_problem
from planner.snapshot import consistency_problems


@dataclass
class KubeImport:
    cluster: Cluster
    warnings: list[str]
    summary: KubeSummary


# ----------------------------------------------------------------------------------------------
# Reading documents
# ----------------------------------------------------------------------------------------------


def read_objects(text: str, source: str) -> list[dict[str, Any]]:
    """The objects of one document: a List's items, or the object itself. JSON, or YAML."""
    docs = read_documents(text, source)  # duplicate keys, depth, aliases and sizes checked there
    objects = []
    for d, doc in enumerate(docs):
        where = source if len(docs) == 1 else f"{source} (document {d + 1})"
        if not isinstance(doc, dict):
            raise SnapshotError([f"{where}: expected a Kubernetes List or object, got {type(doc).__name__}"])
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") or ("items" in doc and kind is None):
            items = doc.get("items")
            if not isinstance(items, list):
                raise SnapshotError([f"{where}: items: a {kind or 'List'} needs a list of items"])
            item_kind = kind[:-4] if isinstance(kind, str) and kind not in ("List", "") else None
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    raise SnapshotError([f"{where}: items[{i}]: must be an object, got {type(item).__name__}"])
                objects.append(item if item.get("kind") or not item_kind else {**item, "kind": item_kind})
        elif isinstance(kind, str):
            objects.append(doc)
        else:
            raise SnapshotError([f"{where}: kind: missing; expected a List (kubectl get ... -o json) or a Node, Pod or PodDisruptionBudget"])
    return objects


# ----------------------------------------------------------------------------------------------
# The import
# ----------------------------------------------------------------------------------------------


def import_kubernetes(documents: list[tuple[str, str]], config: ImportConfig | None = None) -> KubeImport:
    """The snapshot of the objects in ``documents`` ((text, source name) pairs)."""
    run = _Import(config or ImportConfig())
    for text, source in documents:
        for obj in read_objects(text, source):
            run.add(obj)
    return run.finish()


class _Import(ImportRun):
    """The import of one set of documents: each object added by kind, then the snapshot built."""

    def add(self, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        meta: Any = obj.get("metadata")  # an object once metadata_problem finds nothing wrong
        problem = metadata_problem(kind, meta)  # names Kubernetes would refuse never reach a snapshot or a script
        if problem:
            self.errors.append(f"{object_name(obj)}: {problem}")
            return
        key = (str(kind), str(meta.get("namespace") or ""), meta["name"])
        if key in self.seen:
            if self.seen[key] != obj:
                self.errors.append(f"{object_name(obj)}: given twice with different contents; which one was meant?")
            return
        self.seen[key] = obj
        handler = {
            "Node": self._node,
            "Pod": self._pod,
            "PodDisruptionBudget": self._budget,
            "PodGroup": self._pod_group,
            "HyperNode": self.hypernodes.append,
            "Namespace": self._namespace,
            **dict.fromkeys(DRA_KINDS, self.dra.add),
            **dict.fromkeys(SCALED_KINDS, self._controller),
        }.get(str(kind))
        if handler is None:
            self.summary.skipped[f"{kind} objects"] += 1
            self.warn(
                obj,
                "kind",
                f"'{kind}' is not read by the importer (Node, Pod, PodDisruptionBudget, PodGroup, HyperNode, Namespace, {', '.join((*SCALED_KINDS, *DRA_KINDS))}); ignored",
            )
            return
        try:
            handler(obj)
        except KubeError as err:
            self.errors.append(f"{object_name(obj)}: {err}")

    # -- nodes ---------------------------------------------------------------------------------

    def _node(self, obj: dict[str, Any]) -> None:
        meta, spec, status = (as_object(obj.get(k), k) for k in ("metadata", "spec", "status"))
        resources = status.get("allocatable")
        where = "status.allocatable"
        if resources is None:
            resources, where = status.get("capacity"), "status.capacity"
            self.warn(obj, "status.allocatable", "missing; using status.capacity (what the kubelet reserves is not subtracted)")
        resources = as_object(resources, where)
        amounts = {name: k8s.request_quantity(q, f"{where}.{name}") for name, q in resources.items()}
        labels = {str(k): str(v) for k, v in as_object(meta.get("labels"), "metadata.labels").items()}
        taints = []
        for i, taint in enumerate(as_list(spec.get("taints"), "spec.taints")):
            taint = as_object(taint, f"spec.taints[{i}]")
            if taint.get("effect") not in ("NoSchedule", "NoExecute", "PreferNoSchedule") or not taint.get("key"):
                self.warn(obj, f"spec.taints[{i}]", f"taint {taint} has no key or an unknown effect; ignored")
                continue
            taints.append({"key": taint["key"], "value": str(taint.get("value") or ""), "effect": taint["effect"]})
        fields = {
            "name": meta["name"],
            "gpus": 0,
            "cpus": amounts.get("cpu", Fraction(0)),
            "memory_gib": amounts.get("memory", Fraction(0)) / GIB,
            "labels": labels,
            "gpu_model": "",
            "taints": taints,
            "asw": _first_label(labels, self.config.asw_labels),
            "spine": _first_label(labels, self.config.spine_labels),
            "schedulable": not spec.get("unschedulable", False),
            "resources": node_resources(self.config, amounts, where),
        }
        if fields["cpus"] <= 0:
            raise KubeError(f"{where}.cpu", "a node needs CPUs to hold pods; got none")
        info, warnings = node_gpus(self.config, labels, amounts, where)
        for path, message in warnings:
            self.warn(obj, path, message)
        fields["gpus"], fields["gpu_model"] = info.devices, info.model
        self.node_gpus[meta["name"]] = info
        self.node_fields.append((obj, fields))

    # -- budgets -------------------------------------------------------------------------------

    def _budget(self, obj: dict[str, Any]) -> None:
        spec = as_object(obj.get("spec"), "spec")
        selector = k8s.check_selector(spec.get("selector"), "spec.selector")
        if "maxUnavailable" not in spec and "minAvailable" not in spec:
            self.warn(obj, "spec", "neither maxUnavailable nor minAvailable; taken as minAvailable 1")
        k8s.pdb_max_unavailable(spec, 1)  # checks the values now, so errors name the budget
        observed, disrupted = observed_allowed(obj), disrupted_pods(obj)
        namespace = obj["metadata"].get("namespace") or "default"
        self.budgets.append({"obj": obj, "selector": selector, "spec": spec, "namespace": namespace, "observed": observed, "disrupted": disrupted})

    def _namespace(self, obj: dict[str, Any]) -> None:
        """A namespace's labels, for anti-affinity terms' namespaceSelectors."""
        labels = as_object(obj["metadata"].get("labels"), "metadata.labels")
        self.namespace_labels[obj["metadata"]["name"]] = {str(k): str(v) for k, v in labels.items()}

    def _pod_group(self, obj: dict[str, Any]) -> None:
        """A gang's minimum (scheduler-plugins ``scheduling.x-k8s.io`` or Volcano ``scheduling.volcano.sh``)."""
        spec = as_object(obj.get("spec"), "spec")
        member = spec.get("minMember", 0)
        if isinstance(member, bool) or not isinstance(member, int) or member < 0:
            raise KubeError("spec.minMember", f"must be a whole number at least 0, got {member!r}")
        self.pod_groups[(obj["metadata"].get("namespace") or "default", obj["metadata"]["name"])] = {"obj": obj, "min_member": member}

    # -- pods ----------------------------------------------------------------------------------

    def _controller(self, obj: dict[str, Any]) -> None:
        """A controller's scale, which budgets over its pods count as their expected pods."""
        meta = obj["metadata"]
        self.scales[(meta.get("namespace") or "default", obj["kind"], meta["name"])] = controller_scale(obj)

    def _pod(self, obj: dict[str, Any]) -> None:
        self.budget_pods.append(budget_pod(obj))
        fields = pod_fields(self, obj)
        if fields is not None:
            self.pods.append(fields)

    # -- the snapshot --------------------------------------------------------------------------

    def _hypernode_switches(self) -> None:
        """asw and spine from Volcano HyperNodes, for nodes whose labels name none."""
        if not self.hypernodes:
            return
        tiers = self.config.hypernode_tiers
        found = hypernode_topology(self.hypernodes, {f["name"]: f["labels"] for _, f in self.node_fields}, tiers.asw, tiers.spine)
        self.warnings += found.warnings
        self.errors += found.errors
        for _, fields in self.node_fields:
            fields["asw"] = fields["asw"] or found.asw.get(fields["name"])
            fields["spine"] = fields["spine"] or found.spine.get(fields["name"])

    def _reserve_node_bound(self, known: set[str]) -> None:
        """Nodes as snapshot objects, less what their node-bound pods request."""
        for obj, fields in self.node_fields:
            taken = self.reserved.get(fields["name"], {})
            gpus_taken = math.ceil(pod_gpus(self.config, taken, self.node_gpus[fields["name"]], {}, {}).gpus) if taken else 0
            left = {
                "gpus": fields["gpus"] - gpus_taken,
                "cpus": fields["cpus"] - taken.get("cpu", 0),
                "memory_gib": fields["memory_gib"] - taken.get("memory", Fraction(0)) / GIB,
            }
            short = [f"{k} {float(v):g}" for k, v in left.items() if v < 0 or (k == "cpus" and v <= 0)]
            resources, short_named = less_node_bound(fields["resources"], taken, self.config)
            short += short_named
            if short:
                self.errors.append(
                    f"{object_name(obj)}: status.allocatable: its DaemonSet, mirror and static pods request more than it has (left: {', '.join(short)})"
                )
                continue
            left = {"gpus": int(left["gpus"]), "cpus": _number(left["cpus"]), "memory_gib": _number(left["memory_gib"]), "resources": resources}
            self._validated(obj, Node, {**fields, **left}, self.nodes)

    def finish(self) -> KubeImport:
        if not self.node_fields and not self.errors:
            self.errors.append("no Node objects in the input; give the output of kubectl get nodes,pods,pdb -A -o json")
        known = {fields["name"] for _, fields in self.node_fields}
        for name in self.reserved.keys() - known:
            self.errors.append(f"node-bound pods name node '{name}', which has no Node object")
        self._hypernode_switches()
        try:
            resolve_dra(self)  # DRA devices onto the nodes and claims onto the pods (kubernetes_dra)
        except KubeError as err:
            self.errors.append(f"DRA objects: {err}")
        if self.errors:
            raise SnapshotError(self.errors)
        self._reserve_node_bound(known)
        for fields in self.pods:
            if fields["node"] is not None and fields["node"] not in known:
                self.errors.append(f"{object_name(fields['_obj'])}: spec.nodeName: unknown node '{fields['node']}' (no Node object of that name)")
        if self.errors:
            raise SnapshotError(self.errors)
        resolve_gpus(self)
        add_dra_gpus(self)
        check_named_capacity(self)
        index = LabelIndex(self.pods)  # namespaces and labels: the steps below do not change them
        anti_affinity_groups(self, index)
        check_placements(self)
        unique_names(self)
        jobs = budgets_to_jobs(self, index)
        pods: list[Pod] = []
        for fields in self.pods:
            self._validated(fields["_obj"], Pod, {k: v for k, v in fields.items() if not k.startswith("_")}, pods)
        if self.errors:
            raise SnapshotError(self.errors)
        cluster = Cluster(nodes=self.nodes, pods=pods, jobs=jobs)
        problems = consistency_problems(cluster)
        if problems:
            raise SnapshotError([f"the objects break a snapshot rule: {p}" for p in problems])
        s = self.summary
        s.nodes, s.jobs = len(self.nodes), len(jobs)
        s.placed_pods = sum(1 for p in pods if p.node is not None)
        s.pending_pods = len(pods) - s.placed_pods
        return KubeImport(cluster, self.warnings, s)


def _first_label(labels: dict[str, str], keys: list[str]) -> str | None:
    return next((labels[k] for k in keys if labels.get(k)), None)
