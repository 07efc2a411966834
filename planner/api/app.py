"""The planning service: a FastAPI application over the store and the dispatcher.

Routes: ``POST /v1/defrag`` (202 with a job, or 200 with the plan when ``?wait=S`` sees it finish),
``GET /v1/jobs/{id}``, ``GET /v1/jobs/{id}/plan``, ``DELETE /v1/jobs/{id}``, ``GET /v1/jobs``,
``GET /v1/plans``, ``GET /v1/plans/{id}``, ``POST /v1/validate``, ``POST /v1/report``, ``GET /healthz``,
``GET /readyz``, ``GET /metrics`` (Prometheus text).

Security: with ``PLANNER_API_TOKEN`` set, every route but the health probes needs
``Authorization: Bearer <token>``. Bodies above the limit get 413; malformed or inconsistent input
gets 422 with field paths (``snapshot.pods[3].node: unknown node 'n-9'``); a full queue gets 429 with
``Retry-After``. No stack trace reaches a client: unexpected errors are logged with the job id and
answered with a plain 500.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
from collections import defaultdict
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from sqlalchemy.exc import DBAPIError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from planner.api.schemas import (
    EXAMPLE_PLAN,
    AllocateRequest,
    DefragRequest,
    JobAccepted,
    JobStatus,
    PlanList,
    PlanSummary,
    PreemptRequest,
    Problem,
    ReportRequest,
    StoredPlan,
    ValidateRequest,
    ValidateResponse,
)
from planner.api.bodies import BodyReader, Refused
from planner.api.requests import Settings, accept_allocate, accept_defrag, accept_preempt, add_body_schemas, json_body, report_of, validate_plan_of
from planner.api.docs import add_docs, is_docs_path
from planner.api.logs import request_id
from planner.api.metrics import ServiceMetrics
from planner.api.worker import Dispatcher
from planner.cluster import field_path
from planner.api.conventions import PLAN_MODELS, PUBLIC_PATHS, by_conventions
from planner.service.store import IdempotencyConflict, Job, QueueFull, Store

log = logging.getLogger("planner.api")
access = logging.getLogger("planner.access")

MAX_WAIT_S = 600.0
CLIENT_CLOSED = 499
"""The status recorded for a request whose client hung up mid-upload (nginx's convention; never sent)."""


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


RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "Missing or wrong bearer token."},
    413: {"model": Problem, "description": "Request body above the limit."},
    422: {"model": Problem, "description": "Malformed or inconsistent input; one message per problem with its field path."},
    500: {"model": Problem, "description": "Internal error (logged server-side; no details leak)."},
}


def create_app(settings: Settings) -> FastAPI:
    store = Store(settings.db_url)
    waiters = Waiters()
    dispatcher = Dispatcher(store, settings.concurrency, settings.max_job_s, on_finish=waiters.finished, memory_bytes=settings.job_memory_bytes,
                            executor=settings.executor, lease_s=settings.lease_s)
    metrics = ServiceMetrics(store, lambda: len(dispatcher.running))
    dispatcher.metrics = metrics
    dispatcher.keep_s = None if settings.keep_days is None else settings.keep_days * 86400.0
    bodies = BodyReader(settings.max_body_bytes, settings.body_timeout_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        waiters.loop = asyncio.get_running_loop()
        listener = None
        if store.dialect == "postgresql":  # jobs other replicas end wake this replica's waiting requests
            from planner.api.job_events import JobEndListener

            listener = JobEndListener(settings.db_url, waiters.finished)
            listener.start()
        bodies.start()
        recovered = store.reclaim_expired()
        log.info("store %s: %s; this replica is %s (leases of %g s)", store.engine.url.render_as_string(hide_password=True), recovered,
                 dispatcher.owner, settings.lease_s)
        dispatcher.start()
        yield
        if listener is not None:
            listener.stop()
        dispatcher.stop()
        bodies.close()
        store.close()

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
    app.state.store = store
    app.state.dispatcher = dispatcher

    # -- middleware: body limit, authentication, last-resort errors -----------------------------

    @app.middleware("http")
    async def guard(request: Request, call_next):  # type: ignore[no-untyped-def]
        try:
            length = request.headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > settings.max_body_bytes):
                return _problem(413, f"request body above the limit of {settings.max_body_bytes // 2**20} MiB")
            public = ("/healthz", "/readyz", "/metrics") if settings.metrics_public else ("/healthz", "/readyz")
            path = request.url.path
            if settings.token and path not in public and not (settings.docs_public and is_docs_path(path)):
                if len(request.headers.getlist("authorization")) > 1:
                    return _problem(400, "send one Authorization header, not several")
                supplied = request.headers.get("authorization", "").encode()
                admin = hmac.compare_digest(supplied, f"Bearer {settings.token}".encode())
                # both comparisons always run, in constant time: timing does not tell which token was close
                reader = settings.read_token is not None and hmac.compare_digest(supplied, f"Bearer {settings.read_token}".encode())
                if not admin and not reader:
                    response = _problem(401, "missing or wrong bearer token (Authorization: Bearer <PLANNER_API_TOKEN>)")
                    response.headers["WWW-Authenticate"] = "Bearer"
                    return response
                if not admin and request.method not in ("GET", "HEAD"):
                    return _problem(403, "this token may only read (GET routes and /metrics); submitting, cancelling and "
                                         "deleting need the admin token (PLANNER_API_TOKEN)")
            return await call_next(request)
        except Exception:  # noqa: BLE001 - nothing but a plain 500 may reach the client
            log.exception("unhandled error on %s %s", request.method, request.url.path)
            return _problem(500, "internal error; see the server log")

    @app.middleware("http")
    async def access_log(request: Request, call_next):  # type: ignore[no-untyped-def]
        """One access record per request, with its request id (also sent back as X-Request-Id); registered
        last, so it wraps the guard and logs refused requests too."""
        rid = request_id(request.headers.get("x-request-id"))
        start = time.perf_counter()
        response = await call_next(request)
        response.headers["X-Request-Id"] = rid
        access.info("%s %s %d", request.method, request.url.path, response.status_code, extra={"fields": {
            "request_id": rid, "method": request.method, "path": request.url.path, "status": response.status_code,
            "duration_ms": round(1000 * (time.perf_counter() - start), 1)}})
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            loc = tuple(part for part in err.get("loc", ()) if part != "body")
            if err.get("type") == "json_invalid":
                problems.append(f"body: not valid JSON ({err.get('ctx', {}).get('error', err.get('msg'))})")
            elif err.get("type") == "missing":
                problems.append(f"{field_path(loc)}: required field is missing")
            elif err.get("type") == "extra_forbidden":
                problems.append(f"{field_path(loc)}: unknown field")
            else:
                problems.append(f"{field_path(loc)}: {err.get('msg', 'invalid')}")
        return _problem(422, "invalid request", problems)

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused) -> JSONResponse:
        response = _problem(exc.status, exc.error, exc.problems)
        if exc.status == 503:
            response.headers["Retry-After"] = str(settings.retry_after_s)
        if exc.status == 408:  # the rest of the body may still come: not on this connection
            response.headers["Connection"] = "close"
        return response

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect) -> JSONResponse:
        """The client hung up before its body was complete: nothing to answer and nothing wrong here,
        so no error and no traceback; logged at info and recorded as 499 (nginx's "client closed
        request") in the access log."""
        log.info("client disconnected before its request body was complete (%s %s); nothing done", request.method, request.url.path)
        return _problem(CLIENT_CLOSED, "the client closed the connection before the request body was complete")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Unknown routes (404), wrong methods (405) and the like, in the same problem format."""
        error = {404: f"no route {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}.get(
            exc.status_code, str(exc.detail)
        )
        response = _problem(exc.status_code, error)
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _problem(500, "internal error; see the server log")

    # -- jobs ------------------------------------------------------------------------------------
    # Handlers that only read or write the store are plain functions: FastAPI runs them in its
    # thread pool, so a slow query or a large plan body never holds up the event loop.

    def job_route(path: str, kind: str, accept: Any, body: Any, summary: str, ok: dict[str, Any]) -> None:
        """POST ``path``: check the body off the loop and queue a job of ``kind`` (202, or 200 with
        the plan within ``?wait``); the same for every plan kind."""

        async def submit_job(
            http: Request,
            wait: float = Query(0.0, ge=0, le=MAX_WAIT_S, description="Seconds to wait for the plan before answering 202."),
            idempotency_key: str | None = Header(None, max_length=255, description="Repeat a request with the same key to get the same job."),
        ) -> Any:
            return await submit(http, kind, accept, wait, idempotency_key)

        app.post(
            path,
            status_code=202,
            openapi_extra=json_body(body),
            response_model=JobAccepted,
            responses={
                **RESPONSES,
                200: ok,
                409: {"model": Problem, "description": "Idempotency-Key reused with a different request."},
                429: {"model": Problem, "description": "The queue is full; retry after Retry-After seconds."},
            },
            summary=summary,
            name=f"submit_{kind}",
        )(submit_job)

    job_route("/v1/defrag", "defrag", accept_defrag, DefragRequest, "Submit a defragmentation job",
              {"description": "The job finished within ?wait: the plan.", "content": {"application/json": {"example": EXAMPLE_PLAN}}})
    job_route("/v1/preempt", "preempt", accept_preempt, PreemptRequest,
              "Submit a preemption job: where a pending job starts and which spot pods to evict",
              {"description": "The job finished within ?wait: the plan (kind preempt, or preempt-compare)."})
    job_route("/v1/allocate", "allocate", accept_allocate, AllocateRequest,
              "Submit an allocation job: start pending jobs on as few switches as possible",
              {"description": "The job finished within ?wait: the plan (kind allocate, or allocate-compare)."})

    def admission(idempotency_key: str | None) -> JSONResponse | None:
        """None when a submission may go on to have its body parsed: the queue has room, or the key
        is one already used (its job is answered, or 409, whatever the queue holds); else the answer
        (429, or 503 when the store cannot be read). ``create_job`` checks the queue again."""
        try:
            if store.queue_depth() < settings.max_queue or (idempotency_key is not None and store.job_by_key(idempotency_key) is not None):
                return None
        except DBAPIError as err:
            log.error("the job store cannot be read to admit a job: %s", err)
            return retry_later(503, "the job store cannot be read now; retry later")
        return queue_full()

    def queue_full() -> JSONResponse:
        return retry_later(429, f"the queue is full ({settings.max_queue} jobs waiting); retry later")

    def retry_later(status: int, error: str) -> JSONResponse:
        response = _problem(status, error)
        response.headers["Retry-After"] = str(settings.retry_after_s)
        return response

    async def submit(http: Request, kind: str, accept: Any, wait: float, idempotency_key: str | None) -> Any:
        """Check the body off the loop, store the job, wake the dispatcher; 202, or 200 with the plan
        when it is ready within ``wait`` seconds."""
        if idempotency_key is not None and not idempotency_key.strip():
            raise Refused(422, "invalid request", ["Idempotency-Key: must not be empty; leave the header out or give a key"])
        refused = await run_in_threadpool(admission, idempotency_key)
        if refused is not None:
            return refused  # before the body is read and parsed: a refused request costs no parsing
        snapshot, options, digest = await bodies.parse(http, accept, settings)
        try:
            job, created = await run_in_threadpool(store.create_job, kind, options, snapshot, digest, idempotency_key, settings.max_queue)
        except QueueFull:  # it filled up while the body was parsed
            return queue_full()
        except IdempotencyConflict as conflict:
            return _problem(409, "Idempotency-Key was used for a different request", job_id=str(conflict))
        except DBAPIError as err:
            log.error("the job store cannot take a new job: %s", err)
            return retry_later(503, "the job store cannot write now (full disk or read-only database); retry later")
        if created:
            dispatcher.poke()
        if wait > 0:
            job = await _wait_for(store, waiters, job, wait)
            if job.status == "succeeded":
                plan = await run_in_threadpool(store.get_plan, job.plan_id) if job.plan_id else None
                if plan is not None:
                    return JSONResponse(plan.body, status_code=200, headers={"X-Job-Id": job.id, "Location": f"/v1/jobs/{job.id}"})
        return JSONResponse(
            JobAccepted(job_id=job.id, status=job.status, status_url=f"/v1/jobs/{job.id}").model_dump(),
            status_code=202,
            headers={"Location": f"/v1/jobs/{job.id}"},
        )

    @app.get("/v1/jobs/{job_id}", response_model=JobStatus, responses={**RESPONSES, 404: {"model": Problem}}, summary="A job's status")
    def get_job(job_id: str) -> Any:
        job = store.get_job(job_id)
        if job is None:
            return _problem(404, f"no job '{job_id}'")
        return _job_status(job)

    @app.get("/v1/jobs", response_model=list[JobStatus], responses=RESPONSES, summary="Recent jobs, newest first")
    def list_jobs(
        status: str | None = Query(None, pattern="^(queued|running|succeeded|failed|cancelled)$"),
        limit: int = Query(50, ge=1, le=1000),
    ) -> Any:
        return [_job_status(j) for j in store.list_jobs(status, limit)]

    @app.get(
        "/v1/jobs/{job_id}/plan",
        responses={**RESPONSES, 200: {"content": {"application/json": {"example": EXAMPLE_PLAN}}}, 404: {"model": Problem}},
        summary="A job's plan (404 until it exists)",
    )
    def get_job_plan(job_id: str) -> Any:
        job = store.get_job(job_id)
        if job is None:
            return _problem(404, f"no job '{job_id}'")
        plan = store.get_plan(job.plan_id) if job.plan_id else None
        if plan is None:
            return _problem(404, f"job '{job_id}' has no plan (status {job.status})", job_id=job_id)
        return JSONResponse(plan.body)

    @app.delete(
        "/v1/jobs/{job_id}",
        response_model=JobStatus,
        responses={**RESPONSES, 404: {"model": Problem}},
        summary="Cancel a queued or running job (a running solve is stopped); delete a finished one",
        description="A queued or running job is cancelled and its status returned (200). A finished job (succeeded, "
        "failed or cancelled) is deleted with its snapshot and its plan (204).",
    )
    def cancel_or_delete_job(job_id: str) -> Any:
        job = store.get_job(job_id)
        if job is None:
            return _problem(404, f"no job '{job_id}'")
        if job.status in ("queued", "running"):
            store.cancel(job_id)
            dispatcher.cancel(job_id)
            current = store.get_job(job_id)
            if current is not None and current.status == "cancelled":
                metrics.ended(current.kind, "cancelled")
                return _job_status(current)
            job = current  # it finished meanwhile: deleted below like any finished job
        if job is None or not store.delete_job(job_id):
            return _problem(404, f"no job '{job_id}'")
        return Response(status_code=204)

    # -- plans -----------------------------------------------------------------------------------

    @app.get("/v1/plans", response_model=PlanList, responses=RESPONSES, summary="Stored plans, newest first")
    def list_plans(
        kind: str | None = Query(None, max_length=32),
        since: float | None = Query(None, ge=0, description="Only plans created at or after this Unix time (s)."),
        limit: int = Query(50, ge=1, le=1000),
    ) -> Any:
        return PlanList(plans=[_summary(p) for p in store.list_plans(kind, since, limit)])

    @app.delete("/v1/plans/{plan_id}", status_code=204, response_class=Response, response_model=None, responses={**RESPONSES, 404: {"model": Problem}},
                summary="Delete a stored plan")
    def delete_plan(plan_id: str) -> Any:
        if not store.delete_plan(plan_id):
            return _problem(404, f"no plan '{plan_id}'")
        return Response(status_code=204)

    @app.get("/v1/plans/{plan_id}", response_model=StoredPlan, responses={**RESPONSES, 404: {"model": Problem}}, summary="A stored plan")
    def get_plan(plan_id: str) -> Any:
        plan = store.get_plan(plan_id)
        if plan is None:
            return _problem(404, f"no plan '{plan_id}'")
        return StoredPlan(**_summary(plan).model_dump(), plan=plan.body)

    # -- synchronous checks (run in the thread pool, not on the event loop) -----------------------

    @app.post(
        "/v1/validate",
        response_model=ValidateResponse,
        responses=RESPONSES,
        summary="Replay a plan and list its violations",
        openapi_extra=json_body(ValidateRequest),
    )
    async def validate_plan(http: Request) -> Any:
        return await bodies.parse(http, validate_plan_of)

    @app.post(
        "/v1/report",
        responses={**RESPONSES, 200: {"content": {"application/json": {"example": {"time_s": 0, "summary": {"nodes": 4, "empty_nodes": 0, "gfr": 1.0}}}}}},
        summary="Fragmentation report of a snapshot",
        openapi_extra=json_body(ReportRequest),
    )
    async def report(http: Request) -> Any:
        return await bodies.parse(http, report_of)

    # -- operations ------------------------------------------------------------------------------

    @app.get("/healthz", summary="Liveness", responses={200: {"content": {"application/json": {"example": {"status": "ok"}}}}})
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        summary="Readiness: database reachable, dispatcher running",
        responses={200: {"content": {"application/json": {"example": {"status": "ready"}}}}, 503: {"model": Problem}},
    )
    async def readyz() -> Any:
        try:
            await run_in_threadpool(store.probe_write)
        except Exception as err:  # noqa: BLE001
            log.warning("readiness: the store cannot write: %s", err)
            return _problem(503, f"the job store cannot write: {type(err).__name__}")
        if not dispatcher.is_alive():
            return _problem(503, "dispatcher not running")
        if dispatcher.unrecorded:
            return _problem(503, f"{len(dispatcher.unrecorded)} finished job(s) not yet recorded in the store")
        return {"status": "ready"}

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics", responses=RESPONSES)
    def prometheus() -> Response:
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            add_body_schemas(schema, (DefragRequest, PreemptRequest, AllocateRequest, ValidateRequest, ReportRequest, *PLAN_MODELS))
            by_conventions(schema, app.routes, public=PUBLIC_PATHS + (("/metrics",) if settings.metrics_public else ()))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def _problem(status: int, error: str, problems: list[str] | None = None, job_id: str | None = None) -> JSONResponse:
    return JSONResponse(Problem(error=error, problems=problems or [], job_id=job_id).model_dump(exclude_none=True), status_code=status)


async def _wait_for(store: Store, waiters: Waiters, job: Job, seconds: float) -> Job:
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
            except asyncio.TimeoutError:
                pass
            event.clear()
    finally:
        waiters.remove(job.id, event)


def _job_status(job: Job) -> JobStatus:
    return JobStatus(
        job_id=job.id,
        kind=job.kind,
        status=job.status,  # type: ignore[arg-type]
        progress=job.progress,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        error=job.error,
        attempts=job.attempts,
        plan_id=job.plan_id,
        plan_url=f"/v1/jobs/{job.id}/plan" if job.plan_id else None,
    )


def _summary(plan: Any) -> PlanSummary:
    return PlanSummary(
        plan_id=plan.id,
        job_id=plan.job_id,
        kind=plan.kind,
        created_at=plan.created_at,
        method=plan.method,
        status=plan.status,
        objective=plan.objective,
        plan_url=f"/v1/plans/{plan.id}",
    )



