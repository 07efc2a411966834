"""Request and response bodies of the REST API, with the examples the OpenAPI schema shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, field_validator

from planner.cluster import Cluster
from planner.engine import DefragOptions
from planner.engine.allocate_options import AllocateOptions
from planner.engine.explain import ExplainOptions
from planner.engine.preempt import PreemptOptions
from planner.plans import AllocationPlan, DefragPlan, PreemptPlan
from planner.policy import PolicyDocument

_FIG15 = Path(__file__).resolve().parents[2] / "instances" / "fig15-ejection-chain.json"
EXAMPLE_SNAPSHOT: dict[str, Any] = (
    json.loads(_FIG15.read_text())
    if _FIG15.exists()
    else {
        "version": 1,
        "nodes": [{"name": "node-0", "gpus": 8, "cpus": 96, "memory_gib": 1024}, {"name": "node-1", "gpus": 8, "cpus": 96, "memory_gib": 1024}],
        "pods": [{"name": "a", "node": "node-0", "gpus": 2, "cpus": 16}, {"name": "b", "node": "node-1", "gpus": 4, "cpus": 16}],
    }
)
EXAMPLE_PLAN: dict[str, Any] = {
    "version": 1,
    "kind": "defrag",
    "waves": [
        [{"pod": "Job-7-0", "from": "node-2", "to": "node-3"}],
        [{"pod": "Job-3-0", "from": "node-1", "to": "node-2"}],
        [{"pod": "Job-1-0", "from": "node-0", "to": "node-1"}],
    ],
    "vacated_nodes": ["node-0"],
}
EXAMPLE_JOB_ID = "0f8e7c0c3d8a4b7f9a1c2e3d4f5a6b7c"


SERVER_DECIDES = ("executor", "workers")
"""``DefragOptions`` fields the service refuses: where a job's pieces run is the server's setting."""


def _server_decides(schema: dict[str, Any]) -> None:
    schema["examples"] = [{"method": "heuristic", "max_moves": 100, "seed": 0}]
    for name in SERVER_DECIDES:
        schema.get("properties", {}).pop(name, None)


class ServiceDefragOptions(DefragOptions):
    """``plan_defrag`` options, as ``planner defrag`` checks them; where a job runs (``executor``,
    ``workers``) is the server's setting and refused here."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_server_decides)
    time_limit_s: float = Field(60.0, gt=0, le=3600, description="Solver time limit (exact, compare) or search time (hybrid).")

    @field_validator(*SERVER_DECIDES)
    @classmethod
    def _refused(cls, value: Any) -> Any:
        raise ValueError("the server decides where a job runs (planner serve --executor, one process per job); leave it out")


OPTIONS_HELP = (
    "The options, checked as the command line checks them; or a policy document of the route's kind (apiVersion planner.io/v1), read as if given as `policy`."
)
POLICY_HELP = "A policy document of the route's kind (apiVersion planner.io/v1); `options` given override its values."


class DefragRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"snapshot": EXAMPLE_SNAPSHOT, "options": {"method": "heuristic", "seed": 0}}]},
    )
    snapshot: Cluster
    options: SkipValidation[ServiceDefragOptions | PolicyDocument] = Field(default_factory=dict, description=OPTIONS_HELP)  # type: ignore[assignment]  # a dict until the policies are merged in
    """Checked after the policies are merged in (``requests.request_options``): a dict here."""
    policy: SkipValidation[PolicyDocument | None] = Field(None, description=POLICY_HELP)


class ServicePreemptOptions(PreemptOptions):
    """``plan_preempt`` options."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"method": "spotgpu"}]})
    time_limit_s: float = Field(10.0, gt=0, le=3600, description="Solver time limit (exact, compare).")


class PreemptRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "snapshot": {
                        "version": 1,
                        "time_s": 100,
                        "nodes": [{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 256}],
                        "pods": [
                            {"name": "spot-0", "node": "n0", "gpus": 8, "cpus": 8, "priority": "LP", "started_s": 40},
                            {"name": "train-0", "job": "train", "gpus": 8, "cpus": 8},
                        ],
                        "jobs": [{"name": "train"}],
                    },
                    "job": "train",
                    "options": {"method": "spotgpu"},
                }
            ]
        },
    )
    snapshot: Cluster
    job: str | None = Field(None, description="The pending job to start (or give reactivate).")
    reactivate: str | None = Field(None, description="Instead of job: the standby pod to wake on its node.")
    options: SkipValidation[ServicePreemptOptions | PolicyDocument] = Field(default_factory=dict, description=OPTIONS_HELP)  # type: ignore[assignment]  # a dict until the policies are merged in
    policy: SkipValidation[PolicyDocument | None] = Field(None, description=POLICY_HELP)


class ServiceAllocateOptions(AllocateOptions):
    """``plan_allocate`` options."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"method": "largest-first"}]})
    time_limit_s: float = Field(10.0, gt=0, le=3600, description="exact, auto, compare: time for all solves.")


class AllocateRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "snapshot": {
                        "version": 1,
                        "nodes": [{"name": "n0", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": "a"}],
                        "pods": [{"name": "train-0", "job": "train", "gpus": 8, "cpus": 96}],
                        "jobs": [{"name": "train", "topology": {"level": "asw", "mode": "required"}}],
                    },
                    "options": {"method": "largest-first"},
                }
            ]
        },
    )
    snapshot: Cluster
    options: SkipValidation[ServiceAllocateOptions | PolicyDocument] = Field(default_factory=dict, description=OPTIONS_HELP)  # type: ignore[assignment]  # a dict until the policies are merged in
    policy: SkipValidation[PolicyDocument | None] = Field(None, description=POLICY_HELP)


class JobAccepted(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"job_id": EXAMPLE_JOB_ID, "status": "queued", "status_url": f"/v1/jobs/{EXAMPLE_JOB_ID}"}]})
    job_id: str
    status: str
    status_url: str


class JobStatus(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "job_id": EXAMPLE_JOB_ID,
                    "kind": "defrag",
                    "status": "succeeded",
                    "progress": 1.0,
                    "created_at": 1763700000.0,
                    "started_at": 1763700000.1,
                    "finished_at": 1763700001.3,
                    "error": None,
                    "attempts": 1,
                    "plan_id": "5b1d9c4e8f2a4c6d8e0f1a2b3c4d5e6f",
                    "plan_url": f"/v1/jobs/{EXAMPLE_JOB_ID}/plan",
                }
            ]
        }
    )
    job_id: str
    kind: str
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    progress: float
    created_at: float
    started_at: float | None
    finished_at: float | None
    error: str | None
    attempts: int
    plan_id: str | None
    plan_url: str | None


class PlanSummary(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "plan_id": "5b1d9c4e8f2a4c6d8e0f1a2b3c4d5e6f",
                    "job_id": EXAMPLE_JOB_ID,
                    "kind": "defrag",
                    "created_at": 1763700001.3,
                    "method": "ipc",
                    "status": "heuristic",
                    "objective": 1.0,
                    "plan_url": "/v1/plans/5b1d9c4e8f2a4c6d8e0f1a2b3c4d5e6f",
                }
            ]
        }
    )
    plan_id: str
    job_id: str
    kind: str
    created_at: float
    method: str | None
    status: str | None
    objective: float | None
    plan_url: str


class PlanList(BaseModel):
    plans: list[PlanSummary]


class StoredPlan(PlanSummary):
    plan: dict[str, Any] = Field(description="The plan (format v1: kind defrag, defrag-compare, preempt or preempt-compare).")


class ValidateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"snapshot": EXAMPLE_SNAPSHOT, "plan": EXAMPLE_PLAN}]})
    snapshot: Cluster
    plan: DefragPlan | PreemptPlan | AllocationPlan = Field(discriminator="kind")


class Violation(BaseModel):
    kind: str
    message: str
    wave: int | None = None
    move: int | None = None
    pod: str | None = None
    node: str | None = None


class ValidateResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"valid": True, "violations": []},
                {
                    "valid": False,
                    "violations": [{"kind": "over_capacity", "message": "during wave 0: needs 9 GPUs, node 'node-2' has 8", "wave": 0, "node": "node-2"}],
                },
            ]
        }
    )
    valid: bool
    violations: list[Violation]


class ReportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"snapshot": EXAMPLE_SNAPSHOT, "shape": "8g64c"}]})
    snapshot: Cluster
    shape: str | None = Field(None, description="Request shape for the stranded-GPU analysis, e.g. 8g64c.")


class ExplainRequest(BaseModel):
    """``POST /v1/explain``: why a pending job or pod waits, or why ``plan`` left ``node`` busy (``planner explain``)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"snapshot": EXAMPLE_SNAPSHOT, "job": "train"}]})
    snapshot: Cluster
    job: str | None = Field(None, description="A pending job (give exactly one of job, pod, node).")
    pod: str | None = Field(None, description="A pending pod (its job's explanation when it has one).")
    node: str | None = Field(None, description="A node the defrag plan `plan` left busy.")
    plan: DefragPlan | None = Field(None, description="With node: the defrag plan.")
    options: ExplainOptions = Field(default_factory=ExplainOptions, description="The move budgets of a job's remedy (a make-room plan).")


class Problem(BaseModel):
    """Every error response: what went wrong, one message per problem."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"error": "invalid request", "problems": ["snapshot.pods[17].node: unknown node 'n-9'"]}]})
    error: str
    problems: list[str] = []
    job_id: str | None = None
