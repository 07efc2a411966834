"""Reduced-cost fixing (``planner/models/reduced_cost.py``) against a brute force written here: on
random tiny integer programs every integer point is enumerated, and the weak-duality bound, the
fixings and the compacted model are checked against what the enumeration says."""

from __future__ import annotations

import itertools
import random

import pytest

from planner.models.highs import lp_relaxation
from planner.models.milp import Milp
from planner.models.reduced_cost import fix_by_reduced_cost, lagrangian_bound, solve_with_fixing


def random_milp(rng: random.Random) -> Milp:
    m = Milp()
    n = rng.randint(2, 4)
    for j in range(n):
        m.var(f"x{j}", rng.choice([0, 0, -1]), rng.choice([1, 2, 3]))
    for i in range(rng.randint(1, 3)):
        terms = [(j, rng.randint(-3, 4)) for j in range(n)]
        kind = rng.random()
        lo = rng.randint(-3, 2) if kind < 0.6 else None
        hi = rng.randint(2, 8) if kind > 0.3 else None
        m.row(terms, lo, hi, f"r{i}")
    m.maximize([(j, rng.randint(-5, 9)) for j in range(n)], rng.randint(-3, 3))
    return m


def points(m: Milp) -> list[list[int]]:
    """Every integer point within the bounds and rows."""
    grid = itertools.product(*(range(lo, hi + 1) for lo, hi in zip(m.lower, m.upper)))
    return [list(x) for x in grid if not m.violated_rows(list(x))]


def test_the_bound_caps_every_integer_point_and_fixing_keeps_every_better_one() -> None:
    rng = random.Random(7)
    checked = proofs = fixed = 0
    for _ in range(300):
        m = random_milp(rng)
        feasible = points(m)
        if not feasible:
            continue
        relaxed = lp_relaxation(m, 5.0, 1)
        if relaxed is None:
            continue
        duals = [relaxed.row_duals, [rng.uniform(-3, 3) for _ in range(m.num_rows)]]  # any multipliers give a bound
        for row_duals in duals:
            lagrangian = lagrangian_bound(m, row_duals)
            best = max(m.value_of_objective(x) for x in feasible)
            assert lagrangian.bound >= best * lagrangian.scale, (m, row_duals)
            incumbent = rng.choice(feasible)
            value = m.value_of_objective(incumbent)
            bounds = fix_by_reduced_cost(m, lagrangian, incumbent)
            better = [x for x in feasible if m.value_of_objective(x) > value]
            if bounds is None:  # the claim: nothing beats the incumbent
                assert not better, (m, incumbent, better)
                proofs += 1
                continue
            lower, upper = bounds
            fixed += sum(1 for lo, hi, lo0, hi0 in zip(lower, upper, m.lower, m.upper) if (lo, hi) != (lo0, hi0))
            for x in better + [incumbent]:
                assert all(lo <= v <= hi for v, lo, hi in zip(x, lower, upper)), (m, x, bounds)
            # the compacted model: the same optimum, reached through expand
            compact = m.compacted(lower, upper)
            inner = points(compact.milp)
            assert max(compact.milp.value_of_objective(y) for y in inner) == best
            for y in inner:
                x = compact.expand(y)
                assert not m.violated_rows(x) and m.value_of_objective(x) == compact.milp.value_of_objective(y)
                assert compact.restrict(x) == y
        checked += 1
    # the test must exercise both outcomes: incumbents proven optimal and bounds tightened
    assert checked > 150 and proofs > 20 and fixed > 20, (checked, proofs, fixed)


def test_the_lp_bound_proves_an_optimal_hint_and_the_solve_runs_on_the_unfixed_columns() -> None:
    # max x + y + 3 z, x + y + 2 z <= 3, binaries: the LP optimum is 3.5 (z = 1, x = 1, y = 1/2 or
    # x = 1/2), the integer optimum 4 (z and one of x, y)
    m = Milp()
    x, y, z = m.var("x"), m.var("y"), m.var("z")
    m.row([(x, 1), (y, 1), (z, 2)], None, 3, "capacity")
    m.maximize([(x, 1), (y, 1), (z, 3)])
    relaxed = lp_relaxation(m, 5.0, 1)
    assert relaxed is not None
    lagrangian = lagrangian_bound(m, relaxed.row_duals)
    assert 4 * lagrangian.scale <= lagrangian.bound < 5 * lagrangian.scale

    def must_not_run(model: Milp, hint: list[int]) -> None:
        raise AssertionError("the bound proves the hint: no search")

    proven, count = solve_with_fixing(m, [1, 0, 1], lagrangian, must_not_run)  # type: ignore[arg-type]
    assert (proven.status, proven.values, proven.objective, proven.bound, count) == ("optimal", [1, 0, 1], 4, 4, 3)
    seen = []

    def record(model: Milp, hint: list[int]):  # type: ignore[no-untyped-def]
        from planner.models.backends import solve

        seen.append((model.num_vars, hint))
        return solve(model, "highs", 5.0, 1, hint)

    # from a worse hint (x and y, worth 2) nothing is fixed: z = 1 is in the optimum, z = 0 in the hint
    found, count = solve_with_fixing(m, [1, 1, 0], lagrangian, record)
    assert found.status == "optimal" and found.objective == pytest.approx(4) and m.value_of_objective(found.values) == 4
    assert seen[0][0] + count == 3 and len(found.values) == 3


def test_a_compacted_row_that_cannot_hold_is_refused() -> None:
    m = Milp()
    x, y = m.var("x"), m.var("y")
    m.row([(x, 1), (y, 1)], 2, None, "both")
    with pytest.raises(ValueError, match="both"):
        m.compacted([0, 0], [0, 0])
    with pytest.raises(ValueError, match="'x' has lower 1 above upper 0"):
        m.compacted([1, 0], [0, 1])
