"""Solver back-ends behind one function: ``solve(milp, solver, time_limit_s, workers, hint)``.

* ``cpsat``: OR-Tools CP-SAT (``models/cpsat.py``);
* ``highs``: HiGHS through highspy (``models/highs.py``).

Both are warm-started from a complete hint and report what the solver says: status, objective, best
bound. A solver failure is a result with status ``error``, never an exception.
"""

from __future__ import annotations

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
) -> MilpResult:
    """Solve ``milp`` (maximise) with ``solver``; never raises for solver trouble, reports it.

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
            result = solve_cpsat(milp, time_limit_s, workers, hint, seed, deterministic, wall_cap_s)
        else:
            # HiGHS's own time limit can be overrun many times on a busy machine: cap the wall time
            cap = wall_cap_s if wall_cap_s is not None else HIGHS_WALL_CAP_FACTOR * time_limit_s + HIGHS_WALL_CAP_SLACK_S
            result = solve_highs(milp, time_limit_s, workers, hint, strict, cap, presolve)
    except Exception as err:  # noqa: BLE001 - a solver failure is a result, not a crash
        result = MilpResult(solver, "error", None, None, None, 0.0, f"{type(err).__name__}: {err}")
    result.wall_s = time.perf_counter() - start
    return result
