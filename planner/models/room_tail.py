"""The tail phases of the exact room model's lexicographic solve (``models/room_exact.py``): with every
count held, the fewest moves, then the fewest GPUs moved with the moves fixed at the number reached.

The tail in two steps: a bound on a count of unit steps rounds to a whole move, which proved 200-node
seed 4's 7 moves in 27 s where the weighted tail W2 * moves + GPUs moved was 2 moves short after 45 s.
When the moves phase is proven, every plan holding the counts moves at least that many pods, so the last
phase's bound bounds the tail of all of them (``RoomProof.tail_lower``); otherwise W2 times the moves bound
does. When a count phase ended unproven, no plan can be proven optimal: both phases keep the start's rooms
in their groups (``start_rooms``), a restriction whose bounds are not reported. With every count proven and
joint levels over every shape, a phase the whole model has not proven in ``PLAIN_SHARE`` of its time is
solved over the minimal level vectors with the rest (``models/room_levels.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from planner.models.milp import Milp, MilpResult, Row
from planner.models.room_levels import minimal_vectors, solve_over_vectors

if TYPE_CHECKING:
    from planner.models.defrag import DefragModel
    from planner.models.room_exact import RoomModel, RoomPhaseRecord, RoomProof
    from planner.models.room_pieces import Piece

MOVES_SHARE = 0.8
"""The share of the time left after the count phases that the fewest-moves phase may use (the GPUs-moved phase gets the rest)."""
PLAIN_SHARE = 0.5
"""With joint levels, the share of each tail phase's time the whole model gets before the phase is solved
over level vectors (``models/room_levels.py``) with the rest, when the whole model has not proven it."""

Run = Callable[..., MilpResult]
"""(milp, seconds, start, abs_gap = 0: the optimum) -> its result: how ``room_exact.solve_phases`` runs a solve."""


def tail_objective(base: DefragModel) -> Milp:
    """The model with the tail phases' objective: minus (W2 * moves + GPU units moved), the empty nodes' terms dropped."""
    empties = set(base.empty_vars)
    return base.milp.with_objective([(v, c) for v, c in base.milp.objective.items() if v not in empties], base.milp.objective_offset)


def kept_start(milp: Milp, start: list[int] | None, result: MilpResult) -> MilpResult:
    """``result`` with the start's values when the start is better: a solver that runs out of time may
    hold no incumbent, or (as a guard: HiGHS may reject a given solution) a worse one than the start;
    the start satisfies every row, so it is a solution of the same model. The bound is the solver's
    either way."""
    if start is None or milp.violated_rows(start):
        return result
    if result.values is None or result.objective is None or milp.value_of_objective(start) > result.objective:
        return replace(result, values=start, objective=float(milp.value_of_objective(start)))
    return result


def start_rooms(model: RoomModel, start: list[int]) -> list[Row]:
    """Rows keeping every room of the solution ``start`` in its group (r[R,g] >= its value there, each
    shape): the moves phase's restriction when a count phase is unproven (``solve_phases``). Its
    solutions hold every count of the start; on 500-node snapshots it is the far easier problem (seed 0:
    47 moves proven in 16 s from a 94-move start, where the unrestricted phase stayed at 94)."""
    return [([(r, 1)], start[r], None, f"keep-room[{model.base.milp.names[r]}]") for r, _, _ in model.groups if start[r] > 0]


def _tighter(result: MilpResult, bound: float | None) -> MilpResult:
    """``result`` with the smaller of its bound and ``bound`` (both valid upper bounds on the same
    problem), ``optimal`` when that bound is reached."""
    if bound is None or not math.isfinite(bound) or result.bound is None or bound >= result.bound:
        return result
    proven = result.objective is not None and bound <= result.objective + 1e-6
    return replace(result, bound=bound, status="optimal" if proven else result.status)


def solve_tail(
    model: RoomModel,
    run: Run,
    deadline: float,
    held: list[Row],
    records: list[RoomPhaseRecord],
    proof: RoomProof,
    holding: list[list[int]],
    best: MilpResult | None,
    piece: Piece | None = None,
) -> tuple[MilpResult | None, RoomProof, list[RoomPhaseRecord]]:
    """The two tail phases after the count phases (``held``: their rows; ``holding``: the known solutions
    reaching every count held; ``best``: the last count phase's result): the last result with values, the
    proof with its ``tail_lower``, the records with the tail's two."""
    base = model.base
    whole_tail = tail_objective(base)
    tail = list(whole_tail.objective.items())
    # the tail in two steps: the fewest moves (unit steps: the solver's bound on them rounds to a whole move), then
    # the fewest GPUs moved with the moves fixed at that number (fixed, not at most: the relaxation may not trade
    # moves for GPUs, and when the first step is proven every plan holding the counts moves at least that many)
    w2 = base.w2
    move_terms = [(v, int(c / w2)) for v, c in tail if int(c / w2) != 0]  # c = -(W2 + g) for a move, W2 + g for a stay, 0 <= g < W2
    move_offset = int(base.milp.objective_offset / w2)  # -(W2 * moves at home + GPU units at home), those units < W2
    moves_only = base.milp.with_objective(move_terms, move_offset)
    start = max(holding, key=lambda v: (moves_only.value_of_objective(v), whole_tail.value_of_objective(v))) if holding else None
    restricted = start is not None and any(record["status"] != "optimal" for record in records)
    if restricted:  # a count unproven: no plan can be proven optimal, so the moves go to the start's rooms (an easier problem)
        assert start is not None
        held = [*held, *start_rooms(model, start)]
    fewest = base.milp.with_objective(move_terms, move_offset, held)
    # the level vectors of ``models/room_levels.py`` (their rows hold the counts); of a piece, over its groups,
    # with the counts and moves of the others (fixed) taken off
    joint = None if restricted else model.joint if piece is None else piece.joint()
    reached = [(r or 0) - (0 if piece is None else piece.count_outside(k)) for k, r in enumerate(proof.reached)]
    moves_outside = 0 if piece is None or joint is None else piece.moves_outside()
    moves_seconds = MOVES_SHARE * (deadline - time.perf_counter())
    moves_deadline = time.perf_counter() + moves_seconds
    first = kept_start(fewest, start, run(fewest, (PLAIN_SHARE if joint else 1.0) * moves_seconds, start, 0.0))
    by_vector: dict[tuple[int, ...], float] = {}
    if joint is not None and first.status != "optimal" and first.objective is not None:
        below = -round(first.objective) - moves_outside  # the incumbent's moves: a vector costing that many or more cannot beat it
        vectors = minimal_vectors(joint, reached, below)
        if vectors is not None:
            over = solve_over_vectors(fewest, joint, [(u, float(-cost)) for cost, u in vectors], float(-below), first, run, moves_deadline)
            first, by_vector = replace(_tighter(over.result, first.bound), wall_s=first.wall_s + over.result.wall_s), over.bounds
    moves_lower = None
    if first.status not in ("infeasible", "error") and first.bound is not None and math.isfinite(first.bound):
        moves_lower = max(0, math.ceil(-first.bound - 1e-6))
    if restricted:
        moves_lower = None  # a bound of the restricted problem only
    records.append(
        {
            "phase": "moves" + (" (the start's rooms)" if restricted else ""),
            "status": first.status,
            "objective": first.objective,
            "bound": first.bound,
            "wall_s": round(first.wall_s, 3),
            "count": None,
            "level_vectors": len(by_vector),
        }
    )
    if first.values is None or first.objective is None:
        return best, proof, records
    moves = -round(first.objective)
    last = base.milp.with_objective(tail, base.milp.objective_offset, [*held, (move_terms, -moves - move_offset, -moves - move_offset, "fewest-moves")])
    last_seconds, gpu_vectors = deadline - time.perf_counter(), 0
    # over level vectors only after a moves phase that needed them (where the whole model proved the moves, it did
    # the GPUs moved too on the benchmark's snapshots, and those vectors would be solved without their moves bounds)
    split = joint is not None and bool(by_vector)
    result = kept_start(last, first.values, run(last, (PLAIN_SHARE if split else 1.0) * last_seconds, first.values))
    if split and joint is not None and moves_lower is not None and moves_lower >= moves and result.status != "optimal" and result.objective is not None:
        vectors = minimal_vectors(joint, reached, moves + 1 - moves_outside)  # every plan with ``moves`` moves is in one of these
        if vectors is not None:
            ceiling = result.bound if result.bound is not None and math.isfinite(result.bound) else math.inf
            open_vectors = [(u, ceiling) for _, u in vectors if by_vector.get(u, 0.0) > -moves - 0.5]  # none proven above ``moves``
            over = solve_over_vectors(last, joint, open_vectors, -math.inf, result, run, deadline)
            result = replace(_tighter(over.result, result.bound), wall_s=result.wall_s + over.result.wall_s)
            gpu_vectors = len(over.bounds)
    records.append(
        {
            "phase": "gpus moved",
            "status": result.status,
            "objective": result.objective,
            "bound": result.bound,
            "wall_s": round(result.wall_s, 3),
            "count": None,
            "level_vectors": gpu_vectors,
        }
    )
    if result.values is None:
        result = first
    if (
        moves_lower is not None
        and moves_lower >= moves
        and result.status not in ("infeasible", "error")
        and result.bound is not None
        and math.isfinite(result.bound)
    ):
        proof.tail_lower = -result.bound  # every plan holding the counts moves >= ``moves`` pods: the least tail is among these
    elif moves_lower is not None:
        proof.tail_lower = float(w2 * moves_lower)  # W2 * moves + GPU units >= W2 * moves
    return result, proof, records
