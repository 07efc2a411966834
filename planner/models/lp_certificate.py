"""A small LP in rows and its lower bound proven in exact arithmetic by weak duality (issue 45): the
class LP of ``defrag_bound_lp.py`` is built and certified through it."""

from __future__ import annotations

from array import array
from fractions import Fraction


class _Lp:
    """minimise cost . z  s.t.  lo <= A z <= hi, 0 <= z <= upper; A in compressed rows: row i's
    columns ``cols[starts[i]:starts[i + 1]]`` and coefficients ``coefs[...]`` (``rows``: the first
    rows as lists of (col, coef)). Flat typed arrays, not a tuple per non-zero: 763,000 non-zeros at
    37,707 nodes took about 100 MB as tuples, the peak of a defrag plan (issue 62), 9 MB here."""

    def __init__(self, cost: list[float], upper: list[float], rows: list[list[tuple[int, float]]], lo: list[float | None], hi: list[float | None]):
        self.cost = cost
        self.upper = upper
        self.lo: list[float | None] = []
        self.hi: list[float | None] = []
        self.starts = array("q", [0])
        self.cols = array("i")
        self.coefs = array("d")
        for terms, low, high in zip(rows, lo, hi):
            self.row(terms, low, high)

    def var(self, upper: float, cost: float = 0.0) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, terms: list[tuple[int, float]], lo: float | None, hi: float | None) -> None:
        for v, a in terms:
            self.cols.append(v)
            self.coefs.append(a)
        self.starts.append(len(self.cols))
        self.lo.append(lo)
        self.hi.append(hi)

    def row_terms(self, i: int) -> zip[tuple[int, float]]:
        """Row i's (col, coef) pairs."""
        begin, end = self.starts[i], self.starts[i + 1]
        return zip(self.cols[begin:end], self.coefs[begin:end])


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
    for i, f in enumerate(pi):
        if f:
            for v, a in lp.row_terms(i):
                reduced[v] -= f * _exact(a)
    for r, u in zip(reduced, lp.upper):
        if r < 0:
            total += r * _exact(u)
    return Fraction(total) / _SCALE


_SCALE = 1 << 30


def _exact(x: float) -> Fraction | int:
    """``x`` as an int when whole (fast), else as the exact Fraction of the float."""
    return int(x) if x.is_integer() else Fraction(x)
