"""Valid inequalities of the exact room model (``models/room_exact.py``): rooms need pods to leave.

For a shape R (G GPUs) and a group g (the nodes of one GPU model under one switch), let L_g be the
number of movable pods that leave their node in g (the defrag model's ``leaving`` terms: equal to it at
an optimum, never below it). The room rows bound the slots of node n by each of its rows (R1)-(R3),
``coef * s[R,n] + sum(terms) <= rhs`` with non-negative terms: keeping only the terms of the pods on n now
that stay (amount a_p each, H_n in all), and writing out_n for the amounts of those that leave,

    s[R,n] <= min(s*(n), max(0, rhs - H_n + out_n) / coef)

which is concave in out_n. So for one row kind (GPUs, CPUs or memory) the most slots that k leaving
pods can add over the group is reached by taking, node by node, its pods largest first, and over the
group the k largest of these marginal gains (each node's gains are non-increasing): a greedy. LB(j),
the fewest pods that must leave for the group to hold j requests (G * j slots), is the larger of the
three kinds' greedy answers; j that no number of leaving pods reaches is cut off (r <= j_max). Every
plan within the limits ends in a solution of the model, so with r[R,g] = j it has L_g >= LB(j); the
edges of the lower convex hull of the points (j, LB(j)) are linear rows below every such point:

    (b - a) * L_g - (LB(b) - LB(a)) * r[R,g] >= (b - a) * LB(a) - (LB(b) - LB(a)) * a

They remove no integer solution and give the LP relaxation the price of a room in moves: without them
the relaxation spreads fractional rooms over the groups' free slots and bounds the moves by about 0.

Joint levels (``add_level_rows``). Shapes with the same slot rows (``room_exact`` gives them one set of
slot variables, so a group's slots S_g are one sum) whose G are multiples of the smallest, U: since
floor(S_g / G) = floor(floor(S_g / U) / (G / U)), per group binaries y[j] (the group holds j requests of
U GPUs, j = 0..J) with

    sum_j y[j] = 1,   r_U = sum_j j y[j],   r_G <= sum_j floor(j U / G) y[j],   L_g >= sum_j LB(j) y[j]

with LB(j) the greedy above for j U slots. Every end state meets them with y at j = floor(S_g / U) and
every r at floor(S_g / G), so they cut off none; the relaxation then prices a group's rooms of every
shape at the level it takes, where the hulls apart let it take a 256-GPU room in one group at the price
of fractions of 64-GPU rooms in others (on the 200-node seed 2 of ``benchmarks/room.py --only exact``
its moves phase was proven in 8 s, where it took 76 s without them; the benchmark has the rest).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from planner.heuristics.room_capacity import Components
from planner.models.defrag import DefragModel
from planner.models.milp import Milp

SlotRow = tuple[list[tuple[int, int]], int, int]
"""coef * s + sum(terms) <= rhs: one of (R1)-(R3) for a slot variable s (``room_exact``)."""


def fewest_leaving(nodes: list[tuple[int, list[SlotRow], list[tuple[int, int]]]], kind: int, size: int, most: int) -> list[int]:
    """Per j = 0..most, the fewest pods that must leave the nodes for G * j slots by row ``kind`` (the
    greedy of the module docstring); the list stops at the last j some number of pods reaches.
    ``nodes``: (s*(n), its rows, its home (assignment variable, pods) pairs) per node."""
    start = Fraction(0)
    gains: list[Fraction] = []
    for upper, rows, home in nodes:
        if upper <= 0 or kind >= len(rows):
            continue
        terms, coef, rhs = rows[kind]
        amount = dict(terms)
        pods = sorted((amount.get(var, 0) for var, count in home for _ in range(count)), reverse=True)
        base = max(Fraction(0), Fraction(rhs - sum(pods)))
        now = min(Fraction(upper), base / coef)
        start += now
        room = upper - now
        for a in pods:
            gain = min(Fraction(a, coef), room)
            if gain <= 0:
                break
            gains.append(gain)
            room -= gain
    gains.sort(reverse=True)
    out: list[int] = []
    total, k = start, 0
    for j in range(most + 1):
        while total < size * j and k < len(gains):
            total += gains[k]
            k += 1
        if total < size * j:
            break
        out.append(k)
    return out


def lower_hull(points: list[int]) -> list[tuple[int, int]]:
    """The vertices (j, value) of the lower convex hull of the points (j, points[j])."""
    hull: list[tuple[int, int]] = []
    for j, value in enumerate(points):
        while len(hull) >= 2:
            (a, fa), (b, fb) = hull[-2], hull[-1]
            if (fb - fa) * (j - a) >= (value - fa) * (b - a):  # b on or above the segment a-j
                hull.pop()
            else:
                break
        hull.append((j, value))
    return hull


def _fewest_points(milp: Milp, base: DefragModel, nodes: list[tuple[int, int, list[SlotRow]]], size: int, most: int) -> list[int]:
    """LB(j) for j = 0.. the last j <= ``most`` some set of leaving pods reaches, over the group's
    ``nodes`` (node, slot variable, its rows): the larger of the row kinds' greedy answers; [] when no
    node of the group has a slot."""
    useful = [(n, milp.upper[s], rows) for n, s, rows in nodes if milp.upper[s] > 0]
    if not useful:
        return []
    data = [(upper, rows, base.leaving[n][2] if n in base.leaving else []) for n, upper, rows in useful]
    kinds = max(len(rows) for _, rows, _ in data)
    per_kind = [fewest_leaving(data, kind, size, most) for kind in range(kinds)]
    reach = min(len(points) for points in per_kind) - 1  # >= 0: no slot is needed for j = 0
    return [max(points[j] for points in per_kind) for j in range(reach + 1)]


def _leaving_sum(base: DefragModel, nodes: list[int]) -> tuple[dict[int, int], int]:
    """The pods leaving ``nodes`` as terms and a constant (the defrag model's ``leaving`` of each, summed)."""
    terms: dict[int, int] = {}
    constant = 0
    for n in nodes:
        if n in base.leaving:
            leave_terms, leave_constant, _ = base.leaving[n]
            for v, c in leave_terms:
                terms[v] = terms.get(v, 0) + c
            constant += leave_constant
    return terms, constant


def add_leave_cuts(milp: Milp, base: DefragModel, r: int, size: int, nodes: list[tuple[int, int, list[SlotRow]]], name: str) -> None:
    """The rows of the module docstring for the room variable ``r`` (G = ``size``) of a group whose
    nodes are ``nodes`` (node, slot variable, its rows); tightens r's upper bound when a j is out of reach."""
    points = _fewest_points(milp, base, nodes, size, milp.upper[r])
    if not points:
        return
    milp.upper[r] = min(milp.upper[r], len(points) - 1)
    terms, constant = _leaving_sum(base, [n for n, s, _ in nodes if milp.upper[s] > 0])
    hull = lower_hull(points)
    for (a, fa), (b, fb) in itertools.pairwise(hull):
        if fb <= fa:
            continue
        rhs = (b - a) * fa - (fb - fa) * a - (b - a) * constant
        milp.row([*((v, (b - a) * c) for v, c in terms.items()), (r, -(fb - fa))], rhs, None, f"{name}:{a}-{b}")


def add_capacity_rows(milp: Milp, components: Components, r_of: dict[int, int], size: int, name: str) -> None:
    """Per component of the groups (``heuristics/room_capacity.py``), the requests of ``size`` GPUs its
    groups hold (their r variables ``r_of``) are at most its unused GPUs over ``size``, floored: the
    capacity rows of the relaxation sum to the same without the floor."""
    members: dict[int, list[int]] = {}
    for g, r in r_of.items():
        members.setdefault(int(components.of_group[g]), []).append(r)
    most = components.most(size)
    for c, rs in sorted(members.items()):
        if sum(milp.upper[r] for r in rs) > most[c]:
            milp.row([(r, 1) for r in rs], None, int(most[c]), f"{name}:{c}")


def add_level_rows(
    milp: Milp,
    base: DefragModel,
    family: list[tuple[int, dict[int, int]]],
    groups: np.ndarray,
    slot_of: dict[int, int],
    rows_of: dict[int, list[SlotRow]],
) -> list[tuple[int, int, list[int], list[int]]]:
    """The joint levels of the module docstring for the shapes of ``family`` ((G, r variable per group)
    of each; they share ``slot_of`` and ``rows_of`` per node), per group of ``groups``: the (group, r_U,
    level binaries, LB(j) per level) of each group; none unless two or more shapes' G are multiples of
    the smallest."""
    unit = min(size for size, _ in family)
    if len(family) < 2 or any(size % unit for size, _ in family):
        return []
    smallest = next(r_of for size, r_of in family if size == unit)
    out: list[tuple[int, int, list[int], list[int]]] = []
    for g, r in smallest.items():
        members = [int(n) for n in np.flatnonzero(groups == g)]
        points = _fewest_points(milp, base, [(n, slot_of[n], rows_of[n]) for n in members], unit, milp.upper[r])
        if not points:
            continue
        ys = [milp.var(f"level[{unit},{g},{j}]", 0, 1) for j in range(len(points))]
        milp.row([(y, 1) for y in ys], 1, 1, f"level[{unit},{g}]")
        milp.row([(r, 1), *((y, -j) for j, y in enumerate(ys))], 0, 0, f"level-r[{unit},{g}]")
        for size, r_of in family:
            if size != unit and g in r_of:
                milp.row([(r_of[g], 1), *((y, -(j * unit // size)) for j, y in enumerate(ys) if j * unit // size)], None, 0, f"level-r[{size},{g}]")
        terms, constant = _leaving_sum(base, members)
        milp.row([*terms.items(), *((y, -lb) for y, lb in zip(ys, points) if lb)], -constant, None, f"level-leave[{unit},{g}]")
        out.append((g, r, ys, points))
    return out
