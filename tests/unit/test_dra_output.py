"""What leaves the planner for a moved DRA pod: its replacement gets a fresh claim from its template. The
PodMigrationJobs (and the kubectl script applying them) reserve no DRA device and never name the old
claim (the workload's controller recreates the pod from its own spec, whose ``spec.resourceClaims`` names
the template); ``planner apply``'s pinned copy of a bare pod keeps ``spec.resourceClaims`` naming the
template and drops the status that named the old claim; pods sharing a claim are never moved."""

from __future__ import annotations

import copy
from types import SimpleNamespace

from planner.engine.defrag import plan_defrag
from planner.kube.apply_live import pinned_copy
from planner.render.kubernetes import pod_migration_jobs
from planner.render.kubernetes_waves import kubectl_script
from tests.support.dra_lists import fleet, imported, items_of


def _moved():
    doc = fleet(30, 11, fill=0.4)
    cluster = imported(doc).cluster
    plan = plan_defrag(cluster)
    pods = {p.name: p for p in cluster.pods}
    moved = [pods[m.pod] for m in plan.moves() if pods[m.pod].device_claims]
    assert moved, "the plan moves DRA pods (the check is not vacuous)"
    return doc, cluster, plan, moved


def _old_claims(doc, names):
    return [s["resourceClaimName"] for p in items_of(doc, "Pod") if p["metadata"]["name"] in names for s in p["status"].get("resourceClaimStatuses", [])]


def test_podmigrationjobs_and_the_script_reserve_no_device_and_never_name_the_old_claim():
    doc, cluster, plan, moved = _moved()
    jobs = pod_migration_jobs(plan, cluster)
    by_pod = {j["spec"]["podRef"]["name"]: j for j in jobs}
    old = _old_claims(doc, {p.name for p in moved})
    assert len(old) == len(moved)
    script = kubectl_script(plan, cluster)
    for pod in moved:
        template = by_pod[pod.name]["spec"]["reservationOptions"]["template"]["spec"]["template"]["spec"]
        assert "resourceClaims" not in template
        assert not any(k.startswith("dra.planner.io/") for k in template["containers"][0]["resources"]["requests"])
        assert "resourceClaims" not in template["containers"][0]["resources"]
    for text in (str(jobs), script):
        assert not [c for c in old if c in text]
    shared = {p.name for p in cluster.pods if any(c.shared for c in p.device_claims or ())}
    assert shared and not shared & {m.pod for m in plan.moves()}


def test_applys_pinned_copy_of_a_bare_dra_pod_names_the_template_not_the_old_claim():
    doc = fleet(10, 3)
    raw = copy.deepcopy(next(p for p in items_of(doc, "Pod") if p["spec"].get("nodeName") and p["status"].get("resourceClaimStatuses")))
    raw["metadata"].pop("ownerReferences")
    old = raw["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    pod = SimpleNamespace(raw=raw, metadata=SimpleNamespace(uid=raw["metadata"]["uid"], namespace=raw["metadata"]["namespace"]))
    copied = pinned_copy(pod, None, "node-00001", "copy-1", "plan-1")
    assert copied["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": raw["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]}]
    assert "status" not in copied and old not in str(copied)


def test_a_placement_script_leaves_pods_with_claims_to_the_scheduler_instead_of_binding_them():
    from planner.engine.preempt import plan_preempt
    from planner.render.kubernetes import placement_script

    cluster = imported(fleet(15, 64, fill=1.0, pending=4, spot=0.5)).cluster
    plan = plan_preempt(cluster, "ml/Job/job-pending-3")
    assert plan.victims and [p.pod for p in plan.placements] == ["pending-3"]
    script = placement_script(plan, cluster)
    assert "/pods/pending-3/binding" not in script and '"kind": "Binding"' not in script
    assert "ml/pending-3 is left to kube-scheduler (planned on node-" in script
    assert "/eviction" in script  # the victims are still evicted first
