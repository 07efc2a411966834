"""``POST /v1/plans/{id}/apply``: carry out a stored defrag plan on the cluster the service is configured for
(``planner apply``, ``planner/kube/apply*.py``), and ``GET /v1/plans/{id}/apply``: how that run stands.

Admin token only (every non-GET route is, ``auth.py``). The cluster is never named by the request: the
service applies to the kubeconfig in ``PLANNER_APPLY_KUBECONFIG`` (context ``PLANNER_APPLY_CONTEXT`` or the
body's ``context``), or, inside a pod without it, to its own cluster through its ServiceAccount; a service with
neither answers 409. ``dry_run`` answers at once (200, what would be done). Otherwise the run starts in a thread
of the service process and the answer is 202 with the status URL; one run per plan at a time (409 while one
runs). The run records its progress in the cluster as the command does (the ConfigMap
``planner-apply-<plan digest>``), so a run the service lost (a restart) is resumed with ``resume: true``.
The status holds the run's structured log lines (the last 200), its report when done, and its problems and
exit code (1 stopped, 2 bad input) when not."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from planner.api.context import Svc
from planner.api.errors import RESPONSES, problem
from planner.api.refusals import Refused, parse_model, require_id
from planner.api.requests import json_body
from planner.api.route_rules import ROUTE_RULES
from planner.plans import DefragPlan, parse_plan

router = APIRouter()

KUBECONFIG_ENV = "PLANNER_APPLY_KUBECONFIG"
CONTEXT_ENV = "PLANNER_APPLY_CONTEXT"
LOG_LINES = 200


class ApplyRequest(BaseModel):
    """How to carry the plan out (the options of ``planner apply``)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    dry_run: bool = False
    resume: bool = False
    abort: bool = False
    on_drift: Literal["stop", "replan"] = "stop"
    steer: Literal["fit", "taint", "sources"] = "fit"
    force_delete: bool = False
    wave_deadline_s: float = Field(600.0, ge=1.0, le=86_400.0)
    state_namespace: str = Field("default", min_length=1, max_length=63, pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    context: str | None = Field(None, min_length=1, max_length=253)


def apply_request_of(body: bytes) -> ApplyRequest:
    """The request from its JSON body (an empty body: every default); ``Refused`` (422) naming the field."""
    return parse_model(ApplyRequest, body or b"{}")


class Runs:
    """The runs this service process started: per plan id, its status, log lines, report or problems."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, dict[str, Any]] = {}

    def start(self, plan_id: str) -> dict[str, Any] | None:
        """A fresh record for ``plan_id``; None when a run of it is going on."""
        with self._lock:
            if self._runs.get(plan_id, {}).get("status") == "running":
                return None
            record: dict[str, Any] = {"plan_id": plan_id, "status": "running", "started_at": time.time(), "log": [], "report": None, "problems": []}
            self._runs[plan_id] = record
            return record

    def get(self, plan_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._runs.get(plan_id)
            return json.loads(json.dumps(found)) if found else None

    def update(self, record: dict[str, Any], **changes: Any) -> None:
        with self._lock:
            record.update(changes)


RUNS = Runs()


def _kube(request: ApplyRequest) -> Any:
    """The connected client for the service's cluster (``ApplyError`` when it does not work); ``Refused`` 409
    when the service has none."""
    from planner.kube.apply_client import connect, connect_in_cluster  # deferred: the Kubernetes client (a test extra), only when applying

    kubeconfig = os.environ.get(KUBECONFIG_ENV)
    context = request.context or os.environ.get(CONTEXT_ENV) or None
    if kubeconfig:
        return connect(kubeconfig, context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return connect_in_cluster()
    raise Refused(409, "the service has no cluster to apply plans to", [f"set {KUBECONFIG_ENV} (a kubeconfig file) or run the service in the cluster"])


def _options(request: ApplyRequest) -> Any:
    from planner.kube.apply_execute import ApplyOptions  # deferred: the executor, only when applying

    return ApplyOptions(
        request.state_namespace,
        request.steer,
        request.dry_run,
        request.resume,
        request.force_delete,
        request.wave_deadline_s,
        on_drift=request.on_drift,
    )


def _run(record: dict[str, Any], kube: Any, plan: DefragPlan, request: ApplyRequest) -> None:
    from planner.kube.apply import abort, apply_plan  # deferred: the executor, only when applying
    from planner.kube.apply_client import ApplyError  # deferred: the executor, only when applying

    def log(event: str, **fields: Any) -> None:
        line = {"event": event, **{k: v if isinstance(v, (int, float, bool)) or v is None else str(v) for k, v in fields.items()}}
        with RUNS._lock:
            record["log"] = [*record["log"][-(LOG_LINES - 1) :], line]

    try:
        result = abort(kube, plan, request.state_namespace, log) if request.abort else apply_plan(kube, plan, _options(request), log)
        RUNS.update(record, status="done", report=result, finished_at=time.time())
    except ApplyError as err:
        RUNS.update(
            record,
            status="done" if err.code == 0 else "stopped" if err.code in (1, 130) else "refused",
            problems=err.problems,
            code=err.code,
            finished_at=time.time(),
        )
    except Exception as err:  # noqa: BLE001 - a bug of the executor: recorded for the status, never lost in a thread
        RUNS.update(
            record,
            status="failed",
            problems=[f"the executor failed: {type(err).__name__}: {' '.join(str(err).split())[:300]}"],
            code=3,
            finished_at=time.time(),
        )


def _stored_plan(svc: Any, plan_id: str) -> DefragPlan:
    require_id(plan_id, "plan_id")
    stored = svc.store.get_plan(plan_id)
    if stored is None:
        raise Refused(404, f"no plan '{plan_id}'")
    plan = parse_plan(json.dumps(stored.body), "plan")
    if not isinstance(plan, DefragPlan):
        raise Refused(422, f"plan '{plan_id}' is a {getattr(plan, 'kind', 'comparison')} plan", ["apply carries out defrag and make-room plans only"])
    return plan


@router.post(
    "/v1/plans/{plan_id}/apply",
    status_code=202,
    responses={
        **RESPONSES,
        200: {"description": "dry_run: what would be done."},
        202: {
            "description": "The run started in the background; GET the status URL to follow it.",
            "content": {"application/json": {"example": {"plan_id": "3f2a9c1e", "status": "running", "status_url": "/v1/plans/3f2a9c1e/apply"}}},
        },
        404: {},
        409: {},
    },
    summary="Carry out a stored defrag plan on the cluster of the service",
    openapi_extra=json_body(ApplyRequest),
)
async def apply_stored_plan(plan_id: str, http: Request, svc: Svc) -> Any:
    request = await svc.bodies.parse(http, ROUTE_RULES["/v1/plans/{plan_id}/apply"], apply_request_of)
    plan = _stored_plan(svc, plan_id)
    from planner.kube.apply_client import ApplyError  # deferred: the executor, only when applying

    try:
        kube = await run_in_threadpool(_kube, request)
        if request.dry_run:
            from planner.kube.apply import apply_plan  # deferred: the executor, only when applying

            return JSONResponse(await run_in_threadpool(apply_plan, kube, plan, _options(request), lambda *_a, **_k: None), status_code=200)
    except ApplyError as err:
        return problem(422 if err.code == 2 else 409, "the plan cannot be applied to the service's cluster", err.problems)
    record = RUNS.start(plan_id)
    if record is None:
        return problem(409, f"plan '{plan_id}' is being applied now", [f"GET /v1/plans/{plan_id}/apply says how it stands"])
    threading.Thread(target=_run, args=(record, kube, plan, request), name=f"apply-{plan_id[:8]}", daemon=True).start()
    return {"plan_id": plan_id, "status": "running", "status_url": f"/v1/plans/{plan_id}/apply"}


_STATUS_EXAMPLE = {
    "plan_id": "3f2a9c1e",
    "status": "running",
    "started_at": 1765152000.0,
    "log": [{"event": "evicted", "wave": 1, "pod": "apps/web-5d8c7-x2k9q", "node": "gpu-07"}],
    "report": None,
    "problems": [],
}


@router.get(
    "/v1/plans/{plan_id}/apply",
    responses={
        **RESPONSES,
        200: {
            "description": "The run: running, done, stopped or refused; its last log lines, and its report once done.",
            "content": {"application/json": {"example": _STATUS_EXAMPLE}},
        },
        404: {},
    },
    summary="How the run of a stored plan stands",
)
def apply_status(plan_id: str, svc: Svc) -> Any:
    require_id(plan_id, "plan_id")
    found = RUNS.get(plan_id)
    if found is None:
        return problem(404, f"no run of plan '{plan_id}' in this service process", ["POST /v1/plans/{id}/apply starts one"])
    return found
