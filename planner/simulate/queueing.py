"""Queueing replays of gang jobs on a homogeneous GPU cluster: Kant's policies and metrics (Kant, §3-5).

The cluster: ``nodes`` nodes of ``gpus_per_node`` GPUs in leaf groups (NodeNetGroups) of
``group_nodes`` nodes. A job asks for G GPUs (a power of two): one pod of G GPUs when G fits a node,
else G / gpus_per_node whole-node pods; a job starts all its pods at once or waits (gang).

Queue (one, ordered by priority, then submission time, then size, smaller first; Kant leaves the
direction of the size tiebreak open):

* ``strict-fifo``: only the head may start; a blocked head blocks everyone (head-of-line blocking);
* ``best-effort``: any job that fits starts, in queue order (blocked jobs are skipped);
* ``backfill``: as best-effort, but once the head has waited ``timeout_s`` the jobs that passed it
  while it waited (backfilled: started while an earlier job was blocked) are preempted, most recent
  first, until the head fits (none is, if all of them would not make room); a preempted job loses
  its progress and re-enters the queue at its original submission time (Kant's timeout preemption
  and requeue; no runtime estimates). A job started in order is never a victim.

Placement of a job's pods:

* ``spread``: each pod on the feasible node with the most free GPUs (Kubernetes' default
  LeastAllocated on GPUs; ties: lowest index);
* ``binpack``: each pod on the feasible node with the fewest free GPUs (ties: lowest index);
* ``e-binpack`` (Kant's E-Binpack; its formulas are not published, these are our choices): a job
  smaller than a node goes, binpacked, to the groups already holding small jobs, and opens an empty
  group only when none has room (whole groups stay free for large jobs); a multi-node job takes whole
  free nodes from the fewest groups, best fit (the group with the fewest free nodes that holds it,
  else groups in decreasing free nodes), and never puts a node-sized pod on a partly used node.

Metrics (``queue_row``): GAR time-averaged and SOR (allocated GPU-hours over available: the same
number for a replay, as Kant's two definitions coincide when accrual starts at binding), GFR (share
of nodes partly allocated, time-averaged), JWTD (mean wait from submission to start, per job-size
bucket), JTTEd (nodes used over ceil(G / GPUs per node) and groups over the fewest groups that hold
those nodes), preemptions.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field

import numpy as np

POLICIES = ("strict-fifo", "best-effort", "backfill")
PLACEMENTS = ("spread", "binpack", "e-binpack")


@dataclass
class Job:
    name: str
    submit_s: float
    gpus: int
    duration_s: float
    priority: int = 0


@dataclass
class Outcome:
    """One job's replay: first submission, final start, end, nodes and groups spanned, preemptions."""

    start_s: float | None = None
    end_s: float | None = None
    nodes: int = 0
    groups: int = 0
    preempted: int = 0
    lost_gpu_s: float = 0.0  # GPU-seconds of runs preempted before they ended


@dataclass
class Cluster:
    nodes: int = 1000
    gpus_per_node: int = 8
    group_nodes: int = 32

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass
class QueueReplay:
    cluster: Cluster
    jobs: list[Job]
    outcomes: list[Outcome]
    horizon_s: float
    allocated_gpu_s: float  # integral of allocated GPUs over [measure_from_s, horizon]
    fragmented_node_s: float  # integral of partly allocated nodes over [measure_from_s, horizon]
    measure_from_s: float
    preemptions: int
    series: list[tuple[float, int]] = field(default_factory=list)  # (time, allocated GPUs) after each event


def pods_of(job: Job, cluster: Cluster) -> list[int]:
    """GPUs of each pod: one pod when the job fits a node, else whole-node pods."""
    if job.gpus <= cluster.gpus_per_node:
        return [job.gpus]
    if job.gpus % cluster.gpus_per_node:
        raise ValueError(f"job {job.name}: {job.gpus} GPUs is not a multiple of {cluster.gpus_per_node} GPUs per node")
    return [cluster.gpus_per_node] * (job.gpus // cluster.gpus_per_node)


def place(free: np.ndarray, job: Job, cluster: Cluster, placement: str) -> list[int] | None:
    """Nodes for the job's pods (one entry per pod) under ``placement``, or None when it cannot start."""
    pods = pods_of(job, cluster)
    per = cluster.gpus_per_node
    if len(pods) == 1 and pods[0] < per:
        fits = np.flatnonzero(free >= pods[0])
        if not len(fits):
            return None
        if placement == "e-binpack":
            group = fits // cluster.group_nodes
            used_group = np.zeros(math.ceil(len(free) / cluster.group_nodes), dtype=bool)
            partly = np.flatnonzero(free < per)
            used_group[partly // cluster.group_nodes] = True
            preferred = fits[used_group[group]]
            if len(preferred):
                fits = preferred
        return [int(fits[np.argmax(free[fits])] if placement == "spread" else fits[np.argmin(free[fits])])]
    idle = free == per
    if placement in ("binpack", "spread"):  # whole-node pods: any policy takes idle nodes, lowest index first
        chosen = np.flatnonzero(idle)[: len(pods)]
        return chosen.tolist() if len(chosen) == len(pods) else None
    if idle.sum() < len(pods):
        return None
    groups = math.ceil(len(free) / cluster.group_nodes)
    idle_per_group = np.bincount(np.flatnonzero(idle) // cluster.group_nodes, minlength=groups)
    holds = np.flatnonzero(idle_per_group >= len(pods))
    if len(holds):
        order = [int(holds[np.argmin(idle_per_group[holds])])]
    else:
        order = np.argsort(-idle_per_group, kind="stable").tolist()
    chosen = []
    for g in order:
        members = np.flatnonzero(idle[g * cluster.group_nodes:(g + 1) * cluster.group_nodes]) + g * cluster.group_nodes
        chosen.extend(members[: len(pods) - len(chosen)].tolist())
        if len(chosen) == len(pods):
            return chosen
    return None  # pragma: no cover - idle.sum() >= pods guarantees enough


def replay(cluster: Cluster, jobs: list[Job], policy: str, placement: str, timeout_s: float = 3600.0,
           horizon_s: float | None = None, measure_from_s: float = 0.0) -> QueueReplay:
    """Replay ``jobs`` (submission order need not be sorted) until every job ends or ``horizon_s``;
    allocation and fragmentation are integrated from ``measure_from_s`` on."""
    if policy not in POLICIES:
        raise ValueError(f"unknown queue policy {policy!r}; choose one of {', '.join(POLICIES)}")
    if placement not in PLACEMENTS:
        raise ValueError(f"unknown placement {placement!r}; choose one of {', '.join(PLACEMENTS)}")
    for j in jobs:
        if j.gpus > cluster.gpus:
            raise ValueError(f"job {j.name}: {j.gpus} GPUs is more than the cluster's {cluster.gpus}")
        pods_of(j, cluster)
    free = np.full(cluster.nodes, cluster.gpus_per_node, dtype=np.int64)
    outcomes = [Outcome() for _ in jobs]
    running: dict[int, tuple[float, list[int], int]] = {}  # job -> (start, nodes, generation)
    generation = [0] * len(jobs)
    queue: list[tuple[int, float, int, int]] = []  # (-priority, submit, gpus, job)
    events: list[tuple[float, int, int, int]] = []  # (time, kind 0 end / 1 arrival / 2 timeout, job, generation)
    for i, j in enumerate(jobs):
        heapq.heappush(events, (j.submit_s, 1, i, 0))
    end = horizon_s if horizon_s is not None else math.inf
    now, allocated_s, fragmented_s, last = 0.0, 0.0, 0.0, 0.0
    preemptions = 0
    blocked_since: dict[int, float] = {}  # head job -> when it became the blocked head
    backfilled: set[int] = set()  # running jobs that started past a blocked head (the only victims)
    series: list[tuple[float, int]] = []

    def advance(t: float) -> None:
        nonlocal allocated_s, fragmented_s, last
        t = min(t, end)
        last = max(last, min(t, measure_from_s))
        if t > last:
            used = int(cluster.gpus - free.sum())
            partly = int(((free > 0) & (free < cluster.gpus_per_node)).sum())
            allocated_s += used * (t - last)
            fragmented_s += partly * (t - last)
            last = t

    def start(i: int, nodes: list[int]) -> None:
        for n, gpus in zip(nodes, pods_of(jobs[i], cluster)):
            free[n] -= gpus
        generation[i] += 1
        running[i] = (now, nodes, generation[i])
        outcomes[i].start_s, outcomes[i].nodes = now, len(set(nodes))
        outcomes[i].groups = len({n // cluster.group_nodes for n in nodes})
        heapq.heappush(events, (now + jobs[i].duration_s, 0, i, generation[i]))

    def stop(i: int) -> None:
        _, nodes, _ = running.pop(i)
        for n, gpus in zip(nodes, pods_of(jobs[i], cluster)):
            free[n] += gpus

    def schedule() -> None:
        if policy == "strict-fifo":  # the head starts or nobody does
            while queue:
                nodes = place(free, jobs[queue[0][3]], cluster, placement)
                if nodes is None:
                    return
                start(queue.pop(0)[3], nodes)
            return
        waiting = []
        head_blocked = False
        failed = {True: math.inf, False: math.inf}  # smallest size that failed this pass, per (fits in a node)
        pending = list(queue)
        queue.clear()
        k = 0
        while k < len(pending):
            entry = pending[k]
            k += 1
            i = entry[3]
            small = jobs[i].gpus < cluster.gpus_per_node
            if jobs[i].gpus >= failed[small]:
                waiting.append(entry)  # a job of its kind no larger failed in this pass: it cannot fit either
                continue
            nodes = place(free, jobs[i], cluster, placement)
            if nodes is None:
                failed[small] = jobs[i].gpus
                if not head_blocked:
                    head_blocked = True
                    if policy == "backfill":
                        if i not in blocked_since:
                            blocked_since[i] = now
                            heapq.heappush(events, (now + timeout_s, 2, i, 0))
                        if now - blocked_since[i] >= timeout_s:
                            victims, room = _preempt_for(i, blocked_since[i])
                            if room is not None:
                                start(i, room)
                                blocked_since.pop(i, None)
                                failed = {True: math.inf, False: math.inf}  # room changed
                                head_blocked = False
                                pending[k:] = sorted(pending[k:] + victims)
                                continue
                waiting.append(entry)
                continue
            start(i, nodes)
            if head_blocked:
                backfilled.add(i)  # it passed a blocked head: the head may take its place later
            blocked_since.pop(i, None)
        queue.extend(waiting)

    def _preempt_for(head: int, since: float) -> tuple[list[tuple[int, float, int, int]], list[int] | None]:
        """Preempt jobs started after the head was blocked (most recent first) until it fits: their
        queue entries and the head's nodes (nothing preempted, and no nodes, when even all of them
        would not make room)."""
        nonlocal preemptions
        candidates = sorted((s, i) for i, (s, _, _) in running.items()
                            if i in backfilled and s >= since and jobs[i].priority <= jobs[head].priority)
        taken, nodes = [], None
        for _, i in reversed(candidates):
            taken.append((i, running[i]))
            stop(i)
            nodes = place(free, jobs[head], cluster, placement)
            if nodes is not None:
                break
        if nodes is None:  # not enough even so: undo
            for i, kept in taken:
                running[i] = kept
                for n, gpus in zip(kept[1], pods_of(jobs[i], cluster)):
                    free[n] -= gpus
            return [], None
        for i, (started, _, _) in taken:
            backfilled.discard(i)
            preemptions += 1
            outcomes[i].preempted += 1
            outcomes[i].lost_gpu_s += jobs[i].gpus * (now - started)
            outcomes[i].start_s = None
        return [(-jobs[i].priority, jobs[i].submit_s, jobs[i].gpus, i) for i, _ in taken], nodes

    while events:
        t, kind, i, gen = heapq.heappop(events)
        if t > end:
            break
        advance(t)
        now = t
        if kind == 0:
            if i not in running or running[i][2] != gen:
                continue  # preempted since
            stop(i)
            backfilled.discard(i)
            outcomes[i].end_s = now
        elif kind == 1:
            bisect.insort(queue, (-jobs[i].priority, jobs[i].submit_s, jobs[i].gpus, i))
        schedule()
        series.append((now, int(cluster.gpus - free.sum())))
    horizon = end if end < math.inf else now
    advance(horizon)
    return QueueReplay(cluster, jobs, outcomes, horizon, allocated_s, fragmented_s, measure_from_s, preemptions, series)


def size_bucket(gpus: int) -> str:
    """Power-of-two job-size buckets (Kant gives none): '1', '2', '4', ..., '2048'."""
    return str(1 << max(0, math.ceil(math.log2(max(gpus, 1)))))


def queue_row(run: QueueReplay) -> dict:  # type: ignore[type-arg]
    """Metrics over [measure_from_s, horizon] (jobs: those submitted in it)."""
    c = run.cluster
    span = max(run.horizon_s - run.measure_from_s, 1e-9)
    waits: dict[str, list[float]] = {}
    node_ratio: dict[str, list[float]] = {}
    group_ratio: dict[str, list[float]] = {}
    unstarted: dict[str, int] = {}
    for job, out in zip(run.jobs, run.outcomes):
        if job.submit_s < run.measure_from_s:
            continue
        bucket = size_bucket(job.gpus)
        if out.start_s is None:
            unstarted[bucket] = unstarted.get(bucket, 0) + 1
            continue
        waits.setdefault(bucket, []).append(out.start_s - job.submit_s)
        fewest_nodes = math.ceil(job.gpus / c.gpus_per_node)
        node_ratio.setdefault(bucket, []).append(out.nodes / fewest_nodes)
        group_ratio.setdefault(bucket, []).append(out.groups / math.ceil(fewest_nodes / c.group_nodes))
    buckets = sorted(set(waits) | set(unstarted), key=int)
    return {
        "gar": run.allocated_gpu_s / (c.gpus * span),
        "sor": run.allocated_gpu_s / (c.gpus * span),
        "gfr": run.fragmented_node_s / (c.nodes * span),
        "jwtd_s": {b: float(np.mean(waits[b])) if b in waits else None for b in buckets},
        "jwtd_p50_s": {b: float(np.median(waits[b])) if b in waits else None for b in buckets},
        "jtted_nodes": {b: float(np.mean(node_ratio[b])) for b in buckets if b in node_ratio},
        "jtted_groups": {b: float(np.mean(group_ratio[b])) for b in buckets if b in group_ratio},
        "unstarted": unstarted,
        "jobs": sum(1 for j in run.jobs if j.submit_s >= run.measure_from_s),
        "preemptions": run.preemptions,
        "lost_gpu_hours": sum(o.lost_gpu_s for o in run.outcomes) / 3600,
    }


SIZE_SHARES = {1: 0.55, 2: 0.2, 4: 0.16, 8: 0.04, 16: 0.015, 32: 0.012, 64: 0.008, 128: 0.006, 256: 0.004, 512: 0.003, 1024: 0.0015, 2048: 0.0005}
"""Job sizes (GPUs) for ``kant_jobs``: 91% of jobs under 8 GPUs (Kant §2: over 90%)."""
MEAN_HOURS = {"small": 1.0, "medium": 3.0, "large": 6.0}
"""Mean run time by size (under 8 GPUs, 8-128, 256 and more): with ``SIZE_SHARES`` the jobs under 8
GPUs hold 4% of GPU-time (Kant: under 10%) and those of 256 or more 79% (Kant: over half)."""


def kant_jobs(cluster: Cluster, hours: float, load: float, seed: int) -> list[Job]:
    """A seeded training workload for Kant's experiment: Poisson arrivals at the rate that offers
    ``load`` x the cluster's GPUs, sizes from ``SIZE_SHARES`` (capped at the cluster), lognormal run
    times (sigma 1) with the means of ``MEAN_HOURS``. Kant's trace is not public: these are our choices."""
    rng = np.random.default_rng([seed, 4])
    sizes = np.array([g for g in SIZE_SHARES if g <= cluster.gpus])
    shares = np.array([SIZE_SHARES[g] for g in sizes])
    shares /= shares.sum()
    mean_h = np.array([MEAN_HOURS["small" if g < 8 else "medium" if g < 256 else "large"] for g in sizes])
    gpu_hours_per_job = float((shares * sizes * mean_h).sum())
    rate_per_h = load * cluster.gpus / gpu_hours_per_job
    jobs, t = [], 0.0
    while True:
        t += rng.exponential(1 / rate_per_h)
        if t >= hours:
            return jobs
        k = rng.choice(len(sizes), p=shares)
        hours_run = rng.lognormal(math.log(mean_h[k]) - 0.5, 1.0)
        jobs.append(Job(f"job-{len(jobs):06d}", t * 3600, int(sizes[k]), hours_run * 3600))
