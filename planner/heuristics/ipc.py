"""IPC: iterative partitioned consolidation with ejection chains (ASI paper, Sec. 4.1, Algorithm 1).

* Divide and conquer: each round the non-empty nodes are randomly partitioned into disjoint groups
  (default 500 nodes); every group is an independent subproblem (``ClusterState.subset``), solved
  inline or on a process pool.
* Ejection chains: inside a group, candidate nodes are tried easiest first (fewest pods, then fewest
  allocated GPUs; a node holding a locked pod is never a candidate). Each pod of the candidate is
  ejected with ``Eject(pod, K)``: place it on a feasible destination in the group, or else free room on
  a destination by ejecting some of its pods recursively, up to depth K. The candidate's chains are
  committed only if every pod on it found a place; otherwise every tentative move is rolled back and
  the node is left alone for the rest of the round.
* Iteration: up to R rounds with fresh partitions, stopping when a round vacates nothing, or fewer
  than ``min_round_yield`` (1) nodes per 1,000 ejection attempts (``Eject`` calls, chains' inner
  ones included: a deterministic measure of the round's work). The paper finds "little marginal
  benefit after round 3"; on fleets of many small pods a late round tries every node again, nearly
  all in vain, at more than the first round's cost, where on ASI-like fleets late rounds still yield
  (benchmarks/results/ipc_rounds.md).

Destinations are never empty nodes (filling one to empty another gains nothing), never nodes vacated
this round, and never nodes of the chain being built. A node that received pods is not a candidate
later in the same round (no ping-pong). Every placement is tested with ``ClusterState.fits``, the fast
form of ``rules``, against the state left by the moves before it; so the committed moves form a
sequentially legal sequence that ``waves.sequence_to_waves`` turns into make-before-break waves.

Limits (``limits.MoveBudget``): the moves of the whole plan, the moves touching any one node (a move
touches its source and its destination) and ``same_asw``. Under a budget the groups'
vacations are merged round-robin (each group's first vacation, then each group's second, ...), which
keeps the cheap vacations every group finds first; a group stops at its first vacation that no longer
fits the budget, because its later vacations may build on it.

Determinism: the partition comes from the seed and the round; each group gets its own generator
seeded from (seed, round, group), so the plan does not depend on how many workers run the groups.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from planner.limits import MoveBudget
from planner.runtime.tasks import Lazy
from planner.state import EPS, ClusterState
from planner.waves import Step

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class IpcOptions:
    """Options of the IPC heuristic (see the module docstring)."""

    partition_size: int = 500
    depth: int = 3
    rounds: int = 5
    min_round_yield: float = 1.0
    """Stop after a round that vacates fewer than this many nodes per 1,000 ejection attempts (0: run
    every round until one vacates nothing)."""
    seed: int = 0
    branching: int = 4
    """Destinations tried for an ejection at each level of a chain."""


SLACK = 1e-6
"""Margin of the quick victim screen (``_victims``): a pod is passed over only if it misses what p
lacks by more than this, far above the rounding of sums of CPUs and GiB."""


@dataclass
class Vacation:
    """The moves (in execution order) that emptied ``node``."""

    node: int
    moves: list[Step]


@dataclass
class GroupTask:
    state: ClusterState
    options: IpcOptions
    seed: tuple[int, int, int]
    budget: MoveBudget
    """The limits' account for the group's nodes (moves left in the whole plan, per-node allowances)."""


@dataclass
class IpcResult:
    sequence: list[Step] = field(default_factory=list)
    vacated: list[int] = field(default_factory=list)
    rounds_run: int = 0
    partitions: int = 0
    candidates_tried: int = 0
    vacated_per_round: list[int] = field(default_factory=list)
    attempts_per_round: list[int] = field(default_factory=list)


def run_ipc(state: ClusterState, options: IpcOptions, budget: MoveBudget, run_groups: Callable, progress: Progress | None = None) -> IpcResult:
    """Run IPC on ``state`` (mutated to the end state) within ``budget`` (spent by the moves made);
    ``run_groups(fn, tasks)`` maps ``fn`` over tasks."""
    rng = np.random.default_rng(options.seed)
    result = IpcResult()
    for r in range(options.rounds):
        busy = np.flatnonzero(state.pods_per_node > 0)
        if len(busy) < 2 or budget.exhausted:
            break
        order = rng.permutation(busy)
        groups = [np.sort(order[i : i + options.partition_size]) for i in range(0, len(order), options.partition_size)]
        tasks = [Lazy(_group_task, state, g, options, (options.seed, r, i), budget) for i, g in enumerate(groups)]
        outcomes = run_groups(vacate_group, tasks)
        result.rounds_run += 1
        result.partitions += len(groups)
        vacated_now = 0
        for vacation in _merge_round_robin([o[0] for o in outcomes], budget.moves_left):
            for p, source, destination in vacation.moves:
                state.move(p, destination)
                budget.spend(source, destination)
            result.sequence.extend(vacation.moves)
            result.vacated.append(vacation.node)
            vacated_now += 1
        result.candidates_tried += sum(o[1] for o in outcomes)
        result.vacated_per_round.append(vacated_now)
        if progress is not None:
            progress("round", r + 1, options.rounds)
        attempts = sum(o[2] for o in outcomes)
        result.attempts_per_round.append(attempts)
        if vacated_now == 0 or 1000 * vacated_now < options.min_round_yield * attempts:
            break
    return result


def _group_task(state: ClusterState, nodes: np.ndarray, options: IpcOptions, seed: tuple[int, int, int], budget: MoveBudget) -> GroupTask:
    """One group's subproblem: built by the worker that solves it when the pool is forked."""
    return GroupTask(state.subset(nodes), options, seed, budget.subset(nodes))


def _merge_round_robin(per_group: list[list[Vacation]], budget: int) -> list[Vacation]:
    accepted: list[Vacation] = []
    active = [True] * len(per_group)
    depth = max((len(v) for v in per_group), default=0)
    for k in range(depth):
        for i, vacations in enumerate(per_group):
            if not active[i] or k >= len(vacations):
                continue
            if len(vacations[k].moves) > budget:
                active[i] = False
                continue
            accepted.append(vacations[k])
            budget -= len(vacations[k].moves)
    return accepted


def vacate_group(task: GroupTask) -> tuple[list[Vacation], int, int]:
    """Vacate what can be vacated in one group; moves and nodes in cluster (global) indexes; the
    candidates tried and the ejection attempts made."""
    group = EjectionGroup(task)
    vacations = group.run()
    node_ids, pod_ids = task.state.node_ids, task.state.pod_ids
    return (
        [Vacation(int(node_ids[v.node]), [(int(pod_ids[p]), int(node_ids[s]), int(node_ids[d])) for p, s, d in v.moves]) for v in vacations],
        group.tried,
        group.attempts,
    )


class EjectionGroup:
    """Ejection chains inside one partition (local indexes of a sub-state); also the make-room
    heuristic's way of relocating a pod (``eject``), with ``into_empty`` set there: a pod may then
    move onto an empty node (consolidation has no reason to, making room for a job does)."""

    def __init__(self, task: GroupTask):
        self.state = s = task.state
        self.options = task.options
        self.rng = np.random.default_rng(list(task.seed))
        self.budget = task.budget.moves_left
        self.allowance = task.budget.node_left.copy()
        self.asw = task.budget.asw
        self.vacated = np.zeros(len(s.node_names), dtype=bool)
        self.received = np.zeros(len(s.node_names), dtype=bool)
        self.trail: list[Step] = []
        self.in_trail: set[int] = set()
        self.tried = 0
        self.attempts = 0  # calls of ``eject`` (the work a round's yield is measured against)
        self.into_empty = False
        locked_nodes = np.zeros(len(s.node_names), dtype=bool)
        locked_nodes[s.pod_node[s.pod_locked]] = True
        self.has_locked = locked_nodes
        self.vacated_count = 0  # changes of ``vacated`` (a cache key: the array itself is not hashed)
        self.trail_epoch = 0  # a new chain started: ``in_trail`` was reset (a cache key, as above)
        self._open_key: tuple | None = None
        self._open = self.vacated
        self._room_cache: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._by_size: dict[int, tuple[int, list[tuple[float, int]]]] = {}

    # -- candidates -------------------------------------------------------------------------------

    def run(self) -> list[Vacation]:
        s = self.state
        candidates = np.flatnonzero((s.pods_per_node > 0) & ~self.has_locked)
        allocated = s.whole_used[candidates] + s.share_devices[candidates]
        tiebreak = self.rng.random(len(candidates))
        ordered = candidates[np.lexsort((tiebreak, allocated, s.pods_per_node[candidates]))]
        vacations = []
        for c in ordered.tolist():
            if self.received[c] or s.pods_per_node[c] == 0 or s.pods_per_node[c] > self.allowance[c]:
                continue
            if self.budget < s.pods_per_node[c]:
                continue
            self.tried += 1
            moves = self._vacate(c)
            if moves is not None:
                vacations.append(Vacation(c, moves))
                self.budget -= len(moves)
                self.vacated[c] = True
                self.vacated_count += 1
                for _, _, destination in moves:
                    self.received[destination] = True
        return vacations

    def _vacate(self, c: int) -> list[Step] | None:
        s = self.state
        self.trail, self.in_trail = [], set()
        self.trail_epoch += 1
        pods = sorted(s.node_pods[c], key=lambda p: (-s.pod_gpus[p], -s.pod_cpus[p], p))
        blocked = frozenset([c])
        for p in pods:
            if not self.eject(p, self.options.depth, blocked):
                self.rollback(0)
                return None
        return self.trail

    # -- Eject(pod, K) -----------------------------------------------------------------------------

    def _destinations(self, p: int, blocked: frozenset[int]) -> np.ndarray:
        """Nodes that may receive p apart from capacity: not empty, not vacated, not blocked, budget left."""
        s = self.state
        ok = self._open_nodes() & s.eligible[s.pod_signature[p]]
        if self.asw is not None:
            ok &= self.asw == self.asw[s.pod_node[p]]
        for n in blocked:
            ok[n] = False
        ok[s.pod_node[p]] = False
        return ok

    def _open_nodes(self) -> np.ndarray:
        """Nodes that may receive a pod at all (read-only; recomputed when the usage or the vacated
        nodes change): not empty (unless ``into_empty``), not vacated, with move allowance left."""
        key = (self.state.version, self.vacated_count, self.into_empty)
        if self._open_key != key:
            s = self.state
            self._open = ((s.pods_per_node > 0) | self.into_empty) & ~self.vacated & (self.allowance > 0)
            self._open_key = key
        return self._open

    def eject(self, p: int, k: int, blocked: frozenset[int]) -> bool:
        """Move p off its node, directly or by ejecting pods from a destination (chains up to depth
        k); never onto ``blocked`` nodes. The moves go on ``trail``; False (nothing moved) if impossible."""
        s = self.state
        self.attempts += 1
        source = int(s.pod_node[p])
        if self.allowance[source] <= 0 or len(self.trail) >= self.budget:
            return False
        room = s.room_anywhere(p)  # cached: when no node has room for p now, there is no direct move
        if not room and k <= 1:
            return False
        allowed = self._destinations(p, blocked)
        if room:
            direct = np.flatnonzero(allowed & s.feasible_nodes(p))
            if len(direct):
                self._move(p, self._best_fit(p, direct))
                return True
        if k <= 1:
            return False
        for n in self._ejection_targets(p, allowed):
            mark = len(self.trail)
            victims = self._victims(p, n)
            if victims is None:
                continue
            inner = blocked | {n}
            if all(self.eject(q, k - 1, inner) for q in victims) and s.fits(p, n) and self.allowance[n] > 0:
                self._move(p, n)
                return True
            self.rollback(mark)
        return False

    def _best_fit(self, p: int, nodes: np.ndarray) -> int:
        """The destination left with the fewest free GPUs, then fewest free CPUs (consolidation)."""
        s = self.state
        free_dev = s.cap_gpus[nodes] - s.whole_used[nodes] - s.share_devices[nodes]
        free_cpu = (s.cap_cpus[nodes] - s.used_cpus[nodes]) / s.cap_cpus[nodes]
        tiebreak = self.rng.random(len(nodes))
        return int(nodes[np.lexsort((tiebreak, free_cpu, free_dev))[0]])

    def _ejection_targets(self, p: int, allowed: np.ndarray) -> list[int]:
        """Up to ``branching`` destinations where ejecting small movable pods could make room for p."""
        s = self.state
        gpus_out, cpu_room, mem_room = self._room_with_movable_gone(float(s.pod_gpus[p]))
        need = s.pod_whole[p] + (1 if s.pod_share[p] > 0 else 0)
        deficit = np.maximum(need - (s.cap_gpus - s.whole_used - s.share_devices), 0)
        ok = allowed & (gpus_out >= deficit)
        ok &= cpu_room >= s.pod_cpus[p]
        ok &= mem_room >= s.pod_mem[p]
        ok &= s.cap_gpus >= need
        nodes = np.flatnonzero(ok)
        if len(nodes) == 0:
            return []
        tiebreak = self.rng.random(len(nodes))
        ranked = nodes[np.lexsort((tiebreak, s.pods_per_node[nodes], deficit[nodes]))]
        return ranked[: self.options.branching].tolist()

    def _room_with_movable_gone(self, gpus: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node, if the movable pods of at most ``gpus`` GPUs not yet moved in this chain left: the
        devices they free, and the CPUs and memory free then. The ejecting pod itself is counted
        among them; it does not matter, its own node is never a destination. Cached until the usage
        or the chain changes (a failed chain asks it many times between two moves)."""
        key = (self.state.version, self.trail_epoch, gpus)
        room = self._room_cache.get(key)
        if room is None:
            if self._room_cache and next(iter(self._room_cache))[:2] != key[:2]:
                self._room_cache.clear()
            s = self.state
            n_nodes = len(s.node_names)
            movable = ~s.pod_locked & (s.pod_gpus <= gpus) & (s.pod_node >= 0)
            if self.in_trail:
                movable[list(self.in_trail)] = False
            where = s.pod_node[movable]
            gpus_out = np.bincount(where, weights=s.pod_whole[movable] + (s.pod_share[movable] > 0), minlength=n_nodes)
            cpus_out = np.bincount(where, weights=s.pod_cpus[movable], minlength=n_nodes)
            mem_out = np.bincount(where, weights=s.pod_mem[movable], minlength=n_nodes)
            room = self._room_cache[key] = (gpus_out, s.cap_cpus - s.used_cpus + cpus_out, s.cap_mem - s.used_mem + mem_out)
        return room

    def _victims(self, p: int, n: int) -> list[int] | None:
        """Movable pods on n (no larger than p) whose departure lets p fit: one if one does, else few."""
        s = self.state
        if not s.eligible[s.pod_signature[p], n] or not s._topology_ok(p, n):
            return None  # no departure changes these
        gpus = s.pod_gpus[p]
        pods = [q for q_gpus, q in self._unlocked_by_size(n) if q_gpus <= gpus and q not in self.in_trail]
        whole, cpus, mem, share, *_ = s._pod_scalars[p]
        # a victim too small to make room for p's CPUs, memory or whole GPUs cannot be the one (the
        # exact test below decides the others; SLACK keeps rounding on the side of testing)
        cpus_short = float(s.used_cpus[n]) + cpus - float(s.cap_cpus[n]) - EPS - SLACK
        mem_short = float(s.used_mem[n]) + mem - float(s.cap_mem[n]) - EPS - SLACK
        devices_short = whole - int(s.cap_gpus[n] - s.whole_used[n] - s.share_devices[n]) if not share else 0
        scalars = s._pod_scalars
        for q in pods:
            q_whole, q_cpus, q_mem, q_share, *_ = scalars[q]
            if q_cpus < cpus_short or q_mem < mem_short or (not q_share and q_whole < devices_short):
                continue
            if s._resources_fit(p, n, (q,)) and s._anti_affinity_ok(p, n, (q,)):
                return [q]
        chosen: list[int] = []
        for q in reversed(pods):
            chosen.append(q)
            if s.fits_without(p, n, chosen):
                return chosen
        return None

    def _unlocked_by_size(self, n: int) -> list[tuple[float, int]]:
        """The unlocked pods on node n as (GPUs, pod), smallest first (GPUs, CPUs, index); kept until n changes."""
        s = self.state
        stamp = s.node_stamp[n]
        cached = self._by_size.get(n)
        if cached is None or cached[0] != stamp:
            order = sorted((q for q in s.node_pods[n] if not s.pod_locked[q]), key=lambda q: (s.pod_gpus[q], s.pod_cpus[q], q))
            cached = self._by_size[n] = (stamp, [(s.pod_gpus[q], q) for q in order])
        return cached[1]

    # -- tentative moves ---------------------------------------------------------------------------

    def _move(self, p: int, n: int) -> None:
        source = int(self.state.pod_node[p])
        self.state.move(p, n)
        self.trail.append((p, source, n))
        self.in_trail.add(p)
        self.allowance[source] -= 1
        self.allowance[n] -= 1

    def rollback(self, mark: int) -> None:
        while len(self.trail) > mark:
            p, source, destination = self.trail.pop()
            self.state.move(p, source)
            self.in_trail.discard(p)
            self.allowance[source] += 1
            self.allowance[destination] += 1
