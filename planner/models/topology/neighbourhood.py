"""The entropy phase's start and solve: the count-multiset neighbourhood its LP relaxation points
to (``_multiset_neighbourhood``) and HiGHS after reduced-cost fixing (``_solve_fixed``)."""

from __future__ import annotations

import time
from typing import Any

from planner.models.backends import solve
from planner.models.milp import Milp, MilpResult
from planner.models.reduced_cost import (
    LagrangianBound,
    fix_by_reduced_cost,
    solve_with_fixing,
)
from planner.models.topology.counts import ENTROPY_SCALE

NEIGHBOURHOOD_SHARE = 0.5
"""Share of the entropy phase's time left, after its LP, that its multiset neighbourhood may take."""


def _multiset_neighbourhood(
    m: Milp,
    hint: list[int],
    partitioned: dict[str, dict[tuple[int, ...], int]],
    relaxed: list[float],
    lagrangian: LagrangianBound,
    deadline: float,
    workers: int,
    fields: dict[str, Any],
) -> list[int]:
    """A better start for the entropy phase. ``hint`` passes every row; ``relaxed`` and
    ``lagrangian``: the model's LP solution and its exact bound. The neighbourhood is the model with
    the columns reduced-cost fixing fixes against ``hint`` removed and each job's count multisets cut
    to those the LP uses for that job or for any job with the same multisets (twins swap theirs: on
    contended batch 37 the optimum gives two twins each other's LP multiset) and the start's own,
    solved by HiGHS with presolve (which drops the counts no kept multiset has). Returns the better of
    its plan and ``hint`` (checked in exact arithmetic); nothing is claimed of it. Given the optimum as
    its start, HiGHS proved contended batches 31 and 44 in 2.6 and 1.4 s that took it 19 and 14 s from
    the phase-(b) plan: the search was for the plan."""
    start = time.perf_counter()
    bounds = fix_by_reduced_cost(m, lagrangian, hint)
    if bounds is None:
        fields["entropy_neighbourhood"] = "not needed: the LP bound proves the start optimal"
        return hint
    lower, upper = bounds
    used: dict[frozenset[tuple[int, ...]], set[tuple[int, ...]]] = {}
    for multisets in partitioned.values():
        used.setdefault(frozenset(multisets), set()).update(p for p, y in multisets.items() if relaxed[y] >= 1e-6)
    for multisets in partitioned.values():
        kept = used[frozenset(multisets)]
        for p, y in multisets.items():
            if p not in kept and not hint[y]:
                upper[y] = lower[y]
    cut = m.compacted(lower, upper)
    left = max(0.2, NEIGHBOURHOOD_SHARE * (deadline - time.perf_counter()))
    found = solve(cut.milp, "highs", left, workers, cut.restrict(hint), strict=False, wall_cap_s=left)
    fields["entropy_neighbourhood_s"] = round(time.perf_counter() - start, 3)
    fields["entropy_neighbourhood_multisets"] = sum(1 for multisets in partitioned.values() for y in multisets.values() if upper[y])
    plan = cut.expand(found.values) if found.values is not None else None
    if plan is None or m.violated_rows(plan) or m.value_of_objective(plan) <= m.value_of_objective(hint):
        fields["entropy_neighbourhood"] = "no better plan"
        return hint
    fields["entropy_neighbourhood"] = f"improved the start by {(m.value_of_objective(plan) - m.value_of_objective(hint)) / ENTROPY_SCALE:.6f} nats"
    return plan


def _solve_fixed(m: Milp, hint: list[int], lagrangian: LagrangianBound | None, left: float, workers: int, fields: dict[str, Any]) -> MilpResult:
    """The entropy phase's HiGHS solve (presolve off: 42 against 40 of the 50 contended batches
    proven, it took 4 s of some), after reduced-cost fixing against ``hint`` with the LP's exact
    bound when there is one (``models/reduced_cost.py``; ``hint`` then passes every row). On
    contended batch 31 that fixes 29,000 of 45,000 columns and the proof takes 0.7 s, not 3.4 s."""
    start = time.perf_counter()

    def highs(model: Milp, model_hint: list[int]) -> MilpResult:
        limit = max(0.2, left - (time.perf_counter() - start))
        return solve(model, "highs", limit, workers, model_hint, strict=False, wall_cap_s=limit, presolve=False)

    if lagrangian is None:
        return highs(m, hint)
    result, fields["entropy_columns_fixed"] = solve_with_fixing(m, hint, lagrangian, highs)
    return result
