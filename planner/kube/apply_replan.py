"""``--on-drift replan``: plan the rest of the work from the live cluster and go on.

The live cluster is read into a snapshot with the same importer ``planner defrag --from kubernetes`` uses
(namespaces, nodes, pods, PodDisruptionBudgets, ReplicaSets, Deployments, StatefulSets and
ReplicationControllers listed from the API server, each item given back its ``kind``; this plan's own
``planner.io/apply`` taint taken off the nodes, since it is a hold of the run, not a property of the node),
the same planner is run with the options the plan records in ``report.provenance.options`` (the same budgets
and policy; ``max_moves`` less the moves already done; the executor inline), and the new plan is validated
against the snapshot by ``validate/defrag.py``. The run then carries out the waves already done followed by
the new plan's: ``effective`` joins them into one plan, which the state records so that ``--resume`` goes on
with it. ``changes`` says what the re-plan changed against the waves it replaces."""

from __future__ import annotations

import json
from typing import Any

from planner.cluster import SnapshotError
from planner.kube.apply_client import ApplyError, Kube, refused, server_answer
from planner.kube.apply_steer import TAINT_KEY
from planner.plans import DefragPlan

LISTS = (
    ("core", "list_namespace", "v1", "Namespace"),
    ("core", "list_node", "v1", "Node"),
    ("core", "list_pod_for_all_namespaces", "v1", "Pod"),
    ("core", "list_replication_controller_for_all_namespaces", "v1", "ReplicationController"),
    ("policy", "list_pod_disruption_budget_for_all_namespaces", "policy/v1", "PodDisruptionBudget"),
    ("apps", "list_replica_set_for_all_namespaces", "apps/v1", "ReplicaSet"),
    ("apps", "list_deployment_for_all_namespaces", "apps/v1", "Deployment"),
    ("apps", "list_stateful_set_for_all_namespaces", "apps/v1", "StatefulSet"),
)
"""What the snapshot is read from: (API group, list call, apiVersion, kind)."""


def live_list(kube: Kube, plan_id: str) -> dict[str, Any]:
    """The live cluster as a kubectl List (this plan's taint taken off the nodes)."""
    from kubernetes import client  # deferred: the kubernetes client (loaded by connect, which says how to install it)

    apis = {"core": kube.core, "policy": kube.policy, "apps": client.AppsV1Api(kube.api_client)}
    items: list[dict[str, Any]] = []
    for group, call, api_version, kind in LISTS:
        try:
            answer = getattr(apis[group], call)(_preload_content=False, _request_timeout=60)
        except Exception as err:  # noqa: BLE001
            if getattr(err, "status", None) == 403:
                raise refused(err, "list", f"{kind.lower()}s (to re-plan from the live cluster)") from None
            raise ApplyError([f"reading the live cluster to re-plan ({kind} list): {server_answer(err)}"], 1) from None
        for item in json.loads(answer.data).get("items") or []:
            item["kind"], item["apiVersion"] = kind, api_version
            if kind == "Node":
                spec = item.setdefault("spec", {})
                spec["taints"] = [t for t in spec.get("taints") or [] if not (t.get("key") == TAINT_KEY and t.get("value") == plan_id)]
            items.append(item)
    return {"apiVersion": "v1", "kind": "List", "items": items}


def replan(kube: Kube, plan: DefragPlan, plan_id: str, moves_done: int) -> tuple[DefragPlan, list[str]]:
    """A new plan for the rest of the work, made from the live cluster with ``plan``'s options and validated;
    with the importer's warnings. Raises ``ApplyError`` (exit 1) when the cluster cannot be read into a
    snapshot or the planner's answer is not a valid plan."""
    from planner.adapters.kubernetes import import_kubernetes  # deferred: the importer and the planner, only on a re-plan
    from planner.engine import DefragOptions, plan_defrag
    from planner.validate.defrag import validate

    recorded = dict(((plan.report.model_extra or {}).get("provenance") or {}).get("options") or {}) if plan.report else {}
    try:
        options = DefragOptions.model_validate(recorded) if recorded else DefragOptions()
    except ValueError as err:
        raise ApplyError([f"re-plan: the plan's recorded options are not usable ({' '.join(str(err).split())[:300]})"], 1) from None
    changes: dict[str, Any] = {"executor": "inline"}
    if options.max_moves is not None:
        changes["max_moves"] = max(0, options.max_moves - moves_done)
    options = options.model_copy(update=changes)
    try:
        imported = import_kubernetes([(json.dumps(live_list(kube, plan_id)), "the live cluster")])
    except SnapshotError as err:
        raise ApplyError(["re-plan: the live cluster does not read as a snapshot", *[str(p) for p in err.problems][:5]], 1) from None
    made = plan_defrag(imported.cluster, options)
    if not isinstance(made, DefragPlan):
        raise ApplyError(["re-plan: the planner returned a comparison, not a plan (method compare): give the plan a single method"], 1)
    violations = validate(imported.cluster, made)
    if violations:
        raise ApplyError(["re-plan: the new plan does not hold on the live cluster", *[str(v) for v in violations[:5]]], 1)
    return made, imported.warnings


def effective(plan: DefragPlan, done_waves: int, new: DefragPlan, vacated_already: list[str]) -> DefragPlan:
    """The plan the run carries out from now on: ``plan``'s first ``done_waves`` waves, then ``new``'s; its
    vacated nodes are ``new``'s and those of ``plan``'s that are empty already."""
    vacated = sorted(set(new.vacated_nodes) | set(vacated_already))
    return DefragPlan(waves=[*plan.waves[:done_waves], *new.waves], vacated_nodes=vacated, report=plan.report, metrics=plan.metrics)


def changes(plan: DefragPlan, done_waves: int, new: DefragPlan, vacated_already: list[str]) -> dict[str, Any]:
    """What a re-plan changed: moves of the replaced waves kept, dropped and added, and the nodes to vacate."""

    def key(move: Any) -> tuple[str, str, str]:
        return (move.pod.rsplit("/", 1)[-1], move.from_, move.to)

    old = {key(m) for wave in plan.waves[done_waves:] for m in wave}
    fresh = {key(m) for wave in new.waves for m in wave}
    planned = set(plan.vacated_nodes)
    now = set(new.vacated_nodes) | set(vacated_already)
    return {
        "waves_replaced": len(plan.waves) - done_waves,
        "waves_new": len(new.waves),
        "moves_kept": len(old & fresh),
        "moves_dropped": sorted(f"{p} {f}->{t}" for p, f, t in old - fresh)[:50],
        "moves_added": sorted(f"{p} {f}->{t}" for p, f, t in fresh - old)[:50],
        "vacated_planned_before": len(planned),
        "vacated_planned_now": len(now),
        "vacated_lost": sorted(planned - now),
        "vacated_gained": sorted(now - planned),
    }
