"""Seeded HP/spot clusters on the real node list of Alibaba's spot-GPU trace (cluster-trace-v2026-spot-gpu).

The nodes are rows of ``node_info_df.csv`` (4,278 GPU nodes), drawn with the seed without
replacement. Columns used:

* ``gpu_model`` -> ``Node.gpu_model`` as written (``A10``, ``A100-SXM4-80GB``, ``H800``, ...);
* ``gpu_capacity_num`` -> ``Node.gpus`` (1, 4 or 8);
* ``cpu_num`` -> ``Node.cpus`` (vCPUs, 126 to 192);
* ``node_name`` -> ``Node.name`` as ``node-<node_name>``, so every node can be traced to its row.

The file has no memory column: ``memory_gib`` is 8 GiB per vCPU (as in ``asi.py``), and pods ask for
4 to 8 GiB per CPU, so memory never decides a fit on its own. It has no topology either: nodes of one
shape (model, GPUs, CPUs) are cut into access switches of 16 nodes (an ASW is homogeneous, ASI Sec. 2)
and 4 consecutive ASWs share a spine. No NUMA layout is invented (pods carry no ``gpu_indexes``).

Model families: ``A100-SXM4-80GB`` and ``A800-SXM4-80GB`` (the same part, export variant) are one
family; every other model is its own (``GPU-series-1/2`` are undisclosed and kept apart). A pod is
pinned to its family's models (``gpu_models``) and sized to fit its nodes: 1, 2, 4 or 8 GPUs up to the
family's largest node, 4 to 16 CPUs per GPU.

The workload, family by family (every pod names a job):

* HP jobs until about ``hp_share`` of the family's GPUs are held: single pods, some gangs of 2-4;
  most are packed (least idle GPUs first, as SpotGPU's non-preemptive rule), the others land on a
  random node that fits, which leaves HP pods scattered among spot pods;
* LP (spot) jobs packed into what is left until ``lp_fill`` of it is held: single pods and gangs
  of 2-4 pods, a gang's pods on distinct nodes. Each LP job checkpoints every 600, 1800 or 3600 s or
  never; ``started_s`` is in the last 12 hours and ``checkpoint_s`` the last periodic checkpoint (with
  a random phase; one in ten missed its latest one), so checkpoint ages are mixed;
* a tenth of the placed jobs, HP or LP, are ``locked``;
* then ``pending_jobs`` pending HP jobs (``hp-new-<k>``) of 1-8 pods of 1, 2, 4 or 8 GPUs, pinned to
  one family (a fifth of them to any model); half of those with several pods require one ASW. A
  pending job is redrawn (up to 50 times) until it would fit if every unlocked spot pod left but does
  not fit in the idle GPUs alone, so it needs a preemption (a rough count: GPUs, CPUs and memory per
  node; the last draw is kept if none does).

``time_s`` is 7 days; HP pods started during that week. The file path is an argument
(``node_list``), by default ``planner/data/spot-gpu-2026/node_info_df.csv``, the copy the package ships
(``planner/data/README.md``, ``instances/traces.py``); a missing file
raises ``NodeListMissing`` (a ``SnapshotError``, so a ``ValueError``, and a ``FileNotFoundError``)
naming the path. Deterministic for a given set of arguments and file.
"""

from __future__ import annotations

import csv
import math
import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.cluster import Cluster, Job, Node, Pod, SnapshotError, Topology
from planner.instances.asi import check_seed
from planner.instances.traces import bundled_trace_path

DEFAULT_NODE_LIST = bundled_trace_path("spot-gpu-2026", "node_info_df.csv")
COLUMNS = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
MEMORY_GIB_PER_CPU = 8
ASW_NODES = 16
SPINE_ASWS = 4
FAMILY_OF = {"A800-SXM4-80GB": "A100-SXM4-80GB"}
"""Models that belong to another model's family (a pod pinned to the family may use either)."""

POD_GPUS = ((1, 2, 4, 8), (0.3, 0.2, 0.2, 0.3))
CPUS_PER_GPU = (4, 8, 12, 16)
GIB_PER_CPU = (4, 6, 8)
HP_GANG_SHARE, LP_GANG_SHARE = 0.10, 0.20
GANG_PODS = (2, 4)
HP_PACKED = 0.7
"""Share of HP jobs placed by packing; the others go to a random node that fits."""
CHECKPOINT_INTERVALS_S = (600.0, 1800.0, 3600.0, None)
CHECKPOINT_MISSED = 0.1
LOCKED_JOBS = 0.1
TIME_S = 7 * 86_400.0
LP_AGE_S = (300.0, 12 * 3600.0)
PENDING_PODS = (1, 8)
PENDING_ANY_MODEL = 0.2
PENDING_ASW_REQUIRED = 0.5
PENDING_DRAWS = 50
MAX_FAILURES = 30
"""Failed placements in a row after which a family's fill stops."""
MAX_PENDING_JOBS = 10_000


class NodeListMissing(SnapshotError, FileNotFoundError):
    """The node list file does not exist (a ``SnapshotError`` naming the path)."""


@dataclass(frozen=True)
class NodeRow:
    """One row of ``node_info_df.csv``."""

    name: str
    gpu_model: str
    gpus: int
    cpus: int


def spot_cluster(
    nodes: int = 200,
    seed: int = 0,
    hp_share: float = 0.6,
    lp_fill: float = 0.9,
    pending_jobs: int = 1,
    node_list: str | Path = DEFAULT_NODE_LIST,
) -> Cluster:
    """A snapshot of ``nodes`` real spot-trace nodes with HP pods on about ``hp_share`` of the GPUs,
    spot pods on ``lp_fill`` of the rest, and ``pending_jobs`` pending HP jobs that need preemption."""
    rows = read_node_list(node_list)
    _check_arguments(nodes, hp_share, lp_fill, pending_jobs, len(rows), node_list)
    check_seed(seed)
    rng = np.random.default_rng(seed)
    picked = [rows[i] for i in sorted(rng.choice(len(rows), size=nodes, replace=False).tolist())]
    node_objects = nodes_of_rows(picked)
    fleet = Fleet.of(node_objects)
    placed = Placed()
    for family in sorted(fleet.models):
        _fill_family(fleet, placed, family, hp_share, lp_fill, rng)
    locked = {u for u in range(len(placed.jobs)) if rng.random() < LOCKED_JOBS}
    pods, jobs = placed.snapshot(node_objects, fleet.models, locked, rng)
    room = _preemptible_room(fleet, placed, locked)
    for k in range(pending_jobs):
        pending = _pending_job(fleet, room, f"hp-new-{k}", rng)
        pods += pending[0]
        jobs.append(pending[1])
    return Cluster(time_s=TIME_S, nodes=node_objects, pods=pods, jobs=jobs)


def read_node_list(path: str | Path = DEFAULT_NODE_LIST) -> list[NodeRow]:
    """The rows of a spot-trace node list; a missing file, column or bad number is a clear error."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise SnapshotError([f"{path}: missing column(s) {', '.join(missing)}"])
            rows = [_row(path, i, raw) for i, raw in enumerate(reader)]
    except FileNotFoundError:
        raise NodeListMissing(
            [
                (
                    f"--node-list: no such file '{path}'; pass --node-list with the spot-2026 trace's node_info_df.csv "
                    "(the package ships it in planner/data/spot-gpu-2026/)"
                )
            ]
        ) from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise SnapshotError([f"{path}: cannot read: {err}"]) from None
    if not rows:
        raise SnapshotError([f"{path}: no nodes"])
    seen: set[str] = set()
    for i, row in enumerate(rows):
        if row.name in seen:
            raise SnapshotError([f"{path}: row {i + 2}, column node_name: duplicate node {row.name!r}"])
        seen.add(row.name)
    return rows


def _row(path: Path, i: int, raw: dict[str, str]) -> NodeRow:
    def whole(column: str, low: int) -> int:
        text = (raw.get(column) or "").strip()
        try:
            value = int(text)
        except ValueError:
            raise SnapshotError([f"{path}: row {i + 2}, column {column}: not a whole number: {text!r}"]) from None
        if value < low:
            raise SnapshotError([f"{path}: row {i + 2}, column {column}: must be at least {low}, got {value}"])
        return value

    name, model = (raw.get("node_name") or "").strip(), (raw.get("gpu_model") or "").strip()
    if not name or not model:
        column = "node_name" if not name else "gpu_model"
        raise SnapshotError([f"{path}: row {i + 2}, column {column}: empty"])
    return NodeRow(name, model, whole("gpu_capacity_num", 1), whole("cpu_num", 1))


def _whole_in(value: object, low: int, high: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, numbers.Integral) and low <= int(value) <= high


def _check_arguments(nodes: int, hp_share: float, lp_fill: float, pending_jobs: int, rows: int, path: str | Path) -> None:
    problems = []
    if not _whole_in(nodes, 1, rows):
        problems.append(f"--nodes: must be a whole number from 1 to {rows:,} (the rows of {path}), got {nodes!r}")
    for name, value in (("--hp-share", hp_share), ("--lp-fill", lp_fill)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            problems.append(f"{name}: must be a fraction between 0 and 1, got {value!r}")
    if not _whole_in(pending_jobs, 0, MAX_PENDING_JOBS):
        problems.append(f"--pending-jobs: must be a whole number from 0 to {MAX_PENDING_JOBS:,}, got {pending_jobs!r}")
    if problems:
        raise SnapshotError(problems)


def family_of(model: str) -> str:
    return FAMILY_OF.get(model, model)


# ----------------------------------------------------------------------------------------------
# Nodes and switches
# ----------------------------------------------------------------------------------------------


def nodes_of_rows(rows: list[NodeRow]) -> list[Node]:
    """One node per row; rows of one shape cut into ASWs of ``ASW_NODES``, ``SPINE_ASWS`` per spine."""
    by_shape: dict[tuple[str, int, int], list[NodeRow]] = {}
    for row in rows:
        by_shape.setdefault((row.gpu_model, row.gpus, row.cpus), []).append(row)
    nodes: list[Node] = []
    asw = 0
    for shape in sorted(by_shape):
        group = by_shape[shape]
        for first in range(0, len(group), ASW_NODES):
            for row in group[first : first + ASW_NODES]:
                nodes.append(
                    Node(
                        name=f"node-{row.name}",
                        gpu_model=row.gpu_model,
                        gpus=row.gpus,
                        cpus=float(row.cpus),
                        memory_gib=float(row.cpus * MEMORY_GIB_PER_CPU),
                        asw=f"asw-{asw:03d}",
                        spine=f"spine-{asw // SPINE_ASWS:02d}",
                    )
                )
            asw += 1
    return nodes


@dataclass
class Fleet:
    """Per node arrays: family, ASW, capacity and what is still free; the models of each family."""

    family: np.ndarray  # of str
    asw: np.ndarray
    gpus: np.ndarray
    cpus: np.ndarray
    free_gpus: np.ndarray
    free_cpus: np.ndarray
    free_mem: np.ndarray
    models: dict[str, list[str]]

    @classmethod
    def of(cls, nodes: list[Node]) -> Fleet:
        asws = {name: k for k, name in enumerate(dict.fromkeys(n.asw for n in nodes))}
        gpus = np.array([n.gpus for n in nodes], dtype=np.int64)
        cpus = np.array([n.cpus for n in nodes], dtype=np.float64)
        models: dict[str, list[str]] = {}
        for n in nodes:
            models.setdefault(family_of(n.gpu_model), [])
            if n.gpu_model not in models[family_of(n.gpu_model)]:
                models[family_of(n.gpu_model)].append(n.gpu_model)
        return cls(
            np.array([family_of(n.gpu_model) for n in nodes]),
            np.array([asws[n.asw] for n in nodes], dtype=np.int64),
            gpus,
            cpus,
            gpus.copy(),
            cpus.copy(),
            np.array([n.memory_gib for n in nodes], dtype=np.float64),
            {f: sorted(m) for f, m in models.items()},
        )

    def in_family(self, family: str | None) -> np.ndarray:
        """Nodes of ``family`` (every node for None: any model)."""
        if family is None:
            return np.ones(len(self.family), dtype=bool)
        return self.family == family


# ----------------------------------------------------------------------------------------------
# Placed jobs
# ----------------------------------------------------------------------------------------------


@dataclass
class JobDraw:
    """A job's shape: ``pods`` pods of ``gpus`` GPUs, ``cpus`` CPUs and ``memory_gib`` each."""

    pods: int
    gpus: int
    cpus: float
    memory_gib: float


@dataclass
class PlacedJob:
    name: str
    family: str
    draw: JobDraw
    hp: bool
    nodes: list[int]


class Placed:
    """Jobs placed so far, in placement order."""

    def __init__(self) -> None:
        self.jobs: list[PlacedJob] = []
        self.counts = {"hp": 0, "lp": 0}

    def add(self, family: str, draw: JobDraw, hp: bool, where: list[int]) -> None:
        kind = "hp" if hp else "lp"
        self.jobs.append(PlacedJob(f"{kind}-{self.counts[kind]:05d}", family, draw, hp, where))
        self.counts[kind] += 1

    def snapshot(self, nodes: list[Node], models: dict[str, list[str]], locked: set[int], rng: np.random.Generator) -> tuple[list[Pod], list[Job]]:
        """Pods and jobs, with start and checkpoint times drawn per job."""
        pods: list[Pod] = []
        jobs: list[Job] = []
        for u, job in enumerate(self.jobs):
            times = _hp_times(rng) if job.hp else _lp_times(rng)
            for k, n in enumerate(job.nodes):
                pods.append(
                    Pod(
                        name=f"{job.name}-{k}",
                        job=job.name,
                        node=nodes[n].name,
                        gpus=float(job.draw.gpus),
                        cpus=job.draw.cpus,
                        memory_gib=job.draw.memory_gib,
                        gpu_models=models[job.family],
                        priority="HP" if job.hp else "LP",
                        locked=u in locked,
                        **times,
                    )
                )
            jobs.append(Job(name=job.name))
        return pods, jobs


def _hp_times(rng: np.random.Generator) -> dict:
    return {"started_s": round(float(rng.uniform(0, TIME_S - LP_AGE_S[1])), 3)}


def _lp_times(rng: np.random.Generator) -> dict:
    """Start in the last 12 hours; the last periodic checkpoint (random phase, sometimes missed)."""
    started = round(TIME_S - float(rng.uniform(*LP_AGE_S)), 3)
    interval = CHECKPOINT_INTERVALS_S[int(rng.integers(len(CHECKPOINT_INTERVALS_S)))]
    times: dict = {"started_s": started}
    if interval is None:
        return times
    times["checkpoint_interval_s"] = interval
    phase = float(rng.uniform(0, interval))
    done = math.floor((TIME_S - started - phase) / interval)
    if rng.random() < CHECKPOINT_MISSED:
        done -= 1
    if done >= 0:
        times["checkpoint_s"] = round(started + phase + done * interval, 3)
    return times


def _draw(fleet: Fleet, family: str | None, gang_share: float, pods_range: tuple[int, int], max_gpus: int, rng: np.random.Generator) -> JobDraw | None:
    """A job shape for ``family`` (None: any model) using at most ``max_gpus`` GPUs in all."""
    in_family = fleet.in_family(family)
    biggest = int(fleet.gpus[in_family].max())
    sizes = [g for g in POD_GPUS[0] if g <= min(biggest, max_gpus)]
    if not sizes:
        return None
    weights = np.array([POD_GPUS[1][POD_GPUS[0].index(g)] for g in sizes])
    gpus = int(rng.choice(sizes, p=weights / weights.sum()))
    pods = 1
    if rng.random() < gang_share:
        pods = int(rng.integers(pods_range[0], pods_range[1] + 1))
    pods = max(1, min(pods, max_gpus // gpus))
    eligible = in_family & (fleet.gpus >= gpus)
    cap = float(np.min(fleet.cpus[eligible] / fleet.gpus[eligible]))  # a node full of such pods has the CPUs
    per_gpu = int(rng.choice([c for c in CPUS_PER_GPU if c <= cap] or [CPUS_PER_GPU[0]]))
    cpus = float(gpus * per_gpu)
    return JobDraw(pods, gpus, cpus, cpus * float(rng.choice(GIB_PER_CPU)))


def _fits(fleet: Fleet, draw: JobDraw, family: str) -> np.ndarray:
    return fleet.in_family(family) & (fleet.free_gpus >= draw.gpus) & (fleet.free_cpus >= draw.cpus - 1e-9) & (fleet.free_mem >= draw.memory_gib - 1e-9)


def _place(fleet: Fleet, draw: JobDraw, family: str, packed: bool, rng: np.random.Generator) -> list[int] | None:
    """Distinct nodes for the job's pods: least idle GPUs first (ties at random) when ``packed``,
    else at random; None when too few nodes fit."""
    candidates = np.flatnonzero(_fits(fleet, draw, family))
    if len(candidates) < draw.pods:
        return None
    if packed:
        order = candidates[np.lexsort((rng.random(len(candidates)), fleet.free_gpus[candidates]))]
        chosen = order[: draw.pods]
    else:
        chosen = rng.choice(candidates, size=draw.pods, replace=False)
    nodes = [int(n) for n in chosen]
    for n in nodes:
        fleet.free_gpus[n] -= draw.gpus
        fleet.free_cpus[n] -= draw.cpus
        fleet.free_mem[n] -= draw.memory_gib
    return nodes


def _fill_family(fleet: Fleet, placed: Placed, family: str, hp_share: float, lp_fill: float, rng: np.random.Generator) -> None:
    """HP jobs up to ``hp_share`` of the family's GPUs, then LP jobs up to ``lp_fill`` of the rest."""
    in_family = fleet.in_family(family)
    total = int(fleet.gpus[in_family].sum())
    hp_goal = round(hp_share * total)
    hp_gpus = _fill(fleet, placed, family, hp_goal, True, rng)
    _fill(fleet, placed, family, round(lp_fill * (total - hp_gpus)), False, rng)


def _fill(fleet: Fleet, placed: Placed, family: str, goal: int, hp: bool, rng: np.random.Generator) -> int:
    """Jobs of one class until ``goal`` GPUs are held (never more) or placements keep failing."""
    held = failures = 0
    while held < goal and failures < MAX_FAILURES:
        draw = _draw(fleet, family, HP_GANG_SHARE if hp else LP_GANG_SHARE, GANG_PODS, goal - held, rng)
        if draw is None:
            break
        where = _place(fleet, draw, family, packed=not hp or rng.random() < HP_PACKED, rng=rng)
        if where is None:
            failures += 1
            continue
        failures = 0
        placed.add(family, draw, hp, where)
        held += draw.pods * draw.gpus
    return held


# ----------------------------------------------------------------------------------------------
# Pending HP jobs
# ----------------------------------------------------------------------------------------------


def _slots(draw: JobDraw, eligible: np.ndarray, gpus: np.ndarray, cpus: np.ndarray, mem: np.ndarray) -> np.ndarray:
    """Pods of ``draw`` each node could take with the given room (0 where not eligible)."""
    room = np.minimum(gpus // draw.gpus, np.minimum(cpus // draw.cpus, mem // draw.memory_gib))
    return np.where(eligible, room, 0).astype(np.int64)


def _preemptible_room(fleet: Fleet, placed: Placed, locked: set[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Free room plus what every unlocked spot pod holds."""
    gpus, cpus, mem = fleet.free_gpus.copy(), fleet.free_cpus.copy(), fleet.free_mem.copy()
    for u, job in enumerate(placed.jobs):
        if job.hp or u in locked:
            continue
        for n in job.nodes:
            gpus[n] += job.draw.gpus
            cpus[n] += job.draw.cpus
            mem[n] += job.draw.memory_gib
    return gpus, cpus, mem


def _enough(slots: np.ndarray, pods: int, asw: np.ndarray | None) -> bool:
    """Whether ``pods`` identical pods fit in the slots (all under one ASW when ``asw`` is given)."""
    if asw is None:
        return int(slots.sum()) >= pods
    return float(np.bincount(asw, weights=slots).max()) >= pods


def _pending_job(fleet: Fleet, room: tuple[np.ndarray, np.ndarray, np.ndarray], name: str, rng: np.random.Generator) -> tuple[list[Pod], Job]:
    """A pending HP job that needs a preemption (redrawn up to ``PENDING_DRAWS`` times); ``room`` is
    what each node would have with every unlocked spot pod gone."""
    families = sorted(fleet.models)
    weights = np.array([fleet.gpus[fleet.in_family(f)].sum() for f in families], dtype=np.float64)
    chosen = None
    for _ in range(PENDING_DRAWS):
        family = families[int(rng.choice(len(families), p=weights / weights.sum()))]
        pinned = rng.random() >= PENDING_ANY_MODEL
        draw = _draw(fleet, family if pinned else None, 1.0, PENDING_PODS, 8 * PENDING_PODS[1], rng)
        assert draw is not None
        same_asw = draw.pods > 1 and rng.random() < PENDING_ASW_REQUIRED
        chosen = (family if pinned else None, draw, same_asw)
        eligible = fleet.in_family(chosen[0]) & (fleet.gpus >= draw.gpus)
        asw = fleet.asw if same_asw else None
        free = (fleet.free_gpus, fleet.free_cpus, fleet.free_mem)
        fits_now = _enough(_slots(draw, eligible, *free), draw.pods, asw)
        fits_after = _enough(_slots(draw, eligible, *room), draw.pods, asw)
        if fits_after and not fits_now:
            break
    assert chosen is not None
    pinned_family, draw, same_asw = chosen
    models = fleet.models[pinned_family] if pinned_family is not None else []
    pods = [
        Pod(
            name=f"{name}-{k}",
            job=name,
            gpus=float(draw.gpus),
            cpus=draw.cpus,
            memory_gib=draw.memory_gib,
            gpu_models=models,
            priority="HP",
        )
        for k in range(draw.pods)
    ]
    return pods, Job(name=name, topology=Topology(level="asw", mode="required") if same_asw else None)
