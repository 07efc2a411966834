"""Make room for named pending jobs (``defrag --make-room``): the request checked, the heuristic run,
its moves turned into waves and its placements listed after the last wave.

A name is a pending job (its pods with ``node: null``, one shape) or a pending pod of no job. Bad
names are refused with ``PlanOptionError("make_room", ...)`` naming them (exit 2, HTTP 422).
The plan itself is assembled and validated by ``engine.defrag`` like every defrag plan.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from planner.cluster import Cluster
from planner.engine.common import (
    PlanOptionError,
    lost_work,
    pod_shape,
    refuse_unholdable,
)
from planner.heuristics.makeroom import make_room
from planner.heuristics.room import Request
from planner.limits import MoveBudget
from planner.models import makeroom as makeroom_model
from planner.plans import Placement, Unplaced
from planner.state import ClusterState
from planner.suggest import unknown_name
from planner.waves import Step, sequence_to_waves, target_to_waves


@dataclass
class MadeRoom:
    """The heuristic's result in plan terms: waves (state indexes), placements, unplaced, per-job report."""

    waves: list[list[Step]]
    placements: list[Placement]
    unplaced: list[Unplaced]
    per_job: dict[str, Any]


def make_room_requests(cluster: Cluster, names: list[str]) -> list[Request]:
    """The named pending jobs and lone pending pods as requests; refuses what cannot be made room for."""
    if not names:
        raise PlanOptionError("make_room", "name at least one pending job, or pending pod without a job")
    jobs = {job.name: job for job in cluster.jobs}
    pods = {pod.name: i for i, pod in enumerate(cluster.pods)}
    members: dict[str, list[int]] = {}
    for i, pod in enumerate(cluster.pods):
        if pod.job is not None:
            members.setdefault(pod.job, []).append(i)
    requests: list[Request] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise PlanOptionError("make_room", f"'{name}' is named twice")
        seen.add(name)
        if name in jobs:
            own = members.get(name, [])
            running = [i for i in own if cluster.pods[i].node is not None]
            if not own:
                raise PlanOptionError("make_room", f"job '{name}' has no pending pod (it has no pods at all)")
            if running:
                state = "already running" if len(running) == len(own) else f"already running ({len(running)} of its {len(own)} pods are placed)"
                raise PlanOptionError("make_room", f"job '{name}' is {state}; make room starts jobs none of whose pods run")
            for i in own[1:]:
                if pod_shape(cluster.pods[i]) != pod_shape(cluster.pods[own[0]]):
                    raise PlanOptionError(
                        "make_room", f"pods[{i}] of job '{name}' differs in shape or rules from '{cluster.pods[own[0]].name}'; a job's pods must be alike"
                    )
            topology = jobs[name].topology
            level = {"asw": 1, "spine": 2}[topology.level] if topology is not None and topology.mode == "required" else 0
            least = jobs[name].min_available  # the job starts with that many of its pods (the others where they fit)
            requests.append(Request(name, own, level, least if least is not None and least < len(own) else None))
        elif name in pods:
            pod = cluster.pods[pods[name]]
            if pod.job is not None:
                raise PlanOptionError("make_room", f"pod '{name}' belongs to job '{pod.job}'; name the job")
            if pod.node is not None:
                raise PlanOptionError("make_room", f"pod '{name}' is already running on node '{pod.node}'")
            requests.append(Request(name, [pods[name]], 0))
        else:
            waiting = {p.job or p.name for p in cluster.pods if p.node is None}
            raise PlanOptionError("make_room", unknown_name("job or pod", name, [*jobs, *pods], pending=list(waiting), pending_what="pending jobs and pods"))
        refuse_unholdable(cluster, requests[-1].pods[0])
    return requests


def run_make_room(cluster: Cluster, state: ClusterState, names: list[str], budget: MoveBudget, seed: int) -> MadeRoom:
    """Make room for ``names`` on ``state`` (left at the end of the last wave, before the placements)."""
    requests = make_room_requests(cluster, names)
    outcomes = make_room(state, requests, budget, seed)
    pod_names, node_names = state.pod_names, state.node_names
    placements: list[Placement] = []
    unplaced: list[Unplaced] = []
    per_job: dict[str, Any] = {}
    for outcome in outcomes:
        if outcome.reason is not None:
            unplaced.append(Unplaced(job=outcome.name, reason=outcome.reason))
            per_job[outcome.name] = {"placed": False, "reason": outcome.reason}
            continue
        placements += [Placement(pod=pod_names[q], node=node_names[n]) for q, n in outcome.placements]
        per_job[outcome.name] = {
            "placed": True,
            "moves": len(outcome.moves),
            "gpus_moved": round(float(sum(state.pod_gpus[p] for p, _, _ in outcome.moves)), 6),
            "nodes": sorted({node_names[n] for _, n in outcome.placements}),
            **lost_work(cluster, [cluster.pods[p] for p in dict.fromkeys(p for p, _, _ in outcome.moves)]),
        }
    for outcome in outcomes:
        for q, _ in outcome.placements:
            state.unplace(q)
    order = {name: k for k, name in enumerate(names)}
    unplaced.sort(key=lambda u: order[u.job])
    return MadeRoom(
        waves=sequence_to_waves(m for o in outcomes for m in o.moves),
        placements=placements,
        unplaced=unplaced,
        per_job={name: per_job[name] for name in names},
    )


def run_make_room_exact(
    cluster: Cluster,
    state: ClusterState,
    names: list[str],
    budget: MoveBudget,
    solver: str,
    time_limit_s: float,
    workers: int,
    seed: int,
    deterministic: bool,
) -> tuple[MadeRoom, dict[str, Any], dict[str, Any]]:
    """The exact model's end state turned into waves by the router (``waves.target_to_waves``, as
    ``models/defrag_exact.py`` does for defrag), the jobs started on the state after the last wave, and what is
    proven about the executed plan: (made room, solver fields, report fields). ``state`` is left at
    the end of the last wave."""

    requests = make_room_requests(cluster, names)
    refuse_exact_shares(cluster, requests)
    # the heuristic first, on a copy: its nodes join the neighbourhood, its end state is the hint,
    # and its plan is returned when the exact plan turns out worse (fewer jobs, or more moves)
    clock = time.perf_counter()
    h_state = state.clone()
    h_state.pod_locked = state.pod_locked.copy()
    heuristic = run_make_room(cluster, h_state, names, budget.copy(), seed)
    pod_index = {name: i for i, name in enumerate(state.pod_names)}
    node_index = {name: n for n, name in enumerate(state.node_names)}
    h_pairs = [(pod_index[p.pod], node_index[p.node]) for p in heuristic.placements]
    h_started = {r.name: [(q, n) for q, n in h_pairs if q in set(r.pods)] for r in requests}
    h_started = {name: pairs for name, pairs in h_started.items() if pairs}
    time_limit_s = max(0.2, time_limit_s - (time.perf_counter() - clock))
    solution = makeroom_model.solve_make_room(
        state, requests, budget, solver, time_limit_s, workers, seed, deterministic, known=(h_state.pod_node.copy(), h_started)
    )
    executed = target_to_waves(state, solution.target, budget)
    pod_names, node_names = state.pod_names, state.node_names
    placements: list[Placement] = []
    unplaced: list[Unplaced] = []
    per_job: dict[str, Any] = {}
    started: list[int] = []
    moves = [step for wave in executed.waves for step in wave]
    for r in requests:
        pairs = solution.placements.get(r.name)
        reason = None
        if pairs is None:
            reason = _why_not_started(solution, len(requests))
        else:
            placed = []
            for q, n in pairs:
                if not state.fits(q, n):
                    break
                state.place(q, n)
                placed.append((q, n))
            started += [q for q, _ in placed]
            if len(placed) < len(pairs):
                reason = (
                    f"the exact end state starts it, but the router could not reach that state within the move budgets "
                    f"({len(executed.dropped)} move(s) dropped): no plan is claimed"
                )
                for q, _ in placed:
                    state.unplace(q)
                    started.remove(q)
        if reason is not None:
            unplaced.append(Unplaced(job=r.name, reason=reason))
            per_job[r.name] = {"placed": False, "reason": reason}
            continue
        assert pairs is not None  # no reason: the solution starts the job
        nodes = {n for _, n in pairs}
        own = moves if len(requests) == 1 else [m for m in moves if m[1] in nodes]
        placements += [Placement(pod=pod_names[q], node=node_names[n]) for q, n in pairs]
        per_job[r.name] = {
            "placed": True,
            "moves": len(own),
            "gpus_moved": round(float(sum(state.pod_gpus[p] for p, _, _ in own)), 6),
            "nodes": sorted(node_names[n] for n in nodes),
            **lost_work(cluster, [cluster.pods[p] for p in dict.fromkeys(p for p, _, _ in own)]),
        }
    for q in started:
        state.unplace(q)
    jobs_started = len(requests) - len(unplaced)
    gpus_moved = float(sum(state.pod_gpus[p] for p, _, _ in moves))
    as_modelled = (
        jobs_started == len(solution.placements) and len(moves) == solution.moves and not executed.dropped and math.isclose(gpus_moved, solution.gpus_moved)
    )
    proven = solution.status == "optimal" and as_modelled and solution.jobs_bound == len(solution.placements)
    hood = solution.neighbourhood
    if proven and not hood.restricted:
        status = "optimal" if jobs_started else "infeasible"
    elif solution.status in ("timeout", "error", "infeasible") and not solution.placements:
        status = "timeout" if solution.status == "timeout" else "feasible"
    else:
        status = "feasible"
    report: dict[str, Any] = {
        **hood.describe(),
        "optimal_within_neighbourhood": proven,
        "model_status": solution.status,
        "model_jobs_started": len(solution.placements),
        "model_moves": solution.moves,
        "model_gpus_moved": solution.gpus_moved,
        "jobs_bound": None if hood.restricted else solution.jobs_bound,
        "moves_bound": None if hood.restricted else solution.moves_bound,
        "routed_moves": executed.routed,
        "dropped_moves": len(executed.dropped),
        "solver_workers": solution.workers,
        "variables": solution.variables,
        "constraints": solution.constraints,
        "solves": solution.records,
    }
    if hood.restricted:
        report["jobs_bound_within_neighbourhood"] = solution.jobs_bound
        report["moves_bound_within_neighbourhood"] = solution.moves_bound
    order = {name: k for k, name in enumerate(names)}
    unplaced.sort(key=lambda u: order[u.job])
    made = MadeRoom(waves=executed.waves, placements=placements, unplaced=unplaced, per_job={name: per_job[name] for name in names})
    h_moves = [step for wave in heuristic.waves for step in wave]
    h_jobs = len(requests) - len(heuristic.unplaced)
    h_gpus = float(sum(state.pod_gpus[p] for p, _, _ in h_moves))
    report.update(hint_used=solution.hinted, heuristic_jobs_started=h_jobs, heuristic_moves=len(h_moves), heuristic_gpus_moved=round(h_gpus, 6))
    if h_jobs > jobs_started or (h_jobs == jobs_started and len(h_moves) < len(moves)):
        # the exact plan is worse than the heuristic's: undo it on ``state`` and make the heuristic's moves
        for p, source, _ in reversed(moves):
            state.move(p, source)
        for p, _, destination in h_moves:
            state.move(p, destination)
        # the heuristic's plan is optimal only where it meets what the model proved (over the whole
        # problem for ``optimal``, over the neighbourhood, which holds its nodes, for the other claim)
        meets = (
            solution.status == "optimal"
            and solution.jobs_bound == h_jobs == len(solution.placements)
            and len(h_moves) == solution.moves
            and math.isclose(h_gpus, solution.gpus_moved)
        )
        status = "optimal" if meets and not hood.restricted else "feasible"
        report.update(
            chosen="heuristic",
            optimal_within_neighbourhood=meets,
            chosen_why=f"the exact plan starts {jobs_started} job(s) with {len(moves)} move(s), the heuristic's {h_jobs} with {len(h_moves)}",
        )
        return heuristic, {"solver": solver, "status": status, "bound": None}, report
    report["chosen"] = "exact"
    return made, {"solver": solver, "status": status, "bound": None}, report


def refuse_exact_shares(cluster: Cluster, requests: list[Request]) -> None:
    """The exact model starts whole-GPU pods only (GPU shares pack onto devices, which it does not model)."""
    for r in requests:
        gpus = cluster.pods[r.pods[0]].gpus
        if gpus != int(gpus):
            raise PlanOptionError("method", f"the exact make-room model starts whole-GPU pods; '{r.name}' asks for {gpus:g} GPU(s): use {{method=heuristic}}")


def _why_not_started(solution: Any, jobs: int) -> str:
    if solution.status == "timeout":
        return "the solver found no solution within the time limit"
    together = " together with the jobs that start" if jobs > 1 else ""
    if solution.status == "optimal" and solution.neighbourhood.restricted:
        # a proof over a restriction of the problem says nothing about the problem asked
        return f"no plan starts it{together} within the neighbourhood searched (restricted: see the report); not a proof that none exists"
    if solution.status == "optimal":
        return f"proven: no plan starts it{together} within the move budgets"
    return f"the solver's best solution does not start it ({solution.status}, not proven)"
