"""The defrag methods, each a function from the snapshot's state to waves (``METHODS``): IPC
(``heuristic``), the baselines ``random``, ``descheduler`` and ``repack``, ``exact`` (warm-started
from IPC) and ``hybrid`` (the better of IPC and repack-then-IPC, then large-neighbourhood search); the choice ``auto`` makes, the size
limit of ``exact``, the move-minimal pass and the routing that moves every pod at most once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from planner.cluster import Cluster
from planner.engine.common import PlanOptionError
from planner.engine.defrag.options import DefragOptions
from planner.heuristics import baselines
from planner.heuristics.ipc import IpcOptions, IpcResult, run_ipc
from planner.heuristics.trim import end_state, target_of
from planner.limits import MoveBudget, MoveLimits, unavailable_limits
from planner.models.defrag_exact import ExactOptions, model_size, solve_exact
from planner.models.lns import LnsOptions, run_lns
from planner.models.move_minimal import minimise_moves
from planner.runtime.executors import Run
from planner.runtime.ray_executor import ray_cpus
from planner.state import PENDING, ClusterState
from planner.waves import Step, sequence_to_waves, target_to_waves

Progress = Callable[[str, int, int], None]


EXACT_MAX_NODES = 1000


EXACT_MAX_PAIRS = 200_000
"""``exact`` refuses larger instances unless forced (the model would not fit the time or memory)."""


AUTO_EXACT_MAX_NODES = 200


AUTO_EXACT_MAX_PAIRS = 30_000
"""``auto`` solves exactly up to this size, and runs ``hybrid`` above it."""


def _moved_once(
    pristine: ClusterState, end: ClusterState, steps: list[list[Step]], limits: MoveLimits, extra: dict[str, Any], keep_prefix: bool = True
) -> tuple[list[list[Step]], ClusterState]:
    """A plan that moves some pod twice (an IPC chain that moved it again, a detour) made to move
    every pod at most once (``route_once``), from the snapshot's state (``pristine``, not changed)
    with ``end``'s locks."""
    start = pristine.clone()
    start.pod_locked = end.pod_locked
    return route_once(start, end, steps, MoveBudget.of(start, limits), extra, keep_prefix)


def route_once(
    start: ClusterState, end: ClusterState, steps: list[list[Step]], budget: MoveBudget, extra: dict[str, Any], keep_prefix: bool = True
) -> tuple[list[list[Step]], ClusterState]:
    """A plan from ``start`` (not changed) ending in ``end`` that moves some pod twice, made to move
    every pod at most once: ``end`` routed again from ``start`` without detours (moves the router
    cannot make that way are dropped, never made twice), or, when ``keep_prefix`` and it is better
    (more empty nodes, then fewer moves, then fewer GPUs moved), the plan's waves up to the first
    that moves a pod again (each wave of a legal plan stays legal after the same earlier waves).
    ``extra`` gets ``move_once_rerouted`` (second moves) and ``move_once_dropped`` (moves of the end
    state the returned plan does not make). The waves and their end state.

    IPC itself runs as published: forbidding it to move a pod again lost 10-30% of its empty nodes on
    25-200-node ASI-like snapshots, while routing its end state again kept them all (no move dropped
    on 16 of 16; ``benchmarks/defrag_moves.py`` compares both ways). Routing again can drop every
    move of a plan whose chains need a pod twice, where the waves before it still vacate a node."""
    counts: dict[int, int] = {}
    for wave in steps:
        for p, _, _ in wave:
            counts[p] = counts.get(p, 0) + 1
    if all(count == 1 for count in counts.values()):
        return steps, end
    target = target_of(start, end)
    routed_end = start.clone()
    routed = target_to_waves(routed_end, target, budget)
    waves, final = routed.waves, routed_end
    if keep_prefix:
        seen: set[int] = set()
        cut = 0
        while cut < len(steps) and not any(p in seen for p, _, _ in steps[cut]):
            seen.update(p for p, _, _ in steps[cut])
            cut += 1
        prefix_end = end_state(start, steps[:cut])

        def score(state: ClusterState, plan: list[list[Step]]) -> tuple[int, int, float]:
            return int((state.pods_per_node == 0).sum()), -sum(len(w) for w in plan), -float(sum(start.pod_gpus[p] for w in plan for p, _, _ in w))

        if score(prefix_end, steps[:cut]) > score(routed_end, routed.waves):
            waves, final = steps[:cut], prefix_end
    made = sum(1 for p, n in target.items() if final.pod_node[p] == n)
    extra.update(move_once_rerouted=sum(count - 1 for count in counts.values()), move_once_dropped=len(target) - made)
    return waves, final


def hold_pods(cluster: Cluster, state: ClusterState, limits: MoveLimits) -> dict[str, int]:
    """Lock in ``state`` (its own copy of the locks) the pods the limits forbid to move: outside the
    namespace scope, or of a job whose disruption budget is 0. Counts by reason (empty: none held)."""
    job_limits = unavailable_limits(cluster, limits.max_unavailable_per_job)
    scoped = limits.only_namespaces is not None or bool(limits.exclude_namespaces)
    if not scoped and all(limit > 0 for _, limit in job_limits.values()):
        return {}
    held = {"namespace_scope": 0, "disruption_budget": 0}
    locked = state.pod_locked.copy()
    for p, pod in enumerate(cluster.pods):
        if pod.node is None or locked[p]:
            continue
        if not limits.may_move(pod):
            locked[p] = True
            held["namespace_scope"] += 1
        elif pod.name in job_limits and job_limits[pod.name][1] == 0:
            locked[p] = True
            held["disruption_budget"] += 1
    state.pod_locked = locked
    return {reason: count for reason, count in held.items() if count}


def _trim(
    start: ClusterState, steps: list[list[Step]], end: ClusterState, options: DefragOptions, limits: MoveLimits, extra: dict[str, Any]
) -> tuple[list[list[Step]], ClusterState]:
    """The move-minimal pass (``move_minimal.py``) over a plan from ``start`` ending in ``end`` within
    ``limits``: the waves to return and their end state."""
    exact = _exact_options(options, options.time_limit_s) if options.trim == "exact" else None
    result = minimise_moves(start, steps, MoveBudget.of(start, limits), options.trim, exact)
    extra.update(result.report)
    if result.waves is steps:
        return steps, end
    return result.waves, end_state(start, result.waves)


def _ipc_options(options: DefragOptions) -> IpcOptions:
    return IpcOptions(
        partition_size=options.partition_size, depth=options.depth, rounds=options.rounds, min_round_yield=options.min_round_yield, seed=options.seed
    )


def _ipc(state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None) -> tuple[list[list[Step]], dict[str, Any]]:
    result: IpcResult = run_ipc(state, _ipc_options(options), budget, run, progress)
    extra = {
        "rounds_run": result.rounds_run,
        "partitions": result.partitions,
        "candidates_tried": result.candidates_tried,
        "vacated_per_round": result.vacated_per_round,
        "ejection_attempts_per_round": result.attempts_per_round,
    }
    return sequence_to_waves(result.sequence), extra


def _exact_options(options: DefragOptions, time_limit_s: float, **changes: Any) -> ExactOptions:
    """The solver options of ``options``, for a solve of ``time_limit_s`` seconds (``changes`` override)."""
    fields = {
        "solver": options.solver,
        "time_limit_s": time_limit_s,
        "solver_workers": options.solver_workers,
        "formulation": options.formulation,
        "seed": options.seed,
        "deterministic": options.deterministic,
        "lexicographic": options.lexicographic,
    }
    return ExactOptions(**{**fields, **changes})


def _exact(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None
) -> tuple[list[list[Step]], dict[str, Any], dict[str, Any]]:
    """IPC for a warm start, then the exact model; returns the better executed plan of the two (IPC's
    as it would be returned: routed again under ``move_once``), and in the solver fields ``claims``,
    what the first solve's bound proves about a plan (``exact.Proof.claims``), which ``_finish`` reads
    against the plan it returns."""
    ipc_state = state.clone()
    ipc_start = time.perf_counter()
    ipc_waves, _ = _ipc(ipc_state, options, budget.copy(), run, None)
    if budget.move_once:  # IPC's plan as it would be returned (routed again if it moves a pod twice)
        ipc_waves, _ = route_once(state, ipc_state, ipc_waves, budget.copy(), {})
    ipc_wall = time.perf_counter() - ipc_start
    movable = np.flatnonzero((state.pod_node != PENDING) & ~state.pod_locked)
    hint = {int(p): int(ipc_state.pod_node[p]) for p in movable}
    outcome = solve_exact(state, _exact_options(options, max(0.5, options.time_limit_s - ipc_wall)), budget, hint)
    proof = outcome.proof

    def score(waves: list[list[Step]]) -> tuple[int, int, int]:
        scratch = state.clone()
        for wave in waves:
            for p, _, destination in wave:
                scratch.move(p, destination)
        return int((scratch.pods_per_node == 0).sum()), -sum(len(w) for w in waves), -proof.gpu_units_of(waves)

    extra: dict[str, Any] = {
        "formulation": outcome.formulation,
        "units": "exact" if outcome.exact_units else "relaxed",
        "variables": outcome.variables,
        "constraints": outcome.constraints,
        "solve_wall_s": round(outcome.solve_wall_s, 3),
        "solver_status": outcome.solver_status,
        "solver_message": outcome.message,
        "resolves": outcome.resolves,
        "routed_moves": outcome.routed_moves,
        "dropped_moves": outcome.dropped_moves,
        "ipc_objective": score(ipc_waves)[0],
        "solves": outcome.history,
    }
    waves = outcome.waves
    if waves is None:
        extra["fallback"] = f"ipc: the solver returned no solution ({outcome.solver_status}: {outcome.message})"
        waves = ipc_waves
    elif score(ipc_waves) > score(waves):
        extra["fallback"] = "ipc: IPC's plan is better than the executable exact plan (empty nodes, then moves, then GPUs moved)"
        extra["routed_moves"] = extra["dropped_moves"] = 0
        waves = ipc_waves

    def claims_of(empties: int, plan: list[list[Step]]) -> tuple[dict[str, Any], dict[str, Any]]:
        """What the first solve's bound proves about the plan finally returned (``exact.Proof.claims``):
        the status and bound, and the report's extra claims."""
        claims = proof.claims(empties, plan)
        if outcome.solver_status in ("error", "infeasible"):
            status = "heuristic"  # no proof at all: the plan is IPC's, solver_status says what went wrong
        elif claims.status == "optimal":
            status = "optimal"
        else:
            status = "timeout" if outcome.waves is None else "feasible"
        proven: dict[str, Any] = {"lexicographic_optimal": claims.lexicographic_optimal, "moves_bound": claims.moves_bound}
        if claims.bound_error:
            proven["bound_error"] = claims.bound_error
        return {"status": status, "bound": claims.bound}, proven

    for wave in waves:
        for p, _, destination in wave:
            state.move(p, destination)
    return waves, {"solver": options.solver, "claims": claims_of}, extra


def _best_start(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None
) -> tuple[list[list[Step]], dict[str, Any]]:
    """The hybrid's start: the better (more empty nodes, then fewer moves, then fewer GPUs moved) of
    IPC alone and IPC after a repack (``baselines.repack``: best-fit decreasing of every movable pod,
    routed into waves), each as it would be returned (routed again under ``move_once``). ``state``
    and ``budget`` are moved and spent by the chosen plan.

    Why both: IPC's chains vacate one node at a time and stall where the holes are small; at 80% GPU
    allocation on ASI-like snapshots of 300-2,000 nodes it stopped 4-31% under the bound (500 nodes:
    62, where the exact method proves 90 optimal), and repacking first then letting IPC finish
    reached the bound, so the optimum, on 7 of 8 of them. Where IPC alone is better (some seeds at
    85%), it is kept."""
    ipc_state, ipc_budget = state.clone(), budget.copy()
    ipc_waves, extra = _ipc(ipc_state, options, ipc_budget, run, progress)
    packed_state, packed_budget = state.clone(), budget.copy()
    packed = baselines.repack(packed_state, packed_budget)
    more, _ = _ipc(packed_state, options, packed_budget, run, None)
    candidates = {"ipc": (ipc_waves, ipc_state), "repack+ipc": ((packed.waves or []) + more, packed_state)}
    scored = {}
    for name, (waves, end) in candidates.items():
        if budget.move_once:  # as it would be returned (routed again if it moves a pod twice)
            waves, end = route_once(state, end, waves, budget.copy(), {})
        gpus = float(sum(state.pod_gpus[p] for wave in waves for p, _, _ in wave))
        scored[name] = ((int((end.pods_per_node == 0).sum()), -sum(len(w) for w in waves), -gpus), waves)
    chosen = max(scored, key=lambda name: scored[name][0])
    waves = scored[chosen][1]
    for wave in waves:
        for p, source, destination in wave:
            state.move(p, destination)
            budget.spend(source, destination)
    extra.update(
        ipc_objective=scored["ipc"][0][0],
        repack_ipc_objective=scored["repack+ipc"][0][0],
        start=chosen,
        start_objective=scored[chosen][0][0],
    )
    return waves, extra


def _hybrid(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None, start: float
) -> tuple[list[list[Step]], dict[str, Any]]:
    """The better start of IPC and repack-then-IPC (``_best_start``), then large-neighbourhood search
    with the exact model for the rest of the time limit."""
    waves, extra = _best_start(state, options, budget, run, progress)
    parallel = max(1, options.workers or (ray_cpus() if options.executor == "ray" else 2))
    if options.solver == "highs":
        # one HiGHS thread per neighbourhood solve: HiGHS's worker threads spin, and on a busy machine
        # 2-thread neighbourhood solves overran a 6 s hybrid to 25-36 s (1 thread: 6.3-6.4 s); two
        # 2-thread solves on 2 cores ran one 27 s past its 8 s limit
        solver_workers = 1
    else:
        solver_workers = max(1, options.solver_workers // parallel)
    # neighbourhood solves: always CP-SAT's deterministic search (a reproducible hybrid for a given
    # number of rounds) and HiGHS's default tolerance (their proofs only steer the search)
    exact = _exact_options(options, LnsOptions.solve_time_s, solver_workers=solver_workers, deterministic=True, strict=False)
    lns = run_lns(
        state,
        LnsOptions(
            time_limit_s=max(0.0, options.time_limit_s - (time.perf_counter() - start)),
            exact=exact,
            seed=options.seed,
            parallel=parallel,
        ),
        budget,
        run,
        progress,
    )
    extra.update(
        lns_rounds=lns.rounds,
        lns_neighbourhoods=lns.neighbourhoods,
        lns_improved=lns.improved,
        lns_gained_empty_nodes=lns.gained_empties,
        lns_proven_optimal=lns.proven_optimal,
        lns_solved_with=["/".join(how) for how in sorted(lns.solved_with)],
    )
    return waves + lns.waves, extra


SECONDS_PER_POD = 5e-4


SECONDS_PER_NODE = 1e-4
"""Planning cost in one worker process, with a margin: IPC and the baselines took 0.1-0.4 ms per pod
on 5,000 to 37,707-node ASI-like snapshots (benchmarks/results/defrag_heuristics.md), checking,
metrics and validation included."""


def estimated_runtime_s(nodes: int, pods: int, options: DefragOptions) -> float:
    """About how long planning takes in one process: proportional to the snapshot, plus the solver
    time for the methods that use a solver (twice for ``compare``, which also runs IPC alone). The
    hybrid's start runs IPC twice (alone, and after a repack) within its time limit when it can, and
    past it when one IPC takes longer than the limit."""
    base = SECONDS_PER_POD * pods + SECONDS_PER_NODE * nodes
    if options.method in ("hybrid", "auto"):
        return base + max(options.time_limit_s, base)
    if options.method == "exact":
        return base + options.time_limit_s
    if options.method == "compare":
        return 2 * base + options.time_limit_s
    return base


def choose_auto(state: ClusterState) -> tuple[str, str]:
    """``exact`` when the instance is small enough to solve in the time limit, else ``hybrid``."""
    pods, pairs = model_size(state)
    nodes = len(state.node_names)
    size = f"{nodes:,} nodes, {pods:,} movable pods, {pairs:,} pod-node pairs"
    if nodes <= AUTO_EXACT_MAX_NODES and pairs <= AUTO_EXACT_MAX_PAIRS:
        return "exact", f"{size} is within the exact limit ({AUTO_EXACT_MAX_NODES} nodes, {AUTO_EXACT_MAX_PAIRS:,} pairs)"
    return "hybrid", f"{size} is above the exact limit ({AUTO_EXACT_MAX_NODES} nodes, {AUTO_EXACT_MAX_PAIRS:,} pairs)"


def check_exact_size(state: ClusterState, options: DefragOptions) -> None:
    _, pairs = model_size(state)
    nodes = len(state.node_names)
    if not options.force and (nodes > EXACT_MAX_NODES or pairs > EXACT_MAX_PAIRS):
        raise PlanOptionError(
            "method",
            f"the instance is too large to solve exactly ({nodes:,} nodes, {pairs:,} pod-node pairs; "
            f"limit {EXACT_MAX_NODES:,} nodes and {EXACT_MAX_PAIRS:,} pairs): use {{method=hybrid}} "
            "(IPC improved by the solver on neighbourhoods), or {force} to try anyway",
        )


MethodRun = Callable[[ClusterState, DefragOptions, MoveBudget, Run, "Progress | None", float], tuple[str, list[list[Step]], dict[str, Any], dict[str, Any]]]
"""A method: from the state (changed to the end state), the options, the budget, where partitions
run, progress and the start time, to its name in the report, its waves, its solver fields and its
report's extra fields."""


def _heuristic(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None, start: float
) -> tuple[str, list[list[Step]], dict[str, Any], dict[str, Any]]:
    steps, extra = _ipc(state, options, budget, run, progress)
    return "ipc", steps, {}, extra


def _repack(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None, start: float
) -> tuple[str, list[list[Step]], dict[str, Any], dict[str, Any]]:
    outcome = baselines.repack(state, budget)
    extra = {"dropped_moves": outcome.dropped, "routed_moves": outcome.routed, "target_vacated": outcome.target_vacated}
    return "repack", outcome.waves or [], {}, extra


def _evict_and_replace(name: str, policy: str) -> MethodRun:
    """A baseline that evicts the pods of nodes below the threshold and places them by ``policy``."""

    def method(
        state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None, start: float
    ) -> tuple[str, list[list[Step]], dict[str, Any], dict[str, Any]]:
        outcome = baselines.evict_and_replace(state, policy, options.threshold, options.seed, budget)
        return name, sequence_to_waves(outcome.sequence), {}, {"threshold": options.threshold}

    return method


def _exact_method(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None, start: float
) -> tuple[str, list[list[Step]], dict[str, Any], dict[str, Any]]:
    steps, solver_fields, extra = _exact(state, options, budget, run, progress)
    return "exact", steps, solver_fields, extra


def _hybrid_method(
    state: ClusterState, options: DefragOptions, budget: MoveBudget, run: Run, progress: Progress | None, start: float
) -> tuple[str, list[list[Step]], dict[str, Any], dict[str, Any]]:
    steps, extra = _hybrid(state, options, budget, run, progress, start)
    return "hybrid", steps, {}, extra


METHODS: dict[str, MethodRun] = {
    "heuristic": _heuristic,
    "repack": _repack,
    "random": _evict_and_replace("random", "random"),
    "descheduler": _evict_and_replace("descheduler", "binpack"),
    "exact": _exact_method,
    "hybrid": _hybrid_method,
}
"""The methods that plan by themselves (``auto`` picks exact or hybrid; ``compare`` runs two)."""
