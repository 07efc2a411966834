"""Snapshots from one hour of the ASI 2026 trace (Alibaba clusterdata, cluster-trace-gpu-v2026).

``import_asi2026(directory, day, hour)`` reads the slice ``day=D/hour=H`` of the trace's two published
tables, ``asi_opensource_server_hourly`` and ``asi_opensource_pod_hourly``, and returns the snapshot
with a summary of what was kept and what was skipped.

Accepted layouts, for each table under ``directory``:

* Hive partitions, as published: ``<table>/day=<D>/hour=<H>/*.parquet``. Only that partition's
  directory is opened (the pod table is hundreds of GB); partition values are read as whole numbers,
  so ``hour=07`` is ``--hour 7``. Columns ``day`` and ``hour`` inside the files are not needed.
* Plain Parquet: a directory ``<table>/`` of Parquet files (no ``day=`` subdirectories) or one file
  ``<table>.parquet``, with ``day`` and ``hour`` columns (numbers, or strings such as ``"07"``); the
  slice is the rows whose day and hour read as D and H.

Mapping (the trace's ids are the names, so messages and plans speak the trace's language):

* servers -> nodes: ``server_id`` -> name, ``gpu_count`` -> gpus, ``cpu_capacity_cores`` -> cpus,
  ``gpu_spec_public`` -> gpu_model, ``asw_id`` -> asw (null: no switch, the node is a domain of its
  own). The trace has no spine level, so each ``cluster_id`` is taken as one spine. A cluster is
  also a scheduling domain: nodes carry the label ``cluster_id`` and every pod that names its cluster
  the same node selector, so no plan moves a pod to another cluster.
* memory: the trace has neither server memory nor pod memory requests (``gpu_mem_request`` is GPU
  memory), so memory is not a resource of these snapshots: nodes have 0 GiB and pods ask for 0 GiB.
  It never binds a placement, and the scores leave a zero-capacity resource out. A ``report`` shape
  with a memory part (``8g64c512m``) finds no room here: leave the memory part out.
* pods: ``Running`` pods are placed on their server; ``Standby`` pods too, as standby reservations
  (an HP pod whose containers sleep lends its GPUs and CPUs to spot pods and keeps its claim:
  ``rules.resource_shortfalls``); ``Pending`` pods are pending (node null; a ``server_id`` on them
  is ignored). ``Succeeded``, ``Failed`` and ``Unknown`` pods hold nothing in the snapshot and are
  skipped, and so is a ``Standby`` LP pod (it lent what it had, and only HP pods keep reservations);
  the summary counts each.
* ``priority_class``: HP -> HP, LP -> LP (spot), Other -> HP (outside the spot band, so never
  offered as a preemption victim). ``gpu_request`` -> gpus: whole GPUs, or a share of one GPU below 1
  (the snapshot's two forms; 1.5 is neither and is an error). ``cpu_request_cores`` -> cpus.
  ``gpu_spec_public`` pins a GPU-requesting pod to that GPU model. ``workload_id`` -> job: one job
  per workload (no topology requirement: the trace gives none); a null workload leaves the pod alone.
* ``time_s`` is the slice's start, ``day * 86400 + hour * 3600`` seconds after the trace's start.

Bad input raises ``SnapshotError`` naming the table, the column or the row (with its id) and the fix:
a missing directory, table, partition or column, a slice with no rows, an unknown state or priority
class, a missing or negative request, a placed pod on a server absent from the server table, and a
slice that breaks the snapshot's rules (for example a server over capacity).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from planner.cluster import MAX_CPUS, MAX_GPUS, Cluster, Job, Node, Pod, SnapshotError
from planner.snapshot import consistency_problems

SERVER_TABLE = "asi_opensource_server_hourly"
POD_TABLE = "asi_opensource_pod_hourly"
SERVER_COLUMNS = ("server_id", "cluster_id", "asw_id", "gpu_spec_public", "gpu_count", "cpu_capacity_cores")
POD_COLUMNS = (
    "pod_id",
    "workload_id",
    "server_id",
    "cluster_id",
    "state_public",
    "gpu_spec_public",
    "priority_class",
    "gpu_request",
    "cpu_request_cores",
)
NUMBER_COLUMNS = frozenset({"gpu_count", "cpu_capacity_cores", "gpu_request", "cpu_request_cores"})
PLACED_STATES = ("Running", "Standby")
PENDING_STATE = "Pending"
SKIPPED_STATES = ("Succeeded", "Failed", "Unknown")
STANDBY_LP = "Standby LP"
PRIORITY = {"HP": "HP", "LP": "LP", "Other": "HP"}
CLUSTER_LABEL = "cluster_id"
WHOLE_EPS = 1e-9


@dataclass
class ImportSummary:
    """What the slice held and what became of it."""

    day: int
    hour: int
    nodes: int = 0
    switches: int = 0
    nodes_without_switch: int = 0
    clusters: int = 0
    placed_pods: int = 0
    standby_pods: int = 0
    pending_pods: int = 0
    jobs: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    """Pods left out, by reason: Succeeded, Failed, Unknown, Standby LP."""


@dataclass
class AsiImport:
    cluster: Cluster
    summary: ImportSummary


def import_asi2026(directory: str | Path, day: int, hour: int) -> AsiImport:
    """The snapshot of slice ``day=D/hour=H`` of the trace under ``directory``, and its summary."""
    root = Path(directory)
    if not root.is_dir():
        problem = f"'{root}' is not a directory" if root.exists() else f"no such directory '{root}'"
        raise SnapshotError([f"DIR: {problem}; give the directory holding {SERVER_TABLE} and {POD_TABLE}"])
    servers = read_slice(root, SERVER_TABLE, SERVER_COLUMNS, day, hour)
    pods = read_slice(root, POD_TABLE, POD_COLUMNS, day, hour)
    summary = ImportSummary(day=day, hour=hour)
    nodes = _nodes(servers, _slice_name(SERVER_TABLE, day, hour), summary)
    pod_list, jobs = _pods(pods, {n.name for n in nodes}, day, hour, summary)
    cluster = Cluster(time_s=float(day * 86400 + hour * 3600), nodes=nodes, pods=pod_list, jobs=jobs)
    problems = consistency_problems(cluster)
    if problems:
        raise SnapshotError([f"day={day} hour={hour}: the slice breaks a snapshot rule: {p}" for p in problems])
    return AsiImport(cluster, summary)


# ----------------------------------------------------------------------------------------------
# Reading one slice of a table
# ----------------------------------------------------------------------------------------------


def read_slice(root: Path, table: str, columns: tuple[str, ...], day: int, hour: int) -> dict[str, list[Any]]:
    """The ``columns`` of ``table``'s rows in slice day/hour, as Python lists (ids as strings, numbers as floats)."""
    source = _table_source(root, table)
    if source.is_dir() and _partitions(source, "day"):
        partition = _partition(_partition(source, table, "day", day), table, "hour", hour)
        data = _open(partition, table)
        _require(data, columns, table, partition)
        where = None
    else:
        data = _open(source, table)
        _require(data, (*columns, "day", "hour"), table, source)
        where = _slice_filter(data, table, source, day, hour)
    try:
        rows = data.to_table(columns=list(columns), filter=where)
    except (pa.ArrowException, OSError) as err:
        raise SnapshotError([f"{table}: cannot read '{source}': {err}"]) from None
    if rows.num_rows == 0:
        raise SnapshotError([f"{table}: no rows for day={day} hour={hour} in '{source}'; choose a slice the table holds"])
    return {name: _column(rows, name, table) for name in columns}


def _table_source(root: Path, table: str) -> Path:
    for candidate in (root / table, root / f"{table}.parquet"):
        if candidate.exists():
            return candidate
    raise SnapshotError(
        [
            (
                f"DIR: no table {table} in '{root}': expected the directory {table}/ (Hive partitions day=D/hour=H, or "
                f"Parquet files with day and hour columns) or the file {table}.parquet"
            )
        ]
    )


def _whole(value: Any) -> int | None:
    """A partition or column value read as a whole number ('07' -> 7), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _partitions(directory: Path, key: str) -> dict[str, Path]:
    """The Hive partition directories ``key=value`` under ``directory``, by value."""
    prefix = f"{key}="
    try:
        return {p.name[len(prefix) :]: p for p in directory.iterdir() if p.is_dir() and p.name.startswith(prefix)}
    except OSError as err:
        raise SnapshotError([f"DIR: cannot list '{directory}': {err.strerror or err}"]) from None


def _present(values: list[Any]) -> str:
    ordered = sorted({str(v) for v in values if v is not None}, key=lambda v: (_whole(v) is None, _whole(v) or 0, v))
    listed = ", ".join(ordered[:30])
    return (listed + (f", ... ({len(ordered)} in all)" if len(ordered) > 30 else "")) or "none"


def _partition(directory: Path, table: str, key: str, value: int) -> Path:
    found = _partitions(directory, key)
    matches = [path for text, path in found.items() if _whole(text) == value]
    if len(matches) != 1:
        what, fix = ("no partition", f"choose --{key} among them") if not matches else ("more than one partition", "keep one")
        raise SnapshotError([f"{table}: {what} {key}={value} in '{directory}' ({key}s present: {_present(list(found))}); {fix}"])
    return matches[0]


def _open(path: Path, table: str) -> ds.Dataset:
    try:
        data = ds.dataset(str(path), format="parquet")
    except (pa.ArrowException, OSError) as err:
        raise SnapshotError([f"{table}: cannot read Parquet at '{path}': {err}"]) from None
    if not data.files:
        raise SnapshotError([f"{table}: no Parquet files in '{path}'"])
    return data


def _require(data: ds.Dataset, columns: tuple[str, ...], table: str, path: Path) -> None:
    missing = [c for c in columns if c not in data.schema.names]
    if missing:
        raise SnapshotError(
            [
                (
                    f"{table}: missing column(s) {', '.join(missing)} in '{path}'; the adapter needs "
                    f"{', '.join(columns)} (the published schema of cluster-trace-gpu-v2026)"
                )
            ]
        )


def _slice_filter(data: ds.Dataset, table: str, path: Path, day: int, hour: int) -> ds.Expression:
    """Rows of the plain layout whose ``day`` and ``hour`` columns read as D and H."""
    where: ds.Expression | None = None
    for key, value in (("day", day), ("hour", hour)):
        try:
            present = pc.unique(data.to_table(columns=[key], filter=where).column(key)).to_pylist()
        except (pa.ArrowException, OSError) as err:
            raise SnapshotError([f"{table}: cannot read column {key} of '{path}': {err}"]) from None
        matching = [v for v in present if _whole(v) == value]
        if not matching:
            within = f" with day={day}" if key == "hour" else ""
            raise SnapshotError([(f"{table}: no rows with {key}={value} in '{path}' ({key}s present{within}: {_present(present)}); choose --{key} among them")])
        term = ds.field(key).isin(matching)
        where = term if where is None else where & term
    assert where is not None
    return where


def _column(rows: pa.Table, name: str, table: str) -> list[Any]:
    column = rows.column(name)
    kind = column.type
    if name in NUMBER_COLUMNS:
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind) or pa.types.is_null(kind)):
            raise SnapshotError([f"{table}: column {name} holds {kind}, not numbers; export it as a number (double)"])
        return column.cast(pa.float64()).to_pylist()
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind) or pa.types.is_null(kind) or pa.types.is_dictionary(kind)):
        raise SnapshotError([f"{table}: column {name} holds {kind}, not text; export it as a string"])
    return column.cast(pa.string()).to_pylist()


# ----------------------------------------------------------------------------------------------
# Servers -> nodes, pods -> pods and jobs
# ----------------------------------------------------------------------------------------------


def _slice_name(table: str, day: int, hour: int) -> str:
    return f"{table} day={day} hour={hour}"


def _id_problem(ident: str | None, i: int, where: str, kind: str, first_row: dict[str, int]) -> str | None:
    """Why row i's id cannot name a server or pod (null, or listed before); None records it as seen."""
    if not ident:
        return f"{where}, row {i}: {kind}_id is null or empty; every {kind} needs its id"
    if ident in first_row:
        return f"{where}, row {i} ({kind} '{ident}'): the {kind} is listed again (first in row {first_row[ident]}); one row per {kind} and hour"
    first_row[ident] = i
    return None


def _number(rows: dict[str, list[Any]], column: str, i: int, who: str, problems: list[str], most: float, positive: bool = False) -> float | None:
    """Row i's ``column`` if it is a finite number in range, else None with the problem recorded."""
    value = rows[column][i]
    low = "above 0" if positive else ">= 0"
    if value is None or not math.isfinite(value) or value < 0 or (positive and value == 0) or value > most:
        problems.append(f"{who}: {column} must be a number {low} and at most {most:g}, got {value!r}; correct or drop the row")
        return None
    return value


def _nodes(servers: dict[str, list[Any]], where: str, summary: ImportSummary) -> list[Node]:
    problems: list[str] = []
    nodes: list[Node] = []
    first_row: dict[str, int] = {}
    for i, server_id in enumerate(servers["server_id"]):
        who = f"{where}, row {i} (server '{server_id}')"
        problem = _id_problem(server_id, i, where, "server", first_row)
        if problem:
            problems.append(problem)
            continue
        gpus = _number(servers, "gpu_count", i, who, problems, MAX_GPUS)
        cpus = _number(servers, "cpu_capacity_cores", i, who, problems, MAX_CPUS, positive=True)
        if gpus is not None and abs(gpus - round(gpus)) > WHOLE_EPS:
            problems.append(f"{who}: gpu_count must be a whole number of GPUs, got {gpus!r}; correct or drop the row")
            continue
        if gpus is None or cpus is None:
            continue
        cluster_id = servers["cluster_id"][i]
        nodes.append(
            Node(
                name=server_id,
                gpu_model=servers["gpu_spec_public"][i] or "",
                gpus=round(gpus),
                cpus=cpus,
                memory_gib=0.0,
                asw=servers["asw_id"][i] or None,
                spine=cluster_id or None,
                labels={CLUSTER_LABEL: cluster_id} if cluster_id else {},
            )
        )
    if problems:
        raise SnapshotError(problems)
    summary.nodes = len(nodes)
    summary.switches = len({n.asw for n in nodes if n.asw})
    summary.nodes_without_switch = sum(n.asw is None for n in nodes)
    summary.clusters = len({n.spine for n in nodes if n.spine})
    return nodes


def _gpus(request: float) -> float | None:
    """``gpu_request`` as the snapshot holds it: a share below 1 or whole GPUs (None: neither)."""
    if request < 1:
        return request
    whole = round(request)
    return float(whole) if abs(request - whole) <= WHOLE_EPS else None


def _pods(rows: dict[str, list[Any]], servers: set[str], day: int, hour: int, summary: ImportSummary) -> tuple[list[Pod], list[Job]]:
    where = _slice_name(POD_TABLE, day, hour)
    problems: list[str] = []
    pods: list[Pod] = []
    jobs: dict[str, Job] = {}
    skipped: Counter[str] = Counter()
    first_row: dict[str, int] = {}
    for i, pod_id in enumerate(rows["pod_id"]):
        state = rows["state_public"][i]
        who = f"{where}, row {i} (pod '{pod_id}')"
        if state in SKIPPED_STATES:
            skipped[state] += 1
            continue
        if state not in PLACED_STATES and state != PENDING_STATE:
            known = ", ".join((*PLACED_STATES, PENDING_STATE, *SKIPPED_STATES))
            problems.append(f"{who}: state_public {state!r} is not one of {known}; correct or drop the row")
            continue
        priority = PRIORITY.get(rows["priority_class"][i])
        if priority is None:
            problems.append(f"{who}: priority_class {rows['priority_class'][i]!r} is not one of HP, LP, Other; correct or drop the row")
            continue
        if state == "Standby" and priority == "LP":
            skipped[STANDBY_LP] += 1
            continue
        problem = _id_problem(pod_id, i, where, "pod", first_row)
        if problem:
            problems.append(problem)
            continue
        request = _number(rows, "gpu_request", i, who, problems, MAX_GPUS)
        cpus = _number(rows, "cpu_request_cores", i, who, problems, MAX_CPUS)
        gpus = _gpus(request) if request is not None else None
        if request is not None and gpus is None:
            problems.append(f"{who}: gpu_request {request!r} is neither whole GPUs nor a share of one GPU below 1; correct or drop the row")
        node = None
        if state in PLACED_STATES:
            node = rows["server_id"][i]
            if not node:
                problems.append(f"{who}: a {state} pod needs its server_id, which is null; correct or drop the row")
            elif node not in servers:
                problems.append(
                    f"{who}: server '{node}' is not in {_slice_name(SERVER_TABLE, day, hour)}; read both tables from the same slice (or drop the pod)"
                )
        if gpus is None or cpus is None or (state in PLACED_STATES and node not in servers):
            continue
        job = rows["workload_id"][i] or None
        if job is not None:
            jobs.setdefault(job, Job(name=job))
        spec, cluster_id = rows["gpu_spec_public"][i], rows["cluster_id"][i]
        pods.append(
            Pod(
                name=pod_id,
                job=job,
                node=node,
                gpus=gpus,
                cpus=cpus,
                gpu_models=[spec] if spec and gpus > 0 else [],
                priority=priority,
                node_selector={CLUSTER_LABEL: cluster_id} if cluster_id else {},
                standby=state == "Standby",
            )
        )
    if problems:
        raise SnapshotError(problems)
    summary.placed_pods = sum(p.node is not None for p in pods)
    summary.standby_pods = sum(p.standby for p in pods)
    summary.pending_pods = len(pods) - summary.placed_pods
    summary.jobs = len(jobs)
    summary.skipped = {reason: skipped[reason] for reason in (*SKIPPED_STATES, STANDBY_LP)}
    return pods, list(jobs.values())
