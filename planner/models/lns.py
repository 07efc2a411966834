"""Hybrid: improve a start by large-neighbourhood search with the exact model.

The start is the better of IPC alone and IPC after a repack (best-fit decreasing of every movable
pod), chosen by ``engine/defrag/methods.py`` (``_best_start``); the search below improves it.

Each round picks disjoint neighbourhoods: a few nodes that could be vacated (busy, no locked pod,
least allocated first, with some randomness; after IPC these are often full nodes whose pods would
fit the slack left on nodes with locked pods) plus their likely destinations (busy nodes
of the same GPU model with free room, nodes holding locked pods included). Every neighbourhood is an
independent ``ClusterState.subset`` whose pods may move only among its nodes; it is solved exactly
(``models/defrag.py``) with a short time limit, warm-started from where the pods are now, on the
executor in parallel, by ``exact.solve_exact``: the same model, options, limits, routing and proof as
``--method exact``, on the sub-state. A neighbourhood whose executed plan empties more nodes than it
has empty now is kept and applied. The rounds' waves follow the start's, so the whole plan stays
executable; ``plan_defrag`` validates it.

Limits: every neighbourhood gets the limits' account for its nodes (``MoveBudget.subset``: the
moves left in the whole plan, each node's remaining allowance, the switches under ``same_asw``);
neighbourhoods are disjoint, so their per-node allowances cannot collide, and improvements are
accepted in order while the plan's moves left last.

Rounds go on until the time limit; the neighbourhood grows when a round improves nothing, so later
rounds search wider. A neighbourhood counts as settled (``proven_optimal``) only when its executed
end state reaches its proven bound; a settled neighbourhood whose pods can go nowhere else is retired.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from planner.limits import MoveBudget
from planner.models.defrag_exact import AttemptRecord, ExactOptions, solve_exact
from planner.runtime.tasks import Run
from planner.state import ClusterState
from planner.waves import Step

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class LnsOptions:
    time_limit_s: float = 60.0
    neighbourhood_nodes: int = 60
    max_neighbourhood_nodes: int = 200
    """Neighbourhoods grow when a round improves nothing, up to this size (or a whole GPU model)."""
    seeds_per_neighbourhood: int = 12
    solve_time_s: float = 8.0
    exact: ExactOptions = ExactOptions(strict=False)  # noqa: RUF009 - frozen, shared safely by every LnsOptions
    """How each neighbourhood is solved (its time limit is set per round from ``solve_time_s``)."""
    seed: int = 0
    parallel: int = 2
    """Neighbourhoods solved per round (run on the executor)."""


@dataclass
class LnsTask:
    state: ClusterState
    exact: ExactOptions
    budget: MoveBudget


@dataclass
class Neighbourhood:
    """One neighbourhood's outcome: waves in cluster indexes (empty if nothing gained), the empty
    nodes gained, whether its end state reaches its proven bound, and how it was solved."""

    waves: list[list[Step]]
    gain: int
    settled: bool
    solves: list[AttemptRecord]


@dataclass
class LnsResult:
    waves: list[list[Step]] = field(default_factory=list)
    rounds: int = 0
    neighbourhoods: int = 0
    improved: int = 0
    gained_empties: int = 0
    proven_optimal: int = 0
    solved_with: set[tuple[str, str, str]] = field(default_factory=set)
    """(solver, formulation, lexicographic mode) of every neighbourhood solve."""


def run_lns(state: ClusterState, options: LnsOptions, budget: MoveBudget, run_groups: Run, progress: Progress | None = None) -> LnsResult:
    """Improve ``state`` (mutated to the new end state) within ``options.time_limit_s`` and
    ``budget`` (spent by the moves applied)."""
    rng = np.random.default_rng([options.seed, 7])
    deadline = time.perf_counter() + options.time_limit_s
    size = options.neighbourhood_nodes
    done = np.zeros(len(state.node_names), dtype=bool)  # settled nodes whose pods can go nowhere else
    result = LnsResult()
    tried: set[bytes] = set()  # neighbourhoods solved since the state last changed: solving again repeats them
    repeats = 0
    while time.perf_counter() + 1.0 < deadline and not budget.exhausted:
        remaining = deadline - time.perf_counter()
        solve_time = min(options.solve_time_s, max(0.5, remaining - 0.5))
        picked = pick_neighbourhoods(state, rng, options.parallel, size, options.seeds_per_neighbourhood, done)
        if not picked:
            break
        picked = [(nodes, closed) for nodes, closed in picked if nodes.tobytes() not in tried]
        if not picked:
            repeats += 1
            if repeats >= 3:
                break  # nothing new to solve: every neighbourhood drawn was solved on this very state
            size = min(int(size * 1.5) + 1, options.max_neighbourhood_nodes)
            continue
        repeats = 0
        tried.update(nodes.tobytes() for nodes, _ in picked)
        exact = replace(options.exact, time_limit_s=solve_time)
        tasks = [LnsTask(state.subset(nodes), exact, budget.subset(nodes)) for nodes, _ in picked]
        outcomes = run_groups(improve_neighbourhood, tasks)
        result.rounds += 1
        result.neighbourhoods += len(picked)
        improved_now = 0
        round_waves: list[list[Step]] = []
        for (nodes, closed), outcome in zip(picked, outcomes):
            waves = outcome.waves
            result.solved_with.update(
                (solve["solver"], solve["formulation"], "weighted" if solve["phases"][0]["phase"] == "weighted" else "two-phase")
                for solve in outcome.solves
                if "phases" in solve
            )
            moves = sum(len(w) for w in waves)
            if moves > budget.moves_left:
                continue  # an earlier neighbourhood of this round used the moves it counted on
            result.proven_optimal += outcome.settled
            if closed and outcome.settled:
                done[nodes] = True
            if not waves:
                continue
            for w, wave in enumerate(waves):
                if w == len(round_waves):
                    round_waves.append([])
                round_waves[w].extend(wave)
                for p, source, destination in wave:
                    state.move(p, destination)
                    budget.spend(source, destination)
            improved_now += 1
            result.gained_empties += outcome.gain
        result.waves.extend(round_waves)
        result.improved += improved_now
        if improved_now:
            tried.clear()
        if improved_now == 0:
            size = min(int(size * 1.5) + 1, options.max_neighbourhood_nodes)
        if progress is not None:
            progress("lns", result.rounds, 0)
    return result


def pick_neighbourhoods(state: ClusterState, rng: np.random.Generator, count: int, size: int, seeds: int, done: np.ndarray) -> list[tuple[np.ndarray, bool]]:
    """Up to ``count`` disjoint node sets, each with whether it is closed (its movable pods may go to no
    busy node outside it, so solving it to optimality settles it).

    When all busy nodes fit in ``size`` they form one set. Otherwise a set is nodes to vacate
    (easiest first, with noise) plus destinations among the nodes its pods can reach (the seed's GPU
    model, and nodes of other models that pods can cross to or from): the fullest nodes that still
    have room, a random few more with room, then any busy nodes (pods on full nodes can take part in
    chains). Nodes in ``done`` are skipped.
    """
    busy = state.pods_per_node > 0
    open_busy = np.flatnonzero(busy & ~done)
    if 2 <= len(open_busy) <= size:
        return [(open_busy, _closed(state, open_busy, busy))]
    locked_nodes = np.zeros(len(state.node_names), dtype=bool)
    locked_nodes[state.pod_node[state.pod_locked & (state.pod_node >= 0)]] = True
    allocated = state.allocated_gpus()
    share = np.divide(allocated, state.cap_gpus, out=np.ones(len(allocated)), where=state.cap_gpus > 0)
    free = state.free_devices()
    candidates = np.flatnonzero(busy & ~locked_nodes & ~done)  # full ones too: their pods may fit others' slack
    if len(candidates) == 0:
        return []
    # easiest to vacate first, with noise so that rounds differ
    order = candidates[np.argsort(share[candidates] + rng.random(len(candidates)) * 0.5, kind="stable")]
    model = state.node_model
    taken = np.zeros(len(busy), dtype=bool)
    groups: list[tuple[np.ndarray, bool]] = []
    for seed_node in order.tolist():
        if len(groups) == count:
            break
        if taken[seed_node]:
            continue
        same = _related(state, model == model[seed_node]) & busy & ~taken
        vacate = [n for n in order.tolist() if same[n] and not locked_nodes[n]][:seeds]
        want = max(0, size - len(vacate))
        pool = np.flatnonzero(same)
        pool = pool[~np.isin(pool, vacate)]
        roomy = pool[free[pool] > 0]
        ranked = roomy[np.lexsort((rng.random(len(roomy)), free[roomy]))]
        half = min(want // 2, len(ranked))
        chosen = list(ranked[:half])
        rest = ranked[half:]
        take = min(len(rest), want - len(chosen))
        chosen += list(rng.choice(rest, size=take, replace=False)) if take else []
        others = pool[~np.isin(pool, chosen)]
        take = min(len(others), want - len(chosen))
        chosen += list(rng.choice(others, size=take, replace=False)) if take else []
        nodes = np.unique(np.array([*vacate, *chosen], dtype=np.int64))
        if len(nodes) < 2:
            taken[seed_node] = True
            continue
        taken[nodes] = True
        groups.append((nodes, _closed(state, nodes, busy)))
    return groups


def _related(state: ClusterState, home: np.ndarray) -> np.ndarray:
    """Nodes of one GPU model (``home``) plus the busy nodes of other models that pods could cross to
    or from: those allowed for a movable pod on ``home`` nodes, and those holding a movable pod allowed
    on ``home`` nodes (pods pinned to several models, or to none)."""
    related = home.copy()
    movable = _movable(state)
    on_home = home[np.maximum(state.pod_node, 0)]
    here = movable & on_home
    if here.any():
        related |= state.eligible[np.unique(state.pod_signature[here])].any(axis=0)
    elsewhere = movable & ~on_home
    signatures = np.unique(state.pod_signature[elsewhere])
    guests = signatures[state.eligible[signatures][:, home].any(axis=1)] if len(signatures) else signatures
    if len(guests):
        related[state.pod_node[elsewhere & np.isin(state.pod_signature, guests)]] = True
    return related


def _movable(state: ClusterState) -> np.ndarray:
    """Mask of pods that are placed and not locked."""
    movable: np.ndarray = (state.pod_node >= 0) & ~state.pod_locked
    return movable


def _closed(state: ClusterState, nodes: np.ndarray, busy: np.ndarray) -> bool:
    """No movable pod on ``nodes`` is allowed (by its static rules) on a busy node outside them."""
    outside = busy.copy()
    outside[nodes] = False
    if not outside.any():
        return True
    inside = np.zeros(len(state.node_names), dtype=bool)
    inside[nodes] = True
    pods = _movable(state) & inside[np.maximum(state.pod_node, 0)]
    if not pods.any():
        return True
    signatures = np.unique(state.pod_signature[pods])
    return not bool(state.eligible[signatures][:, outside].any())


def improve_neighbourhood(task: LnsTask) -> Neighbourhood:
    """Solve one neighbourhood exactly (``exact.solve_exact``, warm-started where the pods are)."""
    sub = task.state
    empty_now = int((sub.pods_per_node == 0).sum())
    movable = np.flatnonzero((sub.pod_node >= 0) & ~sub.pod_locked)
    outcome = solve_exact(sub, task.exact, task.budget, {int(p): int(sub.pod_node[p]) for p in movable})
    bound = outcome.proof.empties_bound()
    gain = 0
    if outcome.waves is not None:
        scratch = sub.clone()
        for wave in outcome.waves:
            for p, _, destination in wave:
                scratch.move(p, destination)
        gain = int((scratch.pods_per_node == 0).sum()) - empty_now
    settled = bound is not None and bound <= empty_now + max(gain, 0)
    if gain <= 0:
        return Neighbourhood([], 0, settled, outcome.history)
    assert outcome.waves is not None  # a gain comes from waves
    node_ids, pod_ids = sub.node_ids, sub.pod_ids
    waves = [[(int(pod_ids[p]), int(node_ids[s]), int(node_ids[d])) for p, s, d in wave] for wave in outcome.waves]
    return Neighbourhood(waves, gain, settled, outcome.history)
