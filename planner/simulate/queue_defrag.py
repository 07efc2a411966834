"""Defrag when stuck, for the queueing replay (``simulate/queueing.py``): the replay's state as a
planner snapshot, the planner's make-room plan for the blocked head, and that plan as replay moves.

The snapshot holds the nodes the head may use (``Node`` ``n<index>``, the replay's GPUs, CPUs and
memory not modelled: one CPU per node and pods asking none), every running pod on them
(``<job>/<pod>``; locked unless it is smaller than a node: gangs spanning nodes and node-sized pods
do not migrate) and the head's pods pending. ``plan_defrag(make_room=[head], max_moves=...)`` returns
the validated plan (make-before-break waves, then the head's placements), so the replay applies
exactly what the planner would hand an operator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.cluster import Cluster, Job, Node, Pod
from planner.engine.defrag import DefragOptions, plan_defrag
from planner.plans import DefragPlan


@dataclass
class RunningPod:
    job: str
    pod: int  # index among the job's pods
    node: int
    gpus: int
    movable: bool


@dataclass
class RoomPlan:
    moves: list[tuple[str, int, int, int]]  # (job, pod, from node, to node) in execution order
    head_nodes: list[int]  # per head pod, its node


def node_name(n: int) -> str:
    return f"n{n:05d}"


def plan_room(
    free: np.ndarray, gpus_per_node: int, pods: list[RunningPod], head: str, head_pods: list[int], lo: int, hi: int, max_moves: int, seed: int = 0
) -> RoomPlan | None:
    """The planner's make-room plan for ``head`` (pods of ``head_pods`` GPUs) on the nodes [lo, hi),
    at most ``max_moves`` migrations; None when it cannot start the head there."""
    nodes = [Node(name=node_name(n), gpus=gpus_per_node, cpus=1.0, memory_gib=0.0) for n in range(lo, hi)]
    snapshot_pods, jobs = [], {head: Job(name=head)}
    for p in pods:
        if lo <= p.node < hi:
            jobs.setdefault(p.job, Job(name=p.job))
            snapshot_pods.append(Pod(name=f"{p.job}/{p.pod}", job=p.job, node=node_name(p.node), gpus=p.gpus, cpus=0.0, locked=not p.movable))
    snapshot_pods += [Pod(name=f"{head}/{k}", job=head, gpus=g, cpus=0.0) for k, g in enumerate(head_pods)]
    cluster = Cluster(time_s=0.0, nodes=nodes, pods=snapshot_pods, jobs=list(jobs.values()))
    plan = plan_defrag(cluster, DefragOptions(method="heuristic", make_room=[head], max_moves=max_moves, seed=seed))
    assert isinstance(plan, DefragPlan)  # one method, not a comparison
    if plan.unplaced or not plan.placements:
        return None
    moves = []
    for move in plan.moves():
        job, pod = move.pod.rsplit("/", 1)
        moves.append((job, int(pod), int(move.from_[1:]), int(move.to[1:])))
    placed = {p.pod: int(p.node[1:]) for p in plan.placements}
    return RoomPlan(moves, [placed[f"{head}/{k}"] for k in range(len(head_pods))])
