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
from typing import Any

import numpy as np

from planner import rules
from planner.capacity import large_requests_of
from planner.cluster import Cluster
from planner.engine.allocate_options import AllocateOptions
from planner.engine.common import (
    PlanBug,
    PlanOptionError,
    pod_shape,
    refuse_unholdable,
)
from planner.heuristics.topology import (
    CHOOSERS,
    allocate_job,
    entropy,
    largest_first,
    min_switches,
    node_slots,
)
from planner.metrics import parse_shape
from planner.plans import (
    AllocationComparison,
    AllocationPlan,
    Placement,
    SolveReport,
    Unplaced,
)
from planner.provenance import stamp
from planner.state import PENDING, ClusterState
from planner.suggest import unknown_name
from planner.validate.allocate import SnapshotIndex, validate_allocate

SWITCH_PAIR_WEIGHT = 1
CROSS_SWITCH_PAIR_WEIGHT = 10
ENTROPY_TIE = 1e-6
"""Entropy sums closer than this (nats) are equal (metrics are rounded to 6 decimals)."""
"""Locality cost weights per GPU pair: 0 on one node, 1 under one switch, 10 across switches."""


def pending_pods(cluster: Cluster) -> dict[str, list[int]]:
    """Each job's pending pods (indexes into ``cluster.pods``)."""
    pending: dict[str, list[int]] = {}
    for i, pod in enumerate(cluster.pods):
        if pod.job is not None and pod.node is None:
            pending.setdefault(pod.job, []).append(i)
    return pending


def pending_jobs(cluster: Cluster, names: list[str] | None, pending: dict[str, list[int]] | None = None) -> list[str]:
    """The jobs to place; refuses unknown jobs, jobs without pending pods, jobs of mixed shapes and
    pod shapes no node could hold. ``pending``: ``pending_pods(cluster)`` when already at hand."""
    pending = pending_pods(cluster) if pending is None else pending
    known = cluster.job_index()
    chosen = names if names is not None else sorted(pending)
    for name in chosen:
        if name not in known:
            raise PlanOptionError("jobs", unknown_name("job", name, known, pending=list(pending)))
        if name not in pending:
            raise PlanOptionError("jobs", f"job '{name}' has no pending pods")
        first = cluster.pods[pending[name][0]]
        refuse_unholdable(cluster, pending[name][0])
        for i in pending[name][1:]:
            if pod_shape(cluster.pods[i]) != pod_shape(first):
                raise PlanOptionError("jobs", f"pods[{i}] of job '{name}' differs in shape or rules from '{first.name}'; a job's pods must be alike")
    return list(chosen)


def plan_allocate(cluster: Cluster, options: AllocateOptions | None = None) -> AllocationPlan | AllocationComparison:
    """A validated allocation plan (for ``compare``: the greedy and exact plans side by side), with its provenance."""
    options = options or AllocateOptions()
    start = time.perf_counter()
    names = pending_jobs(cluster, options.jobs)
    state = ClusterState(cluster)
    pristine = state.clone()
    plan = _plan_allocate(cluster, options, start, names, state)
    shapes = [parse_shape(text) for text in options.large_requests]
    for one in [plan.heuristic, plan.exact] if isinstance(plan, AllocationComparison) else [plan]:
        if "large_requests" not in one.metrics:  # the warm start's plan has them already
            one.metrics["large_requests"] = large_requests_of(pristine, one.placements, shapes)
    return stamp(plan, cluster, options)


def _plan_allocate(cluster: Cluster, options: AllocateOptions, start: float, names: list[str], state: ClusterState) -> AllocationPlan | AllocationComparison:
    job_index = cluster.job_index()
    pods_of = {name: [int(p) for p in np.flatnonzero((state.pod_job == job_index[name]) & (state.pod_node == PENDING))] for name in names}
    order = sorted(names, key=lambda j: (-float(state.pod_gpus[pods_of[j]].sum()), j))
    if options.method in ("exact", "auto", "compare"):
        warm = plan_allocate(cluster, AllocateOptions(method="largest-first", jobs=options.jobs, large_requests=options.large_requests))
        assert isinstance(warm, AllocationPlan)
        exact = _exact(cluster, state, names, pods_of, options, start, warm, _best_start(cluster, state, pods_of, order, warm))
        if options.method == "exact":
            return exact
        if options.method == "compare":
            return _comparison(warm, exact)
        return _auto(warm, exact, start)
    return greedy_plan(cluster, state, pods_of, order, options, start)


def greedy_plan(
    cluster: Cluster,
    state: ClusterState,
    pods_of: dict[str, list[int]],
    order: list[str],
    options: AllocateOptions,
    start: float,
    index: SnapshotIndex | None = None,
    keep: bool = True,
) -> AllocationPlan:
    """One job at a time in ``order`` with a greedy method, on ``state``; validated. ``keep=False``
    leaves ``state`` as it was (a warm allocator answering requests on a kept state); ``index``:
    the validator's lookups of the snapshot, when kept."""
    rng = np.random.default_rng(options.seed)
    job_index = cluster.job_index() if index is None else index.job_index
    # the minimum switches and nodes a job could use, with the snapshot's free room to itself (the
    # same basis for every method, so ratios compare across methods)
    alone = {name: node_slots(state, pods_of[name][0]) for name in order}
    placements: list[Placement] = []
    unplaced: list[Unplaced] = []
    per_job: dict[str, Any] = {}
    done: list[int] = []
    try:
        for name in order:
            job = cluster.jobs[job_index[name]]
            level = job.topology.level if job.topology is not None else "asw"
            required = job.topology is not None and job.topology.mode == "required"
            domains = state.asw_domain if level == "asw" else state.spine_domain
            pods = pods_of[name]
            running = np.flatnonzero((state.pod_job == job_index[name]) & (state.pod_node != PENDING))
            need = rules.gang_need(job.min_available, len(pods), len(running))
            smallest = min_switches(switch_room(alone[name], state.asw_domain), max(need, 1))
            within = int(domains[state.pod_node[running[0]]]) if required and len(running) else None
            placed, reason = _place(state, pods, need, domains, options.method, required, level, rng, within)
            if reason is not None:
                unplaced.append(Unplaced(job=name, reason=reason))
                continue
            for p, n in placed:
                state.place(p, n)
            if need < len(pods):  # min_available: the other pods start where they fit
                anchor = [int(state.pod_node[q]) for q in running] + [n for _, n in placed]
                placed += _place_extras(state, pods[need:], domains, options.method, required, anchor, rng)
            for p, n in placed:
                done.append(p)
                placements.append(Placement(pod=state.pod_names[p], node=state.node_names[n]))
            per_job[name] = _job_metrics(state, cluster, placed, alone[name], len(placed), smallest)
    finally:
        if not keep:
            for p in reversed(done):
                state.unplace(p)
    plan = AllocationPlan(
        placements=placements,
        unplaced=unplaced,
        metrics={"per_job": per_job, "jobs_placed": len(per_job), "jobs_unplaced": len(unplaced)},
        report=SolveReport(
            method=options.method,
            status="heuristic",
            objective=float(sum(float(state.pod_gpus[p]) for p in done)),
            wall_s=round(time.perf_counter() - start, 6),
        ),
    )
    violations = validate_allocate(cluster, plan, index)
    if violations:
        raise PlanBug(f"{options.method} produced an invalid allocation: " + "; ".join(map(str, violations[:5])))
    return plan


def switch_room(slots: np.ndarray, domains: np.ndarray) -> list[int]:
    """Pods of one shape each switch can take (``slots`` per node summed per domain id)."""
    dense = len(domains) and domains.min() >= 0  # the state's domain ids are dense: no sort needed
    room: list[int] = np.bincount(domains if dense else np.unique(domains, return_inverse=True)[1], weights=slots).astype(np.int64).tolist()
    return room


def _lexicographic_key(plan: AllocationPlan) -> tuple[float, ...]:
    """Better is larger: GPUs started, then fewer switches, then less entropy."""
    per_job = plan.metrics.get("per_job", {})
    return (plan.report.objective or 0.0 if plan.report else 0.0, -sum(m["asws"] for m in per_job.values()), -math.fsum(m["entropy"] for m in per_job.values()))


def _auto(greedy: AllocationPlan, exact: AllocationPlan, start: float) -> AllocationPlan:
    """The exact plan when proven optimal; otherwise the better of it and largest-first (GPUs,
    then switches, then entropy), with the status it really has."""
    assert exact.report is not None and greedy.report is not None
    levels = len(getattr(exact.report, "objective_levels", None) or ["gpus", "switches"])
    g_key, e_key = _lexicographic_key(greedy), _lexicographic_key(exact)
    proven = exact.report.status == "optimal"
    if proven:  # largest-first as good as a proven optimum on every level asked is optimal too; it is
        # kept then (it best-fits, leaving the roomiest switches to the next jobs)
        g_key, e_key = g_key[:levels], e_key[:levels]
        use_exact = not (g_key[:2] == e_key[:2] and g_key[2:] >= tuple(v - ENTROPY_TIE for v in e_key[2:]))
    else:  # the better of the two on all three levels
        use_exact = e_key > g_key
    plan = exact if use_exact else greedy
    assert plan.report is not None
    extra: dict[str, Any] = {
        "method": "auto",
        "chosen": "exact" if use_exact else "largest-first",
        "exact_status": exact.report.status,
        "wall_s": round(time.perf_counter() - start, 6),
    }
    if not use_exact:  # the exact model's claims hold for this plan too, and its bounds still bound the problem
        # not proven: largest-first is at least as good on every level, so equal on those the exact model proved
        keep = ("status", "bound", "gap", "switches_bound", "objective_levels", "proven_levels", "entropy_bound_nats", "entropy_tolerance_nats", "model_exact")
        extra.update({k: getattr(exact.report, k, None) for k in keep if proven or k in ("bound", "switches_bound", "objective_levels", "proven_levels")})
        if not proven:
            extra["status"] = "heuristic"
    return plan.model_copy(update={"report": plan.report.model_copy(update=extra)})


def _comparison(greedy: AllocationPlan, exact: AllocationPlan) -> AllocationComparison:
    def summary(plan: AllocationPlan) -> dict[str, Any]:
        per_job = plan.metrics.get("per_job", {})
        return {
            "gpus": plan.report.objective if plan.report else None,
            "jobs_placed": len(per_job),
            "switches": sum(m["asws"] for m in per_job.values()),
            "entropy": round(math.fsum(m["entropy"] for m in per_job.values()), 6),
            "locality_cost": math.fsum(m["locality_cost"] for m in per_job.values()),
        }

    g, e = summary(greedy), summary(exact)
    return AllocationComparison(
        heuristic=greedy,
        exact=exact,
        gap={
            "greedy": g,
            "exact": e,
            "gpus": (e["gpus"] or 0) - (g["gpus"] or 0),
            "switches": g["switches"] - e["switches"],
            "exact_status": exact.report.status if exact.report else None,
        },
    )


def _best_start(cluster: Cluster, state: ClusterState, pods_of: dict[str, list[int]], order: list[str], warm: AllocationPlan) -> tuple[AllocationPlan, str]:
    """The exact model's warm start: the best (GPUs, then switches, then entropy) of largest-first
    (``warm``, in ``order``) and largest-first with required jobs first and with the smallest job
    first. On the 50 contended batches of benchmarks/topology_batch.py the largest job first reaches
    the optimum of GPUs and switches in 36, the best of the three orders in all 50, and the solve's
    LP bound alone then proves it on 47 (``models/topology/search.py``, ``_solve``). The comparison against
    ``greedy`` stays with ``warm``."""
    job_index = cluster.job_index()
    required = {name: bool((spec := cluster.jobs[job_index[name]].topology) and spec.mode == "required") for name in order}
    best, best_order = warm, "largest job first"
    others = {
        "required jobs first, then largest": sorted(order, key=lambda j: not required[j]),  # stable: largest first within
        "smallest job first": list(reversed(order)),
    }
    for name, other in others.items():
        plan = greedy_plan(cluster, state, pods_of, other, AllocateOptions(method="largest-first"), time.perf_counter(), keep=False)
        if _lexicographic_key(plan) > _lexicographic_key(best):
            best, best_order = plan, name
    return best, best_order


def _exact(
    cluster: Cluster,
    state: ClusterState,
    names: list[str],
    pods_of: dict[str, list[int]],
    options: AllocateOptions,
    start: float,
    warm: AllocationPlan,
    best_start: tuple[AllocationPlan, str],
) -> AllocationPlan:
    """The joint optimum of the batch (warm-started from ``best_start``), with its claims; ``warm``:
    the largest-first plan it is compared with."""
    # deferred: the joint topology model (~16 ms at CLI start-up), for exact allocation only
    from planner.models.topology import solve_joint

    hint: dict[str, list[tuple[int, int]]] = {}
    for pl in best_start[0].placements:
        p = state.pod_index[pl.pod]
        job = cluster.pods[p].job
        assert job is not None  # the start places pods of the batch's jobs only
        hint.setdefault(job, []).append((p, state.node_index[pl.node]))
    jobs = {j: pods_of[j] for j in names}
    levels, minimum, within = {}, {}, {}
    for j in names:
        spec = cluster.jobs[cluster.job_index()[j]]
        levels[j] = (spec.topology.level if spec.topology else "asw", bool(spec.topology and spec.topology.mode == "required"))
        running = np.flatnonzero((state.pod_job == cluster.job_index()[j]) & (state.pod_node != PENDING))
        minimum[j] = rules.gang_need(spec.min_available, len(pods_of[j]), len(running))
        if levels[j][1] and len(running):
            within[j] = int((state.asw_domain if levels[j][0] == "asw" else state.spine_domain)[state.pod_node[running[0]]])
    result = solve_joint(
        state, jobs, levels, minimum, options.solver, options.time_limit_s, options.solver_workers, hint, optimise_entropy=options.entropy, within=within
    )
    placements, per_job = [], {}
    for j in names:
        pairs = result.assignment.get(j, [])
        if not pairs:
            continue
        slots = node_slots(state, pods_of[j][0])
        per_job[j] = _job_metrics(state, cluster, pairs, slots, len(pairs), min_switches(switch_room(slots, state.asw_domain), len(pairs)))
        for p, n in pairs:
            placements.append(Placement(pod=state.pod_names[p], node=state.node_names[n]))
    unplaced = [Unplaced(job=j, reason="not started in the joint optimum (the batch does not fit whole)") for j in names if j not in per_job]
    gpus = float(sum(cluster.pods[state.pod_index[pl.pod]].gpus for pl in placements))
    switches = sum(m["asws"] for m in per_job.values())
    report = SolveReport(
        method="exact",
        solver=options.solver,
        status=result.status,
        objective=gpus,
        bound=result.gpus_bound,
        gap=None if result.gpus_bound is None else round((result.gpus_bound - gpus) / max(result.gpus_bound, 1), 6),
        wall_s=round(time.perf_counter() - start, 6),
        switches_bound=result.switches_bound,
        model_exact=result.exact,
        start_order=best_start[1],
        greedy_gpus=warm.report.objective if warm.report else None,
        greedy_switches=sum(m["asws"] for m in warm.metrics["per_job"].values()),
        **result.fields,
    )
    plan = AllocationPlan(
        placements=placements,
        unplaced=unplaced,
        metrics={"per_job": per_job, "jobs_placed": len(per_job), "jobs_unplaced": len(unplaced), "switches": switches},
        report=report,
    )
    start_plan = best_start[0]
    if result.status != "optimal" and _lexicographic_key(start_plan) > _lexicographic_key(plan):
        # the model's plan lost to its own start (GPU shares make the model stricter than the rules;
        # a timeout): the start is returned, with the model's claims, which bound every plan
        report = report.model_copy(
            update={
                "objective": start_plan.report.objective if start_plan.report else None,
                "plan_from": f"the start ({best_start[1]}): better than the model's plan",
            }
        )
        if report.bound is not None:
            report.gap = round((report.bound - (report.objective or 0.0)) / max(report.bound, 1), 6)
        plan = plan.model_copy(
            update={
                "placements": start_plan.placements,
                "unplaced": start_plan.unplaced,
                "metrics": {**start_plan.metrics, "switches": sum(m["asws"] for m in start_plan.metrics["per_job"].values())},
                "report": report,
            }
        )
    violations = validate_allocate(cluster, plan)
    if violations:
        raise PlanBug("exact produced an invalid allocation: " + "; ".join(map(str, violations[:5])))
    return plan


def _place(
    state: ClusterState,
    pods: list[int],
    need: int,
    domains: np.ndarray,
    method: str,
    required: bool,
    level: str,
    rng: np.random.Generator,
    within: int | None = None,
) -> tuple[list[tuple[int, int]], str | None]:
    """(pod, node) pairs for ``need`` of the pods, or the reason they cannot start; ``within``: the
    switch a required job's running pods are under, which the others must join. ``domains``: each
    node's domain at the job's level; switches are chosen among access switches (under one spine for
    a required spine job)."""
    method = "largest-first" if method == "greedy" else method
    asw = state.asw_domain
    if within is not None:
        placed, reason = allocate_job(state, pods[:need], np.where(domains == within, asw, -1), method, rng)
        return placed, None if reason is None else f"its running pods hold it to one {level}: {reason}"
    slots = node_slots(state, pods[0])
    ids = np.unique(domains)
    room = np.array(switch_room(slots, domains), dtype=np.int64)
    fits = np.flatnonzero(room >= need)
    best_fit = CHOOSERS.get(method) is largest_first
    if not required:  # largest-first counts access switches for every job (a preferred spine is not minimised)
        return allocate_job(state, pods[:need], asw if best_fit else domains, method, rng)
    if level == "spine" and best_fit and len(fits):
        # largest-first: of the spines that hold the job, one where it spans the fewest access
        # switches with the least entropy (largest-first within it), then the smallest
        def spread(f: int) -> tuple[int, float, int]:
            within = largest_first(switch_room(np.where(domains == ids[f], slots, 0), asw), need) or []
            return len(within), round(entropy([n for _, n in within]), 12), int(room[f])

        fits = np.array([min(fits.tolist(), key=spread)], dtype=np.int64)
    if not len(fits):
        return [], f"needs {need} pods under one {level}; the roomiest {level} takes {int(room.max()) if len(room) else 0}"
    # Algorithm 2 takes the lowest-index switch of its all-way tie; random any that holds the job;
    # the others the smallest that holds it (best fit)
    if method == "alg2":
        pick = int(fits[0])
    elif method == "random":
        pick = int(fits[rng.integers(len(fits))])
    else:
        pick = int(fits[np.argmin(room[fits])])
    return allocate_job(state, pods[:need], np.where(domains == ids[pick], asw, -1), method, rng)


def _place_extras(
    state: ClusterState, pods: list[int], domains: np.ndarray, method: str, required: bool, anchor: list[int], rng: np.random.Generator
) -> list[tuple[int, int]]:
    """Pods of a job beyond its minimum, one at a time where ``method`` puts them (a ``required`` job's
    under the switch its other pods are under); placed on ``state``."""
    if required and anchor:
        domains = np.where(domains == domains[anchor[0]], 0, -1)
    placed: list[tuple[int, int]] = []
    for p in pods:
        found, reason = allocate_job(state, [p], domains, method, rng)
        if reason is None and found:
            n = found[0][1]
            state.place(p, n)
            placed.append((p, n))
            if required and not anchor:
                anchor = [n]
                domains = np.where(domains == domains[n], 0, -1)
    return placed


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
    min_spines = min_switches(switch_room(slots, state.spine_domain), count)
    return {
        "pods": count,
        "gpus": round(math.fsum(gpus_on.values()), 6),
        "asws": len(by_asw),
        "spines": len(by_spine),
        "entropy": round(entropy(list(by_asw.values())), 6),
        "min_asws": smallest,
        "min_spines": min_spines,
        "nodes": len(gpus_on),
        "min_nodes": min_nodes,
        # Kant's JTTEd deviation ratios: used over the least possible (1.0 is ideal)
        "node_ratio": round(len(gpus_on) / min_nodes, 6) if min_nodes else None,
        "asw_ratio": round(len(by_asw) / smallest, 6) if smallest else None,
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
