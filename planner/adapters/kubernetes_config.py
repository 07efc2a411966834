"""How Kubernetes objects become a snapshot: the import configuration (``ImportConfig``, its YAML
defaults ``DEFAULT_CONFIG``, ``load_config``), the annotation and label keys the importer reads, and
the small helpers every part of the import shares (``object_name``, ``_number``)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.adapters.kubernetes_documents import load_yaml_mapping
from planner.cluster import SnapshotError, pydantic_problems

GIB = 2**30
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
HOSTNAME_KEY = "kubernetes.io/hostname"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
DESCHEDULER_EVICT = "descheduler.alpha.kubernetes.io/evict"


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
    def _one_source(self) -> ShareResource:
        if self.units_per_gpu is not None and self.units_per_gpu_label is not None:
            raise ValueError("give units_per_gpu or units_per_gpu_label, not both")
        return self


def _default_shares() -> list[ShareResource]:
    return [
        ShareResource(resource="nvidia.com/gpu.shared", units_per_gpu_label="nvidia.com/gpu.replicas"),
        ShareResource(resource="koordinator.sh/gpu-core", units_per_gpu=100),
        ShareResource(resource="koordinator.sh/gpu-memory-ratio", units_per_gpu=100),
        ShareResource(resource="koordinator.sh/gpu-memory"),
        ShareResource(resource="aliyun.com/gpu-mem"),
    ]


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
    asw_labels: list[str] = Field(
        default_factory=lambda: ["network.topology.nvidia.com/leaf", "fabric.topograph.run/tier-0", "cloud.google.com/gce-topology-subblock"]
    )
    spine_labels: list[str] = Field(
        default_factory=lambda: ["network.topology.nvidia.com/spine", "fabric.topograph.run/tier-1", "cloud.google.com/gce-topology-block"]
    )
    hypernode_tiers: HyperNodeTiers = Field(default_factory=HyperNodeTiers)
    priority: PriorityConfig = Field(default_factory=PriorityConfig)
    locked_annotation: str = "planner.io/locked"
    node_bound_pods: Literal["reserve", "locked"] = "reserve"
    evict_local_storage: bool = False
    evict_system_critical: bool = False
    gang_keys: list[str] = Field(
        default_factory=lambda: [
            "scheduling.x-k8s.io/pod-group",
            "pod-group.scheduling.sigs.k8s.io",
            "scheduling.k8s.io/group-name",
            "jobset.sigs.k8s.io/jobset-name",
            "leaderworkerset.sigs.k8s.io/group-key",
            "kueue.x-k8s.io/pod-group-name",
        ]
    )


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


def object_name(obj: dict[str, Any]) -> str:
    """'Pod ml/train-0', 'Node gpu-3': how messages name an object."""
    meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else "(unnamed)"
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    return f"{obj.get('kind')} {namespace + '/' if namespace else ''}{name}"


def _number(amount: Fraction) -> float:
    """A snapshot number: exact when the fraction is an integer, else the nearest float."""
    return float(amount) if amount.denominator != 1 else float(int(amount))
