"""Seeded ASI-like clusters (Alibaba's ASI paper): 8-GPU nodes under access switches, placed by a baseline.

The fabric: nodes of 8 GPUs grouped into access switches (ASWs) of 32 to 64 nodes, 4 to 8 ASWs per
spine, one GPU model and one node shape (128 to 192 CPUs, 8 GiB of memory per CPU) per ASW.

The workload, drawn job by job (every pod names a declared job):

* multi-node training: 2 to 8 pods of 8 GPUs, ``required`` to sit under one ASW;
* single-pod tasks of 1, 2, 4 or 8 GPUs (training, dev, offline inference);
* replicated inference services: 2 to 6 replicas, each its own single-pod job, sharing an
  ``anti_affinity`` group so no two replicas share a node.

Most pods are pinned to one GPU model (a few to two, a few to any); a pod's CPUs per GPU never exceed
``floor(min CPUs of an allowed node / 8)``, so an 8-GPU pod fits any empty node it may use. Memory per
CPU never exceeds the nodes' 8 GiB. Training and tasks are HP or LP; services are mostly HP.

The fill: jobs arrive in a random order and the baseline scheduler (``heuristics.scheduler``) places
each all-or-nothing; the cluster is filled above the target, random jobs depart down below it, and so
on for ``churn_rounds`` rounds, then it is filled to the target without overshooting. This leaves the
holes a real cluster has. A job that does not fit when it arrives goes back to the end of the arrival
queue (a resubmission), and jobs of the same shape are passed over until something departs; jobs
still unplaced at the end are left out of the snapshot, except the last ``pending_jobs`` that failed
in the final fill, which stay as pending pods. After the fill, whole jobs are locked at random until
``locked`` of the placed pods are. A very high target under ``spread`` (0.95) may end a little short.

Times: events (arrivals and departures) are a Poisson process spanning a few days whatever the
size; ``started_s`` is when a job was placed, ``checkpoint_s`` the last periodic checkpoint (every 30
to 120 minutes) of training jobs and tasks; services do not checkpoint; ``time_s`` follows the last
event.

Large clusters are filled block by block: blocks of whole spines of about 2,000 nodes, each with its
own share of the workload and its own run of the baseline scheduler, filled to the same target. That
keeps the cost linear in nodes (each placement filters and scores one block, not 37,707 nodes) and
is close to what kube-scheduler does at that size anyway: with ``percentageOfNodesToScore`` it scores
only a rotating window of about 5% of the nodes (about 1,900) for each pod. A cluster of up to 3,072
nodes is one block. Gangs never span blocks (they need one ASW anyway).

Everything runs on ``ClusterState`` arrays; pydantic objects are built for each block's job pool (the
state needs them) and for the snapshot. Deterministic for a given set of arguments.
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from dataclasses import dataclass

import numpy as np

from planner.cluster import Cluster, Job, Node, Pod, SnapshotError
from planner.heuristics.scheduler import POLICIES, schedule_gang
from planner.instances.asi_fabric import GPUS_PER_NODE, Fabric, build_fabric, fill_blocks, node_objects
from planner.instances.asi_pool import GANG, MIXES, Mix, Pool, build_pool, job_name, job_topology, pod_fields, pool_jobs, pool_pods
from planner.state import ClusterState

POOL_GPUS = 2.0
"""GPUs in the job pool, as a multiple of the cluster's GPUs: departed and failed jobs arrive again
later, so the pool need only be big enough to keep small jobs at hand near the target."""
MAX_FAILURES = 1000
"""Consecutive failed placements after which a fill phase gives up."""


@dataclass(frozen=True)
class FillSettings:
    """The fill arguments every block shares."""

    allocation: float
    locked: float
    scheduler: str
    churn_rounds: int
    mix: Mix = MIXES["asi"]


@dataclass
class BlockResult:
    """What the snapshot needs from one filled block (its ``ClusterState`` is let go)."""

    pool: Pool
    node_offset: int
    pod_node: np.ndarray  # per pool pod: node index within the block, or -1
    placed: list[int]  # jobs placed, in no particular order
    pending: list[int]  # jobs kept as pending
    locked: set[int]
    started_s: np.ndarray  # per job
    clock_s: float


def generate_asi(
    nodes: int,
    seed: int,
    allocation: float = 0.7,
    locked: float = 0.4,
    scheduler: str = "spread",
    *,
    churn_rounds: int = 2,
    pending_jobs: int = 0,
    mix: str = "asi",
) -> Cluster:
    """An ASI-like snapshot of ``nodes`` 8-GPU nodes at about ``allocation`` of its GPUs allocated.

    ``scheduler`` is the baseline policy that placed the pods (``spread`` = LeastAllocated,
    ``binpack`` or ``random``); ``locked`` is the share of placed pods that may not move;
    ``churn_rounds`` the rounds of over-filling and departures before the final fill;
    ``pending_jobs`` how many jobs that failed to fit stay in the snapshot as pending; ``mix`` the
    workload shape (``asi``, or ``small``: many 1- and 2-GPU pods, the size of the ASI paper's ILP
    instances).
    """
    _check_arguments(nodes, allocation, locked, scheduler, churn_rounds, pending_jobs)
    check_seed(seed)
    rng = np.random.default_rng(seed)
    fabric = build_fabric(nodes, rng)
    nodes_built = node_objects(fabric)
    if mix not in MIXES:
        raise SnapshotError([f"--mix: unknown workload mix {mix!r}; choose one of {', '.join(MIXES)}"])
    settings = FillSettings(allocation, locked, scheduler, churn_rounds, MIXES[mix])
    bounds = fill_blocks(fabric)
    results: list[BlockResult] = []
    first_job = first_service = 0
    for b, (lo, hi) in enumerate(bounds):
        pending_here = pending_jobs // len(bounds) + (1 if b < pending_jobs % len(bounds) else 0)
        result = _fill_block(fabric.block(lo, hi), nodes_built[lo:hi], lo, settings, pending_here, first_job, first_service, rng)
        results.append(result)
        first_job += len(result.pool.size)
        first_service += result.pool.services()
    return _snapshot(nodes_built, results, rng)


def check_seed(seed: int) -> None:
    """Seeds are whole numbers from 0 to 2**32 - 1 (what every generator here accepts)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32:
        raise SnapshotError([f"--seed: must be a whole number from 0 to {2**32 - 1}, got {seed!r}"])


MAX_NODES = 250_000
"""Largest cluster generated (the ASI paper's is 37,707 nodes); more is a typo, and would take hours."""


def _check_arguments(nodes: int, allocation: float, locked: float, scheduler: str, churn_rounds: int, pending_jobs: int) -> None:
    problems = []
    if isinstance(nodes, bool) or not isinstance(nodes, numbers.Integral) or not 1 <= nodes <= MAX_NODES:
        problems.append(f"--nodes: must be a whole number from 1 to {MAX_NODES:,}, got {nodes!r}")
    for name, value in (("--allocation", allocation), ("--locked", locked)):
        if not (isinstance(value, (int, float)) and 0 <= value <= 1):
            problems.append(f"{name}: must be a fraction between 0 and 1, got {value!r}")
    if scheduler not in POLICIES:
        problems.append(f"--scheduler: unknown policy {scheduler!r}; choose one of {', '.join(POLICIES)}")
    if not 0 <= churn_rounds <= 100:
        problems.append(f"--churn-rounds: must be from 0 to 100, got {churn_rounds}")
    if not 0 <= pending_jobs <= 1_000_000:
        problems.append(f"--pending-jobs: must be from 0 to 1,000,000, got {pending_jobs}")
    if problems:
        raise SnapshotError(problems)


def _fill_block(
    fabric: Fabric,
    node_objects: list[Node],
    node_offset: int,
    settings: FillSettings,
    pending_jobs: int,
    first_job: int,
    first_service: int,
    rng: np.random.Generator,
) -> BlockResult:
    """Fill one block of nodes with its own job pool and return what the snapshot needs."""
    gpus = len(node_objects) * GPUS_PER_NODE
    pool = build_pool(fabric, math.ceil(POOL_GPUS * gpus) + 64, rng, first_job, first_service, settings.mix)
    state = ClusterState(Cluster(nodes=node_objects, pods=pool_pods(pool), jobs=pool_jobs(pool)))
    fill = Fill(state, pool, settings.scheduler, rng, len(node_objects))
    fill.run(round(settings.allocation * gpus), settings.churn_rounds)
    return BlockResult(
        pool=pool,
        node_offset=node_offset,
        pod_node=state.pod_node.copy(),
        placed=list(fill.alive),
        pending=fill.failed_last(pending_jobs),
        locked=_choose_locked(pool, fill.alive, settings.locked, rng),
        started_s=fill.started_s,
        clock_s=fill.clock,
    )


# ----------------------------------------------------------------------------------------------
# The fill: arrivals and departures through the baseline scheduler
# ----------------------------------------------------------------------------------------------


def _shape(pool: Pool, u: int) -> tuple:
    """What decides whether job u fits: pod size and count, pins, gang-ness and anti-affinity group."""
    return (
        pool.pin[u],
        float(pool.gpus[u]),
        float(pool.cpus[u]),
        float(pool.memory_gib[u]),
        int(pool.size[u]),
        int(pool.kind[u]) == GANG,
        int(pool.service[u]),
    )


class Fill:
    """Arrivals and departures of pool jobs on a ``ClusterState``, with a clock."""

    def __init__(self, state: ClusterState, pool: Pool, policy: str, rng: np.random.Generator, nodes: int):
        self.state, self.pool, self.policy, self.rng = state, pool, policy, rng
        self.job_gpus = pool.job_gpus()
        self.queue: deque[int] = deque(range(len(pool.size)))
        self.alive: list[int] = []
        self.position: dict[int, int] = {}
        self.started_s = np.zeros(len(pool.size))
        self.failed: list[int] = []
        self.shape = [_shape(pool, u) for u in range(len(pool.size))]
        self.hopeless: set[tuple] = set()  # shapes that failed since the last departure
        self.allocated = 0.0
        self.clock = 0.0
        self.mean_gap_s = 60_000.0 / nodes  # a similar span of days whatever the size

    def run(self, target_gpus: int, churn_rounds: int) -> None:
        """Churn rounds above and below the target, then fill to the target without overshoot."""
        total = float(self.state.cap_gpus.sum())
        high = min(0.95 * total, target_gpus + 0.15 * total)
        low = max(0.0, target_gpus - 0.25 * total)
        for _ in range(churn_rounds if high > target_gpus else 0):
            self.fill(high, exact=False)
            self.depart(low)
        self.failed.clear()
        self.fill(target_gpus, exact=True)

    def _tick(self) -> None:
        self.clock += float(self.rng.exponential(self.mean_gap_s))

    def fill(self, to_gpus: float, exact: bool) -> None:
        """Jobs arrive from the queue until ``to_gpus`` are allocated (never above it when ``exact``).

        A job shaped like one that failed since the last departure is passed over without a try:
        capacity has only shrunk since. The phase ends after a whole pass over the queue places
        nothing (or after ``MAX_FAILURES`` failed tries in a row).
        """
        failures = misses = 0
        while self.queue and self.allocated < to_gpus and failures < MAX_FAILURES and misses <= len(self.queue):
            u = self.queue.popleft()
            if (exact and self.allocated + self.job_gpus[u] > to_gpus) or self.shape[u] in self.hopeless:
                self.queue.append(u)
                misses += 1
                continue
            self._tick()
            if self.arrive(u):
                failures = misses = 0
            else:
                self.queue.append(u)
                self.failed.append(u)
                self.hopeless.add(self.shape[u])
                failures += 1
                misses += 1

    def arrive(self, u: int) -> bool:
        start, size = int(self.pool.start[u]), int(self.pool.size[u])
        if schedule_gang(self.state, list(range(start, start + size)), self.policy, self.rng) is None:
            return False
        self.position[u] = len(self.alive)
        self.alive.append(u)
        self.allocated += self.job_gpus[u]
        self.started_s[u] = self.clock
        return True

    def depart(self, to_gpus: float) -> None:
        """Random jobs leave until at most ``to_gpus`` are allocated; they may arrive again later."""
        while self.alive and self.allocated > to_gpus:
            self._tick()
            u = self.alive[int(self.rng.integers(len(self.alive)))]
            self.leave(u)
            self.hopeless.clear()
            self.queue.append(u)

    def leave(self, u: int) -> None:
        k = self.position.pop(u)
        last = self.alive.pop()
        if last != u:
            self.alive[k] = last
            self.position[last] = k
        start, size = int(self.pool.start[u]), int(self.pool.size[u])
        for p in range(start, start + size):
            self.state.unplace(p)
        self.allocated -= self.job_gpus[u]

    def failed_last(self, count: int) -> list[int]:
        """The last ``count`` distinct jobs that failed to fit and are still unplaced."""
        chosen: list[int] = []
        for u in reversed(self.failed):
            if len(chosen) == count:
                break
            if u not in self.position and u not in chosen:
                chosen.append(u)
        return chosen[::-1]


# ----------------------------------------------------------------------------------------------
# The snapshot
# ----------------------------------------------------------------------------------------------


def _choose_locked(pool: Pool, alive: list[int], share: float, rng: np.random.Generator) -> set[int]:
    """Whole jobs, at random, until ``share`` of the placed pods are locked (as close as job sizes allow)."""
    placed = int(sum(pool.size[u] for u in alive))
    goal = round(share * placed)
    chosen: set[int] = set()
    count = 0
    for u in rng.permutation(np.array(sorted(alive), dtype=np.int64)).tolist():
        if count + pool.size[u] <= goal:
            chosen.add(u)
            count += int(pool.size[u])
    return chosen


def _snapshot(node_objects: list[Node], results: list[BlockResult], rng: np.random.Generator) -> Cluster:
    """The pydantic snapshot: every placed job, the pending ones, and the jobs they name."""
    time_s = round(max(r.clock_s for r in results) + 60.0, 3)
    pods: list[Pod] = []
    jobs: list[Job] = []
    for r in results:
        pool, placed = r.pool, set(r.placed)
        for u in sorted([*r.placed, *r.pending]):
            fields = pod_fields(pool, u)
            if u in placed:
                started = float(r.started_s[u])
                fields["locked"] = u in r.locked
                fields["started_s"] = round(started, 3)
                checkpoint = _last_checkpoint(started, float(pool.checkpoint_every_s[u]), time_s, rng)
                if checkpoint is not None:
                    fields["checkpoint_s"] = checkpoint
            start = int(pool.start[u])
            for k in range(int(pool.size[u])):
                n = int(r.pod_node[start + k])
                node = node_objects[r.node_offset + n].name if n >= 0 else None
                pods.append(Pod(name=f"{fields['job']}-{k}", node=node, **fields))
            jobs.append(Job(name=job_name(pool, u), topology=job_topology(pool, u)))
    return Cluster(time_s=time_s, nodes=node_objects, pods=pods, jobs=jobs)


def _last_checkpoint(started_s: float, every_s: float, time_s: float, rng: np.random.Generator) -> float | None:
    """Last periodic checkpoint of a job started at ``started_s`` (None if none yet or no checkpoints)."""
    if every_s <= 0:
        return None
    phase = float(rng.uniform(0, every_s))  # jobs do not all checkpoint in step
    done = math.floor((time_s - started_s - phase) / every_s)
    if done < 0:
        return None
    return round(min(time_s, started_s + phase + done * every_s), 3)
