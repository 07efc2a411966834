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
  the plan's empty nodes equal the bound; ``lexicographic_optimal`` only when, in addition, the
  plan's moves and GPUs moved (all of the executed plan, detours included) reach the proven least.

The lexicographic objective (most empty nodes, then fewest moves, then fewest GPUs moved) is solved
two ways (``ExactOptions.lexicographic``):

* ``two-phase`` (default): maximise empty nodes; then, with at least that many empty nodes required,
  minimise W2 * moves + GPUs moved. About as fast as one weighted solve on easy ASI-like instances and
  much faster on the hard ones, where it proves more within the limit (benchmarks/results/defrag_exact.md). The empty-node bound is phase 1's; the
  moves bound is phase 2's, and counts only when phase 1 proved its optimum (phase 2 then ranges
  over every state with the most empty nodes).
* ``weighted``: one solve of W1 * empties - W2 * moves - GPUs moved (``models/defrag.py`` shows the
  weights make it exactly lexicographic); both bounds come from its one bound.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TypedDict

from planner.limits import MoveBudget
from planner.models.backends import solve
from planner.models.defrag import DefragModel, build_defrag_model
from planner.models.defrag_data import ModelTimeout
from planner.models.milp import Milp, MilpResult, PhaseRecord
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
    lexicographic: str = "two-phase"
    """``two-phase`` or ``weighted`` (see the module docstring)."""
    phase_one_share: float = 0.8
    """Two-phase: the share of the time limit phase 1 may use (phase 2 gets the rest)."""


LEXICOGRAPHIC = ("two-phase", "weighted")


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
    """What the first, unrestricted solve proves about every plan within the limits.

    ``empties_upper``: no plan ends with more empty nodes. ``tail_lower(E)``: no plan ending with E
    empty nodes has W2 * moves + GPU units moved below it (None: nothing proven).
    """

    empties_upper: int | None
    w1: int
    w2: int
    gpu_max: int
    gpu_units: list[int]
    exact_gpu_units: bool
    weighted_bound: float | None = None
    """``weighted``: the solver's bound on W1 * empties - W2 * moves - GPUs (valid for every E)."""
    phase_two_bound: float | None = None
    """``two-phase``: bound on -(W2 * moves + GPUs) over states with ``empties_upper`` empty nodes."""

    @classmethod
    def unproven(cls, model: DefragModel) -> Proof:
        return cls(None, model.w1, model.w2, model.gpu_max, model.gpu_units, model.exact_gpu_units)

    @classmethod
    def none(cls, pods: int) -> Proof:
        """No model at all (it could not be built in time)."""
        return cls(None, 1, 1, 0, [0] * pods, False)

    def empties_bound(self) -> int | None:
        return self.empties_upper

    def tail_lower(self, empties: int) -> float | None:
        if self.weighted_bound is not None:
            return self.w1 * empties - self.weighted_bound
        if self.phase_two_bound is not None and empties == self.empties_upper:
            return -self.phase_two_bound
        return None

    def moves_bound(self, empties: int) -> int | None:
        """Fewest moves of any plan ending with ``empties`` empty nodes.

        Such a plan's end state has d displaced pods (at most the plan's moves) and g <= G GPU units
        displaced, with W2 d + g >= tail_lower; so d >= (tail_lower - G) / W2. Half a unit of slack
        absorbs solver tolerance.
        """
        tail = self.tail_lower(empties)
        if tail is None:
            return None
        return max(0, math.ceil((tail - self.gpu_max - 0.5) / self.w2))

    def gpu_units_of(self, waves: list[list[Step]]) -> int:
        return sum(self.gpu_units[p] for wave in waves for p, _, _ in wave)

    def claims(self, empties: int, waves: list[list[Step]]) -> Claims:
        bound = self.empties_bound()
        if bound is None:
            return Claims("feasible", None, False, None)
        if empties > bound:
            return Claims("feasible", None, False, None, f"the plan empties {empties} nodes, above the model's bound {bound}")
        moves = sum(len(w) for w in waves)
        tail = self.tail_lower(empties)
        lexicographic = empties == bound and tail is not None and self.exact_gpu_units and self.w2 * moves + self.gpu_units_of(waves) <= tail + 0.5
        return Claims("optimal" if empties == bound else "feasible", bound, lexicographic, self.moves_bound(empties))


def _empties_from_bound(bound: float | None, scale: int, most: int) -> int | None:
    """Empty nodes implied by a bound on an objective of ``scale`` per empty node (rounded up)."""
    if bound is None or not math.isfinite(bound):
        return None
    return max(0, min(most, math.ceil(bound / scale - 1e-6)))


def solve_model(model: DefragModel, options: ExactOptions, time_limit_s: float, hint: list[int] | None) -> tuple[MilpResult, Proof, list[DefragPhaseRecord]]:
    """Solve ``model`` lexicographically (``options.lexicographic``); the result carrying the final
    values, the proof, and one record per solve."""

    def run(milp: Milp, seconds: float, start: list[int] | None) -> MilpResult:
        return solve(milp, options.solver, max(seconds, 0.5), options.solver_workers, start, options.seed, options.deterministic, options.strict)

    proof = Proof.unproven(model)
    most = len(model.empty_vars)
    if options.lexicographic == "weighted":
        result = run(model.milp, time_limit_s, hint)
        if result.status not in ("infeasible", "error") and result.bound is not None and math.isfinite(result.bound):
            proof.weighted_bound = result.bound
            proof.empties_upper = _empties_from_bound(result.bound, model.w1, most)
        return result, proof, [_record("weighted", result, model)]
    deadline = time.perf_counter() + time_limit_s
    empties = [(e, 1) for e in model.empty_vars]
    first = run(model.milp.with_objective(empties), time_limit_s * options.phase_one_share, hint)
    records = [_record("empty nodes", first, model)]
    if first.status not in ("infeasible", "error"):
        proof.empties_upper = _empties_from_bound(first.bound, 1, most)
    if first.values is None:
        return first, proof, records
    reached = model.empties(first.values)
    tail = [(v, c) for v, c in model.milp.objective.items() if v not in set(model.empty_vars)]
    second_milp = model.milp.with_objective(tail, model.milp.objective_offset, [(empties, reached, None, "phase-one")])
    second = run(second_milp, deadline - time.perf_counter(), first.values)
    records.append(_record("moves", second, model))
    if second.values is None:
        return first, proof, records
    if reached == proof.empties_upper and second.status not in ("infeasible", "error") and second.bound is not None and math.isfinite(second.bound):
        proof.phase_two_bound = second.bound
    return second, proof, records


class DefragPhaseRecord(PhaseRecord):
    """A phase of the exact defrag model: with the empty nodes of its solution."""

    model_empties: int | None


class AttemptRecord(TypedDict, total=False):
    """One attempt of the exact planner (a model built and solved, or the build that ran out of time)."""

    attempt: int
    solver: str
    formulation: str
    status: str
    message: str
    model_empties: int | None
    wall_s: float
    forbidden_pairs: int
    phases: list[DefragPhaseRecord]
    bound: int | None
    executed_empties: int
    moves: int
    routed: int
    dropped: int


def _record(phase: str, result: MilpResult, model: DefragModel) -> DefragPhaseRecord:
    return {
        "phase": phase,
        "status": result.status,
        "objective": result.objective,
        "bound": result.bound,
        "wall_s": round(result.wall_s, 3),
        "model_empties": None if result.values is None else model.empties(result.values),
    }


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
    history: list[AttemptRecord] = field(default_factory=list)
    exact_units: bool = True
    """The model's units are exact (``models/units.py``); otherwise it is a relaxation."""


def solve_exact(state: ClusterState, options: ExactOptions, budget: MoveBudget | None = None, hint_target: dict[int, int] | None = None) -> ExactOutcome:
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
        try:
            model = build_defrag_model(state, budget, forbidden, "pod" if forbidden else options.formulation, deadline)
        except ModelTimeout as err:
            if outcome is None:
                outcome = ExactOutcome(None, "timeout", str(err), options.formulation, Proof.none(len(state.pod_names)))
            outcome.history.append({"attempt": attempt, "status": "timeout", "message": str(err)})
            break
        hint = model.hint(hint_target) if hint_target is not None else None
        result, proof, phases = solve_model(model, options, deadline - time.perf_counter(), hint)
        record: AttemptRecord = {
            "attempt": attempt,
            "solver": result.solver,
            "formulation": model.formulation,
            "status": result.status,
            "model_empties": None if result.values is None else model.empties(result.values),
            "wall_s": round(sum(phase["wall_s"] for phase in phases), 3),
            "forbidden_pairs": len(forbidden),
            "phases": phases,
        }
        if outcome is None:  # the unrestricted model: its proof is the one reported
            record["bound"] = proof.empties_bound()
            outcome = ExactOutcome(
                None,
                phases[0]["status"],
                result.message,
                model.formulation,
                proof,
                variables=model.milp.num_vars,
                constraints=model.milp.num_rows,
                exact_units=model.exact_units,
            )
        outcome.history.append(record)
        outcome.solve_wall_s += record["wall_s"]
        outcome.resolves = attempt
        if result.values is None:
            break
        scratch = state.clone()
        executed = target_to_waves(scratch, model.target(result.values), budget)
        empties = int((scratch.pods_per_node == 0).sum())
        moves = sum(len(w) for w in executed.waves)
        key = (empties, -moves, -outcome.proof.gpu_units_of(executed.waves))
        record["executed_empties"], record["moves"] = empties, moves
        record["routed"], record["dropped"] = executed.routed, len(executed.dropped)
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
