"""The service's OpenAPI by FastAPI's conventions: a bearer security scheme, a tag per plan kind
(``planner/kinds.py``) and area, readable operation ids, and the plan models as the plan responses'
schemas, with examples."""

from __future__ import annotations

from typing import Any

from planner.kinds import KINDS

PUBLIC_PATHS = ("/healthz", "/readyz")
PLAN_MODELS = tuple(model for kind in KINDS.values() for model in (kind.plan_model, kind.comparison_model))
TAGS = [
    *({"name": kind.name, "description": kind.description} for kind in KINDS.values()),
    {"name": "jobs", "description": "Jobs: status, plan, cancel, delete."},
    {"name": "plans", "description": "The plan store."},
    {"name": "checks", "description": "Synchronous checks: replay a plan, report on a snapshot."},
    {"name": "operations", "description": "Health, readiness and metrics."},
]
OPERATION_IDS = {"prometheus": "get_metrics", "report": "report_snapshot", "healthz": "get_health", "readyz": "get_readiness"}
PLAN_RESPONSES = {f"/v1/{kind.name}": (kind.plan_model.__name__, kind.comparison_model.__name__) for kind in KINDS.values()}
PLAN_EXAMPLES = {
    "/v1/preempt": {
        "version": 1,
        "kind": "preempt",
        "job": "hp",
        "now_s": 0.0,
        "placements": [{"pod": "hp-0", "node": "node-1"}],
        "victims": [{"pod": "spot-3", "node": "node-1", "job": "spot", "lost_gpu_s": 1800.0}],
        "metrics": {"lost_gpu_s": 1800.0},
        "report": {"method": "spotgpu", "status": "heuristic", "objective": 1800.0},
    },
    "/v1/allocate": {
        "version": 1,
        "kind": "allocate",
        "placements": [{"pod": "train-0", "node": "node-0"}, {"pod": "train-1", "node": "node-1"}],
        "unplaced": [],
        "metrics": {"per_job": {"train": {"asws": 1}}, "jobs_placed": 1, "jobs_unplaced": 0},
        "report": {"method": "largest-first", "status": "heuristic", "objective": 16.0},
    },
}
"""Example plan responses (tests parse them as plans)."""


def _tag(path: str) -> str:
    for prefix, tag in (
        *((f"/v1/{kind}", kind) for kind in KINDS),
        ("/v1/jobs", "jobs"),
        ("/v1/plans", "plans"),
        ("/v1/validate", "checks"),
        ("/v1/report", "checks"),
        ("/v1/explain", "checks"),
    ):
        if path.startswith(prefix):
            return tag
    return "operations"


def by_conventions(schema: dict[str, Any], routes: list[Any], public: tuple[str, ...]) -> None:
    """An HTTP bearer security scheme (every route but ``public``), a tag per plan kind and area,
    operation ids from the route functions' names, and the plan models as the plan responses' schemas."""
    schema.setdefault("components", {})["securitySchemes"] = {
        "bearer": {"type": "http", "scheme": "bearer", "description": "PLANNER_API_TOKEN (every route) or PLANNER_API_READ_TOKEN (GET routes only)."}
    }
    schema["security"] = [{"bearer": []}]
    schema["tags"] = TAGS
    names = {(route.path, method.lower()): route.name for route in routes if hasattr(route, "methods") for method in route.methods}
    any_plan = {"oneOf": [{"$ref": f"#/components/schemas/{m.__name__}"} for m in PLAN_MODELS]}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            name = names.get((path, method), operation.get("operationId", ""))
            operation["operationId"] = OPERATION_IDS.get(name, name)
            operation["tags"] = [_tag(path)]
            if path in public:
                operation["security"] = []
            plans = PLAN_RESPONSES.get(path)
            typed = {"oneOf": [{"$ref": f"#/components/schemas/{m}"} for m in plans]} if plans else any_plan if path == "/v1/jobs/{job_id}/plan" else None
            ok = operation.get("responses", {}).get("200")
            if typed is not None and ok is not None:
                content = ok.setdefault("content", {}).setdefault("application/json", {})
                content["schema"] = typed
                if "example" not in content and path in PLAN_EXAMPLES:
                    content["example"] = PLAN_EXAMPLES[path]
