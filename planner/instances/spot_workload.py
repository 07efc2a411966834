"""Seeded HP/spot job workloads for the spot simulator (``planner.simulate.spot``): ``SimJob``, one job
of a workload, and the generators.

``synthetic_jobs``: a small, hand-sized workload for tests and quick comparisons on a few 8-GPU nodes:
``count`` jobs arriving uniformly (10 s grid) over ``window_s`` seconds; 30% HP (no checkpoints),
70% spot (checkpoint every 120 or 300 s, or none, equally likely); 1 or 2 workers (2 in a third of
jobs) of 1, 2, 4 or 8 GPUs; work uniform in [100, 2000) s on a 10 s grid. Names are ``h<k>`` (HP) and
``s<k>`` (spot), k the arrival draw's index, four digits.

``spot2026_cluster`` and ``spot2026_jobs``: days of HP and spot jobs on the real node list of
Alibaba's spot-GPU trace (cluster-trace-v2026-spot-gpu, published with the GFS paper, arXiv
2509.11134). The trace's job table is not available here, so every distribution below is a choice.
Where a published fact backs a choice, the fact and its source are given; otherwise the choice is ours.

Facts used (and where they were read):

* the trace's README (alibaba/clusterdata, ``cluster-trace-v2026-spot-gpu/README.md``): the job
  fields (``gpu_request`` is per worker, ``worker_num`` the workers, ``job_type`` HP or Spot), and
  four sample rows: two HP A10 jobs of 1 GPU with 20 and 8 CPUs that last 2,764,799 s (32 days) and
  15,897,599 s (184 days); two spot A100-SXM4-80GB jobs of 16 and 94 workers, each worker 1 GPU and
  15 CPUs, that last 41,060 s and 71,718 s;
* the ASI paper (``shared/papers/000_5ced3f04029264aa.txt``): GPU allocation 68% with HP jobs alone
  and 93% with HP and LP together (Fig. 9); GPU requests follow strong diurnal cycles, more by day
  than late at night (Fig. 5); the median job runs 5 h and the HP P90 is 24 h (Sec. 3.2); GPU
  sharing is rarely used (abstract); standby GPU-hours are diurnal and surge at midnight to as much
  as 10,000 (Fig. 16); a spot job's user sets its checkpoint interval (Sec. 4.2);
* the GFS paper's task-duration percentiles P90 6.4 h and P99 19.8 days, as an earlier revision of
  this module cites them. The stored copy of the paper searched for this revision shows only its
  abstract, so these two numbers are not re-checked here.

Time 0 is midnight of day 1; hour h of a time t is (t / 3600) mod 24. Per GPU model family f
(``spot.family_of``: A100-SXM4-80GB and A800-SXM4-80GB are one family, every other model its own),
with G_f its GPUs and T = days x 86,400 s:

* **family and pool:** a job is pinned to one family (``gpu_models`` = the family's models) and the
  families get jobs in proportion to their GPUs (the README's jobs each name one model). A family
  whose nodes differ in GPU count (GPU-series-1: 1-, 4- and 8-GPU nodes) is split into pools, one per
  node GPU count, each getting jobs in proportion to its GPUs with the per-worker sizes its nodes
  hold (below); its jobs still may use any node of the family. Without the split a mixed family's
  multi-GPU pods would be offered their family's whole load on its few large nodes: GPU-series-1
  has 58% of its GPUs on 1-GPU nodes, so its 2-8-GPU pods asked 2.05 times what its 4- and 8-GPU
  nodes hold (a week on the whole list) and queued for days under every policy (HP included), while
  the 1-GPU nodes idled;
* **priority:** HP with probability p_HP = hp_load / (hp_load + spot_load). HP and spot jobs share
  one size and duration law, so the offered GPU-time splits in the same ratio (our choice; the
  README's two HP samples run 32 and 184 days and its two spot samples 11 and 20 h, and ASI Sec. 3.1
  finds online inference and training mostly HP: a longer HP law is not modelled);
* **GPUs per worker g:** whole GPUs (ASI: sharing is rare): 1 on pools of 1-GPU nodes, else
  1, 2, 4 or 8 with probabilities 0.3, 0.2, 0.2, 0.3, up to the pool's node size (our choice);
* **workers w:** 1, 2 or 4 with probabilities 0.85, 0.10, 0.05, cut to the pods of that size the
  family's nodes hold together (our choice; the README's 16- and 94-worker spot gangs are a tail
  this generator leaves out);
* **CPUs per worker:** g x c, c drawn from 4, 8, 12, 16 CPUs per GPU up to the smallest CPU/GPU
  ratio of the pool's nodes (ASI Sec. 3.3 caps the ratio per server type; the README's samples ask
  8 to 20 per GPU); memory 4, 6 or 8 GiB per CPU (the nodes have 8 GiB per vCPU, so memory never
  decides a fit alone);
* **duration D:** lognormal, median 117 s and sigma 4.12 (the fit through P90 6.4 h and P99 19.8 days:
  sigma = ln(19.8 d / 6.4 h) / (z_0.99 - z_0.90) = 4.307 / 1.0447, median = 6.4 h / exp(1.2816 sigma)),
  kept within [60 s, ``max_duration_s``] (default 3 days, so a replay of a week ends);
* **arrivals:** a Poisson process with rate proportional to 1 + 0.5 cos(2 pi (h - 14) / 24): busiest
  at 14:00, three times quieter at 02:00 (ASI Fig. 5's shape; amplitude and peak hour are ours);
* **checkpoints:** spot jobs checkpoint every 600, 1800 or 3600 s of progress or never, equally
  likely; HP jobs never;
* **standby:** an HP job of at least 12 h is a service; with probability ``standby_share`` it goes
  on standby every night it runs, from a start uniform in 22:00-01:00 for a length uniform in 2-6 h,
  clipped to its run (ASI Fig. 16: standby GPU-hours peak around midnight; the window is ours).

Load. With E[g], E[w] the family's mean sizes and E[D] = E[min(max(D, 60 s), max_duration_s)] (by
quadrature, no sampling noise), family f gets

    N_f = (hp_load + spot_load) x G_f x T / (E[g] x E[w] x E[D])

jobs, f a pool (or ``jobs`` split over the pools in the same proportions), so the offered GPU-time
sum of g x w x D is (hp_load + spot_load) x G x T, hp_load x G x T of it HP. The defaults, hp_load
0.65 and spot_load 0.35, aim at ASI's 68% HP-only allocation and an offered total of 100% (above
ASI's 93% with spot). A week on the whole list is 168,637 jobs, made in about 1.5 s.

Warm-up. Jobs arrive from time 0 only, so the GPUs they would hold at time t (each started at
once) is only load x E[min(D, t)] / E[D]: it climbs for ``max_duration_s``. Measured on the whole
list (seed 0, a week, each job started on arrival), the HP jobs would hold 0.22 of the GPUs on day 1,
0.44 on day 2, 0.56 on day 3 and 0.63-0.64 from day 4.
``warm_start=True`` adds the jobs a stationary past leaves running at time 0: arrivals over
[-max_duration_s, 0) at the same rate whose D ends after 0 become jobs submitted at 0 with the rest
of their work (``w<k>`` names), drawn from a second seeded stream so the jobs after time 0 are the
same with or without it. The demand is then at hp_load and spot_load from the first day: on the
whole list, 3,487 more jobs and HP 0.62-0.64 every day of the week (0.60-0.68 a day over seeds 0-5).
It is off by default so that the published benchmarks (``benchmarks/results/spot.md``, which leave
day 1 out) replay the same workload.
"""

from __future__ import annotations

import math
import numbers
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from planner.cluster import Node
from planner.instances.spot import (
    DEFAULT_NODE_LIST,
    family_of,
    nodes_of_rows,
    read_node_list,
)


@dataclass(frozen=True)
class SimJob:
    """A job of the workload: ``workers`` pods of one shape, needing ``work_s`` seconds of running."""

    name: str
    priority: Literal["HP", "LP"]
    submit_s: float
    work_s: float
    workers: int = 1
    gpus_per_worker: int = 1
    cpus_per_worker: float = 1.0
    memory_gib_per_worker: float = 1.0
    checkpoint_interval_s: float | None = None
    gpu_models: tuple[str, ...] = ()
    """GPU models the job's pods may use (empty: any)."""
    standby_windows_s: tuple[tuple[float, float], ...] = ()
    """HP jobs only: [start, end) times (absolute, seconds) in which a running job's pods are on
    standby (ASI's Standby): they keep their nodes but lend their GPUs and CPUs to spot pods, and at
    the window's end each pod wakes on its node, evicting spot pods there. The job's work goes on
    meanwhile (a service idle at night still runs). Sorted and disjoint."""

    def __post_init__(self) -> None:
        for name in ("submit_s", "work_s", "workers", "gpus_per_worker", "cpus_per_worker", "memory_gib_per_worker"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0 or (name in ("work_s", "workers") and value <= 0):
                raise ValueError(f"jobs[{self.name}].{name}: must be {'above' if name in ('work_s', 'workers') else 'at least'} 0, got {value}")
        if self.checkpoint_interval_s is not None and not self.checkpoint_interval_s > 0:
            raise ValueError(f"jobs[{self.name}].checkpoint_interval_s: must be above 0, got {self.checkpoint_interval_s}")
        if self.priority not in ("HP", "LP"):
            raise ValueError(f"jobs[{self.name}].priority: must be 'HP' or 'LP', got {self.priority!r}")
        if self.standby_windows_s and self.priority != "HP":
            raise ValueError(f"jobs[{self.name}].standby_windows_s: only HP jobs go on standby; drop the windows or make the job HP")
        last = -math.inf
        for k, (start, end) in enumerate(self.standby_windows_s):
            if not (math.isfinite(start) and math.isfinite(end) and last <= start < end):
                raise ValueError(
                    f"jobs[{self.name}].standby_windows_s[{k}]: windows must be finite, start before end, sorted and disjoint; got ({start}, {end})"
                )
            last = end


def synthetic_jobs(seed: int, count: int, window_s: int = 4000) -> list[SimJob]:
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        hp = rng.random() < 0.3
        jobs.append(
            SimJob(
                f"{'h' if hp else 's'}{i:04d}",
                "HP" if hp else "LP",
                submit_s=rng.randrange(0, window_s, 10),
                work_s=rng.randrange(100, 2000, 10),
                workers=rng.choice([1, 1, 2]),
                gpus_per_worker=rng.choice([1, 2, 4, 8]),
                checkpoint_interval_s=None if hp else rng.choice([None, 120, 300]),
            )
        )
    return jobs


# ----------------------------------------------------------------------------------------------
# Days of HP and spot jobs on the spot-2026 node list
# ----------------------------------------------------------------------------------------------

DURATION_MEDIAN_S = 117.0
DURATION_SIGMA = 4.12
"""Job durations are lognormal with these parameters: the fit through the task-duration percentiles
P90 6.4 h and P99 19.8 days attributed to the GFS paper (see the module docstring): ln-ratio 4.307
over z99 - z90 = 1.0447 gives sigma 4.12, and P90 / exp(1.2816 sigma) a median of 117 s."""
DURATION_MIN_S = 60.0
GPUS_PER_WORKER = ((1, 2, 4, 8), (0.3, 0.2, 0.2, 0.3))
"""Per-worker GPUs and their probabilities on 8-GPU (and 4-GPU) nodes: whole GPUs (ASI: sharing is
rare); the weights are our choice."""
WORKERS = ((1, 2, 4), (0.85, 0.10, 0.05))
CPUS_PER_GPU = (4, 8, 12, 16)
GIB_PER_CPU = (4, 6, 8)
CHECKPOINT_INTERVALS_S = (600.0, 1800.0, 3600.0, None)
DIURNAL_AMPLITUDE = 0.5
DIURNAL_PEAK_HOUR = 14.0
STANDBY_MIN_DURATION_S = 12 * 3600.0
HP_LOAD = 0.65
SPOT_LOAD = 0.35
"""Default offered GPU-time of HP and of spot jobs, as shares of the cluster's (module docstring, Load)."""
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


def spot2026_jobs(
    nodes: list[Node],
    days: float,
    jobs: int | None = None,
    seed: int = 0,
    hp_load: float = HP_LOAD,
    spot_load: float = SPOT_LOAD,
    standby_share: float = 0.5,
    max_duration_s: float = 3 * 86400.0,
    warm_start: bool = False,
) -> list[SimJob]:
    """HP and spot jobs arriving over ``days`` days on ``nodes`` (time 0 is midnight of day 1), drawn
    from the laws in the module docstring: ``jobs`` jobs if given, else as many as make the offered
    GPU-time (hp_load + spot_load) x GPUs x days; with ``warm_start``, plus the jobs a stationary
    past leaves running at time 0 (submitted at 0 with the rest of their work). Names are
    ``hp-<family>-<k>`` and ``spot-<family>-<k>`` (``w<k>`` for the warm start's jobs; ``<family>`` is
    ``<family>.<G>gpu`` for the pool of G-GPU nodes of a family with several node sizes)."""
    _check_jobs_arguments(nodes, days, jobs, seed, hp_load, spot_load, standby_share, max_duration_s, warm_start)
    rng = np.random.default_rng(seed)
    warm_rng = np.random.default_rng([seed, 1])
    families: dict[str, list[Node]] = {}
    for node in nodes:
        families.setdefault(family_of(node.gpu_model), []).append(node)
    horizon_s = days * 86400.0
    mean_duration = _mean_duration_s(max_duration_s)
    plans = []
    for family in sorted(families):
        members = families[family]
        pools = sorted({n.gpus for n in members})
        for size in pools:
            pool = [n for n in members if n.gpus == size]
            sizes = [g for g in GPUS_PER_WORKER[0] if g <= size]
            weights = np.array([w for g, w in zip(*GPUS_PER_WORKER) if g <= size])
            weights /= weights.sum()
            per_job = float(np.dot(sizes, weights)) * float(np.dot(*WORKERS)) * mean_duration
            wanted = (hp_load + spot_load) * sum(n.gpus for n in pool) * horizon_s / per_job
            name = family if len(pools) == 1 else f"{family}.{size}gpu"
            plans.append(_Family(name, pool, members, sizes, weights, wanted))
    wanted_total = sum(p.wanted for p in plans)
    hp_share = hp_load / (hp_load + spot_load)
    out: list[SimJob] = []
    for plan in plans:
        expected = plan.wanted if jobs is None else jobs * plan.wanted / wanted_total
        count = round(expected)
        if count:
            draws = _draw_jobs(rng, plan, _diurnal_arrivals(rng, count, horizon_s), hp_share, standby_share, max_duration_s)
            out.extend(_sim_jobs(rng, plan, draws, ""))
        if warm_start:
            past = round(expected * max_duration_s / horizon_s)
            if past:
                draws = _draw_jobs(warm_rng, plan, _diurnal_arrivals(warm_rng, past, max_duration_s, -max_duration_s), hp_share, standby_share, max_duration_s)
                out.extend(_sim_jobs(warm_rng, plan, _still_running(draws), "w"))
    return out


def _check_jobs_arguments(
    nodes: list[Node], days: float, jobs: int | None, seed: int, hp_load: float, spot_load: float, standby_share: float, max_duration_s: float, warm_start: bool
) -> None:
    problems = []
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 < days <= 366:
        problems.append(f"days: must be above 0 and at most 366, got {days!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        problems.append(f"jobs: must be a whole number of at least 1, got {jobs!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        problems.append(f"seed: must be a whole number of at least 0, got {seed!r}")
    for name, value in (("hp_load", hp_load), ("spot_load", spot_load), ("standby_share", standby_share)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= (1 if name == "standby_share" else 10):
            problems.append(f"{name}: must be between 0 and {1 if name == 'standby_share' else 10}, got {value!r}")
    if not isinstance(max_duration_s, (int, float)) or not max_duration_s >= DURATION_MIN_S:
        problems.append(f"max_duration_s: must be at least {DURATION_MIN_S:g}, got {max_duration_s!r}")
    if not isinstance(warm_start, bool):
        problems.append(f"warm_start: must be True or False, got {warm_start!r}")
    if not nodes:
        problems.append("nodes: at least one node")
    if not problems and hp_load + spot_load <= 0:
        problems.append("hp_load + spot_load: must be above 0")
    if problems:
        raise ValueError("; ".join(problems))


@dataclass(frozen=True)
class _Family:
    """One pool of a GPU model family (its nodes of one GPU count), the per-worker GPU sizes that fit
    them, and its expected jobs; the jobs may use any node of the family (``models``)."""

    name: str
    members: list[Node]
    family_members: list[Node]
    sizes: list[int]
    weights: np.ndarray
    wanted: float

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(sorted({n.gpu_model for n in self.family_members}))


@dataclass
class _Draws:
    """The drawn attributes of a family's jobs, one array entry per job (``sleeps``: goes on standby)."""

    submit: np.ndarray
    hp: np.ndarray
    per_worker: np.ndarray
    workers: np.ndarray
    cpus: np.ndarray
    gib: np.ndarray
    duration: np.ndarray
    interval: np.ndarray
    sleeps: np.ndarray


def _draw_jobs(rng: np.random.Generator, plan: _Family, submit: np.ndarray, hp_share: float, standby_share: float, max_duration_s: float) -> _Draws:
    """Every attribute of ``len(submit)`` jobs of one pool, vectorised."""
    count = len(submit)
    members, sizes = plan.members, plan.sizes
    cpu_ratio = min(n.cpus / n.gpus for n in members)
    cpu_choices: list[float] = [c for c in CPUS_PER_GPU if c <= cpu_ratio] or [max(1.0, float(np.floor(cpu_ratio)))]
    hp = rng.random(count) < hp_share
    per_worker = rng.choice(sizes, size=count, p=plan.weights)
    workers = rng.choice(WORKERS[0], size=count, p=WORKERS[1])
    cpus = rng.choice(cpu_choices, size=count) * per_worker
    # a gang never outnumbers the pods of its size the family's empty nodes hold together
    gpus_of = np.array([n.gpus for n in plan.family_members])
    cpus_of = np.array([n.cpus for n in plan.family_members])
    room = {g: int(np.minimum(gpus_of // g, cpus_of // (g * max(cpu_choices))).sum()) for g in sizes}
    workers = np.minimum(workers, np.maximum(1, np.array([room[int(g)] for g in per_worker])))
    gib = rng.choice(GIB_PER_CPU, size=count) * cpus
    duration = np.clip(np.exp(rng.normal(np.log(DURATION_MEDIAN_S), DURATION_SIGMA, size=count)), DURATION_MIN_S, max_duration_s)
    interval = rng.integers(0, len(CHECKPOINT_INTERVALS_S), size=count)
    sleeps = hp & (duration >= STANDBY_MIN_DURATION_S) & (rng.random(count) < standby_share)
    return _Draws(np.round(submit, 3), hp, per_worker, workers, cpus, gib, np.round(duration, 3), interval, sleeps)


def _still_running(draws: _Draws) -> _Draws:
    """The past's jobs (submitted before 0) still running at 0, as jobs submitted at 0 with the rest
    of their work."""
    rest = np.round(draws.submit + draws.duration, 3)
    keep = rest > 0
    fields = {name: getattr(draws, name)[keep] for name in _Draws.__dataclass_fields__}
    fields["submit"] = np.zeros(int(keep.sum()))
    fields["duration"] = rest[keep]
    return _Draws(**fields)


def _sim_jobs(rng: np.random.Generator, plan: _Family, draws: _Draws, tag: str) -> list[SimJob]:
    """The drawn jobs as ``SimJob``s (standby windows drawn here, job by job, for the sleepers)."""
    models = plan.models  # once per pool, not per job
    family = plan.name.replace(" ", "_")
    out = []
    for k in range(len(draws.submit)):
        hp = bool(draws.hp[k])
        submit, duration = float(draws.submit[k]), float(draws.duration[k])
        windows = _night_windows(rng, submit, duration) if draws.sleeps[k] else ()
        out.append(
            SimJob(
                f"{'hp' if hp else 'spot'}-{family}-{tag}{k:06d}",
                "HP" if hp else "LP",
                submit_s=submit,
                work_s=duration,
                workers=int(draws.workers[k]),
                gpus_per_worker=int(draws.per_worker[k]),
                cpus_per_worker=float(draws.cpus[k]),
                memory_gib_per_worker=float(draws.gib[k]),
                gpu_models=models,
                checkpoint_interval_s=None if hp else CHECKPOINT_INTERVALS_S[int(draws.interval[k])],
                standby_windows_s=windows,
            )
        )
    return out


def _mean_duration_s(max_duration_s: float) -> float:
    """E[min(max(D, 60), max)] for the lognormal D, by a fixed quadrature (no sampling noise)."""
    z = np.linspace(-8, 8, 4001)
    density = np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    values = np.clip(np.exp(np.log(DURATION_MEDIAN_S) + DURATION_SIGMA * z), DURATION_MIN_S, max_duration_s)
    return float(np.trapezoid(values * density, z))


def _diurnal_arrivals(rng: np.random.Generator, count: int, span_s: float, start_s: float = 0.0) -> np.ndarray:
    """``count`` sorted times in [start, start + span) with density 1 + A cos(2 pi (hour - peak) / 24)."""
    times = np.empty(0)
    while len(times) < count:
        draw = start_s + rng.uniform(0, span_s, size=2 * (count - len(times)) + 16)
        hour = (draw / 3600.0) % 24
        keep = rng.random(len(draw)) * (1 + DIURNAL_AMPLITUDE) < 1 + DIURNAL_AMPLITUDE * np.cos(2 * np.pi * (hour - DIURNAL_PEAK_HOUR) / 24)
        times = np.concatenate([times, draw[keep]])
    return np.sort(times[:count])


def _night_windows(rng: np.random.Generator, submit_s: float, duration_s: float) -> tuple[tuple[float, float], ...]:
    """A standby window every night the job may run: start 22:00-01:00, 2-6 h long."""
    windows: list[tuple[float, float]] = []
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
