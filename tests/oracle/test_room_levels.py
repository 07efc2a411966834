"""The exact room model's tail solved over level vectors (``models/room_levels.py``): the minimal vectors
against an enumeration of every vector written here, and the fewest moves over the vectors against the
whole model and a brute force over every move set of tiny clusters (``test_room_exact.py``'s)."""

from __future__ import annotations

import itertools
import math
import time
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from planner.heuristics.switch_room import RoomShape
from planner.limits import MoveBudget, MoveLimits
from planner.metrics import Shape
from planner.models.backends import solve
from planner.models.milp import MilpResult
from planner.models.room_exact import build_room_model
from planner.models.room_levels import JointLevels, LevelGroup, minimal_vectors, solve_over_vectors
from planner.state import ClusterState
from tests.support.room_oracle import brute, snapshot, tiny_multiples


@st.composite
def joints(draw: st.DrawFn) -> tuple[JointLevels, list[int], int]:
    unit = draw(st.sampled_from([1, 2]))
    sizes = sorted({unit * m for m in draw(st.lists(st.sampled_from([1, 2, 4]), min_size=1, max_size=3))}, reverse=True)
    groups = []
    for g in range(draw(st.integers(1, 4))):
        steps = draw(st.lists(st.integers(0, 5), min_size=0, max_size=5))
        points = [0, *itertools.accumulate(steps)]
        groups.append(LevelGroup(g, g, points))
    # capacity rows (``room_cuts.add_capacity_rows``): each group in component 0 (no row) or in 1 or 2 (a row each)
    component = draw(st.lists(st.integers(0, 2), min_size=len(groups), max_size=len(groups)))
    limits = [(tuple(i for i, m in enumerate(component) if m == c), draw(st.integers(0, 6))) for c in sorted(set(component) - {0})]
    joint = JointLevels(unit, sizes, groups, limits)
    reached = [draw(st.integers(0, 4)) for _ in sizes]
    return joint, reached, draw(st.integers(0, 25))


def counts(joint: JointLevels, vector: tuple[int, ...]) -> list[int]:
    return [sum(j * joint.unit // size for j in vector) for size in joint.sizes]


@settings(max_examples=300, deadline=None)
@given(joints())
def test_minimal_vectors_are_every_minimal_vector_below_the_cost(case: tuple[JointLevels, list[int], int]) -> None:
    joint, reached, below = case
    expected = set()
    for vector in itertools.product(*(range(len(group.points)) for group in joint.groups)):
        reaches = all(c >= r for c, r in zip(counts(joint, vector), reached))
        cost = sum(group.points[j] for group, j in zip(joint.groups, vector))
        lower = [tuple(j - (q == i) for q, j in enumerate(vector)) for i in range(len(vector)) if vector[i] > 0]
        is_minimal = not any(all(c >= r for c, r in zip(counts(joint, w), reached)) for w in lower)
        within = all(sum(vector[i] for i in ids) <= most for ids, most in joint.limits)
        if reaches and is_minimal and cost < below and within:
            expected.add((cost, vector))
    found = minimal_vectors(joint, reached, below)
    assert found is not None  # at most 6**4 vectors here, under both caps
    assert found == sorted(expected)


def test_minimal_vectors_give_up_past_the_cap() -> None:
    groups = [LevelGroup(g, g, [0, 0, 0, 0]) for g in range(12)]  # 12 groups, any 6 of them at level 1: 924 vectors
    assert minimal_vectors(JointLevels(1, [1], groups), [6], 1) is None


NOTHING = MilpResult("highs", "timeout", None, None, None, 0.0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_multiples())
def test_fewest_moves_over_level_vectors_is_the_whole_models(case: tuple[Any, ...]) -> None:
    nodes, pods, shapes, max_moves = case
    _, best_counts, fewest, _ = brute(nodes, pods, shapes, max_moves)
    c = snapshot(nodes, pods)
    state = ClusterState(c)
    order = sorted(range(len(shapes)), key=lambda k: -shapes[k][0])
    rooms = [RoomShape(Shape(shapes[k][0], shapes[k][1], 0.0)) for k in order]
    model = build_room_model(state, rooms, MoveBudget.of(state, MoveLimits(max_moves=max_moves)))
    event(f"joint levels over every shape: {model.joint is not None}")
    if model.joint is None:
        return
    base = model.base
    reached = [best_counts[k] for k in order]
    held = [([(r, 1) for r in model.counts[i]], reached[i], None, f"hold[{i}]") for i in range(len(rooms)) if model.counts[i]]
    empties = set(base.empty_vars)
    moves = [(v, int(c / base.w2)) for v, c in base.milp.objective.items() if v not in empties and int(c / base.w2)]
    milp = base.milp.with_objective(moves, int(base.milp.objective_offset / base.w2), held)
    whole = solve(milp, "highs", 20.0, 1)
    vectors = minimal_vectors(model.joint, reached, 10**6)
    assert vectors is not None
    over = solve_over_vectors(
        milp, model.joint, [(u, math.inf) for _, u in vectors], -math.inf, NOTHING, lambda m, s, h: solve(m, "highs", s, 1, h), time.perf_counter() + 60.0
    )
    assert whole.status == "optimal" and over.result.status == "optimal", (whole, over.result)
    assert over.result.objective == whole.objective and over.result.bound == over.result.objective
    assert over.result.values is not None and milp.violated_rows(over.result.values) == []
    assert -round(whole.objective or 0) <= fewest  # the model is a relaxation: never more moves than a real end state needs
