"""The job pool of an ASI-like cluster (``asi.py``): training gangs, tasks and services' replicas with
their shapes, GPU-model pins, priorities and checkpoints, as arrays; their names and the pods and jobs
built from them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.cluster import Job, Pod, Topology
from planner.instances.asi_fabric import GPUS_PER_NODE, Fabric

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
    pairs = [(fabric.models[a], fabric.models[b]) for k, a in enumerate(present) for b in present[k + 1 :]]
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
        np.where(
            kind == TASK, rng.choice(mix.task_gpus[0], size=groups, p=mix.task_gpus[1]), rng.choice(mix.replica_gpus[0], size=groups, p=mix.replica_gpus[1])
        ),
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


def job_topology(pool: Pool, u: int) -> Topology | None:
    return Topology(level="asw", mode="required") if pool.kind[u] == GANG else None


def pod_fields(pool: Pool, u: int) -> dict:
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


def pool_pods(pool: Pool) -> list[Pod]:
    pods = []
    for u in range(len(pool.size)):
        fields = pod_fields(pool, u)
        pods += [Pod(name=f"{fields['job']}-{k}", **fields) for k in range(int(pool.size[u]))]
    return pods


def pool_jobs(pool: Pool) -> list[Job]:
    return [Job(name=job_name(pool, u), topology=job_topology(pool, u)) for u in range(len(pool.size))]
