"""Turn moves into make-before-break waves.

Two sources of moves:

* ``sequence_to_waves``: a *sequence* of moves each of which was legal as a single move on the state
  left by the ones before it (what a heuristic that moves pods one at a time with ``state.fits``
  produces, ejection chains included). Move j goes one wave after the latest earlier move that
  released capacity on j's destination (source of i == destination of j) and after the pod's own
  earlier move; otherwise as early as possible. Then at any wave a node holds a subset of what it held
  in the sequence right after its latest arrival of that wave, which was legal, and every rule is
  monotone (fewer pods never break one), so every wave is legal. Within a chain the deepest ejection
  goes first; independent chains share waves.
* ``target_to_waves``: a *final state* (what a solver returns). Each wave starts, in a fixed order,
  every pending move whose destination has room for the new copy beside everything already there;
  sources are released after the wave. When nothing can start (two full nodes swapping pods, a
  cycle), the deadlock is broken by routing: first a blocked pod whose departure makes room for
  another is parked on a node with room and continues to its destination later (one extra move);
  failing that, a pod that stays put in the target but stands in a blocked pod's way is parked and
  comes back (two extra moves). Each pod is routed at most once. A move that still cannot start is
  dropped and the pod stays where it is; the caller learns which moves were dropped.

  Routing never breaks the user's limits: every planned move is reserved in the ``MoveBudget``
  before the first wave (a move the budget cannot hold is dropped up front), and a detour is taken
  only when the budget has room for its extra moves and node touches, and under its switch when
  ``same_asw`` is set.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from planner.limits import MoveBudget, MoveLimits
from planner.state import ClusterState

Step = tuple[int, int, int]
"""(pod, source node, destination node), as indexes of a ``ClusterState``."""


def sequence_to_waves(moves: Iterable[Step]) -> list[list[Step]]:
    """Group a sequentially legal list of moves into the fewest waves its dependencies allow."""
    waves: list[list[Step]] = []
    released_at: dict[int, int] = {}  # node -> latest wave in which a pod left it
    pod_wave: dict[int, int] = {}
    for step in moves:
        p, source, destination = step
        w = max(released_at.get(destination, -1), pod_wave.get(p, -1)) + 1
        if w == len(waves):
            waves.append([])
        waves[w].append(step)
        released_at[source] = max(released_at.get(source, -1), w)
        pod_wave[p] = w
    return waves


def shape_waves(
    waves: list[list[Step]],
    limits: MoveLimits,
    job_limits: dict[int, tuple[str, int]] | None = None,
    namespace_limits: dict[int, tuple[str, int]] | None = None,
) -> list[list[Step]]:
    """``waves`` split so that every wave obeys the per-wave limits (moves, nodes touched, moves
    touching one node). Moves in one make-before-break wave are independent (each fits with all the
    wave's arrivals and none of its departures), so running a part of a wave, then the rest, is
    legal: the order of the moves is kept, each goes into the current part while it fits the limits.
    ``job_limits``: per pod, (its job, how many of the job's pods may move in one wave);
    ``namespace_limits`` likewise for its namespace."""
    job_limits = job_limits or {}
    namespace_limits = namespace_limits or {}
    if not limits.shapes_waves and not job_limits:
        return waves
    most_moves = limits.max_moves_per_wave
    most_nodes = limits.max_nodes_per_wave
    per_node = limits.max_moves_per_node_per_wave
    shaped: list[list[Step]] = []
    for wave in waves:
        part: list[Step] = []
        touched: dict[int, int] = {}
        jobs: dict[str, int] = {}
        namespaces: dict[str, int] = {}
        for step in wave:
            p, source, destination = step
            new_nodes = (source not in touched) + (destination != source and destination not in touched)
            job = job_limits.get(p)
            namespace = namespace_limits.get(p)
            fits = (
                (most_moves is None or len(part) < most_moves)
                and (most_nodes is None or len(touched) + new_nodes <= most_nodes)
                and (per_node is None or (touched.get(source, 0) < per_node and touched.get(destination, 0) < per_node))
                and (job is None or jobs.get(job[0], 0) < job[1])
                and (namespace is None or namespaces.get(namespace[0], 0) < namespace[1])
            )
            if part and not fits:
                shaped.append(part)
                part, touched, jobs, namespaces = [], {}, {}, {}
            part.append(step)
            touched[source] = touched.get(source, 0) + 1
            touched[destination] = touched.get(destination, 0) + 1
            if job is not None:
                jobs[job[0]] = jobs.get(job[0], 0) + 1
            if namespace is not None:
                namespaces[namespace[0]] = namespaces.get(namespace[0], 0) + 1
        if part:
            shaped.append(part)
    return shaped


@dataclass
class WavePlan:
    """Waves that reach (most of) a target state, and the moves that had to be dropped."""

    waves: list[list[Step]] = field(default_factory=list)
    dropped: list[Step] = field(default_factory=list)
    routed: int = 0
    """Detours: moves to a parking node that the target itself does not contain."""


def target_to_waves(state: ClusterState, target: dict[int, int], budget: MoveBudget | None = None, max_waves: int = 1000) -> WavePlan:
    """Make-before-break waves moving each pod p to ``target[p]`` within ``budget`` (not changed);
    mutates ``state`` to the end state.

    Pods are started in decreasing GPU order within a wave (big pods are the hard ones to fit).
    """
    router = _Router(state, target, MoveBudget.of(state) if budget is None else budget.copy())
    result = WavePlan()
    for p in router.order:  # reserve every planned move; what the budget cannot hold is dropped now
        source, destination = int(state.pod_node[p]), target[p]
        if source == destination:
            continue
        if router.budget.allows(source, destination):
            router.budget.spend(source, destination)
            router.pending[p] = destination
        else:
            result.dropped.append((p, source, destination))
    for _ in range(max_waves):
        if not router.pending:
            break
        wave = router.start_fitting()
        if not wave and not router.budget.move_once:  # a detour moves a pod twice
            wave = router.detour()
            result.routed += len(wave)
        if not wave:
            break
        for p, source, destination in wave:
            state.finish_move(p, destination)
            if router.pending.get(p) == destination:
                del router.pending[p]
        result.waves.append(wave)
    result.dropped += [(p, int(state.pod_node[p]), n) for p, n in router.pending.items()]
    return result


class _Router:
    """The moves still to make towards a target, and the detours that break deadlocks."""

    def __init__(self, state: ClusterState, target: dict[int, int], budget: MoveBudget):
        self.state = state
        self.target = target
        self.budget = budget
        self.order = sorted(target, key=lambda p: (-state.pod_gpus[p], -state.pod_cpus[p], p))
        self.pending: dict[int, int] = {}
        self.routed: set[int] = set()
        self.busy_in_target = np.zeros(len(state.node_names), dtype=bool)
        self.busy_in_target[list(target.values())] = True
        self.wanted = np.zeros(len(state.node_names), dtype=bool)
        """Nodes some pending pod wants to enter (refreshed at each detour)."""

    def start_fitting(self) -> list[Step]:
        """Start every pending move whose destination has room now, in order."""
        wave = []
        for p in self.order:
            destination = self.pending.get(p)
            if destination is not None and self.state.fits(p, destination):
                self.state.add_copy(p, destination)
                wave.append((p, int(self.state.pod_node[p]), destination))
        return wave

    def detour(self) -> list[Step]:
        """Break a deadlock: park blocked pods whose departure lets another start; else evict one
        bystander; else park any blocked pod (its departure may make parking room for others later)."""
        self.wanted[:] = False
        self.wanted[list(self.pending.values())] = True
        wave = self._park_blocked(helpful_only=True) or self._evict_bystander() or self._park_blocked(helpful_only=False)
        self.routed.update(p for p, _, _ in wave)
        return wave

    def _park_blocked(self, helpful_only: bool) -> list[Step]:
        """Park blocked pods on nodes with room (only those whose source another pod wants, if
        ``helpful_only``); a pod for which this wave's parking already made room stays."""
        state, budget = self.state, self.budget
        wave: list[Step] = []
        leaving: dict[int, list[int]] = {}
        for p in self.order:
            if p not in self.pending or p in self.routed:
                continue
            source, destination = int(state.pod_node[p]), self.pending[p]
            if (helpful_only and not self.wanted[source]) or state.fits_without(p, destination, leaving.get(destination, [])):
                continue
            via = self._parking(p, 1, destination)
            if via is None:
                continue
            budget.moves_left -= 1  # the detour; its two touches of ``via`` (in, and out again)
            budget.node_left[via] -= 2
            state.add_copy(p, via)
            leaving.setdefault(source, []).append(p)
            wave.append((p, source, via))
        return wave

    def _evict_bystander(self) -> list[Step]:
        """Park one pod that stays put in the target but stands in a blocked pod's way; it comes back."""
        state, budget = self.state, self.budget
        for p in self.order:
            destination = self.pending.get(p)
            if destination is None or budget.moves_left < 2 or budget.node_left[destination] < 2:
                continue
            bystanders = sorted(
                (q for q in state.node_pods[destination] if self.target.get(q) == destination and q not in self.pending and q not in self.routed),
                key=lambda q: (state.pod_gpus[q], state.pod_cpus[q], q),
            )
            for q in bystanders:
                if not state.fits_without(p, destination, [q]):
                    continue
                via = self._parking(q, 2, destination)
                if via is None:
                    continue
                budget.moves_left -= 2  # out to ``via`` and back
                budget.node_left[destination] -= 2
                budget.node_left[via] -= 2
                state.add_copy(q, via)
                self.pending[q] = destination
                return [(q, destination, via)]
        return []

    def _parking(self, p: int, moves: int, avoid: int) -> int | None:
        """A node with room for p now, within the budget (``moves`` extra moves, two touches of it).

        Prefers nodes the target leaves busy (a node meant to be vacated is not filled), then nodes no
        pending pod wants to enter, then the fullest (best fit).
        """
        state, budget = self.state, self.budget
        if budget.moves_left < moves:
            return None
        options = state.feasible_nodes(p) & (budget.node_left >= 2)
        if budget.asw is not None:
            options &= budget.asw == budget.asw[int(state.pod_node[p])]
        options[avoid] = False
        nodes = np.flatnonzero(options)
        if len(nodes) == 0:
            return None
        free = state.free_devices()[nodes]
        return int(nodes[np.lexsort((nodes, free, self.wanted[nodes], ~self.busy_in_target[nodes]))[0]])
