"""An independent brute-force oracle for preemption decisions, over plain snapshot dicts.

Nothing here imports the planner: the rules are written again from the specification so the tests
check the planner's preemption engine against a second, naive reading of the same semantics.

Decision: a pending job J places its pods (all of them, or at least ``min_available``) after a set
of victim gangs is evicted.

* A victim pod is LP, not locked, not standby, and of priority strictly below J's (the least
  priority over J's pods; ``priority_value`` or 1000 for HP, 0 for LP). A unit (gang) is every pod
  sharing a ``job`` (a job-less pod, or a pod of a job with ``min_available`` 1, is a unit of its own); a unit may be evicted only when every
  placed pod of it may be, and evicting it evicts all its placed pods. The priority rule alone
  limits a spot job (one with an LP pod): at the default spot priority it evicts nothing, with a
  higher ``priority_value`` it may evict lower spot pods (see ``SPOT_JOBS_PREEMPT``).
* Afterwards, on every node receiving a pod of J: GPUs, CPUs, memory within capacity (GPUs: whole
  ones plus the fewest devices the GPU shares pack on; CPUs and memory with 1e-9 of slack); every arriving pod's ``gpu_models`` (if any) holds the node's model,
  its ``node_selector`` is a subset of the labels, the node is schedulable; no arriving pod shares
  an ``anti_affinity`` group with another pod on the node. A ``required`` topology puts every
  placed pod of J under one switch (a node without one is a domain of its own).
* Cost of a pod: gpus x (now - last checkpoint); last checkpoint is ``checkpoint_s``, else the last
  multiple of ``checkpoint_interval_s`` after ``started_s``, else ``started_s`` (0 when missing).

The search uses two monotonicity facts, both plain consequences of the rules: evicting more never
makes a placement illegal, and dropping an arriving pod never does. So the optimum is None exactly
when no placement of ``need`` pods exists with every evictable unit gone, and otherwise it is the
cost of the cheapest evictable subset admitting a placement of exactly ``need`` pods.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

from tests.support.allocate_oracle import devices_for

EPS = 1e-9
HP_DEFAULT = 1000
SPOT_JOBS_PREEMPT = True
"""Whether a job with an LP pod may evict at all. True: only the priority rule limits it (the
project's rule since 7bea754, "a spot pod with a priority_value may preempt lower ones"). False:
the earlier rule, "a job with any LP pod never evicts" (SpotGPU's)."""
LP_DEFAULT = 0

Snapshot = Mapping[str, Any]


# ----------------------------------------------------------------------------------------------
# Small readers
# ----------------------------------------------------------------------------------------------


def priority(pod: Mapping[str, Any]) -> int:
    value = pod.get("priority_value")
    if value is not None:
        return int(value)
    return HP_DEFAULT if pod.get("priority", "HP") == "HP" else LP_DEFAULT


def pod_cost(pod: Mapping[str, Any], now: float) -> float:
    """GPU-seconds lost if ``pod`` is evicted at ``now``."""
    started = pod.get("started_s")
    started = 0.0 if started is None else float(started)
    if pod.get("checkpoint_s") is not None:
        last = float(pod["checkpoint_s"])
    elif pod.get("checkpoint_interval_s") is not None:
        interval = float(pod["checkpoint_interval_s"])
        last = started + math.floor((now - started) / interval) * interval
    else:
        last = started
    return float(pod["gpus"]) * (now - last)


def unit_key(pod: Mapping[str, Any], one_by_one: set[str] = frozenset()) -> tuple[str, str]:
    """A victim unit: the pod's gang, or the pod alone (no job, or a job of min_available 1)."""
    return ("job", pod["job"]) if pod.get("job") is not None and pod["job"] not in one_by_one else ("pod", pod["name"])


def gpus_held(pods: Iterable[Mapping[str, Any]]) -> float:
    """Devices the pods hold: their whole GPUs plus the fewest devices their GPU shares pack on."""
    pods = list(pods)
    shares = tuple(sorted((float(p["gpus"]) for p in pods if 0 < float(p["gpus"]) < 1), reverse=True))
    return sum(float(p["gpus"]) for p in pods if float(p["gpus"]) >= 1) + devices_for(shares)


def _domain(node: Mapping[str, Any], level: str) -> str:
    if level == "spine" and node.get("spine") is not None:
        return "spine:" + node["spine"]
    if node.get("asw") is not None:
        return "asw:" + node["asw"]
    return "node:" + node["name"]


class Decision:
    """Everything about one decision (snapshot and job) the checks need, indexed once."""

    def __init__(self, snapshot: Snapshot, job: str, now: float | None = None):
        self.snapshot = snapshot
        self.job = job
        self.now = float(snapshot.get("time_s", 0.0)) if now is None else float(now)
        self.nodes = {n["name"]: n for n in snapshot["nodes"]}
        self.pods = {p["name"]: p for p in snapshot.get("pods", [])}
        jobs = {j["name"]: j for j in snapshot.get("jobs", [])}
        if job not in jobs:
            raise KeyError(f"unknown job {job!r}")
        self.spec = jobs[job]
        self.job_pods = [p["name"] for p in snapshot.get("pods", []) if p.get("job") == job]
        if not self.job_pods or any(self.pods[p].get("node") is not None for p in self.job_pods):
            raise ValueError(f"job {job!r} is not a pending job with pods")
        self.need = self.spec.get("min_available") or len(self.job_pods)
        self.job_priority = min(priority(self.pods[p]) for p in self.job_pods)
        self.preemptive = SPOT_JOBS_PREEMPT or all(self.pods[p].get("priority", "HP") == "HP" for p in self.job_pods)
        self.placed = [p["name"] for p in snapshot.get("pods", []) if p.get("node") is not None]
        one_by_one = {name for name, j in jobs.items() if j.get("min_available") == 1}
        self.unit_of = {name: unit_key(pod, one_by_one) for name, pod in self.pods.items()}
        self.unit_pods: dict[tuple[str, str], list[str]] = {}
        for name in self.placed:
            self.unit_pods.setdefault(self.unit_of[name], []).append(name)
        self.cost = {name: pod_cost(self.pods[name], self.now) for name in self.placed}
        self.evictable_units = [u for u, pods in self.unit_pods.items() if self.preemptive and all(map(self.may_be_victim, pods))]
        topology = self.spec.get("topology")
        self.level = topology["level"] if topology and topology.get("mode") == "required" else None

    # who may go ---------------------------------------------------------------------------------

    def may_be_victim(self, name: str) -> bool:
        pod = self.pods[name]
        return pod.get("priority", "HP") == "LP" and not pod.get("locked", False) and not pod.get("standby", False) and priority(pod) < self.job_priority

    def victim_problems(self, evicted: Iterable[str]) -> list[str]:
        evicted = set(evicted)
        problems = []
        for name in sorted(evicted):
            pod = self.pods.get(name)
            if pod is None or pod.get("node") is None:
                problems.append(f"{name}: not a running pod")
                continue
            if not self.preemptive:
                problems.append(f"{name}: job {self.job} has an LP pod and may not evict")
            if not self.may_be_victim(name):
                problems.append(
                    f"{name}: may not be a victim (priority {pod.get('priority', 'HP')}/{priority(pod)}, "
                    f"locked {pod.get('locked', False)}, standby {pod.get('standby', False)}, job priority {self.job_priority})"
                )
            left = [q for q in self.unit_pods[self.unit_of[name]] if q not in evicted]
            if left:
                problems.append(f"{name}: its gang {self.unit_of[name]} keeps {left} running")
        return problems

    # where the job's pods go ----------------------------------------------------------------------

    def placement_problems(self, placements: Mapping[str, str], evicted: Iterable[str]) -> list[str]:
        evicted = set(evicted)
        problems = []
        for pod, node in placements.items():
            if pod not in self.job_pods:
                problems.append(f"{pod}: not a pod of job {self.job}")
            if node not in self.nodes:
                problems.append(f"{pod}: unknown node {node}")
        if problems:
            return problems
        if len(placements) < self.need:
            problems.append(f"{len(placements)} pods placed, the job needs {self.need}")
        arriving: dict[str, list[str]] = {}
        for pod, node in placements.items():
            arriving.setdefault(node, []).append(pod)
        for node_name, newcomers in arriving.items():
            node = self.nodes[node_name]
            staying = [q for q in self.placed if self.pods[q]["node"] == node_name and q not in evicted]
            everyone = [self.pods[q] for q in staying + newcomers]
            # a standby pod holds nothing (it lent its GPUs) but reserves: the HP pods must fit too
            groups = [("", [p for p in everyone if not p.get("standby")])]
            if any(p.get("standby") for p in everyone):
                groups.append(("HP reservations: ", [p for p in everyone if p.get("priority", "HP") == "HP"]))
            for what, counted in groups:
                gpus = gpus_held(counted)
                cpus = sum(float(p["cpus"]) for p in counted)
                memory = sum(float(p.get("memory_gib", 0.0)) for p in counted)
                if gpus > node["gpus"]:
                    problems.append(f"{what}{node_name}: {gpus:g} GPUs of {node['gpus']}")
                if cpus > float(node["cpus"]) + EPS:
                    problems.append(f"{what}{node_name}: {cpus:g} CPUs of {node['cpus']}")
                if memory > float(node["memory_gib"]) + EPS:
                    problems.append(f"{what}{node_name}: {memory:g} GiB of {node['memory_gib']}")
            labels = node.get("labels") or {}
            for name in newcomers:
                pod = self.pods[name]
                if not node.get("schedulable", True):
                    problems.append(f"{name}: {node_name} is not schedulable")
                models = pod.get("gpu_models") or []
                if models and node.get("gpu_model", "") not in models:
                    problems.append(f"{name}: model {node.get('gpu_model', '')!r} of {node_name} not in {models}")
                for key, value in (pod.get("node_selector") or {}).items():
                    if labels.get(key) != value:
                        problems.append(f"{name}: {node_name} lacks label {key}={value}")
                groups = set(pod.get("anti_affinity") or [])
                for other in staying + newcomers:
                    if other != name and groups & set(self.pods[other].get("anti_affinity") or []):
                        problems.append(f"{name}: shares an anti-affinity group with {other} on {node_name}")
        if self.level is not None:
            domains = {_domain(self.nodes[n], self.level) for n in placements.values()}
            if len(domains) > 1:
                problems.append(f"job {self.job} requires one {self.level}, its pods span {sorted(domains)}")
        return problems

    def problems(self, placements: Mapping[str, str], evicted: Iterable[str]) -> list[str]:
        evicted = set(evicted)
        return self.victim_problems(evicted) + self.placement_problems(placements, evicted)

    # search ---------------------------------------------------------------------------------------

    def evicted_pods(self, units: Iterable[tuple[str, str]]) -> set[str]:
        return {q for u in units for q in self.unit_pods[u]}

    def some_placement(self, evicted: set[str]) -> dict[str, str] | None:
        """A legal placement of exactly ``need`` pods with ``evicted`` gone (None if there is none)."""
        nodes = sorted(self.nodes)
        for chosen in itertools.combinations(self.job_pods, self.need):
            for where in itertools.product(nodes, repeat=len(chosen)):
                placements = dict(zip(chosen, where))
                if not self.placement_problems(placements, evicted):
                    return placements
        return None

    def best(self) -> tuple[float, dict[str, str], set[str]] | None:
        """(least cost, a placement, its evicted pods) over every legal decision; None if none is legal."""
        if self.some_placement(self.evicted_pods(self.evictable_units)) is None:
            return None
        subsets = [subset for k in range(len(self.evictable_units) + 1) for subset in itertools.combinations(self.evictable_units, k)]
        priced = sorted(((sum(self.cost[q] for q in self.evicted_pods(s)), len(s), s) for s in subsets), key=lambda t: t[:2])
        for cost, _, subset in priced:
            evicted = self.evicted_pods(subset)
            placements = self.some_placement(evicted)
            if placements is not None:
                return cost, placements, evicted
        raise AssertionError("unreachable: evicting every evictable unit admits a placement")


# ----------------------------------------------------------------------------------------------
# The functions the tests call
# ----------------------------------------------------------------------------------------------


def best_decision(snapshot: Snapshot, job: str) -> tuple[float, dict[str, str], set[str]] | None:
    return Decision(snapshot, job).best()


def optimum(snapshot: Snapshot, job: str) -> float | None:
    """The least lost work (GPU-seconds) of any legal decision for ``job``; None if none is legal."""
    best = best_decision(snapshot, job)
    return None if best is None else best[0]


def legality_problems(snapshot: Snapshot, job: str, placements: Mapping[str, str], evicted_pods: Iterable[str]) -> list[str]:
    return Decision(snapshot, job).problems(placements, evicted_pods)


def is_legal(snapshot: Snapshot, job: str, placements: Mapping[str, str], evicted_pods: Iterable[str]) -> bool:
    """Whether evicting ``evicted_pods`` and then starting ``placements`` (pod -> node) is legal."""
    return not legality_problems(snapshot, job, placements, evicted_pods)


def cost_of(snapshot: Snapshot, evicted_pods: Iterable[str], now: float | None = None) -> float:
    """Lost work of evicting ``evicted_pods`` at ``now`` (default: the snapshot's time_s)."""
    now = float(snapshot.get("time_s", 0.0)) if now is None else float(now)
    pods = {p["name"]: p for p in snapshot.get("pods", [])}
    return math.fsum(pod_cost(pods[name], now) for name in set(evicted_pods))


def surplus_units(snapshot: Snapshot, job: str, placements: Mapping[str, str], evicted_pods: Iterable[str]) -> int:
    """Victim units of a legal decision whose return (all their pods kept) leaves it legal."""
    decision = Decision(snapshot, job)
    evicted = set(evicted_pods)
    units = {decision.unit_of[q] for q in evicted}
    count = 0
    for unit in units:
        kept = evicted - set(decision.unit_pods[unit])
        if not decision.problems(placements, kept):
            count += 1
    return count
