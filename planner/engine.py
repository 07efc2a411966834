"""The planner proper: run a defrag method, build waves, validate, and report how the plan was obtained.

``plan_defrag`` is a pure function of the cluster and the options (deterministic for a seed, whatever
the number of workers). Every plan it returns has passed ``validate``; an invalid plan is a bug and
raises ``PlanBug`` instead of being returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from planner import metrics
from planner.cluster import Cluster
from planner.executors import executor
from planner.heuristics import baselines
from planner.heuristics.ipc import IpcOptions, run_ipc
from planner.plans import DefragPlan, Move, PlanMetrics, SolveReport
from planner.state import ClusterState
from planner.validate import validate
from planner.waves import Step, sequence_to_waves

Method = Literal["heuristic", "random", "descheduler", "repack"]
Progress = Callable[[str, int, int], None]


class PlanBug(RuntimeError):
    """A planner produced a plan that does not validate: a bug, never returned to a user."""


class DefragOptions(BaseModel):
    """Options of ``plan_defrag``; out-of-range values are rejected with the option's name."""

    model_config = ConfigDict(extra="forbid")
    method: Method = "heuristic"
    partition_size: int = Field(500, ge=2, description="Nodes per IPC partition.")
    depth: int = Field(3, ge=1, description="K: longest ejection chain.")
    rounds: int = Field(5, ge=1, description="R: IPC rounds (fresh random partition each).")
    seed: int = Field(0, description="Random seed; same snapshot and seed, same plan.")
    max_moves: int | None = Field(None, ge=0, description="Migration budget for the whole plan.")
    max_moves_per_node: int | None = Field(None, ge=0, description="Moves touching any one node (as source or destination).")
    same_asw: bool = Field(False, description="Pods move only within their access switch.")
    threshold: float = Field(0.5, gt=0, le=1, description="Baselines: GPU allocation below which a node is drained.")
    workers: int | None = Field(None, ge=1, description="Worker processes for partitions (default: one per core).")


def plan_defrag(cluster: Cluster, options: DefragOptions | None = None, progress: Progress | None = None) -> DefragPlan:
    """A validated defragmentation plan for ``cluster``."""
    options = options or DefragOptions()
    start = time.perf_counter()
    state = ClusterState(cluster)
    before = metrics.summary(state)
    extra: dict[str, Any] = {}
    if options.method == "heuristic":
        ipc_options = IpcOptions(
            partition_size=options.partition_size,
            depth=options.depth,
            rounds=options.rounds,
            seed=options.seed,
            max_moves=options.max_moves,
            max_moves_per_node=options.max_moves_per_node,
            same_asw=options.same_asw,
        )
        with executor(options.workers) as run:
            result = run_ipc(state, ipc_options, run, progress)
        steps = sequence_to_waves(result.sequence)
        extra.update(
            rounds_run=result.rounds_run,
            partitions=result.partitions,
            candidates_tried=result.candidates_tried,
            vacated_per_round=result.vacated_per_round,
        )
        method_name = "ipc"
    elif options.method == "repack":
        outcome = baselines.repack(state)
        steps = outcome.waves or []
        extra.update(dropped_moves=outcome.dropped, routed_moves=outcome.routed, target_vacated=outcome.target_vacated)
        method_name = "repack"
    else:
        policy = "random" if options.method == "random" else "binpack"
        outcome = baselines.evict_and_replace(
            state, policy, options.threshold, options.seed, options.max_moves, options.max_moves_per_node
        )
        steps = sequence_to_waves(outcome.sequence)
        extra.update(threshold=options.threshold)
        method_name = options.method
    plan = _assemble(cluster, state, steps, before)
    moves = plan.moves()
    pods = {p.name: p for p in cluster.pods}
    wall_s = time.perf_counter() - start
    plan.report = SolveReport(
        method=method_name,
        solver=None,
        status="heuristic",
        objective=plan.metrics.after["empty_nodes"],
        bound=None,
        gap=None,
        wall_s=round(wall_s, 3),
        seed=options.seed,
        moves=len(moves),
        gpus_moved=round(sum(pods[m.pod].gpus for m in moves), 6),
        waves=len(plan.waves),
        vacated_nodes=len(plan.vacated_nodes),
        **extra,
        **({} if moves else {"reason": why_nothing_moved(state, options)}),
    )
    violations = validate(cluster, plan)
    if violations:
        raise PlanBug(f"{method_name} produced an invalid plan: " + "; ".join(map(str, violations[:5])))
    plan.report.wall_s = round(time.perf_counter() - start, 3)
    return plan


def _assemble(cluster: Cluster, state: ClusterState, steps: list[list[Step]], before: dict) -> DefragPlan:
    """Plan from waves of index triples; ``state`` is already the end state."""
    nodes = [n.name for n in cluster.nodes]
    pods = [p.name for p in cluster.pods]
    waves = [[Move(pod=pods[p], **{"from": nodes[s]}, to=nodes[d]) for p, s, d in wave] for wave in steps]
    after = metrics.summary(state)
    busy_before = np.array([False] * len(nodes))
    for p in cluster.pods:
        if p.node is not None:
            busy_before[state.node_index[p.node]] = True
    vacated = [nodes[n] for n in np.flatnonzero(busy_before & (state.pods_per_node == 0))]
    return DefragPlan(waves=waves, vacated_nodes=vacated, metrics=PlanMetrics(before=before, after=after))


def why_nothing_moved(state: ClusterState, options: DefragOptions) -> str:
    """A human reason for an empty plan."""
    busy = state.pods_per_node > 0
    if not busy.any():
        return "the cluster has no running pods"
    locked_nodes = np.zeros(len(state.node_names), dtype=bool)
    locked_nodes[state.pod_node[state.pod_locked & (state.pod_node >= 0)]] = True
    if not (busy & ~locked_nodes).any():
        return "every node holding pods also holds a locked pod, so no node can be vacated"
    if options.max_moves == 0:
        return "the migration budget (max_moves) is 0"
    if options.max_moves_per_node == 0:
        return "the per-node migration budget (max_moves_per_node) is 0"
    if busy.sum() < 2:
        return "only one node holds pods"
    if options.method == "heuristic":
        return (
            f"no candidate node could be vacated: some pod of each fits on no other busy node, "
            f"even after ejection chains of depth {options.depth}"
        )
    return f"{options.method} found no pod to move"
