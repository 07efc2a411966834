"""Dynamic Resource Allocation in a kubectl List (``resource.k8s.io/v1``): each pod's ``spec.resourceClaims``
resolved to ResourceClaims (shared) or ResourceClaimTemplates (one claim per pod), each request's
selectors (its DeviceClass's and its own) evaluated once on every device the nodes' ResourceSlices
publish, and the result written into the snapshot as ``rules/dra.py`` describes: the nodes' ``devices``
and DRA ``resources``, the pods' ``device_claims`` and DRA ``requests``.

A claim the importer cannot model locks its placed pod (a pending pod is left out) with a warning naming
the reason: a DeviceClass or template missing, a CEL function outside what is evaluated, a selector
failing on a device, admin access, ``firstAvailable`` with several alternatives, ``distinctAttribute``,
a ``matchAttribute`` that the devices do not satisfy on every node, ``All`` over kinds of different sizes,
a request choosing between kinds of device on one node, an allocation naming a device no slice of the
pod's node publishes, a placed pod whose claim is not allocated. A claim several pods share, or a
named claim holding devices, keeps its pods where they are (a replacement needs a new claim). When the
List has pods with claims and none of them can be modelled, the import fails (exit 2).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from planner.adapters.kubernetes_dra_cel import Selector, device_context
from planner.adapters.kubernetes_dra_claims import PodClaims, Request, allocations, write_dra
from planner.adapters.kubernetes_dra_devices import DeviceClass, NodeDevice, compile_selectors, device_classes, node_devices
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object
from planner.adapters.kubernetes_run import ImportRun
from planner.rules import DRA_PREFIX

MAX_EVALUATIONS = 5_000_000
"""Selector evaluations (distinct selectors times devices) one import may make: about a minute; 10,000
nodes of 8 devices under 60 distinct selectors need 4.8 million."""


def _signature(cls: DeviceClass, selectors: list[str]) -> str:
    digest = hashlib.sha256(json.dumps([cls.name, [s.expression for s in cls.selectors], selectors]).encode()).hexdigest()[:10]
    return f"{DRA_PREFIX}sig-{digest}"


def _kind_name(serves: frozenset[str]) -> str:
    return f"{DRA_PREFIX}kind-{hashlib.sha256(json.dumps(sorted(serves)).encode()).hexdigest()[:10]}"


def resolve_dra(run: ImportRun) -> None:
    """Devices onto the nodes' fields and claims onto the pods' (before the nodes are built)."""
    objects = run.dra
    claimed = [f for f in run.pods if as_list(as_object(f["_obj"].get("spec"), "spec").get("resourceClaims"), "spec.resourceClaims")]
    if not claimed and not objects.any():
        return
    known = {f["name"] for _, f in run.node_fields}
    devices = node_devices(objects, known, run.warn)
    classes = device_classes(objects)
    users: dict[str, list[str]] = {}
    pods = [_pod_claims(run, f, classes, users) for f in claimed]
    selectors = {}
    for pod in pods:
        for request in pod.requests:
            cls = classes[request.device_class]
            request.signature = _signature(cls, request.selectors)
            selectors[request.signature] = (cls, request)
    failed = _evaluate(devices, selectors)
    kinds = _kinds(devices)
    holders = allocations(run, pods, devices, failed, users)
    charged = [p for p in pods if p.problem is None]
    if claimed and not charged:
        run.errors.append("no pod's resource claims can be modelled: " + "; ".join(sorted({p.problem or "" for p in pods})[:3]))
        return
    write_dra(run, pods, devices, kinds, holders)


def _pod_claims(run: ImportRun, fields: dict[str, Any], classes: dict[str, DeviceClass], users: dict[str, list[str]]) -> PodClaims:
    obj = fields["_obj"]
    namespace = fields.get("namespace") or "default"
    pod = PodClaims(fields)
    statuses = {
        s.get("name"): s.get("resourceClaimName")
        for s in as_list(as_object(obj.get("status"), "status").get("resourceClaimStatuses"), "status.resourceClaimStatuses")
        if isinstance(s, dict)
    }
    try:
        for i, ref in enumerate(as_list(obj["spec"].get("resourceClaims"), "spec.resourceClaims")):
            ref = as_object(ref, f"spec.resourceClaims[{i}]")
            named, template = ref.get("resourceClaimName"), ref.get("resourceClaimTemplateName")
            if isinstance(named, str) and named:
                claim = run.dra.claims.get((namespace, named))
                if claim is None:
                    raise KubeError(f"spec.resourceClaims[{i}].resourceClaimName", f"ResourceClaim {namespace}/{named} is not in the input")
                key, spec, tmpl = f"{namespace}/{named}", claim.get("spec"), None
            elif isinstance(template, str) and template:
                generated = statuses.get(ref.get("name"))
                claim = run.dra.claims.get((namespace, generated)) if isinstance(generated, str) else None
                tmpl_obj = run.dra.templates.get((namespace, template))
                if claim is None and tmpl_obj is None:
                    raise KubeError(f"spec.resourceClaims[{i}].resourceClaimTemplateName", f"ResourceClaimTemplate {namespace}/{template} is not in the input")
                spec = claim.get("spec") if claim is not None else as_object((tmpl_obj or {}).get("spec"), "spec").get("spec")
                key, tmpl = f"{namespace}/{generated or fields['name'] + '-' + str(ref.get('name'))}", template
            else:
                raise KubeError(f"spec.resourceClaims[{i}]", "names neither a resourceClaimName nor a resourceClaimTemplateName")
            users.setdefault(key, []).append(fields["name"])
            pod.claims.append({"claim": key, "template": tmpl, "object": claim})
            _requests(pod, key, as_object(as_object(spec, "spec").get("devices"), "spec.devices"), classes)
    except KubeError as err:
        pod.problem = str(err)
    return pod


def _requests(pod: PodClaims, key: str, devices: dict[str, Any], classes: dict[str, DeviceClass]) -> None:
    for j, req in enumerate(as_list(devices.get("requests"), "spec.devices.requests")):
        where = f"claim {key}: spec.devices.requests[{j}]"
        req = as_object(req, where)
        name = str(req.get("name"))
        exact = req.get("exactly")
        alternatives = as_list(req.get("firstAvailable"), f"{where}.firstAvailable")
        if exact is None and len(alternatives) == 1:
            exact, name = alternatives[0], f"{name}/{alternatives[0].get('name')}"
        elif exact is None:
            raise KubeError(f"{where}.firstAvailable", f"{len(alternatives)} alternatives; the planner models one (exactly, or firstAvailable with one)")
        exact = as_object(exact, f"{where}.exactly")
        cls = classes.get(str(exact.get("deviceClassName")))
        if cls is None:
            raise KubeError(f"{where}.exactly.deviceClassName", f"DeviceClass '{exact.get('deviceClassName')}' is not in the input")
        if cls.problem:
            raise KubeError(f"{where}.exactly.deviceClassName", cls.problem)
        if exact.get("adminAccess") is True:
            raise KubeError(f"{where}.exactly.adminAccess", "admin access ignores other claims; the planner does not re-create it")
        mode = exact.get("allocationMode") or "ExactCount"
        count = exact.get("count", 1)
        if mode not in ("ExactCount", "All") or isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 128:
            raise KubeError(f"{where}.exactly", f"allocationMode {mode!r:.40} with count {count!r:.40}: expected ExactCount with a count 1..128, or All")
        exprs = [s.expression for s in compile_selectors(exact.get("selectors"), f"{where}.exactly.selectors")]
        pod.requests.append(Request(key, name, cls.name, exprs, mode, count))
    for j, constraint in enumerate(as_list(devices.get("constraints"), "spec.devices.constraints")):
        constraint = as_object(constraint, f"claim {key}: spec.devices.constraints[{j}]")
        if constraint.get("distinctAttribute"):
            raise KubeError(f"claim {key}: spec.devices.constraints[{j}].distinctAttribute", "not modelled")
        attribute = constraint.get("matchAttribute")
        if isinstance(attribute, str) and attribute:
            named = [str(r) for r in as_list(constraint.get("requests"), "requests")]
            pod.constraints.append(([f"{key}:{r}" for r in named], attribute))


def _evaluate(devices: dict[str, list[NodeDevice]], selectors: dict[str, tuple[DeviceClass, Request]]) -> dict[str, str]:
    """Every device's ``serves`` (the signatures whose class and request selectors match it); the
    signatures whose evaluation failed on some device, with why."""
    failed: dict[str, str] = {}
    compiled = {
        sig: (cls.selectors, compile_selectors([{"cel": {"expression": e}} for e in req.selectors], "selectors")) for sig, (cls, req) in selectors.items()
    }
    distinct = {sel.expression for of_class, own in compiled.values() for sel in (*of_class, *own)}
    evaluations = len(distinct) * sum(1 for node_list in devices.values() for d in node_list if d.modelled)
    if evaluations > MAX_EVALUATIONS:
        raise KubeError(
            "spec.devices.requests",
            f"{len(distinct):,} distinct selectors on {evaluations // max(len(distinct), 1):,} devices: {evaluations:,} evaluations, more than the {MAX_EVALUATIONS:,} the import allows",
        )
    domains = {d for of_class, own in compiled.values() for sel in (*of_class, *own) for d in sel.domains}
    for node_list in devices.values():
        for device in node_list:
            if not device.modelled:
                continue
            context = device_context(device.variable, domains)
            seen: dict[str, bool] = {}  # a class's selectors are shared by its requests' signatures
            for sig, (of_class, own) in compiled.items():
                if sig in failed:
                    continue
                try:
                    if all(_once(s, context, device.id, seen) for s in of_class) and all(_once(s, context, device.id, seen) for s in own):
                        device.serves.append(sig)
                except KubeError as err:
                    failed[sig] = str(err)
    for node_list in devices.values():
        for device in node_list:
            device.serves = sorted(s for s in device.serves if s not in failed)
    return failed


def _once(selector: Selector, context: Any, label: str, seen: dict[str, bool]) -> bool:
    if selector.expression not in seen:
        seen[selector.expression] = selector.matches(context, label)
    return seen[selector.expression]


def _kinds(devices: dict[str, list[NodeDevice]]) -> dict[str, dict[str, int]]:
    """Per node, the devices of each kind (devices serving the same signatures)."""
    out: dict[str, dict[str, int]] = {}
    for node, node_list in devices.items():
        for device in node_list:
            if device.serves:
                kind = _kind_name(frozenset(device.serves))
                device.fields["kind"] = kind
                out.setdefault(node, {})[kind] = out.setdefault(node, {}).get(kind, 0) + 1
    return out
