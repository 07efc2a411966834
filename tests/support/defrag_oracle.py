"""An independent exact oracle for make-before-break defragmentation of tiny snapshots.

The planner's exact methods claim ``status: optimal``, a proven ``bound`` and budget compliance; this
module checks those claims without sharing any code with them. It uses only the snapshot models
(``planner.cluster``) and the single definition of feasibility (``planner.rules``); it imports
nothing from the planner's state arrays, models, solvers, wave builder, heuristics, engine or
validator.

* ``explore`` searches every sequence of SINGLE legal moves from the snapshot. That is exact for
  make-before-break plans: a legal wave stays legal when its moves run one at a time, because at
  every step each node holds a subset of what it holds during the wave (its pods plus the wave's
  arrivals) and no rule breaks when pods are taken away; so every wave plan has a serial plan with
  the same moves, and every serial plan is a plan of one-move waves.
* ``best_plan`` is the lexicographic optimum over the reachable end states: most nodes without a
  pod, then fewest moves, then fewest GPUs moved (a pod moved twice counts twice).
* ``replay`` re-executes a plan wave by wave under make-before-break and raises ``AssertionError``
  at the first illegal step, returning the end positions of every pod.

GPU sums are kept as exact ``Fraction``s of the requests' floats, so ties are never decided by
rounding. The search is breadth-first by number of moves: every move costs one, so the first level
that reaches a state gives its fewest moves, and that level's smallest GPU sum is final.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod

MAX_STATES = 300_000
"""Safety cap on explored search states: the oracle is for tiny snapshots only."""

Assignment = tuple[int, ...]
"""Node index of each movable pod, in ``Problem.movable`` order."""
Touches = tuple[int, ...]
"""Moves touching each node so far (as source or destination); empty when unbudgeted per node."""
Moved = int
"""Bit i set: movable pod i has moved (tracked only under ``move_once``; 0 otherwise)."""
State = tuple[Assignment, Touches, Moved]
Step = tuple[int, int, int]
"""(movable pod, source node, destination node), as indexes."""


@dataclass(frozen=True)
class Cost:
    """Fewest moves of a path to a state, then the fewest GPUs moved among those paths."""

    moves: int
    gpus: Fraction


@dataclass(frozen=True)
class OracleResult:
    """The lexicographic optimum: ``empties`` maximal, then ``moves``, then ``gpus_moved`` minimal."""

    empties: int
    moves: int
    gpus_moved: float
    gpus_exact: Fraction
    end: dict[str, str]
    """End node of every movable pod in one optimal plan."""
    path: list[tuple[str, str, str]]
    """That plan's moves in order, as (pod, from, to)."""
    states: int
    """Search states explored (assignment plus per-node touch counts)."""


class Problem:
    """The movable pods of a snapshot and the single moves the rules allow between their positions."""

    def __init__(
        self,
        cluster: Cluster,
        max_moves: int | None = None,
        max_moves_per_node: int | None = None,
        same_asw: bool = False,
        move_once: bool = False,
        pools: bool = True,
    ) -> None:
        self.cluster = cluster
        self.pools = pools
        self.max_moves = max_moves
        self.max_moves_per_node = max_moves_per_node
        self.same_asw = same_asw
        self.move_once = move_once
        self.nodes: list[Node] = list(cluster.nodes)
        self.node_row = {n.name: i for i, n in enumerate(self.nodes)}
        placed = [(p, self.node_row[p.node]) for p in cluster.pods if p.node is not None]
        self.movable: list[Pod] = [p for p, _ in placed if not p.locked]
        self.start: Assignment = tuple(at for p, at in placed if not p.locked)
        self.fixed: list[Pod] = [p for p, _ in placed if p.locked]
        self.fixed_at: list[int] = [at for p, at in placed if p.locked]
        self.gpus = [Fraction(p.gpus) for p in self.movable]
        jobs: dict[str, Job] = {j.name: j for j in cluster.jobs}
        self.job_of: list[Job | None] = [jobs.get(p.job) if p.job else None for p in self.movable]
        self.locked_nodes_of_job: dict[str, list[Node]] = {}
        for p, at in zip(self.fixed, self.fixed_at):
            if p.job:
                self.locked_nodes_of_job.setdefault(p.job, []).append(self.nodes[at])
        self._breaks = lru_cache(maxsize=None)(self._node_breaks)

    # -- rules -----------------------------------------------------------------------------------

    def _node_breaks(self, node: int, residents: tuple[int, ...], arriving: int) -> bool:
        """Whether movable pod ``arriving`` joining ``node`` (locked pods plus movable ``residents``) breaks a rule."""
        here = [f for f, at in zip(self.fixed, self.fixed_at) if at == node]
        here += [self.movable[i] for i in residents]
        return bool(rules.node_rule_breaks(self.nodes[node], here, [self.movable[arriving]]))

    def _topology_ok(self, i: int, where: Assignment, destination: int) -> bool:
        """Pod ``i``'s job keeps a required topology with its old copy, the new copy and its other pods."""
        job = self.job_of[i]
        if job is None or job.topology is None or job.topology.mode != "required":
            return True
        spots = [self.nodes[at] for k, at in enumerate(where) if self.movable[k].job == job.name]
        spots += self.locked_nodes_of_job.get(job.name, [])
        spots.append(self.nodes[destination])
        return rules.job_topology_ok(job, spots)

    def legal_move(self, where: Assignment, i: int, destination: int, touches: Touches = ()) -> bool:
        """Whether moving movable pod ``i`` from ``where[i]`` to ``destination`` is one legal step."""
        source = where[i]
        if destination == source or not rules.may_receive(self.nodes[destination]):
            return False
        if self.same_asw and rules.topology_domain(self.nodes[source], "asw") != rules.topology_domain(self.nodes[destination], "asw"):
            return False
        if self.pools and not pool_allows(self.cluster, self.movable[i], self.start_node(i), self.nodes[destination]):
            return False
        if self.max_moves_per_node is not None:
            limit = self.max_moves_per_node
            if not touches or touches[source] >= limit or touches[destination] >= limit:
                return False
        residents = tuple(k for k, at in enumerate(where) if at == destination)
        if self._breaks(destination, residents, i):
            return False
        return self._topology_ok(i, where, destination)

    def start_node(self, i: int) -> Node:
        return self.nodes[self.start[i]]

    # -- measures --------------------------------------------------------------------------------

    def empties(self, where: Assignment) -> int:
        """Nodes holding no pod (locked or movable) in the end state ``where``."""
        busy = set(where) | set(self.fixed_at)
        return len(self.nodes) - len(busy)

    def names(self, where: Assignment) -> dict[str, str]:
        return {p.name: self.nodes[at].name for p, at in zip(self.movable, where)}

    def step_names(self, step: Step) -> tuple[str, str, str]:
        i, source, destination = step
        return self.movable[i].name, self.nodes[source].name, self.nodes[destination].name


@dataclass(frozen=True)
class Reachable:
    """Every reachable end assignment with its fewest (moves, GPUs moved), from ``explore``."""

    problem: Problem
    costs: dict[Assignment, Cost]
    reached_by: dict[Assignment, State]
    """The search state in which each assignment got its cost."""
    parent: dict[State, tuple[State, Step]]
    """The previous state and move of the cheapest path to each state."""
    states: int

    def best(self) -> OracleResult:
        """The lexicographic optimum (most empty nodes, fewest moves, fewest GPUs moved)."""
        where, cost = min(self.costs.items(), key=lambda item: (-self.problem.empties(item[0]), item[1].moves, item[1].gpus))
        return OracleResult(
            empties=self.problem.empties(where),
            moves=cost.moves,
            gpus_moved=float(cost.gpus),
            gpus_exact=cost.gpus,
            end=self.problem.names(where),
            path=self.path(where),
            states=self.states,
        )

    def path(self, where: Assignment) -> list[tuple[str, str, str]]:
        """The moves of a cheapest path to the assignment ``where``, first move first."""
        steps = []
        state = self.reached_by[where]
        while state in self.parent:
            state, step = self.parent[state]
            steps.append(self.problem.step_names(step))
        return steps[::-1]

    def fewest(self, at_least_empties: int) -> Cost | None:
        """Fewest (moves, GPUs) of any plan ending with at least ``at_least_empties`` empty nodes."""
        costs = [c for w, c in self.costs.items() if self.problem.empties(w) >= at_least_empties]
        return min(costs, key=lambda c: (c.moves, c.gpus), default=None)

    def by_names(self) -> dict[tuple[tuple[str, str], ...], tuple[int, Fraction]]:
        """For debugging: end positions (pod, node) of the movable pods -> (fewest moves, GPUs)."""
        return {tuple(sorted(self.problem.names(w).items())): (c.moves, c.gpus) for w, c in self.costs.items()}


def pool_allows(cluster: Cluster, pod: Pod, home: Node, destination: Node) -> bool:
    """The planner's default pools, as documented (not as coded): a placed GPU pod stays on its
    GPU product, and a CPU-only pod never arrives on a GPU node, unless no model name tells the
    two kinds of node apart (then that second rule cannot be expressed and does not apply)."""
    if pod.gpus > 0:
        return destination.gpu_model == home.gpu_model
    gpu_models = {n.gpu_model for n in cluster.nodes if n.gpus > 0}
    cpu_models = {n.gpu_model for n in cluster.nodes if n.gpus == 0}
    if gpu_models and cpu_models and not gpu_models & cpu_models:
        return destination.gpus == 0
    return True


def explore(
    cluster: Cluster,
    max_moves: int | None = None,
    max_moves_per_node: int | None = None,
    same_asw: bool = False,
    move_once: bool = False,
    pools: bool = True,
) -> Reachable:
    """Breadth-first search over sequences of single legal moves, within the budgets.

    A state is the assignment of the movable pods plus, under ``max_moves_per_node``, the moves that
    touched each node so far, and under ``move_once`` the pods that have moved (which may not move
    again; two paths to the same assignment with different touch counts or moved pods leave
    different moves possible). Level k holds the states first reached with k moves, each with the
    fewest GPUs moved over k-move paths; a state reached again at a later level is dominated (more
    moves, and no more budget left), so it is not expanded again.
    """
    problem = Problem(cluster, max_moves, max_moves_per_node, same_asw, move_once, pools)
    per_node = max_moves_per_node is not None
    start: State = (problem.start, tuple(0 for _ in problem.nodes) if per_node else (), 0)
    seen: set[State] = {start}
    costs: dict[Assignment, Cost] = {problem.start: Cost(0, Fraction(0))}
    reached_by: dict[Assignment, State] = {problem.start: start}
    parent: dict[State, tuple[State, Step]] = {}
    level: dict[State, Fraction] = {start: Fraction(0)}
    moves = 0
    while level and (max_moves is None or moves < max_moves):
        moves += 1
        following: dict[State, Fraction] = {}
        for (where, touches, moved), gpus in level.items():
            for i in range(len(where)):
                if moved >> i & 1:
                    continue
                for destination in range(len(problem.nodes)):
                    if not problem.legal_move(where, i, destination, touches):
                        continue
                    after = where[:i] + (destination,) + where[i + 1 :]
                    counted = touches
                    if per_node:
                        bumped = list(touches)
                        bumped[where[i]] += 1
                        bumped[destination] += 1
                        counted = tuple(bumped)
                    key = (after, counted, moved | (1 << i) if move_once else 0)
                    if key in seen and key not in following:
                        continue
                    total = gpus + problem.gpus[i]
                    if key not in following or total < following[key]:
                        following[key] = total
                        parent[key] = ((where, touches, moved), (i, where[i], destination))
        for key in following:
            seen.add(key)
        assert len(seen) <= MAX_STATES, (
            f"oracle explored more than {MAX_STATES:,} states: the snapshot is too large for it "
            f"({len(problem.nodes)} nodes, {len(problem.movable)} movable pods)"
        )
        for key, gpus in following.items():
            after = key[0]
            known = costs.get(after)
            if known is None or (known.moves == moves and gpus < known.gpus):
                costs[after] = Cost(moves, gpus)
                reached_by[after] = key
        level = following
    return Reachable(problem, costs, reached_by, parent, len(seen))


def reachable(
    cluster: Cluster,
    max_moves: int | None = None,
    max_moves_per_node: int | None = None,
    same_asw: bool = False,
    move_once: bool = False,
    pools: bool = True,
) -> dict[tuple[tuple[str, str], ...], tuple[int, Fraction]]:
    """Each reachable end state (sorted (pod, node) pairs of the movable pods) -> fewest (moves, GPUs)."""
    return explore(cluster, max_moves, max_moves_per_node, same_asw, move_once, pools).by_names()


def best_plan(
    cluster: Cluster,
    max_moves: int | None = None,
    max_moves_per_node: int | None = None,
    same_asw: bool = False,
    move_once: bool = False,
    pools: bool = True,
) -> OracleResult:
    """Most empty nodes, then fewest moves, then fewest GPUs moved, over every legal plan (each pod
    moved at most once under ``move_once``)."""
    return explore(cluster, max_moves, max_moves_per_node, same_asw, move_once, pools).best()


# ----------------------------------------------------------------------------------------------
# Replay of a plan
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replayed:
    """End positions of every pod (None: pending) and the moves replayed, in order."""

    end: dict[str, str | None]
    moves: list[tuple[str, str, str]]
    """(pod, from, to) of every move, wave after wave."""


def _waves(plan: Any) -> list[list[tuple[str, str, str]]]:
    """The waves of a plan given as a dict (plan format v1) or a plan object, as (pod, from, to)."""
    data: Mapping[str, Any] = plan if isinstance(plan, Mapping) else plan.model_dump(mode="json", by_alias=True)
    return [[(m["pod"], m["from"], m["to"]) for m in wave] for wave in data["waves"]]


def replay(cluster: Cluster, plan: Any) -> Replayed:
    """Execute ``plan`` wave by wave under make-before-break; AssertionError at the first illegal step.

    During a wave every moving pod's old copy still holds its source and its new copy holds its
    destination: each destination must take its current pods plus all pods arriving in that wave
    (``rules.node_rule_breaks``), and a job with a required topology must hold with old and new
    copies together. Sources are released after the wave.
    """
    nodes = {n.name: n for n in cluster.nodes}
    pods = {p.name: p for p in cluster.pods}
    jobs = {j.name: j for j in cluster.jobs}
    where: dict[str, str | None] = {p.name: p.node for p in cluster.pods}
    done: list[tuple[str, str, str]] = []
    for w, wave in enumerate(_waves(plan)):
        moving: dict[str, str] = {}  # pod -> destination
        for pod_name, source, destination in wave:
            at = f"wave {w}, move {pod_name} {source}->{destination}"
            assert pod_name in pods, f"{at}: unknown pod"
            assert source in nodes and destination in nodes, f"{at}: unknown node"
            assert not pods[pod_name].locked, f"{at}: the pod is locked"
            assert where[pod_name] is not None, f"{at}: the pod is pending"
            assert where[pod_name] == source, f"{at}: the pod is on {where[pod_name]}"
            assert source != destination, f"{at}: source and destination are the same"
            assert pod_name not in moving, f"{at}: the pod moves twice in one wave"
            moving[pod_name] = destination
        arriving: dict[str, list[Pod]] = {}
        for pod_name, destination in moving.items():
            arriving.setdefault(destination, []).append(pods[pod_name])
        for node_name, coming in arriving.items():
            residents = [pods[p] for p, at in where.items() if at == node_name]
            breaks = rules.node_rule_breaks(nodes[node_name], residents, coming)
            assert not breaks, f"wave {w}: node {node_name}: " + "; ".join(b.detail for b in breaks)
        for job_name in sorted({job for p in moving for job in [pods[p].job] if job is not None and job in jobs}):
            spots = [nodes[at] for p, at in where.items() if at is not None and pods[p].job == job_name]
            spots += [nodes[d] for p, d in moving.items() if pods[p].job == job_name]
            assert rules.job_topology_ok(jobs[job_name], spots), (
                f"wave {w}: job {job_name} spans {sorted({n.name for n in spots})} against its required topology"
            )
        for pod_name, destination in moving.items():
            done.append((pod_name, str(where[pod_name]), destination))
            where[pod_name] = destination
    return Replayed(where, done)


def empty_nodes(cluster: Cluster, end: Mapping[str, str | None]) -> int:
    """Nodes holding no pod in the end positions ``end``."""
    busy = {at for at in end.values() if at is not None}
    return sum(1 for n in cluster.nodes if n.name not in busy)


def gpus_moved(cluster: Cluster, moves: Iterable[tuple[str, str, str]]) -> Fraction:
    """Exact sum of the moved pods' GPUs, one term per move."""
    gpus = {p.name: Fraction(p.gpus) for p in cluster.pods}
    return sum((gpus[p] for p, _, _ in moves), Fraction(0))


def touches(moves: Sequence[tuple[str, str, str]]) -> dict[str, int]:
    """Moves touching each node, as source or destination."""
    count: dict[str, int] = {}
    for _, source, destination in moves:
        count[source] = count.get(source, 0) + 1
        count[destination] = count.get(destination, 0) + 1
    return count


# ----------------------------------------------------------------------------------------------
# Final states, ignoring the path
# ----------------------------------------------------------------------------------------------


def final_states(
    cluster: Cluster,
    max_moves: int | None = None,
    max_moves_per_node: int | None = None,
    same_asw: bool = False,
    pools: bool = True,
) -> Iterator[tuple[dict[int, int], list[tuple[int, int, int]]]]:
    """Every end placement of the placed pods (pod index -> node index) that the rules accept node by
    node (pods that stayed as residents, the others as arrivals), with the moves it takes counted
    from the start (pod, from, to: one per movable pod that ends elsewhere) within the budgets.
    Intermediate states are not checked: a superset of what plans reach, by enumeration."""
    nodes = list(cluster.nodes)
    row = {n.name: i for i, n in enumerate(nodes)}
    jobs = {j.name: j for j in cluster.jobs}
    placed = [(p, row[pod.node]) for p, pod in enumerate(cluster.pods) if pod.node is not None]
    fixed = {p: at for p, at in placed if cluster.pods[p].locked or cluster.pods[p].standby}
    movable = [(p, at) for p, at in placed if p not in fixed]
    choices = []
    for p, home in movable:
        pod = cluster.pods[p]
        job = jobs.get(pod.job) if pod.job else None
        options = [home]
        for n, node in enumerate(nodes):
            if n == home or not rules.may_arrive(pod, node):
                continue
            if pools and not pool_allows(cluster, pod, nodes[home], node):
                continue
            if same_asw and rules.topology_domain(node, "asw") != rules.topology_domain(nodes[home], "asw"):
                continue
            if job is not None and job.topology is not None and job.topology.mode == "required":
                if rules.topology_domain(node, job.topology.level) != rules.topology_domain(nodes[home], job.topology.level):
                    continue  # make-before-break never lets it leave its switch
            options.append(n)
        choices.append(options)
    for assignment in itertools.product(*choices):
        moved = [(p, home, n) for (p, home), n in zip(movable, assignment) if n != home]
        if max_moves is not None and len(moved) > max_moves:
            continue
        if max_moves_per_node is not None:
            count = [0] * len(nodes)
            for _, a, b in moved:
                count[a] += 1
                count[b] += 1
            if max(count, default=0) > max_moves_per_node:
                continue
        where = dict(fixed) | {p: n for (p, _), n in zip(movable, assignment)}
        start = dict(placed)
        if any(
            rules.node_rule_breaks(
                node,
                [cluster.pods[p] for p, at in where.items() if at == n and start[p] == n],
                [cluster.pods[p] for p, at in where.items() if at == n and start[p] != n],
            )
            for n, node in enumerate(nodes)
        ):
            continue
        yield where, moved
