"""Whether a plan was made for this snapshot: every pod and node it names exists, a move's ``from`` is
where the pod is at that point of the plan, a victim is on its node, a placed pod is pending. The first
mismatch is raised as bad input (a view of a plan over the wrong snapshot would draw nonsense)."""

from __future__ import annotations

from typing import Any

from planner.cluster import Cluster, SnapshotError
from planner.plans import AllocationPlan, DefragPlan, PreemptPlan
from planner.state import ClusterState


def first_mismatch(plan: Any, cluster: Cluster) -> str | None:
    """The first place where ``plan`` does not fit ``cluster`` (a field path and what is wrong), or None."""
    if plan.kind.endswith("-compare"):
        return _first_mismatch(plan.heuristic, cluster, "heuristic.") or _first_mismatch(plan.exact, cluster, "exact.")
    return _first_mismatch(plan, cluster, "")


def check_belongs(plan: Any, cluster: Cluster) -> None:
    """Raise ``SnapshotError`` naming the first mismatch between ``plan`` and ``cluster``."""
    problem = first_mismatch(plan, cluster)
    if problem is not None:
        raise SnapshotError([f"{problem}: the plan does not belong to this snapshot; give the snapshot it was made from"])


def _first_mismatch(plan: Any, cluster: Cluster, prefix: str) -> str | None:
    nodes = {n.name for n in cluster.nodes}
    where = {p.name: p.node for p in cluster.pods}
    if isinstance(plan, DefragPlan):
        return _defrag(plan, nodes, where, prefix)
    if isinstance(plan, PreemptPlan):
        if plan.reactivate is None and plan.job not in {p.job for p in cluster.pods} and plan.job not in where:
            return f"{prefix}job: unknown job '{plan.job}'"
        for k, victim in enumerate(plan.victims):
            if victim.pod not in where:
                return f"{prefix}victims[{k}].pod: unknown pod '{victim.pod}'"
            if where[victim.pod] != victim.node:
                return f"{prefix}victims[{k}].node: pod '{victim.pod}' is on {_on(where[victim.pod])}, not '{victim.node}'"
        return _placements(plan.placements, nodes, where, prefix, pending_ok={plan.reactivate} if plan.reactivate else set())
    if isinstance(plan, AllocationPlan):
        return _placements(plan.placements, nodes, where, prefix)
    return None


def _on(node: str | None) -> str:
    return "no node (pending)" if node is None else f"'{node}'"


def _defrag(plan: DefragPlan, nodes: set[str], where: dict[str, str | None], prefix: str) -> str | None:
    at = dict(where)
    for w, wave in enumerate(plan.waves):
        for i, move in enumerate(wave):
            path = f"{prefix}waves[{w}][{i}]"
            if move.pod not in at:
                return f"{path}.pod: unknown pod '{move.pod}'"
            for field, node in (("from", move.from_), ("to", move.to)):
                if node not in nodes:
                    return f"{path}.{field}: unknown node '{node}'"
            if at[move.pod] != move.from_:
                return f"{path}.from: pod '{move.pod}' is on {_on(at[move.pod])} at this wave, not '{move.from_}'"
        for move in wave:
            at[move.pod] = move.to
    for k, name in enumerate(plan.vacated_nodes):
        if name not in nodes:
            return f"{prefix}vacated_nodes[{k}]: unknown node '{name}'"
    return _placements(plan.placements, nodes, where, prefix)


def _placements(placements: list[Any], nodes: set[str], where: dict[str, str | None], prefix: str, pending_ok: set[str] | None = None) -> str | None:
    for k, placement in enumerate(placements):
        if placement.pod not in where:
            return f"{prefix}placements[{k}].pod: unknown pod '{placement.pod}'"
        if where[placement.pod] is not None and placement.pod not in (pending_ok or set()):
            return f"{prefix}placements[{k}].pod: pod '{placement.pod}' is not pending (it runs on '{where[placement.pod]}')"
        if placement.node not in nodes:
            return f"{prefix}placements[{k}].node: unknown node '{placement.node}'"
    return None


def moved_state(before: ClusterState, plan: DefragPlan) -> ClusterState:
    """The array state after the plan's waves, for a plan that belongs to the snapshot
    (``check_belongs``): each moved pod on its last destination. The view draws what the plan does;
    whether it may do it is ``planner validate``'s question (replaying every rule, as
    ``validate/defrag.py``'s ``apply_plan`` does, takes tens of seconds at 37,707 nodes)."""
    after = before.clone()
    final = {move.pod: move.to for wave in plan.waves for move in wave}
    for pod, node in final.items():
        after.move(before.pod_index[pod], before.node_index[node])
    return after
