"""A small solver-neutral integer program, the one interface between formulations and back-ends.

Formulations (``models/defrag.py``) build a ``Milp``: integer variables with bounds, linear rows with
integer coefficients, and a linear objective to maximise. Back-ends (``models/backends.py``) solve it
with OR-Tools CP-SAT or HiGHS and report what the solver says: status, objective, best bound, values.
Integer coefficients keep the two back-ends solving exactly the same problem (CP-SAT requires them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

Row = tuple[list[tuple[int, int]], int | None, int | None, str]
"""A row as ``Milp.row`` takes it: its (variable, coefficient) terms, lower and upper side (None: unbounded), name."""
SolveStatus = Literal["optimal", "feasible", "infeasible", "timeout", "error"]
"""optimal: proven; feasible: a solution, not proven optimal; timeout: no solution in time."""


@dataclass
class Milp:
    """maximise sum(objective[j] * v[j]) s.t. lo_i <= sum(a_ij * v[j]) <= hi_i, lower <= v <= upper, v integer."""

    names: list[str] = field(default_factory=list)
    lower: list[int] = field(default_factory=list)
    upper: list[int] = field(default_factory=list)
    objective: dict[int, int] = field(default_factory=dict)
    objective_offset: int = 0
    row_terms: list[list[tuple[int, int]]] = field(default_factory=list)
    row_lower: list[int | None] = field(default_factory=list)
    row_upper: list[int | None] = field(default_factory=list)
    row_names: list[str] = field(default_factory=list)

    def var(self, name: str, lower: int = 0, upper: int = 1) -> int:
        """A new integer variable (binary by default); returns its index."""
        self.names.append(name)
        self.lower.append(lower)
        self.upper.append(upper)
        return len(self.names) - 1

    def row(self, terms: list[tuple[int, int]], lower: int | None = None, upper: int | None = None, name: str = "") -> None:
        """lower <= sum(coef * var) <= upper; a term is (variable, integer coefficient)."""
        terms = [(v, int(c)) for v, c in terms if c]
        if not terms:
            if (lower is not None and lower > 0) or (upper is not None and upper < 0):
                raise ValueError(f"row {name!r} has no terms and cannot hold ({lower} <= 0 <= {upper})")
            return
        self.row_terms.append(terms)
        self.row_lower.append(lower)
        self.row_upper.append(upper)
        self.row_names.append(name)

    def maximize(self, terms: list[tuple[int, int]], offset: int = 0) -> None:
        self.objective = {}
        for v, c in terms:
            if c:
                self.objective[v] = self.objective.get(v, 0) + int(c)
        self.objective_offset = offset

    def with_objective(self, terms: list[tuple[int, int]], offset: int = 0, rows: Sequence[Row] = ()) -> Milp:
        """The same variables and rows plus ``rows``, with another objective (for phased solves).

        The copy shares the variable lists: add no variables to it.
        """
        twin = Milp(self.names, self.lower, self.upper, {}, 0, list(self.row_terms), list(self.row_lower), list(self.row_upper), list(self.row_names))
        twin.maximize(terms, offset)
        for row_terms, lower, upper, name in rows:
            twin.row(row_terms, lower, upper, name)
        return twin

    @property
    def num_vars(self) -> int:
        return len(self.names)

    @property
    def num_rows(self) -> int:
        return len(self.row_terms)

    def value_of_objective(self, values: list[int]) -> int:
        return self.objective_offset + sum(c * values[v] for v, c in self.objective.items())

    def violated_rows(self, values: list[int]) -> list[str]:
        """Names of rows (and bounds) ``values`` break: a check of a solution or a hint."""
        broken = [self.names[j] for j, x in enumerate(values) if not self.lower[j] <= x <= self.upper[j]]
        for terms, lo, hi, name in zip(self.row_terms, self.row_lower, self.row_upper, self.row_names):
            total = sum(c * values[v] for v, c in terms)
            if (lo is not None and total < lo) or (hi is not None and total > hi):
                broken.append(name)
        return broken

    def compacted(self, lower: list[int], upper: list[int]) -> Compaction:
        """This Milp with column bounds ``lower``/``upper`` and the columns they fix removed: a fixed
        column's terms move into its rows' sides and the objective's offset, so the compact model's
        objective is this one's. A row left with no terms is dropped after checking that it holds."""
        kept = [v for v in range(self.num_vars) if lower[v] < upper[v]]
        fixed = {v: lower[v] for v in range(self.num_vars) if lower[v] == upper[v]}
        if len(kept) + len(fixed) != self.num_vars:
            empty = next(v for v in range(self.num_vars) if lower[v] > upper[v])
            raise ValueError(f"column {self.names[empty]!r} has lower {lower[empty]} above upper {upper[empty]}")
        where = {v: i for i, v in enumerate(kept)}
        compact = Milp([self.names[v] for v in kept], [lower[v] for v in kept], [upper[v] for v in kept])
        compact.maximize(
            [(where[v], c) for v, c in self.objective.items() if v in where],
            self.objective_offset + sum(c * fixed[v] for v, c in self.objective.items() if v in fixed),
        )
        for terms, lo, hi, name in zip(self.row_terms, self.row_lower, self.row_upper, self.row_names):
            moved = sum(c * fixed[v] for v, c in terms if v in fixed)
            compact.row(
                [(where[v], c) for v, c in terms if v in where], None if lo is None else lo - moved, None if hi is None else hi - moved, name
            )  # raises if a row left empty cannot hold
        return Compaction(compact, kept, fixed)


@dataclass
class Compaction:
    """A compacted Milp and the way back: ``kept[i]`` is the original column of its column i."""

    milp: Milp
    kept: list[int]
    fixed: dict[int, int]

    def expand(self, values: list[int]) -> list[int]:
        """A compact solution as a solution of the original Milp."""
        out = [0] * (len(self.kept) + len(self.fixed))
        for v, x in self.fixed.items():
            out[v] = x
        for i, v in enumerate(self.kept):
            out[v] = values[i]
        return out

    def restrict(self, values: list[int]) -> list[int]:
        """An original solution's values on the compact model's columns (for a hint)."""
        return [values[v] for v in self.kept]


class PhaseRecord(TypedDict):
    """One solve (a phase of a lexicographic solve), as a report's history lists it."""

    phase: str
    status: str
    objective: float | None
    bound: float | None
    wall_s: float


@dataclass
class MilpResult:
    """What a back-end reports, as the solver gives it (objective and bound in the Milp's units)."""

    solver: str
    status: SolveStatus
    values: list[int] | None
    objective: float | None
    bound: float | None
    wall_s: float
    message: str = ""
