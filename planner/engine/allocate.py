"""Topology allocation: start pending jobs on as few access switches as possible.

Jobs are placed one at a time, largest first (the ASI practice), each by ``largest-first`` (optimal
for one job: fewest switches, then least entropy), ``alg2`` (the ASI paper's Algorithm 2 as
published), or Kueue TAS's greedy profiles (``kueue-bestfit``: domains from the most free capacity
down, the last one best fit, which on switch capacities is largest-first; ``kueue-leastfree``: the
least free switch that holds the job, else switches from the least free up) on the switches' usable
capacity for the job's pod shape. A job whose topology is
``required`` is placed under one switch (the smallest that holds it) or not at all. Every plan has
passed ``validate_allocate``; jobs that cannot start are listed in ``unplaced`` with the reason.
"""

from __future__ import annotations

import math
import time
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from planner.cluster import Cluster
from planner.engine.defrag import PlanBug, PlanOptionError, refuse_unused
from planner.heuristics.topology import allocate_job, entropy, min_switches, node_slots
from planner.plans import AllocationPlan, Placement, SolveReport, Unplaced
from planner.state import PENDING, ClusterState
from planner.validate_allocate import validate_allocate

AllocateMethod = Literal["largest-first", "alg2", "kueue-bestfit", "kueue-leastfree", "exact"]
SWITCH_PAIR_WEIGHT = 1
CROSS_SWITCH_PAIR_WEIGHT = 10
"""Locality cost weights per GPU pair: 0 on one node, 1 under one switch, 10 across switches."""


class AllocateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    method: AllocateMethod = "largest-first"
    jobs: list[str] | None = Field(None, description="Jobs to place (default: every job with pending pods).")
    solver: Literal["cpsat", "highs"] = Field("cpsat", description="exact: the back-end.")
    time_limit_s: float = Field(10.0, gt=0, le=7 * 24 * 3600.0, allow_inf_nan=False, description="exact: time for both solves.")
    solver_workers: int = Field(8, ge=1, le=256, description="CP-SAT workers / HiGHS threads.")

    @field_validator("*")
    @classmethod
    def _used_by_the_method(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_unused(cls, value, info, METHOD_OPTIONS, ("method", "jobs"), _unused_reason)


METHOD_OPTIONS: dict[str, set[str]] = {
    "largest-first": set(), "alg2": set(), "kueue-bestfit": set(), "kueue-leastfree": set(),
    "exact": {"solver", "time_limit_s", "solver_workers"},
}


def _unused_reason(method: str, name: str) -> str:
    return f"method '{method}' does not use it; use it with method exact, or leave it out"


def _shape(pod: Any) -> tuple:
    return (pod.gpus, pod.cpus, pod.memory_gib, tuple(sorted(pod.gpu_models)), tuple(sorted(pod.node_selector.items())), tuple(sorted(pod.anti_affinity)))


def pending_jobs(cluster: Cluster, names: list[str] | None) -> list[str]:
    """The jobs to place; refuses unknown jobs, jobs without pending pods and jobs of mixed shapes."""
    pending: dict[str, list[int]] = {}
    for i, pod in enumerate(cluster.pods):
        if pod.job is not None and pod.node is None:
            pending.setdefault(pod.job, []).append(i)
    known = {j.name for j in cluster.jobs}
    chosen = names if names is not None else sorted(pending)
    for name in chosen:
        if name not in known:
            raise PlanOptionError("jobs", f"unknown job '{name}'")
        if name not in pending:
            raise PlanOptionError("jobs", f"job '{name}' has no pending pods")
        first = cluster.pods[pending[name][0]]
        for i in pending[name][1:]:
            if _shape(cluster.pods[i]) != _shape(first):
                raise PlanOptionError(
                    "jobs", f"pods[{i}] of job '{name}' differs in shape or rules from '{first.name}'; a job's pods must be alike"
                )
    return list(chosen)


def plan_allocate(cluster: Cluster, options: AllocateOptions | None = None) -> AllocationPlan:
    options = options or AllocateOptions()
    start = time.perf_counter()
    names = pending_jobs(cluster, options.jobs)
    state = ClusterState(cluster)
    job_index = cluster.job_index()
    pods_of = {name: [int(p) for p in np.flatnonzero((state.pod_job == job_index[name]) & (state.pod_node == PENDING))] for name in names}
    order = sorted(names, key=lambda j: (-float(state.pod_gpus[pods_of[j]].sum()), j))
    if options.method == "exact":
        return _exact(cluster, state, names, pods_of, options, start)
    placements: list[Placement] = []
    unplaced: list[Unplaced] = []
    per_job: dict[str, Any] = {}
    for name in order:
        job = cluster.jobs[job_index[name]]
        level = job.topology.level if job.topology is not None else "asw"
        required = job.topology is not None and job.topology.mode == "required"
        domains = state.asw_domain if level == "asw" else state.spine_domain
        pods = pods_of[name]
        need = job.min_available if job.min_available is not None else len(pods)
        slots = node_slots(state, pods[0])
        capacities = [int(slots[domains == d].sum()) for d in np.unique(domains)]
        smallest = min_switches(capacities, need)
        placed, reason = _place(state, pods, need, domains, options.method, required, level)
        if reason is not None:
            unplaced.append(Unplaced(job=name, reason=reason))
            continue
        for p, n in placed:
            state.place(p, n)
            placements.append(Placement(pod=state.pod_names[p], node=state.node_names[n]))
        per_job[name] = _job_metrics(state, cluster, placed, slots, len(placed), smallest)
    plan = AllocationPlan(
        placements=placements,
        unplaced=unplaced,
        metrics={"per_job": per_job, "jobs_placed": len(per_job), "jobs_unplaced": len(unplaced)},
        report=SolveReport(
            method=options.method,
            status="heuristic",
            objective=float(sum(cluster.pods[state.pod_index[pl.pod]].gpus for pl in placements)),
            wall_s=round(time.perf_counter() - start, 6),
        ),
    )
    violations = validate_allocate(cluster, plan)
    if violations:
        raise PlanBug(f"{options.method} produced an invalid allocation: " + "; ".join(map(str, violations[:5])))
    return plan


def _exact(cluster: Cluster, state: ClusterState, names: list[str], pods_of: dict[str, list[int]], options: AllocateOptions, start: float) -> AllocationPlan:
    """The joint optimum of the batch (warm-started from largest-first), with its claims."""
    from planner.models.topology import solve_joint

    warm = plan_allocate(cluster, AllocateOptions(method="largest-first", jobs=options.jobs))
    hint: dict[str, list[tuple[int, int]]] = {}
    for pl in warm.placements:
        p = state.pod_index[pl.pod]
        hint.setdefault(cluster.pods[p].job, []).append((p, state.node_index[pl.node]))
    jobs = {j: pods_of[j] for j in names}
    levels, minimum = {}, {}
    for j in names:
        spec = cluster.jobs[cluster.job_index()[j]]
        levels[j] = (spec.topology.level if spec.topology else "asw", bool(spec.topology and spec.topology.mode == "required"))
        minimum[j] = spec.min_available if spec.min_available is not None else len(pods_of[j])
    def greedy_for(subset: list[str]) -> dict[str, list[tuple[int, int]]] | None:
        again = plan_allocate(cluster, AllocateOptions(method="largest-first", jobs=subset))
        if again.unplaced:
            return None
        pairs: dict[str, list[tuple[int, int]]] = {}
        for pl in again.placements:
            p = state.pod_index[pl.pod]
            pairs.setdefault(cluster.pods[p].job, []).append((p, state.node_index[pl.node]))
        return pairs

    result = solve_joint(state, jobs, levels, minimum, options.solver, options.time_limit_s, options.solver_workers, hint, greedy_for)
    placements, per_job = [], {}
    for j in names:
        pairs = result.assignment.get(j, [])
        if not pairs:
            continue
        domains = state.asw_domain
        slots = node_slots(state, pods_of[j][0])
        capacities = np.bincount(np.unique(domains, return_inverse=True)[1], weights=slots).astype(np.int64).tolist()
        per_job[j] = _job_metrics(state, cluster, pairs, slots, len(pairs), min_switches(capacities, len(pairs)))
        for p, n in pairs:
            placements.append(Placement(pod=state.pod_names[p], node=state.node_names[n]))
    unplaced = [Unplaced(job=j, reason="not started in the joint optimum (the batch does not fit whole)") for j in names if j not in per_job]
    gpus = float(sum(cluster.pods[state.pod_index[pl.pod]].gpus for pl in placements))
    switches = sum(m["asws"] for m in per_job.values())
    plan = AllocationPlan(
        placements=placements,
        unplaced=unplaced,
        metrics={"per_job": per_job, "jobs_placed": len(per_job), "jobs_unplaced": len(unplaced), "switches": switches},
        report=SolveReport(
            method="exact", solver=options.solver, status=result.status, objective=gpus, bound=result.gpus_bound,
            gap=None if result.gpus_bound is None else round((result.gpus_bound - gpus) / max(result.gpus_bound, 1), 6),
            wall_s=round(time.perf_counter() - start, 6), switches_bound=result.switches_bound, model_exact=result.exact,
            greedy_gpus=warm.report.objective if warm.report else None, greedy_switches=sum(m["asws"] for m in warm.metrics["per_job"].values()),
            **result.fields,
        ),
    )
    violations = validate_allocate(cluster, plan)
    if violations:
        raise PlanBug("exact produced an invalid allocation: " + "; ".join(map(str, violations[:5])))
    return plan


def _place(state: ClusterState, pods: list[int], need: int, domains: np.ndarray, method: str, required: bool, level: str):  # type: ignore[no-untyped-def]
    """(pod, node) pairs for ``need`` of the pods, or the reason they cannot start."""
    if not required:
        return allocate_job(state, pods[:need], domains, method)
    slots = node_slots(state, pods[0])
    ids = np.unique(domains)
    room = np.array([int(slots[domains == d].sum()) for d in ids])
    fits = np.flatnonzero(room >= need)
    if not len(fits):
        return [], f"needs {need} pods under one {level}; the roomiest {level} takes {int(room.max()) if len(room) else 0}"
    # Algorithm 2 takes the lowest-index switch of its all-way tie; largest-first the smallest that fits
    pick = int(fits[0]) if method == "alg2" else int(fits[np.argmin(room[fits])])
    return allocate_job(state, pods[:need], np.where(domains == ids[pick], 0, -1), method)


def _job_metrics(state: ClusterState, cluster: Cluster, placed: list[tuple[int, int]], slots: np.ndarray, count: int, smallest: int | None) -> dict[str, Any]:
    gpus_on: dict[int, float] = {}
    for p, n in placed:
        gpus_on[n] = gpus_on.get(n, 0.0) + float(state.pod_gpus[p])
    by_asw: dict[int, float] = {}
    by_spine: dict[int, float] = {}
    for n, g in gpus_on.items():
        by_asw[int(state.asw_domain[n])] = by_asw.get(int(state.asw_domain[n]), 0.0) + g
        by_spine[int(state.spine_domain[n])] = by_spine.get(int(state.spine_domain[n]), 0.0) + g
    ordered = np.sort(slots)[::-1]
    min_nodes = int(np.searchsorted(np.cumsum(ordered), count) + 1) if count else 0
    return {
        "pods": count,
        "gpus": round(math.fsum(gpus_on.values()), 6),
        "asws": len(by_asw),
        "spines": len(by_spine),
        "entropy": round(entropy(list(by_asw.values())), 6),
        "min_asws": smallest,
        "nodes": len(gpus_on),
        "min_nodes": min_nodes,
        "locality_cost": locality_cost(gpus_on, state.asw_domain),
    }


def locality_cost(gpus_on: dict[int, float], domain: np.ndarray) -> float:
    """Sum over pairs of the job's GPUs of w(d): 0 on one node, 1 under one switch, 10 across."""
    def pairs(x: float) -> float:
        return x * (x - 1) / 2

    total = math.fsum(gpus_on.values())
    per_switch: dict[int, float] = {}
    for n, g in gpus_on.items():
        per_switch[int(domain[n])] = per_switch.get(int(domain[n]), 0.0) + g
    same_node = math.fsum(pairs(g) for g in gpus_on.values())
    same_switch = math.fsum(pairs(g) for g in per_switch.values())
    return round(SWITCH_PAIR_WEIGHT * (same_switch - same_node) + CROSS_SWITCH_PAIR_WEIGHT * (pairs(total) - same_switch), 6)
