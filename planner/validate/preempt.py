"""Check a preemption plan with the rules themselves (``rules.py``), independently of the planners.

Semantics: every victim is evicted, then the job's pods start on their placements. The plan is valid
when the job was pending and is placed whole (or at least ``min_available`` of its pods), every rule
of ``rules.py`` holds on every node afterwards (capacity, GPU model, selector, anti-affinity,
schedulable, the job's required topology), placements name free devices of their node when they
name any, a ``guaranteed`` NUMA job is aligned (``rules.numa_guaranteed_breaks``), every victim may be
preempted by the job (``rules.victim_refusal``), each victim's unit is evicted whole, and each
victim's ``lost_gpu_s`` is what the cost model gives. A victim unit is a gang (the pods of a job), or
one pod: a pod of no job, or of a job whose pods start one by one (``min_available`` 1, a
Deployment's replicas), which loses replicas without being split. A gang of ``min_available`` k > 1
is evicted whole (evicting only its surplus pods is not modelled).

``surplus_units`` counts victim units the plan did not need: returning any one of them to the cluster
would leave the plan valid. Surplus is not a violation (Volcano's plans have it); it is measured.
"""

from __future__ import annotations

import math
from collections import defaultdict

from planner import rules
from planner.cluster import Cluster, Job, Pod
from planner.plans import PreemptPlan
from planner.standby import reactivation_problems, reactivation_view
from planner.validate.violation import Violation

UNKNOWN_JOB = "unknown_job"
JOB_NOT_PENDING = "job_not_pending"
UNKNOWN_POD = "unknown_pod"
UNKNOWN_NODE = "unknown_node"
NOT_OF_JOB = "placement_not_of_job"
PLACED_TWICE = "placed_twice"
GANG_INCOMPLETE = "gang_incomplete"
VICTIM_NOT_RUNNING = "victim_not_running"
VICTIM_WRONG_NODE = "victim_wrong_node"
VICTIM_WRONG_JOB = "victim_wrong_job"
VICTIM_TWICE = "victim_twice"
GANG_SPLIT = "victim_gang_split"
COST_MISMATCH = "lost_work_mismatch"
DEVICES = rules.DEVICES
COST_TOLERANCE = 1e-6


REACTIVATION = "reactivation"


class ClusterFacts:
    """The name indexes of a cluster that the checks read (nodes, pods and jobs by name, each job's
    pods, each node's running pods, in snapshot order): built once and shared by every check of plans
    made on the same, unchanged cluster. A decision on 10,000 pods otherwise spends most of its time
    building them again (``surplus_units`` once per victim unit)."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.nodes = {n.name: n for n in cluster.nodes}
        self.pods = {p.name: p for p in cluster.pods}
        self.jobs: dict[str, Job] = {j.name: j for j in cluster.jobs}
        self.job_pods: dict[str, list[Pod]] = defaultdict(list)
        self.running: dict[str, list[Pod]] = defaultdict(list)
        for pod in cluster.pods:
            if pod.job is not None:
                self.job_pods[pod.job].append(pod)
            if pod.node is not None:
                self.running[pod.node].append(pod)
        times = [t for pod in cluster.pods if pod.node is not None for t in (pod.started_s, pod.checkpoint_s) if t is not None]
        self.latest_s: float | None = max(times, default=None)
        """The latest start or checkpoint of a running pod: a decision may not be asked before it."""

    def of(self, cluster: Cluster) -> ClusterFacts:
        """These facts when they are ``cluster``'s, else ``cluster``'s own."""
        return self if cluster is self.cluster else ClusterFacts(cluster)


def validate_preempt(cluster: Cluster, plan: PreemptPlan, facts: ClusterFacts | None = None) -> list[Violation]:
    """Every violation of ``plan`` on ``cluster`` (empty when the plan is executable as written).
    ``facts``: ``cluster``'s indexes, when the caller keeps them across plans (built here otherwise)."""
    if plan.reactivate is not None:
        problems = reactivation_problems(cluster, plan.reactivate)
        if problems:
            return [Violation(REACTIVATION, p) for p in problems]
        view = reactivation_view(cluster, plan.reactivate)
        wrong = [f"placements[{k}]: {pl.pod} on {pl.node}" for k, pl in enumerate(plan.placements) if (pl.pod, pl.node) != (view.pod, view.node)]
        if wrong or len(plan.placements) != 1 or plan.job != view.owner:
            return [
                Violation(
                    REACTIVATION,
                    f"a reactivation places only pod '{view.pod}' on its node '{view.node}' "
                    f"and names job '{view.owner}'" + (f" ({'; '.join(wrong)})" if wrong else ""),
                )
            ]
        return _Check(ClusterFacts(view.cluster), plan.model_copy(update={"job": view.job, "reactivate": None})).run()
    return _Check(facts.of(cluster) if facts is not None else ClusterFacts(cluster), plan).run()


def surplus_units(cluster: Cluster, plan: PreemptPlan, facts: ClusterFacts | None = None) -> int:
    """Victim units whose return would leave the plan valid (0 for a plan without surplus);
    ``facts`` as ``validate_preempt``'s."""
    if plan.reactivate is not None:
        view = reactivation_view(cluster, plan.reactivate)
        cluster, plan, facts = view.cluster, plan.model_copy(update={"job": view.job, "reactivate": None}), None
    shared = facts.of(cluster) if facts is not None else ClusterFacts(cluster)
    check = _Check(shared, plan)
    if check.run():
        return 0
    count = 0
    for unit in check.units():
        returned = {v.pod for v in plan.victims if check.unit_of(v.pod) == unit}
        trial = plan.model_copy(update={"victims": [v for v in plan.victims if v.pod not in returned]})
        if not _Check(shared, trial).placement_violations():
            count += 1
    return count


def preemptor_priority(pods: list[Pod]) -> int:
    """A job preempts with the lowest priority among its pods."""
    return min((rules.priority_of(p) for p in pods), default=rules.HP_PRIORITY)


class _Check:
    def __init__(self, facts: ClusterFacts, plan: PreemptPlan):
        self.cluster, self.plan, self.facts = facts.cluster, plan, facts
        self.nodes, self.pods, self.jobs, self.job_pods = facts.nodes, facts.pods, facts.jobs, facts.job_pods

    def unit_of(self, pod_name: str) -> str:
        """The victim unit of a pod: its gang, or the pod alone (no job, or ``min_available`` 1)."""
        pod = self.pods[pod_name]
        job = self.jobs.get(pod.job) if pod.job is not None else None
        return f"pod:{pod.name}" if pod.job is None or (job is not None and job.min_available == 1) else f"job:{pod.job}"

    def units(self) -> list[str]:
        seen: dict[str, None] = {}
        for v in self.plan.victims:
            if v.pod in self.pods:
                seen.setdefault(self.unit_of(v.pod))
        return list(seen)

    def run(self) -> list[Violation]:
        problems = self.request_violations()
        if problems:
            return problems
        return self.victim_violations() + self.placement_violations()

    # the job and its placements ----------------------------------------------------------------

    def request_violations(self) -> list[Violation]:
        plan = self.plan
        job = self.jobs.get(plan.job)
        if job is None:
            return [Violation(UNKNOWN_JOB, f"unknown job '{plan.job}'")]
        problems = []
        running = [p.name for p in self.job_pods[plan.job] if p.node is not None]
        if running:
            problems.append(Violation(JOB_NOT_PENDING, f"job '{plan.job}' is not pending: {', '.join(running[:3])} already run"))
        seen: set[str] = set()
        for k, placement in enumerate(plan.placements):
            pod = self.pods.get(placement.pod)
            if pod is None:
                problems.append(Violation(UNKNOWN_POD, f"placements[{k}]: unknown pod '{placement.pod}'"))
            elif pod.job != plan.job:
                problems.append(Violation(NOT_OF_JOB, f"placements[{k}]: pod '{pod.name}' is not of job '{plan.job}'"))
            if placement.node not in self.nodes:
                problems.append(Violation(UNKNOWN_NODE, f"placements[{k}]: unknown node '{placement.node}'"))
            if placement.pod in seen:
                problems.append(Violation(PLACED_TWICE, f"placements[{k}]: pod '{placement.pod}' is placed twice"))
            seen.add(placement.pod)
        if plan.placements or plan.victims:
            wanted = job.min_available if job.min_available is not None else len(self.job_pods[plan.job])
            if len(seen) < wanted:
                problems.append(Violation(GANG_INCOMPLETE, f"{len(seen)} of job '{plan.job}''s pods are placed; the gang needs {wanted}"))
        return problems

    # victims -----------------------------------------------------------------------------------

    def victim_violations(self) -> list[Violation]:
        plan = self.plan
        priority = preemptor_priority(self.job_pods[plan.job])
        problems = []
        named: set[str] = set()
        for k, victim in enumerate(plan.victims):
            pod = self.pods.get(victim.pod)
            where = f"victims[{k}]"
            if pod is None:
                problems.append(Violation(UNKNOWN_POD, f"{where}: unknown pod '{victim.pod}'", pod=victim.pod))
                continue
            if victim.pod in named:
                problems.append(Violation(VICTIM_TWICE, f"{where}: pod '{pod.name}' is listed twice", pod=pod.name))
            named.add(victim.pod)
            if pod.node is None:
                problems.append(Violation(VICTIM_NOT_RUNNING, f"{where}: pod '{pod.name}' is not running", pod=pod.name))
                continue
            if victim.node != pod.node:
                problems.append(Violation(VICTIM_WRONG_NODE, f"{where}: pod '{pod.name}' runs on '{pod.node}', not '{victim.node}'", pod=pod.name))
            if victim.job != pod.job:
                problems.append(Violation(VICTIM_WRONG_JOB, f"{where}: pod '{pod.name}' is of job {pod.job!r}, not {victim.job!r}", pod=pod.name))
            refusal = rules.victim_refusal(pod, priority)
            if refusal is not None:
                problems.append(Violation(refusal[0], f"{where}: {refusal[1]}", pod=pod.name))
            truth = rules.lost_gpu_s(pod, plan.now_s)
            if not math.isclose(victim.lost_gpu_s, truth, rel_tol=1e-9, abs_tol=COST_TOLERANCE):
                problems.append(Violation(COST_MISMATCH, f"{where}: lost_gpu_s is {victim.lost_gpu_s!r}, the cost model gives {truth!r}", pod=pod.name))
        for job_name in sorted({job for v in named if v in self.pods and (job := self.pods[v].job) is not None}):
            if self.unit_of(self.job_pods[job_name][0].name).startswith("pod:"):
                continue  # min_available 1: its replicas are victims one by one
            left = [p.name for p in self.job_pods[job_name] if p.node is not None and p.name not in named]
            if left:
                problems.append(Violation(GANG_SPLIT, f"victims of job '{job_name}' leave {', '.join(left[:3])} running; a gang is evicted whole"))
        return problems

    # the cluster after the plan ------------------------------------------------------------------

    def placement_violations(self) -> list[Violation]:
        """Rules on every node receiving a pod, with the victims gone and the job's pods started."""
        plan = self.plan
        gone = {v.pod for v in plan.victims}
        arriving: dict[str, list[Pod]] = defaultdict(list)
        for placement in plan.placements:
            placed = self.pods.get(placement.pod)
            if placed is None or placement.node not in self.nodes:
                continue
            indexes = list(placement.gpu_indexes) if placement.gpu_indexes is not None else None
            arriving[placement.node].append(placed.model_copy(update={"gpu_indexes": indexes, "node": placement.node}))
        residents = {name: [pod for pod in self.facts.running.get(name, ()) if pod.name not in gone] for name in arriving}  # the nodes looked at
        problems = []
        job = self.jobs.get(plan.job)
        for node_name, pods in sorted(arriving.items()):
            node = self.nodes[node_name]
            for brk in rules.node_rule_breaks(node, residents[node_name], pods):
                if brk.rule == rules.ANTI_AFFINITY and brk.pod not in {p.name for p in pods}:
                    continue  # a conflict among pods that stay is not the plan's doing
                problems.append(Violation(brk.rule, brk.detail, pod=brk.pod, node=node_name))
            problems += self._device_violations(node_name, residents[node_name], pods)
            if job is not None and job.numa is not None and job.numa.mode == "guaranteed":
                for pod in pods:
                    others = [*residents[node_name], *(q for q in pods if q.name != pod.name)]
                    for reason in rules.numa_guaranteed_breaks(node, pod, pod.gpu_indexes, others):
                        problems.append(Violation(rules.NUMA_GUARANTEED, reason, pod=pod.name, node=node_name))
        if job is not None and arriving:
            placed_nodes = [self.nodes[n] for n, pods in arriving.items() for _ in pods]
            if not rules.job_topology_ok(job, placed_nodes):
                level = job.topology.level if job.topology else ""
                spanned = sorted({rules.topology_domain(n, level) for n in placed_nodes})
                problems.append(Violation(rules.JOB_TOPOLOGY, f"job '{job.name}' requires one {level}, its pods span {', '.join(spanned)}"))
        return problems

    def _device_violations(self, node_name: str, residents: list[Pod], arriving: list[Pod]) -> list[Violation]:
        """``rules.device_breaks`` on the node after the change, for the pods the plan starts."""
        names = {pod.name for pod in arriving}
        return [
            Violation(DEVICES, brk.detail, pod=brk.pod, node=node_name)
            for brk in rules.device_breaks(self.nodes[node_name], [*residents, *arriving])
            if brk.pod in names
        ]
