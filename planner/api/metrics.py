"""The service's Prometheus metrics, by ``prometheus-client``'s conventions.

One registry per app (so several apps in one process never share series):

* from the store at scrape time: ``planner_jobs{kind,status}`` (jobs in the store), ``planner_queue_depth``,
  ``planner_running_jobs``, and the snapshots kept (``planner_snapshots``, ``planner_snapshot_bytes{form}``:
  as received and as stored, compressed and once per content);
* counted as jobs end, since the server started: ``planner_jobs_finished_total{kind,status}``
  (succeeded, failed, cancelled) and ``planner_job_seconds{kind,method}`` (a histogram of the wall
  time of succeeded jobs in their worker, per planning method);
* the last succeeded plan of each kind: ``planner_last_success_timestamp_seconds{kind}``,
  ``planner_last_plan_objective{kind}`` (empty nodes for defrag, lost GPU-seconds for preempt, GPUs
  placed for allocate), ``planner_last_plan_moves{kind}``, ``planner_last_plan_gap{kind}`` (when the
  plan reports one);
* the process (``process_*``: CPU seconds, resident memory, open files, start time) and the Python
  platform (``python_info``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from planner.kinds import KINDS
from planner.service.store import Store

SOLVE_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")


class _StoreCollector:
    """Gauges read from the store (and the dispatcher) when Prometheus scrapes."""

    def __init__(self, store: Store, running: Callable[[], int]):
        self.store = store
        self.running = running

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily("planner_jobs", "Jobs in the store by kind and status.", labels=["kind", "status"])
        counts = self.store.counts()
        for kind in sorted({k for k, _ in counts} | {"defrag"}):
            for status in STATUSES:
                jobs.add_metric([kind, status], counts.get((kind, status), 0))
        yield jobs
        yield GaugeMetricFamily("planner_queue_depth", "Jobs waiting for a worker.", value=self.store.queue_depth())
        yield GaugeMetricFamily("planner_running_jobs", "Jobs running in worker processes now.", value=self.running())
        usage = self.store.snapshot_usage()
        yield GaugeMetricFamily("planner_snapshots", "Distinct input snapshots in the store.", value=usage["snapshots"])
        size = GaugeMetricFamily("planner_snapshot_bytes", "Bytes of the stored snapshots: as received (raw) and as stored (compressed).", labels=["form"])
        size.add_metric(["raw"], usage["raw_bytes"])
        size.add_metric(["stored"], usage["stored_bytes"])
        yield size


class ServiceMetrics:
    """The registry and the series the dispatcher updates as jobs end."""

    def __init__(self, store: Store, running: Callable[[], int]):
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.registry.register(_StoreCollector(store, running))
        self.finished = Counter(
            "planner_jobs_finished", "Jobs finished since the server started, by kind and outcome.", ["kind", "status"], registry=self.registry
        )
        self.seconds = Histogram(
            "planner_job_seconds",
            "Wall time of succeeded jobs in their worker process, seconds.",
            ["kind", "method"],
            buckets=SOLVE_BUCKETS_S,
            registry=self.registry,
        )
        self.last_success = Gauge("planner_last_success_timestamp_seconds", "Unix time the last job of this kind succeeded.", ["kind"], registry=self.registry)
        self.objective = Gauge(
            "planner_last_plan_objective",
            "Objective of the last succeeded plan (empty nodes, lost GPU-seconds, GPUs placed).",
            ["kind"],
            registry=self.registry,
        )
        self.moves = Gauge("planner_last_plan_moves", "Moves of the last succeeded defrag plan.", ["kind"], registry=self.registry)
        self.gap = Gauge("planner_last_plan_gap", "Proven gap of the last succeeded plan that reports one.", ["kind"], registry=self.registry)
        self.purged = Counter("planner_jobs_purged", "Finished jobs deleted by retention (--keep-days).", registry=self.registry)
        for kind in KINDS:  # series exist (at 0) before the first job
            for status in ("succeeded", "failed", "cancelled"):
                self.finished.labels(kind, status)

    def succeeded(self, kind: str, wall_s: float, summary: dict[str, Any], body: dict[str, Any]) -> None:
        self.finished.labels(kind, "succeeded").inc()
        self.seconds.labels(kind, str(summary.get("method") or "unknown")).observe(wall_s)
        self.last_success.labels(kind).set(time.time())
        report = body.get("report") or (body.get("heuristic") or body.get("greedy") or {}).get("report") or {}
        if isinstance(summary.get("objective"), (int, float)):
            self.objective.labels(kind).set(summary["objective"])
        if isinstance(report.get("moves"), (int, float)):
            self.moves.labels(kind).set(report["moves"])
        if isinstance(report.get("gap"), (int, float)):
            self.gap.labels(kind).set(report["gap"])

    def ended(self, kind: str, status: str) -> None:
        """A job failed or was cancelled."""
        self.finished.labels(kind, status).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
