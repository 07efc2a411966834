"""Snapshots as Kubernetes objects: the ``kubectl get nodes,pods,pdb -A -o json`` List that
``planner import kubernetes`` reads back as the same snapshot (issue 13, item 4).

``export_kubernetes(cluster, config)`` writes the objects the importer, run with the same
``config`` (default: the importer's defaults), turns back into ``cluster``:

* Nodes: ``status.allocatable`` (and ``capacity``) ``cpu``, ``memory`` and GPUs as the first of
  ``gpu_resources``, exact decimal quantities; the labels, plus ``kubernetes.io/hostname``, the GPU
  model on ``gpu_model_label`` and ``asw`` / ``spine`` on the first of ``asw_labels`` /
  ``spine_labels``; taints; ``schedulable: false`` as ``spec.unschedulable`` (cordoned; the
  ``node.kubernetes.io/unschedulable`` taint the node controller adds is left out, or it would come
  back as a taint).
* Pods: namespace, ``spec.nodeName`` and phase Running when placed, Pending otherwise; one container
  requesting the CPUs, memory and GPUs (GPUs as request and limit, as extended resources need);
  ``spec.priority`` = ``priority_value``; nodeSelector, tolerations; the required node affinity,
  with ``gpu_models`` as one more expression (``gpu_model_label In gpu_models``) ANDed into every
  term; ``anti_affinity`` groups as one label per group (``anti-affinity.planner.io/<group>``) and a
  required hostname anti-affinity term per group selecting it; locked pods annotated
  ``locked_annotation: "true"``.
* Jobs: a job whose pods all name it becomes a controller (``app.kubernetes.io/instance`` labels its
  pods) or a gang. A job whose pods start one by one (``min_available`` 1, no topology) is a
  StatefulSet when its pods are HP and several, else a batch Job; a ``topology`` job starting whole is
  a JobSet gang (the JobSet gang label, pods owned by its child batch Job, Kueue's
  ``podset-required-topology`` / ``-preferred-`` annotation naming the asw or spine label); any other
  job of several pods is a PodGroup gang (the ``scheduling.x-k8s.io/pod-group`` label and a
  ``PodGroup`` whose ``minMember`` is ``min_available``, or the job's pods when it starts whole). A job
  name the importer wrote (``<namespace>/<Kind>/<name>``, ``<namespace>/<gang key>=<value>``)
  becomes that controller or gang again (refused by name when the importer would read its
  ``min_available`` otherwise). ``disruption.max_unavailable`` becomes a PodDisruptionBudget selecting
  the job's pods, written so that the disruption controller allows that many disruptions with the
  job's pending pods counted as it counts them (``maxUnavailable`` for a controller with a scale, an
  integer ``minAvailable`` for a batch Job or a gang, which have none).
  A pod of no job has no owner and kube-descheduler's ``descheduler.alpha.kubernetes.io/evict``
  annotation (so it stays movable unless locked).
* MIG: a node whose model is its product label's value plus ``-MIG-<profile>`` offers that many
  ``<mig_resource_prefix><profile>`` slices; a pod allowed exactly that profile's models asks for them.
* ``time_sliced`` (node -> replicas r), or a node labelled ``time_slicing_label`` r: the node is
  time-sliced (each GPU advertised r times in the first of ``gpu_resources``) and its pods ask for r
  times their GPUs.
* GPU shares: otherwise, when a pod holds a share, GPU nodes also offer the first of ``gpu_shares`` with a fixed
  ``units_per_gpu`` (``koordinator.sh/gpu-core``, 100 per GPU) and share pods request it.
* ``daemonsets``: DaemonSet pods added on every node (GPU nodes only, if so marked), their requests
  added to the node's allocatable; the importer takes them off again, so the snapshot is unchanged.

What comes back renamed or normalised (``KubeExport.job_names`` maps the jobs): jobs are named as the
importer names controllers; anti-affinity groups after their selectors (the same pods share a group);
``gpu_models`` is a node-affinity expression; a pod without a namespace is in ``default``; an LP pod
without ``priority_value`` gets ``priority.lp_below - 1`` (or the first ``lp_classes`` name and no
priority, when the config has one); a budget above its job's running pods is clipped to them (the
disruption controller's reading); jobs come back in the order of their first pod.

Not carried (each listed in ``KubeExport.dropped`` with how many objects held it): checkpoint and
start times, ``gpu_indexes``, job ``numa``, node ``numa``, ``power`` and
``eviction_count``, ``time_s``, locks on pending pods (the importer locks placed pods only) and jobs
without pods. Refused (``SnapshotError`` naming the field): a GPU share that is not a whole number of the share
resource's units, standby pods (a standby reservation has no Kubernetes object the importer maps),
names that are not valid Kubernetes names, a job over several namespaces, a priority the config
would read as the other class, and node labels that contradict the fields the importer derives
from them.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from planner.adapters.kubernetes_config import DESCHEDULER_EVICT, GIB, HOSTNAME_KEY, SYSTEM_CRITICAL_PRIORITY, ImportConfig
from planner.adapters.kubernetes_export_jobs import Controller, budget, controller, pod_group
from planner.adapters.kubernetes_quantities import cpu_quantity, exact, label_name, memory_quantity, name_ok, object_uid
from planner.cluster import POD_COUNT, Cluster, Node, Pod, SnapshotError

ANTI_PREFIX = "anti-affinity.planner.io/"
API_VERSIONS = {
    "Job": "batch/v1",
    "StatefulSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Deployment": "apps/v1",
    "DaemonSet": "apps/v1",
    "JobSet": "jobset.x-k8s.io/v1alpha2",
}


@dataclass(frozen=True)
class DaemonSet:
    """A DaemonSet whose pod runs on every node (``gpu_nodes_only``: on nodes with GPUs)."""

    name: str
    namespace: str
    cpus: float
    memory_gib: float
    gpu_nodes_only: bool = False


@dataclass
class KubeExport:
    document: dict[str, Any]
    """The ``kind: List`` of Nodes, Pods and PodDisruptionBudgets."""
    job_names: dict[str, str]
    """Snapshot job -> the name the importer gives it."""
    dropped: list[str] = field(default_factory=list)
    """What the snapshot holds that the objects do not carry, one line per field."""

    def json(self) -> str:
        return json.dumps(self.document, indent=1) + "\n"


# ----------------------------------------------------------------------------------------------
# The export
# ----------------------------------------------------------------------------------------------


def export_kubernetes(
    cluster: Cluster, config: ImportConfig | None = None, daemonsets: Sequence[DaemonSet] = (), time_sliced: Mapping[str, int] | None = None
) -> KubeExport:
    """The Kubernetes List ``planner import kubernetes`` (with ``config``) reads back as ``cluster``
    (module docstring: what is renamed, dropped or refused)."""
    return _Export(cluster, config or ImportConfig(), daemonsets, dict(time_sliced or {})).run()


class _Export:
    def __init__(self, cluster: Cluster, config: ImportConfig, daemonsets: Sequence[DaemonSet], time_sliced: dict[str, int]):
        self.cluster, self.config, self.daemonsets = cluster, config, list(daemonsets)
        self.errors: list[str] = []
        self.replicas = dict(time_sliced)
        unknown = sorted(set(time_sliced) - {n.name for n in cluster.nodes})
        if unknown:
            self.errors.append(f"time_sliced: unknown node(s) {', '.join(unknown)}")
        if time_sliced and not config.time_slicing_label:
            self.errors.append("config.time_slicing_label: empty; time-sliced nodes need it")
        for i, node in enumerate(cluster.nodes):  # a node labelled as time-sliced is one
            label = node.labels.get(config.time_slicing_label) if config.time_slicing_label else None
            if label is None:
                continue
            count = int(label) if label.isdigit() else 0
            if count < 1 or time_sliced.get(node.name, count) != count:
                self.errors.append(
                    f"nodes[{i}].labels.{config.time_slicing_label}: '{label}' is read as time-slicing replicas; "
                    + ("it must be a positive whole number" if count < 1 else f"time_sliced gives {time_sliced[node.name]}")
                )
            self.replicas.setdefault(node.name, max(count, 1))
        self.mig_profile: dict[str, str] = {}  # node -> its MIG profile, for nodes the importer reads as MIG slices
        self.mig_models: dict[str, list[str]] = defaultdict(list)  # profile -> its node models
        for node in cluster.nodes:
            product = node.labels.get(config.gpu_model_label, "") if config.mig_resource_prefix else ""
            if product and node.gpu_model.startswith(f"{product}-MIG-"):
                self.mig_profile[node.name] = node.gpu_model[len(product) + 5 :]
                self.mig_models[self.mig_profile[node.name]].append(node.gpu_model)
        self.dropped: Counter[str] = Counter()
        dra = next((f"nodes[{i}].devices" for i, n in enumerate(cluster.nodes) if n.devices), None) or next(
            (f"pods[{i}].device_claims" for i, p in enumerate(cluster.pods) if p.device_claims), None
        )
        if dra:  # DRA objects are not written yet: their resources by name are the planner's own
            self.errors.append(
                f"{dra}: DRA devices and claims are not exported (ResourceSlices and ResourceClaims are not written yet); export a snapshot without them"
            )
        self.asked = sorted({name for pod in cluster.pods for name in pod.requests})
        """Every resource some pod requests by name (a node that lists none cannot be written then)."""
        self.gpu_resource = config.gpu_resources[0] if config.gpu_resources else ""
        if not self.gpu_resource:
            self.errors.append("config.gpu_resources: empty; the export needs a resource to write GPUs as")
        self.share = None  # (resource, units per GPU) shares are written in, when the cluster has any
        if any(0 < p.gpus < 1 and self.replicas.get(p.node or "", 1) == 1 for p in cluster.pods):
            self.share = next(((s.resource, s.units_per_gpu) for s in config.gpu_shares if s.units_per_gpu is not None), None)
            if self.share is None:
                self.errors.append("config.gpu_shares: no resource with a fixed units_per_gpu to write the pods' GPU shares in")

    def run(self) -> KubeExport:
        c = self.cluster
        pods_of: dict[str, list[int]] = defaultdict(list)
        for i, pod in enumerate(c.pods):
            if pod.job is not None:
                pods_of[pod.job].append(i)
        controllers = {
            job.name: controller(self.config, self.errors, j, job, [c.pods[i] for i in pods_of[job.name]])
            for j, job in enumerate(c.jobs)
            if pods_of.get(job.name)
        }
        first: dict[str, str] = {}
        for name, ctl in controllers.items():
            if first.setdefault(ctl.imported_as, name) != name:
                self.errors.append(f"jobs: '{first[ctl.imported_as]}' and '{name}' would both read back as job '{ctl.imported_as}'")
        nodes = [self._node(i, node) for i, node in enumerate(c.nodes)]
        groups = self._anti_affinity_groups()
        pods = [self._pod(i, pod, controllers.get(pod.job) if pod.job else None, groups) for i, pod in enumerate(c.pods)]
        daemon_pods = [self._daemon_pod(ds, node) for node in c.nodes for ds in self.daemonsets if node.gpus or not ds.gpu_nodes_only]
        budgets = [
            budget(job, controllers[job.name], [c.pods[i] for i in pods_of[job.name]])
            for job in c.jobs
            if job.disruption is not None and job.name in controllers
        ]
        budgets += [pod_group(ctl, self.errors) for ctl in controllers.values() if ctl.min_member is not None]
        self._count_dropped(pods_of)
        if self.errors:
            raise SnapshotError(self.errors)  # listed up to bounded_input.MAX_LISTED, the rest counted
        document = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [*nodes, *daemon_pods, *pods, *budgets]}
        dropped = [f"{what}: not carried (held by {count})" for what, count in sorted(self.dropped.items())]
        return KubeExport(document, {name: ctl.imported_as for name, ctl in controllers.items()}, dropped)

    # -- nodes ---------------------------------------------------------------------------------

    def _node(self, i: int, node: Node) -> dict[str, Any]:
        cfg = self.config
        where = f"nodes[{i}]"
        name_ok(node.name, f"{where}.name", self.errors)
        derived = {HOSTNAME_KEY: node.name}
        profile = self.mig_profile.get(node.name)
        if profile is not None:  # the product label names the whole GPU; the slices are the model
            derived[cfg.gpu_model_label] = node.labels[cfg.gpu_model_label]
        elif node.gpu_model:
            derived[cfg.gpu_model_label] = node.gpu_model
        for value, keys, what in ((node.asw, cfg.asw_labels, "asw"), (node.spine, cfg.spine_labels, "spine")):
            if value is not None:
                if not keys:
                    self.errors.append(f"{where}.{what}: config.{what}_labels is empty; the {what} cannot be written")
                    continue
                derived[keys[0]] = value
            else:
                for key in keys:
                    if node.labels.get(key):
                        self.errors.append(f"{where}.labels.{key}: the importer reads this label as the node's {what}, which is null")
        for key, value in derived.items():
            if key in node.labels and node.labels[key] != value:
                self.errors.append(f"{where}.labels.{key}: '{node.labels[key]}' contradicts the node's own field ('{value}')")
        if not node.gpu_model and node.labels.get(cfg.gpu_model_label):
            self.errors.append(f"{where}.labels.{cfg.gpu_model_label}: the importer reads this label as gpu_model, which is empty")
        cpus, memory, gpus = exact(node.cpus), exact(node.memory_gib) * GIB, Fraction(node.gpus)
        for ds in self.daemonsets:
            if node.gpus or not ds.gpu_nodes_only:
                cpus, memory = cpus + exact(ds.cpus), memory + exact(ds.memory_gib) * GIB
        allocatable = {"cpu": cpu_quantity(cpus), "memory": memory_quantity(memory), "pods": "110"}
        daemons = sum(1 for ds in self.daemonsets if node.gpus or not ds.gpu_nodes_only)
        replicas = self.replicas.get(node.name, 1)
        if replicas > 1:
            derived[cfg.time_slicing_label] = str(replicas)
        if gpus and profile is not None:
            allocatable[cfg.mig_resource_prefix + profile] = str(node.gpus)
        elif gpus:
            allocatable[self.gpu_resource] = str(node.gpus * replicas)
            if self.share is not None and replicas == 1:
                allocatable[self.share[0]] = str(node.gpus * self.share[1])
        self._named_allocatable(where, node, allocatable, daemons)
        spec: dict[str, Any] = {}
        if node.taints:
            spec["taints"] = [{k: v for k, v in t.model_dump().items() if v != ""} for t in node.taints]
        if not node.schedulable:
            spec["unschedulable"] = True
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": node.name, "uid": object_uid("node", node.name), "labels": {**node.labels, **derived}},
            "spec": spec,
            "status": {"capacity": dict(allocatable), "allocatable": allocatable},
        }

    def _named_allocatable(self, where: str, node: Node, allocatable: dict[str, str], daemons: int) -> None:
        """The node's resources by name beside its GPUs (the GPU resources written above must agree)."""
        if node.resources is None:
            if self.asked:
                self.errors.append(
                    f"{where}.resources: not listed, but pods request {', '.join(self.asked)}; a Kubernetes node states its "
                    "allocatable of every resource: give the node's resources"
                )
            return
        for name, amount in sorted(node.resources.items()):
            written = str(amount + daemons) if name == POD_COUNT else str(amount)
            if name in allocatable and name != POD_COUNT and allocatable[name] != written:
                self.errors.append(f"{where}.resources.{name}: {amount}, but the node's GPUs are written as {allocatable[name]} of it")
                continue
            allocatable[name] = written

    def _daemon_pod(self, ds: DaemonSet, node: Node) -> dict[str, Any]:
        name = f"{ds.name}-{node.name}"
        owner = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": ds.name,
            "uid": object_uid("DaemonSet", ds.namespace, ds.name),
            "controller": True,
            "blockOwnerDeletion": True,
        }
        requests = {"cpu": cpu_quantity(exact(ds.cpus)), "memory": memory_quantity(exact(ds.memory_gib) * GIB)}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ds.namespace,
                "uid": object_uid("pod", ds.namespace, name),
                "labels": {"app.kubernetes.io/name": ds.name},
                "ownerReferences": [owner],
            },
            "spec": {
                "nodeName": node.name,
                "priorityClassName": "system-node-critical",
                "priority": 2000001000,
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": ds.name, "image": f"registry.example/{ds.name}:1", "resources": {"requests": requests}}],
            },
            "status": {"phase": "Running"},
        }

    # -- jobs ----------------------------------------------------------------------------------

    # -- pods ----------------------------------------------------------------------------------

    def _anti_affinity_groups(self) -> dict[str, tuple[str, list[str] | None]]:
        """Each group's label key, and the namespaces its terms list (None: the pods' own one)."""
        namespaces: dict[str, set[str]] = defaultdict(set)
        for pod in self.cluster.pods:
            for group in pod.anti_affinity:
                namespaces[group].add(pod.namespace or "default")
        keys: dict[str, tuple[str, list[str] | None]] = {}
        used: set[str] = set()
        for group in sorted(namespaces):
            key = ANTI_PREFIX + label_name(group)
            if key in used:
                key = ANTI_PREFIX + label_name(f"{group}\x00")
            used.add(key)
            keys[group] = (key, sorted(namespaces[group]) if len(namespaces[group]) > 1 else None)
        return keys

    def _pod(self, i: int, pod: Pod, ctl: Controller | None, groups: dict[str, tuple[str, list[str] | None]]) -> dict[str, Any]:
        cfg = self.config
        where = f"pods[{i}]"
        namespace = pod.namespace or "default"
        name = pod.name[len(namespace) + 1 :] if pod.name.startswith(f"{namespace}/") else pod.name
        name_ok(name, f"{where}.name", self.errors)
        if pod.standby:
            self.errors.append(f"{where}.standby: a standby pod (it lends its GPUs, keeps a reservation) has no Kubernetes form")
        labels: dict[str, str] = dict(ctl.labels) if ctl else {}
        annotations: dict[str, str] = dict(ctl.annotations) if ctl else {}
        for group in pod.anti_affinity:
            labels[groups[group][0]] = "true"
        if pod.locked:
            annotations[cfg.locked_annotation] = "true"
        spec: dict[str, Any] = {}
        priority = self._priority(where, pod, spec)
        if not pod.locked and (ctl is None or (priority is not None and priority >= SYSTEM_CRITICAL_PRIORITY and not cfg.evict_system_critical)):
            annotations[DESCHEDULER_EVICT] = "true"  # no owner / system-critical: kube-descheduler would keep it
        requests = {"cpu": cpu_quantity(exact(pod.cpus)), "memory": memory_quantity(exact(pod.memory_gib) * GIB)}
        container: dict[str, Any] = {"name": "main", "image": "registry.example/workload:1", "resources": {"requests": requests}}
        replicas = self.replicas.get(pod.node, 1) if pod.node is not None else 1
        profile = self._mig_request(pod)
        if profile is not None:
            resource = cfg.mig_resource_prefix + profile
            requests[resource] = str(int(pod.gpus))
            container["resources"]["limits"] = {resource: str(int(pod.gpus))}
        elif replicas > 1 and pod.gpus:
            amount = exact(pod.gpus) * replicas
            if amount.denominator != 1:
                self.errors.append(
                    f"{where}.gpus: {pod.gpus:g} GPU is not a whole number of the {replicas} time-slicing replicas of each GPU of node '{pod.node}'"
                )
            requests[self.gpu_resource] = str(round(amount))
            container["resources"]["limits"] = {self.gpu_resource: str(round(amount))}
        elif pod.gpus >= 1:
            requests[self.gpu_resource] = str(int(pod.gpus))
            container["resources"]["limits"] = {self.gpu_resource: str(int(pod.gpus))}
        elif pod.gpus > 0 and self.share is not None:
            resource, units = self.share
            amount = exact(pod.gpus) * units
            if amount.denominator != 1:
                self.errors.append(f"{where}.gpus: a share of {pod.gpus:g} GPU is not a whole number of {resource} ({units} per GPU)")
            requests[resource] = str(round(amount))
            container["resources"]["limits"] = {resource: str(round(amount))}
        for resource, quantity in sorted(pod.requests.items()):
            if resource in requests and requests[resource] != str(quantity):
                self.errors.append(f"{where}.requests.{resource}: {quantity}, but the pod's GPUs are written as {requests[resource]} of it")
            requests[resource] = str(quantity)
        if pod.host_ports:
            container["ports"] = [
                {"containerPort": h.port, "hostPort": h.port, "protocol": h.protocol, **({"hostIP": h.host_ip} if h.host_ip else {})} for h in pod.host_ports
            ]
        spec["containers"] = [container]
        if pod.node is not None:
            spec["nodeName"] = pod.node
        if pod.node_selector:
            spec["nodeSelector"] = dict(pod.node_selector)
        if pod.tolerations:
            spec["tolerations"] = [{k: v for k, v in t.model_dump().items() if v != ""} for t in pod.tolerations]
        affinity = self._affinity(pod, namespace, groups)
        if affinity:
            spec["affinity"] = affinity
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": pod.uid or object_uid("pod", namespace, name)}
        if labels:
            meta["labels"] = labels
        if annotations:
            meta["annotations"] = annotations
        if ctl is not None:
            meta["ownerReferences"] = [
                {
                    "apiVersion": API_VERSIONS.get(ctl.kind, "v1"),
                    "kind": ctl.kind,
                    "name": ctl.name,
                    "uid": object_uid(ctl.kind, namespace, ctl.name),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Running" if pod.node is not None else "Pending"}}

    def _mig_request(self, pod: Pod) -> str | None:
        """The MIG profile a pod asks slices of: whole GPUs allowed exactly the models of one profile."""
        if pod.gpus < 1 or not float(pod.gpus).is_integer():
            return None
        for profile, models in self.mig_models.items():
            if sorted(set(pod.gpu_models)) == sorted(set(models)):
                return profile
        return None

    def _priority(self, where: str, pod: Pod, spec: dict[str, Any]) -> int | None:
        """Writes ``spec.priority`` (and the LP class) so the config reads the pod's class back."""
        rule = self.config.priority
        value = pod.priority_value
        if value is None and pod.priority == "LP":
            if rule.lp_classes:
                spec["priorityClassName"] = rule.lp_classes[0]
                return None
            value = rule.lp_below - 1
        if value is None:
            return None
        spec["priority"] = value
        below = value < rule.lp_below
        if pod.priority == "LP" and not below:
            if rule.lp_classes:
                spec["priorityClassName"] = rule.lp_classes[0]
            else:
                self.errors.append(f"{where}.priority_value: an LP pod of priority {value} reads back as HP (priority.lp_below {rule.lp_below}, no lp_classes)")
        if pod.priority == "HP" and below:
            self.errors.append(f"{where}.priority_value: an HP pod of priority {value} reads back as LP (priority.lp_below {rule.lp_below})")
        return value

    def _affinity(self, pod: Pod, namespace: str, groups: dict[str, tuple[str, list[str] | None]]) -> dict[str, Any]:
        affinity: dict[str, Any] = {}
        terms = [
            [{"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})} for r in term] for term in pod.node_affinity or [[]]
        ]
        if pod.gpu_models and self._mig_request(pod) is None:
            models = sorted(m for m in set(pod.gpu_models) if m)
            label = self.config.gpu_model_label
            alternatives = ([[{"key": label, "operator": "In", "values": models}]] if models else []) + (
                [[{"key": label, "operator": "DoesNotExist"}]] if "" in pod.gpu_models else []
            )
            terms = [term + extra for term in terms for extra in alternatives]
        if terms != [[]]:
            affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": term} for term in terms]}}
        anti = []
        for group in pod.anti_affinity:
            key, spaces = groups[group]
            term: dict[str, Any] = {"topologyKey": HOSTNAME_KEY, "labelSelector": {"matchLabels": {key: "true"}}}
            if spaces is not None:
                term["namespaces"] = spaces
            anti.append(term)
        if anti:
            affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
        return affinity

    # -- what is not carried -------------------------------------------------------------------

    def _count_dropped(self, pods_of: dict[str, list[int]]) -> None:
        c, d = self.cluster, self.dropped
        if c.time_s:
            d["time_s"] += 1
        for node in c.nodes:
            for name in ("numa", "power"):
                if getattr(node, name) is not None:
                    d[f"nodes[*].{name}"] += 1
            if node.eviction_count:
                d["nodes[*].eviction_count"] += 1
        for pod in c.pods:
            for name in ("checkpoint_s", "started_s", "checkpoint_interval_s", "gpu_indexes"):
                if getattr(pod, name) is not None:
                    d[f"pods[*].{name}"] += 1
            if pod.locked and pod.node is None:
                d["pods[*].locked (pending: the importer locks placed pods only)"] += 1
        for job in c.jobs:
            if job.numa is not None:
                d["jobs[*].numa"] += 1
            if not pods_of.get(job.name):
                d["jobs without pods"] += 1


__all__ = ["DaemonSet", "KubeExport", "cpu_quantity", "exact", "export_kubernetes", "memory_quantity"]
