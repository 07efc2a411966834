"""Standby reservations: reactivating a standby pod as a preemption decision.

A standby HP pod (ASI's Standby) sleeps on its node and lends its GPUs and CPUs to spot pods. To
reactivate it, spot pods on its node are evicted until it fits there again. That is the decision
``plan_preempt`` already makes, on a view of the cluster in which the pod is pending, awake, alone in
a job of its own and allowed only on its node: ``reactivation_view`` builds that view, and the
planner and the validator both use it, so they agree on what a reactivation plan must do.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.cluster import Cluster, Job


@dataclass(frozen=True)
class Reactivation:
    """The view: ``cluster`` with ``pod`` pending in job ``job``, to be placed on ``node`` only."""

    cluster: Cluster
    pod: str
    job: str
    node: str
    owner: str
    """What the plan's ``job`` field names: the pod's own job, or the pod when it has none."""


def reactivation_problems(cluster: Cluster, pod_name: str) -> list[str]:
    """Why ``pod_name`` cannot be reactivated (empty when it can)."""
    pod = next((p for p in cluster.pods if p.name == pod_name), None)
    if pod is None:
        return [f"unknown pod '{pod_name}'"]
    if not pod.standby:
        return [f"pod '{pod_name}' is not on standby (only a standby pod is reactivated)"]
    return []


def reactivation_view(cluster: Cluster, pod_name: str) -> Reactivation:
    """The preemption view of reactivating standby pod ``pod_name`` (checked by the caller)."""
    pod = next(p for p in cluster.pods if p.name == pod_name)
    taken = {j.name for j in cluster.jobs}
    job = f"reactivate:{pod_name}"
    while job in taken:
        job += "'"
    awake = pod.model_copy(update={"node": None, "standby": False, "job": job, "gpu_indexes": None})
    pods = [awake if p.name == pod_name else p for p in cluster.pods]
    view = cluster.model_copy(update={"pods": pods, "jobs": [*cluster.jobs, Job(name=job)]})
    assert pod.node is not None
    return Reactivation(view, pod_name, job, pod.node, pod.job if pod.job is not None else pod_name)
