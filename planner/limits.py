"""What a user allows a plan's moves to do beyond the feasibility rules, and the running account of it.

Three limits on the plan's moves: a migration budget for the whole plan (``max_moves``), a budget per
node (moves that touch it, as source or destination: ``max_moves_per_node``), and staying under one
access switch (``same_asw``: every single move keeps its pod under the switch it leaves). Four more
on each wave, the disruption operators allow at once: moves per wave, nodes a wave touches, moves
touching one node per wave (koordinator's migration controller, for one, allows 2 migrating pods per
node) and moves of one namespace's pods per wave (its ``maxMigratingPerNamespace``). Per-wave limits
never cost a move: a wave's moves are independent, so any wave can be split into several
(``waves.shape_waves``); they cost waves. A job's disruption budget
(``disruption.max_unavailable``, from its PodDisruptionBudget, or ``max_unavailable_per_job``) is
one more per-wave limit, on the job's pods. The namespace scope (``only_namespaces``,
``exclude_namespaces``) holds pods out of scope in place, as a budget of 0 holds its job's pods.

* ``MoveLimits`` is the request, as the user gave it.
* ``MoveBudget`` is its account on one ``ClusterState``: moves left, moves each node may still take
  part in, and the switch of each node. Every planner that moves pods takes the same budget: IPC,
  the baselines, the exact model (its rows come from it), the router that turns a solver's final
  state into waves, and the hybrid's neighbourhoods (``subset``). A planner that spends a move calls
  ``spend``; one that plans ahead reserves with ``spend`` and gives back with ``refund``.

``validate.limit_violations`` checks a finished plan against ``MoveLimits`` independently of this
account, and the engine runs it on every plan before returning it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from planner.cluster import Cluster, Pod
    from planner.state import ClusterState

UNLIMITED = 1 << 40
"""Stands for "no limit" in the integer account."""


@dataclass(frozen=True)
class MoveLimits:
    """The limits a user puts on a plan's moves (None: no limit)."""

    max_moves: int | None = None
    max_moves_per_node: int | None = None
    same_asw: bool = False
    max_moves_per_wave: int | None = None
    max_nodes_per_wave: int | None = None
    """Nodes a wave touches (as source or destination), resolved to a count."""
    max_moves_per_node_per_wave: int | None = None
    max_unavailable_per_job: int | None = None
    """Pods of one job moving in one wave, for jobs without their own ``disruption.max_unavailable``."""
    only_namespaces: tuple[str, ...] | None = None
    """Only pods of these namespaces may move (None: any)."""
    exclude_namespaces: tuple[str, ...] = ()
    """Pods of these namespaces never move."""
    move_once: bool = False
    """Every pod moves at most once in the plan (no detour parks one; a plan that moves one twice is
    routed again from its end state)."""
    max_moves_per_namespace: int | None = None
    """Moves of one namespace's pods in one wave (koordinator's ``maxMigratingPerNamespace``: migrations
    at once); a pod without a namespace is in 'default'."""

    @property
    def any(self) -> bool:
        return (
            self.max_moves is not None
            or self.max_moves_per_node is not None
            or self.same_asw
            or self.shapes_waves
            or self.only_namespaces is not None
            or bool(self.exclude_namespaces)
            or self.move_once
        )

    @property
    def shapes_waves(self) -> bool:
        """Whether a per-wave limit is set: those never drop a move, they split waves (``waves.shape_waves``).
        Jobs' own disruption budgets shape waves too, whatever the limits."""
        return (
            self.max_moves_per_wave is not None
            or self.max_nodes_per_wave is not None
            or self.max_moves_per_node_per_wave is not None
            or self.max_unavailable_per_job is not None
            or self.max_moves_per_namespace is not None
        )

    def may_move(self, pod: Pod) -> bool:
        """Whether the namespace scope lets ``pod`` move (a pod without a namespace is in 'default')."""
        namespace = pod.namespace or "default"
        return namespace not in self.exclude_namespaces and (self.only_namespaces is None or namespace in self.only_namespaces)


def unavailable_limits(cluster: Cluster, default: int | None) -> dict[str, tuple[str, int]]:
    """Per pod (by name) of a job with a disruption budget, (its job, how many of the job's pods may
    move in one wave): the job's ``disruption.max_unavailable`` (a PodDisruptionBudget), else
    ``default`` (``--max-unavailable-per-job``). Make-before-break keeps each pod serving until its copy
    runs, but the old copy is evicted through the Eviction API, which the budget guards, so a wave
    evicts at most that many of a job's pods. 0 holds the job's pods in place."""
    budgets = {job.name: job.disruption.max_unavailable for job in cluster.jobs if job.disruption is not None}
    limits = {}
    for pod in cluster.pods:
        if pod.job is None:
            continue
        limit = budgets.get(pod.job, default)
        if limit is not None:
            limits[pod.name] = (pod.job, limit)
    return limits


def namespace_limits(cluster: Cluster, limit: int | None) -> dict[str, tuple[str, int]]:
    """Per pod (by name), (its namespace, how many of the namespace's pods may move in one wave);
    empty without ``--max-moves-per-namespace``."""
    if limit is None:
        return {}
    return {pod.name: (pod.namespace or "default", limit) for pod in cluster.pods if pod.node is not None}


class MoveBudget:
    """The limits' account on a state: ``moves_left``, ``node_left[n]`` and, under same_asw, ``asw[n]``."""

    def __init__(self, moves_left: int, node_left: np.ndarray, asw: np.ndarray | None, bounded_moves: bool, bounded_nodes: bool, move_once: bool = False):
        self.moves_left = int(moves_left)
        self.node_left = node_left.astype(np.int64, copy=True)
        self.asw = asw
        self.bounded_moves = bounded_moves
        self.bounded_nodes = bounded_nodes
        self.move_once = move_once
        """No pod may move twice: the router makes no detours (``waves.target_to_waves``)."""

    @classmethod
    def of(cls, state: ClusterState, limits: MoveLimits | None = None) -> MoveBudget:
        """The untouched account of ``limits`` on ``state`` (no limits when None)."""
        limits = limits or MoveLimits()
        per_node = UNLIMITED if limits.max_moves_per_node is None else limits.max_moves_per_node
        return cls(
            UNLIMITED if limits.max_moves is None else limits.max_moves,
            np.full(len(state.node_names), per_node, dtype=np.int64),
            state.asw_domain.copy() if limits.same_asw else None,
            limits.max_moves is not None,
            limits.max_moves_per_node is not None,
            limits.move_once,
        )

    # -- questions -------------------------------------------------------------------------------

    def allows(self, source: int, destination: int) -> bool:
        """May one more move go from ``source`` to ``destination``?"""
        return self.moves_left >= 1 and self.node_left[source] >= 1 and self.node_left[destination] >= 1 and self.same_switch(source, destination)

    def same_switch(self, source: int, destination: int) -> bool:
        return self.asw is None or self.asw[source] == self.asw[destination]

    def destinations(self, source: int) -> np.ndarray:
        """Mask of nodes a pod on ``source`` may move to as far as the limits go (``source`` included)."""
        mask = self.node_left >= 1
        if self.asw is not None:
            mask &= self.asw == self.asw[source]
        if self.node_left[source] < 1 or self.moves_left < 1:
            mask[:] = False
        return mask

    @property
    def exhausted(self) -> bool:
        return self.moves_left <= 0

    # -- accounting ------------------------------------------------------------------------------

    def spend(self, source: int, destination: int, moves: int = 1) -> None:
        """Account for ``moves`` moves touching ``source`` and ``destination`` once each."""
        self.moves_left -= moves
        self.node_left[source] -= 1
        self.node_left[destination] -= 1

    def refund(self, source: int, destination: int, moves: int = 1) -> None:
        """Give back what ``spend`` took (a reserved move that will not run)."""
        self.moves_left += moves
        self.node_left[source] += 1
        self.node_left[destination] += 1

    def spend_all(self, steps: list[tuple[int, int, int]] | list[list[tuple[int, int, int]]]) -> None:
        """Account for a sequence of moves (or of waves of moves), in this state's indexes."""
        for item in steps:
            for _, source, destination in item if isinstance(item, list) else [item]:
                self.spend(source, destination)

    # -- views -----------------------------------------------------------------------------------

    def copy(self) -> MoveBudget:
        return MoveBudget(
            self.moves_left, self.node_left, None if self.asw is None else self.asw.copy(), self.bounded_moves, self.bounded_nodes, self.move_once
        )

    def subset(self, nodes: np.ndarray) -> MoveBudget:
        """The account for ``ClusterState.subset(nodes)``: the same moves left, these nodes' allowances."""
        nodes = np.asarray(nodes, dtype=np.int64)
        return MoveBudget(
            self.moves_left,
            self.node_left[nodes],
            None if self.asw is None else self.asw[nodes],
            self.bounded_moves,
            self.bounded_nodes,
            self.move_once,
        )

    def max_moves(self) -> int | None:
        return max(self.moves_left, 0) if self.bounded_moves else None
