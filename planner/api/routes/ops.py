"""Routes for operations: ``GET /healthz`` (liveness), ``GET /readyz`` (the store can write, the
dispatcher runs, a checker process has started, every finished job is recorded) and ``GET /metrics`` (Prometheus text). The docs
routes are added by ``planner.api.docs``."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from planner.api.context import Svc
from planner.api.errors import RESPONSES, problem
from planner.api.schemas import Problem

log = logging.getLogger("planner.api")

router = APIRouter()


@router.get("/healthz", summary="Liveness", responses={200: {"content": {"application/json": {"example": {"status": "ok"}}}}})
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="Readiness: database reachable, dispatcher running",
    responses={200: {"content": {"application/json": {"example": {"status": "ready"}}}}, 503: {"model": Problem}},
)
async def readyz(svc: Svc) -> Any:
    try:
        await run_in_threadpool(svc.store.probe_write)
    except Exception as err:  # noqa: BLE001
        log.warning("readiness: the store cannot write: %s", err)
        return problem(503, f"the job store cannot write: {type(err).__name__}")
    if not svc.dispatcher.is_alive():
        return problem(503, "dispatcher not running")
    if not svc.bodies.ready():
        return problem(503, "the checker processes (which parse and check request bodies) are still starting")
    if svc.dispatcher.unrecorded:
        return problem(503, f"{len(svc.dispatcher.unrecorded)} finished job(s) not yet recorded in the store")
    return {"status": "ready"}


@router.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics", responses=RESPONSES)
def prometheus(svc: Svc) -> Response:
    body, content_type = svc.metrics.exposition()
    return Response(body, media_type=content_type)
