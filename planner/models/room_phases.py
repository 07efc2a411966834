"""The objectives of the exact room model's count phases (``models/room_exact.py``): each phase k
maximises count k and weighs the later counts far below it (``phase_weights``), may stop at an absolute
gap that still proves count k (``phase_gap``), and its bound implies bounds on the later counts
(``implied_bound``)."""

from __future__ import annotations

LEAD = 64
"""How many times all the later shapes' requests together a request of a count phase's own shape weighs
(``phase_weights``)."""


def phase_weights(most: list[int], k: int) -> list[int]:
    """Phase k's objective weights per shape: 0 before k; lexicographic from k on, so that the phase
    maximises count k and prefers, among its solutions, more of the later counts in order (a start
    for the later phases). With R the most the later terms can add, count k weighs LEAD * R + 1: the
    later terms add less than 1 / LEAD of a request of shape k to the relaxation's bound on count k,
    so proving count k is about as hard as with count k alone, and a solver stopped within an absolute
    gap of (LEAD - 1) * R of its bound (``phase_gap``) has proven count k (bound < weight * (count + 1)).
    ``most``: the largest value of each count."""
    weights = [0] * len(most)
    later = 0
    for j in range(len(most) - 1, k, -1):
        weights[j] = later + 1
        later += weights[j] * most[j]
    weights[k] = LEAD * later + 1
    return weights


def phase_gap(weights: list[int], k: int) -> int:
    """The absolute gap at which phase k may stop: weights[k] - R - 1 with R the later terms' most
    (weights[k] = LEAD * R + 1), so that bound <= incumbent + gap < weights[k] * (count k + 1)."""
    return (LEAD - 1) * ((weights[k] - 1) // LEAD)


def implied_bound(integral: int, weights: list[int], reached: list[int | None], j: int) -> int:
    """The bound on count j implied by an earlier phase's integral bound ``integral`` on its weighted
    objective, for the plans whose counts before j reach the values held (``reached``): every term
    is >= 0, so weights[j] * count j <= integral - the held terms before it."""
    if weights[j] == 0:
        raise ValueError(f"count {j} has no term in that phase's objective: it implies nothing about it")
    held = sum(weights[i] * (reached[i] or 0) for i in range(j))
    return max(0, (integral - held) // weights[j])
