"""``Milp.violated_rows``: the exact integer check a plan from a solver run at its default tolerance
must pass before it (and its claim) is kept (the topology model's entropy phase); the LP relaxation
and the count-multiset neighbourhood that phase starts from."""

from __future__ import annotations

import time

import pytest

from planner.models.backends import solve
from planner.models.highs import lp_relaxation
from planner.models.milp import Milp
from planner.models.reduced_cost import lagrangian_bound
from planner.models.topology import neighbourhood


def small() -> Milp:
    m = Milp()
    x, y = m.var("x", 0, 5), m.var("y", 0, 5)
    m.row([(x, 3), (y, 2)], None, 12, "capacity")
    m.row([(x, 1), (y, -1)], 1, None, "x above y")
    m.maximize([(x, 2), (y, 3)])
    return m


def test_each_broken_row_and_bound_is_named_and_a_solver_plan_passes() -> None:
    m = small()
    assert m.violated_rows([3, 1]) == []
    assert m.violated_rows([4, 1]) == ["capacity"]  # 3 * 4 + 2 = 14 > 12
    assert m.violated_rows([2, 2]) == ["x above y"]
    assert m.violated_rows([6, 0]) == ["x", "capacity"]
    for presolve in (True, False):
        got = solve(m, "highs", 5.0, 1, strict=False, presolve=presolve)
        # the optimum by hand: x >= y + 1 and 3x + 2y <= 12 -> (x, y) = (2, 1) is worth 7, (3, 1) 9, (4, 0) 8
        assert got.status == "optimal" and got.values == [3, 1] and m.violated_rows(got.values) == [], (presolve, got)


def test_the_lp_relaxation_is_the_hand_computed_vertex() -> None:
    # the LP of small(): x = y + 1 and 3x + 2y = 12 meet at (14/5, 9/5), worth 2 * 2.8 + 3 * 1.8 = 11
    # (the objective's gradient lies between the two rows' normals there)
    got = lp_relaxation(small(), 5.0, 1)
    assert got is not None and abs(got.values[0] - 2.8) < 1e-7 and abs(got.values[1] - 1.8) < 1e-7
    # its duals: (2, 3) = u (3, 2) + v (1, -1) gives u = 1 (capacity) and v = -1 (x above y), and
    # 12 u + 1 v = 11, the optimum (HiGHS's sign convention aside)
    assert [abs(d) for d in got.row_duals] == pytest.approx([1.0, 1.0])


def test_the_multiset_neighbourhood_improves_the_start_and_keeps_it_allowed() -> None:
    """Three count multisets of one job; the start uses the worst, the LP the best: the neighbourhood
    keeps those two, cuts the third, and returns the best plan (entropy units as the costs)."""
    m = Milp()
    z = m.var("z")
    ys = {(4,): m.var("y[a,4]"), (2, 2): m.var("y[a,2+2]"), (3, 1): m.var("y[a,3+1]")}
    m.row([(y, 1) for y in ys.values()] + [(z, -1)], 0, 0, "one multiset iff started")
    m.row([(z, 1)], 1, 1, "started")
    m.maximize([(ys[(2, 2)], -693), (ys[(3, 1)], -562)])  # entropy of 4 pods as 2+2 and as 3+1, in millinats
    fields: dict = {}
    start = [1, 0, 1, 0]  # 2+2, the worst
    relaxed = lp_relaxation(m, 5.0, 1)
    assert relaxed is not None and relaxed.values[ys[(4,)]] == pytest.approx(1.0)
    lagrangian = lagrangian_bound(m, relaxed.row_duals)
    got = neighbourhood._multiset_neighbourhood(m, start, {"a": ys}, relaxed.values, lagrangian, time.perf_counter() + 5.0, 1, fields)
    assert got == [1, 1, 0, 0] and fields["entropy_neighbourhood_multisets"] == 2  # (4,) kept by the LP, 2+2 as the start's
    assert fields["entropy_neighbourhood"].startswith("improved the start by")
    # a start that is already the best is returned as it is (the LP bound, 0, proves it)
    fields = {}
    assert neighbourhood._multiset_neighbourhood(m, [1, 1, 0, 0], {"a": ys}, relaxed.values, lagrangian, time.perf_counter() + 5.0, 1, fields) == [1, 1, 0, 0]
    assert fields["entropy_neighbourhood"].startswith("not needed")
