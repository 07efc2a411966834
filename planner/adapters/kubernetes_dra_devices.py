"""DRA objects read from a List (``resource.k8s.io/v1``): DeviceClasses with their compiled selectors, and
the devices each node's ResourceSlices publish, for ``kubernetes_dra``.

Only node-local slices are read (``spec.nodeName``); a pool's slices of older generations are left out
as kube-scheduler leaves them out. Devices that consume shared counters (partitionable devices) or
allow multiple allocations are published in the snapshot but serve no request: the planner does not
model them, and a request that only they could serve is a claim the importer cannot model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from planner.adapters.kubernetes_dra_cel import Selector, device_variable
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object, parse_quantity

DRA_KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate")
MAX_SELECTORS = 32
"""Selectors of one class or request at most (Kubernetes' limit)."""


@dataclass
class NodeDevice:
    """One published device: the snapshot's fields and the CEL variable its selectors see."""

    node: str
    fields: dict[str, Any]
    variable: dict[str, Any]
    modelled: bool
    serves: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.fields['driver']}/{self.fields['pool']}/{self.fields['name']}"


@dataclass
class DeviceClass:
    name: str
    selectors: list[Selector]
    problem: str | None = None


@dataclass
class DraObjects:
    """The DRA objects of one import, by kind."""

    classes: dict[str, dict[str, Any]] = field(default_factory=dict)
    slices: list[dict[str, Any]] = field(default_factory=list)
    claims: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    templates: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = (str(meta.get("namespace") or "default"), str(meta["name"]))
        if obj["kind"] == "DeviceClass":
            self.classes[key[1]] = obj
        elif obj["kind"] == "ResourceSlice":
            self.slices.append(obj)
        elif obj["kind"] == "ResourceClaim":
            self.claims[key] = obj
        else:
            self.templates[key] = obj

    def any(self) -> bool:
        return bool(self.classes or self.slices or self.claims or self.templates)


def compile_selectors(selectors: Any, path: str) -> list[Selector]:
    """The CEL selectors of a class or request (``selectors[].cel.expression``)."""
    items = as_list(selectors, path)
    if len(items) > MAX_SELECTORS:
        raise KubeError(path, f"{len(items)} selectors; Kubernetes allows {MAX_SELECTORS}")
    out = []
    for i, item in enumerate(items):
        cel_part = as_object(as_object(item, f"{path}[{i}]").get("cel"), f"{path}[{i}].cel")
        expression = cel_part.get("expression")
        found = _compiled(expression) if isinstance(expression, str) else None
        if not isinstance(found, Selector):
            Selector(expression, f"{path}[{i}].cel.expression")  # raises, naming this place
        assert isinstance(found, Selector)  # the line above raised otherwise
        out.append(found)
    return out


@functools.lru_cache(maxsize=4096)
def _compiled(expression: str) -> Selector | None:
    """One compiled selector per distinct expression (pods of one template repeat it); None when refused."""
    try:
        return Selector(expression, "")
    except KubeError:
        return None


def device_classes(objects: DraObjects) -> dict[str, DeviceClass]:
    """Every DeviceClass with its compiled selectors, or the problem that keeps it from being modelled."""
    found = {}
    for name, obj in sorted(objects.classes.items()):
        try:
            spec = as_object(obj.get("spec"), "spec")
            found[name] = DeviceClass(name, compile_selectors(spec.get("selectors"), "spec.selectors"))
        except KubeError as err:
            found[name] = DeviceClass(name, [], f"DeviceClass {name}: {err}")
    return found


def _attribute(value: Any, path: str) -> bool | int | str:
    value = as_object(value, path)
    for key in ("bool", "int", "string", "version"):
        if key in value:
            v = value[key]
            ok = isinstance(v, bool) if key == "bool" else isinstance(v, int) and not isinstance(v, bool) if key == "int" else isinstance(v, str)
            if not ok:
                raise KubeError(f"{path}.{key}", f"must be a {key}, got {v!r:.60}")
            return v
    raise KubeError(path, "an attribute needs one of bool, int, string, version")


def node_devices(objects: DraObjects, nodes: set[str], warn: Any) -> dict[str, list[NodeDevice]]:
    """The devices each node's slices publish (newest generation of each pool); ``warn(obj, path, msg)``."""
    newest: dict[tuple[str, str], int] = {}
    for obj in objects.slices:
        spec = as_object(obj.get("spec"), "spec")
        pool = as_object(spec.get("pool"), "spec.pool")
        generation = pool.get("generation", 0)
        key = (str(spec.get("driver")), str(pool.get("name")))
        newest[key] = max(newest.get(key, 0), generation if isinstance(generation, int) else 0)
    by_node: dict[str, list[NodeDevice]] = {}
    seen: set[str] = set()
    for obj in objects.slices:
        spec = as_object(obj.get("spec"), "spec")
        pool = as_object(spec.get("pool"), "spec.pool")
        driver, pool_name, node = spec.get("driver"), pool.get("name"), spec.get("nodeName")
        if not isinstance(driver, str) or not driver or not isinstance(pool_name, str) or not pool_name:
            raise KubeError("spec", "a ResourceSlice needs spec.driver and spec.pool.name")
        if newest[(driver, pool_name)] != pool.get("generation", 0):
            continue
        if not isinstance(node, str) or not node:
            warn(obj, "spec.nodeName", "not node-local (allNodes, nodeSelector or per-device selection); its devices are not modelled")
            continue
        if node not in nodes:
            warn(obj, "spec.nodeName", f"unknown node '{node}' (no Node object of that name); its devices are left out")
            continue
        if spec.get("sharedCounters"):
            warn(obj, "spec.sharedCounters", "partitionable devices (shared counters) are not modelled; devices consuming them serve no request")
        for i, dev in enumerate(as_list(spec.get("devices"), "spec.devices")):
            where = f"spec.devices[{i}]"
            dev = as_object(dev, where)
            name = dev.get("name")
            if not isinstance(name, str) or not name:
                raise KubeError(f"{where}.name", "a device needs a name")
            attrs = {str(k): _attribute(v, f"{where}.attributes.{k}") for k, v in as_object(dev.get("attributes"), f"{where}.attributes").items()}
            caps: dict[str, Fraction] = {}
            texts: dict[str, str] = {}
            for k, v in as_object(dev.get("capacity"), f"{where}.capacity").items():
                value = as_object(v, f"{where}.capacity.{k}").get("value")
                caps[str(k)] = parse_quantity(value, f"{where}.capacity.{k}.value")
                texts[str(k)] = str(value)
            multiple = dev.get("allowMultipleAllocations") is True
            device = NodeDevice(
                node,
                {"driver": driver, "pool": pool_name, "name": name, "attributes": attrs, "capacity": texts},
                device_variable(driver, name, attrs, caps, multiple),
                modelled=not multiple and not dev.get("consumesCounters"),
            )
            if device.id in seen:
                raise KubeError(f"{where}.name", f"device '{device.id}' is published twice")
            seen.add(device.id)
            by_node.setdefault(node, []).append(device)
    return by_node
