"""One solve of the joint topology model: the LP-bound proof of a hint (``_solve``), else the
solver's search, where ``auto`` runs HiGHS and then CP-SAT (``_search``)."""

from __future__ import annotations

import time
from typing import Any

from planner.models.backends import solve, solve_highs_then_cpsat
from planner.models.highs import lp_relaxation
from planner.models.milp import Milp, MilpResult
from planner.models.reduced_cost import lagrangian_bound, proof_by_bound

LP_SHARE = 0.3
"""Share of a solve's time (of the entropy phase's time left) its LP relaxation may take."""
HIGHS_SHARE = 0.5
"""``auto``: HiGHS gets this share of a solve's time, CP-SAT the rest when HiGHS has not proven it
(``models/backends.py``, ``solve_highs_then_cpsat``)."""


def _solve(m: Milp, solver: str, time_limit_s: float, workers: int, hint: list[int] | None, fields: dict[str, Any], name: str) -> MilpResult:
    """One solve. With ``auto`` or ``highs`` and a hint that passes every row, the LP relaxation
    comes first: its bound, computed exactly from its duals (``models/reduced_cost.py``), proves the
    hint optimal when it is below the hint's objective + 1. On the 50 contended batches of
    benchmarks/topology_batch.py it proves GPUs and switches for 47 of the best greedy starts (36 of
    the largest-first ones), in about 0.05 s where HiGHS's search took up to 4.8 s (it went on past
    a root bound below the plan + 1).
    Otherwise the search runs on the whole model: reduced-cost fixing against these hints fixed 1 to
    19 of 3,988 columns, and on the smaller model HiGHS stopped on batch 47 with its bound within
    rounding of the plan + 1 (not claimed), leaving CP-SAT 10 s. ``fields[name]``: "proven by the LP
    bound" when it was."""
    time_limit_s = max(0.5, time_limit_s)
    start = time.perf_counter()
    if solver != "cpsat" and hint is not None and not m.violated_rows(hint):
        relaxed = lp_relaxation(m, LP_SHARE * time_limit_s, workers)
        proven = proof_by_bound(m, lagrangian_bound(m, relaxed.row_duals), hint) if relaxed is not None else None
        if proven is not None:
            fields[name] = "proven by the LP bound"
            proven.wall_s = time.perf_counter() - start
            return proven
    return _search(m, solver, time_limit_s - (time.perf_counter() - start), workers, hint)


def _search(m: Milp, solver: str, time_limit_s: float, workers: int, hint: list[int] | None) -> MilpResult:
    """One solver search; ``auto`` runs HiGHS, then (not proven) CP-SAT's deterministic search from the same
    hint. CP-SAT took 10 s on contended batches HiGHS proved in 0.2 s. With W scaled by the GPUs' unit
    (``solve_joint``) HiGHS proved GPUs and switches on all 50 contended batches of
    benchmarks/topology_batch.py alone, in at most 4.8 s (2 s or less on 43); before, it stopped on one
    (batch 30) with a bound within rounding of a better plan, which CP-SAT then proved in 12 s."""
    time_limit_s = max(0.5, time_limit_s)
    if solver != "auto":
        return solve(m, solver, time_limit_s, workers, hint, deterministic=solver == "cpsat", wall_cap_s=time_limit_s)
    return solve_highs_then_cpsat(m, time_limit_s, workers, hint, HIGHS_SHARE)
