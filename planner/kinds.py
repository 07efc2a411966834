"""The kinds of plan the planner makes, in one registry (``KINDS``): for each kind its options
model, its engine facade, its plan and comparison models, its validator, and how a job of that kind
runs from a request's options (``plan_job``). The service's worker, routes' schemas and metrics
iterate it; a new kind is added here once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from planner.cluster import Cluster
from planner.engine.allocate import plan_allocate
from planner.engine.allocate_options import AllocateOptions
from planner.engine.defrag import DefragOptions, Progress, plan_defrag
from planner.engine.preempt import PreemptOptions, plan_preempt, plan_reactivate
from planner.plans import (
    AllocationComparison,
    AllocationPlan,
    DefragComparison,
    DefragPlan,
    PreemptComparison,
    PreemptPlan,
)
from planner.validate.allocate import validate_allocate
from planner.validate.defrag import validate
from planner.validate.preempt import validate_preempt
from planner.validate.violation import Violation


@dataclass(frozen=True)
class JobRun:
    """How a job runs: ``threads`` for its solver, where defrag's pieces run (``executor``: 'ray',
    else in the job's own process), and where progress goes."""

    threads: int = 1
    executor: str = "process"
    progress: Progress | None = None


@dataclass(frozen=True)
class Kind:
    """One kind of plan: what plans it and what checks it."""

    name: str
    description: str
    """What the kind plans, in a sentence (the API's tag)."""
    options: type[BaseModel]
    plan: Callable[..., Any]
    """The engine facade (``plan_defrag``, ``plan_preempt``, ``plan_allocate``)."""
    plan_model: type[BaseModel]
    comparison_model: type[BaseModel]
    validate: Callable[[Cluster, Any], list[Violation]]
    plan_job: Callable[[Cluster, dict[str, Any], JobRun], Any]
    """The plan for a job's options (as a request gives them: ``job`` and ``reactivate`` beside a
    preempt job's options)."""


def _defrag_job(cluster: Cluster, given: dict[str, Any], run: JobRun) -> DefragPlan | DefragComparison:
    solver = given.get("solver", DefragOptions.model_fields["solver"].default)
    solves = given.get("method", "heuristic") in ("exact", "compare", "hybrid", "auto")
    defaults = {"solver_workers": run.threads} if solves and solver == "highs" else {}
    where = {"executor": "ray"} if run.executor == "ray" else {"workers": 1}
    return plan_defrag(cluster, DefragOptions(**{**defaults, **given, **where}), run.progress)


def _preempt_job(cluster: Cluster, given: dict[str, Any], run: JobRun) -> PreemptPlan | PreemptComparison:
    options = dict(given)
    job, pod = options.pop("job", None), options.pop("reactivate", None)
    if options.get("method") in ("exact", "compare") and options.get("solver", "cpsat") == "highs":
        options.setdefault("solver_workers", run.threads)
    if pod is not None:
        return plan_reactivate(cluster, pod, PreemptOptions(**options))
    return plan_preempt(cluster, job, PreemptOptions(**options))


def _allocate_job(cluster: Cluster, given: dict[str, Any], run: JobRun) -> AllocationPlan | AllocationComparison:
    return plan_allocate(cluster, AllocateOptions(**given))


KINDS: dict[str, Kind] = {
    "defrag": Kind(
        "defrag",
        "Defragmentation: make-before-break migration waves that empty nodes.",
        DefragOptions,
        plan_defrag,
        DefragPlan,
        DefragComparison,
        validate,
        _defrag_job,
    ),
    "preempt": Kind(
        "preempt",
        "Spot preemption: where a high-priority job starts and which spot pods to evict.",
        PreemptOptions,
        plan_preempt,
        PreemptPlan,
        PreemptComparison,
        validate_preempt,
        _preempt_job,
    ),
    "allocate": Kind(
        "allocate",
        "Topology allocation: pending multi-node jobs on as few switches as possible.",
        AllocateOptions,
        plan_allocate,
        AllocationPlan,
        AllocationComparison,
        validate_allocate,
        _allocate_job,
    ),
}
"""Every kind of plan, by name, in the order the service lists them."""
