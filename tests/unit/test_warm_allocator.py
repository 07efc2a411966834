"""The warm allocator answers like ``plan_allocate`` and leaves its kept state as it found it."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.defrag import PlanOptionError
from planner.instances.asi import generate_asi
from planner.instances.batch import add_large_jobs
from planner.validate.allocate import validate_allocate
from planner.warm_allocator import WarmAllocator


@pytest.fixture(scope="module")
def cluster():
    return add_large_jobs(generate_asi(nodes=400, seed=3, scheduler="binpack", allocation=0.5), 6, 3)


def test_same_plans_as_plan_allocate_and_the_state_untouched(cluster):
    warm = WarmAllocator(cluster)
    before = (warm.state.whole_used.copy(), warm.state.used_cpus.copy(), warm.state.pod_node.copy())
    placed = 0
    for job in sorted({p.job for p in cluster.pods if p.job and p.job.startswith("batch-")}):
        for method in ("largest-first", "alg2", "kueue-leastfree", "slurm"):
            got = warm.allocate(job, method)
            want = plan_allocate(cluster, AllocateOptions(method=method, jobs=[job]))
            assert got.placements == want.placements and got.unplaced == want.unplaced and got.metrics == want.metrics
            assert validate_allocate(cluster, got) == []
            placed += len(got.placements)
    assert placed > 0  # some jobs start, so the undo is exercised
    after = (warm.state.whole_used, warm.state.used_cpus, warm.state.pod_node)
    assert all(np.array_equal(a, b) for a, b in zip(before, after))


def test_bad_requests_are_refused(cluster):
    warm = WarmAllocator(cluster)
    with pytest.raises(PlanOptionError, match="unknown job 'nope'"):
        warm.allocate("nope")
    with pytest.raises(PlanOptionError, match="use plan_allocate for 'exact'"):
        warm.allocate("batch-000", "exact")
