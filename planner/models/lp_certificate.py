"""A small LP in rows and its lower bound proven in exact arithmetic by weak duality (issue 45): the
class LP of ``defrag_bound_lp.py`` is built and certified through it."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass
class _Lp:
    """minimise cost . z  s.t.  lo <= A z <= hi, 0 <= z <= upper (A in CSR rows of (col, coef))."""

    cost: list[float]
    upper: list[float]
    rows: list[list[tuple[int, float]]]
    lo: list[float | None]
    hi: list[float | None]

    def var(self, upper: float, cost: float = 0.0) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, terms: list[tuple[int, float]], lo: float | None, hi: float | None) -> None:
        self.rows.append(terms)
        self.lo.append(lo)
        self.hi.append(hi)


def _certified_minimum(lp: _Lp, row_duals: list[float]) -> Fraction:
    """A lower bound on the LP's minimum, exact: weak duality with ``row_duals`` as multipliers.

    For any multipliers pi (pi_i > 0 only where row i has a lower side, < 0 only where it has an
    upper side) and every z in the box [0, u] satisfying the rows,
    ``cost.z = (cost - A'pi).z + pi.Az >= sum_j min(0, r_j) u_j + sum_i pi_i side_i``.
    The multipliers are HiGHS's duals rounded to multiples of 2**-30 (any multipliers will do); the
    sums run on integers scaled by 2**30, with ``Fraction`` where a coefficient is not whole."""
    pi: list[int] = []
    total: Fraction | int = 0
    for d, lo, hi in zip(row_duals, lp.lo, lp.hi):
        side = lo if d > 0 else hi
        if side is None:
            pi.append(0)
            continue
        pi.append(round(d * _SCALE))
        total += pi[-1] * _exact(side)
    reduced: list[Fraction | int] = [_exact(c) * _SCALE for c in lp.cost]
    for f, terms in zip(pi, lp.rows):
        if f:
            for v, a in terms:
                reduced[v] -= f * _exact(a)
    for r, u in zip(reduced, lp.upper):
        if r < 0:
            total += r * _exact(u)
    return Fraction(total) / _SCALE


_SCALE = 1 << 30


def _exact(x: float) -> Fraction | int:
    """``x`` as an int when whole (fast), else as the exact Fraction of the float."""
    return int(x) if x.is_integer() else Fraction(x)
