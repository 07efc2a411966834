"""Seeded HP/spot job workloads for the spot simulator (``planner.simulate.spot``).

``synthetic_jobs``: a small, hand-sized workload for tests and quick comparisons on a few 8-GPU nodes:
``count`` jobs arriving uniformly (10 s grid) over ``window_s`` seconds; 30% HP (no checkpoints),
70% spot (checkpoint every 120 or 300 s, or none, equally likely); 1 or 2 workers (2 in a third of
jobs) of 1, 2, 4 or 8 GPUs; work uniform in [100, 2000) s on a 10 s grid. Names are ``h<k>`` (HP) and
``s<k>`` (spot), k the arrival draw's index, four digits.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from planner.cluster import Node
from planner.instances.spot import (
    DEFAULT_NODE_LIST,
    family_of,
    nodes_of_rows,
    read_node_list,
)
from planner.simulate.spot import SimJob


def synthetic_jobs(seed: int, count: int, window_s: int = 4000) -> list[SimJob]:
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        hp = rng.random() < 0.3
        jobs.append(SimJob(f"{'h' if hp else 's'}{i:04d}", "HP" if hp else "LP", submit_s=rng.randrange(0, window_s, 10),
                           work_s=rng.randrange(100, 2000, 10), workers=rng.choice([1, 1, 2]), gpus_per_worker=rng.choice([1, 2, 4, 8]),
                           checkpoint_interval_s=None if hp else rng.choice([None, 120, 300])))
    return jobs




# ----------------------------------------------------------------------------------------------
# Days of HP and spot jobs on the spot-2026 node list
# ----------------------------------------------------------------------------------------------

DURATION_MEDIAN_S = 117.0
DURATION_SIGMA = 4.12
"""Job durations are lognormal with these parameters: the fit through the GFS paper's runtime
percentiles for this cluster's tasks (P90 6.4 h, P99 19.8 days: ln-ratio 4.307 over z99 - z90 =
1.0447 gives sigma 4.12, and P90 / exp(1.2816 sigma) a median of 117 s)."""
DURATION_MIN_S = 60.0
GPUS_PER_WORKER = ((1, 2, 4, 8), (0.3, 0.2, 0.2, 0.3))
"""Per-worker GPUs on 8-GPU (and 4-GPU) nodes; GFS: LLM tasks take whole cards, many take a node."""
WORKERS = ((1, 2, 4), (0.85, 0.10, 0.05))
CPUS_PER_GPU = (4, 8, 12, 16)
GIB_PER_CPU = (4, 6, 8)
CHECKPOINT_INTERVALS_S = (600.0, 1800.0, 3600.0, None)
DIURNAL_AMPLITUDE = 0.5
DIURNAL_PEAK_HOUR = 14.0
STANDBY_MIN_DURATION_S = 12 * 3600.0
STANDBY_START_HOURS = (22.0, 25.0)
STANDBY_LENGTH_HOURS = (2.0, 6.0)


def spot2026_cluster(nodes: int | None = None, seed: int = 0, node_list: Path | str | None = None) -> list[Node]:
    """The spot-2026 node list as nodes (``planner.instances.spot``'s mapping: 8 GiB per vCPU, ASWs
    of 16 nodes of one shape), all of it (``nodes=None``) or a seeded sample of ``nodes`` rows
    stratified by shape (model, GPUs, CPUs): each shape keeps its share (largest remainders), so a
    small cluster still has the common shapes."""
    rows = read_node_list(node_list if node_list is not None else DEFAULT_NODE_LIST)
    if nodes is not None:
        if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= len(rows):
            raise ValueError(f"nodes: must be a whole number from 1 to {len(rows):,} (the node list's rows), got {nodes!r}")
        rng = np.random.default_rng(seed)
        by_shape: dict[tuple, list[int]] = {}
        for i, row in enumerate(rows):
            by_shape.setdefault((row.gpu_model, row.gpus, row.cpus), []).append(i)
        shapes = sorted(by_shape)
        exact = np.array([len(by_shape[s]) * nodes / len(rows) for s in shapes])
        take = np.floor(exact).astype(int)
        for k in np.argsort(-(exact - take), kind="stable")[: nodes - int(take.sum())]:
            take[k] += 1
        picked = sorted(i for s, t in zip(shapes, take.tolist()) for i in rng.choice(by_shape[s], size=t, replace=False).tolist())
        rows = [rows[i] for i in picked]
    return nodes_of_rows(rows)


def spot2026_jobs(nodes: list[Node], days: float, jobs: int | None = None, seed: int = 0, hp_load: float = 0.65,
                  spot_load: float = 0.35, standby_share: float = 0.5, max_duration_s: float = 3 * 86400.0) -> list[SimJob]:
    """HP and spot jobs arriving over ``days`` days on ``nodes`` (time 0 is midnight of day 1).

    Each GPU model family (``spot.family_of``) gets jobs in proportion to its GPUs; a job is pinned
    to its family. Per job:

    * priority: HP with probability hp_load / (hp_load + spot_load) (the two kinds have the same
      size distribution, so the offered GPU-time splits the same way);
    * per-worker GPUs: 1 on families of 1-GPU nodes, else (1, 2, 4, 8) with probabilities
      (0.3, 0.2, 0.2, 0.3) up to the family's largest node; workers 1, 2 or 4 (0.85, 0.10, 0.05), at
      most as many as the family's nodes hold together (a small sample has few large nodes);
      CPUs 4, 8, 12 or 16 per GPU (at most the smallest CPU/GPU ratio of the family's nodes),
      4, 6 or 8 GiB per CPU;
    * duration: lognormal (``DURATION_MEDIAN_S``, ``DURATION_SIGMA``: the GFS paper's P90 6.4 h
      and P99 19.8 days), at least 60 s and at most ``max_duration_s`` (default 3 days, so a replay
      of a week ends);
    * submit time: a Poisson process whose rate follows a day: 1 + 0.5 cos(2 pi (hour - 14) / 24)
      (busiest at 14:00, quietest at 02:00; our choice, the diurnal HP demand ASI describes);
    * spot jobs checkpoint every 600, 1800 or 3600 s of progress or never, equally likely (ASI:
      users choose the interval);
    * an HP job of at least 12 h is a service that goes on standby at night with probability
      ``standby_share``: every night it may run, a window from 22:00-01:00 (uniform) lasting 2-6 h,
      so standby GPU-hours peak around midnight (ASI Fig. 16).

    The number of jobs: ``jobs`` if given, else what makes the offered GPU-time per day
    (hp_load + spot_load) x the cluster's GPUs, from the sizes' expected GPU-seconds per job.
    """
    problems = []
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 < days <= 366:
        problems.append(f"days: must be above 0 and at most 366, got {days!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        problems.append(f"jobs: must be a whole number of at least 1, got {jobs!r}")
    for name, value in (("hp_load", hp_load), ("spot_load", spot_load), ("standby_share", standby_share)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= (1 if name == "standby_share" else 10):
            problems.append(f"{name}: must be between 0 and {1 if name == 'standby_share' else 10}, got {value!r}")
    if not isinstance(max_duration_s, (int, float)) or not max_duration_s >= DURATION_MIN_S:
        problems.append(f"max_duration_s: must be at least {DURATION_MIN_S:g}, got {max_duration_s!r}")
    if not nodes:
        problems.append("nodes: at least one node")
    if not problems and hp_load + spot_load <= 0:
        problems.append("hp_load + spot_load: must be above 0")
    if problems:
        raise ValueError("; ".join(problems))
    rng = np.random.default_rng(seed)
    families: dict[str, list[Node]] = {}
    for node in nodes:
        families.setdefault(family_of(node.gpu_model), []).append(node)
    horizon_s = days * 86400.0
    mean_duration = _mean_duration_s(max_duration_s)
    plans = []
    for family in sorted(families):
        members = families[family]
        gpus = sum(n.gpus for n in members)
        largest = max(n.gpus for n in members)
        sizes = [g for g in GPUS_PER_WORKER[0] if g <= largest]
        weights = np.array([w for g, w in zip(*GPUS_PER_WORKER) if g <= largest])
        weights /= weights.sum()
        per_job = float(np.dot(sizes, weights)) * float(np.dot(*WORKERS)) * mean_duration
        wanted = (hp_load + spot_load) * gpus * horizon_s / per_job
        plans.append((family, members, sizes, weights, gpus, wanted))
    wanted_total = sum(p[5] for p in plans)
    out: list[SimJob] = []
    for family, members, sizes, weights, gpus, wanted in plans:
        count = int(round(wanted if jobs is None else jobs * wanted / wanted_total))
        if not count:
            continue
        models = tuple(sorted({n.gpu_model for n in members}))
        cpu_ratio = min(n.cpus / n.gpus for n in members)
        cpu_choices = [c for c in CPUS_PER_GPU if c <= cpu_ratio] or [max(1.0, float(np.floor(cpu_ratio)))]
        submit = _diurnal_arrivals(rng, count, horizon_s)
        hp = rng.random(count) < hp_load / (hp_load + spot_load)
        per_worker = rng.choice(sizes, size=count, p=weights)
        workers = rng.choice(WORKERS[0], size=count, p=WORKERS[1])
        cpus = rng.choice(cpu_choices, size=count) * per_worker
        # a gang never outnumbers the pods of its size the family's empty nodes hold together
        gpus_of = np.array([n.gpus for n in members])
        cpus_of = np.array([n.cpus for n in members])
        room = {g: int(np.minimum(gpus_of // g, cpus_of // (g * max(cpu_choices))).sum()) for g in sizes}
        workers = np.minimum(workers, np.maximum(1, np.array([room[int(g)] for g in per_worker])))
        gib = rng.choice(GIB_PER_CPU, size=count) * cpus
        duration = np.clip(np.exp(rng.normal(np.log(DURATION_MEDIAN_S), DURATION_SIGMA, size=count)), DURATION_MIN_S, max_duration_s)
        interval = rng.integers(0, len(CHECKPOINT_INTERVALS_S), size=count)
        sleeps = hp & (duration >= STANDBY_MIN_DURATION_S) & (rng.random(count) < standby_share)
        tag = family.replace(" ", "_")
        submit, duration = np.round(submit, 3), np.round(duration, 3)
        for k in range(count):
            windows = _night_windows(rng, float(submit[k]), float(duration[k])) if sleeps[k] else ()
            out.append(SimJob(
                f"{'hp' if hp[k] else 'spot'}-{tag}-{k:06d}", "HP" if hp[k] else "LP", submit_s=float(submit[k]),
                work_s=float(duration[k]), workers=int(workers[k]), gpus_per_worker=int(per_worker[k]),
                cpus_per_worker=float(cpus[k]), memory_gib_per_worker=float(gib[k]), gpu_models=models,
                checkpoint_interval_s=None if hp[k] else CHECKPOINT_INTERVALS_S[int(interval[k])], standby_windows_s=windows))
    return out


def _mean_duration_s(max_duration_s: float) -> float:
    """E[min(max(D, 60), max)] for the lognormal D, by a fixed quadrature (no sampling noise)."""
    z = np.linspace(-8, 8, 4001)
    density = np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    values = np.clip(np.exp(np.log(DURATION_MEDIAN_S) + DURATION_SIGMA * z), DURATION_MIN_S, max_duration_s)
    return float(np.trapezoid(values * density, z))


def _diurnal_arrivals(rng: np.random.Generator, count: int, horizon_s: float) -> np.ndarray:
    """``count`` sorted times in [0, horizon) with density 1 + A cos(2 pi (hour - peak) / 24)."""
    times = np.empty(0)
    while len(times) < count:
        draw = rng.uniform(0, horizon_s, size=2 * (count - len(times)) + 16)
        hour = (draw / 3600.0) % 24
        keep = rng.random(len(draw)) * (1 + DIURNAL_AMPLITUDE) < 1 + DIURNAL_AMPLITUDE * np.cos(2 * np.pi * (hour - DIURNAL_PEAK_HOUR) / 24)
        times = np.concatenate([times, draw[keep]])
    return np.sort(times[:count])


def _night_windows(rng: np.random.Generator, submit_s: float, duration_s: float) -> tuple[tuple[float, float], ...]:
    """A standby window every night the job may run: start 22:00-01:00, 2-6 h long."""
    windows = []
    end_s = submit_s + duration_s
    night = int(submit_s // 86400) - 1
    while night * 86400 < end_s:
        start = night * 86400 + rng.uniform(*STANDBY_START_HOURS) * 3600
        stop = start + rng.uniform(*STANDBY_LENGTH_HOURS) * 3600
        if stop > submit_s and start < end_s and (not windows or start >= windows[-1][1]):
            windows.append((max(round(start, 3), submit_s), min(round(stop, 3), end_s)))
        night += 1
    return tuple(w for w in windows if w[0] < w[1])


__all__ = ["spot2026_cluster", "spot2026_jobs", "synthetic_jobs"]
