"""Solver back-ends behind one function: ``solve(milp, solver, time_limit_s, workers, hint)``.

* ``cpsat``: OR-Tools CP-SAT. ``num_workers`` is always set explicitly (CP-SAT is tuned for 8 or more
  workers, and 8 was faster than 2 even on a 2-core machine). With ``deterministic`` the search is
  CP-SAT's interleaved search, deterministic whatever the number of workers, and the time limit is in
  CP-SAT's deterministic seconds (a wall-clock cap of 4x stops a runaway); otherwise the limit is wall
  time and, among equally good solutions, which one is returned may vary between runs.
* ``highs``: HiGHS through highspy, with ``time_limit``, ``mip_rel_gap = 0`` and ``threads`` (at most
  one per core).

Both are warm-started from a complete hint (CP-SAT ``add_hint``; HiGHS ``setSolution`` with a full
vector: a partial one would make HiGHS fix those values and solve for the rest).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time

import numpy as np

from planner.models.milp import Milp, MilpResult

SOLVERS = ("cpsat", "highs")
_highs_threads: int | None = None


def solve(
    milp: Milp,
    solver: str = "cpsat",
    time_limit_s: float = 60.0,
    workers: int = 8,
    hint: list[int] | None = None,
    seed: int = 0,
    deterministic: bool = False,
) -> MilpResult:
    """Solve ``milp`` (maximise) with ``solver``; never raises for solver trouble, reports it."""
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
            result = _solve_cpsat(milp, time_limit_s, workers, hint, seed, deterministic)
        else:
            result = _solve_highs(milp, time_limit_s, workers, hint)
    except Exception as err:  # noqa: BLE001 - a solver failure is a result, not a crash
        result = MilpResult(solver, "error", None, None, None, 0.0, f"{type(err).__name__}: {err}")
    result.wall_s = time.perf_counter() - start
    return result


def _solve_cpsat(
    milp: Milp, time_limit_s: float, workers: int, hint: list[int] | None, seed: int, deterministic: bool
) -> MilpResult:
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = [model.new_int_var(lo, hi, name) for lo, hi, name in zip(milp.lower, milp.upper, milp.names)]
    for terms, lo, hi in zip(milp.row_terms, milp.row_lower, milp.row_upper):
        expr = cp_model.LinearExpr.weighted_sum([x[v] for v, _ in terms], [c for _, c in terms])
        if lo is not None and hi is not None:
            model.add_linear_constraint(expr, lo, hi)
        elif hi is not None:
            model.add(expr <= hi)
        elif lo is not None:
            model.add(expr >= lo)
    items = sorted(milp.objective.items())
    model.maximize(cp_model.LinearExpr.weighted_sum([x[v] for v, _ in items], [c for _, c in items]) + milp.objective_offset)
    if hint is not None:
        for var, value in zip(x, hint):
            model.add_hint(var, value)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    if deterministic:
        solver.parameters.interleave_search = True
        solver.parameters.max_deterministic_time = time_limit_s
        solver.parameters.max_time_in_seconds = 4 * time_limit_s
    else:
        solver.parameters.max_time_in_seconds = time_limit_s
    code = solver.solve(model)
    has_solution = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    status = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.UNKNOWN: "timeout",
        cp_model.MODEL_INVALID: "error",
    }[code]
    values = [int(solver.value(v)) for v in x] if has_solution else None
    bound = solver.best_objective_bound if code != cp_model.INFEASIBLE else None
    return MilpResult(
        "cpsat",
        status,
        values,
        solver.objective_value if has_solution else None,
        bound,
        0.0,
        solver.status_name(code) + ("" if code != cp_model.MODEL_INVALID else ": " + model.validate()),
    )


@contextlib.contextmanager
def _quiet_stdout():  # type: ignore[no-untyped-def]
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


def _solve_highs(milp: Milp, time_limit_s: float, workers: int, hint: list[int] | None) -> MilpResult:
    import highspy

    global _highs_threads
    workers = max(1, min(workers, os.cpu_count() or 1))  # HiGHS gains nothing from more threads than cores
    if _highs_threads is not None and _highs_threads != workers:
        # HiGHS keeps one global thread pool per process, sized by the first solve; a different
        # ``threads`` later makes run() fail, so the pool is rebuilt first.
        highspy.Highs.resetGlobalScheduler(True)
    _highs_threads = workers
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("threads", int(workers))
    inf = highspy.kHighsInf
    n = milp.num_vars
    h.addVars(n, np.array(milp.lower, dtype=np.float64), np.array(milp.upper, dtype=np.float64))
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, 1, dtype=np.uint8))
    cost = np.zeros(n)
    for v, c in milp.objective.items():
        cost[v] = c
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    if milp.objective_offset:
        h.changeObjectiveOffset(float(milp.objective_offset))
    starts, indexes, values = [0], [], []
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
    if model_status == S.kOptimal:
        status = "optimal"
    elif model_status == S.kInfeasible:
        status = "infeasible"
    elif model_status in (S.kTimeLimit, S.kIterationLimit, S.kInterrupt, S.kSolutionLimit):
        status = "feasible" if has_solution else "timeout"
    else:
        status = "feasible" if has_solution else "error"
    values_out = [int(round(v)) for v in h.getSolution().col_value] if has_solution else None
    bound = info.mip_dual_bound if math.isfinite(info.mip_dual_bound) else None
    return MilpResult(
        "highs",
        status,
        values_out,
        info.objective_function_value if has_solution else None,
        bound,
        0.0,
        h.modelStatusToString(model_status),
    )
