"""A loaded snapshot kept warm for one-job allocation requests, as a scheduler keeps its cache.

``plan_allocate`` builds the array state and the validator's lookups from the snapshot on every
call; at 37,707 nodes that is most of a request's time. ``WarmAllocator`` builds them once and answers
each request on the kept state with the same greedy methods and the same validator (every plan it
returns has passed ``validate_allocate``), leaving the state as it found it: the snapshot does not
change between requests. To apply a plan, load the snapshot it produces into a new allocator.
"""

from __future__ import annotations

import time
from typing import Any

from planner.capacity import large_request_counts, large_requests_of
from planner.cluster import Cluster
from planner.engine.allocate import greedy_plan, pending_jobs, pending_pods
from planner.engine.allocate_options import GREEDY_METHODS, AllocateOptions
from planner.engine.defrag import PlanOptionError
from planner.metrics import parse_shape
from planner.plans import AllocationPlan
from planner.state import ClusterState
from planner.validate.allocate import SnapshotIndex


class WarmAllocator:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.state = ClusterState(cluster)
        self.index = SnapshotIndex(cluster)
        self.pending = pending_pods(cluster)
        self._checked: set[str] = set()  # jobs whose pods passed ``pending_jobs``' checks
        self._large_before: dict[str, Any] | None = None

    def allocate(self, job: str, method: str = "largest-first", seed: int = 0) -> AllocationPlan:
        """A validated plan for one pending job (greedy methods only: the exact model is a batch tool)."""
        if method not in GREEDY_METHODS:
            raise PlanOptionError("method", f"the warm allocator runs {', '.join(GREEDY_METHODS)}; use plan_allocate for '{method}'")
        fields: dict[str, Any] = {"method": method, "jobs": [job], **({"seed": seed} if method == "random" else {})}
        options = AllocateOptions(**fields)
        start = time.perf_counter()
        if job not in self._checked:
            pending_jobs(self.cluster, [job], self.pending)
            self._checked.add(job)
        pods = [self.state.pod_index[self.cluster.pods[i].name] for i in self.pending[job]]
        plan = greedy_plan(self.cluster, self.state, {job: pods}, [job], options, start, self.index, keep=False)
        shapes = [parse_shape(text) for text in options.large_requests]
        if self._large_before is None:  # the snapshot does not change between requests
            self._large_before = large_request_counts(self.state, shapes)
        plan.metrics["large_requests"] = large_requests_of(self.state, plan.placements, shapes, self._large_before)
        return plan
