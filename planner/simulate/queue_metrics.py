"""Metrics of a queueing replay (``simulate/queueing.py``, Kant §5): GAR, SOR, GFR, JWTD by job-size
bucket, kind and tenant, JTTEd, preemptions and make-room's moves and cost (``queue_row``)."""

from __future__ import annotations

import math

import numpy as np

from planner.simulate.queue_results import QueueReplay


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
