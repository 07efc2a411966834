"""DRA device taints (``resource.k8s.io/v1`` ``spec.devices[].taints``, GA in Kubernetes 1.37 with the
DRADeviceTaints gate on by default): a device tainted NoSchedule or NoExecute serves only the requests
that tolerate the taint, as the scheduler's DynamicResources plugin refuses it to the others; a taint of
effect None changes nothing."""

from __future__ import annotations

from planner import rules
from tests.support.dra_lists import edited, fleet, imported, items_of


def _tainted(effect: str, node: str = "node-00001") -> dict:
    doc = edited(fleet(10, 3))
    for s in items_of(doc, "ResourceSlice"):
        if s["spec"]["nodeName"] == node:
            for d in s["spec"]["devices"]:
                d["taints"] = [{"key": "example.com/maintenance", "value": "drain", "effect": effect}]
    return doc


def _tolerating(doc: dict, template_name: str, tolerations: list) -> None:
    """The template's request, and every claim made from it, with ``tolerations``."""
    template = next(t for t in items_of(doc, "ResourceClaimTemplate") if t["metadata"]["name"] == template_name)
    specs = [template["spec"]["spec"]] + [c["spec"] for c in items_of(doc, "ResourceClaim") if c["spec"] == template["spec"]["spec"]]
    for spec in specs:
        spec["devices"]["requests"][0]["exactly"]["tolerations"] = tolerations


def _node(result, name):
    return next(n for n in result.cluster.nodes if n.name == name)


def _pod(result, name):
    return next(p for p in result.cluster.pods if p.name == name)


def _sig_offers(node) -> dict[str, int]:
    return {k: v for k, v in node.resources.items() if k.startswith(rules.DRA_PREFIX + "sig-")}


def test_a_no_schedule_taint_refuses_the_devices_to_requests_without_a_toleration():
    plain = imported(fleet(10, 3))
    result = imported(_tainted("NoSchedule"))
    assert _sig_offers(_node(plain, "node-00001")) and not _sig_offers(_node(result, "node-00001"))
    any_gpu = _pod(result, "p-00000-0")  # an any-gpu pod on node-00000, untainted
    assert not any_gpu.locked and rules.unoffered_resources(any_gpu, _node(result, "node-00001"))
    # the pods whose claims hold tainted devices keep running (NoSchedule) but are locked, with the reason
    for name in ("p-00001-3", "p-00001-4"):
        assert _pod(result, name).locked
    assert any("p-00001-3" in w and "tainted example.com/maintenance=drain:NoSchedule" in w for w in result.warnings)
    devices = _node(result, "node-00001").devices
    assert devices[0].taints[0].effect == "NoSchedule" and devices[0].kind is None and devices[0].serves == []


def test_no_execute_refuses_too_and_none_changes_nothing():
    assert not _sig_offers(_node(imported(_tainted("NoExecute")), "node-00001"))
    plain, informational = imported(fleet(10, 3)), imported(_tainted("None"))
    assert _sig_offers(_node(informational, "node-00001")) == _sig_offers(_node(plain, "node-00001"))
    assert not _pod(informational, "p-00001-3").locked
    assert _node(informational, "node-00001").devices[0].taints[0].effect == "None"


def test_a_request_that_tolerates_the_taint_is_served():
    doc = _tainted("NoSchedule")
    _tolerating(doc, "any-gpu", [{"key": "example.com/maintenance", "operator": "Exists"}])
    result = imported(doc)
    node = _node(result, "node-00001")
    any_gpu = _pod(result, "p-00000-0")
    assert not rules.unoffered_resources(any_gpu, node)
    assert not [s for s in rules.resource_shortfalls(node, [p for p in result.cluster.pods if p.node == node.name] + [any_gpu]) if rules.DRA_PREFIX in s]
    assert _pod(result, "p-00001-3").locked  # two-gpus still does not tolerate it
    # a toleration of another value (Equal) or another effect does not
    doc = _tainted("NoSchedule")
    _tolerating(
        doc,
        "any-gpu",
        [{"key": "example.com/maintenance", "value": "other"}, {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute"}],
    )
    assert rules.unoffered_resources(_pod(imported(doc), "p-00000-0"), _node(imported(doc), "node-00001"))


def test_a_toleration_operator_kubernetes_does_not_know_locks_the_pod_naming_the_field():
    doc = _tainted("NoSchedule")
    _tolerating(doc, "any-gpu", [{"key": "k", "operator": "Lt"}])
    result = imported(doc)
    assert _pod(result, "p-00000-0").locked
    assert any("exactly.tolerations[0].operator" in w and "expected Equal or Exists" in w for w in result.warnings)


def test_defrag_sends_no_pod_to_devices_tainted_against_it():
    from planner.engine.defrag import plan_defrag

    def dra_targets(doc):
        cluster = imported(doc).cluster
        pods = {p.name: p for p in cluster.pods}
        return [m.to for m in plan_defrag(cluster).moves() if pods[m.pod].device_claims]

    assert "node-00012" in dra_targets(fleet(30, 11, fill=0.4))  # untainted, the plan fills it with DRA pods
    doc = edited(fleet(30, 11, fill=0.4))
    for s in items_of(doc, "ResourceSlice"):
        if s["spec"]["nodeName"] == "node-00012":
            for d in s["spec"]["devices"]:
                d["taints"] = [{"key": "example.com/maintenance", "effect": "NoSchedule"}]
    targets = dra_targets(doc)
    assert targets and "node-00012" not in targets
