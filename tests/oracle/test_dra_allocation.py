"""DRA allocation against independent checks: ``rules.allocation`` against a brute force over every
assignment on tiny instances; the resources-by-name form against the allocation on the generated fleet;
and defrag and allocate plans on the fleet against an oracle that reads the raw List (ResourceSlices,
templates, claims) and allocates each pod's devices on its final node itself."""

from __future__ import annotations

import itertools
import random

import pytest

from planner import rules
from planner.cluster_dra import DraDevice
from planner.engine.defrag import plan_defrag
from planner.engine.defrag.options import DefragOptions
from tests.support.dra_lists import fleet, imported, items_of


def _brute_force(serves: list[set[str]], demands: list[tuple[str, int]]) -> bool:
    slots = [sig for sig, count in demands for _ in range(count)]
    for chosen in itertools.permutations(range(len(serves)), len(slots)):
        if all(sig in serves[d] for sig, d in zip(slots, chosen, strict=True)):
            return True
    return False


@pytest.mark.parametrize("seed", range(300))
def test_allocation_equals_brute_force_on_tiny_instances(seed):
    rng = random.Random(seed)
    sigs = ["a", "b", "c"]
    serves = [set(rng.sample(sigs, rng.randint(0, 3))) for _ in range(rng.randint(0, 5))]
    demands = [(s, rng.randint(1, 2)) for s in rng.sample(sigs, rng.randint(1, 3))]
    devices = [DraDevice(driver="d", pool="p", name=f"x{i}", serves=sorted(s)) for i, s in enumerate(serves)]
    found = rules.allocation(devices, demands)
    assert (found is not None) == _brute_force(serves, demands)
    if found is not None:
        used = [i for chosen in found for i in chosen]
        assert len(used) == len(set(used)) == sum(c for _, c in demands)
        assert all(sig in serves[i] for (sig, _), chosen in zip(demands, found, strict=True) for i in chosen)


# -- the oracle on the raw List ------------------------------------------------------------------


def _raw_devices(doc):
    """node -> device name -> attributes, from the ResourceSlices as published."""
    out = {}
    for s in items_of(doc, "ResourceSlice"):
        out[s["spec"]["nodeName"]] = {
            d["name"]: {k: next(iter(v.values())) for k, v in d["attributes"].items()} | {"memory": d["capacity"]["memory"]["value"]}
            for d in s["spec"]["devices"]
        }
    return out


def _matches(template_spec, attrs):
    """The generator's selectors, read by hand: class type, product and memory, MIG profile."""
    exactly = template_spec["devices"]["requests"][0]["exactly"]
    wanted_type = "gpu" if exactly["deviceClassName"] == "gpu.nvidia.com" else "mig"
    if attrs["type"] != wanted_type:
        return False
    for sel in exactly.get("selectors", []):
        expr = sel["cel"]["expression"]
        if "productName" in expr and "H100" not in attrs["productName"]:
            return False
        if "compareTo" in expr and not attrs["memory"].endswith("Gi") or "compareTo" in expr and int(attrs["memory"][:-2]) < 40:
            return False
        if "profile" in expr and attrs.get("profile") != "1g.10gb":
            return False
    return True


def _oracle_breaks(doc, placement):
    """Pods whose claims cannot be allocated on their node in ``placement`` (pod -> node), from the raw objects."""
    devices = _raw_devices(doc)
    templates = {t["metadata"]["name"]: t["spec"]["spec"] for t in items_of(doc, "ResourceClaimTemplate")}
    claims = {c["metadata"]["name"]: c for c in items_of(doc, "ResourceClaim")}
    wants = {}
    for pod in items_of(doc, "Pod"):
        ref = (pod["spec"].get("resourceClaims") or [None])[0]
        if ref is None or pod["metadata"]["name"] not in placement:
            continue
        if "resourceClaimName" in ref:
            spec, key = claims[ref["resourceClaimName"]]["spec"], ref["resourceClaimName"]
        else:
            spec, key = templates[ref["resourceClaimTemplateName"]], pod["metadata"]["name"]
        wants[key] = (spec, placement[pod["metadata"]["name"]], pod["metadata"]["name"])  # a shared claim: once
    by_node = {}
    for key, (spec, node, pod) in wants.items():
        by_node.setdefault(node, []).append((spec, pod))
    broken = []
    for node, asks in by_node.items():
        names = list(devices.get(node, {}))
        serves = [{i for i, (spec, _) in enumerate(asks) if _matches(spec, devices[node][n])} for n in names]
        demands = [(i, spec["devices"]["requests"][0]["exactly"]["count"]) for i, (spec, _) in enumerate(asks)]
        fake = [DraDevice(driver="d", pool="p", name=n, serves=[str(i) for i in s]) for n, s in zip(names, serves, strict=True)]
        if rules.allocation(fake, [(str(i), c) for i, c in demands]) is None:
            broken.append((node, [pod for _, pod in asks]))
    return broken


@pytest.mark.parametrize("seed", [11, 12])
def test_defrag_plans_on_the_fleet_allocate_on_the_raw_objects(seed):
    doc = fleet(30, seed, fill=0.4)
    cluster = imported(doc).cluster
    plan = plan_defrag(cluster, DefragOptions())
    placement = {p.name: p.node for p in cluster.pods if p.node}
    for move in plan.moves():
        placement[move.pod] = move.to
    assert _oracle_breaks(doc, placement) == []
    moved_dra = [m for m in plan.moves() if next(p for p in cluster.pods if p.name == m.pod).device_claims]
    assert moved_dra, "the plan moves DRA pods (the check is not vacuous)"
    assert all(m.pod not in {p.name for p in cluster.pods if p.locked} for m in plan.moves())


def test_the_oracle_finds_an_overfull_node():
    doc = fleet(10, 3)
    placement = {p["metadata"]["name"]: "node-00003" for p in items_of(doc, "Pod") if p["spec"].get("resourceClaims")}  # a device-plugin node
    assert _oracle_breaks(doc, placement)


def test_resources_form_equals_the_allocation_on_the_fleet():
    cluster = imported(fleet(25, 7)).cluster
    rng = random.Random(7)
    dra_pods = [p for p in cluster.pods if p.device_claims and not p.device_claims[0].shared]
    residents = {n.name: [p for p in cluster.pods if p.node == n.name] for n in cluster.nodes}
    checked = 0
    for node in cluster.nodes:
        for pod in rng.sample(dra_pods, min(8, len(dra_pods))):
            if pod.node == node.name:
                continue
            by_resources = not [s for s in rules.resource_shortfalls(node, [*residents[node.name], pod]) if rules.DRA_PREFIX in s] and not [
                r for r in rules.unoffered_resources(pod, node) if r.startswith(rules.DRA_PREFIX)
            ]
            by_allocation = not rules.dra_breaks(node, [p for p in residents[node.name] if p.device_claims], [pod])
            assert by_resources == by_allocation, (node.name, pod.name)
            checked += 1
    assert checked > 100


def test_allocate_places_pending_claims_where_the_raw_objects_allow():
    from planner.engine.allocate import plan_allocate
    from planner.engine.allocate_options import AllocateOptions

    doc = fleet(15, 64, fill=0.9, pending=8)
    cluster = imported(doc).cluster
    plan = plan_allocate(cluster, AllocateOptions(method="largest-first"))
    placement = {p.name: p.node for p in cluster.pods if p.node}
    placed = {p.pod: p.node for p in plan.placements}
    assert placed, "the plan places pending pods (the check is not vacuous)"
    assert _oracle_breaks(doc, placement | placed) == []
