"""``Milp.violations``: the exact integer check a plan from a solver run at its default tolerance
must pass before it (and its claim) is kept (the topology model's entropy phase)."""

from __future__ import annotations

from planner.models.backends import solve
from planner.models.milp import Milp


def small() -> Milp:
    m = Milp()
    x, y = m.var("x", 0, 5), m.var("y", 0, 5)
    m.row([(x, 3), (y, 2)], None, 12, "capacity")
    m.row([(x, 1), (y, -1)], 1, None, "x above y")
    m.maximize([(x, 2), (y, 3)])
    return m


def test_each_broken_row_and_bound_is_named_and_a_solver_plan_passes() -> None:
    m = small()
    assert m.violations([3, 1]) == []
    assert m.violations([4, 1]) == ["capacity"]  # 3 * 4 + 2 = 14 > 12
    assert m.violations([2, 2]) == ["x above y"]
    assert m.violations([6, 0]) == ["bounds of x", "capacity"]
    for presolve in (True, False):
        got = solve(m, "highs", 5.0, 1, strict=False, presolve=presolve)
        # the optimum by hand: x >= y + 1 and 3x + 2y <= 12 -> (x, y) = (2, 1) is worth 7, (3, 1) 9, (4, 0) 8
        assert got.status == "optimal" and got.values == [3, 1] and m.violations(got.values) == [], (presolve, got)
