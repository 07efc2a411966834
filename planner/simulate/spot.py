"""Spot simulation core (issue 14, item 1): a deterministic event-driven replay of HP and spot jobs on
a cluster, each scheduling decision made by the planner's own preemption planner (``plan_preempt``
with the policy's method), so the simulator judges exactly the code users run.

Events, in time order (ties: completions before arrivals, then by job name, so a replay is a function
of its input): a job arrives; a run finishes. After each event every pending job is offered, HP
first, then by submit time and name; a job that cannot start stays pending (later jobs may still
start: backfilling). Starting a job may evict victim jobs (whole, as the planner's units): each loses
its progress since its run's last checkpoint (``checkpoint_interval_s`` after the run's start, the
planner's cost model; without checkpoints, the whole run) and goes back to the queue with the rest of
its work plus ``restart_overhead_s``. HP jobs are never victims (the planner never picks them).

Every state reached is a snapshot the planner validates its plans on; with ``check=True`` the engine
also checks each state with ``rules.py`` (capacity and every placement rule), as the tests do.

Not yet here (issue 14): standby windows, the workload generator on the spot-2026 node list, the
metric set over a replay beyond completion times and lost work, the exact schedule of Appendix A.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Literal

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod
from planner.engine.preempt import PreemptOptions, plan_preempt

POLICIES = ("spotgpu", "spotgpu-paper", "flextopo", "k8s-default", "volcano", "random")


@dataclass(frozen=True)
class SimJob:
    """A job of the workload: ``workers`` pods of one shape, needing ``work_s`` seconds of running."""

    name: str
    priority: Literal["HP", "LP"]
    submit_s: float
    work_s: float
    workers: int = 1
    gpus_per_worker: int = 1
    cpus_per_worker: float = 1.0
    memory_gib_per_worker: float = 1.0
    checkpoint_interval_s: float | None = None
    gpu_models: tuple[str, ...] = ()
    """GPU models the job's pods may use (empty: any)."""
    standby_windows_s: tuple[tuple[float, float], ...] = ()
    """HP jobs only: [start, end) times (absolute, seconds) in which a running job's pods are on
    standby (ASI's Standby): they keep their nodes but lend their GPUs and CPUs to spot pods, and at
    the window's end each pod wakes on its node, evicting spot pods there. The job's work goes on
    meanwhile (a service idle at night still runs). Sorted and disjoint."""

    def __post_init__(self) -> None:
        for name in ("submit_s", "work_s", "workers", "gpus_per_worker", "cpus_per_worker", "memory_gib_per_worker"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0 or (name in ("work_s", "workers") and value <= 0):
                raise ValueError(f"jobs[{self.name}].{name}: must be {'above' if name in ('work_s', 'workers') else 'at least'} 0, got {value}")
        if self.checkpoint_interval_s is not None and not self.checkpoint_interval_s > 0:
            raise ValueError(f"jobs[{self.name}].checkpoint_interval_s: must be above 0, got {self.checkpoint_interval_s}")
        if self.priority not in ("HP", "LP"):
            raise ValueError(f"jobs[{self.name}].priority: must be 'HP' or 'LP', got {self.priority!r}")
        if self.standby_windows_s and self.priority != "HP":
            raise ValueError(f"jobs[{self.name}].standby_windows_s: only HP jobs go on standby; drop the windows or make the job HP")
        last = -math.inf
        for k, (start, end) in enumerate(self.standby_windows_s):
            if not (math.isfinite(start) and math.isfinite(end) and last <= start < end):
                raise ValueError(f"jobs[{self.name}].standby_windows_s[{k}]: windows must be finite, start before end, sorted and disjoint; "
                                 f"got ({start}, {end})")
            last = end


@dataclass
class JobOutcome:
    name: str
    priority: str
    submit_s: float
    first_start_s: float | None = None
    finish_s: float | None = None
    evictions: int = 0
    lost_gpu_s: float = 0.0
    gpu_s_run: float = 0.0
    """GPU-seconds the job held its GPUs, over all its runs (lost ones included)."""


@dataclass
class Replay:
    policy: str
    outcomes: dict[str, JobOutcome]
    end_s: float
    decisions: int = 0

    def completion_s(self, priority: str) -> list[float]:
        return [o.finish_s - o.submit_s for o in self.outcomes.values() if o.priority == priority and o.finish_s is not None]

    @property
    def lost_gpu_s(self) -> float:
        return sum(o.lost_gpu_s for o in self.outcomes.values())


@dataclass
class _Run:
    start_s: float
    done_before_s: float  # work saved before this run
    overhead_s: float  # restart overhead this run spends before making progress
    nodes: list[str] = field(default_factory=list)
    token: int = 0


def simulate(nodes: list[Node], jobs: list[SimJob], policy: str = "spotgpu", restart_overhead_s: float = 0.0, seed: int = 0,
             check: bool = False, reoffer_all: bool = False) -> Replay:
    """Replay ``jobs`` on ``nodes`` with preemption ``policy`` until every job finishes (or none can
    start any more). ``reoffer_all`` offers every pending job after every event, even those proven
    unable to start since (the same replay, slower: a test compares the two)."""
    if policy not in POLICIES:
        raise ValueError(f"policy: unknown '{policy}'; choose one of {', '.join(POLICIES)}")
    if not math.isfinite(restart_overhead_s) or restart_overhead_s < 0:
        raise ValueError(f"restart_overhead_s: must be at least 0, got {restart_overhead_s}")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ValueError("jobs: names must be unique")
    spec = {j.name: j for j in jobs}
    outcome = {j.name: JobOutcome(j.name, j.priority, j.submit_s) for j in jobs}
    saved = {j.name: 0.0 for j in jobs}  # work kept at the last checkpoint of earlier runs
    overhead = {j.name: 0.0 for j in jobs}  # restart overhead owed by the next run
    running: dict[str, _Run] = {}
    pending: set[str] = set()
    # pending jobs whose last offer was proven infeasible with nothing freed since: arrivals and
    # non-preemptive starts only take room (a new spot victim gives back no more than the room it
    # took), so offering them again would be proven infeasible again
    stale: set[str] = set()
    # (time, completions before arrivals, job, kind, run token): a replay is a function of its input
    events: list[tuple[float, int, str, str, int]] = [(j.submit_s, 1, j.name, "arrive", 0) for j in jobs]
    heapq.heapify(events)
    tokens = 0
    replay = Replay(policy, outcome, 0.0)
    now = 0.0
    while events:
        now = events[0][0]
        while events and events[0][0] == now:  # every event of this instant before deciding
            _, _, name, kind, token = heapq.heappop(events)
            if kind == "arrive":
                pending.add(name)
                continue
            run = running.get(name)
            if run is None or run.token != token:
                continue  # that run was preempted
            del running[name]
            outcome[name].finish_s = now
            outcome[name].gpu_s_run += _gpus(spec[name]) * (now - run.start_s)
            stale.clear()  # capacity freed: every pending job may start now
        for _ in range(len(jobs) + 1):  # passes until nothing more starts (evicted jobs may fit elsewhere)
            started = False
            for name in sorted(pending, key=lambda n: (spec[n].priority != "HP", spec[n].submit_s, n)):
                if name not in pending or name in stale:
                    continue
                cluster = _snapshot(nodes, spec, running, now, name)
                if check:
                    _check(cluster)
                options = PreemptOptions(method=policy, now_s=now, **({"seed": seed} if policy == "random" else {}))
                plan = plan_preempt(cluster, name, options)
                replay.decisions += 1
                if not plan.placements:
                    if plan.report is not None and plan.report.status == "infeasible" and not reoffer_all:
                        stale.add(name)  # proven: not even with every allowed victim gone
                    continue
                if plan.victims:
                    stale.clear()  # evictions may free more than the job takes
                for victim in sorted({v.job or v.pod for v in plan.victims}):
                    run = running.pop(victim)
                    job = spec[victim]
                    kept = _checkpointed(job, run, now)
                    outcome[victim].evictions += 1
                    outcome[victim].lost_gpu_s += _gpus(job) * (now - run.start_s - kept)
                    outcome[victim].gpu_s_run += _gpus(job) * (now - run.start_s)
                    saved[victim] = run.done_before_s + max(0.0, kept - run.overhead_s)
                    overhead[victim] = restart_overhead_s
                    pending.add(victim)
                tokens += 1
                placed = sorted(plan.placements, key=lambda p: int(p.pod.rsplit("-", 1)[1]))
                running[name] = _Run(now, saved[name], overhead[name], [p.node for p in placed], tokens)
                pending.discard(name)
                if outcome[name].first_start_s is None:
                    outcome[name].first_start_s = now
                finish = now + overhead[name] + spec[name].work_s - saved[name]
                heapq.heappush(events, (finish, 0, name, "finish", tokens))
                started = True
            if not started:
                break
    replay.end_s = now
    return replay


def _gpus(job: SimJob) -> int:
    return job.workers * job.gpus_per_worker


def _checkpointed(job: SimJob, run: _Run, now: float) -> float:
    """Seconds of this run kept at its last checkpoint (the planner's cost model, ``rules.lost_gpu_s``)."""
    if job.checkpoint_interval_s is None:
        return 0.0
    return math.floor((now - run.start_s) / job.checkpoint_interval_s) * job.checkpoint_interval_s


def _snapshot(nodes: list[Node], spec: dict[str, SimJob], running: dict[str, _Run], now: float, asking: str) -> Cluster:
    """The cluster at ``now``: the running jobs' pods on their nodes, the asking job's pods pending."""
    pods, jobs = [], []
    for name in sorted(running) + [asking]:
        job, run = spec[name], running.get(name)
        jobs.append(Job(name=name))
        for w in range(job.workers):
            pods.append(Pod(name=f"{name}-{w}", job=name, node=run.nodes[w] if run else None, gpus=job.gpus_per_worker,
                            cpus=job.cpus_per_worker, memory_gib=job.memory_gib_per_worker, priority=job.priority,
                            started_s=run.start_s if run else None, checkpoint_interval_s=job.checkpoint_interval_s))
    return Cluster(time_s=now, nodes=nodes, pods=pods, jobs=jobs)


def _check(cluster: Cluster) -> None:
    """Every node of a state the engine reached holds its pods by every rule."""
    by_node = cluster.pods_by_node()
    for node in cluster.nodes:
        if by_node[node.name] and not rules.pods_fit(node, [], by_node[node.name]):
            raise AssertionError(f"state at {cluster.time_s} s: node '{node.name}' does not hold its pods")


__all__ = ["POLICIES", "JobOutcome", "Replay", "SimJob", "simulate"]
