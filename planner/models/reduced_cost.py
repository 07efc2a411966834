"""Reduced-cost fixing from an LP relaxation's duals, in exact integer arithmetic.

For a ``Milp`` (maximise c.x, lo <= Ax <= hi, l <= x <= u, x integer) and any row multipliers y,
every x within the bounds and rows satisfies

    c.x = y.Ax + (c - A'y).x <= sum_i max(y_i lo_i, y_i hi_i) + sum_j max(d_j l_j, d_j u_j),  d = c - A'y

(a row side that is infinite takes a zero multiplier). This is weak duality; it holds for *any* y,
so the duals HiGHS reports are rounded to integers over a power of two and everything after is
integer arithmetic: the bound and the reduced costs d are exact for those multipliers, whatever the
LP solver's tolerances were. With the LP's optimal duals the bound equals the LP optimum to rounding.

Fixing: the Milp's objective is an integer for every integer x (integer coefficients and offset), so
a solution strictly better than an incumbent worth V is worth at least V + 1. A column j with d_j < 0
moved t above l_j lowers the bound by t |d_j|, so no solution worth V + 1 or more has
x_j > l_j + floor((bound - (V + 1)) / |d_j|); likewise below u_j when d_j > 0. The returned bounds
keep every strictly better solution and the incumbent itself, so the model with them has the same
optimum as the original, and its proven bound is the original's (anything cut is worth at most V,
which the incumbent already reaches). When the bound itself is below V + 1 the incumbent is optimal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from planner.models.milp import Milp, MilpResult

DUAL_SCALE_BITS = 20
"""Duals are rounded to multiples of 2**-20 (any multipliers give a valid bound; finer ones lose less)."""


@dataclass
class LagrangianBound:
    """``bound / scale`` caps the objective of every solution within the rows and bounds; ``reduced[j]
    / scale`` is column j's reduced cost under the rounded multipliers."""

    scale: int
    bound: int
    reduced: list[int]


def lagrangian_bound(milp: Milp, row_duals: list[float]) -> LagrangianBound:
    """The weak-duality bound of ``milp`` under ``row_duals`` (the tighter of the two signs, as
    solvers differ in their sign convention), in exact integer arithmetic."""
    scale = 1 << DUAL_SCALE_BITS
    rounded = [round(y * scale) for y in row_duals]
    best: LagrangianBound | None = None
    for sign in (1, -1):
        reduced = [0] * milp.num_vars
        for v, c in milp.objective.items():
            reduced[v] = c * scale
        bound = milp.objective_offset * scale
        for terms, lo, hi, y in zip(milp.row_terms, milp.row_lower, milp.row_upper, rounded):
            y *= sign
            side = hi if y > 0 else lo  # the side the multiplier's sign prices
            if y == 0 or side is None:
                continue
            bound += y * side
            for v, a in terms:
                reduced[v] -= a * y
        bound += sum(d * (milp.upper[v] if d > 0 else milp.lower[v]) for v, d in enumerate(reduced) if d)
        if best is None or bound < best.bound:
            best = LagrangianBound(scale, bound, reduced)
    assert best is not None
    return best


def fix_by_reduced_cost(milp: Milp, lagrangian: LagrangianBound, incumbent: list[int]) -> tuple[list[int], list[int]] | None:
    """Column bounds that keep every solution strictly better than ``incumbent`` and ``incumbent``
    itself; None when no strictly better solution exists (the incumbent is optimal)."""
    target = (milp.value_of_objective(incumbent) + 1) * lagrangian.scale
    room = lagrangian.bound - target
    if room < 0:
        return None
    lower, upper = list(milp.lower), list(milp.upper)
    for v, d in enumerate(lagrangian.reduced):
        if d < 0:
            upper[v] = max(incumbent[v], min(upper[v], lower[v] + room // -d))
        elif d > 0:
            lower[v] = min(incumbent[v], max(lower[v], upper[v] - room // d))
    return lower, upper


def proof_by_bound(milp: Milp, lagrangian: LagrangianBound, hint: list[int]) -> MilpResult | None:
    """``hint`` (which must pass every row) as a proven optimum when the bound is below its objective
    + 1, else None."""
    value = milp.value_of_objective(hint)
    if lagrangian.bound >= (value + 1) * lagrangian.scale:
        return None
    message = f"proven by the LP bound {lagrangian.bound / lagrangian.scale:.6f} (below {value} + 1)"
    return MilpResult("lp-bound", "optimal", list(hint), value, value, 0.0, message)


def solve_with_fixing(
    milp: Milp, hint: list[int], lagrangian: LagrangianBound, solve_compact: Callable[[Milp, list[int]], MilpResult]
) -> tuple[MilpResult, int]:
    """``solve_compact(model, hint)`` on ``milp`` with the columns reduced-cost fixing fixes against
    ``hint`` removed (``hint`` must pass every row: it is the incumbent the fixing keeps). Returns the
    result on ``milp``'s columns, objective and bound in its units, and how many columns were fixed;
    when the bound alone shows that no plan is better than ``hint``, ``hint`` itself, ``optimal``."""
    start = time.perf_counter()
    bounds = fix_by_reduced_cost(milp, lagrangian, hint)
    if bounds is None:
        proven = proof_by_bound(milp, lagrangian, hint)
        assert proven is not None
        return proven, milp.num_vars
    compaction = milp.compacted(*bounds)
    result = solve_compact(compaction.milp, compaction.restrict(hint))
    if result.values is not None:
        result.values = compaction.expand(result.values)
    result.wall_s = time.perf_counter() - start
    return result, milp.num_vars - compaction.milp.num_vars
