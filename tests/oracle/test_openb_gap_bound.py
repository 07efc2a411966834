"""The device bound of ``benchmarks/openb_gap.py`` (a diagnostic of issue 45: shares counted in GPU
devices) against brute force: ``share_devices`` never exceeds the fewest devices the shares pack on,
and ``device_bound`` never falls below the most empty nodes any plan reaches on tiny snapshots."""

from __future__ import annotations

import importlib.util
import math
import random
import sys
from pathlib import Path

from hypothesis import assume, given, settings

from tests.support import defrag_oracle as oracle
from tests.support.allocate_oracle import devices_for
from tests.support.tiny_snapshots import HEALTH, SHARES, tiny_clusters

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "openb_gap.py"
TRACE_SHARES = [0.05, 0.11, 0.16, 0.22, 0.23, 0.32, 0.37, 0.46, 0.47, 0.55, 0.59, 0.65, 0.81]
"""Share sizes of the openb 2023 trace (``gpu_milli`` / 1000) that the replays hold most of."""


def _benchmark():
    spec = importlib.util.spec_from_file_location("openb_gap", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("openb_gap", module)
    spec.loader.exec_module(module)
    return module


GAP = _benchmark()


def test_share_devices_counts_what_the_sum_misses():
    # four 0.81 shares take a device each and the two 0.3 shares fit none of them: 5 devices, the sum says 4
    assert GAP.share_devices([0.81] * 4 + [0.3] * 2) == 5 == devices_for((0.81,) * 4 + (0.3,) * 2)
    assert GAP.share_devices([0.47] * 4) == 2 == devices_for((0.47,) * 4)
    assert GAP.share_devices([]) == 0


def test_share_devices_never_exceeds_the_fewest_devices():
    rng = random.Random(45)
    tight = 0
    for _ in range(400):
        shares = [rng.choice(TRACE_SHARES + SHARES) for _ in range(rng.randint(1, 7))]
        fewest = devices_for(tuple(shares))
        assert GAP.share_devices(shares) <= fewest, shares
        tight += GAP.share_devices(shares) == fewest
    assert tight >= 350  # and it is the fewest on almost every draw (a bound that said 0 would pass the line above)


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(tiny_clusters())
def test_device_bound_never_below_the_optimum(cluster):
    assume(not any(p.locked for p in cluster.pods if p.node is not None))
    best = oracle.best_plan(cluster, pools=False)
    assert GAP.device_bound(cluster) >= best.empties


def test_pattern_devices_never_exceeds_the_fewest_devices():
    rng = random.Random(16)
    for _ in range(150):
        shares = [rng.choice(TRACE_SHARES + SHARES) for _ in range(rng.randint(1, 7))]
        assert GAP.pattern_devices(shares) <= devices_for(tuple(shares)), shares
    # 0.81 takes a device alone unless a share of at most 0.19 joins it: shares above half a device never pair: 9, the sum says 7
    shares = [0.81] * 6 + [0.65] * 3
    assert (math.ceil(sum(shares)), GAP.share_devices(shares), GAP.pattern_devices(shares)) == (7, 9, 9)
    # no two devices hold these: L2 says 2, the configuration LP (and the optimum) 3
    shares = [0.55, 0.47, 0.32, 0.32, 0.23]
    assert (GAP.share_devices(shares), GAP.pattern_devices(shares), devices_for(tuple(shares))) == (2, 3, 3)
