"""Snapshots from Kubernetes objects: ``kubectl get nodes,pods,pdb -A -o json``.

``import_kubernetes(texts, config)`` reads one or more JSON (or YAML) documents, each a List (any
``kind: ...List`` with ``items``) or a single Node, Pod, PodDisruptionBudget or PodGroup, and returns the
snapshot with the warnings and a summary. The mapping, with the configuration keys that steer it
(``planner import kubernetes --print-config`` shows the defaults, ``DEFAULT_CONFIG``):

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
* PodDisruptionBudgets -> ``disruption.max_unavailable`` of the jobs of the pods they select
  (percentages against the selected pods, rounded up); a budget over several jobs is split evenly,
  rounded down, so their sum never exceeds it; a job under several budgets takes the least.

Anything not understood is a warning naming the object (kind namespace/name) and the field path.
Input the snapshot cannot be built from (unreadable documents, bad quantities, a pod on an unknown
node, a malformed configuration) raises ``SnapshotError`` naming the same.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.adapters import kubernetes_objects as k8s
from planner.adapters.kubernetes_documents import load_yaml_mapping, read_documents
from planner.adapters.kubernetes_gpus import NodeGpus, node_gpus, pod_gpus
from planner.adapters.kubernetes_hypernodes import hypernode_topology
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object
from planner.adapters.kubernetes_resources import check_named_capacity, less_node_bound, node_resources
from planner.cluster import Cluster, Job, Node, Pod, SnapshotError, pydantic_problems
from planner.kubernetes_names import metadata_problem
from planner.snapshot import consistency_problems

GIB = 2**30
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
HOSTNAME_KEY = "kubernetes.io/hostname"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
DESCHEDULER_EVICT = "descheduler.alpha.kubernetes.io/evict"
MAX_LISTED = 20


class PriorityConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    lp_below: int = 0
    lp_classes: list[str] = Field(default_factory=list)


class ShareResource(BaseModel):
    """A resource a pod asks for part of a GPU with, and how many of its units make one GPU: a fixed
    number, a node label, or (neither) the node's allocatable over its GPUs."""

    model_config = ConfigDict(extra="forbid", strict=True)
    resource: str = Field(min_length=1)
    units_per_gpu: int | None = Field(default=None, ge=1)
    units_per_gpu_label: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_source(self) -> "ShareResource":
        if self.units_per_gpu is not None and self.units_per_gpu_label is not None:
            raise ValueError("give units_per_gpu or units_per_gpu_label, not both")
        return self


def _default_shares() -> list[ShareResource]:
    return [ShareResource(resource="nvidia.com/gpu.shared", units_per_gpu_label="nvidia.com/gpu.replicas"),
            ShareResource(resource="koordinator.sh/gpu-core", units_per_gpu=100),
            ShareResource(resource="koordinator.sh/gpu-memory-ratio", units_per_gpu=100),
            ShareResource(resource="koordinator.sh/gpu-memory"),
            ShareResource(resource="aliyun.com/gpu-mem")]


class HyperNodeTiers(BaseModel):
    """Which Volcano HyperNode tiers are the access switch and the spine (null: not read)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    asw: int | None = Field(default=1, ge=0)
    spine: int | None = Field(default=2, ge=0)


class ImportConfig(BaseModel):
    """How Kubernetes objects become a snapshot (``--config``; defaults in ``DEFAULT_CONFIG``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    gpu_resources: list[str] = Field(default_factory=lambda: ["nvidia.com/gpu"])
    gpu_count_resources: list[str] = Field(default_factory=lambda: ["aliyun.com/gpu-count"])
    gpu_shares: list[ShareResource] = Field(default_factory=_default_shares)
    time_slicing_label: str = "nvidia.com/gpu.replicas"
    mig_resource_prefix: str = "nvidia.com/mig-"
    ignored_resources: list[str] = Field(default_factory=list)
    gpu_model_label: str = "nvidia.com/gpu.product"
    asw_labels: list[str] = Field(default_factory=lambda: [
        "network.topology.nvidia.com/leaf", "fabric.topograph.run/tier-0", "cloud.google.com/gce-topology-subblock"])
    spine_labels: list[str] = Field(default_factory=lambda: [
        "network.topology.nvidia.com/spine", "fabric.topograph.run/tier-1", "cloud.google.com/gce-topology-block"])
    hypernode_tiers: HyperNodeTiers = Field(default_factory=HyperNodeTiers)
    priority: PriorityConfig = Field(default_factory=PriorityConfig)
    locked_annotation: str = "planner.io/locked"
    node_bound_pods: Literal["reserve", "locked"] = "reserve"
    evict_local_storage: bool = False
    evict_system_critical: bool = False
    gang_keys: list[str] = Field(default_factory=lambda: [
        "scheduling.x-k8s.io/pod-group", "pod-group.scheduling.sigs.k8s.io", "scheduling.k8s.io/group-name",
        "jobset.sigs.k8s.io/jobset-name", "leaderworkerset.sigs.k8s.io/group-key", "kueue.x-k8s.io/pod-group-name"])


DEFAULT_CONFIG = """\
# planner import kubernetes: how Kubernetes objects become a snapshot (all keys optional).
# Extended resources counted as whole GPUs (pod requests and node allocatable, summed).
gpu_resources: [nvidia.com/gpu]
# Node resources that only count GPUs (a node's GPUs are the most any GPU resource gives).
gpu_count_resources: [aliyun.com/gpu-count]
# Resources a pod asks for part of one GPU with; units per GPU: a number, a node label, or (neither)
# the node's allocatable divided by its GPUs. A pod asking in several ways holds the largest share.
gpu_shares:
  - {resource: nvidia.com/gpu.shared, units_per_gpu_label: nvidia.com/gpu.replicas}  # time-slicing, renamed
  - {resource: koordinator.sh/gpu-core, units_per_gpu: 100}                          # percent of a GPU
  - {resource: koordinator.sh/gpu-memory-ratio, units_per_gpu: 100}
  - {resource: koordinator.sh/gpu-memory}                                            # bytes of GPU memory
  - {resource: aliyun.com/gpu-mem}                                                   # GiB of GPU memory
# Time-slicing without renaming: on a node with this label at r > 1, each GPU of gpu_resources is
# advertised r times (the node has allocatable / r GPUs; a pod asking for k holds k / r of a GPU).
# Pending pods' requests of gpu_resources are read as whole GPUs.
time_slicing_label: nvidia.com/gpu.replicas
# MIG slices (the device plugin's mixed strategy): a node offering one profile is a node of model
# '<product>-MIG-<profile>' with one GPU per slice; several profiles: '<product>-MIG-mixed', planned per profile.
mig_resource_prefix: nvidia.com/mig-
# Resources left out of the snapshot ('*' ends a prefix): plans then do not check them. Every other
# resource a node offers or a pod requests is checked by its name, as kube-scheduler does.
ignored_resources: []
# Node label giving the GPU model (NVIDIA GPU feature discovery).
gpu_model_label: nvidia.com/gpu.product
# Node labels naming the access switch (leaf) and the spine; the first one a node carries is used.
# NVIDIA topograph (v0.x and v1 fabric tiers) and GKE's compact-placement labels used by Kueue TAS.
asw_labels: [network.topology.nvidia.com/leaf, fabric.topograph.run/tier-0, cloud.google.com/gce-topology-subblock]
spine_labels: [network.topology.nvidia.com/spine, fabric.topograph.run/tier-1, cloud.google.com/gce-topology-block]
# Volcano HyperNode objects in the input (kubectl get hypernodes -o json): the tiers that are a node's
# access switch and spine; used for nodes the labels above do not place.
hypernode_tiers: {asw: 1, spine: 2}
priority:
  lp_below: 0        # pods whose spec.priority is below this are LP (spot, preemptible); others HP
  lp_classes: []     # priorityClassName values that are LP whatever their priority
# A pod annotated with this key and the value "true" is never moved.
locked_annotation: planner.io/locked
# DaemonSet, mirror and static pods belong to their node: "reserve" takes their requests off the
# node's allocatable (a node holding only them counts as empty and can be vacated, as the cluster
# autoscaler sees it); "locked" keeps them as locked pods (then no node with one is ever vacated).
node_bound_pods: reserve
# kube-descheduler's defaults: pods with emptyDir/hostPath volumes and system-critical pods stay put.
evict_local_storage: false
evict_system_critical: false
# Labels or annotations naming a gang (one job), first match wins: scheduler-plugins PodGroup (new,
# old), Volcano, JobSet, LeaderWorkerSet (one group), Kueue pod groups.
gang_keys: [scheduling.x-k8s.io/pod-group, pod-group.scheduling.sigs.k8s.io, scheduling.k8s.io/group-name,
            jobset.sigs.k8s.io/jobset-name, leaderworkerset.sigs.k8s.io/group-key, kueue.x-k8s.io/pod-group-name]
"""


def load_config(text: str | None, source: str = "config") -> ImportConfig:
    """The import configuration from YAML text (None: the defaults); SnapshotError naming the key."""
    if text is None:
        return ImportConfig()
    data = load_yaml_mapping(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SnapshotError([f"{source}: must be a mapping of settings, got {type(data).__name__}"])
    try:
        return ImportConfig.model_validate(data)
    except ValidationError as err:
        raise SnapshotError([f"{source}: {p}" for p in pydantic_problems(err, ImportConfig, source)]) from None


@dataclass
class KubeSummary:
    nodes: int = 0
    placed_pods: int = 0
    pending_pods: int = 0
    jobs: int = 0
    budgets: int = 0
    reserved: int = 0
    locked: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)


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


def object_name(obj: dict[str, Any]) -> str:
    """'Pod ml/train-0', 'Node gpu-3': how messages name an object."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "(unnamed)"
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    return f"{obj.get('kind')} {namespace + '/' if namespace else ''}{name}"


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


class _Import:
    def __init__(self, config: ImportConfig):
        self.config = config
        self.warnings: list[str] = []
        self.errors: list[str] = []
        self.summary = KubeSummary()
        self.seen: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.nodes: list[Node] = []
        self.node_fields: list[tuple[dict[str, Any], dict[str, Any]]] = []  # GPUs, CPUs and GiB as fractions
        self.reserved: dict[str, dict[str, Fraction]] = {}  # node-bound pods' requests by node
        self.node_gpus: dict[str, NodeGpus] = {}
        self.pod_groups: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) -> PodGroup
        self.hypernodes: list[dict[str, Any]] = []
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.pods: list[dict[str, Any]] = []  # snapshot fields, plus private keys starting with '_'
        self.budgets: list[dict[str, Any]] = []

    def warn(self, obj: dict[str, Any], path: str, message: str) -> None:
        self.warnings.append(f"{object_name(obj)}: {path}: {message}")

    def add(self, obj: dict[str, Any]) -> None:
        kind = obj.get("kind")
        meta = obj.get("metadata")
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
        handler = {"Node": self._node, "Pod": self._pod, "PodDisruptionBudget": self._budget,
                   "PodGroup": self._pod_group, "HyperNode": self.hypernodes.append, "Namespace": self._namespace}.get(str(kind))
        if handler is None:
            self.summary.skipped[f"{kind} objects"] += 1
            self.warn(obj, "kind", f"'{kind}' is not read by the importer (Node, Pod, PodDisruptionBudget, PodGroup, HyperNode, Namespace); ignored")
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
            "name": meta["name"], "gpus": 0, "cpus": amounts.get("cpu", Fraction(0)),
            "memory_gib": amounts.get("memory", Fraction(0)) / GIB, "labels": labels, "gpu_model": "", "taints": taints,
            "asw": _first_label(labels, self.config.asw_labels), "spine": _first_label(labels, self.config.spine_labels),
            "schedulable": not spec.get("unschedulable", False), "resources": node_resources(self.config, amounts, where),
        }
        if fields["cpus"] <= 0:
            raise KubeError(f"{where}.cpu", "a node needs CPUs to hold pods; got none")
        info, warnings = node_gpus(self.config, labels, amounts, where)
        for path, message in warnings:
            self.warn(obj, path, message)
        fields["gpus"], fields["gpu_model"] = info.devices, info.model
        self.node_gpus[meta["name"]] = info
        self.node_fields.append((obj, fields))

    def _validated(self, obj: dict[str, Any], model: type[BaseModel], fields: dict[str, Any], into: list[Any]) -> None:
        try:
            into.append(model.model_validate(fields))
        except ValidationError as err:
            self.errors += [f"{object_name(obj)}: snapshot field {p}" for p in pydantic_problems(err, model, object_name(obj))]

    # -- budgets -------------------------------------------------------------------------------

    def _budget(self, obj: dict[str, Any]) -> None:
        spec = as_object(obj.get("spec"), "spec")
        selector = k8s.check_selector(spec.get("selector"), "spec.selector")
        if "maxUnavailable" not in spec and "minAvailable" not in spec:
            self.warn(obj, "spec", "neither maxUnavailable nor minAvailable; taken as minAvailable 1")
        k8s.pdb_max_unavailable(spec, 1)  # checks the values now, so errors name the budget
        self.budgets.append({"obj": obj, "selector": selector, "spec": spec,
                             "namespace": obj["metadata"].get("namespace") or "default"})

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

    def _pod(self, obj: dict[str, Any]) -> None:
        from planner.adapters.kubernetes_pods import pod_fields

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
            left = {"gpus": fields["gpus"] - gpus_taken, "cpus": fields["cpus"] - taken.get("cpu", 0),
                    "memory_gib": fields["memory_gib"] - taken.get("memory", Fraction(0)) / GIB}
            short = [f"{k} {float(v):g}" for k, v in left.items() if v < 0 or (k == "cpus" and v <= 0)]
            resources, short_named = less_node_bound(fields["resources"], taken, self.config)
            short += short_named
            if short:
                self.errors.append(f"{object_name(obj)}: status.allocatable: its DaemonSet, mirror and static pods request more "
                                   f"than it has (left: {', '.join(short)})")
                continue
            left = {"gpus": int(left["gpus"]), "cpus": _number(left["cpus"]), "memory_gib": _number(left["memory_gib"]), "resources": resources}
            self._validated(obj, Node, {**fields, **left}, self.nodes)

    def finish(self) -> KubeImport:
        from planner.adapters.kubernetes_pods import (
            LabelIndex, anti_affinity_groups, budgets_to_jobs, check_placements, resolve_gpus, unique_names,
        )

        if not self.node_fields and not self.errors:
            self.errors.append("no Node objects in the input; give the output of kubectl get nodes,pods,pdb -A -o json")
        known = {fields["name"] for _, fields in self.node_fields}
        for name in self.reserved.keys() - known:
            self.errors.append(f"node-bound pods name node '{name}', which has no Node object")
        self._hypernode_switches()
        self._reserve_node_bound(known)
        for fields in self.pods:
            if fields["node"] is not None and fields["node"] not in known:
                self.errors.append(f"{object_name(fields['_obj'])}: spec.nodeName: unknown node '{fields['node']}' (no Node object of that name)")
        if self.errors:
            raise SnapshotError(_capped(self.errors))
        resolve_gpus(self)
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
            raise SnapshotError(_capped(self.errors))
        cluster = Cluster(nodes=self.nodes, pods=pods, jobs=jobs)
        problems = consistency_problems(cluster)
        if problems:
            raise SnapshotError(_capped([f"the objects break a snapshot rule: {p}" for p in problems]))
        s = self.summary
        s.nodes, s.jobs = len(self.nodes), len(jobs)
        s.placed_pods = sum(1 for p in pods if p.node is not None)
        s.pending_pods = len(pods) - s.placed_pods
        return KubeImport(cluster, self.warnings, s)


def _first_label(labels: dict[str, str], keys: list[str]) -> str | None:
    return next((labels[k] for k in keys if labels.get(k)), None)


def _number(amount: Fraction) -> float:
    """A snapshot number: exact when the fraction is an integer, else the nearest float."""
    return float(amount) if amount.denominator != 1 else float(int(amount))


def _capped(problems: list[str]) -> list[str]:
    if len(problems) <= MAX_LISTED:
        return problems
    return [*problems[:MAX_LISTED], f"... and {len(problems) - MAX_LISTED} more problem(s)"]
