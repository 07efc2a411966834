"""Integer units for the exact models, chosen so that a model accepts exactly what ``rules`` accepts.

``rules`` compares float sums with a tolerance: requests r_i fit a capacity C when
sum r_i <= C + EPS. Models need integer coefficients (CP-SAT requires them), so every request and
capacity of one resource is scaled by one unit U:

* **Exact scaling** (the normal case). Each value v is read as the simplest fraction q with
  float(q) == v (0.3 -> 3/10, the float of 1/3 -> 1/3, 0.9765625 -> 125/128), and U is the least
  common multiple of the denominators. Then r_i U are integers, and sum r_i U <= floor((C + EPS) U)
  holds exactly when sum q_i <= C + EPS: the model and the rules agree (the fractions differ from the
  floats by half an ulp, far below EPS).
* **Relaxed rounding**, when U would be too large for the solvers (a denominator beyond 2**32, or
  C U beyond 2**50): values are scaled by a fixed resolution, requests rounded down and capacities
  up. The model is then a relaxation of the rules: its bound stays valid, and a placement it accepts
  that the rules reject is caught when the plan is executed (every move is checked with the rules).

Rounding requests up and capacities down (the opposite) would make the model stricter than the
rules: its bound would be invalid and a consistent snapshot could even make it infeasible.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

EPS = Fraction(1, 10**9)
"""``rules.EPS`` as an exact fraction."""
MAX_DENOMINATOR = 1 << 32
MAX_SCALED = 1 << 50
RELAXED_RESOLUTION = 1 << 20


@dataclass(frozen=True)
class Scale:
    """Integer units per 1.0 of one resource, and whether the scaling is exact."""

    unit: int
    exact: bool

    def request(self, value: float) -> int:
        """A request in units: exact, or rounded down (relaxed)."""
        scaled = _exact_fraction(value) * self.unit if self.exact else Fraction(value) * self.unit
        return int(scaled) if self.exact else math.floor(scaled)

    def capacity(self, value: float) -> int:
        """The most units that fit ``value`` under the rules' tolerance (rounded up when relaxed)."""
        limit = ((_exact_fraction(value) if self.exact else Fraction(value)) + EPS) * self.unit
        return math.floor(limit) if self.exact else math.ceil(limit)


def scale_for(requests: Iterable[float], capacities: Iterable[float]) -> Scale:
    """The smallest exact unit for these values, or a relaxed one when no exact unit is practical."""
    requests, capacities = set(requests), set(capacities)
    largest = max([abs(v) for v in (*requests, *capacities)] + [1.0])
    unit = 1
    for value in requests | capacities:
        q = _fraction(value)
        if q is None:
            return Scale(RELAXED_RESOLUTION, False)
        unit = math.lcm(unit, q.denominator)
        if unit > MAX_DENOMINATOR or unit * largest > MAX_SCALED:
            return Scale(RELAXED_RESOLUTION, False)
    return Scale(unit, True)


def _exact_fraction(value: float) -> Fraction:
    """``_fraction(value)``, which an exact scale has for every value it was made for."""
    q = _fraction(value)
    if q is None:
        raise ValueError(f"{value!r} is not a fraction with a denominator up to {MAX_DENOMINATOR}: the scale is not exact for it")
    return q


def _fraction(value: float) -> Fraction | None:
    """The simplest fraction whose float is ``value`` (None if its denominator is too large)."""
    q = Fraction(value).limit_denominator(MAX_DENOMINATOR)
    return q if float(q) == value else None
