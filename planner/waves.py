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
  sources are released after the wave. When nothing can start (two full nodes swapping pods, a cycle),
  blocked pods are routed through nodes with room (each pod at most once, and only while no routed
  pod has made room for it yet) and continue to their
  destinations in later waves; a move that still cannot start is dropped and the pod stays where it
  is. The caller learns which moves were dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

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


@dataclass
class WavePlan:
    """Waves that reach (most of) a target state, and the moves that had to be dropped."""

    waves: list[list[Step]] = field(default_factory=list)
    dropped: list[Step] = field(default_factory=list)
    routed: int = 0


def target_to_waves(state: ClusterState, target: dict[int, int], max_waves: int = 1000) -> WavePlan:
    """Make-before-break waves moving each pod p to ``target[p]``; mutates ``state`` to the end state.

    Pods are started in decreasing GPU order within a wave (big pods are the hard ones to fit).
    """
    pending = {p: n for p, n in target.items() if int(state.pod_node[p]) != n}
    order = sorted(pending, key=lambda p: (-state.pod_gpus[p], -state.pod_cpus[p], p))
    result = WavePlan()
    routed: set[int] = set()
    for _ in range(max_waves):
        if not pending:
            break
        wave = _start_fitting(state, [p for p in order if p in pending], pending)
        if not wave:
            wave = _route_blocked(state, [p for p in order if p in pending and p not in routed], target)
            routed.update(p for p, _, _ in wave)
            result.routed += len(wave)
        if not wave:
            break
        for p, source, destination in wave:
            state.finish_move(p, destination)
            if target.get(p) == destination:
                pending.pop(p, None)
        result.waves.append(wave)
    result.dropped = [(p, int(state.pod_node[p]), n) for p, n in pending.items()]
    return result


def _start_fitting(state: ClusterState, candidates: Sequence[int], pending: dict[int, int]) -> list[Step]:
    wave = []
    for p in candidates:
        destination = pending[p]
        if state.fits(p, destination):
            state.add_copy(p, destination)
            wave.append((p, int(state.pod_node[p]), destination))
    return wave


def _route_blocked(state: ClusterState, blocked: Sequence[int], target: dict[int, int]) -> list[Step]:
    """Break deadlocks: move blocked pods to nodes with room that are not their sources.

    Prefers nodes the target leaves busy (so no node meant to be vacated is filled) and, among them,
    the fullest (best fit). Each copy started here counts against the nodes for the next pod.
    """
    busy_in_target = np.zeros(len(state.node_names), dtype=bool)
    busy_in_target[list(target.values())] = True
    wave: list[Step] = []
    leaving: dict[int, list[int]] = {}
    for p in blocked:
        destination = target[p]
        if state.fits_without(p, destination, leaving.get(destination, [])):
            continue  # the pods routed away in this wave already make room for it
        options = np.flatnonzero(state.feasible_nodes(p))
        if len(options) == 0:
            continue
        free = state.free_devices()[options]
        via = int(options[np.lexsort((options, free, ~busy_in_target[options]))[0]])
        state.add_copy(p, via)
        source = int(state.pod_node[p])
        leaving.setdefault(source, []).append(p)
        wave.append((p, source, via))
    return wave
