"""A batch of large pending training jobs added to a snapshot: the input of topology allocation.

ASI's large jobs are multi-node gangs asking for ASW-local placement (Sec. 4.1, Fig. 14: requests of
128 and 256 GPUs at 12 CPUs per GPU). Each added job here:

* asks 32, 64, 128 or 256 GPUs (weights 4 : 3 : 2 : 1), in pods of 8 GPUs (three in four jobs) or
  4 GPUs, with 12 CPUs per GPU and the nodes' memory per CPU;
* is pinned to one GPU model, drawn in proportion to the model's nodes in the snapshot;
* has topology ``asw`` ``required`` (half of the jobs) or ``preferred``.

Names are ``batch-000``, ``batch-001``, ...; the draw uses its own random stream (seeded by the
snapshot's seed), so the snapshot under the batch is the same with or without it.
"""

from __future__ import annotations

import numpy as np

from planner.cluster import Cluster, Job, Pod, SnapshotError, Topology

BATCH_GPUS = (32, 64, 128, 256)
BATCH_GPU_WEIGHTS = (4, 3, 2, 1)
CPUS_PER_GPU = 12
MAX_BATCH_JOBS = 10_000


def add_large_jobs(cluster: Cluster, count: int, seed: int) -> Cluster:
    """``cluster`` with ``count`` large pending jobs added (see the module docstring)."""
    if not 0 <= count <= MAX_BATCH_JOBS:
        raise SnapshotError([f"--large-jobs: must be from 0 to {MAX_BATCH_JOBS:,}, got {count}"])
    if count == 0:
        return cluster
    if not cluster.nodes:
        raise SnapshotError(["--large-jobs: the snapshot has no nodes to size the jobs for"])
    rng = np.random.default_rng([seed, 0xBA7C4])
    models = sorted({n.gpu_model for n in cluster.nodes if n.gpus > 0})
    share = np.array([sum(1 for n in cluster.nodes if n.gpu_model == m) for m in models], dtype=np.float64)
    memory_per_cpu = float(np.median([n.memory_gib / n.cpus for n in cluster.nodes if n.cpus > 0]))
    taken = {j.name for j in cluster.jobs}
    weights = np.array(BATCH_GPU_WEIGHTS, dtype=np.float64)
    pods: list[Pod] = []
    jobs: list[Job] = []
    for k in range(count):
        name = f"batch-{k:03d}"
        if name in taken:
            raise SnapshotError([f"--large-jobs: the snapshot already has a job named '{name}'"])
        gpus = int(rng.choice(BATCH_GPUS, p=weights / weights.sum()))
        per_pod = 8 if rng.random() < 0.75 else 4
        model = models[int(rng.choice(len(models), p=share / share.sum()))]
        required = bool(rng.random() < 0.5)
        cpus = float(per_pod * CPUS_PER_GPU)
        jobs.append(Job(name=name, topology=Topology(level="asw", mode="required" if required else "preferred")))
        pods += [
            Pod(name=f"{name}-{i}", job=name, gpus=float(per_pod), cpus=cpus, memory_gib=round(cpus * memory_per_cpu, 3), gpu_models=[model])
            for i in range(gpus // per_pod)
        ]
    return cluster.model_copy(update={"pods": [*cluster.pods, *pods], "jobs": [*cluster.jobs, *jobs]})
