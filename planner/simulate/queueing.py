"""Queueing replays of gang jobs on a GPU cluster: Kant's policies and metrics (Kant, §3-5).

The cluster: ``nodes`` nodes of ``gpus_per_node`` GPUs in leaf groups (NodeNetGroups) of
``group_nodes`` nodes, split into GPU pools (node pools by GPU type: consecutive whole leaf groups;
one pool, ``default``, unless ``Cluster.pools`` says otherwise). A job asks for G GPUs of one pool:
one pod of G GPUs when G fits a node, else G / gpus_per_node whole-node pods; a job starts all its
pods at once or waits (gang).

Queues, one per tenant, each ordered by priority, then submission time, then size, smaller first
(Kant leaves the direction of the size tiebreak open). Jobs are offered across the queues in that
same order; a blocked head blocks only its own tenant's queue:

* ``strict-fifo``: only a tenant's head may start; a blocked head blocks the jobs behind it;
* ``best-effort``: any job that fits starts, in queue order (blocked jobs are skipped);
* ``backfill``: as best-effort, but once a tenant's blocked head has waited ``timeout_s`` the jobs of
  its queue that passed it while it waited (backfilled) are preempted, most recent first, until the
  head fits (none is, if all of them would not make room); a preempted job loses its progress and
  re-enters the queue at its original submission time (Kant's timeout preemption and requeue; no
  runtime estimates). A job started in order is never a victim.

Admission has two tiers, as in Kant: the quota, then room. ``quotas`` gives GPUs per (tenant, pool);
without it every job passes the first tier. ``isolated``: a tenant's running GPUs in a pool stay
within its quota. ``shared``: a tenant may also borrow the pool's unused quota (the pool's running
GPUs stay within the sum of its quotas); when a job within its own quota is blocked for room, the
jobs of tenants running above their quota in that pool are preempted (quota reclamation), most
recent first and only while their tenant is still above its quota, until it fits.

Placement of a job's pods (in its pool):

* ``spread``: each pod on the feasible node with the most free GPUs (Kubernetes' default
  LeastAllocated on GPUs; ties: lowest index);
* ``binpack``: each pod on the feasible node with the fewest free GPUs (ties: lowest index);
* ``e-binpack`` (Kant's E-Binpack; its formulas are not published, these are our choices): a job
  smaller than a node goes, binpacked, to the groups already holding small jobs, and opens an empty
  group only when none has room (whole groups stay free for large jobs); a multi-node job takes whole
  free nodes from the fewest groups, best fit (the group with the fewest free nodes that holds it,
  else groups in decreasing free nodes), and never puts a node-sized pod on a partly used node.
* ``e-spread`` (Kant's E-Spread; zone size and overflow rule are not published, ours): the first
  ``zone_nodes`` nodes of each pool (whole groups) are the inference zone. An inference job smaller
  than a node is spread there (most free GPUs first); when the zone has no room it is E-Binpacked in
  the rest of the pool. Training jobs never enter the zone and are E-Binpacked in the rest.

Defrag when stuck (``stuck_after_s``): when a blocked head has waited that long for room (not for
quota), the planner's own make-room (``planner.engine.defrag.plan_defrag`` with ``make_room``, the
validated plan; ``simulate/queue_defrag.py`` builds the snapshot) is asked for at most
``make_room_moves`` migrations that let it start. Only pods smaller than a node move (gangs spanning
nodes and node-sized pods are locked). A moved job is set back ``migration_cost_s`` (its end moves
later by that: a checkpoint-restart), counted as migration GPU-hours. After a failed attempt the head
is tried again only ``stuck_after_s`` later.

Metrics (``queue_row``): GAR time-averaged and SOR (allocated GPU-hours over available: the same
number for a replay, as Kant's two definitions coincide when accrual starts at binding), per tenant
too, GFR (share of nodes partly allocated, time-averaged), JWTD (mean wait from submission to start,
per job-size bucket), JTTEd (nodes used over ceil(G / GPUs per node) and groups over the fewest
groups that hold those nodes), preemptions (backfill and quota reclamation), make-room calls, moves
and their cost.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field

import numpy as np

POLICIES = ("strict-fifo", "best-effort", "backfill")
PLACEMENTS = ("spread", "binpack", "e-binpack", "e-spread")
QUOTA_MODES = ("shared", "isolated")


@dataclass
class Job:
    name: str
    submit_s: float
    gpus: int
    duration_s: float
    priority: int = 0
    tenant: str = "default"
    pool: str = "default"
    kind: str = "training"  # or "inference" (E-Spread's zone)


@dataclass
class Outcome:
    """One job's replay: final start, end, nodes and groups spanned, preemptions, migrations."""

    start_s: float | None = None
    end_s: float | None = None
    nodes: int = 0
    groups: int = 0
    preempted: int = 0
    lost_gpu_s: float = 0.0  # GPU-seconds of runs preempted before they ended
    migrated: int = 0  # times make-room moved one of its pods
    started_by_make_room: bool = False


@dataclass
class Cluster:
    nodes: int = 1000
    gpus_per_node: int = 8
    group_nodes: int = 32
    pools: tuple[tuple[str, int], ...] = ()  # (name, nodes) in node order; () is one pool 'default'

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def pool_ranges(self) -> dict[str, tuple[int, int]]:
        """Each pool's nodes as [lo, hi); raises ``ValueError`` naming what is wrong."""
        if not self.pools:
            return {"default": (0, self.nodes)}
        out, lo = {}, 0
        for name, count in self.pools:
            if name in out:
                raise ValueError(f"pool '{name}' is named twice")
            if count < 1 or count % self.group_nodes:
                raise ValueError(f"pool '{name}': {count} nodes; a pool is whole leaf groups, a positive multiple of {self.group_nodes} nodes")
            out[name] = (lo, lo + count)
            lo += count
        if lo != self.nodes:
            raise ValueError(f"pools hold {lo} nodes in all but the cluster has {self.nodes}")
        return out


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
    tenant_gpu_s: dict[str, float] = field(default_factory=dict)  # per tenant, over [measure_from_s, horizon]
    reclaims: int = 0  # jobs preempted to give a tenant its quota back
    make_room_calls: int = 0
    make_room_starts: int = 0
    moves: int = 0
    migration_gpu_s: float = 0.0
    make_room_wall_s: float = 0.0


def pods_of(job: Job, cluster: Cluster) -> list[int]:
    """GPUs of each pod: one pod when the job fits a node, else whole-node pods."""
    if job.gpus <= cluster.gpus_per_node:
        return [job.gpus]
    if job.gpus % cluster.gpus_per_node:
        raise ValueError(f"job {job.name}: {job.gpus} GPUs is not a multiple of {cluster.gpus_per_node} GPUs per node")
    return [cluster.gpus_per_node] * (job.gpus // cluster.gpus_per_node)


def place(free: np.ndarray, job: Job, cluster: Cluster, placement: str, lo: int = 0, hi: int | None = None,
          zone_nodes: int = 0) -> list[int] | None:
    """Nodes for the job's pods (one entry per pod, indexes into ``free``) under ``placement`` on the
    nodes [lo, hi) (whole groups), or None when it cannot start there. ``zone_nodes``: e-spread's
    inference zone at the start of [lo, hi) (an inference job tries it first)."""
    hi = len(free) if hi is None else hi
    if placement == "e-spread":
        if job.kind == "inference" and job.gpus < cluster.gpus_per_node and zone_nodes:
            nodes = _place_local(free[lo:lo + zone_nodes], job, cluster, "spread")
            if nodes is not None:
                return [n + lo for n in nodes]
        lo, placement = lo + zone_nodes, "e-binpack"  # training, large inference jobs and the zone's overflow
    nodes = _place_local(free[lo:hi], job, cluster, placement)
    return None if nodes is None else [n + lo for n in nodes]


def _place_local(free: np.ndarray, job: Job, cluster: Cluster, placement: str) -> list[int] | None:
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
           horizon_s: float | None = None, measure_from_s: float = 0.0, *, quotas: dict[tuple[str, str], int] | None = None,
           quota_mode: str = "shared", zone_nodes: int = 0, stuck_after_s: float | None = None, make_room_moves: int = 64,
           migration_cost_s: float = 300.0) -> QueueReplay:
    """Replay ``jobs`` (submission order need not be sorted) until every job ends or ``horizon_s``;
    allocation and fragmentation are integrated from ``measure_from_s`` on. Raises ``ValueError``
    naming the option or job that cannot be replayed."""
    return _Sim(cluster, jobs, policy, placement, timeout_s, horizon_s, measure_from_s, quotas, quota_mode, zone_nodes,
                stuck_after_s, make_room_moves, migration_cost_s).run()


END, ARRIVAL, TIMEOUT, STUCK = 0, 1, 2, 3  # event kinds, in this order at equal times


class _Sim:
    def __init__(self, cluster: Cluster, jobs: list[Job], policy: str, placement: str, timeout_s: float, horizon_s: float | None,
                 measure_from_s: float, quotas: dict[tuple[str, str], int] | None, quota_mode: str, zone_nodes: int,
                 stuck_after_s: float | None, make_room_moves: int, migration_cost_s: float) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown queue policy {policy!r}; choose one of {', '.join(POLICIES)}")
        if placement not in PLACEMENTS:
            raise ValueError(f"unknown placement {placement!r}; choose one of {', '.join(PLACEMENTS)}")
        if quota_mode not in QUOTA_MODES:
            raise ValueError(f"unknown quota mode {quota_mode!r}; choose one of {', '.join(QUOTA_MODES)}")
        self.ranges = cluster.pool_ranges()
        if zone_nodes and placement != "e-spread":
            raise ValueError(f"zone_nodes applies to the e-spread placement only (got {placement})")
        if zone_nodes < 0 or zone_nodes % cluster.group_nodes or any(zone_nodes >= hi - lo for lo, hi in self.ranges.values()):
            raise ValueError(f"zone_nodes: whole leaf groups ({cluster.group_nodes} nodes each) smaller than every pool, got {zone_nodes}")
        if stuck_after_s is not None and not stuck_after_s > 0:
            raise ValueError(f"stuck_after_s: above 0 (or None: no make-room), got {stuck_after_s}")
        if make_room_moves < 1 or not migration_cost_s >= 0:
            raise ValueError(f"make_room_moves at least 1 and migration_cost_s at least 0, got {make_room_moves} and {migration_cost_s}")
        self.quota = dict(quotas) if quotas is not None else None
        if self.quota is not None:
            for (tenant, pool), gpus in self.quota.items():
                if pool not in self.ranges:
                    raise ValueError(f"quota of tenant '{tenant}': unknown pool '{pool}'; pools: {', '.join(self.ranges)}")
                if gpus < 0:
                    raise ValueError(f"quota of tenant '{tenant}' in pool '{pool}': at least 0 GPUs, got {gpus}")
        self.pool_quota = {p: sum(g for (_, q), g in (self.quota or {}).items() if q == p) for p in self.ranges}
        for j in jobs:
            if j.pool not in self.ranges:
                raise ValueError(f"job {j.name}: unknown pool '{j.pool}'; pools: {', '.join(self.ranges)}")
            lo, hi = self.ranges[j.pool]
            room = (hi - lo - (zone_nodes if j.kind != "inference" or j.gpus >= cluster.gpus_per_node else 0)) * cluster.gpus_per_node
            if j.gpus > room:
                where = f"the cluster's {cluster.gpus}" if len(self.ranges) == 1 and not zone_nodes else f"pool '{j.pool}' can hold ({room})"
                raise ValueError(f"job {j.name}: {j.gpus} GPUs is more than {where}")
            pods_of(j, cluster)
            if self.quota is not None:
                limit = self.quota.get((j.tenant, j.pool), 0) if quota_mode == "isolated" else self.pool_quota[j.pool]
                if j.gpus > limit:
                    raise ValueError(f"job {j.name}: {j.gpus} GPUs is more than tenant '{j.tenant}' may ever hold in pool '{j.pool}' "
                                     f"({limit} GPUs, {quota_mode} quotas): it could never start")
        self.cluster, self.jobs, self.policy, self.placement = cluster, jobs, policy, placement
        self.timeout_s, self.measure_from_s, self.quota_mode, self.zone_nodes = timeout_s, measure_from_s, quota_mode, zone_nodes
        self.stuck_after_s, self.make_room_moves, self.migration_cost_s = stuck_after_s, make_room_moves, migration_cost_s
        self.end = horizon_s if horizon_s is not None else math.inf
        self.free = np.full(cluster.nodes, cluster.gpus_per_node, dtype=np.int64)
        self.outcomes = [Outcome() for _ in jobs]
        self.pods = [pods_of(j, cluster) for j in jobs]
        self.running: dict[int, list] = {}  # job -> [start, nodes per pod, generation, end]  # type: ignore[type-arg]
        self.generation = [0] * len(jobs)
        self.queues: dict[str, list[tuple[int, float, int, int]]] = {}  # per tenant, sorted: (-priority, submit, gpus, job)
        self.events: list[tuple[float, int, int, int]] = []  # (time, kind, job, generation)
        self.used: dict[tuple[str, str], int] = {}  # running GPUs per (tenant, pool)
        self.tenant_now: dict[str, int] = {}
        self.tenant_gpu_s: dict[str, float] = {j.tenant: 0.0 for j in jobs}
        self.blocked_since: dict[int, float] = {}  # head job -> since when it is a blocked head (for room)
        self.next_room_try: dict[int, float] = {}
        self.backfilled: set[int] = set()
        self.now = self.last = self.allocated_s = self.fragmented_s = 0.0
        self.preemptions = self.reclaims = self.calls = self.room_starts = self.moves = 0
        self.migration_gpu_s = self.room_wall_s = 0.0
        self.series: list[tuple[float, int]] = []

    # -- state ------------------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        t = min(t, self.end)
        self.last = max(self.last, min(t, self.measure_from_s))
        if t > self.last:
            span = t - self.last
            self.allocated_s += int(self.cluster.gpus - self.free.sum()) * span
            self.fragmented_s += int(((self.free > 0) & (self.free < self.cluster.gpus_per_node)).sum()) * span
            for tenant, gpus in self.tenant_now.items():
                self.tenant_gpu_s[tenant] += gpus * span
            self.last = t

    def _occupy(self, i: int, nodes: list[int], sign: int) -> None:
        for n, gpus in zip(nodes, self.pods[i]):
            self.free[n] -= sign * gpus
        job = self.jobs[i]
        key = (job.tenant, job.pool)
        self.used[key] = self.used.get(key, 0) + sign * job.gpus
        self.tenant_now[job.tenant] = self.tenant_now.get(job.tenant, 0) + sign * job.gpus

    def start(self, i: int, nodes: list[int]) -> None:
        self._occupy(i, nodes, +1)
        self.generation[i] += 1
        end = self.now + self.jobs[i].duration_s
        self.running[i] = [self.now, list(nodes), self.generation[i], end]
        out = self.outcomes[i]
        out.start_s, out.nodes, out.groups = self.now, len(set(nodes)), len({n // self.cluster.group_nodes for n in nodes})
        heapq.heappush(self.events, (end, END, i, self.generation[i]))
        self.blocked_since.pop(i, None)
        self.next_room_try.pop(i, None)

    def stop(self, i: int) -> list:  # type: ignore[type-arg]
        run = self.running.pop(i)
        self._occupy(i, run[1], -1)
        return run

    def restore(self, i: int, run: list) -> None:  # type: ignore[type-arg]
        self.running[i] = run
        self._occupy(i, run[1], +1)

    def place(self, i: int) -> list[int] | None:
        lo, hi = self.ranges[self.jobs[i].pool]
        return place(self.free, self.jobs[i], self.cluster, self.placement, lo, hi, self.zone_nodes)

    def admission(self, i: int) -> str | None:
        """The quota tier: 'own' (within the tenant's quota, or no quotas), 'borrow', or None (refused)."""
        if self.quota is None:
            return "own"
        job = self.jobs[i]
        mine = self.used.get((job.tenant, job.pool), 0) + job.gpus
        if mine <= self.quota.get((job.tenant, job.pool), 0):
            return "own"
        if self.quota_mode == "shared":
            pool_used = sum(g for (_, p), g in self.used.items() if p == job.pool)
            if pool_used + job.gpus <= self.pool_quota[job.pool]:
                return "borrow"
        return None

    def entry(self, i: int) -> tuple[int, float, int, int]:
        j = self.jobs[i]
        return (-j.priority, j.submit_s, j.gpus, i)

    # -- scheduling -------------------------------------------------------------------------------

    def enqueue(self, i: int) -> None:
        bisect.insort(self.queues.setdefault(self.jobs[i].tenant, []), self.entry(i))

    def schedule(self) -> None:
        if self.policy == "strict-fifo":
            self._schedule_heads()
            return
        pending = list(heapq.merge(*self.queues.values()))
        self.queues = {}
        blocked: set[str] = set()  # tenants whose head is blocked in this pass
        failed: dict[tuple, int] = {}  # type: ignore[type-arg]  # (pool, kind, small) -> smallest size blocked for room this pass
        per = self.cluster.gpus_per_node
        k = 0
        while k < len(pending):
            entry = pending[k]
            k += 1
            i = entry[3]
            job = self.jobs[i]
            tier = self.admission(i)
            if tier is None:
                blocked.add(job.tenant)
                self.queues.setdefault(job.tenant, []).append(entry)
                continue
            key = (job.pool, job.kind if self.placement == "e-spread" else "", job.gpus < per)
            nodes = None if job.gpus >= failed.get(key, math.inf) else self.place(i)
            if nodes is None:
                failed[key] = min(failed.get(key, math.inf), job.gpus)
                if job.tenant not in blocked:
                    blocked.add(job.tenant)
                    requeued = self.unblock(i, tier)
                    if requeued is not None:  # the head started after preemption or migration
                        blocked.discard(job.tenant)
                        failed.clear()
                        pending[k:] = sorted(pending[k:] + requeued)
                        continue
                self.queues.setdefault(job.tenant, []).append(entry)
                continue
            self.start(i, nodes)
            if job.tenant in blocked:
                self.backfilled.add(i)  # it passed its tenant's blocked head: that head may take its place later

    def _schedule_heads(self) -> None:
        """Strict FIFO: only each tenant's head may start, heads offered in queue order; a blocked head
        blocks its tenant for the rest of the pass (the other entries are never looked at)."""
        blocked: set[str] = set()
        while True:
            heads = [(q[0], t) for t, q in self.queues.items() if q and t not in blocked]
            if not heads:
                return
            entry, tenant = min(heads)
            i = entry[3]
            blocked.add(tenant)
            tier = self.admission(i)
            if tier is None:
                continue
            nodes = self.place(i)
            if nodes is None:
                requeued = self.unblock(i, tier)
                if requeued is None:
                    continue
                for v in requeued:
                    bisect.insort(self.queues.setdefault(self.jobs[v[3]].tenant, []), v)
            else:
                self.start(i, nodes)
            self.queues[tenant].remove(entry)
            blocked.discard(tenant)

    def unblock(self, head: int, tier: str) -> list[tuple[int, float, int, int]] | None:
        """For a head blocked for room: quota reclamation, backfill's timeout preemption, then make-room.
        The queue entries of the jobs preempted when the head started, or None when it still waits."""
        job = self.jobs[head]
        since = self.blocked_since.setdefault(head, self.now)
        if self.quota is not None and self.quota_mode == "shared" and tier == "own":
            borrowers = sorted(((r[0], v) for v, r in self.running.items() if self.jobs[v].pool == job.pool
                                and self.jobs[v].tenant != job.tenant and self.jobs[v].priority <= job.priority), reverse=True)
            done = self.evict_until_fits(head, [v for _, v in borrowers], "reclaim")
            if done is not None:
                return done
        if self.policy == "backfill":
            if since == self.now:
                heapq.heappush(self.events, (self.now + self.timeout_s, TIMEOUT, head, 0))
            if self.now - since >= self.timeout_s:
                passed = sorted(((r[0], v) for v, r in self.running.items() if v in self.backfilled and r[0] >= since
                                 and self.jobs[v].tenant == job.tenant and self.jobs[v].priority <= job.priority), reverse=True)
                done = self.evict_until_fits(head, [v for _, v in passed], "backfill")
                if done is not None:
                    return done
        if self.stuck_after_s is not None:
            due = self.next_room_try.get(head, since + self.stuck_after_s)
            if self.now >= due:
                if self.make_room(head):
                    return []
                due = self.now + self.stuck_after_s
            if head not in self.next_room_try or self.next_room_try[head] != due:
                self.next_room_try[head] = due
                heapq.heappush(self.events, (due, STUCK, head, 0))
        return None

    def borrowing(self, v: int, used: dict[tuple[str, str], int] | None = None) -> bool:
        """Is job v's tenant running above its quota in v's pool (on ``used``, default the live count)?"""
        job = self.jobs[v]
        assert self.quota is not None
        return (self.used if used is None else used).get((job.tenant, job.pool), 0) > self.quota.get((job.tenant, job.pool), 0)

    def evict_until_fits(self, head: int, candidates: list[int], why: str) -> list[tuple[int, float, int, int]] | None:
        """Preempt ``candidates`` in order (for reclamation each only while its tenant still borrows)
        until the head fits, then start it; nothing is preempted when even all of them would not make
        room (checked first on a scratch copy: room only grows as jobs stop, so one placement decides)."""
        if not self._fits_without(head, candidates, why):
            return None
        taken, nodes = [], None
        for v in candidates:
            if why == "reclaim" and not self.borrowing(v):
                continue
            taken.append((v, self.stop(v)))
            nodes = self.place(head)
            if nodes is not None:
                break
        assert nodes is not None, "the scratch check said the head fits once these jobs stop"
        for v, run in taken:
            self.backfilled.discard(v)
            out = self.outcomes[v]
            out.preempted += 1
            out.lost_gpu_s += self.jobs[v].gpus * (self.now - run[0])
            out.start_s = None
            if why == "reclaim":
                self.reclaims += 1
            else:
                self.preemptions += 1
        self.start(head, nodes)
        return [self.entry(v) for v, _ in taken]

    def _fits_without(self, head: int, candidates: list[int], why: str) -> bool:
        """Would the head fit once every candidate the eviction would take has stopped? On a scratch
        copy of the free GPUs (and quota use), without touching the replay's state."""
        free = self.free.copy()
        used = dict(self.used) if why == "reclaim" else None
        freed = False
        for v in candidates:
            if used is not None and not self.borrowing(v, used):
                continue
            for n, gpus in zip(self.running[v][1], self.pods[v]):
                free[n] += gpus
            if used is not None:
                key = (self.jobs[v].tenant, self.jobs[v].pool)
                used[key] -= self.jobs[v].gpus
            freed = True
        lo, hi = self.ranges[self.jobs[head].pool]
        return freed and place(free, self.jobs[head], self.cluster, self.placement, lo, hi, self.zone_nodes) is not None

    def make_room(self, head: int) -> bool:
        """Ask the planner for migrations that let the head start; apply them and start it if it can."""
        import time

        from planner.simulate.queue_defrag import RunningPod, plan_room

        job = self.jobs[head]
        lo, hi = self.ranges[job.pool]
        if self.placement == "e-spread" and (job.kind != "inference" or job.gpus >= self.cluster.gpus_per_node):
            lo += self.zone_nodes
        per = self.cluster.gpus_per_node
        pods = [RunningPod(self.jobs[v].name, k, n, g, g < per) for v, run in self.running.items() for k, (n, g) in enumerate(zip(run[1], self.pods[v]))]
        started = time.perf_counter()
        plan = plan_room(self.free, per, pods, job.name, self.pods[head], lo, hi, self.make_room_moves, seed=head)
        self.room_wall_s += time.perf_counter() - started
        self.calls += 1
        if plan is None:
            return False
        index = {self.jobs[v].name: v for v in self.running}
        for name, k, source, target in plan.moves:
            v = index[name]
            run = self.running[v]
            assert run[1][k] == source, (name, k, source, run[1][k])
            gpus = self.pods[v][k]
            self.free[source] += gpus
            self.free[target] -= gpus
            run[1][k] = target
        for v in sorted({index[name] for name, *_ in plan.moves}):
            run = self.running[v]
            self.generation[v] += 1
            run[2], run[3] = self.generation[v], run[3] + self.migration_cost_s
            heapq.heappush(self.events, (run[3], END, v, run[2]))
            out = self.outcomes[v]
            out.migrated += 1
            out.nodes, out.groups = len(set(run[1])), len({n // self.cluster.group_nodes for n in run[1]})
            self.migration_gpu_s += self.jobs[v].gpus * self.migration_cost_s
        assert (self.free >= 0).all() and all(self.free[n] >= g for n, g in zip(plan.head_nodes, self.pods[head]))
        self.moves += len(plan.moves)
        self.room_starts += 1
        self.start(head, plan.head_nodes)
        self.outcomes[head].started_by_make_room = True
        return True

    # -- the event loop ---------------------------------------------------------------------------

    def run(self) -> QueueReplay:
        for i, j in enumerate(self.jobs):
            heapq.heappush(self.events, (j.submit_s, ARRIVAL, i, 0))
        while self.events:
            t, kind, i, gen = heapq.heappop(self.events)
            if t > self.end:
                break
            self.advance(t)
            self.now = t
            if kind == END:
                if i not in self.running or self.running[i][2] != gen:
                    continue  # preempted or moved since
                self.stop(i)
                self.backfilled.discard(i)
                self.outcomes[i].end_s = self.now
            elif kind == ARRIVAL:
                self.enqueue(i)
            self.schedule()
            self.series.append((self.now, int(self.cluster.gpus - self.free.sum())))
        horizon = self.end if self.end < math.inf else self.now
        self.advance(horizon)
        return QueueReplay(self.cluster, self.jobs, self.outcomes, horizon, self.allocated_s, self.fragmented_s, self.measure_from_s,
                           self.preemptions, self.series, self.tenant_gpu_s, self.reclaims, self.calls, self.room_starts, self.moves,
                           self.migration_gpu_s, self.room_wall_s)


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
    by_kind: dict[str, list[float]] = {}
    by_tenant: dict[str, list[float]] = {}
    for job, out in zip(run.jobs, run.outcomes):
        if job.submit_s >= run.measure_from_s and out.start_s is not None:
            by_kind.setdefault(job.kind, []).append(out.start_s - job.submit_s)
            by_tenant.setdefault(job.tenant, []).append(out.start_s - job.submit_s)
    buckets = sorted(set(waits) | set(unstarted), key=int)
    return {
        "gar": run.allocated_gpu_s / (c.gpus * span),
        "sor": run.allocated_gpu_s / (c.gpus * span),
        "gfr": run.fragmented_node_s / (c.nodes * span),
        "jwtd_s": {b: float(np.mean(waits[b])) if b in waits else None for b in buckets},
        "jwtd_p50_s": {b: float(np.median(waits[b])) if b in waits else None for b in buckets},
        "jwtd_by_kind_s": {k: float(np.mean(v)) for k, v in sorted(by_kind.items())},
        "jwtd_by_tenant_s": {t: float(np.mean(v)) for t, v in sorted(by_tenant.items())},
        "jtted_nodes": {b: float(np.mean(node_ratio[b])) for b in buckets if b in node_ratio},
        "jtted_groups": {b: float(np.mean(group_ratio[b])) for b in buckets if b in group_ratio},
        "unstarted": unstarted,
        "jobs": sum(1 for j in run.jobs if j.submit_s >= run.measure_from_s),
        "preemptions": run.preemptions,
        "reclaims": run.reclaims,
        "lost_gpu_hours": sum(o.lost_gpu_s for o in run.outcomes) / 3600,
        "sor_by_tenant": {t: gpu_s / (c.gpus * span) for t, gpu_s in sorted(run.tenant_gpu_s.items())},
        "make_room_calls": run.make_room_calls,
        "make_room_starts": run.make_room_starts,
        "moves": run.moves,
        "migration_gpu_hours": run.migration_gpu_s / 3600,
        "make_room_wall_s": round(run.make_room_wall_s, 3),
    }


SIZE_SHARES = {1: 0.55, 2: 0.2, 4: 0.16, 8: 0.04, 16: 0.015, 32: 0.012, 64: 0.008, 128: 0.006, 256: 0.004, 512: 0.003, 1024: 0.0015, 2048: 0.0005}
"""Job sizes (GPUs) for ``kant_jobs``: 91% of jobs under 8 GPUs (Kant §2: over 90%)."""
MEAN_HOURS = {"small": 1.0, "medium": 3.0, "large": 6.0}
"""Mean run time by size (under 8 GPUs, 8-128, 256 and more): with ``SIZE_SHARES`` the jobs under 8
GPUs hold 4% of GPU-time (Kant: under 10%) and those of 256 or more 79% (Kant: over half)."""


def kant_jobs(cluster: Cluster, hours: float, load: float, seed: int, tenants: dict[str, float] | None = None,
              reserve_nodes: int = 0) -> list[Job]:
    """A seeded training workload for Kant's experiment: Poisson arrivals at the rate that offers
    ``load`` x the cluster's GPUs, sizes from ``SIZE_SHARES`` (capped at the cluster), lognormal run
    times (sigma 1) with the means of ``MEAN_HOURS``. Kant's trace is not public: these are our choices.
    With several pools a job's pool is drawn in proportion to the pools' nodes and its size among the
    sizes that pool holds; with ``tenants`` (name -> share of jobs) its tenant is drawn too. Without
    either the draws are those of the single-pool, single-tenant workload. ``reserve_nodes``: nodes of
    each pool training jobs may not use (E-Spread's inference zone); sizes are capped at the rest."""
    rng = np.random.default_rng([seed, 4])
    ranges = cluster.pool_ranges()
    sizes = np.array([g for g in SIZE_SHARES if g <= cluster.gpus])
    shares = np.array([SIZE_SHARES[g] for g in sizes])
    shares /= shares.sum()
    mean_h = np.array([MEAN_HOURS["small" if g < 8 else "medium" if g < 256 else "large"] for g in sizes])
    gpu_hours_per_job = float((shares * sizes * mean_h).sum())
    rate_per_h = load * cluster.gpus / gpu_hours_per_job
    pools = list(ranges)
    pool_weight = np.array([hi - lo for lo, hi in ranges.values()], dtype=float) / cluster.nodes
    pool_shares = {}
    for name, (lo, hi) in ranges.items():
        held = np.where(sizes <= (hi - lo - reserve_nodes) * cluster.gpus_per_node, shares, 0.0)
        if not held.any():
            raise ValueError(f"pool '{name}' holds no job size once {reserve_nodes} nodes are reserved")
        pool_shares[name] = held / held.sum()
    names = list(tenants or {})
    tenant_weight = np.array([tenants[t] for t in names], dtype=float) / sum(tenants.values()) if tenants else None
    jobs, t = [], 0.0
    while True:
        t += rng.exponential(1 / rate_per_h)
        if t >= hours:
            return jobs
        pool = pools[rng.choice(len(pools), p=pool_weight)] if len(pools) > 1 else pools[0]
        k = rng.choice(len(sizes), p=pool_shares[pool])
        hours_run = rng.lognormal(math.log(mean_h[k]) - 0.5, 1.0)
        tenant = names[rng.choice(len(names), p=tenant_weight)] if tenants else "default"
        jobs.append(Job(f"job-{len(jobs):06d}", t * 3600, int(sizes[k]), hours_run * 3600, tenant=tenant, pool=pool))


INFERENCE_SHARES = {1: 0.5, 2: 0.3, 4: 0.2}
"""Inference replicas' GPUs (one pod each, under a node)."""
INFERENCE_MEAN_HOURS = 12.0


def inference_jobs(cluster: Cluster, hours: float, load: float, seed: int, pool: str | None = None) -> list[Job]:
    """Seeded inference replicas (E-Spread's workload; Kant publishes none): Poisson arrivals offering
    ``load`` x the pool's GPUs, 1, 2 or 4 GPUs (``INFERENCE_SHARES``), lognormal lifetimes (sigma 1,
    mean ``INFERENCE_MEAN_HOURS``), tenant ``inference``, kind ``inference``, in ``pool`` (default: the
    first)."""
    ranges = cluster.pool_ranges()
    pool = pool or next(iter(ranges))
    if pool not in ranges:
        raise ValueError(f"unknown pool '{pool}'; pools: {', '.join(ranges)}")
    lo, hi = ranges[pool]
    rng = np.random.default_rng([seed, 5])
    sizes = np.array(list(INFERENCE_SHARES))
    shares = np.array(list(INFERENCE_SHARES.values()))
    rate_per_h = load * (hi - lo) * cluster.gpus_per_node / (float((sizes * shares).sum()) * INFERENCE_MEAN_HOURS)
    jobs, t = [], 0.0
    while True:
        t += rng.exponential(1 / rate_per_h)
        if t >= hours:
            return jobs
        g = int(sizes[rng.choice(len(sizes), p=shares)])
        life = rng.lognormal(math.log(INFERENCE_MEAN_HOURS) - 0.5, 1.0)
        jobs.append(Job(f"inf-{len(jobs):06d}", t * 3600, g, life * 3600, tenant="inference", pool=pool, kind="inference"))
