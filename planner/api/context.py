"""What the routes share, kept on ``app.state.service`` rather than in closures: the settings, the
store, the dispatcher, the metrics, the body reader and the requests waiting for jobs to finish;
``service`` is the dependency that hands it to a route."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from planner.api.bodies import BodyReader
from planner.api.metrics import ServiceMetrics
from planner.api.requests import Settings
from planner.api.worker import Dispatcher
from planner.service.store import Job, Store


class Waiters:
    """Request handlers waiting for jobs to finish, woken by the dispatcher thread."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.events: dict[str, list[asyncio.Event]] = defaultdict(list)
        self.lock = threading.Lock()

    def add(self, job_id: str) -> asyncio.Event:
        event = asyncio.Event()
        with self.lock:
            self.events[job_id].append(event)
        return event

    def remove(self, job_id: str, event: asyncio.Event) -> None:
        with self.lock:
            if event in self.events.get(job_id, []):
                self.events[job_id].remove(event)
            if not self.events.get(job_id):
                self.events.pop(job_id, None)

    def finished(self, job_id: str) -> None:  # called from the dispatcher thread
        with self.lock:
            events = list(self.events.get(job_id, []))
        if self.loop is not None:
            for event in events:
                self.loop.call_soon_threadsafe(event.set)


@dataclass
class Service:
    """One application's state, built by ``create_app``."""

    settings: Settings
    store: Store
    dispatcher: Dispatcher
    metrics: ServiceMetrics
    bodies: BodyReader
    waiters: Waiters


async def service(request: Request) -> Service:
    """The dependency routes take their state from (async: no thread-pool hop to read an attribute)."""
    return request.app.state.service


Svc = Annotated[Service, Depends(service)]
"""A route's parameter ``svc: Svc`` is the application's ``Service``."""


async def wait_for(store: Store, waiters: Waiters, job: Job, seconds: float) -> Job:
    """``job`` as it stands when it has finished, or after ``seconds``."""
    if job.status in ("succeeded", "failed", "cancelled"):
        return job
    event = waiters.add(job.id)
    try:
        deadline = time.monotonic() + seconds
        while True:
            current = await run_in_threadpool(store.get_job, job.id)
            if current is None or current.status in ("succeeded", "failed", "cancelled"):
                return current or job
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return current
            try:
                await asyncio.wait_for(event.wait(), timeout=min(remaining, 1.0))
            except TimeoutError:
                pass
            event.clear()
    finally:
        waiters.remove(job.id, event)
