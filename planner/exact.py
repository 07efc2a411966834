"""Exact defragmentation made executable, with claims that hold for the problem the user asked.

A solver returns a final state. Reaching it can need chains (a pod must leave before another can
arrive) and can be impossible outright (two full nodes swapping pods). ``waves.target_to_waves``
starts every move whose destination has room, breaks deadlocks by parking pods on nodes with room,
never beyond the user's limits, and reports the moves it still could not execute. Those (pod,
destination) pairs are then forbidden and the model is solved again (pod-level formulation), up to
``MAX_RESOLVES`` times, and the best executed plan of all attempts is kept.

What is proven, and by what:

* The first model is a relaxation of the user's problem: every plan within the user's limits ends
  in a state that solves it, with at most the plan's moves and GPUs moved (a pod moved twice counts
  twice in the plan, once in the end state). So the solver's bound on it bounds every plan: the
  ``Proof``. It holds even when the solve was cut short by the time limit.
* Re-solves forbid (pod, node) pairs: they are restrictions, whose solutions may be easier to
  execute but whose bounds say nothing about the user's problem. They are never reported as bounds.
* ``Proof.claims`` reads the first bound against the plan actually returned: ``optimal`` only when
  the plan's empty nodes equal the bound; ``lexicographic_optimal`` only when the plan's weighted
  value (empty nodes, then moves, then GPUs moved, all of the executed plan) reaches the bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from planner.limits import MoveBudget
from planner.models.backends import solve
from planner.models.defrag import DefragModel, build_defrag_model
from planner.models.milp import MilpResult
from planner.state import ClusterState
from planner.waves import Step, target_to_waves

MAX_RESOLVES = 3


@dataclass(frozen=True)
class ExactOptions:
    """How to solve: back-end, time, threads, formulation, seed. Limits come as a ``MoveBudget``."""

    solver: str = "highs"
    time_limit_s: float = 60.0
    solver_workers: int = 8
    formulation: str = "auto"
    seed: int = 0
    deterministic: bool = False
    strict: bool = True
    """HiGHS: the tight feasibility tolerance needed for correct proofs (``models/highs.py``)."""


@dataclass(frozen=True)
class Claims:
    """What the proof establishes about one plan."""

    status: str
    """``optimal`` (empty nodes equal the bound) or ``feasible``."""
    bound: int | None
    """Proven upper bound on the empty nodes of any plan within the limits."""
    lexicographic_optimal: bool
    """Proven: most empty nodes, then fewest moves, then fewest GPUs moved."""
    moves_bound: int | None
    """Proven lower bound on the moves of any plan ending with as many empty nodes as this one."""
    bound_error: str | None = None
    """Set (and the bound withheld) if the plan beats the bound: a bug in the model, reported."""


@dataclass
class Proof:
    """The first, unrestricted solve's bound on the weighted objective, and the weights to read it."""

    weighted_bound: float | None
    w1: int
    w2: int
    gpu_max: int
    gpu_units: list[int]
    max_empties: int
    exact_gpu_units: bool

    @classmethod
    def of(cls, model: DefragModel, result: MilpResult) -> Proof:
        bound = result.bound if result.status not in ("infeasible", "error") else None
        if bound is not None and not math.isfinite(bound):
            bound = None
        return cls(bound, model.w1, model.w2, model.gpu_max, model.gpu_units, len(model.empty_vars), model.exact_gpu_units)

    def empties_bound(self) -> int | None:
        if self.weighted_bound is None:
            return None
        return max(0, min(self.max_empties, math.ceil(self.weighted_bound / self.w1 - 1e-9)))

    def moves_bound(self, empties: int) -> int | None:
        """Fewest moves of any plan ending with ``empties`` empty nodes.

        Such a plan's end state solves the model with value W1 E - W2 d - g <= bound, where d (its
        displaced pods) is at most the plan's moves and g <= G; so d >= (W1 E - G - bound) / W2.
        Half a unit of slack absorbs solver tolerance.
        """
        if self.weighted_bound is None:
            return None
        return max(0, math.ceil((self.w1 * empties - self.gpu_max - self.weighted_bound - 0.5) / self.w2))

    def gpu_units_of(self, waves: list[list[Step]]) -> int:
        return sum(self.gpu_units[p] for wave in waves for p, _, _ in wave)

    def claims(self, empties: int, waves: list[list[Step]]) -> Claims:
        bound = self.empties_bound()
        if bound is None:
            return Claims("feasible", None, False, None)
        if empties > bound:
            return Claims("feasible", None, False, None, f"the plan empties {empties} nodes, above the model's bound {bound}")
        moves = sum(len(w) for w in waves)
        weighted = self.w1 * empties - self.w2 * moves - self.gpu_units_of(waves)
        lexicographic = empties == bound and self.exact_gpu_units and weighted >= self.weighted_bound - 0.5
        return Claims("optimal" if empties == bound else "feasible", bound, lexicographic, self.moves_bound(empties))


@dataclass
class ExactOutcome:
    """What the exact planner achieved; ``waves`` is None when no solve found a solution."""

    waves: list[list[Step]] | None
    solver_status: str
    """The first solve's status as the solver reports it (for its own model, not for the plan)."""
    message: str
    formulation: str
    proof: Proof
    resolves: int = 0
    routed_moves: int = 0
    dropped_moves: int = 0
    variables: int = 0
    constraints: int = 0
    solve_wall_s: float = 0.0
    history: list[dict] = field(default_factory=list)
    exact_units: bool = True
    """The model's units are exact (``models/units.py``); otherwise it is a relaxation."""


def solve_exact(
    state: ClusterState, options: ExactOptions, budget: MoveBudget | None = None, hint_target: dict[int, int] | None = None
) -> ExactOutcome:
    """Solve ``state`` exactly within ``budget`` (neither is changed) and turn the solution into waves."""
    budget = MoveBudget.of(state) if budget is None else budget
    forbidden: set[tuple[int, int]] = set()
    deadline = time.perf_counter() + options.time_limit_s
    outcome: ExactOutcome | None = None
    best_key: tuple[int, int, int] | None = None
    for attempt in range(MAX_RESOLVES + 1):
        remaining = deadline - time.perf_counter()
        if attempt > 0 and remaining <= 0.5:
            break
        model = build_defrag_model(state, budget, forbidden, "pod" if forbidden else options.formulation)
        hint = model.hint(hint_target) if hint_target is not None else None
        result = solve(
            model.milp, options.solver, max(remaining, 0.5), options.solver_workers, hint, options.seed, options.deterministic, options.strict
        )
        record = {
            "attempt": attempt,
            "solver": result.solver,
            "formulation": model.formulation,
            "status": result.status,
            "model_empties": None if result.values is None else model.empties(result.values),
            "wall_s": round(result.wall_s, 3),
            "forbidden_pairs": len(forbidden),
        }
        if outcome is None:  # the unrestricted model: its bound is the proof
            record["bound"] = model.empties_bound(result.bound) if result.status not in ("infeasible", "error") else None
            outcome = ExactOutcome(
                None, result.status, result.message, model.formulation, Proof.of(model, result),
                variables=model.milp.num_vars, constraints=model.milp.num_rows, exact_units=model.exact_units,
            )
        outcome.history.append(record)
        outcome.solve_wall_s += result.wall_s
        outcome.resolves = attempt
        if result.values is None:
            break
        scratch = state.clone()
        executed = target_to_waves(scratch, model.target(result.values), budget)
        empties = int((scratch.pods_per_node == 0).sum())
        moves = sum(len(w) for w in executed.waves)
        key = (empties, -moves, -outcome.proof.gpu_units_of(executed.waves))
        record.update(executed_empties=empties, moves=moves, routed=executed.routed, dropped=len(executed.dropped))
        if best_key is None or key > best_key:
            best_key = key
            outcome.waves, outcome.routed_moves, outcome.dropped_moves = executed.waves, executed.routed, len(executed.dropped)
        if not executed.dropped:
            break
        forbidden |= {(p, n) for p, _, n in executed.dropped}
    assert outcome is not None
    return outcome


def model_size(state: ClusterState) -> tuple[int, int]:
    """(movable pods, eligible pod-node pairs): how large the pod-level model of ``state`` would be."""
    movable = (state.pod_node >= 0) & ~state.pod_locked
    signatures = state.pod_signature[movable]
    per_signature = state.eligible.sum(axis=1)
    return int(movable.sum()), int(per_signature[signatures].sum())
