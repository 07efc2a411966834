"""The DRA import: devices onto nodes, claims onto pods as resources by name, and every claim the importer
cannot model locking its pod (or leaving a pending one out) with the reason."""

from __future__ import annotations

import pytest

from planner import rules
from planner.cluster import SnapshotError
from tests.support.dra_lists import edited, fleet, imported, items_of


def _pod(result, name):
    return next(p for p in result.cluster.pods if p.name == name)


def test_template_pods_charge_their_requests_and_nodes_offer_their_devices():
    doc = fleet(10, 3)
    result = imported(doc)
    nodes = {n.name: n for n in result.cluster.nodes}
    mig = nodes["node-00002"]  # shape order: gpu, gpu, mig, plugin, both
    assert mig.gpus == 14 and len(mig.devices) == 14
    sigs = {name: amount for name, amount in mig.resources.items() if name.startswith(rules.DRA_PREFIX + "sig-")}
    assert list(sigs.values()) == [14]
    plugin = nodes["node-00003"]
    assert plugin.devices is None and plugin.resources["nvidia.com/gpu"] == 8
    assert not any(name.startswith(rules.DRA_PREFIX + "sig-") for name in plugin.resources)
    on_mig = [p for p in result.cluster.pods if p.node == "node-00002"]
    assert on_mig and all(p.requests == {next(iter(sigs)): 1, **{k: 1 for k in p.requests if "kind-" in k}} for p in on_mig)
    assert all(p.gpus == sum(r.count for c in p.device_claims for r in c.requests) for p in on_mig)
    held = [r.devices for p in on_mig for c in p.device_claims for r in c.requests]
    assert all(len(d) == 1 and d[0].startswith("gpu.nvidia.com/node-00002/gpu-") for d in held)


def test_pods_sharing_one_claim_stay_and_are_charged_once():
    result = imported(fleet(40, 1))
    shared = [p for p in result.cluster.pods if p.device_claims and p.device_claims[0].claim.startswith("ml/shared-")]
    assert shared and all(p.locked for p in shared)
    by_claim = {}
    for p in shared:
        by_claim.setdefault(p.device_claims[0].claim, []).append(p)
    for pods in by_claim.values():
        assert len(pods) == 2
        assert sorted(sum(p.requests.values()) > 0 for p in pods) == [False, True]
    assert any("holds devices on its node; a replacement needs a new claim" in w for w in result.warnings)


def _first_template_pod(doc):
    return next(p for p in items_of(doc, "Pod") if p["spec"].get("nodeName") and "resourceClaimTemplateName" in str(p["spec"].get("resourceClaims")))


def _claim_of(doc, pod):
    name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    return next(c for c in items_of(doc, "ResourceClaim") if c["metadata"]["name"] == name)


def test_an_allocation_naming_an_unpublished_device_locks_the_pod_with_the_reason():
    doc = edited(fleet(10, 3))
    pod = _first_template_pod(doc)
    _claim_of(doc, pod)["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-99"
    result = imported(doc)
    assert _pod(result, pod["metadata"]["name"]).locked
    assert any("which no slice of node" in w and "gpu-99" in w and pod["metadata"]["name"] in w for w in result.warnings)


def test_an_unknown_cel_function_locks_placed_pods_and_leaves_pending_ones_out():
    doc = edited(fleet(10, 3))
    template = next(t for t in items_of(doc, "ResourceClaimTemplate") if t["metadata"]["name"] == "mig-1g")
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": 'semver("1.0.0") == semver("1.0.0")'}}]
    for claim in items_of(doc, "ResourceClaim"):
        if claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "mig.nvidia.com":
            claim["spec"] = template["spec"]["spec"]
    result = imported(doc)
    mig_pods = [p for p in result.cluster.pods if p.node == "node-00002"]
    assert mig_pods and all(p.locked and not p.requests.keys() - {"pods"} for p in mig_pods)
    assert any("calls semver" in w and "locked" in w for w in result.warnings)
    assert "pending-3" not in {p.name for p in result.cluster.pods}  # pending-3 asks for mig-1g
    assert result.summary.skipped["pending pods with a resource claim the planner cannot model"] == 1
    node = next(n for n in result.cluster.nodes if n.name == "node-00002")
    assert sum(1 for d in node.devices if d.held_by) == len(mig_pods)  # the locked pods' claims still hold their slices
    assert not any("sig-" in k for k in node.resources)  # the refused signature is offered nowhere: no silent "no GPU" either


def test_a_missing_device_class_is_named():
    doc = edited(fleet(10, 3))
    doc["items"] = [i for i in doc["items"] if not (i["kind"] == "DeviceClass" and i["metadata"]["name"] == "mig.nvidia.com")]
    result = imported(doc)
    assert any("DeviceClass 'mig.nvidia.com' is not in the input" in w for w in result.warnings)
    assert all(p.locked for p in result.cluster.pods if p.node == "node-00002")


def test_a_list_whose_claims_all_fail_is_refused():
    doc = edited(fleet(5, 3))
    doc["items"] = [i for i in doc["items"] if i["kind"] != "DeviceClass"]
    with pytest.raises(SnapshotError) as err:
        imported(doc)
    assert "no pod's resource claims can be modelled" in str(err.value) and "DeviceClass" in str(err.value)


def test_a_request_choosing_between_kinds_on_one_node_is_refused_for_that_pod():
    doc = edited(fleet(10, 3))
    node_slice = next(s for s in items_of(doc, "ResourceSlice") if s["spec"]["nodeName"] == "node-00000")
    product = node_slice["spec"]["devices"][0]["attributes"]["productName"]["string"]
    other = "NVIDIA H100 80GB HBM3" if "A100" in product else "NVIDIA A100-SXM4-80GB"
    node_slice["spec"]["devices"][-1]["attributes"]["productName"]["string"] = other  # one GPU of the other product
    result = imported(doc)
    locked = [p for p in result.cluster.pods if p.node == "node-00000"]
    assert locked and all(p.locked for p in locked)
    assert any("chooses between 2 kinds of device on node 'node-00000'" in w for w in result.warnings)


def test_selectors_on_memory_and_product_pick_h100s_only():
    result = imported(fleet(20, 5))
    h100 = [p for p in result.cluster.pods if p.device_claims and p.device_claims[0].template == "h100-40g" and p.node]
    assert h100
    for pod in h100:
        node = next(n for n in result.cluster.nodes if n.name == pod.node)
        sig = pod.device_claims[0].requests[0].signature
        assert all("H100" in d.attributes["productName"] for d in node.devices if sig in d.serves)
    a100 = [n for n in result.cluster.nodes if n.devices and "A100" in str(n.devices[0].attributes.get("productName"))]
    assert a100 and all(sig not in n.resources for n in a100 for sig in {p.device_claims[0].requests[0].signature for p in h100})


def test_comprehension_macros_are_refused_before_any_evaluation():
    doc = edited(fleet(5, 3))
    big = "[" + ",".join(["1"] * 1500) + "]"
    for t in items_of(doc, "ResourceClaimTemplate"):
        t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": f"{big}.all(x, {big} . exists (y, x == y))"}}]
    for c in items_of(doc, "ResourceClaim"):
        c["spec"] = next(t for t in items_of(doc, "ResourceClaimTemplate") if t["metadata"]["name"] == "any-gpu")["spec"]["spec"]
    with pytest.raises(SnapshotError) as err:
        imported(doc)
    assert "comprehension macro all()" in str(err.value)


def test_too_many_evaluations_are_refused(monkeypatch):
    from planner.adapters import kubernetes_dra

    monkeypatch.setattr(kubernetes_dra, "MAX_EVALUATIONS", 10)
    with pytest.raises(SnapshotError) as err:
        imported(fleet(5, 3))
    assert "evaluations, more than the 10 the import allows" in str(err.value)


def test_negation_and_has_are_evaluated():
    doc = edited(fleet(5, 3))
    template = next(t for t in items_of(doc, "ResourceClaimTemplate") if t["metadata"]["name"] == "mig-1g")
    expression = '!(device.attributes["gpu.nvidia.com"].profile != "1g.10gb") && has(device.attributes["gpu.nvidia.com"].parentIndex)'
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": expression}}]
    result = imported(doc)
    assert not [w for w in result.warnings if "selectors" in w or "cannot model" in w]
    pending = next(p for p in result.cluster.pods if p.name == "pending-3")  # the fourth template: mig-1g
    node = next(n for n in result.cluster.nodes if n.name == "node-00002")
    assert node.resources[pending.device_claims[0].requests[0].signature] == 14  # every slice serves it; what is held is charged on the kind
    (kind,) = {d.kind for d in node.devices}
    assert sum(p.requests.get(kind, 0) for p in result.cluster.pods if p.node == node.name) == sum(1 for d in node.devices if d.held_by)


@pytest.mark.parametrize("seed", [5, 9])
def test_the_dra_model_costs_no_planning_quality_against_its_device_plugin_twin(seed):
    from planner.engine.defrag import plan_defrag

    dra = imported(fleet(60, seed)).cluster
    twin = imported(fleet(60, seed, twin=True)).cluster
    assert not any(p.device_claims for p in twin.pods) and [p.name for p in dra.pods] == [p.name for p in twin.pods]
    assert [n.gpus for n in dra.nodes] == [n.gpus for n in twin.nodes]
    vacated_dra, vacated_twin = len(plan_defrag(dra).vacated_nodes), len(plan_defrag(twin).vacated_nodes)
    assert vacated_dra >= 0.98 * vacated_twin, (vacated_dra, vacated_twin)
