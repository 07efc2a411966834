"""The exact room model solved piece by piece, when it falls apart into independent pieces (``models/room_exact.py``).

Two columns of the model are linked when a row holds both. With no budget row over the whole plan
(``max_moves`` unset, the default), a pod's columns reach only the nodes it may end on, so the model falls
apart along the components of ``heuristics/room_capacity.py``: by default one piece per GPU product, since
a pod keeps its product. A *piece* is one connected set of columns holding a room count's variable; the
columns no count reaches form one more piece. No row holds two pieces, so every objective of the
lexicographic solve (each count, the moves, the GPUs moved) is a sum over the pieces, and

    the lexicographic optimum = the sum over the pieces of each piece's own lexicographic optimum:

every plan with the most requests of the largest shape has the most in every piece (else that piece
could gain alone), and so on down the shapes and the tail. So each piece is solved on its own, with the
other pieces' columns fixed at the solution so far (the warm start, then the pieces already solved), by
the same phases (``room_exact.solve_phases``) on a model compacted to its columns (``Milp.compacted``'s
arithmetic, done once per piece for the model's rows): a branch and bound over 100 to 300 nodes where the
whole model's ranged over 500. On 500-node snapshots it proved what the whole model could not in the time
(``benchmarks/results/room_exact.md``).

What each piece proves is about its own part of every objective: a bound of a phase of piece P, solved
with the others fixed at x, is P's part plus the others' parts at x. The combined proof
(``combine``) sums the parts: a count's bound is the sum of the pieces' bounds while every piece proved
every earlier count (then the plans holding the earlier maxima hold each piece's), and the tail's bound is
the sum of the pieces' tail bounds when every piece has one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from planner.graph_components import component_labels
from planner.models.milp import Compaction, Milp, MilpResult
from planner.models.room_levels import JointLevels
from planner.models.room_tail import Run

if TYPE_CHECKING:
    from planner.models.room_exact import RoomModel, RoomProof

MIN_PIECES = 2
"""Pieces with a room count needed for a piece-by-piece solve (one: the whole model is that piece)."""


def independent_pieces(milp: Milp, counts: list[list[int]]) -> list[list[int]]:
    """The pieces of the module docstring (columns, sorted), smallest first; [] unless at least
    ``MIN_PIECES`` of them hold a count variable."""
    firsts = [terms[0][0] for terms in milp.row_terms for _ in terms]  # each row links its first column to the others
    others = [v for terms in milp.row_terms for v, _ in terms]
    roots = component_labels(milp.num_vars, np.array(firsts, dtype=np.int64), np.array(others, dtype=np.int64))
    holding = sorted({int(roots[r]) for rs in counts for r in rs})
    if len(holding) < MIN_PIECES:
        return []
    pieces = [np.flatnonzero(roots == root).tolist() for root in holding]
    rest = np.flatnonzero(~np.isin(roots, holding)).tolist()
    if rest:
        pieces.append(rest)
    return sorted(pieces, key=lambda columns: (len(columns), columns[0]))


@dataclass
class Piece:
    """One piece and the solution its solve starts from (``current``: every column; the other pieces' stay)."""

    model: RoomModel
    columns: list[int]
    current: list[int]
    inside: np.ndarray = field(init=False)
    rows: list[int] = field(init=False)
    """The model's rows holding this piece's columns (no other row holds any)."""

    def __post_init__(self) -> None:
        self.inside = np.zeros(self.model.base.milp.num_vars, dtype=bool)
        self.inside[self.columns] = True
        self.rows = [i for i, terms in enumerate(self.model.base.milp.row_terms) if self.inside[terms[0][0]]]

    def project(self, values: list[int]) -> list[int]:
        """``values`` on this piece's columns, ``current`` elsewhere."""
        return [v if self.inside[j] else c for j, (v, c) in enumerate(zip(values, self.current))]

    def compact(self, milp: Milp) -> Compaction:
        """``milp`` (the model's rows first, as ``Milp.with_objective`` keeps them, then its own) with every
        column outside the piece fixed at ``current``: its rows outside the piece are dropped (they hold
        at ``current``, a solution), the others keep the piece's terms, the fixed ones moved to the sides."""
        base = self.model.base.milp
        assert milp.row_terms[: base.num_rows] == base.row_terms, "a phase's Milp keeps the model's rows first"
        where = {v: i for i, v in enumerate(self.columns)}
        fixed = {v: x for v, x in enumerate(self.current) if not self.inside[v]}
        compact = Milp([milp.names[v] for v in self.columns], [milp.lower[v] for v in self.columns], [milp.upper[v] for v in self.columns])
        compact.maximize(
            [(where[v], c) for v, c in milp.objective.items() if v in where],
            milp.objective_offset + sum(c * self.current[v] for v, c in milp.objective.items() if v not in where),
        )
        for i in [*self.rows, *range(base.num_rows, milp.num_rows)]:
            terms, lo, hi = milp.row_terms[i], milp.row_lower[i], milp.row_upper[i]
            moved = sum(c * self.current[v] for v, c in terms if v not in where)
            compact.row(
                [(where[v], c) for v, c in terms if v in where], None if lo is None else lo - moved, None if hi is None else hi - moved, milp.row_names[i]
            )
        return Compaction(compact, self.columns, fixed)

    def solving(self, run: Run) -> Run:
        """``run`` (milp, seconds, start, abs_gap) on the compacted milp, its values expanded back."""

        def on_piece(milp: Milp, seconds: float, start: list[int] | None, abs_gap: float = 0.0) -> MilpResult:
            compaction = self.compact(milp)
            result = run(compaction.milp, seconds, None if start is None else compaction.restrict(start), abs_gap)
            if result.values is None:
                return result
            return MilpResult(result.solver, result.status, compaction.expand(result.values), result.objective, result.bound, result.wall_s, result.message)

        return on_piece

    def count_outside(self, k: int) -> int:
        """Shape k's requests in the other pieces (at ``current``)."""
        return sum(self.current[r] for r in self.model.counts[k] if not self.inside[r])

    def moves_outside(self) -> int:
        """The moves of the other pieces' pods (at ``current``)."""
        base = self.model.base
        state = base.state
        moved = [p for p, n in base.target(self.current).items() if n != int(state.pod_node[p])]
        home_inside = self.home_inside()
        return sum(not home_inside.get(int(state.pod_node[p]), False) for p in moved)

    def home_inside(self) -> dict[int, bool]:
        """Per node with movable pods, whether their columns are this piece's."""
        return {n: bool(self.inside[home[0][0]]) for n, (_, _, home) in self.model.base.leaving.items() if home}

    def joint(self) -> JointLevels | None:
        """The model's joint levels over this piece's groups only (their limits too)."""
        joint = self.model.joint
        if joint is None:
            return None
        keep = [i for i, group in enumerate(joint.groups) if self.inside[group.unit_var]]
        position = {i: j for j, i in enumerate(keep)}
        limits = [(tuple(position[i] for i in members), most) for members, most in joint.limits if all(i in position for i in members)]
        return JointLevels(joint.unit, joint.sizes, [joint.groups[i] for i in keep], limits)

    def tail_outside(self, tail: Milp) -> float:
        """The other pieces' part of W2 * moves + GPU units at ``current`` (with the tail's whole offset):
        minus ``tail``'s objective (the tail phases' objective) at ``current``, less this piece's terms."""
        own = sum(c * self.current[v] for v, c in tail.objective.items() if self.inside[v])
        return -(tail.value_of_objective(self.current) - own)


@dataclass
class PieceProof:
    """What one piece's solve proved about its own part of each objective."""

    bounds: list[int | None]
    reached: list[int | None]
    tail_lower: float | None
    """A bound on the piece's part of W2 * moves + GPU units: minus its terms of the tail's objective
    (the whole is the parts' sum less the tail's offset)."""


def piece_proof(piece: Piece, proof: RoomProof, tail: Milp) -> PieceProof:
    """``proof`` (of a solve of ``piece`` with the others fixed) as the piece's own parts."""
    outside = [piece.count_outside(k) for k in range(len(proof.bounds))]
    return PieceProof(
        [None if b is None else b - o for b, o in zip(proof.bounds, outside)],
        [None if r is None else r - o for r, o in zip(proof.reached, outside)],
        None if proof.tail_lower is None else proof.tail_lower - piece.tail_outside(tail),
    )


def combine(proof: RoomProof, parts: list[PieceProof], tail: Milp) -> RoomProof:
    """The pieces' proofs as one ``RoomProof`` of the whole model (``proof``: its other fields)."""
    chained = True
    for k in range(len(proof.bounds)):
        bounds = [part.bounds[k] for part in parts]
        reached = [part.reached[k] for part in parts]
        proof.reached[k] = None if any(r is None for r in reached) else sum(r for r in reached if r is not None)
        proof.bounds[k] = sum(b for b in bounds if b is not None) if chained and all(b is not None for b in bounds) else None
        chained = chained and all(b is not None and b == r for b, r in zip(bounds, reached))
    lowers = [part.tail_lower for part in parts]
    proof.tail_lower = None if any(t is None for t in lowers) else sum(t for t in lowers if t is not None) - tail.objective_offset
    return proof
