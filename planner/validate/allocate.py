"""Check an allocation plan with the rules themselves (``rules.py``), independently of the planners.

Valid when every placed pod was pending, appears once and belongs to a job; each job is placed whole
(or at least ``min_available`` of its pods) or not at all; every node receiving pods obeys every rule
with its residents and all the pods it receives; a job whose topology is ``required`` sits under one
switch (``asw`` or ``spine``); ``unplaced`` names only pending jobs the plan does not start.
"""

from __future__ import annotations

from collections import defaultdict

from planner import rules
from planner.cluster import Cluster, Pod
from planner.plans import AllocationPlan
from planner.validate.violation import Violation

UNKNOWN_POD = "unknown_pod"
UNKNOWN_NODE = "unknown_node"
NOT_PENDING = "pod_not_pending"
PLACED_TWICE = "placed_twice"
NO_JOB = "pod_without_job"
GANG_INCOMPLETE = "gang_incomplete"
UNPLACED_WRONG = "unplaced_mismatch"


class SnapshotIndex:
    """The validator's lookups of one snapshot (built once; a warm allocator keeps it between requests)."""

    def __init__(self, cluster: Cluster) -> None:
        self.nodes = {n.name: n for n in cluster.nodes}
        self.pods = {p.name: p for p in cluster.pods}
        self.jobs = {j.name: j for j in cluster.jobs}
        self.job_index = cluster.job_index()
        self.pending: dict[str, int] = defaultdict(int)
        self.residents: dict[str, list[Pod]] = defaultdict(list)
        self.running_nodes: dict[str, list[str]] = defaultdict(list)  # job -> nodes of its running pods
        for pod in cluster.pods:
            if pod.node is None:
                if pod.job is not None:
                    self.pending[pod.job] += 1
                continue
            self.residents[pod.node].append(pod)
            if pod.job is not None:
                self.running_nodes[pod.job].append(pod.node)
        # plain dicts: validation only reads them
        self.pending, self.residents, self.running_nodes = dict(self.pending), dict(self.residents), dict(self.running_nodes)


def validate_allocate(cluster: Cluster, plan: AllocationPlan, index: SnapshotIndex | None = None, lone_pods: bool = False) -> list[Violation]:
    """Every violation of the plan on ``cluster`` (``index``: its lookups, when already built).

    ``lone_pods``: a pending pod of no job may be placed, as a gang of one (make-room plans)."""
    index = SnapshotIndex(cluster) if index is None else index
    nodes, pods, jobs = index.nodes, index.pods, index.jobs
    problems: list[Violation] = []
    arriving: dict[str, list[Pod]] = defaultdict(list)
    placed_by_job: dict[str, list[str]] = defaultdict(list)
    seen: set[str] = set()
    for k, placement in enumerate(plan.placements):
        pod = pods.get(placement.pod)
        where = f"placements[{k}]"
        if pod is None:
            problems.append(Violation(UNKNOWN_POD, f"{where}: unknown pod '{placement.pod}'"))
            continue
        if placement.node not in nodes:
            problems.append(Violation(UNKNOWN_NODE, f"{where}: unknown node '{placement.node}'", pod=pod.name))
            continue
        if pod.node is not None:
            problems.append(Violation(NOT_PENDING, f"{where}: pod '{pod.name}' already runs on '{pod.node}'", pod=pod.name))
            continue
        if pod.job is None and not lone_pods:
            problems.append(Violation(NO_JOB, f"{where}: pod '{pod.name}' belongs to no job", pod=pod.name))
            continue
        if pod.name in seen:
            problems.append(Violation(PLACED_TWICE, f"{where}: pod '{pod.name}' is placed twice", pod=pod.name))
            continue
        seen.add(pod.name)
        arriving[placement.node].append(pod)
        if pod.job is not None:
            placed_by_job[pod.job].append(placement.node)
    pending = index.pending
    for job_name, placed_nodes in sorted(placed_by_job.items()):
        job = jobs[job_name]
        wanted = rules.gang_need(job.min_available, pending.get(job_name, 0), len(index.running_nodes.get(job_name, [])))
        if len(placed_nodes) < wanted:
            problems.append(Violation(GANG_INCOMPLETE, f"{len(placed_nodes)} of job '{job_name}''s pods are placed; the gang needs {wanted}"))
        running = [nodes[n] for n in index.running_nodes.get(job_name, [])]
        if not rules.job_topology_ok(job, [*running, *(nodes[n] for n in placed_nodes)]):
            level = job.topology.level if job.topology else ""
            problems.append(Violation(rules.JOB_TOPOLOGY, f"job '{job_name}' requires one {level}; its pods would span several"))
    residents = index.residents
    for node_name, newcomers in sorted(arriving.items()):
        names = {p.name for p in newcomers}
        for brk in rules.node_rule_breaks(nodes[node_name], residents.get(node_name, []), newcomers):
            if brk.rule == rules.ANTI_AFFINITY and brk.pod not in names:
                continue
            problems.append(Violation(brk.rule, brk.detail, pod=brk.pod, node=node_name))
    for k, item in enumerate(plan.unplaced):
        if item.job not in pending:
            problems.append(Violation(UNPLACED_WRONG, f"unplaced[{k}]: job '{item.job}' has no pending pods"))
        elif item.job in placed_by_job:
            problems.append(Violation(UNPLACED_WRONG, f"unplaced[{k}]: job '{item.job}' is placed by this plan"))
    return problems
