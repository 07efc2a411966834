"""The device bound of ``benchmarks/openb_gap.py`` (a diagnostic of issue 45: shares counted in GPU
devices) against brute force: ``device_bound`` never falls below the most empty nodes any plan
reaches on tiny snapshots. Its device counts (``planner/models/share_devices.py``) are tested in
``test_share_devices.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from hypothesis import assume, given, settings

from tests.support import defrag_oracle as oracle
from tests.support.tiny_snapshots import HEALTH, tiny_clusters

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "openb_gap.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("openb_gap", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("openb_gap", module)
    path = list(sys.path)
    try:
        spec.loader.exec_module(module)
    finally:  # the benchmark puts benchmarks/ first on the path, where benchmarks/kubernetes.py would hide the kubernetes package from later tests
        sys.path[:] = path
    return module


GAP = _benchmark()


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(tiny_clusters())
def test_device_bound_never_below_the_optimum(cluster):
    assume(not any(p.locked for p in cluster.pods if p.node is not None))
    best = oracle.best_plan(cluster, pools=False)
    assert GAP.device_bound(cluster) >= best.empties
