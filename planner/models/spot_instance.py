"""The exact spot schedule's instance and schedule types (``planner/models/spot_schedule.py`` solves
it): a small slotted HP/spot instance loaded from JSON with every problem named, the schedule as runs
per job, and ``validate_schedule``, the independent check every returned schedule passes."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from planner.bounded_models import FAIL_FAST
from planner.cluster import (
    _STRICT,
)
from planner.snapshot import parse_checked, read_text

DEFAULT_MAX_RUNS = 3
"""Runs a spot job may have when the instance does not say (HP jobs: always 1)."""
MAX_MODEL_CELLS = 20_000
"""The exact model is built for at most nodes x slots x jobs = 20,000 (16 nodes x 32 slots x 39 jobs)
unless forced: it has about one integer variable and two rows per cell."""
MAX_SLOTS = 100_000


# ------------------------------------------------------------------------------------------------
# The instance
# ------------------------------------------------------------------------------------------------


class ScheduleNode(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    gpus: int = Field(ge=1, le=1024)
    gpu_model: str = ""


class ScheduleJob(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    priority: Literal["HP", "LP"]
    submit_slot: int = Field(ge=0, le=MAX_SLOTS)
    work_slots: int = Field(ge=1, le=MAX_SLOTS)
    workers: int = Field(default=1, ge=1, le=1024)
    gpus_per_worker: int = Field(default=1, ge=1, le=1024)
    checkpoint_interval_slots: int | None = Field(default=None, ge=1, le=MAX_SLOTS)
    max_runs: int | None = Field(default=None, ge=1, le=64)
    gpu_models: Annotated[list[str], FAIL_FAST] = Field(default_factory=list)

    @property
    def runs_allowed(self) -> int:
        """K_i: HP jobs run once; spot jobs ``max_runs`` (default 3)."""
        return 1 if self.priority == "HP" else (self.max_runs or DEFAULT_MAX_RUNS)

    @property
    def gpus(self) -> int:
        return self.workers * self.gpus_per_worker


class SpotInstance(BaseModel):
    """Nodes, jobs, a horizon of ``horizon_slots`` slots and the restart overhead (slots)."""

    model_config = _STRICT
    horizon_slots: int = Field(ge=1, le=MAX_SLOTS)
    restart_overhead_slots: int = Field(default=0, ge=0, le=MAX_SLOTS)
    nodes: Annotated[list[ScheduleNode], FAIL_FAST] = Field(min_length=1)
    jobs: Annotated[list[ScheduleJob], FAIL_FAST] = Field(min_length=1)

    def pods_fit(self, job: ScheduleJob, node: ScheduleNode) -> int:
        """How many of the job's pods fit on the empty node (0: not eligible)."""
        if job.gpu_models and node.gpu_model not in job.gpu_models:
            return 0
        return min(job.workers, node.gpus // job.gpus_per_worker)

    @property
    def cells(self) -> int:
        return len(self.nodes) * self.horizon_slots * len(self.jobs)


def instance_problems(inst: SpotInstance) -> list[str]:
    """What a well-formed instance gets wrong: duplicate names, jobs that fit nowhere or cannot end."""
    problems = []
    for kind, names in (("nodes", [node.name for node in inst.nodes]), ("jobs", [job.name for job in inst.jobs])):
        seen: dict[str, int] = {}
        for k, name in enumerate(names):
            if name in seen:
                problems.append(f"{kind}[{k}].name: duplicate name '{name}' (also {kind}[{seen[name]}])")
            seen.setdefault(name, k)
    for k, job in enumerate(inst.jobs):
        room = sum(inst.pods_fit(job, n) for n in inst.nodes)
        if room < job.workers:
            problems.append(
                f"jobs[{k}].workers: job '{job.name}' needs {job.workers} pods of {job.gpus_per_worker} GPUs"
                f"{' on ' + '/'.join(job.gpu_models) if job.gpu_models else ''}; the empty nodes hold {room}"
            )
        if job.submit_slot + job.work_slots > inst.horizon_slots:
            problems.append(
                f"jobs[{k}].work_slots: job '{job.name}' submitted at slot {job.submit_slot} needs {job.work_slots} "
                f"slots and cannot finish by horizon_slots = {inst.horizon_slots}"
            )
        if job.priority == "HP" and job.max_runs not in (None, 1):
            problems.append(f"jobs[{k}].max_runs: HP jobs are never preempted and run once; must be 1, got {job.max_runs}")
        if job.priority == "HP" and job.checkpoint_interval_slots is not None:
            problems.append(f"jobs[{k}].checkpoint_interval_slots: HP jobs are never evicted; drop it")
    return problems


def parse_instance(text: str | bytes, source: str = "instance") -> SpotInstance:
    """Parse and check an instance; raise SnapshotError naming each bad field."""
    return parse_checked(text, SpotInstance, source, instance_problems)


def load_instance(path: str | Path) -> SpotInstance:
    return parse_instance(read_text(path, "instance"), str(path))


def size_problem(inst: SpotInstance) -> str | None:
    """Why the exact model is refused for this size (None: it is not)."""
    if inst.cells <= MAX_MODEL_CELLS:
        return None
    return (
        f"instance: nodes x slots x jobs = {len(inst.nodes)} x {inst.horizon_slots} x {len(inst.jobs)} = {inst.cells:,} exceeds "
        f"the exact model's limit of {MAX_MODEL_CELLS:,}; use --force (force=True) to build it anyway"
    )


@dataclass(frozen=True)
class Run:
    """One run of a job: slots [start_slot, end_slot), the node of each pod, and the progress it keeps
    (the last run: the progress it makes to completion)."""

    start_slot: int
    end_slot: int
    nodes: tuple[str, ...]
    kept_slots: int


Schedule = dict[str, list[Run]]


def schedule_measures(inst: SpotInstance, schedule: Schedule) -> tuple[int, dict[str, int], int]:
    """Lost GPU-slots of spot jobs (run minus work), spot completion times, total HP start delay."""
    lost, completion, delay = 0, {}, 0
    for job in inst.jobs:
        runs = schedule.get(job.name) or []
        if not runs:
            continue
        if job.priority == "LP":
            lost += job.gpus * (sum(run.end_slot - run.start_slot for run in runs) - job.work_slots)
            completion[job.name] = runs[-1].end_slot - job.submit_slot
        else:
            delay += runs[0].start_slot - job.submit_slot
    return lost, completion, delay


def validate_schedule(inst: SpotInstance, schedule: Schedule, hp_delay: bool = False) -> list[str]:
    """Every way ``schedule`` breaks the rules: runs, gangs, arrivals, HP, checkpoints, capacity."""
    problems = []
    T, r = inst.horizon_slots, inst.restart_overhead_slots
    nodes = {n.name: n for n in inst.nodes}
    used: dict[tuple[str, int], int] = defaultdict(int)
    for job in inst.jobs:
        runs = schedule.get(job.name)
        if not runs:
            problems.append(f"{job.name}: never runs")
            continue
        if len(runs) > job.runs_allowed:
            problems.append(f"{job.name}: {len(runs)} runs, at most {job.runs_allowed}")
        if runs[0].start_slot < job.submit_slot:
            problems.append(f"{job.name}: starts at {runs[0].start_slot} before its arrival {job.submit_slot}")
        if job.priority == "HP" and not hp_delay and runs[0].start_slot != job.submit_slot:
            problems.append(f"{job.name}: HP job starts at {runs[0].start_slot}, not on arrival {job.submit_slot}")
        done = 0
        for k, run in enumerate(runs):
            where = f"{job.name} run {k}"
            if k and run.start_slot < runs[k - 1].end_slot:
                problems.append(f"{where}: starts at {run.start_slot} before run {k - 1} ends at {runs[k - 1].end_slot}")
            if not 0 <= run.start_slot < run.end_slot <= T:
                problems.append(f"{where}: slots [{run.start_slot}, {run.end_slot}) outside the horizon [0, {T})")
            if len(run.nodes) != job.workers:
                problems.append(f"{where}: {len(run.nodes)} pods, the gang has {job.workers}")
            for name, count in sorted({n: run.nodes.count(n) for n in run.nodes}.items()):
                node = nodes.get(name)
                if node is None or count > inst.pods_fit(job, node):
                    problems.append(f"{where}: {count} pods on node '{name}' which holds {0 if node is None else inst.pods_fit(job, node)}")
                for t in range(max(0, run.start_slot), min(T, run.end_slot)):
                    used[name, t] += count * job.gpus_per_worker
            overhead = r if k else 0
            progress = max(0, run.end_slot - run.start_slot - overhead)
            if k == len(runs) - 1:
                if progress != job.work_slots - done or run.kept_slots != progress:
                    problems.append(f"{where}: the last run makes {progress} slots of progress (kept {run.kept_slots}), {job.work_slots - done} were left")
            else:
                kappa = job.checkpoint_interval_slots
                kept = progress // kappa * kappa if kappa else 0
                if job.priority == "HP":
                    problems.append(f"{where}: an HP job is evicted")
                if progress >= job.work_slots - done:
                    problems.append(f"{where}: evicted at {run.end_slot}, after its work was done")
                if run.kept_slots != kept:
                    problems.append(f"{where}: keeps {run.kept_slots} slots, its checkpoints keep {kept}")
                done += kept
    for name in schedule:
        if name not in {j.name for j in inst.jobs}:
            problems.append(f"{name}: no such job")
    for (name, t), gpus in sorted(used.items()):
        if name in nodes and gpus > nodes[name].gpus:
            problems.append(f"node '{name}' at slot {t}: {gpus} GPUs used, it has {nodes[name].gpus}")
    return problems


def schedule_from_dict(data: dict[str, list[dict[str, Any]]]) -> Schedule:
    return {name: [Run(int(r["start_slot"]), int(r["end_slot"]), tuple(r["nodes"]), int(r["kept_slots"])) for r in runs] for name, runs in data.items()}


__all__ = [
    "DEFAULT_MAX_RUNS",
    "MAX_MODEL_CELLS",
    "MAX_SLOTS",
    "Run",
    "Schedule",
    "ScheduleJob",
    "ScheduleNode",
    "SpotInstance",
    "instance_problems",
    "load_instance",
    "parse_instance",
    "schedule_from_dict",
    "schedule_measures",
    "size_problem",
    "validate_schedule",
]
