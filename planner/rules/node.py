"""Rules over the set of pods on a node (capacities, resources by name, anti-affinity and host ports),
over a job's topology domain, and over the devices placed pods say they hold (``gpu_indexes``)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from planner.rules.base import ANTI_AFFINITY, EPS, OVER_CAPACITY, RuleBreak
from planner.rules.shares import gpu_devices_needed, is_share
from planner.rules.static import (
    conflict_groups,
    offered_amount,
    requested,
    static_rule_breaks,
)

if TYPE_CHECKING:
    from planner.cluster import (
        Job,
        Node,
        Pod,
    )


def resource_shortfalls(node: Node, pods: Sequence[Pod]) -> list[str]:
    """Human-readable excesses of GPU devices, CPUs and memory; empty when the pods fit.

    A standby pod (an HP pod whose containers sleep, ASI's Standby) holds no resources: spot pods
    may run in what it lent. It keeps a reservation: the HP pods of the node, standby ones included,
    must fit the node too, so a standby pod can always come back by evicting spot pods.
    """
    running = [p for p in pods if not p.standby]
    problems = _shortfalls(node, running, "")
    if len(running) < len(pods):
        problems += _shortfalls(node, [p for p in pods if p.priority == "HP"], "HP reservations (standby included) ", named=False)
    return problems


def _shortfalls(node: Node, pods: Sequence[Pod], what: str, named: bool = True) -> list[str]:
    problems = []
    devices = gpu_devices_needed(p.gpus for p in pods)
    if devices > node.gpus:
        problems.append(f"{what}needs {devices} GPUs, node '{node.name}' has {node.gpus}")
    cpus = sum(p.cpus for p in pods)
    if cpus > node.cpus + EPS:
        problems.append(f"{what}needs {cpus:g} CPUs, node '{node.name}' has {node.cpus:g}")
    memory = sum(p.memory_gib for p in pods)
    if memory > node.memory_gib + EPS:
        problems.append(f"{what}needs {memory:g} GiB memory, node '{node.name}' has {node.memory_gib:g}")
    if named and node.resources is not None:
        totals: dict[str, int] = {}
        for pod in pods:
            for name, amount in requested(pod).items():
                totals[name] = totals.get(name, 0) + amount
        for name, total in sorted(totals.items()):
            offered = offered_amount(node, name)
            if offered is not None and total > offered:
                problems.append(f"{what}needs {total} {name}, node '{node.name}' offers {offered}")
    return problems


def anti_affinity_conflicts(pods: Sequence[Pod]) -> list[tuple[str, str, str]]:
    """(group, first pod, second pod) for every pair of different pods sharing a group."""
    first_in_group: dict[str, str] = {}
    conflicts = []
    for pod in pods:
        for group in conflict_groups(pod):
            other = first_in_group.get(group)
            if other is None:
                first_in_group[group] = pod.name
            elif other != pod.name:
                conflicts.append((group, other, pod.name))
    return conflicts


def pods_fit(node: Node, pods: Sequence[Pod], arriving: Sequence[Pod] = ()) -> bool:
    """True when ``pods`` (already there) plus ``arriving`` may all be on ``node`` at once."""
    return not node_rule_breaks(node, pods, arriving)


def node_rule_breaks(node: Node, residents: Sequence[Pod], arriving: Sequence[Pod] = ()) -> list[RuleBreak]:
    """Every node-level rule broken when ``residents`` and ``arriving`` pods share ``node``.

    Residents are pods already on the node (they may stay even if their static rules would not let
    them arrive, e.g. on a cordoned node, or under a taint added after they started, which
    Kubernetes does not evict for NoSchedule); arriving pods must satisfy every rule.
    """
    breaks = []
    everyone = [*residents, *arriving]
    for shortfall in resource_shortfalls(node, everyone):
        breaks.append(RuleBreak(OVER_CAPACITY, node.name, None, shortfall))
    for pod in arriving:
        breaks += static_rule_breaks(pod, node)
    for group, a, b in anti_affinity_conflicts(everyone):
        breaks.append(RuleBreak(ANTI_AFFINITY, node.name, b, f"pods '{a}' and '{b}' share group '{group}' on node '{node.name}'"))
    return breaks


# ----------------------------------------------------------------------------------------------
# Job topology
# ----------------------------------------------------------------------------------------------


def topology_domain(node: Node, level: str) -> str:
    """The switch a node hangs under at ``level``; a node without one is its own domain."""
    if level == "spine":
        if node.spine is not None:
            return f"spine:{node.spine}"
        return topology_domain(node, "asw")
    if node.asw is not None:
        return f"asw:{node.asw}"
    return f"node:{node.name}"


def gang_need(min_available: int | None, pending: int, running: int) -> int:
    """Pending pods of a job that must start together for it to run: all of them for a gang without
    ``min_available``; else what ``min_available`` still lacks beyond its running pods (running pods
    count towards the minimum; a job already at it needs none, and more of its pods may start)."""
    if min_available is None:
        return pending
    return max(0, min(pending, min_available - running))


def job_topology_ok(job: Job, nodes: Iterable[Node]) -> bool:
    """A ``required`` topology holds when every placed pod of the job is under one domain."""
    if job.topology is None or job.topology.mode != "required":
        return True
    return len({topology_domain(n, job.topology.level) for n in nodes}) <= 1


# ----------------------------------------------------------------------------------------------
# Devices: which GPUs of a node the pods say they hold (``gpu_indexes``)
# ----------------------------------------------------------------------------------------------

DEVICES = "devices"


def device_breaks(node: Node, pods: Sequence[Pod]) -> list[RuleBreak]:
    """Every problem with the devices ``pods`` (on ``node``, in order) say they hold: one index per
    whole GPU (one for a share), distinct and in range; a whole-GPU pod's devices its own; the shares
    on one device summing to at most 1. Pods without ``gpu_indexes`` and standby pods (which lent
    their devices) hold none. A conflict is blamed on the later pod."""
    breaks = []
    whole_holder: dict[int, str] = {}
    share_holders: dict[int, list[Pod]] = {}
    for pod in pods:
        if pod.gpu_indexes is None or pod.standby:
            continue
        wanted = 1 if is_share(pod.gpus) else int(pod.gpus)
        indexes = list(pod.gpu_indexes)
        if len(indexes) != wanted:
            breaks.append(RuleBreak(DEVICES, node.name, pod.name, f"lists {len(indexes)} devices, the pod requests {pod.gpus:g} GPUs (so {wanted})"))
        if len(set(indexes)) != len(indexes):
            breaks.append(RuleBreak(DEVICES, node.name, pod.name, "a device is listed twice"))
        outside = [g for g in indexes if not 0 <= g < node.gpus]
        if outside:
            breaks.append(RuleBreak(DEVICES, node.name, pod.name, f"{outside} outside 0..{node.gpus - 1} (node '{node.name}' has {node.gpus} GPUs)"))
        for g in sorted(set(indexes) - set(outside)):
            holder = whole_holder.get(g) or next((q.name for q in share_holders.get(g, ())), None)
            if holder is not None and (not is_share(pod.gpus) or g in whole_holder):
                breaks.append(
                    RuleBreak(
                        DEVICES,
                        node.name,
                        pod.name,
                        f"GPU {g} of node '{node.name}' is already held by pod '{holder}'; a whole-GPU pod holds its devices alone",
                    )
                )
                continue
            if is_share(pod.gpus):
                shares = share_holders.setdefault(g, [])
                if math.fsum(q.gpus for q in shares) + pod.gpus > 1 + EPS:
                    breaks.append(
                        RuleBreak(DEVICES, node.name, pod.name, f"the shares on GPU {g} of node '{node.name}' would sum past 1 (with pod '{shares[0].name}')")
                    )
                    continue
                shares.append(pod)
            else:
                whole_holder[g] = pod.name
    return breaks
