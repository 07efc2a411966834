"""Why a plan left a node busy: for each pod on it once the plan is carried out, the first rule of
``codes.NODE_CODES`` that kept it. The plan is checked against the snapshot first (``capacity.after_plan``
validates it: a plan of another snapshot is refused naming its first mismatch); every per-node test
is ``rules``' (static rules, then the node's pods after the plan beside the arriving pod)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from planner import rules
from planner.capacity import after_plan
from planner.cluster import Cluster, Pod, SnapshotError
from planner.engine.defrag import DefragOptions
from planner.engine.explain.codes import ALL_CODES, NODE_CODES
from planner.pools import apply_pools

SHOWN_ROOM = 3
"""Nodes with room named per pod, at most."""


def _options(plan: Any) -> DefragOptions:
    given = (plan.report.provenance or {}).get("options") if plan.report is not None else None
    try:
        return DefragOptions.model_validate(given or {}, strict=False)
    except ValueError:
        return DefragOptions()


def explain_node_left_busy(cluster: Cluster, node: str, plan: Any) -> dict[str, Any]:
    if getattr(plan, "kind", None) != "defrag" or not hasattr(plan, "waves"):
        raise SnapshotError([f"--plan: explains a defrag plan (this is a {type(plan).__name__}); make one with planner defrag"])
    after = after_plan(cluster, plan)
    before_busy = any(p.node == node for p in cluster.pods)
    staying = [p for p in after.pods if p.node == node]
    head: dict[str, Any] = {"node": node, "pods_before": sum(p.node == node for p in cluster.pods), "pods_after": len(staying)}
    if not before_busy:
        return {**head, "reason": _code("empty", {}), "pods": []}
    if not staying:
        return {**head, "reason": _code("vacated", {}), "pods": []}
    options = _options(plan)
    pooled, _ = apply_pools(after, options.pools())
    pooled_pods = {p.name: p for p in pooled.pods}
    pooled_nodes = {n.name: n for n in pooled.nodes}
    residents: dict[str, list[Pod]] = defaultdict(list)
    for p in after.pods:
        if p.node is not None:
            residents[p.node].append(p)
    jobs = {j.name: j for j in cluster.jobs}
    spent = _spent_budgets(plan, options, node)
    original = {p.name: p for p in cluster.pods}
    pods = []
    for pod in staying:
        pods.append(
            {
                "pod": pod.name,
                "job": pod.job,
                "gpus": pod.gpus,
                **_why_stays(after, pod, original[pod.name], pooled_pods[pod.name], pooled_nodes, residents, jobs, spent, options),
            }
        )
    # one pod that cannot leave keeps the node busy: the node's reason is the strongest of its pods' (codes' order)
    counts = Counter(p["code"] for p in pods)
    strongest = next(c.code for c in NODE_CODES if c.code in counts)
    return {**head, "reason": _code(strongest, {"pods_by_reason": dict(sorted(counts.items()))}), "pods": pods}


def _code(code: str, numbers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    meaning = ALL_CODES[code]
    return {"code": code, "proof": meaning.proof, "meaning": meaning.meaning, "numbers": numbers, **extra}


def _spent_budgets(plan: Any, options: DefragOptions, node: str) -> list[str]:
    """The plan's budgets it spent in full (no further move was allowed)."""
    moves = plan.moves()
    spent = []
    if options.max_moves is not None and len(moves) >= options.max_moves:
        spent.append(f"max_moves {options.max_moves:,} spent ({len(moves):,} moves)")
    touching = sum(node in (m.from_, m.to) for m in moves)
    if options.max_moves_per_node is not None and touching >= options.max_moves_per_node:
        spent.append(f"max_moves_per_node {options.max_moves_per_node:,} spent on this node")
    return spent


def _why_stays(
    after: Cluster,
    pod: Pod,
    original: Pod,
    pooled: Pod,
    pooled_nodes: dict[str, Any],
    residents: dict[str, list[Pod]],
    jobs: dict[str, Any],
    spent: list[str],
    options: DefragOptions,
) -> dict[str, Any]:
    if original.locked or original.standby:
        return {"code": "locked", "proof": True, "detail": "standby pod" if original.standby else "locked: true in the snapshot"}
    if pooled.locked:
        return {
            "code": "limits",
            "proof": True,
            "detail": "the plan's pool policy holds it (its node is outside --node-selector, or its rules allow only nodes the policy forbids)",
        }
    namespace = pod.namespace or "default"
    if options.only_namespaces is not None and namespace not in options.only_namespaces:
        return {"code": "limits", "proof": True, "detail": f"namespace '{namespace}' is not in only_namespaces"}
    if namespace in (options.exclude_namespaces or []):
        return {"code": "limits", "proof": True, "detail": f"namespace '{namespace}' is in exclude_namespaces"}
    if spent:
        return {"code": "limits", "proof": True, "detail": "; ".join(spent)}
    job = jobs.get(pod.job) if pod.job else None
    level = job.topology.level if job and job.topology and job.topology.mode == "required" else None
    mates = {rules.topology_domain(n, level) for n in after.nodes if level and any(q.job == pod.job and q.name != pod.name for q in residents[n.name])}
    home_asw = next((n.asw for n in after.nodes if n.name == pod.node), None)
    tally: Counter[str] = Counter()
    room: list[str] = []
    for n in after.nodes:
        if n.name == pod.node:
            continue
        if rules.static_rule_breaks(pod, n):
            tally["static_rules"] += 1
        elif rules.static_rule_breaks(pooled, pooled_nodes[n.name]) or (options.same_asw and n.asw != home_asw):
            tally["plan_policy"] += 1
        elif level and mates and rules.topology_domain(n, level) not in mates:
            tally["topology"] += 1
        else:
            breaks = rules.node_rule_breaks(n, residents[n.name], [pod])
            if any(b.rule == rules.ANTI_AFFINITY for b in breaks):
                tally["anti_affinity"] += 1
            elif breaks:
                tally["no_room"] += 1
            else:
                tally["room"] += 1
                if len(room) < SHOWN_ROOM:
                    room.append(n.name)
    numbers = {"other_nodes": len(after.nodes) - 1, **dict(sorted(tally.items()))}
    for code, key in (("no_eligible_destination", "static_rules"), ("limits", "plan_policy"), ("topology", "topology"), ("anti_affinity", "anti_affinity")):
        others = sum(v for k, v in tally.items() if k != key and k in _AFTER[key])
        if tally[key] and not others:
            return {"code": code, "proof": ALL_CODES[code].proof, "numbers": numbers}
    if not tally["static_rules"] + tally["plan_policy"] + tally["topology"] + tally["anti_affinity"] + tally["no_room"] + tally["room"]:
        return {"code": "no_eligible_destination", "proof": True, "numbers": numbers}
    if not tally["room"]:
        return {"code": "no_destination_with_room", "proof": False, "numbers": numbers}
    return {"code": "heuristic_choice", "proof": False, "numbers": numbers, "room_on": room}


_AFTER = {
    "static_rules": ("plan_policy", "topology", "anti_affinity", "no_room", "room"),
    "plan_policy": ("topology", "anti_affinity", "no_room", "room"),
    "topology": ("anti_affinity", "no_room", "room"),
    "anti_affinity": ("no_room", "room"),
}
"""The destinations left past each filter: a filter is the reason when it stops every node the earlier ones let through."""
