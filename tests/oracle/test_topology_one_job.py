"""One job on as few switches as possible: largest-first against a brute force, Algorithm 2 as published."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.heuristics.topology import alg2, entropy, largest_first, min_switches


def brute_force(capacities: list[int], demand: int) -> tuple[int, float] | None:
    """(switches, entropy) of the best split of ``demand`` over the switches, by enumerating every
    vector x with 0 <= x_i <= cap_i and sum x = demand: fewest switches first, then least entropy."""
    best = None
    for x in itertools.product(*(range(c + 1) for c in capacities)):
        if sum(x) != demand:
            continue
        used = [v for v in x if v]
        h = -sum((v / demand) * math.log(v / demand) for v in used)
        key = (len(used), round(h, 12))
        if best is None or key < best:
            best = key
    return best


def judge(capacities: list[int], demand: int, plan) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    assert sum(n for _, n in plan) == demand
    switches = [s for s, _ in plan]
    assert len(set(switches)) == len(switches)
    for s, n in plan:
        assert 0 < n <= capacities[s]
    return len(plan), round(entropy([n for _, n in plan]), 12)


capacities_st = st.lists(st.integers(0, 6), min_size=1, max_size=5)


@settings(max_examples=3000, deadline=None, derandomize=True)
@given(capacities_st, st.integers(1, 18))
def test_largest_first_is_optimal_against_brute_force(capacities: list[int], demand: int) -> None:
    truth = brute_force(capacities, demand)
    plan = largest_first(capacities, demand)
    if truth is None:
        assert plan is None and min_switches(capacities, demand) is None
        return
    assert plan is not None
    assert judge(capacities, demand, plan) == truth
    assert min_switches(capacities, demand) == truth[0]


def test_algorithm_2_is_not_optimal_on_the_counterexample():
    """seed-specs D: G = 128 on free capacities {96, 32, 8, 8, 8, 8}."""
    capacities = [96, 32, 8, 8, 8, 8]
    published = alg2(capacities, 128)
    assert sorted(n for _, n in published) == [8, 8, 8, 8, 96]
    assert round(entropy([n for _, n in published]), 3) == 0.909
    ours = largest_first(capacities, 128)
    assert sorted(n for _, n in ours) == [32, 96] and round(entropy([n for _, n in ours]), 3) == 0.562


def test_algorithm_2_breaks_the_first_tie_by_index():
    """{8, 128}, G = 128: every first chunk has entropy 0, the lowest index wins: {8, 120}."""
    assert alg2([8, 128], 128) == [(0, 8), (1, 120)]
    assert largest_first([8, 128], 128) == [(1, 128)]


def test_the_remainder_goes_to_the_smallest_switch_that_holds_it():
    assert largest_first([10, 3, 6, 4], 14) == [(0, 10), (3, 4)]  # not (2, 4): best fit keeps 6 whole
    assert largest_first([5, 5], 11) is None and alg2([5, 5], 11) is None


@pytest.mark.parametrize("demand", [0, -1])
def test_nothing_to_place(demand: int) -> None:
    assert largest_first([4], demand) == [] and alg2([4], demand) == []
