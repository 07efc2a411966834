"""The plan validators, one module per kind of plan, each checking a plan with the rules themselves
(``rules.py``), independently of the planners: ``defrag`` (make-before-break replay, and the limits
a plan was asked for), ``allocate`` and ``preempt``; ``violation`` is what they report.
``validate_plan`` checks a plan of any kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.cluster import Cluster
from planner.limits import MoveLimits
from planner.plans import AnyPlan
from planner.validate.allocate import validate_allocate
from planner.validate.defrag import validate
from planner.validate.preempt import validate_preempt
from planner.validate.violation import Violation

VALIDATORS: dict[str, Callable[[Cluster, Any], list[Violation]]] = {
    "defrag": validate,
    "allocate": validate_allocate,
    "preempt": validate_preempt,
}
"""The validator of each kind of plan (``plan.kind``)."""


def validate_plan(cluster: Cluster, plan: AnyPlan, limits: MoveLimits | None = None) -> list[Violation]:
    """All violations of ``plan`` (of any kind) on ``cluster``; ``limits``: the limits a defrag plan
    was asked for, also checked (other kinds of plan have none)."""
    if plan.kind == "defrag":
        return validate(cluster, plan, limits)
    if limits is not None:
        raise ValueError(f"limits apply to defrag plans; this is a {plan.kind} plan")
    return VALIDATORS[plan.kind](cluster, plan)
