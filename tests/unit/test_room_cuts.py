"""The leave cuts' pieces (``models/room_cuts.py``) on hand-checked numbers; their validity on every end
state of tiny clusters is checked in ``tests/oracle/test_room_exact.py``."""

from __future__ import annotations

from planner.models.room_cuts import fewest_leaving, lower_hull


def test_fewest_leaving_takes_the_largest_gains_and_stops_where_no_pods_reach() -> None:
    # node A: 8 GPUs, one 8-GPU pod (variable 1); node B: 8 GPUs, two 4-GPU pods of one class (variable 2)
    a = (8, [([(1, 8)], 1, 8)], [(1, 1)])
    b = (8, [([(2, 4)], 1, 8)], [(2, 2)])
    assert fewest_leaving([a, b], 0, 8, 3) == [0, 1, 3]  # 16 slots take all three pods; 24 are out of reach
    # a node with 4 GPUs free already, its 4-GPU pod capped by s* = 6: the pod adds 2 slots, not 4
    c = (6, [([(3, 4)], 1, 8)], [(3, 1)])
    assert fewest_leaving([c], 0, 4, 2) == [0, 0]
    assert fewest_leaving([c, a], 0, 4, 4) == [0, 0, 1, 1]  # 4 + 8 slots with A's pod gone; C's adds 2 (cap 6): 14 < 16
    # a CPU row (kind 1) with 3 model units per slot: a pod of 7 units frees 2 1/3 slots
    d = (8, [([(4, 1)], 1, 8), ([(4, 7)], 3, 7)], [(4, 1)])
    assert fewest_leaving([d], 1, 2, 2) == [0, 1]


def test_lower_hull_keeps_the_convex_envelope() -> None:
    assert lower_hull([0, 0, 5, 6, 20]) == [(0, 0), (1, 0), (3, 6), (4, 20)]
    assert lower_hull([0, 3, 6]) == [(0, 0), (2, 6)]  # collinear points are dropped
    assert lower_hull([0]) == [(0, 0)]
