"""Exact defragmentation made executable: model, solver, final state, make-before-break waves.

A solver returns a final state. Reaching it can need chains (a pod must leave before another can
arrive) and can be impossible outright (two full nodes swapping pods). ``waves.target_to_waves``
starts every move whose destination has room, routes blocked pods through nodes with room when
nothing can start, and reports the moves it still could not execute. Those (pod, destination) pairs
are then forbidden and the model is solved again (pod-level formulation), up to ``MAX_RESOLVES``
times; if moves are still dropped, the executable part of the plan is returned and its status says
it is no longer the solver's optimum. The caller validates every plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from planner.models.backends import solve
from planner.models.defrag import build_defrag_model
from planner.models.milp import MilpResult
from planner.state import ClusterState
from planner.waves import Step, target_to_waves

MAX_RESOLVES = 3


@dataclass(frozen=True)
class ExactOptions:
    solver: str = "cpsat"
    time_limit_s: float = 60.0
    solver_workers: int = 8
    formulation: str = "auto"
    max_moves: int | None = None
    max_moves_per_node: int | None = None
    same_asw: bool = False
    seed: int = 0
    deterministic: bool = False


@dataclass
class ExactOutcome:
    """What the exact planner achieved; ``waves`` is None when the solver found no solution."""

    waves: list[list[Step]] | None
    status: str
    formulation: str
    solver_empties: int | None
    bound_empties: int | None
    result: MilpResult
    resolves: int = 0
    routed_moves: int = 0
    dropped_moves: int = 0
    variables: int = 0
    constraints: int = 0
    solve_wall_s: float = 0.0
    history: list[dict] = field(default_factory=list)


def solve_exact(state: ClusterState, options: ExactOptions, hint_target: dict[int, int] | None = None) -> ExactOutcome:
    """Solve ``state`` exactly (``state`` is left unchanged) and turn the solution into waves."""
    forbidden: set[tuple[int, int]] = set()
    deadline = time.perf_counter() + options.time_limit_s
    outcome: ExactOutcome | None = None
    for attempt in range(MAX_RESOLVES + 1):
        remaining = deadline - time.perf_counter()
        if attempt > 0 and remaining <= 0.5:
            break
        formulation = "pod" if forbidden else options.formulation
        model = build_defrag_model(
            state, options.max_moves, forbidden, formulation, options.max_moves_per_node, options.same_asw
        )
        hint = model.hint(hint_target) if hint_target is not None else None
        result = solve(
            model.milp,
            options.solver,
            max(remaining, 0.5),
            options.solver_workers,
            hint,
            options.seed,
            options.deterministic,
        )
        bound = model.empties_bound(result.bound) if result.status != "infeasible" else None
        record = {
            "attempt": attempt,
            "formulation": model.formulation,
            "status": result.status,
            "empties": None if result.values is None else model.empties(result.values),
            "bound": bound,
            "wall_s": round(result.wall_s, 3),
            "forbidden_pairs": len(forbidden),
        }
        if result.values is None:
            if outcome is not None:  # a re-solve ran out of time: keep the last executable solution
                outcome.history.append(record)
                return outcome
            return ExactOutcome(
                None, result.status, model.formulation, None, bound, result, attempt, 0, 0,
                model.milp.num_vars, model.milp.num_rows, result.wall_s, [record],
            )
        target = model.target(result.values)
        scratch = state.clone()
        executed = target_to_waves(scratch, target)
        outcome = ExactOutcome(
            executed.waves,
            result.status if not executed.dropped else "feasible",
            model.formulation,
            model.empties(result.values),
            bound,
            result,
            attempt,
            executed.routed,
            len(executed.dropped),
            model.milp.num_vars,
            model.milp.num_rows,
            (outcome.solve_wall_s if outcome else 0.0) + result.wall_s,
            [*(outcome.history if outcome else []), record],
        )
        if not executed.dropped:
            return outcome
        forbidden |= {(p, n) for p, _, n in executed.dropped}
    assert outcome is not None
    return outcome


def model_size(state: ClusterState) -> tuple[int, int]:
    """(movable pods, eligible pod-node pairs): how large the pod-level model of ``state`` would be."""
    movable = (state.pod_node >= 0) & ~state.pod_locked
    signatures = state.pod_signature[movable]
    per_signature = state.eligible.sum(axis=1)
    return int(movable.sum()), int(per_signature[signatures].sum())
