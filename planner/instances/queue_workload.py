"""Seeded workloads of the queueing replay (``simulate/queueing.py``): the cluster's shape
(``QueueCluster``: nodes, GPUs per node, leaf groups, GPU pools), its jobs (``QueuedJob``), Kant's
training workload (``kant_jobs``) and inference replicas (``inference_jobs``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class QueuedJob:
    name: str
    submit_s: float
    gpus: int
    duration_s: float
    priority: int = 0
    tenant: str = "default"
    pool: str = "default"
    kind: str = "training"  # or "inference" (E-Spread's zone)


@dataclass
class QueueCluster:
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


SIZE_SHARES = {1: 0.55, 2: 0.2, 4: 0.16, 8: 0.04, 16: 0.015, 32: 0.012, 64: 0.008, 128: 0.006, 256: 0.004, 512: 0.003, 1024: 0.0015, 2048: 0.0005}
"""Job sizes (GPUs) for ``kant_jobs``: 91% of jobs under 8 GPUs (Kant §2: over 90%)."""
MEAN_HOURS = {"small": 1.0, "medium": 3.0, "large": 6.0}
"""Mean run time by size (under 8 GPUs, 8-128, 256 and more): with ``SIZE_SHARES`` the jobs under 8
GPUs hold 4% of GPU-time (Kant: under 10%) and those of 256 or more 79% (Kant: over half)."""


def kant_jobs(cluster: QueueCluster, hours: float, load: float, seed: int, tenants: dict[str, float] | None = None, reserve_nodes: int = 0) -> list[QueuedJob]:
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
    jobs: list[QueuedJob] = []
    t = 0.0
    while True:
        t += rng.exponential(1 / rate_per_h)
        if t >= hours:
            return jobs
        pool = pools[rng.choice(len(pools), p=pool_weight)] if len(pools) > 1 else pools[0]
        k = rng.choice(len(sizes), p=pool_shares[pool])
        hours_run = rng.lognormal(math.log(mean_h[k]) - 0.5, 1.0)
        tenant = names[rng.choice(len(names), p=tenant_weight)] if tenants else "default"
        jobs.append(QueuedJob(f"job-{len(jobs):06d}", t * 3600, int(sizes[k]), hours_run * 3600, tenant=tenant, pool=pool))


INFERENCE_SHARES = {1: 0.5, 2: 0.3, 4: 0.2}
"""Inference replicas' GPUs (one pod each, under a node)."""
INFERENCE_MEAN_HOURS = 12.0


def inference_jobs(cluster: QueueCluster, hours: float, load: float, seed: int, pool: str | None = None) -> list[QueuedJob]:
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
    jobs: list[QueuedJob] = []
    t = 0.0
    while True:
        t += rng.exponential(1 / rate_per_h)
        if t >= hours:
            return jobs
        g = int(sizes[rng.choice(len(sizes), p=shares)])
        life = rng.lognormal(math.log(INFERENCE_MEAN_HOURS) - 0.5, 1.0)
        jobs.append(QueuedJob(f"inf-{len(jobs):06d}", t * 3600, g, life * 3600, tenant="inference", pool=pool, kind="inference"))
