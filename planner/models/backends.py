"""Solver back-ends behind one function: ``solve(milp, solver, time_limit_s, workers, hint)``; and
``solve_highs_then_cpsat``, HiGHS first and CP-SAT when HiGHS has not proven the model.

* ``cpsat``: OR-Tools CP-SAT (``models/cpsat.py``);
* ``highs``: HiGHS through highspy (``models/highs.py``).

Both are warm-started from a complete hint and report what the solver says: status, objective, best
bound. A solver failure is a result with status ``error``, never an exception.
"""

from __future__ import annotations

import math
import time

from planner.models.cpsat import solve_cpsat
from planner.models.highs import solve_highs
from planner.models.milp import Milp, MilpResult

SOLVERS = ("cpsat", "highs")


HIGHS_WALL_CAP_FACTOR = 1.1
HIGHS_WALL_CAP_SLACK_S = 1.0
"""HiGHS is interrupted at 1.1 x its time limit + 1 s of wall time (``models/highs.py``): an
interrupted solve reports its incumbent and bound like a timed-out one."""


def solve(
    milp: Milp,
    solver: str = "cpsat",
    time_limit_s: float = 60.0,
    workers: int = 8,
    hint: list[int] | None = None,
    seed: int = 0,
    deterministic: bool = False,
    strict: bool = True,
    wall_cap_s: float | None = None,
    presolve: bool = True,
    abs_gap: float = 0.0,
) -> MilpResult:
    """Solve ``milp`` (maximise) with ``solver``; never raises for solver trouble, reports it.

    ``abs_gap``: the solver may stop (and say ``optimal``) once its bound is within this much of the
    incumbent; 0 (the default) asks for the optimum. The bound reported is the solver's either way.

    ``strict=False`` trades proof accuracy for speed where a proof is only advisory (HiGHS: default
    feasibility tolerance, see ``models/highs.py``); CP-SAT is exact either way.
    """
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if not time_limit_s > 0:
        raise ValueError(f"time limit must be above 0 seconds, got {time_limit_s}")
    start = time.perf_counter()
    if milp.num_vars == 0:  # nothing to decide (no movable pod, no node that could empty)
        value = float(milp.objective_offset)
        return MilpResult(solver, "optimal", [], value, value, time.perf_counter() - start, "empty model")
    try:
        if solver == "cpsat":
            result = solve_cpsat(milp, time_limit_s, workers, hint, seed, deterministic, wall_cap_s, abs_gap)
        else:
            # HiGHS's own time limit can be overrun many times on a busy machine: cap the wall time
            cap = wall_cap_s if wall_cap_s is not None else HIGHS_WALL_CAP_FACTOR * time_limit_s + HIGHS_WALL_CAP_SLACK_S
            result = solve_highs(milp, time_limit_s, workers, hint, strict, cap, presolve, abs_gap)
    except Exception as err:  # noqa: BLE001 - a solver failure is a result, not a crash
        result = MilpResult(solver, "error", None, None, None, 0.0, f"{type(err).__name__}: {err}")
    result.wall_s = time.perf_counter() - start
    return result


def solve_highs_then_cpsat(milp: Milp, time_limit_s: float, workers: int, hint: list[int] | None, highs_share: float = 0.5) -> MilpResult:
    """HiGHS on ``highs_share`` of ``time_limit_s``; unless it proves ``milp`` (maximise) optimal or
    infeasible, CP-SAT's deterministic search from the same hint on the wall time left. Returns the
    proven or better result, with the least bound either reported. A proven result is deterministic
    either way (neither depends on the other's incumbent)."""
    start = time.perf_counter()
    first = solve(milp, "highs", highs_share * time_limit_s, workers, hint)
    if first.status in ("optimal", "infeasible"):
        return first
    left = max(0.5, time_limit_s - (time.perf_counter() - start))
    second = solve(milp, "cpsat", left, workers, hint, deterministic=True, wall_cap_s=left)  # the caller's limit holds in wall time
    if second.status in ("optimal", "infeasible") or first.values is None:
        best = second
    elif second.values is None:
        best = first
    else:
        best = max((first, second), key=lambda r: r.objective if r.objective is not None else -math.inf)
    bounds = [r.bound for r in (first, second) if r.bound is not None]
    best.bound = min(bounds) if bounds else best.bound  # maximising: either proven bound holds
    if best.status == "optimal":
        best.bound = best.objective  # CP-SAT's proof (HiGHS's bound can sit within rounding below it)
    best.wall_s = time.perf_counter() - start
    return best
