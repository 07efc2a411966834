"""Routes over the store: jobs (``GET /v1/jobs``, ``GET /v1/jobs/{id}``, ``GET /v1/jobs/{id}/plan``,
``DELETE /v1/jobs/{id}``: cancel a queued or running job, delete a finished one) and stored plans
(``GET /v1/plans``, ``GET`` and ``DELETE /v1/plans/{id}``; ``GET /v1/plans/{id}?format=kubectl|podmigrationjob|yaml|table|wide``
renders the plan with its job's snapshot, as ``planner render`` does).

Handlers that only read or write the store are plain functions: FastAPI runs them in its thread
pool, so a slow query or a large plan body never holds up the event loop. A rendering that needs the
job's snapshot is built in a checker process within ``route_rules.RENDER`` (``stored_views.py``)."""

from __future__ import annotations

from typing import Any

from anyio import from_thread
from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from planner.api.context import Svc
from planner.api.errors import RESPONSES, problem
from planner.api.refusals import require_id
from planner.api.route_rules import RENDER
from planner.api.schemas import (
    EXAMPLE_PLAN,
    JobStatus,
    PlanList,
    PlanSummary,
    Problem,
    StoredPlan,
)
from planner.api.stored_views import rendered_text
from planner.render.formats import CONTENT_TYPES, FORMATS, NEEDS_SNAPSHOT, render_yaml
from planner.service.store import Job, Plan

router = APIRouter()


@router.get("/v1/jobs/{job_id}", response_model=JobStatus, responses={**RESPONSES, 404: {"model": Problem}}, summary="A job's status")
def get_job(job_id: str, svc: Svc) -> Any:
    require_id(job_id, "job_id")
    job = svc.store.get_job(job_id)
    if job is None:
        return problem(404, f"no job '{job_id}'")
    return job_status(job)


@router.get("/v1/jobs", response_model=list[JobStatus], responses=RESPONSES, summary="Recent jobs, newest first")
def list_jobs(
    svc: Svc,
    status: str | None = Query(None, pattern="^(queued|running|succeeded|failed|cancelled)$"),
    limit: int = Query(50, ge=1, le=1000),
) -> Any:
    return [job_status(j) for j in svc.store.list_jobs(status, limit)]


@router.get(
    "/v1/jobs/{job_id}/plan",
    responses={**RESPONSES, 200: {"content": {"application/json": {"example": EXAMPLE_PLAN}}}, 404: {"model": Problem}},
    summary="A job's plan (404 until it exists)",
)
def get_job_plan(job_id: str, svc: Svc) -> Any:
    plan = job_plan(job_id, svc)
    return plan if isinstance(plan, JSONResponse) else JSONResponse(plan.body)


def job_plan(job_id: str, svc: Any) -> Plan | JSONResponse:
    """The plan of job ``job_id``, or the 404 problem saying there is no such job or no plan yet."""
    require_id(job_id, "job_id")
    job = svc.store.get_job(job_id)
    if job is None:
        return problem(404, f"no job '{job_id}'")
    plan = svc.store.get_plan(job.plan_id) if job.plan_id else None
    if plan is None:
        return problem(404, f"job '{job_id}' has no plan (status {job.status})", job_id=job_id)
    return plan


@router.delete(
    "/v1/jobs/{job_id}",
    response_model=JobStatus,
    responses={**RESPONSES, 404: {"model": Problem}},
    summary="Cancel a queued or running job (a running solve is stopped); delete a finished one",
    description="A queued or running job is cancelled and its status returned (200). A finished job (succeeded, "
    "failed or cancelled) is deleted with its snapshot and its plan (204).",
)
def cancel_or_delete_job(job_id: str, svc: Svc) -> Any:
    require_id(job_id, "job_id")
    store = svc.store
    job = store.get_job(job_id)
    if job is None:
        return problem(404, f"no job '{job_id}'")
    if job.status in ("queued", "running"):
        store.cancel(job_id)
        svc.dispatcher.cancel(job_id)
        current = store.get_job(job_id)
        if current is not None and current.status == "cancelled":
            svc.metrics.ended(current.kind, "cancelled")
            return job_status(current)
        job = current  # it finished meanwhile: deleted below like any finished job
    if job is None or not store.delete_job(job_id):
        return problem(404, f"no job '{job_id}'")
    return Response(status_code=204)


# -- plans -----------------------------------------------------------------------------------------


@router.get("/v1/plans", response_model=PlanList, responses=RESPONSES, summary="Stored plans, newest first")
def list_plans(
    svc: Svc,
    kind: str | None = Query(None, max_length=32),
    since: float | None = Query(None, ge=0, description="Only plans created at or after this Unix time (s)."),
    limit: int = Query(50, ge=1, le=1000),
) -> Any:
    return PlanList(plans=[plan_summary(p) for p in svc.store.list_plans(kind, since, limit)])


@router.delete(
    "/v1/plans/{plan_id}",
    status_code=204,
    response_class=Response,
    response_model=None,
    responses={**RESPONSES, 404: {"model": Problem}},
    summary="Delete a stored plan",
)
def delete_plan(plan_id: str, svc: Svc) -> Any:
    require_id(plan_id, "plan_id")
    if not svc.store.delete_plan(plan_id):
        return problem(404, f"no plan '{plan_id}'")
    return Response(status_code=204)


RENDERED: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The stored plan (format json), or the plan rendered in the format asked for: kubectl (a bash script, "
        "text/x-shellscript), podmigrationjob (koordinator PodMigrationJobs, application/yaml), yaml (the plan, application/yaml), "
        "table or wide (text/plain). The formats that need the snapshot take the one stored with the plan's job.",
        "content": {media: {} for media in sorted(set(CONTENT_TYPES.values()) - {"application/json"})},
    },
    404: {"model": Problem},
}


@router.get("/v1/plans/{plan_id}", response_model=StoredPlan, responses={**RESPONSES, **RENDERED}, summary="A stored plan, as JSON or rendered")
def get_plan(
    plan_id: str,
    svc: Svc,
    fmt: str = Query("json", alias="format", pattern="^(" + "|".join(FORMATS) + ")$", description="json, yaml, table, wide, kubectl or podmigrationjob."),
) -> Any:
    require_id(plan_id, "plan_id")
    plan = svc.store.get_plan(plan_id)
    if plan is None:
        return problem(404, f"no plan '{plan_id}'")
    if fmt == "json":
        return StoredPlan(**plan_summary(plan).model_dump(), plan=plan.body)
    return rendered(svc, plan, fmt)


def rendered(svc: Any, stored: Any, fmt: str) -> Response:
    """A stored plan rendered in ``fmt`` (``render/formats.py``, as the command line renders it), with
    the snapshot of its job for the formats that need one; 422 naming why it cannot be."""
    if fmt == "yaml":  # the stored document as it is, whatever its kind (comparisons too)
        return Response(render_yaml(stored.body), media_type=CONTENT_TYPES[fmt])
    snapshot = b""
    if fmt in NEEDS_SNAPSHOT:
        text = svc.store.snapshot_of(stored.job_id)
        if text is None:
            return problem(404, f"the snapshot of plan '{stored.id}' is no longer stored (its job was deleted)")
        snapshot = text.encode()
    # in a checker process within the route's rule (stored_views.py); this thread waits for it
    answer = from_thread.run(svc.bodies.run, RENDER, rendered_text, snapshot, stored.body, fmt, stored.id)
    return Response(answer, media_type=CONTENT_TYPES[fmt])


def job_status(job: Job) -> JobStatus:
    return JobStatus(
        job_id=job.id,
        kind=job.kind,
        status=job.status,
        progress=job.progress,
        created_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        error=job.error,
        attempts=job.attempts,
        plan_id=job.plan_id,
        plan_url=f"/v1/jobs/{job.id}/plan" if job.plan_id else None,
    )


def plan_summary(plan: Any) -> PlanSummary:
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
