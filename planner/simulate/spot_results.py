"""What a spot replay (``spot.py``) reports: each job's outcome, the cluster-wide GPU series, and the
per-node GPU counts the series are summed from; and one run of a job."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.cluster import Node
from planner.instances.spot_workload import SimJob


@dataclass
class JobOutcome:
    name: str
    priority: str
    submit_s: float
    first_start_s: float | None = None
    finish_s: float | None = None
    evictions: int = 0
    lost_gpu_s: float = 0.0
    """GPU-seconds of evicted runs not kept by a checkpoint (restart overhead included)."""
    overhead_gpu_s: float = 0.0
    """GPU-seconds of restart overhead paid by runs that were not evicted."""
    gpu_s_run: float = 0.0
    """GPU-seconds the job held its GPUs (awake), over all its runs."""
    first_nodes: tuple[str, ...] = ()
    """Nodes of its pods (by worker) in its first run."""


@dataclass
class Replay:
    """A replay's outcomes and its cluster-wide series: after each instant ``series_t_s``, the GPUs
    held by awake HP pods, by spot pods, lent by standby pods, and lent GPUs spot pods use
    (harvested: on each node, spot GPUs beyond what the node has free besides the lent ones)."""

    policy: str
    outcomes: dict[str, JobOutcome]
    end_s: float
    total_gpus: float
    decisions: int = 0
    windows: int = 0
    series_t_s: list[float] = field(default_factory=list)
    series_hp_gpus: list[float] = field(default_factory=list)
    series_spot_gpus: list[float] = field(default_factory=list)
    series_lent_gpus: list[float] = field(default_factory=list)
    series_harvested_gpus: list[float] = field(default_factory=list)

    def completion_s(self, priority: str) -> list[float]:
        return [o.finish_s - o.submit_s for o in self.outcomes.values() if o.priority == priority and o.finish_s is not None]

    def start_delay_s(self, priority: str) -> list[float]:
        return [o.first_start_s - o.submit_s for o in self.outcomes.values() if o.priority == priority and o.first_start_s is not None]

    @property
    def lost_gpu_s(self) -> float:
        return sum(o.lost_gpu_s for o in self.outcomes.values())

    def integral(self, series: list[float], until_s: float | None = None, from_s: float = 0.0) -> float:
        """Integral over time (GPU-seconds) of a series over [``from_s``, ``until_s``] (default:
        to the replay's end); before the first instant the series is 0."""
        end = self.end_s if until_s is None else until_s
        t = np.clip(np.array(self.series_t_s + [max(end, from_s)]), from_s, max(end, from_s))
        return float(np.sum(np.array(series) * np.diff(t)))

    def allocation_mean(self, until_s: float | None = None, spot: bool = True, from_s: float = 0.0) -> float:
        """Time-average share of the GPUs held (GAR averaged) over [``from_s``, ``until_s``], with
        or without spot pods."""
        end = self.end_s if until_s is None else until_s
        if self.total_gpus <= 0 or end <= from_s:
            return 0.0
        held = self.integral(self.series_hp_gpus, end, from_s) + (self.integral(self.series_spot_gpus, end, from_s) if spot else 0.0)
        return held / (self.total_gpus * (end - from_s))

    @property
    def standby_harvested(self) -> float | None:
        """Share of standby GPU-time used by spot pods (ASI Fig. 16: 90%); None without standby."""
        lent = self.integral(self.series_lent_gpus)
        return None if lent <= 0 else self.integral(self.series_harvested_gpus) / lent


@dataclass
class Run:
    """One run of a job: when it started, when it begins to progress, its finish event's token."""

    start_s: float
    progress_s: float  # start + restart overhead: when this run begins to progress
    token: int
    standby: bool = False


class GpuSeries:
    """Per node, the GPUs held by awake HP pods, by spot pods, lent by standby pods, and harvested
    (lent GPUs spot pods use), with their cluster totals (whole GPUs, so the running sums are exact)."""

    def __init__(self, nodes: list[Node]):
        self.cap = np.array([n.gpus for n in nodes], dtype=np.float64)
        self.hp_on = np.zeros(len(nodes))
        self.spot_on = np.zeros(len(nodes))
        self.lent_on = np.zeros(len(nodes))
        self.harvest_on = np.zeros(len(nodes))
        self.hp_total = self.spot_total = self.lent_total = self.harvest_total = 0.0  # the arrays' sums

    def add(self, n: int, job: SimJob, sign: int, standby: bool = False) -> None:
        """Pod of ``job`` arrives on (sign +1) or leaves (-1) node n."""
        gpus = sign * job.gpus_per_worker
        if standby:
            self.lent_on[n] += gpus
            self.lent_total += gpus
        elif job.priority == "HP":
            self.hp_on[n] += gpus
            self.hp_total += gpus
        else:
            self.spot_on[n] += gpus
            self.spot_total += gpus
        harvest = max(0.0, min(self.lent_on[n], self.hp_on[n] + self.lent_on[n] + self.spot_on[n] - self.cap[n]))
        self.harvest_total += harvest - self.harvest_on[n]
        self.harvest_on[n] = harvest

    def record(self, r: Replay, now: float) -> None:
        """The totals after instant ``now``, appended to the replay's series."""
        r.series_t_s.append(now)
        r.series_hp_gpus.append(float(self.hp_total))
        r.series_spot_gpus.append(float(self.spot_total))
        r.series_lent_gpus.append(float(self.lent_total))
        r.series_harvested_gpus.append(float(self.harvest_total))
