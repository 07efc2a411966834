"""GPUs in Kubernetes objects, for ``planner.adapters.kubernetes``: whole devices, shares of one
device, time-slicing replicas and MIG slices, each turned into the snapshot's one measure (a node's
``gpus`` devices of one ``gpu_model``; a pod's ``gpus``, whole or a share below 1 of one device).

Node devices are the largest count any of these gives (a warning when two disagree):

* ``gpu_resources`` (``nvidia.com/gpu``): whole devices. On a node labelled with
  ``time_slicing_label`` (``nvidia.com/gpu.replicas``, set by NVIDIA GPU feature discovery when the
  device plugin shares each GPU by time-slicing) at r > 1, each device is advertised r times: the
  node has allocatable / r devices and a pod asking for k of them holds k / r of a device;
* ``gpu_count_resources`` (``aliyun.com/gpu-count``): resources that only count devices;
* ``gpu_shares``: resources a pod asks for part of a device with, each with its units per device:
  a fixed number (``koordinator.sh/gpu-core``, ``koordinator.sh/gpu-memory-ratio``: 100 per device),
  a node label (``nvidia.com/gpu.shared``, time-slicing with renamed resources: the replicas label),
  or, with neither, the node's allocatable divided by its devices (``aliyun.com/gpu-mem``: GiB per
  device). A pod's share is its request over the units of its node; a pending pod's, over the units
  of the nodes offering the resource (the smallest, with a warning, when they differ: the pod's
  share is then never understated). A pod asking in several ways (gpu-core and gpu-memory-ratio)
  holds the largest of them, as they measure the same device.
* MIG slices (``mig_resource_prefix``: ``nvidia.com/mig-1g.10gb``, the device plugin's mixed
  strategy): a node offering one profile only and no whole GPUs is a node of ``<product>-MIG-<profile>``
  (the model name GPU feature discovery gives under the single strategy) with one device per slice;
  a pod asking for slices of a profile may run on the nodes of that profile's models. A node with
  several profiles, or slices and whole GPUs, is of model ``<product>-MIG-mixed`` with a device per
  slice (and per whole GPU); it is planned per profile, as its ``resources`` hold each profile's
  slices by name (``rules.py`` charges a pod only the slices of its own profile).

A pod whose request is none of a share below 1, whole devices or slices of one profile (1.5 devices
from time-slicing replicas, two MIG profiles, a resource no node offers) is reported as a problem the
caller turns into a lock (placed pod) or leaves the pod out (pending), with a warning.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction

from planner.adapters.kubernetes_config import ImportConfig
from planner.adapters.kubernetes_objects import KubeError

MIG_MIXED = "MIG-mixed"


@dataclass
class NodeGpus:
    """What a node's GPU resources mean."""

    devices: int = 0
    model: str = ""
    replicas: int = 1
    """Time-slicing replicas of each device in ``gpu_resources`` (1: not time-sliced)."""
    units: dict[str, Fraction] = field(default_factory=dict)
    """Units per device of each share resource the node offers."""
    mig_mixed: bool = False
    profiles: tuple[str, ...] = ()
    """The MIG profiles the node offers."""


@dataclass
class PodGpus:
    gpus: Fraction
    gpu_models: list[str] | None = None
    problem: tuple[str, str] | None = None
    """(field path, why) when the request has no snapshot form; ``gpus`` is then the devices it touches."""


REQUESTS = "spec.containers[*].resources.requests"


def gpu_resource_names(cfg: ImportConfig) -> set[str]:
    """Every resource name that is read as GPUs (MIG resources by their prefix, elsewhere)."""
    return {*cfg.gpu_resources, *cfg.gpu_count_resources, *(s.resource for s in cfg.gpu_shares)}


def is_gpu_resource(cfg: ImportConfig, name: str) -> bool:
    return name in gpu_resource_names(cfg) or bool(cfg.mig_resource_prefix) and name.startswith(cfg.mig_resource_prefix)


def node_gpus(cfg: ImportConfig, labels: dict[str, str], amounts: dict[str, Fraction], where: str) -> tuple[NodeGpus, list[tuple[str, str]]]:
    """The node's devices and model; warnings as (field path, message). KubeError when unreadable."""
    info, warnings = NodeGpus(), []
    info.replicas = _label_count(labels, cfg.time_slicing_label) if cfg.time_slicing_label else 1
    counts: dict[str, Fraction] = {}
    whole = sum((amounts.get(r, Fraction(0)) for r in cfg.gpu_resources), Fraction(0))
    if whole:
        counts[" + ".join(cfg.gpu_resources) + (f" / {info.replicas} replicas" if info.replicas > 1 else "")] = whole / info.replicas
    for name in cfg.gpu_count_resources:
        if amounts.get(name):
            counts[name] = amounts[name]
    by_allocatable = []
    for share in cfg.gpu_shares:
        amount = amounts.get(share.resource)
        if not amount:
            continue
        if share.units_per_gpu is not None:
            units = Fraction(share.units_per_gpu)
        elif share.units_per_gpu_label is not None:
            if share.units_per_gpu_label not in labels:
                raise KubeError(
                    f"metadata.labels.{share.units_per_gpu_label}", f"missing: the node offers {share.resource}, whose units per GPU this label gives"
                )
            units = Fraction(_label_count(labels, share.units_per_gpu_label))
        else:
            by_allocatable.append((share.resource, amount))
            continue
        info.units[share.resource] = units
        counts[f"{share.resource} / {units}"] = amount / units
    for what, count in counts.items():
        if count.denominator != 1:
            raise KubeError(f"{where}", f"{what} gives {float(count):g} GPUs; a node has whole GPUs")
    info.devices = int(max(counts.values(), default=0))
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{int(c)} by {what}" for what, c in counts.items())
        warnings.append((where, f"its GPU resources disagree ({listed}); {info.devices} GPUs taken"))
    for resource, amount in by_allocatable:
        if not info.devices:
            raise KubeError(
                f"{where}.{resource}",
                "offered by a node with no device count to divide it by (add the resource counting its GPUs to gpu_count_resources, or give units_per_gpu)",
            )
        info.units[resource] = amount / info.devices
    profiles = {
        name[len(cfg.mig_resource_prefix) :]: amount
        for name, amount in amounts.items()
        if cfg.mig_resource_prefix and name.startswith(cfg.mig_resource_prefix) and amount
    }
    product = labels.get(cfg.gpu_model_label, "")
    info.model = product
    for profile, amount in profiles.items():
        if amount.denominator != 1:
            raise KubeError(f"{where}.{cfg.mig_resource_prefix}{profile}", f"{float(amount):g} MIG slices; a node has whole slices")
    info.profiles = tuple(sorted(profiles))
    if len(profiles) == 1 and not info.devices:
        ((profile, amount),) = profiles.items()
        info.devices, info.model = int(amount), mig_model(product, profile)
    elif profiles:  # planned per profile: the node's resources by name hold each profile's slices
        info.devices += int(sum(profiles.values()))
        info.model, info.mig_mixed = mig_model(product, MIG_MIXED[4:]), True
    return info, warnings


def mig_model(product: str, profile: str) -> str:
    """GPU feature discovery's product name under the single MIG strategy: '<product>-MIG-<profile>'."""
    return f"{product}-MIG-{profile}" if product else f"MIG-{profile}"


def pending_units(nodes: list[NodeGpus]) -> tuple[dict[str, Fraction], dict[str, list[Fraction]]]:
    """Units per device a pending pod's share is measured in, by resource: the nodes' value, or the
    smallest of several (returned too, for a warning)."""
    seen: dict[str, set[Fraction]] = defaultdict(set)
    for info in nodes:
        for resource, units in info.units.items():
            seen[resource].add(units)
    return ({r: min(u) for r, u in seen.items()}, {r: sorted(u) for r, u in seen.items() if len(u) > 1})


def mig_models(nodes: list[NodeGpus], cfg: ImportConfig) -> dict[str, list[str]]:
    """The node models offering each MIG profile (single-profile nodes and nodes of mixed profiles)."""
    found: dict[str, set[str]] = defaultdict(set)
    for info in nodes:
        for profile in info.profiles:
            found[profile].add(info.model)
    return {p: sorted(m) for p, m in found.items()}


def pod_gpus(
    cfg: ImportConfig, requests: dict[str, Fraction], node: NodeGpus | None, units_pending: dict[str, Fraction], models_of: dict[str, list[str]]
) -> PodGpus:
    """A pod's GPUs on ``node`` (None: pending) from its requests."""
    replicas = node.replicas if node is not None else 1
    amounts = [sum((requests.get(r, Fraction(0)) for r in cfg.gpu_resources), Fraction(0)) / replicas]
    for share in cfg.gpu_shares:
        amount = requests.get(share.resource)
        if not amount:
            continue
        units = (node.units if node is not None else units_pending).get(share.resource)
        if units is None and share.units_per_gpu is not None:
            units = Fraction(share.units_per_gpu)
        if units is None:  # a placed pod is taken to hold one device
            return PodGpus(
                Fraction(1),
                problem=(
                    f"{REQUESTS}.{share.resource}",
                    (f"{share.resource} is {'offered by no node' if node is None else 'not offered by its node'}, so its share of a GPU is unknown"),
                ),
            )
        amounts.append(amount / units)
    gpus = max(amounts)
    profiles = {
        name[len(cfg.mig_resource_prefix) :]: amount
        for name, amount in requests.items()
        if cfg.mig_resource_prefix and name.startswith(cfg.mig_resource_prefix) and amount
    }
    models = None
    if profiles:
        slices = sum(profiles.values(), Fraction(0))
        if len(profiles) > 1 or gpus:
            return PodGpus(
                gpus + slices,
                problem=(REQUESTS, f"MIG slices of {', '.join(sorted(profiles))}" + (" and whole GPUs" if gpus else "") + " are not one GPU model"),
            )
        ((profile, _),) = profiles.items()
        gpus, models = slices, models_of.get(profile) or [mig_model("", profile)]
    if not (gpus < 1 or gpus.denominator == 1):
        return PodGpus(
            Fraction(math.ceil(gpus)),
            problem=(REQUESTS, (f"{float(gpus):g} GPUs is neither a share of one GPU nor whole GPUs (time-slicing replicas over several devices)")),
        )
    return PodGpus(gpus, models)


def _label_count(labels: dict[str, str], key: str) -> int:
    """A positive whole number from a node label (1 when the node does not carry the label)."""
    text = labels.get(key)
    if text is None:
        return 1
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise KubeError(f"metadata.labels.{key}", f"'{text}' is not a positive whole number")
    return count


__all__ = ["NodeGpus", "PodGpus", "gpu_resource_names", "is_gpu_resource", "mig_model", "mig_models", "node_gpus", "pending_units", "pod_gpus"]
