"""Lower bounds on the devices GPU shares need (``planner/models/share_devices.py``, issue 45) against
the fewest devices found by exhaustive packing (``devices_for``, written apart in the test support)."""

from __future__ import annotations

import math
import random

import numpy as np

from planner.models import share_devices as sd
from tests.support.allocate_oracle import devices_for
from tests.support.tiny_snapshots import SHARES

TRACE_SHARES = [0.05, 0.11, 0.16, 0.22, 0.23, 0.32, 0.37, 0.46, 0.47, 0.55, 0.59, 0.65, 0.81]
"""Share sizes the openb 2023 trace holds most of (``gpu_milli`` / 1000)."""


def test_each_bound_never_exceeds_the_fewest_devices_and_together_they_meet_it_almost_always():
    rng = random.Random(45)
    tight = 0
    for _ in range(400):
        shares = [rng.choice(TRACE_SHARES + SHARES) for _ in range(rng.randint(1, 8))]
        fewest = devices_for(tuple(shares))
        values = np.array(shares)
        sizes, counts = np.unique(values, return_counts=True)
        each = (sd.volume_bound(values), sd.l2_bound(values), sd.configuration_bound(sizes.tolist(), counts.tolist()))
        assert max(each) <= fewest, (shares, each, fewest)
        got = sd.devices_at_least(shares)
        assert got == max(each) or got == max(each[:2])  # the LP is skipped when one device per share is reached
        tight += got == fewest
    assert tight >= 390  # a bound that said 0 would pass the lines above


def test_by_hand():
    # four 0.81 shares take a device each; the two 0.3 shares fit beside none: 5, the sum says 4
    assert sd.devices_at_least([0.81] * 4 + [0.3] * 2) == 5 == devices_for((0.81,) * 4 + (0.3,) * 2)
    # shares above half a device never pair: 9, the sum says 7
    shares = [0.81] * 6 + [0.65] * 3
    assert (math.ceil(sum(shares)), sd.l2_bound(np.array(shares)), sd.devices_at_least(shares)) == (7, 9, 9)
    # no two devices hold these: L2 says 2, the configuration LP (and the optimum) 3
    shares = [0.55, 0.47, 0.32, 0.32, 0.23]
    assert (sd.l2_bound(np.array(shares)), sd.configuration_bound([0.55, 0.47, 0.32, 0.23], [1, 1, 2, 1]), devices_for(tuple(shares))) == (2, 3, 3)
    # shares filling a device exactly (1/3 each, 0.25 + 0.75) stay on one device: the tolerance is the rules'
    assert sd.devices_at_least([1 / 3] * 3) == 1 and sd.devices_at_least([0.25, 0.75]) == 1 and sd.devices_at_least([0.5] * 4) == 2
    assert sd.devices_at_least([]) == 0


def test_per_label():
    got = sd.devices_per_label(np.array([0.6, 0.6, 0.0, 0.3, 0.6]), np.array([0, 0, 0, 1, -1]), 3)
    assert got.tolist() == [2, 1, 0]


def test_the_filling_search_is_exact_in_integers():
    # weights 3, 2 on widths 5, 3 within 10: two of the first (6) or one and one (5) or three of the second (6)
    value, filling = sd._heaviest_filling([3, 2], [5, 3], [2, 3], 10, [100])
    assert value == 6 and filling in ([2, 0], [0, 3])
    assert sd._heaviest_filling([1], [1], [10**9], 10**9, [1000]) is None  # past the search budget: no claim
