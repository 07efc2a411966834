"""The importer's disruption budgets against the disruption controller's count (issue 59: a Pending
replica spends a budget, and the importer kept it whole): on generated mixed Lists whose budgets,
pod states and controller objects are drawn (``kube_strategies.budget_lists``), every job's
``max_unavailable`` is what an independent implementation of the controller's arithmetic
(``kube_disruption``) allows, split over the jobs a budget selects as the importer documents."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings

from planner.adapters.kubernetes import import_kubernetes
from tests.support.kube_disruption import DisruptionController
from tests.support.kube_strategies import budget_lists


def expected_budgets(doc: dict[str, Any], job_of_uid: dict[str, str | None]) -> dict[str, int]:
    """Each job's budget: the least over the budgets selecting its pods of the disruptions allowed,
    divided evenly over the jobs the budget selects (rounded down)."""
    controller = DisruptionController(doc["items"])
    limits: dict[str, int] = {}
    for pdb in (item for item in doc["items"] if item["kind"] == "PodDisruptionBudget"):
        selected = [p for p in controller.pods_for(pdb) if p["metadata"]["uid"] in job_of_uid]
        jobs = {job_of_uid[p["metadata"]["uid"]] for p in selected} - {None}
        if not selected:
            continue
        allowed = controller.disruptions_allowed(pdb)
        share = allowed // len(jobs) if len(jobs) > 1 else allowed
        for job in jobs:
            assert job is not None
            limits[job] = min(limits.get(job, share), share)
    return limits


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(budget_lists())
def test_imported_budgets_are_what_the_disruption_controller_allows(doc: dict[str, Any]) -> None:
    cluster = import_kubernetes([(json.dumps(doc), "drawn.json")]).cluster
    job_of_uid = {p.uid: p.job for p in cluster.pods if p.uid is not None}
    imported = {j.name: j.disruption.max_unavailable for j in cluster.jobs if j.disruption is not None}
    assert imported == expected_budgets(doc, job_of_uid)


def test_the_drawn_lists_meet_every_case() -> None:
    """The comparison is not vacuous: over drawn Lists, budgets come out 0 and above 0, pending and
    not-ready pods lower some below what their specs would allow with every pod healthy, and a
    controller object's scale, a batch Job's missing one and a smaller status count each decide one."""
    seen: set[str] = set()

    @settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(budget_lists())
    def collect(doc: dict[str, Any]) -> None:
        result = import_kubernetes([(json.dumps(doc), "drawn.json")])
        values = [j.disruption.max_unavailable for j in result.cluster.jobs if j.disruption is not None]
        seen.update({"zero"} if 0 in values else set())
        seen.update({"positive"} if any(v > 0 for v in values) else set())
        for warning in result.warnings:
            if "which spends its budget" in warning:
                seen.add("spent")
            if "has no scale" in warning:
                seen.add("no scale")
            if "status.disruptionsAllowed" in warning:
                seen.add("status")
        if any(item["kind"] in ("Deployment", "StatefulSet", "ReplicaSet") for item in doc["items"]):
            seen.add("controller objects")

    collect()
    assert seen == {"zero", "positive", "spent", "no scale", "status", "controller objects"}, seen
