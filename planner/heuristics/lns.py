"""Hybrid: improve an IPC end state by large-neighbourhood search with the exact model.

Each round picks disjoint neighbourhoods: a few nodes with slack that could be vacated (busy, no
locked pod, least allocated first, with some randomness) plus their likely destinations (busy nodes
of the same GPU model with free room, nodes holding locked pods included). Every neighbourhood is an
independent ``ClusterState.subset`` whose pods may move only among its nodes; it is solved exactly
(``models/defrag.py``) with a short time limit, warm-started from where the pods are now, on the
executor in parallel. A neighbourhood whose solution empties more nodes than it has empty now is kept:
its final state is turned into make-before-break waves (``waves.target_to_waves``) and applied. The
rounds' waves follow IPC's, so the whole plan stays executable; ``plan_defrag`` validates it.

Rounds go on until the time limit; the neighbourhood grows when a round improves nothing, so later
rounds search wider. Under ``max_moves`` each neighbourhood may use what is left of the budget and
improvements are accepted in order while the budget lasts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from planner.models.backends import solve
from planner.models.defrag import build_defrag_model
from planner.state import ClusterState
from planner.waves import Step, target_to_waves

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class LnsOptions:
    time_limit_s: float = 60.0
    neighbourhood_nodes: int = 40
    seeds_per_neighbourhood: int = 6
    solve_time_s: float = 5.0
    solver: str = "cpsat"
    solver_workers: int = 4
    max_moves: int | None = None
    seed: int = 0
    parallel: int = 2
    """Neighbourhoods solved per round (run on the executor)."""


@dataclass
class LnsTask:
    state: ClusterState
    options: LnsOptions
    budget: int | None


@dataclass
class LnsResult:
    waves: list[list[Step]] = field(default_factory=list)
    rounds: int = 0
    neighbourhoods: int = 0
    improved: int = 0
    gained_empties: int = 0
    proven_optimal: int = 0


def run_lns(state: ClusterState, options: LnsOptions, run_groups: Callable, progress: Progress | None = None) -> LnsResult:
    """Improve ``state`` (mutated to the new end state) within ``options.time_limit_s``."""
    rng = np.random.default_rng([options.seed, 7])
    deadline = time.perf_counter() + options.time_limit_s
    budget = options.max_moves
    size = options.neighbourhood_nodes
    result = LnsResult()
    while time.perf_counter() + 1.0 < deadline and (budget is None or budget > 0):
        remaining = deadline - time.perf_counter()
        solve_time = min(options.solve_time_s, max(0.5, remaining - 0.5))
        groups = pick_neighbourhoods(state, rng, options.parallel, size, options.seeds_per_neighbourhood)
        if not groups:
            break
        task_options = LnsOptions(**{**options.__dict__, "solve_time_s": solve_time})
        outcomes = run_groups(improve_neighbourhood, [LnsTask(state.subset(g), task_options, budget) for g in groups])
        result.rounds += 1
        result.neighbourhoods += len(groups)
        improved_now = 0
        round_waves: list[list[Step]] = []
        for waves, gain, proven in outcomes:
            result.proven_optimal += proven
            if not waves:
                continue
            moves = sum(len(w) for w in waves)
            if budget is not None and moves > budget:
                continue
            for w, wave in enumerate(waves):
                if w == len(round_waves):
                    round_waves.append([])
                round_waves[w].extend(wave)
            for wave in waves:
                for p, _, destination in wave:
                    state.move(p, destination)
            if budget is not None:
                budget -= moves
            improved_now += 1
            result.gained_empties += gain
        result.waves.extend(round_waves)
        result.improved += improved_now
        if improved_now == 0:
            size = min(int(size * 1.5) + 1, len(state.node_names))
        if progress is not None:
            progress("lns", result.rounds, 0)
    return result


def pick_neighbourhoods(
    state: ClusterState, rng: np.random.Generator, count: int, size: int, seeds: int
) -> list[np.ndarray]:
    """Up to ``count`` disjoint node sets: nodes with slack to vacate plus likely destinations."""
    busy = state.pods_per_node > 0
    locked_nodes = np.zeros(len(state.node_names), dtype=bool)
    locked_nodes[state.pod_node[state.pod_locked & (state.pod_node >= 0)]] = True
    allocated = state.allocated_gpus()
    share = np.divide(allocated, state.cap_gpus, out=np.ones(len(allocated)), where=state.cap_gpus > 0)
    free = state.free_devices()
    candidates = np.flatnonzero(busy & ~locked_nodes & (share < 1))
    if len(candidates) == 0:
        return []
    # easiest to vacate first, with noise so that rounds differ
    order = candidates[np.argsort(share[candidates] + rng.random(len(candidates)) * 0.5, kind="stable")]
    model = state.node_model
    taken = np.zeros(len(busy), dtype=bool)
    groups = []
    for seed_node in order.tolist():
        if len(groups) == count:
            break
        if taken[seed_node]:
            continue
        same = (model == model[seed_node]) & busy & ~taken
        vacate = [n for n in order.tolist() if same[n] and not locked_nodes[n]][:seeds]
        destinations = np.flatnonzero(same & (free > 0))
        destinations = destinations[~np.isin(destinations, vacate)]
        want = max(0, size - len(vacate))
        if len(destinations) > want:
            # prefer the fullest nodes that still have room, then a random few
            ranked = destinations[np.lexsort((rng.random(len(destinations)), free[destinations]))]
            half = want // 2
            rest = ranked[half:]
            destinations = np.concatenate([ranked[:half], rng.choice(rest, size=want - half, replace=False)])
        nodes = np.unique(np.concatenate([np.array(vacate, dtype=np.int64), destinations.astype(np.int64)]))
        if len(nodes) < 2:
            taken[seed_node] = True
            continue
        taken[nodes] = True
        groups.append(nodes)
    return groups


def improve_neighbourhood(task: LnsTask) -> tuple[list[list[Step]] | None, int, int]:
    """Solve one neighbourhood exactly; its waves (cluster indexes) when it empties more nodes."""
    sub = task.state
    options = task.options
    empty_now = int((sub.pods_per_node == 0).sum())
    model = build_defrag_model(sub, task.budget)
    result = solve(model.milp, options.solver, options.solve_time_s, options.solver_workers, model.hint({}), options.seed, True)
    proven = int(result.status == "optimal")
    if result.values is None or model.empties(result.values) <= empty_now:
        return None, 0, proven
    executed = target_to_waves(sub.clone(), model.target(result.values))
    scratch = sub.clone()
    for wave in executed.waves:
        for p, _, destination in wave:
            scratch.move(p, destination)
    gain = int((scratch.pods_per_node == 0).sum()) - empty_now
    if gain <= 0:
        return None, 0, proven
    node_ids, pod_ids = sub.node_ids, sub.pod_ids
    waves = [[(int(pod_ids[p]), int(node_ids[s]), int(node_ids[d])) for p, s, d in wave] for wave in executed.waves]
    return waves, gain, proven
