"""The queueing replay's event loop (``planner.simulate.queueing`` states the policies, admission,
placement and defrag when stuck): ``_Sim`` holds the cluster's free GPUs, the tenants' queues and the
running jobs and applies each event to them; ``place`` finds nodes for a job's pods."""

from __future__ import annotations

import bisect
import heapq
import math
import time
from dataclasses import dataclass

import numpy as np

from planner.heuristics.queue_placement import PLACEMENTS, place_pods
from planner.instances.queue_workload import QueueCluster, QueuedJob
from planner.simulate.queue_defrag import RunningPod, plan_room
from planner.simulate.queue_results import Outcome, QueueReplay

POLICIES = ("strict-fifo", "best-effort", "backfill")
QUOTA_MODES = ("shared", "isolated")


def pods_of(job: QueuedJob, cluster: QueueCluster) -> list[int]:
    """GPUs of each pod: one pod when the job fits a node, else whole-node pods."""
    if job.gpus <= cluster.gpus_per_node:
        return [job.gpus]
    if job.gpus % cluster.gpus_per_node:
        raise ValueError(f"job {job.name}: {job.gpus} GPUs is not a multiple of {cluster.gpus_per_node} GPUs per node")
    return [cluster.gpus_per_node] * (job.gpus // cluster.gpus_per_node)


def place(free: np.ndarray, job: QueuedJob, cluster: QueueCluster, placement: str, lo: int = 0, hi: int | None = None, zone_nodes: int = 0) -> list[int] | None:
    """Nodes for the job's pods (one entry per pod, indexes into ``free``) under ``placement`` on the
    nodes [lo, hi) (whole groups), or None when it cannot start there (``heuristics.queue_placement``).
    ``zone_nodes``: e-spread's inference zone at the start of [lo, hi) (an inference job tries it first)."""
    return place_pods(free, pods_of(job, cluster), cluster.gpus_per_node, cluster.group_nodes, placement, lo, hi, zone_nodes, inference=job.kind == "inference")


END, ARRIVAL, TIMEOUT, STUCK = 0, 1, 2, 3  # event kinds, in this order at equal times


@dataclass(slots=True)
class _Run:
    """A running job: when it started, the node of each of its pods, its generation (an END event of
    an older generation is stale: the job was preempted or moved since) and when it ends."""

    start_s: float
    nodes: list[int]
    generation: int
    end_s: float


class _Sim:
    def __init__(
        self,
        cluster: QueueCluster,
        jobs: list[QueuedJob],
        policy: str,
        placement: str,
        timeout_s: float,
        horizon_s: float | None,
        measure_from_s: float,
        quotas: dict[tuple[str, str], int] | None,
        quota_mode: str,
        zone_nodes: int,
        stuck_after_s: float | None,
        make_room_moves: int,
        migration_cost_s: float,
    ) -> None:
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
                    raise ValueError(
                        f"job {j.name}: {j.gpus} GPUs is more than tenant '{j.tenant}' may ever hold in pool '{j.pool}' "
                        f"({limit} GPUs, {quota_mode} quotas): it could never start"
                    )
        self.cluster, self.jobs, self.policy, self.placement = cluster, jobs, policy, placement
        self.timeout_s, self.measure_from_s, self.quota_mode, self.zone_nodes = timeout_s, measure_from_s, quota_mode, zone_nodes
        self.stuck_after_s, self.make_room_moves, self.migration_cost_s = stuck_after_s, make_room_moves, migration_cost_s
        self.end = horizon_s if horizon_s is not None else math.inf
        self.free = np.full(cluster.nodes, cluster.gpus_per_node, dtype=np.int64)
        self.outcomes = [Outcome() for _ in jobs]
        self.pods = [pods_of(j, cluster) for j in jobs]
        self.running: dict[int, _Run] = {}
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
        self.running[i] = _Run(self.now, list(nodes), self.generation[i], end)
        out = self.outcomes[i]
        out.start_s, out.nodes, out.groups = self.now, len(set(nodes)), len({n // self.cluster.group_nodes for n in nodes})
        heapq.heappush(self.events, (end, END, i, self.generation[i]))
        self.blocked_since.pop(i, None)
        self.next_room_try.pop(i, None)

    def stop(self, i: int) -> _Run:
        run = self.running.pop(i)
        self._occupy(i, run.nodes, -1)
        return run

    def restore(self, i: int, run: _Run) -> None:
        self.running[i] = run
        self._occupy(i, run.nodes, +1)

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
        failed: dict[tuple[str, str, bool], float] = {}  # (pool, kind, small) -> smallest size blocked for room this pass (inf: none)
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
            borrowers = sorted(
                (
                    (r.start_s, v)
                    for v, r in self.running.items()
                    if self.jobs[v].pool == job.pool and self.jobs[v].tenant != job.tenant and self.jobs[v].priority <= job.priority
                ),
                reverse=True,
            )
            done = self.evict_until_fits(head, [v for _, v in borrowers], "reclaim")
            if done is not None:
                return done
        if self.policy == "backfill":
            if since == self.now:
                heapq.heappush(self.events, (self.now + self.timeout_s, TIMEOUT, head, 0))
            if self.now - since >= self.timeout_s:
                passed = sorted(
                    (
                        (r.start_s, v)
                        for v, r in self.running.items()
                        if v in self.backfilled and r.start_s >= since and self.jobs[v].tenant == job.tenant and self.jobs[v].priority <= job.priority
                    ),
                    reverse=True,
                )
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
            out.lost_gpu_s += self.jobs[v].gpus * (self.now - run.start_s)
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
            for n, gpus in zip(self.running[v].nodes, self.pods[v]):
                free[n] += gpus
            if used is not None:
                key = (self.jobs[v].tenant, self.jobs[v].pool)
                used[key] -= self.jobs[v].gpus
            freed = True
        lo, hi = self.ranges[self.jobs[head].pool]
        return freed and place(free, self.jobs[head], self.cluster, self.placement, lo, hi, self.zone_nodes) is not None

    def make_room(self, head: int) -> bool:
        """Ask the planner for migrations that let the head start; apply them and start it if it can."""
        job = self.jobs[head]
        lo, hi = self.ranges[job.pool]
        if self.placement == "e-spread" and (job.kind != "inference" or job.gpus >= self.cluster.gpus_per_node):
            lo += self.zone_nodes
        per = self.cluster.gpus_per_node
        pods = [RunningPod(self.jobs[v].name, k, n, g, g < per) for v, run in self.running.items() for k, (n, g) in enumerate(zip(run.nodes, self.pods[v]))]
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
            assert run.nodes[k] == source, (name, k, source, run.nodes[k])
            gpus = self.pods[v][k]
            self.free[source] += gpus
            self.free[target] -= gpus
            run.nodes[k] = target
        for v in sorted({index[name] for name, *_ in plan.moves}):
            run = self.running[v]
            self.generation[v] += 1
            run.generation, run.end_s = self.generation[v], run.end_s + self.migration_cost_s
            heapq.heappush(self.events, (run.end_s, END, v, run.generation))
            out = self.outcomes[v]
            out.migrated += 1
            out.nodes, out.groups = len(set(run.nodes)), len({n // self.cluster.group_nodes for n in run.nodes})
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
                if i not in self.running or self.running[i].generation != gen:
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
        return QueueReplay(
            self.cluster,
            self.jobs,
            self.outcomes,
            horizon,
            self.allocated_s,
            self.fragmented_s,
            self.measure_from_s,
            self.preemptions,
            self.series,
            self.tenant_gpu_s,
            self.reclaims,
            self.calls,
            self.room_starts,
            self.moves,
            self.migration_gpu_s,
            self.room_wall_s,
        )
