"""Routes that plan or check: ``POST /v1/defrag``, ``/v1/preempt`` and ``/v1/allocate`` queue a job
(202, or 200 with the plan when ``?wait=S`` sees it finish; 429 with ``Retry-After`` when the queue
is full) on ``submissions``; ``POST /v1/validate``, ``/v1/report`` and ``/v1/explain`` answer at once on ``checks``.
Two routers because the service lists the jobs' routes between them."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.concurrency import run_in_threadpool

from planner.api.context import Service, Svc, wait_for
from planner.api.errors import RESPONSES, problem, retry_later
from planner.api.refusals import Refused
from planner.api.requests import (
    accept_allocate,
    accept_defrag,
    accept_preempt,
    explain_of,
    json_body,
    report_of,
    validate_plan_of,
)
from planner.api.route_rules import ROUTE_RULES
from planner.api.schemas import (
    EXAMPLE_PLAN,
    AllocateRequest,
    DefragRequest,
    ExplainRequest,
    JobAccepted,
    PreemptRequest,
    Problem,
    ReportRequest,
    ValidateRequest,
    ValidateResponse,
)
from planner.service.store import IdempotencyConflict, QueueFull

log = logging.getLogger("planner.api")

MAX_WAIT_S = 600.0

submissions = APIRouter()
checks = APIRouter()


def job_route(path: str, kind: str, accept: Any, body: Any, summary: str, ok: dict[str, Any]) -> None:
    """POST ``path``: check the body off the loop and queue a job of ``kind`` (202, or 200 with
    the plan within ``?wait``); the same for every plan kind."""

    async def submit_job(
        http: Request,
        svc: Svc,
        wait: float = Query(0.0, ge=0, le=MAX_WAIT_S, description="Seconds to wait for the plan before answering 202."),
        idempotency_key: str | None = Header(None, max_length=255, description="Repeat a request with the same key to get the same job."),
    ) -> Any:
        return await submit(svc, http, kind, accept, wait, idempotency_key)

    submissions.post(
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


job_route(
    "/v1/defrag",
    "defrag",
    accept_defrag,
    DefragRequest,
    "Submit a defragmentation job",
    {"description": "The job finished within ?wait: the plan.", "content": {"application/json": {"example": EXAMPLE_PLAN}}},
)
job_route(
    "/v1/preempt",
    "preempt",
    accept_preempt,
    PreemptRequest,
    "Submit a preemption job: where a pending job starts and which spot pods to evict",
    {"description": "The job finished within ?wait: the plan (kind preempt, or preempt-compare)."},
)
job_route(
    "/v1/allocate",
    "allocate",
    accept_allocate,
    AllocateRequest,
    "Submit an allocation job: start pending jobs on as few switches as possible",
    {"description": "The job finished within ?wait: the plan (kind allocate, or allocate-compare)."},
)


def admission(svc: Service, idempotency_key: str | None) -> JSONResponse | None:
    """None when a submission may go on to have its body parsed: the queue has room, or the key
    is one already used (its job is answered, or 409, whatever the queue holds); else the answer
    (429, or 503 when the store cannot be read). ``create_job`` checks the queue again."""
    try:
        if svc.store.queue_depth() < svc.settings.max_queue or (idempotency_key is not None and svc.store.job_by_key(idempotency_key) is not None):
            return None
    except DBAPIError as err:
        log.error("the job store cannot be read to admit a job: %s", err)
        return retry_later(503, "the job store cannot be read now; retry later", svc.settings.retry_after_s)
    return queue_full(svc)


def queue_full(svc: Service) -> JSONResponse:
    return retry_later(429, f"the queue is full ({svc.settings.max_queue} jobs waiting); retry later", svc.settings.retry_after_s)


async def submit(svc: Service, http: Request, kind: str, accept: Any, wait: float, idempotency_key: str | None) -> Any:
    """Check the body off the loop, store the job, wake the dispatcher; 202, or 200 with the plan
    when it is ready within ``wait`` seconds."""
    if idempotency_key is not None and not idempotency_key.strip():
        raise Refused(422, "invalid request", ["Idempotency-Key: must not be empty; leave the header out or give a key"])
    refused = await run_in_threadpool(admission, svc, idempotency_key)
    if refused is not None:
        return refused  # before the body is read and parsed: a refused request costs no parsing
    settings, store = svc.settings, svc.store
    snapshot, options, digest = await svc.bodies.parse(http, ROUTE_RULES[f"/v1/{kind}"], accept, settings)
    try:
        job, created = await run_in_threadpool(store.create_job, kind, options, snapshot, digest, idempotency_key, settings.max_queue)
    except QueueFull:  # it filled up while the body was parsed
        return queue_full(svc)
    except IdempotencyConflict as conflict:
        return problem(409, "Idempotency-Key was used for a different request", job_id=str(conflict))
    except DBAPIError as err:
        log.error("the job store cannot take a new job: %s", err)
        return retry_later(503, "the job store cannot write now (full disk or read-only database); retry later", settings.retry_after_s)
    if created:
        svc.dispatcher.poke()
    if wait > 0:
        job = await wait_for(store, svc.waiters, job, wait)
        if job.status == "succeeded":
            plan = await run_in_threadpool(store.get_plan, job.plan_id) if job.plan_id else None
            if plan is not None:
                return JSONResponse(plan.body, status_code=200, headers={"X-Job-Id": job.id, "Location": f"/v1/jobs/{job.id}"})
    return JSONResponse(
        JobAccepted(job_id=job.id, status=job.status, status_url=f"/v1/jobs/{job.id}").model_dump(),
        status_code=202,
        headers={"Location": f"/v1/jobs/{job.id}"},
    )


# -- synchronous checks (parsed and run in a checker process, within the route's rule) -------------


@checks.post(
    "/v1/validate",
    response_model=ValidateResponse,
    responses=RESPONSES,
    summary="Replay a plan and list its violations",
    openapi_extra=json_body(ValidateRequest),
)
async def validate_plan(http: Request, svc: Svc) -> Any:
    return await svc.bodies.parse(http, ROUTE_RULES["/v1/validate"], validate_plan_of)


@checks.post(
    "/v1/report",
    responses={**RESPONSES, 200: {"content": {"application/json": {"example": {"time_s": 0, "summary": {"nodes": 4, "empty_nodes": 0, "gfr": 1.0}}}}}},
    summary="Fragmentation report of a snapshot",
    openapi_extra=json_body(ReportRequest),
)
async def report(http: Request, svc: Svc) -> Any:
    return await svc.bodies.parse(http, ROUTE_RULES["/v1/report"], report_of)


@checks.post(
    "/v1/explain",
    responses={**RESPONSES, 200: {"content": {"application/json": {"example": {"job": "train", "reason": {"code": "fragmentation", "proof": True}}}}}},
    summary="Why a pending job or pod waits, or why a plan left a node busy",
    openapi_extra=json_body(ExplainRequest),
)
async def explain(http: Request, svc: Svc) -> Any:
    rule = ROUTE_RULES["/v1/explain"]
    return await svc.bodies.parse(http, rule, explain_of, rule.deadline())
