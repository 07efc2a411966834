"""The HTML views over the store: ``GET /v1/plans/{id}/view`` and ``GET /v1/jobs/{id}/view``, the page
``planner report --plan PLAN -o html`` writes, of a stored plan over its job's snapshot. The same token
rules as for the JSON (any GET: the read token may view). The page is self-contained (Plotly inline)
and makes no request, to this service or elsewhere.

Plain functions: FastAPI runs them in its thread pool; the page itself is built in a checker process within
``route_rules.RENDER`` (a 37,707-node plan's page takes seconds to build: stopped at the rule's time)."""

from __future__ import annotations

from typing import Any

from anyio import from_thread
from fastapi import APIRouter
from fastapi.responses import HTMLResponse, JSONResponse

from planner.api.context import Svc
from planner.api.errors import RESPONSES, problem
from planner.api.refusals import require_id
from planner.api.route_rules import RENDER
from planner.api.routes.jobs import job_plan
from planner.api.stored_views import view_page
from planner.service.store import Plan

router = APIRouter()

PROBLEM_JSON = {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
HTML_RESPONSES: dict[int | str, dict[str, Any]] = {
    # the problems stay JSON on an HTML route: written out, or FastAPI would document them as text/html
    **{status: {"description": spec["description"], "content": PROBLEM_JSON} for status, spec in RESPONSES.items()},
    200: {"content": {"text/html": {"schema": {"type": "string"}}}, "description": "One self-contained HTML page"},
    404: {"description": "No such plan or job, the job has no plan yet, or its snapshot is gone.", "content": PROBLEM_JSON},
    409: {"description": "The stored plan cannot be drawn over its job's snapshot.", "content": PROBLEM_JSON},
}


@router.get("/v1/plans/{plan_id}/view", response_class=HTMLResponse, responses=HTML_RESPONSES, summary="A stored plan as an HTML page")
def view_plan(plan_id: str, svc: Svc) -> Any:
    require_id(plan_id, "plan_id")
    plan = svc.store.get_plan(plan_id)
    if plan is None:
        return problem(404, f"no plan '{plan_id}'")
    return _page(plan, svc)


@router.get("/v1/jobs/{job_id}/view", response_class=HTMLResponse, responses=HTML_RESPONSES, summary="A job's plan as an HTML page (404 until it exists)")
def view_job(job_id: str, svc: Svc) -> Any:
    plan = job_plan(job_id, svc)
    return plan if isinstance(plan, JSONResponse) else _page(plan, svc)


def _page(plan: Plan, svc: Any) -> Any:
    text = svc.store.snapshot_of(plan.job_id)
    if text is None:
        return problem(404, f"the snapshot of plan '{plan.id}' is no longer stored (its job was deleted)")
    # in a checker process within the route's rule (stored_views.py); this thread waits for it
    return HTMLResponse(from_thread.run(svc.bodies.run, RENDER, view_page, text.encode(), plan.body, plan.kind, plan.id))
