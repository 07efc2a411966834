"""Snapshots from Alibaba's 2023 GPU trace (``openb``, the FGD paper's cluster-trace-gpu-v2023).

Reads a node list and a pod list of the trace and replays it with the baseline scheduler
(``heuristics.scheduler``) up to a time ``at_s``:

* units: ``cpu_milli / 1000`` CPUs, ``memory_mib / 1024`` GiB; a pod with ``num_gpu == 1`` and
  ``gpu_milli < 1000`` asks for that share of one GPU (``gpu_milli / 1000``), any other pod for
  ``num_gpu`` whole GPUs; ``gpu_spec`` ``"A|B"`` becomes ``gpu_models`` ``["A", "B"]``; ``qos`` ``BE``
  (best effort) is priority LP, every other class HP. Each pod is its own job-less pod: the trace
  has no gangs. Nodes have no ``asw``: the trace has no topology and none is invented.
* timed lists: a pod is alive while ``creation_time <= t < deletion_time``. Events are replayed in
  time order (departures before arrivals at the same second); an arriving pod is placed by the
  policy or waits in a pending queue, retried whenever capacity frees up (HP before LP, then in order
  of arrival, as kube-scheduler's PrioritySort queue does; there is no preemption). Pods alive but
  unplaced at ``at_s`` are pending in the snapshot.
* untimed lists (``multigpu20``, ``multigpu50``): every pod arrives in file order at time 0 and
  never leaves; ``at_s`` must be None.

Note the trace's pods are short-lived: replayed in time, only a few dozen pods (under 70 GPUs of the
6,212) are alive at any moment. The FGD paper instead submits the pods in creation order and never
lets them leave, which fills the cluster; ``departures=False`` replays that way (pods created by
``at_s`` stay).

The data directory is, in order: the ``data_dir`` argument, the ``PLANNER_OPENB_DIR`` environment
variable, ``planner/data/openb-2023`` (the trace the package ships: ``planner/data/README.md``,
``instances/traces.py``). Only the trace files are read; nothing is written.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.cluster import MAX_TIME_S, Cluster, Node, Pod, SnapshotError
from planner.heuristics.scheduler import POLICIES, schedule_pod
from planner.instances.asi import check_seed
from planner.instances.traces import bundled_trace_path
from planner.state import PENDING, ClusterState

ENV_DIR = "PLANNER_OPENB_DIR"
NODE_LISTS = {"gpu": "openb_node_list_gpu_node.csv", "all": "openb_node_list_all_node.csv"}
POD_LIST_PREFIX = "openb_pod_list_"
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
TIME_COLUMNS = ("creation_time", "deletion_time")
EPS = 1e-9


def default_data_dir() -> Path:
    """``planner/data/openb-2023``, the trace the package ships (every install has it: ``instances/traces.py``)."""
    return bundled_trace_path("openb-2023")


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The trace directory: the argument, else ``$PLANNER_OPENB_DIR``, else the default."""
    if data_dir is not None:
        return Path(data_dir)
    from_env = os.environ.get(ENV_DIR)
    return Path(from_env) if from_env else default_data_dir()


def missing_data_dir(directory: Path, given: str | Path | None) -> str | None:
    """The problem when ``directory`` (``resolve_data_dir(given)``) is not a directory: where it came
    from and how to give another; None when it is one."""
    if directory.is_dir():
        return None
    source = "--data-dir" if given is not None else (f"${ENV_DIR}" if os.environ.get(ENV_DIR) else "the default")
    return (
        f"--data-dir: no openb-2023 trace directory at '{directory}' (from {source}); "
        f"pass --data-dir or set {ENV_DIR} to the directory holding the openb_*.csv files"
    )


def pod_lists(data_dir: Path) -> list[str]:
    """Names of the pod lists in ``data_dir`` (``default``, ``multigpu20``, ...), sorted."""
    return sorted(p.name[len(POD_LIST_PREFIX) : -len(".csv")] for p in data_dir.glob(f"{POD_LIST_PREFIX}*.csv"))


@dataclass
class TracePods:
    """The pods of one list as arrays (file order); times are None for an untimed list."""

    pods: list[Pod]
    created_s: np.ndarray | None
    deleted_s: np.ndarray | None


def generate_openb(
    pods: str = "default",
    at_s: float | None = None,
    scheduler: str = "spread",
    nodes: str = "gpu",
    seed: int = 0,
    data_dir: str | Path | None = None,
    *,
    departures: bool = True,
) -> Cluster:
    """The openb cluster at time ``at_s`` after replaying pod list ``pods`` with the ``scheduler`` policy.

    ``nodes`` is ``gpu`` (the 1,213 GPU nodes) or ``all`` (plus 310 CPU-only nodes); ``seed`` breaks
    the scheduler's ties (and drives ``random``). Bad arguments raise ``SnapshotError``.
    """
    directory = resolve_data_dir(data_dir)
    _check_arguments(directory, data_dir, pods, nodes, scheduler)
    check_seed(seed)
    node_list = read_nodes(directory / NODE_LISTS[nodes])
    trace = read_pods(directory / f"{POD_LIST_PREFIX}{pods}.csv")
    _check_time(pods, at_s, trace)
    alive_from, alive_until = _lifetimes(trace, at_s, departures)
    arriving = np.flatnonzero(alive_from <= (at_s if at_s is not None else 0.0))
    state = ClusterState(Cluster(nodes=node_list, pods=[trace.pods[i] for i in arriving]))
    started = Replay(state, scheduler, np.random.default_rng(seed)).run(alive_from[arriving], alive_until[arriving], at_s if at_s is not None else 0.0)
    return _snapshot(state, trace.pods, arriving, alive_until, started, at_s)


# ----------------------------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------------------------


def _check_arguments(directory: Path, given: str | Path | None, pods: str, nodes: str, scheduler: str) -> None:
    problems = []
    if nodes not in NODE_LISTS:
        problems.append(f"--nodes: unknown node list {nodes!r}; choose one of {', '.join(NODE_LISTS)}")
    if scheduler not in POLICIES:
        problems.append(f"--scheduler: unknown policy {scheduler!r}; choose one of {', '.join(POLICIES)}")
    missing = missing_data_dir(directory, given)
    if missing:
        problems.append(missing)
    else:
        available = pod_lists(directory)
        if pods not in available:
            listed = ", ".join(available) if available else f"none (no {POD_LIST_PREFIX}*.csv in '{directory}')"
            problems.append(f"--pods: unknown pod list {pods!r}; available: {listed}")
        if nodes in NODE_LISTS and not (directory / NODE_LISTS[nodes]).is_file():
            problems.append(f"--data-dir: '{directory}' has no node list {NODE_LISTS[nodes]}")
    if problems:
        raise SnapshotError(problems)


def _check_time(pods: str, at_s: float | None, trace: TracePods) -> None:
    if trace.created_s is None:
        if at_s is not None:
            raise SnapshotError([(f"--at: pod list {pods!r} has no time columns (its pods arrive in file order and never leave); leave --at out")])
        return
    if at_s is None:
        last = int(trace.created_s.max()) if len(trace.created_s) else 0
        raise SnapshotError([f"--at: pod list {pods!r} is timed; give the snapshot time in seconds (its pods arrive from 0 to {last})"])
    if isinstance(at_s, bool) or not isinstance(at_s, (int, float)) or not math.isfinite(at_s) or not 0 <= at_s <= MAX_TIME_S:
        raise SnapshotError([f"--at: must be a time in seconds from 0 to {MAX_TIME_S:g}, got {at_s!r}"])


# ----------------------------------------------------------------------------------------------
# Reading the trace
# ----------------------------------------------------------------------------------------------


def _rows(path: Path, required: tuple[str, ...]) -> tuple[list[str], list[dict[str, str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except OSError as err:
        raise SnapshotError([f"{path}: cannot read: {err}"]) from None
    missing = [c for c in required if c not in header]
    if missing:
        raise SnapshotError([f"{path}: missing column(s) {', '.join(missing)}"])
    return header, rows


def _number(path: Path, row: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SnapshotError([f"{path}: row {row + 2}, column {column}: not a number: {text!r}"]) from None
    if not math.isfinite(value) or value < 0:
        raise SnapshotError([f"{path}: row {row + 2}, column {column}: must be a number >= 0, got {text!r}"])
    return value


def read_nodes(path: Path) -> list[Node]:
    """The node list: CPUs from milli-CPUs, GiB from MiB, no topology."""
    _, rows = _rows(path, NODE_COLUMNS)
    nodes = []
    for i, row in enumerate(rows):
        nodes.append(
            Node(
                name=row["sn"],
                gpu_model=row["model"] or "",
                gpus=int(_number(path, i, "gpu", row["gpu"])),
                cpus=_number(path, i, "cpu_milli", row["cpu_milli"]) / 1000,
                memory_gib=_number(path, i, "memory_mib", row["memory_mib"]) / 1024,
            )
        )
    return nodes


def pod_gpus(num_gpu: int, gpu_milli: float) -> float:
    """A share of one GPU for a 1-GPU pod below 1000 milli-GPUs, else whole GPUs."""
    return gpu_milli / 1000 if num_gpu == 1 and gpu_milli < 1000 else float(num_gpu)


def read_pods(path: Path) -> TracePods:
    """The pod list, converted to (pending, job-less) pods, with creation and deletion times if any."""
    header, rows = _rows(path, POD_COLUMNS)
    timed = all(c in header for c in TIME_COLUMNS)
    pods, created, deleted = [], [], []
    for i, row in enumerate(rows):
        spec = (row.get("gpu_spec") or "").strip()
        pods.append(
            Pod(
                name=row["name"],
                gpus=pod_gpus(int(_number(path, i, "num_gpu", row["num_gpu"])), _number(path, i, "gpu_milli", row["gpu_milli"])),
                cpus=_number(path, i, "cpu_milli", row["cpu_milli"]) / 1000,
                memory_gib=_number(path, i, "memory_mib", row["memory_mib"]) / 1024,
                gpu_models=[m for m in spec.split("|") if m] if spec else [],
                priority="LP" if (row.get("qos") or "").strip() == "BE" else "HP",
            )
        )
        if timed:
            created.append(_number(path, i, "creation_time", row["creation_time"]))
            text = (row["deletion_time"] or "").strip()
            deleted.append(_number(path, i, "deletion_time", text) if text else math.inf)
    if not timed:
        return TracePods(pods, None, None)
    return TracePods(pods, np.array(created), np.array(deleted))


def _lifetimes(trace: TracePods, at_s: float | None, departures: bool) -> tuple[np.ndarray, np.ndarray]:
    """(arrival, departure) time of every pod; untimed pods arrive at 0, and never-leaving pods at inf."""
    n = len(trace.pods)
    if trace.created_s is None or trace.deleted_s is None:
        return np.zeros(n), np.full(n, math.inf)
    arrive = trace.created_s.copy()
    if not departures:
        return arrive, np.full(n, math.inf)
    never_alive = trace.deleted_s <= trace.created_s
    arrive[never_alive] = math.inf
    return arrive, trace.deleted_s.copy()


# ----------------------------------------------------------------------------------------------
# The replay
# ----------------------------------------------------------------------------------------------


class Replay:
    """Arrivals, departures and a pending queue on a ``ClusterState`` (pods indexed as in the state)."""

    def __init__(self, state: ClusterState, policy: str, rng: np.random.Generator):
        self.state, self.policy, self.rng = state, policy, rng
        self.pending: dict[int, None] = {}  # insertion-ordered set: arrival order
        self.lp = np.array([p.priority == "LP" for p in state.require_cluster().pods], dtype=np.bool_)

    def run(self, arrive_s: np.ndarray, leave_s: np.ndarray, until_s: float) -> np.ndarray:
        """Replay every event at or before ``until_s``; return each pod's placement time (nan if never)."""
        started = np.full(len(arrive_s), np.nan)
        times, kinds, pods = _events(arrive_s, leave_s, until_s)
        k = 0
        while k < len(times):
            end = k
            while end < len(times) and times[end] == times[k]:
                end += 1
            now = float(times[k])
            freed = [self._leave(int(p)) for p, kind in zip(pods[k:end], kinds[k:end]) if kind == 0]
            dirty = np.unique(np.array([n for n in freed if n >= 0], dtype=np.int64))
            if len(dirty):
                self._retry(dirty, now, started)
            for p, kind in zip(pods[k:end], kinds[k:end]):
                if kind == 1:
                    self._arrive(int(p), now, started)
            k = end
        return started

    def _arrive(self, p: int, now: float, started: np.ndarray) -> None:
        if schedule_pod(self.state, p, self.policy, self.rng) >= 0:
            started[p] = now
        else:
            self.pending[p] = None

    def _leave(self, p: int) -> int:
        """Remove pod p (placed or pending); return the node it freed, or -1."""
        self.pending.pop(p, None)
        n = int(self.state.pod_node[p])
        if n != PENDING:
            self.state.unplace(p)
        return n

    def _retry(self, dirty: np.ndarray, now: float, started: np.ndarray) -> None:
        """Retry the pending pods on the nodes that just freed capacity.

        Every pending pod failed on every node when last tried, and since then only ``dirty`` nodes
        gained room, so its feasible nodes (if any) are among them: trying those is trying all.
        """
        if not self.pending:
            return
        queue = np.fromiter(self.pending, dtype=np.int64, count=len(self.pending))
        queue = queue[np.argsort(self.lp[queue], kind="stable")]  # HP first, then arrival order
        for p in queue[_may_fit_somewhere(self.state, queue, dirty)].tolist():
            if schedule_pod(self.state, p, self.policy, self.rng, among=dirty) >= 0:
                started[p] = now
                del self.pending[p]


def _events(arrive_s: np.ndarray, leave_s: np.ndarray, until_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Events at or before ``until_s``: times, kinds (0 leave, 1 arrive) and pods, by time, departures first."""
    pods = np.arange(len(arrive_s))
    arrivals = arrive_s <= until_s
    leaves = leave_s <= until_s
    times = np.concatenate([leave_s[leaves], arrive_s[arrivals]])
    kinds = np.concatenate([np.zeros(leaves.sum(), np.int64), np.ones(arrivals.sum(), np.int64)])
    who = np.concatenate([pods[leaves], pods[arrivals]])
    order = np.lexsort((who, kinds, times))
    return times[order], kinds[order], who[order]


def _may_fit_somewhere(state: ClusterState, pods: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """A quick necessary test (not a rule; ``schedule_pod`` decides): may each pod fit one of ``nodes``?"""
    free_cpu = (state.cap_cpus - state.used_cpus)[nodes]
    free_mem = (state.cap_mem - state.used_mem)[nodes]
    free_dev = state.free_devices()[nodes]
    open_dev = (state.cap_gpus - state.whole_used)[nodes]  # devices not held by whole-GPU pods
    share = state.pod_share[pods][:, None] > 0
    gpus_ok = np.where(share, open_dev[None, :] >= 1, free_dev[None, :] >= state.pod_whole[pods][:, None])
    ok = state.eligible[state.pod_signature[pods]][:, nodes] & gpus_ok
    ok &= free_cpu[None, :] + EPS >= state.pod_cpus[pods][:, None]
    ok &= free_mem[None, :] + EPS >= state.pod_mem[pods][:, None]
    return ok.any(axis=1)


# ----------------------------------------------------------------------------------------------
# The snapshot
# ----------------------------------------------------------------------------------------------


def _snapshot(
    state: ClusterState,
    trace_pods: list[Pod],
    arriving: np.ndarray,
    alive_until: np.ndarray,
    started: np.ndarray,
    at_s: float | None,
) -> Cluster:
    """Pods alive at ``at_s`` in file order, placed where the replay put them or pending."""
    time_s = float(at_s) if at_s is not None else 0.0
    pods = []
    for k, i in enumerate(arriving.tolist()):
        if alive_until[i] <= time_s:
            continue
        n = int(state.pod_node[k])
        update: dict = {"node": state.node_names[n] if n >= 0 else None}
        if n >= 0 and at_s is not None:
            update["started_s"] = float(started[k])
        pods.append(trace_pods[i].model_copy(update=update))
    return Cluster(time_s=time_s, nodes=state.require_cluster().nodes, pods=pods)
