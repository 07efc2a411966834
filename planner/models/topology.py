"""Exact joint allocation of a batch of pending jobs (a MILP/CP model, CP-SAT or HiGHS).

Variables:
  x[j, n]  integer, pods of job j on node n (at most what n could take of j alone);
  z[j]     binary, job j starts (all its pods, or at least ``min_available``);
  u[j, d]  binary, job j uses switch d (at its topology level: asw, or spine for spine jobs).
Constraints:
  (1) k_j z_j <= sum_n x[j, n] <= N_j z_j                       gang (k_j = min_available or N_j)
  (2) sum_j G_j x[j, n] <= free whole GPUs of n; CPUs, memory alike (exact integer units)
  (3) x[j, n] <= ub[j, n] u[j, d(n)]                             switch use
  (4) sum_d u[j, d] <= 1 for a ``required`` job                  one switch
  (5) anti-affinity: at most one pod per node of the jobs sharing a group
Objective, lexicographic in two solves: most GPUs of the jobs started; then, with that held, fewest
switches spanned (summed over jobs). Entropy is reported, not optimised.

The model is exact (it accepts exactly what ``rules.py`` accepts) for jobs of whole-GPU pods; a job
of GPU shares makes it a relaxation (shares pack onto devices) and the bound is then not claimed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.heuristics.topology import node_slots
from planner.models.backends import solve
from planner.models.milp import Milp
from planner.models.units import scale_for
from planner.state import ClusterState


@dataclass
class JointResult:
    """Pods per (job, node), the solver's claims and sizes."""

    assignment: dict[str, list[tuple[int, int]]]  # job -> (pod, node)
    status: str
    gpus_bound: float | None
    switches_bound: float | None
    exact: bool
    fields: dict[str, Any] = field(default_factory=dict)


def solve_joint(
    state: ClusterState, jobs: dict[str, list[int]], levels: dict[str, tuple[str, bool]], minimum: dict[str, int],
    solver: str = "cpsat", time_limit_s: float = 10.0, workers: int = 8, hint: dict[str, list[tuple[int, int]]] | None = None,
    greedy_for: Any = None,
) -> JointResult:
    """Place ``jobs`` (name -> pending pod indexes) jointly; ``levels``: name -> (level, required).

    First the switch-level relaxation (``switch_bounds``): when the heuristic ``hint`` already meets
    both of its bounds, the hint is proven optimal without the node-level model."""
    # HiGHS proves this small relaxation in a fraction of a second where CP-SAT took seconds
    relaxed = switch_bounds(state, jobs, levels, minimum, "highs", time_limit_s / 4, workers)
    if hint is not None and relaxed is not None:
        hint_gpus = sum(len(pairs) * (int(state.pod_whole[jobs[j][0]]) or 1) for j, pairs in hint.items() if j in jobs)
        hint_switches = sum(len({int(state.asw_domain[n]) for _, n in pairs}) for pairs in hint.values())
        gpus_bound, switches_bound, exact_relaxation = relaxed
        if exact_relaxation and hint_gpus >= gpus_bound and hint_switches <= switches_bound:
            fields = {"proof": "switch-level relaxation", "relaxation_gpus": gpus_bound, "relaxation_switches": switches_bound}
            return JointResult(dict(hint), "optimal", float(gpus_bound), float(switches_bound), True, fields)
    m = Milp()
    exact = True
    names = sorted(jobs)
    x: dict[tuple[str, int], int] = {}
    ub: dict[tuple[str, int], int] = {}
    z = {j: m.var(f"z[{j}]") for j in names}
    u: dict[tuple[str, int], int] = {}
    domain_of = {j: (state.asw_domain if levels[j][0] == "asw" else state.spine_domain) for j in names}
    nodes_of: dict[str, list[int]] = {j: [] for j in names}  # the nodes each job may use, in order
    switches_of: dict[str, list[int]] = {j: [] for j in names}
    for j in names:
        p = jobs[j][0]
        if state.pod_share[p] > 0:
            exact = False
        slots = node_slots(state, p)
        for n in np.flatnonzero(slots > 0).tolist():
            bound = min(int(slots[n]), len(jobs[j]))
            x[j, n] = m.var(f"x[{j},{n}]", 0, bound)
            ub[j, n] = bound
            nodes_of[j].append(n)
            d = int(domain_of[j][n])
            if (j, d) not in u:
                u[j, d] = m.var(f"u[{j},{d}]")
                switches_of[j].append(d)
            m.row([(x[j, n], 1), (u[j, d], -bound)], None, 0, f"(3) {j} on {n}")
    for j in names:
        terms = [(x[j, n], 1) for n in nodes_of[j]]
        m.row([*terms, (z[j], -len(jobs[j]))], None, 0, f"(1) at most N [{j}]")
        m.row([*terms, (z[j], -minimum[j])], 0, None, f"(1) at least k [{j}]")
        if levels[j][1]:
            m.row([(u[j, d], 1) for d in switches_of[j]], None, 1, f"(4) one switch [{j}]")
    by_node: dict[int, list[str]] = {}
    for j, n in x:
        by_node.setdefault(n, []).append(j)
    cpu = scale_for([float(state.pod_cpus[jobs[j][0]]) for j in names], state.cap_cpus.tolist() + state.used_cpus.tolist())
    mem = scale_for([float(state.pod_mem[jobs[j][0]]) for j in names], state.cap_mem.tolist() + state.used_mem.tolist())
    exact &= cpu.exact and mem.exact
    for n, here in by_node.items():
        free = int(state.cap_gpus[n] - state.whole_used[n] - state.share_devices[n])
        m.row([(x[j, n], int(state.pod_whole[jobs[j][0]]) + (1 if state.pod_share[jobs[j][0]] > 0 else 0)) for j in here], None, free, f"(2) GPUs of {n}")
        for name, scale, cap, used, req in (("CPUs", cpu, state.cap_cpus, state.used_cpus, state.pod_cpus), ("memory", mem, state.cap_mem, state.used_mem, state.pod_mem)):
            m.row([(x[j, n], scale.request(float(req[jobs[j][0]]))) for j in here], None,
                  scale.capacity(float(cap[n])) - scale.request(float(used[n])), f"(2) {name} of {n}")
        groups: dict[int, list[str]] = {}
        for j in here:
            for g in state.pod_groups[jobs[j][0]]:
                groups.setdefault(g, []).append(j)
        for g, members in groups.items():
            if len(members) > 1:
                m.row([(x[j, n], 1) for j in members], None, 1, f"(5) group {g} on {n}")
    gpus = {j: int(state.pod_whole[jobs[j][0]]) or 1 for j in names}
    # phase 1: most GPUs started
    placed = [(v, gpus[j]) for (j, _), v in x.items()]
    m.maximize(placed)
    start_hint = _hint(m, x, u, z, hint, domain_of) if hint else None
    first = solve(m, solver, time_limit_s, workers, start_hint, deterministic=solver == "cpsat")
    fields: dict[str, Any] = {"variables": m.num_vars, "rows": m.num_rows, "phase1": first.status, "phase1_s": round(first.wall_s, 3)}
    if first.values is None:
        return JointResult({}, first.status if first.status != "infeasible" else "infeasible", first.bound, None, exact, fields)
    best_gpus = round(first.objective or 0)
    # phase 2: fewest switches with the GPUs held
    second_model = m.with_objective([(v, -1) for v in u.values()], rows=[(placed, best_gpus, None, "phase 1 held")])
    remaining = max(0.5, time_limit_s - first.wall_s)
    warm = first.values
    if start_hint is not None and sum(start_hint[v] * w for v, w in placed) >= best_gpus:
        warm = start_hint  # the heuristic already starts as many GPUs: its switches are the bar to beat
    elif greedy_for is not None:
        # the heuristic on exactly the jobs phase 1 started often starts them all, on fewer switches
        started = [j for j in names if first.values[z[j]]]
        again = greedy_for(started)
        repaired = _hint(m, x, u, z, again, domain_of) if again else None
        if repaired is not None and sum(repaired[v] * w for v, w in placed) >= best_gpus:
            warm = repaired
    second = solve(second_model, solver, remaining, workers, warm, deterministic=solver == "cpsat")
    fields.update(phase2=second.status, phase2_s=round(second.wall_s, 3))
    values = second.values if second.values is not None else warm
    assignment: dict[str, list[tuple[int, int]]] = {}
    for j in names:
        if not values[z[j]]:
            continue
        queue = iter(jobs[j])
        assignment[j] = [(next(queue), n) for n in nodes_of[j] for _ in range(values[x[j, n]])]
    proven = first.status == "optimal" and second.status == "optimal"
    switches_bound = None
    if exact and first.status == "optimal":
        switches_bound = -second.bound if second.bound is not None else None
        if relaxed is not None and relaxed[0] <= best_gpus:  # the relaxation's switch bound holds at these GPUs
            switches_bound = max(switches_bound or 0.0, float(relaxed[1]))
    if switches_bound is not None:
        used = sum(1 for v in u.values() if values[v])
        proven = proven or (first.status == "optimal" and used <= switches_bound)
    status = "optimal" if proven and exact else "feasible"
    return JointResult(assignment, status, first.bound if exact else None, switches_bound, exact, fields)


def switch_bounds(
    state: ClusterState, jobs: dict[str, list[int]], levels: dict[str, tuple[str, bool]], minimum: dict[str, int],
    solver: str, time_limit_s: float, workers: int,
) -> tuple[int, int, bool] | None:
    """Bounds from a relaxation at switch level: y[j, d] pods of job j under switch d, at most what d
    could take of j alone, and each switch's GPUs, CPUs and memory summed over its nodes (node
    packing ignored, so every node-level solution is a solution here). Returns (most GPUs, fewest
    switches with those GPUs, both proven) or None when a solve gives no bound."""
    m = Milp()
    names = sorted(jobs)
    domains = state.asw_domain
    ids, inverse = np.unique(domains, return_inverse=True)
    y: dict[tuple[str, int], int] = {}
    u: dict[tuple[str, int], int] = {}
    z = {j: m.var(f"z[{j}]") for j in names}
    gpus = {j: int(state.pod_whole[jobs[j][0]]) or 1 for j in names}
    for j in names:
        level_domains = domains if levels[j][0] == "asw" else state.spine_domain
        slots = np.bincount(inverse, weights=node_slots(state, jobs[j][0]), minlength=len(ids)).astype(np.int64)
        for d in np.flatnonzero(slots > 0).tolist():
            bound = min(int(slots[d]), len(jobs[j]))
            y[j, d] = m.var(f"y[{j},{d}]", 0, bound)
            u[j, d] = m.var(f"u[{j},{d}]")
            m.row([(y[j, d], 1), (u[j, d], -bound)], None, 0, f"use {j} {d}")
        terms = [(v, 1) for (jj, _), v in y.items() if jj == j]
        m.row([*terms, (z[j], -len(jobs[j]))], None, 0, f"at most N [{j}]")
        m.row([*terms, (z[j], -minimum[j])], 0, None, f"at least k [{j}]")
        if levels[j][1]:
            if levels[j][0] != "asw":
                return None  # spine-required jobs: the asw relaxation would not bound them
            m.row([(u[j, d], 1) for (jj, d) in u if jj == j], None, 1, f"one switch [{j}]")
    free_gpu = np.bincount(inverse, weights=state.cap_gpus - state.whole_used - state.share_devices, minlength=len(ids))
    cpu = scale_for([float(state.pod_cpus[jobs[j][0]]) for j in names], [])
    mem = scale_for([float(state.pod_mem[jobs[j][0]]) for j in names], [])
    free_cpu = np.bincount(inverse, weights=state.cap_cpus - state.used_cpus, minlength=len(ids))
    free_mem = np.bincount(inverse, weights=state.cap_mem - state.used_mem, minlength=len(ids))
    for d in range(len(ids)):
        here = [j for j in names if (j, d) in y]
        if not here:
            continue
        m.row([(y[j, d], int(state.pod_whole[jobs[j][0]]) + (1 if state.pod_share[jobs[j][0]] > 0 else 0)) for j in here], None, int(free_gpu[d]), f"GPUs {d}")
        # relaxed units are fine here: requests rounded down and room rounded up keep it a relaxation
        m.row([(y[j, d], cpu.request(float(state.pod_cpus[jobs[j][0]]))) for j in here], None,
              int(np.ceil((free_cpu[d] + 1e-6) * cpu.unit)), f"CPUs {d}")
        m.row([(y[j, d], mem.request(float(state.pod_mem[jobs[j][0]]))) for j in here], None,
              int(np.ceil((free_mem[d] + 1e-6) * mem.unit)), f"memory {d}")
    placed = [(v, gpus[j]) for (j, _), v in y.items()]
    m.maximize(placed)
    first = solve(m, solver, time_limit_s, workers, None, deterministic=solver == "cpsat")
    if first.bound is None or first.values is None:
        return None
    most = int(np.floor(first.bound + 1e-6))
    second = solve(m.with_objective([(v, -1) for v in u.values()], rows=[(placed, most, None, "GPUs held")]),
                   solver, time_limit_s, workers, None, deterministic=solver == "cpsat")
    if second.bound is None:
        return None
    fewest = int(np.ceil(-second.bound - 1e-6))
    return most, fewest, first.status == "optimal" and second.status in ("optimal", "infeasible") and second.values is not None


def _hint(m: Milp, x: dict, u: dict, z: dict, hint: dict[str, list[tuple[int, int]]], domain_of: dict) -> list[int] | None:  # type: ignore[type-arg]
    values = [0] * m.num_vars
    for j, pairs in hint.items():
        if j not in z:
            continue
        values[z[j]] = 1
        for _, n in pairs:
            if (j, n) not in x:
                return None
            values[x[j, n]] += 1
            values[u[j, int(domain_of[j][n])]] = 1
    return values
