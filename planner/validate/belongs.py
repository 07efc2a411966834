"""Does a plan belong to a snapshot? Checked before a plan is rendered against a snapshot given
separately (``planner render PLAN --snapshot SNAP``, a stored plan with its stored snapshot), because
a script or a PodMigrationJob from the wrong snapshot would move the wrong pods or request the wrong
resources.

The check compares what the plan touches, not the whole snapshot (a later snapshot of the same cluster
in which these pods are unchanged is fine; the plan's ``report.provenance.snapshot_sha256`` says
whether it is the very same one): every pod the plan names exists; a pod's first move starts on the
node the snapshot has it on and, when the plan recorded a UID, the snapshot's pod has that UID; every
node the plan names exists; a victim is on the node the plan evicts it from; a placed pod is pending.
Each problem is one line starting with the plan's field path."""

from __future__ import annotations

from typing import Any

from planner.cluster import Cluster
from planner.kubernetes_names import quoted


def snapshot_mismatches(plan: Any, cluster: Cluster) -> list[str]:
    """Every way ``plan`` (of any kind; both plans of a comparison) does not belong to ``cluster``."""
    if hasattr(plan, "heuristic") and hasattr(plan, "exact"):
        return [f"heuristic.{p}" for p in snapshot_mismatches(plan.heuristic, cluster)] + [f"exact.{p}" for p in snapshot_mismatches(plan.exact, cluster)]
    pods = {pod.name: pod for pod in cluster.pods}
    nodes = {node.name for node in cluster.nodes}
    problems: list[str] = []

    def node_known(path: str, name: str) -> None:
        if name not in nodes:
            problems.append(f"{path}: node {quoted(name)} is not in the snapshot")

    moved: set[str] = set()
    for w, wave in enumerate(getattr(plan, "waves", [])):
        for k, move in enumerate(wave):
            path = f"waves[{w}][{k}]"
            pod = pods.get(move.pod)
            if pod is None:
                problems.append(f"{path}.pod: pod {quoted(move.pod)} is not in the snapshot")
            elif move.pod not in moved:
                if pod.node != move.from_:
                    where = f"on node {quoted(pod.node)}" if pod.node else "pending"
                    problems.append(f"{path}.from: the plan moves pod {quoted(move.pod)} from node {quoted(move.from_)}; in the snapshot it is {where}")
                elif move.uid is not None and pod.uid != move.uid:
                    has = f"UID {quoted(pod.uid)}" if pod.uid else "no UID"
                    problems.append(
                        f"{path}.uid: the plan's pod {quoted(move.pod)} has UID {quoted(move.uid)}; the snapshot's has {has} (another pod of that name)"
                    )
            moved.add(move.pod)
            node_known(f"{path}.from", move.from_)
            node_known(f"{path}.to", move.to)
    for i, victim in enumerate(getattr(plan, "victims", [])):
        pod = pods.get(victim.pod)
        if pod is None:
            problems.append(f"victims[{i}].pod: pod {quoted(victim.pod)} is not in the snapshot")
        elif pod.node != victim.node:
            problems.append(
                f"victims[{i}].node: the plan evicts pod {quoted(victim.pod)} from node {quoted(victim.node)}; in the snapshot it is on {quoted(pod.node)}"
            )
    for i, placement in enumerate(getattr(plan, "placements", [])):
        pod = pods.get(placement.pod)
        if pod is None:
            problems.append(f"placements[{i}].pod: pod {quoted(placement.pod)} is not in the snapshot")
        elif pod.node is not None and placement.pod not in moved and not getattr(plan, "reactivate", None):
            problems.append(f"placements[{i}].pod: the plan starts pod {quoted(placement.pod)}; in the snapshot it already runs on {quoted(pod.node)}")
        node_known(f"placements[{i}].node", placement.node)
    reactivate = getattr(plan, "reactivate", None)
    if reactivate and reactivate not in pods:
        problems.append(f"reactivate: pod {quoted(reactivate)} is not in the snapshot")
    return problems


def mismatch_message(problems: list[str], snapshot: str) -> list[str]:
    """The first mismatch, how many more, and the fix: what a refusal prints (exit 2, or 422)."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return [
        problems[0] + more,
        (
            f"{snapshot}: the plan does not belong to this snapshot; render it with the snapshot it was planned from "
            "(its report.provenance.snapshot_sha256), or plan again from this one"
        ),
    ]
