"""Make room for named pending jobs (``defrag --make-room``): the request checked, the heuristic run,
its moves turned into waves and its placements listed after the last wave.

A name is a pending job (its pods with ``node: null``, one shape) or a pending pod of no job. Bad
names are refused with ``PlanOptionError("make_room", ...)`` naming them (exit 2, HTTP 422).
The plan itself is assembled and validated by ``engine.defrag`` like every defrag plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.cluster import Cluster
from planner.engine.allocate import _refuse_unholdable, _shape
from planner.engine.defrag import PlanOptionError
from planner.heuristics.makeroom import Request, make_room
from planner.limits import MoveBudget
from planner.plans import Placement, Unplaced
from planner.state import ClusterState
from planner.waves import Step, sequence_to_waves


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
                if _shape(cluster.pods[i]) != _shape(cluster.pods[own[0]]):
                    raise PlanOptionError(
                        "make_room", f"pods[{i}] of job '{name}' differs in shape or rules from '{cluster.pods[own[0]].name}'; a job's pods must be alike"
                    )
            topology = jobs[name].topology
            level = {"asw": 1, "spine": 2}[topology.level] if topology is not None and topology.mode == "required" else 0
            requests.append(Request(name, own, level))
        elif name in pods:
            pod = cluster.pods[pods[name]]
            if pod.job is not None:
                raise PlanOptionError("make_room", f"pod '{name}' belongs to job '{pod.job}'; name the job")
            if pod.node is not None:
                raise PlanOptionError("make_room", f"pod '{name}' is already running on node '{pod.node}'")
            requests.append(Request(name, [pods[name]], 0))
        else:
            raise PlanOptionError("make_room", f"unknown job or pod '{name}'")
        _refuse_unholdable(cluster, requests[-1].pods[0])
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
