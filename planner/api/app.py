"""The planning service: a FastAPI application over the store and the dispatcher.

Routes: ``POST /v1/defrag`` (202 with a job, or 200 with the plan when ``?wait=S`` sees it finish),
``GET /v1/jobs/{id}``, ``GET /v1/jobs/{id}/plan``, ``DELETE /v1/jobs/{id}``, ``GET /v1/jobs``,
``GET /v1/plans``, ``GET /v1/plans/{id}``, the HTML pages ``GET /v1/plans/{id}/view`` and ``GET /v1/jobs/{id}/view``,
``POST /v1/validate``, ``POST /v1/report``, ``POST /v1/explain``, ``GET /healthz``,
``GET /readyz``, ``GET /metrics`` (Prometheus text); they live in ``routes/`` (one router per area),
and ``create_app`` assembles them with the guard (``auth.py``), the error handlers (``errors.py``)
and the state they share (``context.py``, on ``app.state.service``).

Security: with ``PLANNER_API_TOKEN`` set, every route but the health probes needs
``Authorization: Bearer <token>``. Bodies above the limit get 413; malformed or inconsistent input
gets 422 with field paths (``snapshot.pods[3].node: unknown node 'n-9'``); a full queue gets 429 with
``Retry-After``. No stack trace reaches a client: unexpected errors are logged with the job id and
answered with a plain 500.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi

from planner.api.auth import guard
from planner.api.bodies import BodyReader
from planner.api.context import Service, Waiters
from planner.api.conventions import PLAN_MODELS, PUBLIC_PATHS, by_conventions
from planner.api.docs import add_docs
from planner.api.errors import add_error_handlers
from planner.api.job_events import JobEndListener
from planner.api.logs import request_id
from planner.api.metrics import ServiceMetrics
from planner.api.requests import Settings, add_body_schemas
from planner.api.routes import apply, jobs, ops, plans, views
from planner.api.schemas import (
    AllocateRequest,
    DefragRequest,
    ExplainRequest,
    PreemptRequest,
    ReportRequest,
    ValidateRequest,
)
from planner.api.worker import Dispatcher
from planner.service.store import Store

__all__ = ["Settings", "create_app"]

log = logging.getLogger("planner.api")
access = logging.getLogger("planner.access")

ROUTERS = (plans.submissions, jobs.router, apply.router, views.router, plans.checks, ops.router)


@asynccontextmanager
async def lifespan(app: FastAPI):
    svc: Service = app.state.service
    store, settings = svc.store, svc.settings
    svc.waiters.loop = asyncio.get_running_loop()
    listener = None
    if store.dialect == "postgresql":  # jobs other replicas end wake this replica's waiting requests
        listener = JobEndListener(settings.db_url, svc.waiters.finished)
        listener.start()
    svc.bodies.start()
    recovered = store.reclaim_expired()
    log.info(
        "store %s: %s; this replica is %s (leases of %g s)",
        store.engine.url.render_as_string(hide_password=True),
        recovered,
        svc.dispatcher.owner,
        settings.lease_s,
    )
    svc.dispatcher.start()
    yield
    if listener is not None:
        listener.stop()
    svc.dispatcher.stop()
    svc.bodies.close()
    store.close()


async def access_log(request: Request, call_next):
    """One access record per request, with its request id (also sent back as X-Request-Id); registered
    last, so it wraps the guard and logs refused requests too."""
    rid = request_id(request.headers.get("x-request-id"))
    start = time.perf_counter()
    response = await call_next(request)
    response.headers["X-Request-Id"] = rid
    access.info(
        "%s %s %d",
        request.method,
        request.url.path,
        response.status_code,
        extra={
            "fields": {
                "request_id": rid,
                "method": request.method,
                "path": request.url.path,
                "status": response.status_code,
                "duration_ms": round(1000 * (time.perf_counter() - start), 1),
            }
        },
    )
    return response


def build_service(settings: Settings) -> Service:
    """The store, the dispatcher and what the routes share, wired together."""
    store = Store(settings.db_url)
    waiters = Waiters()
    dispatcher = Dispatcher(
        store,
        settings.concurrency,
        settings.max_job_s,
        on_finish=waiters.finished,
        memory_bytes=settings.job_memory_bytes,
        executor=settings.executor,
        lease_s=settings.lease_s,
    )
    metrics = ServiceMetrics(store, lambda: len(dispatcher.running))
    dispatcher.metrics = metrics
    dispatcher.keep_s = None if settings.keep_days is None else settings.keep_days * 86400.0
    bodies = BodyReader(settings.max_body_bytes, settings.body_timeout_s)
    return Service(settings=settings, store=store, dispatcher=dispatcher, metrics=metrics, bodies=bodies, waiters=waiters)


def create_app(settings: Settings) -> FastAPI:
    svc = build_service(settings)
    app = FastAPI(
        title="GPU fleet planner",
        version="1.0.0",
        description=(
            "Plans for shared GPU clusters. Submit a snapshot and options, get a job; the plan is computed in a "
            "worker process and stored. With `PLANNER_API_TOKEN` set, send `Authorization: Bearer <token>`."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    add_docs(app)  # offline Swagger UI and ReDoc (docs.py)
    app.state.service = svc
    app.state.store = svc.store
    app.state.dispatcher = svc.dispatcher

    app.middleware("http")(guard)  # body limit, authentication, last-resort errors
    app.middleware("http")(access_log)
    add_error_handlers(app)

    for router in ROUTERS:  # the order of inclusion is the order of the OpenAPI document's paths
        app.include_router(router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            add_body_schemas(
                schema, (DefragRequest, PreemptRequest, AllocateRequest, ValidateRequest, ReportRequest, ExplainRequest, apply.ApplyRequest, *PLAN_MODELS)
            )
            # the routers' own routes: their paths are the app's (no prefix), and app.routes holds the
            # included routers rather than their routes
            routes = [*app.routes, *(route for router in ROUTERS for route in router.routes)]
            by_conventions(schema, routes, public=PUBLIC_PATHS + (("/metrics",) if settings.metrics_public else ()))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to replace the schema
    return app
