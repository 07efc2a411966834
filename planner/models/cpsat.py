"""OR-Tools CP-SAT back-end for a ``Milp``.

``num_workers`` is always set explicitly (CP-SAT is tuned for 8 or more workers, and 8 was faster than
2 even on a 2-core machine). With ``deterministic`` the search is CP-SAT's interleaved search,
deterministic whatever the number of workers, and the time limit is in CP-SAT's deterministic seconds
(a wall-clock cap, 4x unless the caller sets one, stops a runaway); otherwise the limit is wall time and, among equally good
solutions, which one is returned may vary between runs. Wall limits include building the CP-SAT
model. Warm start: ``add_hint`` with every variable.
"""

from __future__ import annotations

import time

from planner.models.milp import Milp, MilpResult, SolveStatus

MIN_SEARCH_S = 0.05
"""Search time left to CP-SAT however long building the model took (it still reports its best)."""


def solve_cpsat(
    milp: Milp,
    time_limit_s: float,
    workers: int,
    hint: list[int] | None,
    seed: int,
    deterministic: bool,
    wall_cap_s: float | None = None,
    abs_gap: float = 0.0,
) -> MilpResult:
    from ortools.sat.python import cp_model  # deferred: OR-Tools (a heavy import), only when CP-SAT solves

    start = time.perf_counter()  # building the model counts against the caller's wall time
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
    if abs_gap > 0:
        solver.parameters.absolute_gap_limit = abs_gap
    built = time.perf_counter() - start
    if deterministic:
        solver.parameters.interleave_search = True
        solver.parameters.max_deterministic_time = time_limit_s
        solver.parameters.max_time_in_seconds = max(MIN_SEARCH_S, (wall_cap_s if wall_cap_s is not None else 4 * time_limit_s) - built)
    else:
        solver.parameters.max_time_in_seconds = max(MIN_SEARCH_S, time_limit_s - built)
    # with interleaved search CP-SAT checks its limits between chunks of work: with 8 workers on 2
    # cores a chunk can take seconds, so it may stop past max_time_in_seconds (seen: 7.5 s for 5.9)
    code = solver.solve(model)
    has_solution = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    statuses: dict[object, SolveStatus] = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.UNKNOWN: "timeout",
        cp_model.MODEL_INVALID: "error",
    }
    status = statuses[code]
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
