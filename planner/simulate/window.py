"""The simulator's live state: one ``PreemptState`` over the jobs that are running, pending or about
to arrive (a *window* of the workload), mutated decision by decision and rebuilt when the window
runs out, so a decision costs the same on day 7 as on day 1 whatever the workload's length.

Pods are ``<job>-<worker>``. Per pod the window keeps the run's start and the time its progress
starts (after the restart overhead); ``lost_gpu_s`` turns them into each running pod's cost of an
eviction now before a decision that may evict, so the planner's cost (``rules.lost_gpu_s``) is
exactly the work the simulator books as lost.
"""

from __future__ import annotations

import math

import numpy as np

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod
from planner.preempt_state import PreemptState
from planner.state import PENDING, ClusterState


class Window:
    """``jobs`` (SimJob by name, in window order) on ``nodes``; ``running`` gives each running job's
    (run start, progress start, nodes of its pods, on standby)."""

    def __init__(
        self,
        nodes: list[Node],
        jobs: list,
        running: dict[str, tuple[float, float, list[str], bool]],
        eviction_counts: np.ndarray,
        time_s: float,
        pending_pods: dict[str, list[Pod]] | None = None,
    ):
        """``pending_pods``: each job's pods as pending, kept by the caller across windows (a job
        pending in several windows is checked once; running pods are its copies with their node)."""
        pods, cluster_jobs = [], []
        cache = {} if pending_pods is None else pending_pods
        for job in jobs:
            cluster_jobs.append(Job(name=job.name))
            run = running.get(job.name)
            pending = cache.get(job.name)
            if pending is None:
                pending = cache[job.name] = [
                    Pod(
                        name=f"{job.name}-{w}",
                        job=job.name,
                        gpus=job.gpus_per_worker,
                        cpus=job.cpus_per_worker,
                        memory_gib=job.memory_gib_per_worker,
                        priority=job.priority,
                        gpu_models=list(job.gpu_models),
                    )
                    for w in range(job.workers)
                ]
            if run is None:
                pods += pending
            else:
                pods += [pod.model_copy(update={"node": run[2][w], "started_s": run[0], "standby": run[3]}) for w, pod in enumerate(pending)]
        # parts already checked (the nodes, each job's pods and names): assembled without checking them again
        self.cluster = Cluster.model_construct(time_s=time_s, nodes=nodes, pods=pods, jobs=cluster_jobs)
        cs = ClusterState(self.cluster)
        cs.enable_standby()
        cs._eviction_counts = eviction_counts  # type: ignore[attr-defined]  # SpotGPU's history, kept by the simulator
        self.ps = PreemptState(self.cluster, cs)
        self.job_index = {job.name: j for j, job in enumerate(jobs)}
        self.job_pods: list[list[int]] = [[] for _ in jobs]
        for p, j in enumerate(cs.pod_job.tolist()):
            self.job_pods[j].append(p)
        self.names = [job.name for job in jobs]
        nan = math.nan
        self.run_start_s = np.array([nan if p.started_s is None else p.started_s for p in pods], dtype=np.float64)
        self.progress_s = np.full(len(pods), nan)
        self.interval_s = np.array(
            [nan if j.checkpoint_interval_s is None else j.checkpoint_interval_s for j in jobs for _ in range(j.workers)], dtype=np.float64
        )
        periodic = ~np.isnan(self.interval_s)
        self._interval_or_inf = np.where(periodic, self.interval_s, math.inf)
        self._interval_or_one = np.where(periodic, self.interval_s, 1.0)
        self._eligible: dict[int, np.ndarray] = {}
        self._room: dict[bool, tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self._bounds: dict[tuple[bool, int, float], float] = {}  # ``gpu_places_bound`` by pod kind, at ``_bounds_version``
        self._bounds_version = -1
        self.zero_cost = np.zeros(len(pods))
        self.no_victims = np.zeros(len(pods), dtype=bool)
        self.zero_unit_cost = np.zeros(self.ps.n_units)
        for name, (_, progress, _, _) in running.items():
            if name in self.job_index:
                self.progress_s[self.job_pods[self.job_index[name]]] = progress

    def room(self, hp_view: bool, nodes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node (of ``nodes``; default every node, cached until the state changes), the GPUs,
        CPUs and memory (each + EPS) left by the pods that would stay: for an HP pod the HP pods
        (standby reservations included), for a spot pod every pod."""
        cs = self.ps.cs
        if nodes is not None:
            return self._room_at(hp_view, nodes)
        cached = self._room.get(hp_view)
        if cached is None or cached[0] != cs.version:
            cached = self._room[hp_view] = (cs.version, self._room_at(hp_view, slice(None)))
        return cached[1]

    def _room_at(self, hp_view: bool, at: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cs = self.ps.cs
        if hp_view:
            held = (cs.hp_whole[at], cs.hp_cpus[at], cs.hp_mem[at])
        else:
            held = (cs.whole_used[at] + cs.share_devices[at], cs.used_cpus[at], cs.used_mem[at])
        return cs.cap_gpus[at] - held[0] + rules.EPS, cs.cap_cpus[at] - held[1] + rules.EPS, cs.cap_mem[at] - held[2] + rules.EPS

    def gpu_places_bound(self, p: int) -> float:
        """An upper bound on how many pods like p fit at once on the nodes the static rules allow:
        over those nodes, the whole GPUs ``room`` leaves divided by p's, rounded down, summed (CPUs
        and memory ignored; inf for a pod without whole GPUs). Cached until the state changes:
        proofs that jobs cannot start run one after another on the same state."""
        cs = self.ps.cs
        whole = float(cs.pod_whole[p])
        if whole <= 0:
            return math.inf
        if self._bounds_version != cs.version:
            self._bounds.clear()
            self._bounds_version = cs.version
        hp, signature = bool(cs.pod_hp[p]), int(cs.pod_signature[p])
        key = (hp, signature, whole)
        bound = self._bounds.get(key)
        if bound is None:
            bound = self._bounds[key] = float(np.floor(self.room(hp)[0][self.eligible_nodes(signature)] / whole).sum())
        return bound

    def eligible_nodes(self, signature: int) -> np.ndarray:
        """Nodes the static rules allow for pods of ``signature`` (cached)."""
        cached = self._eligible.get(signature)
        if cached is None:
            cached = self._eligible[signature] = np.flatnonzero(self.ps.cs.eligible[signature])
        return cached

    def __contains__(self, job: str) -> bool:
        return job in self.job_index

    def pods_of(self, job: str) -> list[int]:
        return self.job_pods[self.job_index[job]]

    def start_run(self, job: str, run_start_s: float, progress_s: float) -> None:
        pods = self.pods_of(job)
        self.run_start_s[pods] = run_start_s
        self.progress_s[pods] = progress_s
        self.ps.started_s[pods] = run_start_s

    def end_run(self, job: str) -> None:
        """The job's pods leave their nodes (finished or evicted) and wake if they slept."""
        cs = self.ps.cs
        for p in self.pods_of(job):
            self.ps.evict(p)
            if cs.pod_standby[p]:
                cs.set_standby(p, False)
        pods = self.pods_of(job)
        self.run_start_s[pods] = math.nan
        self.progress_s[pods] = math.nan
        self.ps.started_s[pods] = math.nan

    def lost_gpu_s(self, now_s: float, placed: np.ndarray | None = None) -> np.ndarray:
        """Each pod's lost work if evicted at ``now_s`` (``rules.lost_gpu_s``; 0 for pods not
        placed, or not in ``placed``): GPUs x the time since its run's last checkpoint, the latest
        multiple of its interval of progress, or the run's start when it has none yet (overhead and
        all are then lost). The planner decides on these costs, so they are exactly what the
        simulator books."""
        progress = self.progress_s
        cs = self.ps.cs
        done = np.fmax(now_s - progress, 0.0)  # 0 for pods not running (NaN progress)
        taken = np.floor(done / self._interval_or_inf)  # checkpoints taken: 0 without an interval
        last = np.where(taken >= 1, progress + taken * self._interval_or_one, self.run_start_s)
        return np.where(cs.pod_node != PENDING if placed is None else placed, cs.pod_gpus * np.maximum(0.0, now_s - last), 0.0)

    def nodes_of(self, job: str) -> list[int]:
        return [int(self.ps.cs.pod_node[p]) for p in self.pods_of(job)]


def kept_progress_s(progress_s: float, interval_s: float | None, now_s: float) -> float:
    """Progress a run that resumed progressing at ``progress_s`` has checkpointed by ``now_s``."""
    if interval_s is None or now_s <= progress_s:
        return 0.0
    return math.floor((now_s - progress_s) / interval_s) * interval_s


__all__ = ["Window", "kept_progress_s"]
