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

from planner.cluster import Cluster, Job, Node, Pod, SnapshotError, Topology
from planner.heuristics.scheduler import POLICIES, schedule_gang
from planner.state import ClusterState

GPUS_PER_NODE = 8
MEMORY_GIB_PER_CPU = 8
ASW_NODES = (32, 64)
SPINE_ASWS = (4, 8)

GPU_MODELS: dict[str, tuple[float, tuple[int, ...]]] = {
    # model: (share of ASWs, CPUs per node options)
    "H800": (0.30, (192,)),
    "A100-80G": (0.30, (128, 160)),
    "H20": (0.25, (176, 192)),
    "L20": (0.15, (128, 144)),
}

# Job kinds and their shapes.
GANG, TASK, REPLICA = 0, 1, 2
GANG_PODS = (2, 8)
SERVICE_REPLICAS = (2, 6)


@dataclass(frozen=True)
class Mix:
    """The workload's shape: share of arrival groups per kind, and GPUs per pod of tasks and replicas."""

    kind_share: tuple[float, float, float]  # a training gang, a task, or a service
    task_gpus: tuple[tuple[int, ...], tuple[float, ...]]
    replica_gpus: tuple[tuple[int, ...], tuple[float, ...]]


MIXES = {
    # ASI-like: every pod size, 8-GPU training gangs
    "asi": Mix((0.08, 0.52, 0.40), ((1, 2, 4, 8), (0.35, 0.15, 0.20, 0.30)), ((1, 2, 4, 8), (0.50, 0.20, 0.20, 0.10))),
    # the ASI paper's ILP instances: many small pods (25 nodes held about 160 pods, 4,000 binaries)
    "small": Mix((0.0, 0.7, 0.3), ((1, 2), (0.95, 0.05)), ((1, 2), (0.95, 0.05))),
}
LP_SHARE = {GANG: 0.35, TASK: 0.45, REPLICA: 0.10}
CPUS_PER_GPU = ((4, 8, 12, 16, 24), (0.15, 0.30, 0.30, 0.15, 0.10))
GIB_PER_CPU = ((4, 6, 8), (0.3, 0.4, 0.3))
PIN_ANY, PIN_PAIR = 0.10, 0.05
CHECKPOINT_EVERY_S = (1800.0, 3600.0, 7200.0)

BLOCK_NODES = 2048
"""Nodes per fill block (whole spines); a cluster of up to 1.5 blocks is filled as one."""
POOL_GPUS = 2.0
"""GPUs in the job pool, as a multiple of the cluster's GPUs: departed and failed jobs arrive again
later, so the pool need only be big enough to keep small jobs at hand near the target."""
MAX_FAILURES = 1000
"""Consecutive failed placements after which a fill phase gives up."""


@dataclass
class Fabric:
    """Per node: ASW, spine, GPU model index, CPUs; and the model names."""

    asw: np.ndarray
    spine: np.ndarray
    model: np.ndarray
    cpus: np.ndarray
    models: list[str]

    def block(self, lo: int, hi: int) -> Fabric:
        return Fabric(self.asw[lo:hi], self.spine[lo:hi], self.model[lo:hi], self.cpus[lo:hi], self.models)


@dataclass
class Pool:
    """Jobs to arrive, as arrays: pods of job u are ``start[u] : start[u] + size[u]`` (contiguous).

    Job u is named after ``first_job + u`` and a replica's service after ``first_service + service[u]``
    so names stay unique across fill blocks.
    """

    kind: np.ndarray
    size: np.ndarray
    start: np.ndarray
    gpus: np.ndarray  # per job, per pod
    cpus: np.ndarray  # per job, per pod
    memory_gib: np.ndarray  # per job, per pod
    pin: list[tuple[str, ...]]
    lp: np.ndarray
    service: np.ndarray  # service id of a replica, else -1
    replica: np.ndarray  # replica number within its service
    checkpoint_every_s: np.ndarray  # 0 for none
    first_job: int = 0
    first_service: int = 0

    def job_gpus(self) -> np.ndarray:
        return self.gpus * self.size

    def services(self) -> int:
        return int(self.service.max()) + 1 if len(self.service) else 0


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
    node_objects = _node_objects(fabric)
    if mix not in MIXES:
        raise SnapshotError([f"--mix: unknown workload mix {mix!r}; choose one of {', '.join(MIXES)}"])
    settings = FillSettings(allocation, locked, scheduler, churn_rounds, MIXES[mix])
    bounds = fill_blocks(fabric)
    results: list[BlockResult] = []
    first_job = first_service = 0
    for b, (lo, hi) in enumerate(bounds):
        pending_here = pending_jobs // len(bounds) + (1 if b < pending_jobs % len(bounds) else 0)
        result = _fill_block(
            fabric.block(lo, hi), node_objects[lo:hi], lo, settings, pending_here, first_job, first_service, rng
        )
        results.append(result)
        first_job += len(result.pool.size)
        first_service += result.pool.services()
    return _snapshot(node_objects, results, rng)


def check_seed(seed: int) -> None:
    """Seeds are whole numbers from 0 to 2**32 - 1 (what every generator here accepts)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32:
        raise SnapshotError([f"--seed: must be a whole number from 0 to {2**32 - 1}, got {seed!r}"])


MAX_NODES = 250_000
"""Largest cluster generated (the ASI paper's is 37,707 nodes); more is a typo, and would take hours."""


def _check_arguments(
    nodes: int, allocation: float, locked: float, scheduler: str, churn_rounds: int, pending_jobs: int
) -> None:
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


# ----------------------------------------------------------------------------------------------
# Fabric: ASWs, spines, models, node shapes
# ----------------------------------------------------------------------------------------------


def asw_sizes(nodes: int, rng: np.random.Generator) -> np.ndarray:
    """Random ASW sizes in [32, 64] summing to ``nodes`` (one ASW holds them all below 32 nodes)."""
    low, high = ASW_NODES
    if nodes <= high:
        return np.array([nodes])
    count = min(max(round(nodes / ((low + high) / 2)), -(-nodes // high)), nodes // low)
    sizes = np.full(count, low)
    extra = nodes - low * count
    weights = rng.random(count)
    sizes += np.minimum(np.floor(extra * weights / weights.sum()).astype(np.int64), high - low)
    while (left := nodes - int(sizes.sum())) > 0:
        room = np.flatnonzero(sizes < high)
        sizes[rng.choice(room, size=min(left, len(room)), replace=False)] += 1
    return sizes


def build_fabric(nodes: int, rng: np.random.Generator) -> Fabric:
    """ASWs of 32-64 nodes, spines of 4-8 ASWs, one GPU model and node shape per ASW."""
    sizes = asw_sizes(nodes, rng)
    n_asw = len(sizes)
    spine_sizes = rng.integers(SPINE_ASWS[0], SPINE_ASWS[1] + 1, size=n_asw)
    spine_of_asw = np.repeat(np.arange(n_asw), spine_sizes)[:n_asw]
    names = list(GPU_MODELS)
    share = np.array([GPU_MODELS[m][0] for m in names])
    model_of_asw = rng.choice(len(names), size=n_asw, p=share / share.sum())
    cpus_of_asw = np.array([rng.choice(GPU_MODELS[names[m]][1]) for m in model_of_asw], dtype=np.int64)
    asw = np.repeat(np.arange(n_asw), sizes)
    return Fabric(asw, spine_of_asw[asw], model_of_asw[asw], cpus_of_asw[asw], names)


def fill_blocks(fabric: Fabric) -> list[tuple[int, int]]:
    """(first, end) node ranges of the fill blocks: whole spines, about ``BLOCK_NODES`` nodes each."""
    n = len(fabric.asw)
    if n <= 1.5 * BLOCK_NODES:
        return [(0, n)]
    spine_starts = np.flatnonzero(np.diff(fabric.spine, prepend=-1)).tolist()
    bounds = [0]
    for first in spine_starts[1:]:
        if first - bounds[-1] >= BLOCK_NODES:
            bounds.append(first)
    if n - bounds[-1] < BLOCK_NODES / 2 and len(bounds) > 1:
        bounds.pop()
    return list(zip(bounds, [*bounds[1:], n]))


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
    state = ClusterState(Cluster(nodes=node_objects, pods=_pool_pods(pool), jobs=_pool_jobs(pool)))
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


def _node_objects(fabric: Fabric) -> list[Node]:
    width = len(str(len(fabric.asw) - 1))
    return [
        Node(
            name=f"node-{i:0{width}d}",
            gpu_model=fabric.models[m],
            gpus=GPUS_PER_NODE,
            cpus=float(c),
            memory_gib=float(c * MEMORY_GIB_PER_CPU),
            asw=f"asw-{a:04d}",
            spine=f"spine-{s:03d}",
        )
        for i, (a, s, m, c) in enumerate(
            zip(fabric.asw.tolist(), fabric.spine.tolist(), fabric.model.tolist(), fabric.cpus.tolist())
        )
    ]


# ----------------------------------------------------------------------------------------------
# Workload pool
# ----------------------------------------------------------------------------------------------


def _mean_group_gpus(mix: Mix) -> float:
    task = float(np.dot(*mix.task_gpus))
    replica = float(np.dot(*mix.replica_gpus)) * sum(SERVICE_REPLICAS) / 2
    gang = GPUS_PER_NODE * sum(GANG_PODS) / 2
    return float(np.dot(mix.kind_share, (gang, task, replica)))


def _pins(fabric: Fabric) -> tuple[list[tuple[str, ...]], np.ndarray, np.ndarray]:
    """Possible GPU-model pins, their probabilities, and the CPUs-per-GPU cap of each."""
    present = sorted(set(fabric.model.tolist()))
    gpus_of = np.array([np.sum(fabric.model == m) for m in present], dtype=np.float64)
    singles = [(fabric.models[m],) for m in present]
    pairs = [
        (fabric.models[a], fabric.models[b]) for k, a in enumerate(present) for b in present[k + 1 :]
    ]
    pins: list[tuple[str, ...]] = [*singles, *pairs, ()]
    single_p = (1 - PIN_ANY - (PIN_PAIR if pairs else 0)) * gpus_of / gpus_of.sum()
    pair_p = np.full(len(pairs), PIN_PAIR / len(pairs)) if pairs else np.zeros(0)
    probability = np.concatenate([single_p, pair_p, [PIN_ANY]])
    min_cpus = {fabric.models[m]: int(fabric.cpus[fabric.model == m].min()) for m in present}
    overall = min(min_cpus.values())
    cap = np.array([min(min_cpus[m] for m in pin) if pin else overall for pin in pins]) // GPUS_PER_NODE
    return pins, probability, cap


def build_pool(
    fabric: Fabric,
    pool_gpus: int,
    rng: np.random.Generator,
    first_job: int = 0,
    first_service: int = 0,
    mix: Mix = MIXES["asi"],
) -> Pool:
    """Jobs in arrival order until their GPUs reach ``pool_gpus``; a service's replicas arrive together."""
    groups = max(64, int(2 * pool_gpus / _mean_group_gpus(mix)))  # about twice the arrival groups needed
    kind = rng.choice(3, size=groups, p=mix.kind_share)
    replicas = np.where(kind == REPLICA, rng.integers(SERVICE_REPLICAS[0], SERVICE_REPLICAS[1] + 1, size=groups), 1)
    gang_pods = rng.integers(GANG_PODS[0], GANG_PODS[1] + 1, size=groups)
    per_pod = np.where(
        kind == GANG,
        GPUS_PER_NODE,
        np.where(kind == TASK, rng.choice(mix.task_gpus[0], size=groups, p=mix.task_gpus[1]),
                 rng.choice(mix.replica_gpus[0], size=groups, p=mix.replica_gpus[1])),
    )
    group_gpus = per_pod * np.where(kind == GANG, gang_pods, replicas)
    groups = min(int(np.searchsorted(np.cumsum(group_gpus), pool_gpus)) + 1, groups)
    kind, replicas, gang_pods, per_pod = kind[:groups], replicas[:groups], gang_pods[:groups], per_pod[:groups]

    # Group-level attributes, then one job per replica.
    pins, pin_p, pin_cap = _pins(fabric)
    pin = rng.choice(len(pins), size=groups, p=pin_p)
    ratio = np.minimum(rng.choice(CPUS_PER_GPU[0], size=groups, p=CPUS_PER_GPU[1]), pin_cap[pin])
    gib_per_cpu = rng.choice(GIB_PER_CPU[0], size=groups, p=GIB_PER_CPU[1])
    lp = rng.random(groups) < np.array([LP_SHARE[GANG], LP_SHARE[TASK], LP_SHARE[REPLICA]])[kind]
    every = np.where(kind == REPLICA, 0.0, rng.choice(CHECKPOINT_EVERY_S, size=groups))
    service = np.where(kind == REPLICA, np.cumsum(kind == REPLICA) - 1, -1)

    of_group = np.repeat(np.arange(groups), replicas)
    first = np.cumsum(replicas) - replicas
    replica = np.arange(len(of_group)) - first[of_group]
    size = np.where(kind == GANG, gang_pods, 1)[of_group]
    gpus = per_pod[of_group].astype(np.float64)
    cpus = gpus * ratio[of_group]
    return Pool(
        kind=kind[of_group],
        size=size,
        start=np.cumsum(size) - size,
        gpus=gpus,
        cpus=cpus,
        memory_gib=cpus * gib_per_cpu[of_group],
        pin=[pins[k] for k in pin[of_group].tolist()],
        lp=lp[of_group],
        service=service[of_group],
        replica=replica,
        checkpoint_every_s=every[of_group],
        first_job=first_job,
        first_service=first_service,
    )


def job_name(pool: Pool, u: int) -> str:
    """Name of job u: ``train-*`` (gang), ``task-*`` or ``svc-<service>-<replica>``."""
    kind = int(pool.kind[u])
    if kind == REPLICA:
        return f"{service_name(pool, u)}-{int(pool.replica[u])}"
    return f"{'train' if kind == GANG else 'task'}-{pool.first_job + u:06d}"


def service_name(pool: Pool, u: int) -> str:
    """The service of replica job u; its name is also the replicas' anti-affinity group."""
    return f"svc-{pool.first_service + int(pool.service[u]):05d}"


def _job_topology(pool: Pool, u: int) -> Topology | None:
    return Topology(level="asw", mode="required") if pool.kind[u] == GANG else None


def _pod_fields(pool: Pool, u: int) -> dict:
    """Fields shared by every pod of job u."""
    fields = {
        "job": job_name(pool, u),
        "gpus": float(pool.gpus[u]),
        "cpus": float(pool.cpus[u]),
        "memory_gib": float(pool.memory_gib[u]),
        "gpu_models": list(pool.pin[u]),
        "priority": "LP" if pool.lp[u] else "HP",
    }
    if pool.service[u] >= 0:
        fields["anti_affinity"] = [service_name(pool, u)]
    return fields


def _pool_pods(pool: Pool) -> list[Pod]:
    pods = []
    for u in range(len(pool.size)):
        fields = _pod_fields(pool, u)
        pods += [Pod(name=f"{fields['job']}-{k}", **fields) for k in range(int(pool.size[u]))]
    return pods


def _pool_jobs(pool: Pool) -> list[Job]:
    return [Job(name=job_name(pool, u), topology=_job_topology(pool, u)) for u in range(len(pool.size))]


# ----------------------------------------------------------------------------------------------
# The fill: arrivals and departures through the baseline scheduler
# ----------------------------------------------------------------------------------------------


def _shape(pool: Pool, u: int) -> tuple:
    """What decides whether job u fits: pod size and count, pins, gang-ness and anti-affinity group."""
    return (
        pool.pin[u], float(pool.gpus[u]), float(pool.cpus[u]), float(pool.memory_gib[u]),
        int(pool.size[u]), int(pool.kind[u]) == GANG, int(pool.service[u]),
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
            fields = _pod_fields(pool, u)
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
            jobs.append(Job(name=job_name(pool, u), topology=_job_topology(pool, u)))
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
