"""What a request must be before it is served: the service's settings, and the checks a body goes
through (parse, consistency, options, sizes, the time a job would need) before a job is queued or a
report computed. These run off the event loop (``bodies.BodyReader``), in a checker process that is
killed at the request's deadline, so everything here is a plain, picklable function.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from planner import metrics
from planner.api.refusals import Refused, parse_model
from planner.api.route_rules import EXPLAIN_TIME_LIMIT_S
from planner.api.schemas import (
    AllocateRequest,
    DefragRequest,
    ExplainRequest,
    PreemptRequest,
    ReportRequest,
    ServiceAllocateOptions,
    ServiceDefragOptions,
    ServicePreemptOptions,
    ValidateRequest,
    ValidateResponse,
    Violation,
)
from planner.api.worker import OPTION_SOURCES, job_time_limit_s
from planner.cluster import Cluster, SnapshotError
from planner.engine import PlanOptionError, check_exact_size, estimated_runtime_s
from planner.engine.allocate import pending_jobs
from planner.engine.defrag.room import room_shapes
from planner.engine.explain import explain_job, explain_node, explain_pod
from planner.engine.makeroom import make_room_requests, refuse_exact_shares
from planner.engine.preempt import request_problems
from planner.policy import Layer, PolicyError, is_policy, policy_layer, resolve
from planner.snapshot import consistency_problems
from planner.standby import reactivation_problems, reactivation_view
from planner.state import ClusterState
from planner.validate import validate_plan


@dataclass(frozen=True)
class Settings:
    db_url: str
    token: str | None = None
    """The admin token (``PLANNER_API_TOKEN``): every route."""
    read_token: str | None = None
    """The read-only token (``PLANNER_API_READ_TOKEN``): GET routes (jobs, plans, metrics) only."""
    metrics_public: bool = False
    """``/metrics`` without a token (``--metrics-public``), for a scraper that sends none."""
    keep_days: float | None = None
    """Retention: finished jobs are purged with their snapshots and plans this long after they end (None: kept)."""
    docs_public: bool = True
    """``/docs``, ``/redoc`` and ``/openapi.json`` without a token (``--private-docs`` protects them)."""
    concurrency: int = 2
    max_queue: int = 64
    max_body_bytes: int = 64 * 2**20
    body_timeout_s: float = 30.0
    """A request body must arrive within this many seconds (``--body-timeout-s``), else 408."""
    max_job_s: float = 900.0
    retry_after_s: int = 5
    allow_force: bool = False
    """Run ``force``d exact solves (beyond the size limits) only when the operator allows them."""
    job_memory_bytes: int | None = None
    """Address-space cap of one job's worker process (None: no cap)."""
    executor: str = "process"
    """Where a defrag job's pieces run: in its own process ('process') or as Ray tasks ('ray')."""
    lease_s: float = 30.0
    """A replica's lease on a running job; another replica takes the job over this long after the
    replica stopped renewing it (``--lease-s``)."""
    default_policies: dict[str, Any] = field(default_factory=dict)
    """Per plan kind, the policy document of ``serve --default-policy``: values for what a request
    leaves out (a value the request's method does not read gives way rather than refusing it)."""


def request_options(kind: str, model: type[BaseModel], request: Any, settings: Settings) -> tuple[Any, dict[str, Any]]:
    """The options of ``request`` as ``model`` (its ``options``, over its policy document, over the
    server's default policy for ``kind``), and what to store beside them: ``{OPTION_SOURCES: ...}``
    when a policy was in play, else nothing. ``Refused`` (422) names each bad field's path."""
    options, policy, where = request.options, request.policy, "policy."
    if not isinstance(options, dict):
        raise Refused(422, "invalid request", [f"options: must be an object (the options, or a policy document), got {type(options).__name__}"])
    if is_policy(options):
        if policy is not None:
            raise Refused(422, "invalid request", ["options: is a policy document and policy is given too; send one of them"])
        options, policy, where = {}, options, "options."
    try:
        layers = [Layer("given", options, lambda name: f"options.{name}")]
        if policy is not None:
            layers.append(policy_layer(policy, kind, "policy", where))
        if kind in settings.default_policies:
            layers.append(policy_layer(settings.default_policies[kind], kind, "server-policy", "the server's --default-policy: ", lenient=True))
        resolved, sources = resolve(model, layers)
    except PolicyError as err:
        raise Refused(422, "invalid request", err.problems) from None
    return resolved, ({OPTION_SOURCES: sources} if len(layers) > 1 else {})


def queued(kind: str, snapshot: Cluster, given: dict[str, Any], effective: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """What a job is stored with: (the snapshot's canonical JSON, the options as given, the request
    digest). The digest covers the kind and the options as the schema completes them (defaults filled
    in), so an Idempotency-Key resent with ``{}`` or with ``{"method": "heuristic"}`` (the default) is
    the same request, and one reused on another kind's route is a different request (409)."""
    text = snapshot.model_dump_json(exclude_defaults=True)
    digest = hashlib.sha256(json.dumps([kind, effective], sort_keys=True).encode() + b"\n" + text.encode()).hexdigest()
    return text, given, digest


def accept_defrag(body: bytes, settings: Settings) -> tuple[str, dict[str, Any], str]:
    """A defrag request checked as far as it can be before it is queued: (snapshot JSON, options as
    given, request digest). Raises ``Refused`` with the API's field names."""

    request = parse_model(DefragRequest, body)
    problems = consistency_problems(request.snapshot)
    if problems:
        raise Refused(422, "inconsistent snapshot", [f"snapshot.{p}" if not p.startswith("(") else p for p in problems])
    options, stored = request_options("defrag", ServiceDefragOptions, request, settings)
    if options.force and not settings.allow_force:
        raise Refused(
            422,
            "invalid request",
            [
                (
                    "options.force: this server does not run forced exact solves (they can take any memory and time); "
                    "use method 'hybrid', or ask the operator to start the server with --allow-force"
                )
            ],
        )
    if options.method in ("exact", "compare") and options.make_room is None:  # make room restricts its own model
        try:
            check_exact_size(ClusterState(request.snapshot), options)
        except PlanOptionError as err:
            raise Refused(422, "invalid request", [err.for_api()]) from None
    if options.make_room is not None:
        try:
            requests = make_room_requests(request.snapshot, options.make_room)
            if options.method in ("exact", "compare"):
                refuse_exact_shares(request.snapshot, requests)
        except PlanOptionError as err:
            raise Refused(422, "invalid request", [err.for_api()]) from None
        except SnapshotError as err:  # a pod shape no node could hold
            raise Refused(422, "invalid request", [f"snapshot.{p}" for p in err.problems]) from None
    if options.objective == "room":  # a shape no switch holds, or no pending job: refused before queueing
        try:
            room_shapes(request.snapshot, ClusterState(request.snapshot), options)
        except PlanOptionError as err:
            raise Refused(422, "invalid request", [err.for_api()]) from None
    given = options.model_dump(mode="json", exclude={"workers", "executor"}, exclude_unset=True)
    limit = job_time_limit_s(given, settings.max_job_s)
    given.update(stored)
    nodes, pods = len(request.snapshot.nodes), len(request.snapshot.pods)
    needed = estimated_runtime_s(nodes, pods, options)
    if needed > limit:
        raise Refused(
            422,
            "the job could not finish in its time limit",
            [
                (
                    f"snapshot: {nodes:,} nodes and {pods:,} pods take about {needed:,.0f} s to plan with method "
                    f"'{options.method}'; a job may run {limit:,.0f} s (2 x options.time_limit_s + 30, at most the "
                    f"server's --max-job-s {settings.max_job_s:g}): plan a part of the cluster, or ask the operator for a longer --max-job-s"
                )
            ],
        )
    return queued("defrag", request.snapshot, given, options.model_dump(mode="json", exclude={"workers", "executor"}))


def accept_preempt(body: bytes, settings: Settings) -> tuple[str, dict[str, Any], str]:
    """A preempt request checked before it is queued: (snapshot JSON, the job and options as given,
    request digest). Raises ``Refused`` naming the request's fields."""

    request = parse_model(PreemptRequest, body)
    if (request.job is None) == (request.reactivate is None):
        raise Refused(422, "invalid request", ["job: give job (a pending job to start) or reactivate (a standby pod to wake), not both or neither"])
    problems = consistency_problems(request.snapshot)
    if problems:
        raise Refused(422, "inconsistent snapshot", [f"snapshot.{p}" if not p.startswith("(") else p for p in problems])
    options, stored = request_options("preempt", ServicePreemptOptions, request, settings)
    now = options.now_s if options.now_s is not None else request.snapshot.time_s
    if request.reactivate is not None:
        wrong = reactivation_problems(request.snapshot, request.reactivate)
        if wrong:
            raise Refused(422, "invalid request", [f"reactivate: {p}" for p in wrong])
        view = reactivation_view(request.snapshot, request.reactivate)
        asked = request_problems(view.cluster, view.job, now)
        target = {"reactivate": request.reactivate}
    else:
        assert request.job is not None  # the request model asks for job or reactivate
        asked = request_problems(request.snapshot, request.job, now)
        target = {"job": request.job}
    if asked:
        raise Refused(422, "invalid request", [f"{'job' if field == 'job' else 'options.' + field}: {message}" for field, message in asked])
    given = {**target, **options.model_dump(mode="json", exclude_unset=True), **stored}
    return queued("preempt", request.snapshot, given, {**target, **options.model_dump(mode="json")})


def accept_allocate(body: bytes, settings: Settings) -> tuple[str, dict[str, Any], str]:
    """An allocate request checked before it is queued (jobs known, pending, of one shape each)."""

    request = parse_model(AllocateRequest, body)
    problems = consistency_problems(request.snapshot)
    if problems:
        raise Refused(422, "inconsistent snapshot", [f"snapshot.{p}" if not p.startswith("(") else p for p in problems])
    options, stored = request_options("allocate", ServiceAllocateOptions, request, settings)
    try:
        pending_jobs(request.snapshot, options.jobs)
    except PlanOptionError as err:
        raise Refused(422, "invalid request", [err.for_api()]) from None
    except SnapshotError as err:  # a pod shape no node could hold
        raise Refused(422, "invalid request", [f"snapshot.{p}" for p in err.problems]) from None
    given = {**options.model_dump(mode="json", exclude_unset=True), **stored}
    return queued("allocate", request.snapshot, given, options.model_dump(mode="json"))


def validate_plan_of(body: bytes) -> ValidateResponse:
    request = parse_model(ValidateRequest, body)
    problems = consistency_problems(request.snapshot)
    if problems:
        raise Refused(422, "inconsistent snapshot", [f"snapshot.{p}" for p in problems])
    violations = validate_plan(request.snapshot, request.plan)
    return ValidateResponse(valid=not violations, violations=[Violation(**v.__dict__) for v in violations])


def report_of(body: bytes) -> dict[str, Any]:
    request = parse_model(ReportRequest, body)
    problems = consistency_problems(request.snapshot)
    if problems:
        raise Refused(422, "inconsistent snapshot", [f"snapshot.{p}" for p in problems])
    shape = None
    if request.shape is not None:
        try:
            shape = metrics.parse_shape(request.shape)
        except ValueError as err:
            raise Refused(422, "invalid request", [f"shape: {err}"]) from None
    return metrics.report(request.snapshot, shape)


def explain_of(body: bytes, deadline: float | None = None) -> dict[str, Any]:
    """``POST /v1/explain``: ``planner explain``'s answer; an unknown name is a 422 with the closest names.
    The remedy's plans start only within ``EXPLAIN_TIME_LIMIT_S`` and within half of the time left before
    ``deadline`` (monotonic; the other half for the plan started last), so an answer is rarely cut at the
    request's deadline (the route's rule, ``route_rules.EXPLAIN``)."""
    request = parse_model(ExplainRequest, body)
    limit = EXPLAIN_TIME_LIMIT_S if deadline is None else max(0.01, min(EXPLAIN_TIME_LIMIT_S, (deadline - time.monotonic()) / 2))
    asked = request.options.time_limit_s
    if asked is None or asked > limit:
        request.options = request.options.model_copy(update={"time_limit_s": round(limit, 3)})
    problems = consistency_problems(request.snapshot)
    if problems:
        raise Refused(422, "inconsistent snapshot", [f"snapshot.{p}" for p in problems])
    given = [name for name in ("job", "pod", "node") if getattr(request, name) is not None]
    if len(given) != 1:
        raise Refused(422, "invalid request", [f"give exactly one of job, pod or node (got {', '.join(given) or 'none'})"])
    if (request.node is None) != (request.plan is None):
        raise Refused(422, "invalid request", ["node and plan go together: the node a defrag plan left busy, and the plan"])
    try:
        if request.job is not None:
            return explain_job(request.snapshot, request.job, request.options)
        if request.pod is not None:
            return explain_pod(request.snapshot, request.pod, request.options)
        return explain_node(request.snapshot, str(request.node), request.plan)
    except SnapshotError as err:
        raise Refused(422, "invalid request", [p.replace("--", "", 1) if p.startswith("--") else p for p in err.problems]) from None


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI request body of a route that parses ``model`` itself (see ``BodyReader``)."""
    content: dict[str, Any] = {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}
    extra: Any = model.model_config.get("json_schema_extra") or {}  # a dict on the request models
    examples = extra.get("examples")
    if examples:
        content["example"] = examples[0]
    return {"requestBody": {"required": True, "content": {"application/json": content}}}


def add_body_schemas(schema: dict[str, Any], models: tuple[type[BaseModel], ...]) -> None:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for model in models:
        body = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in body.pop("$defs", {}).items():
            components.setdefault(name, definition)
        components[model.__name__] = body
