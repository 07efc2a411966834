"""The exact room model's tail phases solved by level vectors (``models/room_exact.py``).

When the shapes share their slot rows and their G are multiples of the smallest, U (the default
256g3072c, 128g1536c, 64g768c), ``models/room_cuts.py`` gives each group g its level r_U[g] (the requests
of U GPUs it holds) and the rows r_G[g] <= floor(r_U[g] U / G) for every shape and L_g >= LB_g(r_U[g])
for the pods leaving its nodes (LB_g non-decreasing). So a solution of the model whose counts reach the
values held has a level vector v (v_g = r_U[g]) with sum_g floor(v_g U / G_k) >= the count held of each
shape k, and v is at least (entry by entry) a *minimal* such vector u, one where lowering any entry
breaks a count: the solution is one of the restricted problem P(u), the model with r_U[g] >= u_g for
every g. Every moved pod leaves one node, so its moves are at least sum_g LB_g(u_g), the vector's
*cost*. Hence, for a maximised objective:

    the best of the model (with the counts held) = the best over the minimal vectors u of the best of P(u)

and a vector whose cost already rules it out needs no solve. On 200-node snapshots there are 2 to 17
minimal vectors below the moves of the start, and each P(u) fixes where the rooms are: HiGHS proves it
in seconds where the whole model's relaxation, mixing the groups' levels, leaves a gap it cannot close
(200-node seed 4 of ``benchmarks/room.py --only exact``: 7 moves against a bound of 5 after 42 s; its
six vectors prove 7 in 18 s). With hundreds of vectors (500 nodes) the enumeration gives up (``None``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from planner.heuristics.room_capacity import Components
from planner.models.milp import Milp, MilpResult, Row

VECTOR_CAP = 48
"""The most minimal vectors a tail phase is solved over; more, and the phase is left to the whole model."""
SEARCH_CAP = 200_000
"""The most partial vectors the enumeration visits before it gives up."""


@dataclass(frozen=True)
class LevelGroup:
    """One group's joint levels: its r_U variable and LB_g(j) for j = 0.. its highest reachable level."""

    group: int
    unit_var: int
    points: list[int]


@dataclass(frozen=True)
class JointLevels:
    """The joint levels of every shape of the model (``RoomModel.joint``): U, each shape's G, per group."""

    unit: int
    sizes: list[int]
    groups: list[LevelGroup]
    limits: list[tuple[tuple[int, ...], int]] = field(default_factory=list)
    """Valid rows sum of v_g over some groups (their positions in ``groups``) <= a most: the capacity
    rows (``room_cuts.add_capacity_rows``) of the components of the groups, each group in one."""


Vector = tuple[int, ...]


def level_limits(components: Components, groups: list[LevelGroup], unit: int) -> list[tuple[tuple[int, ...], int]]:
    """``JointLevels.limits`` from the capacity components: per component, the positions of its groups
    and the most requests of ``unit`` GPUs they hold together, where that is below their highest levels."""
    members: dict[int, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(int(components.of_group[group.group]), []).append(i)
    most = components.most(unit)
    return [(tuple(ids), int(most[c])) for c, ids in sorted(members.items()) if sum(len(groups[i].points) - 1 for i in ids) > most[c]]


def minimal_vectors(joint: JointLevels, reached: Sequence[int], below: int) -> list[tuple[int, Vector]] | None:
    """Every minimal level vector (one entry per group of ``joint``) whose counts reach ``reached`` and
    whose cost is below ``below``, with its cost, cheapest first; None when there are more than
    ``VECTOR_CAP`` or the search visits more than ``SEARCH_CAP`` partial vectors."""
    groups = joint.groups

    def counts(vector: Sequence[int]) -> list[int]:
        return [sum(j * joint.unit // size for j in vector) for size in joint.sizes]

    limit_of = [-1] * len(groups)  # per group, its limit (-1: none)
    for c, (members, _) in enumerate(joint.limits):
        for i in members:
            limit_of[i] = c
    # per limit and group i, the most levels groups i.. of the limit can add, and per shape what they add
    # to its count: with the limit's room left, what each shape's count can still gain from groups i..
    tops = [len(group.points) - 1 for group in groups]
    after: list[list[list[int]]] = [[[0] * (len(joint.sizes) + 1) for _ in range(len(groups) + 1)] for _ in range(len(joint.limits) + 1)]
    for i in range(len(groups) - 1, -1, -1):
        for c in range(len(joint.limits) + 1):
            after[c][i] = list(after[c][i + 1])
        c = limit_of[i]
        gain = [tops[i], *(tops[i] * joint.unit // size for size in joint.sizes)]
        after[c][i] = [a + b for a, b in zip(after[c][i], gain)]

    def most_after(i: int, used: list[int]) -> list[int]:
        """Per shape, the most its count gains from groups i.. (each limit's room left caps its groups)."""
        out = list(after[-1][i][1:])  # the groups under no limit
        for c, (_, most) in enumerate(joint.limits):
            room = most - used[c]
            levels, *per_shape = after[c][i]
            out = [o + (g if levels <= room else min(g, room * joint.unit // size)) for o, g, size in zip(out, per_shape, joint.sizes)]
        return out

    found: list[tuple[int, Vector]] = []
    visited = 0
    vector: list[int] = []

    def minimal(v: list[int]) -> bool:
        for q, j in enumerate(v):
            if j > 0:
                v[q] -= 1
                still = all(c >= r for c, r in zip(counts(v), reached))
                v[q] += 1
                if still:
                    return False
        return True

    used = [0] * len(joint.limits)

    def visit(i: int, cost: int, have: list[int]) -> bool:
        """False once a cap is passed."""
        nonlocal visited
        visited += 1
        if visited > SEARCH_CAP:
            return False
        if any(h + m < r for h, m, r in zip(have, most_after(i, used), reached)):
            return True
        if i == len(groups):
            if minimal(vector):
                found.append((cost, tuple(vector)))
                if len(found) > VECTOR_CAP:
                    return False
            return True
        c = limit_of[i]
        for j, lb in enumerate(groups[i].points):
            if cost + lb >= below or (c >= 0 and used[c] + j > joint.limits[c][1]):
                break  # the points are non-decreasing: higher levels cost no less
            vector.append(j)
            if c >= 0:
                used[c] += j
            going = visit(i + 1, cost + lb, [h + j * joint.unit // size for h, size in zip(have, joint.sizes)])
            if c >= 0:
                used[c] -= j
            vector.pop()
            if not going:
                return False
        return True

    if not visit(0, 0, [0] * len(joint.sizes)):
        return None
    return sorted(found)


def vector_rows(joint: JointLevels, vector: Vector) -> list[Row]:
    """P(u)'s rows: r_U[g] >= u_g for every group."""
    return [([(group.unit_var, 1)], j, None, f"level-at-least[{group.group}]") for group, j in zip(joint.groups, vector) if j > 0]


Solver = Callable[[Milp, float, list[int] | None], MilpResult]
"""(milp, seconds, start) -> its result: how a phase runs a solve (``room_exact.solve_phases``)."""


@dataclass
class VectorSolve:
    """A phase solved over level vectors: the best result (bound: the best over every vector), and
    each vector's proven upper bound on the objective (-inf: no solution)."""

    result: MilpResult
    bounds: dict[Vector, float]


def solve_over_vectors(
    milp: Milp,
    joint: JointLevels,
    vectors: list[tuple[Vector, float]],
    outside: float,
    best: MilpResult,
    run: Solver,
    deadline: float,
) -> VectorSolve:
    """Maximise ``milp`` over the union of P(u) for the ``vectors`` (u, an upper bound on P(u)'s objective
    known beforehand, e.g. minus its cost for the moves), every solution outside them at most ``outside``;
    ``best``: a solution so far (its values satisfy ``milp``). The result's bound is the largest of
    ``outside`` and each vector's bound (its solver's, or the bound given when it was not solved)."""
    began = time.perf_counter()
    incumbent = best
    bounds: dict[Vector, float] = {}
    order = sorted(vectors, key=lambda item: -item[1])
    for i, (vector, ceiling) in enumerate(order):
        if incumbent.objective is not None and ceiling <= incumbent.objective + 1e-9:
            bounds[vector] = ceiling  # cannot beat the incumbent
            continue
        left = deadline - time.perf_counter()
        if left <= 0.2:
            bounds[vector] = ceiling
            continue
        restricted = milp.with_objective(list(milp.objective.items()), milp.objective_offset, vector_rows(joint, vector))
        start = incumbent.values if incumbent.values is not None and not restricted.violated_rows(incumbent.values) else None
        result = run(restricted, left / (len(order) - i), start)
        if result.status == "infeasible":
            bounds[vector] = -math.inf
        elif result.status == "error" or result.bound is None or not math.isfinite(result.bound):
            bounds[vector] = ceiling
        else:
            bounds[vector] = min(ceiling, result.bound)
        if result.values is not None and result.objective is not None and (incumbent.objective is None or result.objective > incumbent.objective):
            incumbent = result
    bound = max([outside, *bounds.values()])
    proven = incumbent.objective is not None and bound <= incumbent.objective + 1e-6
    message = f"over {len(order)} level vectors ({sum(b == -math.inf for b in bounds.values())} without a solution)"
    status = "optimal" if proven else "feasible" if incumbent.values is not None else incumbent.status
    result = replace(incumbent, status=status, bound=bound, wall_s=time.perf_counter() - began, message=message)
    return VectorSolve(result, bounds)
