"""The count phases' weighted objectives of the exact room model (``models/room_exact.py``): each phase's
weights order solutions lexicographically from its own shape on, a solver stopped within the phase's gap
has proven its count, and the bound a phase proves implies a valid bound on every later count. Checked
exhaustively over every count vector of small ranges."""

from __future__ import annotations

import itertools

import pytest

from planner.models.room_phases import LEAD, implied_bound, phase_gap, phase_weights

RANGES = [[2, 3, 1], [0, 4, 2], [3, 0, 3], [1, 1], [5], [2, 2, 2, 1]]


def vectors(most: list[int]) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(m + 1) for m in most)))


def value(weights: list[int], counts: tuple[int, ...]) -> int:
    return sum(w * c for w, c in zip(weights, counts))


@pytest.mark.parametrize("most", RANGES)
def test_weights_order_solutions_lexicographically_from_the_phase_on(most: list[int]) -> None:
    for k in range(len(most)):
        weights = phase_weights(most, k)
        assert weights[:k] == [0] * k and all(w >= 1 for w in weights[k:])
        for a, b in itertools.combinations(vectors(most), 2):
            if value(weights, a) != value(weights, b):
                assert (value(weights, a) > value(weights, b)) == (a[k:] > b[k:]), (k, a, b)
            else:
                assert a[k:] == b[k:], (k, a, b)


@pytest.mark.parametrize("most", RANGES)
def test_a_solver_stopped_within_the_gap_has_proven_the_phase_count(most: list[int]) -> None:
    for k in range(len(most)):
        weights = phase_weights(most, k)
        gap = phase_gap(weights, k)
        later = sum(weights[j] * most[j] for j in range(k + 1, len(most)))
        assert weights[k] == LEAD * later + 1
        assert gap == (weights[k] - later - 1 if later else 0)
        for incumbent in vectors(most):
            for bound in range(value(weights, incumbent), value(weights, incumbent) + gap + 1):
                # every solution's objective is at most the bound, so count k is at most bound // weights[k] ...
                assert all(v[k] <= bound // weights[k] for v in vectors(most) if value(weights, v) <= bound)
                # ... which is the incumbent's own count: the phase is proven
                assert bound // weights[k] == incumbent[k], (k, incumbent, bound)


@pytest.mark.parametrize("most", RANGES)
def test_an_earlier_phase_bound_implies_a_valid_bound_on_each_later_count(most: list[int]) -> None:
    for k in range(len(most)):
        weights = phase_weights(most, k)
        top = value(weights, tuple(most))
        for bound in range(0, top + 1, max(1, top // 40)):
            for reached in vectors(most):
                for j in range(k + 1, len(most)):
                    held = [*reached[:j], *([None] * (len(most) - j))]
                    implied = implied_bound(bound, weights, held, j)
                    # every solution within the bound that reaches the held counts before j
                    feasible = [v for v in vectors(most) if value(weights, v) <= bound and all(v[i] >= reached[i] for i in range(j))]
                    assert all(v[j] <= implied for v in feasible), (k, j, bound, reached)
                    # and no looser than it must be: with the earlier counts at the held values and the later ones 0,
                    # count j reaches it whenever its range does
                    lowest = [v for v in feasible if v[:j] == reached[:j] and not any(v[j + 1 :])]
                    if lowest and implied <= most[j]:
                        assert max(v[j] for v in lowest) == implied, (k, j, bound, reached)


def test_implied_bound_refuses_a_count_the_phase_does_not_weigh() -> None:
    with pytest.raises(ValueError, match="no term"):
        implied_bound(10, phase_weights([2, 2, 2], 1), [1, None, None], 0)
