"""The second half of the DRA import (``kubernetes_dra``): which devices each claim's allocation holds,
what keeps a pod from being modelled or from moving, and the snapshot fields written from it all."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from planner.adapters.kubernetes_dra_devices import NodeDevice
from planner.adapters.kubernetes_objects import as_list, as_object
from planner.adapters.kubernetes_run import ImportRun
from planner.cluster import MAX_RESOURCE

GPU_DRIVERS = ("gpu.nvidia.com",)
"""Drivers whose devices are GPUs in the snapshot's ``gpus`` view (whole GPUs and MIG devices alike, as
the device-plugin import counts a MIG slice as one device)."""


@dataclass
class Request:
    claim: str
    name: str
    device_class: str
    selectors: list[str]
    mode: str
    count: int
    signature: str = ""
    devices: list[str] = field(default_factory=list)


@dataclass
class PodClaims:
    """One pod's claims as read, or why they cannot be modelled (``problem``) or moved (``keep``)."""

    fields: dict[str, Any]
    claims: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    constraints: list[tuple[list[str], str]] = field(default_factory=list)
    problem: str | None = None
    keep: str | None = None


def held_devices(run: ImportRun) -> dict[str, str]:
    """Every device an allocated ResourceClaim of the input holds (``driver/pool/device`` -> claim)."""
    holders = {}
    for (namespace, name), claim in sorted(run.dra.claims.items()):
        allocation = as_object(as_object(claim.get("status"), "status").get("allocation"), "status.allocation")
        for result in as_list(as_object(allocation.get("devices"), "devices").get("results"), "results"):
            if isinstance(result, dict) and result.get("adminAccess") is not True:
                holders[f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}"] = f"{namespace}/{name}"
    return holders


def allocations(
    run: ImportRun, pods: list[PodClaims], devices: dict[str, list[NodeDevice]], failed: dict[str, str], users: dict[str, list[str]]
) -> dict[str, str]:
    """Each modelled request's held devices and each pod's problem or reason to stay; the holders of every device."""
    by_sig: dict[str, dict[str, list[NodeDevice]]] = {}
    for node, node_list in devices.items():
        for device in node_list:
            for sig in device.serves:
                by_sig.setdefault(sig, {}).setdefault(node, []).append(device)
    facts = {sig: _signature_facts(on_nodes) for sig, on_nodes in by_sig.items()}
    for pod in pods:
        if pod.problem is None:
            pod.problem = _request_problem(pod, facts, failed) or _constraint_problem(pod, by_sig) or _allocation_problem(pod, devices)
        if pod.problem is None:
            shared = [c["claim"] for c in pod.claims if len(users[c["claim"]]) > 1]
            named = [c["claim"] for c in pod.claims if c["template"] is None and c["object"] is not None and _allocated(c["object"])]
            if shared and pod.fields["node"] is None and not any(_allocated(c["object"]) for c in pod.claims if c["claim"] in shared and c["object"]):
                pod.problem = f"claim {shared[0]} is shared by pods that must start on one node; not modelled for pending pods"
            elif shared or named:
                pod.keep = f"claim {(shared or named)[0]} holds devices on its node; a replacement needs a new claim (not planned)"
    return held_devices(run)


def _allocated(claim: dict[str, Any]) -> bool:
    return bool(as_object(claim.get("status"), "status").get("allocation"))


def _signature_facts(on_nodes: dict[str, list[NodeDevice]]) -> tuple[tuple[str, int] | None, set[int]]:
    """For one signature: the first node (by name) where it would choose between kinds (and how many),
    and the device counts of the nodes that have it (``All``'s count where they agree)."""
    mixed = None
    for node, found in sorted(on_nodes.items()):
        kinds = {d.fields["kind"] for d in found}
        if len(kinds) > 1:
            mixed = (node, len(kinds))
            break
    return mixed, {len(found) for found in on_nodes.values()}


def _request_problem(pod: PodClaims, facts: dict[str, tuple[tuple[str, int] | None, set[int]]], failed: dict[str, str]) -> str | None:
    for request in pod.requests:
        if request.signature in failed:
            return f"request '{request.name}' of claim {request.claim}: {failed[request.signature]}"
        mixed, sizes = facts.get(request.signature, (None, set()))
        if mixed is not None:
            return f"request '{request.name}' of claim {request.claim} chooses between {mixed[1]} kinds of device on node '{mixed[0]}'; the planner models requests that draw from one kind per node"
        if request.mode == "All":
            if len(sizes) > 1:
                return f"request '{request.name}' of claim {request.claim}: allocationMode All over {sorted(sizes)} devices depending on the node; not modelled"
            request.count = min(sizes) if sizes else 1
    return None


def _constraint_problem(pod: PodClaims, by_sig: dict[str, dict[str, list[NodeDevice]]]) -> str | None:
    for names, attribute in pod.constraints:
        claim = names[0].split(":")[0] if names else None
        chosen = [r for r in pod.requests if f"{r.claim}:{r.name}" in names or (not names and r.claim == claim)]
        if not names:
            chosen = pod.requests
        nodes = set.intersection(*(set(by_sig.get(r.signature, {})) for r in chosen)) if chosen else set()
        for node in sorted(nodes):
            values = {_value(d, attribute) for r in chosen for d in by_sig[r.signature][node]}
            if len(values) > 1:
                return (
                    f"matchAttribute {attribute} of claim {chosen[0].claim}: the devices on node '{node}' differ in it; the planner models it where they agree"
                )
    return None


def _value(device: NodeDevice, attribute: str) -> Any:
    attrs = device.fields["attributes"]
    short = attribute.rpartition("/")[2]
    return attrs.get(attribute, attrs.get(short) if attribute.startswith(device.fields["driver"] + "/") else None)


def _allocation_problem(pod: PodClaims, devices: dict[str, list[NodeDevice]]) -> str | None:
    node = pod.fields["node"]
    published = {d.id: d for d in devices.get(node, [])} if node is not None else {}
    for claim in pod.claims:
        obj = claim["object"]
        allocated = obj is not None and _allocated(obj)
        if node is None and allocated:
            return f"claim {claim['claim']} is allocated while the pod is pending; not modelled"
        if node is not None and not allocated:
            return f"claim {claim['claim']} is not allocated while the pod runs on '{node}'"
        if not allocated:
            continue
        results = as_list(as_object(as_object(obj["status"]["allocation"], "allocation").get("devices"), "devices").get("results"), "results")
        requests = {r.name: r for r in pod.requests if r.claim == claim["claim"]}
        for result in results:
            result = as_object(result, "results[]")
            ident = f"{result.get('driver')}/{result.get('pool')}/{result.get('device')}"
            request = requests.get(str(result.get("request")))
            if request is None:
                return f"claim {claim['claim']}: its allocation names request '{result.get('request')}', which the claim does not have"
            if ident not in published:
                return f"claim {claim['claim']}: its allocation names device '{ident}', which no slice of node '{node}' publishes"
            if request.signature not in published[ident].serves:
                return f"claim {claim['claim']}: allocated device '{ident}' does not match request '{request.name}' (its class or selectors)"
            request.devices.append(ident)
        short = [r.name for r in requests.values() if len(r.devices) != r.count]
        if short:
            return f"claim {claim['claim']}: its allocation does not hold the devices request '{short[0]}' asks for"
    return None


def write_dra(run: ImportRun, pods: list[PodClaims], devices: dict[str, list[NodeDevice]], kinds: dict[str, dict[str, int]], holders: dict[str, str]) -> None:
    """Devices, offers and GPUs onto the nodes' fields; claims, charges and locks onto the pods'."""
    users = Counter(c["claim"] for p in pods for c in p.claims)
    charged_claims: set[str] = set()
    first_user: dict[str, str] = {}
    for pod in sorted((p for p in pods if p.problem is None), key=lambda p: p.fields["name"]):
        for claim in pod.claims:
            charged_claims.add(claim["claim"])
            first_user.setdefault(claim["claim"], pod.fields["name"])
    all_kinds = sorted({k for per_node in kinds.values() for k in per_node})
    kinds_serving: dict[str, set[str]] = {}
    for node_list in devices.values():
        for d in node_list:
            for sig in d.serves:
                kinds_serving.setdefault(sig, set()).add(d.fields["kind"])
    for _, fields in run.node_fields:
        node_list = devices.get(fields["name"], [])
        usable = [d for d in node_list if d.id not in holders or holders[d.id] in charged_claims]
        offers: dict[str, int] = dict.fromkeys(all_kinds, MAX_RESOURCE)
        offers.update(Counter(d.fields["kind"] for d in usable if d.serves))
        for d in usable:
            for sig in d.serves:
                offers[sig] = offers.get(sig, 0) + 1
        fields["resources"] = {**(fields["resources"] or {}), **offers}
        fields["gpus"] += sum(1 for d in usable if d.fields["driver"] in GPU_DRIVERS)
        if node_list:
            fields["devices"] = [{**d.fields, "serves": d.serves, "held_by": holders.get(d.id)} for d in node_list]
    gpu_sigs = {sig for node_list in devices.values() for d in node_list if d.fields["driver"] in GPU_DRIVERS for sig in d.serves}
    kept = []
    for pod in pods:
        fields = pod.fields
        if pod.problem is not None:
            if fields["node"] is None:
                run.warn(fields["_obj"], "spec.resourceClaims", f"{pod.problem}; left out: the planner cannot model this claim")
                run.summary.skipped["pending pods with a resource claim the planner cannot model"] += 1
                fields["_dra_drop"] = True
                continue
            run.warn(fields["_obj"], "spec.resourceClaims", f"{pod.problem}; the pod is locked where it stands")
            run.lock_pod(fields, "resource claim the planner cannot model")
            continue
        if pod.keep is not None:
            run.warn(fields["_obj"], "spec.resourceClaims", f"{pod.keep}; the pod is locked where it stands")
            run.lock_pod(fields, "shared or named resource claim")
        charges: dict[str, int] = {}
        claims = []
        for claim in pod.claims:
            here = first_user[claim["claim"]] == fields["name"]
            requests = [r for r in pod.requests if r.claim == claim["claim"]]
            for r in requests if here else ():
                for name in [r.signature, *sorted(kinds_serving.get(r.signature, ()))]:
                    charges[name] = charges.get(name, 0) + r.count
            claims.append(
                {
                    "claim": claim["claim"],
                    "template": claim["template"],
                    "shared": users[claim["claim"]] > 1,
                    "requests": [
                        {
                            "name": r.name,
                            "device_class": r.device_class,
                            "selectors": r.selectors,
                            "mode": r.mode,
                            "count": r.count,
                            "signature": r.signature,
                            "devices": r.devices,
                        }
                        for r in requests
                    ],
                }
            )
        fields["requests"] = {**fields["requests"], **charges}
        fields["device_claims"] = claims
        fields["_dra_gpus"] = sum(v for k, v in charges.items() if k in gpu_sigs)
        kept.append(pod)
    run.pods[:] = [f for f in run.pods if not f.get("_dra_drop")]


def add_dra_gpus(run: ImportRun) -> None:
    """A pod's DRA GPUs added to its ``gpus`` view (after the device-plugin GPUs are resolved)."""
    for fields in run.pods:
        extra = fields.pop("_dra_gpus", 0)
        if extra:
            fields["gpus"] = fields["gpus"] + extra
