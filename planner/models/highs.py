"""HiGHS back-end (highspy) for a ``Milp``.

Options: ``time_limit``, ``mip_rel_gap = 0``, ``threads`` (at most one per core) and
``mip_feasibility_tolerance = 1e-9``. The tighter tolerance is needed for correct proofs: the
defragmentation objective is weighted lexicographic, so coefficients reach about 1e5 and objectives
about 1e6, and with HiGHS's default tolerance (1e-6) it proved "optimal" a solution one unit (one GPU
moved) worse than CP-SAT's proven optimum on a 100-node instance (asi-100-s3 at 85% allocation,
pod-level formulation); with 1e-9 it finds and proves the true optimum.

``strict=False`` keeps HiGHS's default tolerance, which is faster (30 s against 52 s to prove that
instance). The hybrid's neighbourhood solves use it: a neighbourhood's proof only decides whether the
hybrid stops searching that GPU model, and the plan itself is checked by the exact rules and the
validator either way. So does the topology model's entropy phase (``models/topology/``), whose
objective is already a claim within a rounding tolerance of many units; it checks the plan against
every row in exact arithmetic. ``presolve=False`` turns HiGHS's presolve off.

A second guard: HiGHS also stops when the objective is integral and its dual bound is below the
incumbent + 1. On a topology batch (objective about 1.4e6) it reported the bound V + 0.999999999 and
``optimal`` while a plan worth V + 1 existed (it satisfies every row; the entropy phase found it). An
``optimal`` whose bound is more than ``INTEGRAL_PROOF_SLACK`` above the incumbent is therefore
reported as ``feasible`` with its bound (``auto`` callers then let CP-SAT, exact on integers, go on).

Warm start: ``setSolution`` with a full vector (a partial one would make HiGHS fix those values and
solve for the rest).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.models.milp import Milp, MilpResult, SolveStatus

MIP_FEASIBILITY_TOLERANCE = 1e-9
INTEGRAL_PROOF_SLACK = 0.5
"""An ``optimal`` status whose dual bound exceeds the incumbent by more than this is reported as
``feasible``: the proof then rests on HiGHS's integral-objective rule within rounding (see below)."""
_highs_threads: int | None = None


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Send the process's C-level stdout to /dev/null while the solver runs."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _interrupt_after(h: Any, highspy: Any, wall_cap_s: float) -> None:
    """Interrupt ``h`` once ``wall_cap_s`` seconds of wall time have passed. HiGHS checks its
    ``time_limit`` at points a busy machine can leave far apart (a 10 s limit ran 27-50 s with another
    process on the 2 cores); its interrupt callbacks (MIP, simplex, IPM) are called often and end the
    solve with the incumbent and bound so far (status ``kInterrupt``)."""
    deadline = time.perf_counter() + wall_cap_s

    def interrupt(kind: Any, message: str, data_out: Any, data_in: Any, user: Any) -> None:
        if time.perf_counter() > deadline:
            data_in.user_interrupt = True

    h.setCallback(interrupt, None)
    kinds = highspy.cb.HighsCallbackType
    for kind in (kinds.kCallbackMipInterrupt, kinds.kCallbackSimplexInterrupt, kinds.kCallbackIpmInterrupt):
        h.startCallback(kind)


def _highs(highspy: Any, workers: int) -> Any:
    """A silent Highs object with ``threads`` at most one per core."""
    global _highs_threads
    workers = max(1, min(workers, os.cpu_count() or 1))  # HiGHS gains nothing from more threads than cores
    if _highs_threads is not None and _highs_threads != workers:
        # HiGHS keeps one global thread pool per process, sized by the first solve; a different
        # ``threads`` later makes run() fail, so the pool is rebuilt first.
        highspy.Highs.resetGlobalScheduler(True)
    _highs_threads = workers
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", int(workers))
    return h


def _load(h: Any, highspy: Any, milp: Milp, integral: bool) -> None:
    """Pass ``milp`` (maximised) to the Highs object ``h``; ``integral=False`` loads its LP relaxation."""
    inf = highspy.kHighsInf
    n = milp.num_vars
    h.addVars(n, np.array(milp.lower, dtype=np.float64), np.array(milp.upper, dtype=np.float64))
    if integral:
        h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, 1, dtype=np.uint8))
    cost = np.zeros(n)
    for v, c in milp.objective.items():
        cost[v] = c
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    if milp.objective_offset:
        h.changeObjectiveOffset(float(milp.objective_offset))
    starts: list[int] = [0]
    indexes: list[int] = []
    values: list[float] = []
    for terms in milp.row_terms:
        indexes.extend(v for v, _ in terms)
        values.extend(c for _, c in terms)
        starts.append(len(indexes))
    lower = np.array([-inf if lo is None else lo for lo in milp.row_lower], dtype=np.float64)
    upper = np.array([inf if hi is None else hi for hi in milp.row_upper], dtype=np.float64)
    if milp.num_rows:
        h.addRows(
            milp.num_rows,
            lower,
            upper,
            len(indexes),
            np.array(starts[:-1], dtype=np.int32),
            np.array(indexes, dtype=np.int32),
            np.array(values, dtype=np.float64),
        )


@dataclass
class LpSolution:
    """An optimal solution of an LP relaxation: column values and row duals as HiGHS reports them."""

    values: list[float]
    row_duals: list[float]


def lp_relaxation(milp: Milp, time_limit_s: float, workers: int) -> LpSolution | None:
    """An optimal solution of ``milp``'s LP relaxation (HiGHS's simplex, no presolve), or None when
    it is not solved to optimality within the time limit."""
    import highspy  # deferred: HiGHS (a compiled solver), only when it solves

    time_limit_s = max(0.01, time_limit_s)
    h = _highs(highspy, workers)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("presolve", "off")
    _load(h, highspy, milp, integral=False)
    _interrupt_after(h, highspy, time_limit_s)
    with _quiet_stdout():
        h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    solution = h.getSolution()
    return LpSolution(list(solution.col_value), list(solution.row_dual))


def solve_highs(
    milp: Milp,
    time_limit_s: float,
    workers: int,
    hint: list[int] | None,
    strict: bool = True,
    wall_cap_s: float | None = None,
    presolve: bool = True,
    abs_gap: float = 0.0,
) -> MilpResult:
    import highspy  # deferred: HiGHS (a compiled solver), only when it solves

    h = _highs(highspy, workers)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("mip_rel_gap", 0.0)
    if abs_gap > 0:
        h.setOptionValue("mip_abs_gap", float(abs_gap))
    if strict:
        h.setOptionValue("mip_feasibility_tolerance", MIP_FEASIBILITY_TOLERANCE)
    if not presolve:
        h.setOptionValue("presolve", "off")
    _load(h, highspy, milp, integral=True)
    if wall_cap_s is not None:
        _interrupt_after(h, highspy, wall_cap_s)
    if hint is not None:
        solution = highspy.HighsSolution()
        solution.col_value = [float(v) for v in hint]
        h.setSolution(solution)
    with _quiet_stdout():  # HiGHS 1.12 prints a debug line when it improves a given solution
        h.run()
    model_status = h.getModelStatus()
    info = h.getInfo()
    S = highspy.HighsModelStatus
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    status: SolveStatus
    if model_status == S.kOptimal:
        status = "optimal"
    elif model_status == S.kInfeasible:
        status = "infeasible"
    elif model_status in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt, S.kSolutionLimit):
        status = "feasible" if has_solution else "timeout"
    else:
        status = "feasible" if has_solution else "error"
    values_out = [round(v) for v in h.getSolution().col_value] if has_solution else None
    bound = info.mip_dual_bound if math.isfinite(info.mip_dual_bound) else None
    objective = info.objective_function_value if has_solution else None
    note = h.modelStatusToString(model_status)
    if status == "optimal" and bound is not None and objective is not None and bound - objective > INTEGRAL_PROOF_SLACK + abs_gap:
        # HiGHS stops when no integer objective fits between the incumbent and its bound; with
        # objectives near 1e6 a bound of V + 0.999999999 is within rounding of V + 1, and once it
        # was not a proof (a better plan existed: contended batch 30 of benchmarks/topology_batch.py)
        status = "feasible"
        note = f"HiGHS stopped on the integral-objective rule with its bound {bound!r} above the incumbent {objective!r}: not claimed"
    return MilpResult("highs", status, values_out, objective, bound, 0.0, note)
