"""Self-contained HTML views of plans and clusters (one file, opens offline: Plotly's JavaScript is
inline and the page makes no request). ``plan_view_html`` draws any plan or comparison over the
snapshot it was made from; ``report_view_html`` draws a snapshot.

Plotly rather than Vega-Lite: measured, Plotly's ``plotly.min.js`` is 4.8 MB (1.5 MB gzipped) and
Vega + Vega-Lite + vega-embed 0.9 MB (0.3 MB gzipped), but Altair ships no JavaScript: the bundle
comes from ``vl-convert-python``, a 33 MB native wheel that bundles it at run time. Plotly is one
pure-Python dependency with the file inside, and the largest page still loads well inside its 5 s
(benchmarks/results/view.md)."""

from __future__ import annotations

from typing import Any

from planner.capacity import after_plan
from planner.cluster import Cluster
from planner.metrics import Shape
from planner.plans import AllocationComparison, AllocationPlan, DefragComparison, DefragPlan, PreemptComparison, PreemptPlan
from planner.render.view.allocate import allocate_compare_view, allocate_view
from planner.render.view.belongs import check_belongs, first_mismatch
from planner.render.view.cells import default_shapes
from planner.render.view.defrag import defrag_view
from planner.render.view.page import Column, Page
from planner.render.view.preempt import preempt_compare_view, preempt_view
from planner.render.view.report import report_view
from planner.render.view.sections import plan_identity

__all__ = ["check_belongs", "first_mismatch", "plan_view_html", "report_view_html"]


def plan_view_html(plan: Any, cluster: Cluster, shapes: list[Shape] | None = None, title: str | None = None, plan_id: str | None = None) -> str:
    """The page of ``plan`` (any kind, or a comparison) over ``cluster``, the snapshot it was made from;
    ``plan_id``, the id the service stored it under, is shown under the title with the plan's other
    names (``sections.plan_identity``).

    Raises ``SnapshotError`` naming the first mismatch when the plan does not belong to the snapshot
    (unknown pods or nodes, a move's ``from`` that is not where the pod is), or, for a preempt or
    allocate plan, when it is not valid for it (``capacity.after_plan``, quick for those). A defrag
    plan's waves are followed without checking every rule again (``belongs.moved_state``)."""
    check_belongs(plan, cluster)
    shapes = shapes if shapes is not None else default_shapes()
    page = Page(title or f"{plan.kind} plan", plan_identity(plan, plan_id))
    if isinstance(plan, DefragPlan):
        defrag_view(page, plan, cluster, shapes)
    elif isinstance(plan, DefragComparison):
        _gap_table(page, dict(plan.gap))
        defrag_view(page, plan.exact, cluster, shapes)
        defrag_view(page, plan.heuristic, cluster, shapes, "heuristic-")
    elif isinstance(plan, PreemptPlan):
        after_plan(cluster, plan)  # checks the plan is valid for the snapshot
        preempt_view(page, plan, cluster)
    elif isinstance(plan, PreemptComparison):
        preempt_compare_view(page, plan, cluster)
    elif isinstance(plan, AllocationPlan):
        allocate_view(page, plan, cluster, after_plan(cluster, plan), shapes)
    elif isinstance(plan, AllocationComparison):
        allocate_compare_view(page, plan, cluster, after_plan(cluster, plan.exact), shapes)
    else:
        raise TypeError(f"no view for {type(plan).__name__}")
    return page.html()


def report_view_html(cluster: Cluster, shapes: list[Shape] | None = None, title: str = "Cluster report") -> str:
    """The cluster report page of a snapshot."""
    page = Page(title)
    report_view(page, cluster, shapes if shapes is not None else default_shapes())
    return page.html()


def _gap_table(page: Page, gap: dict[str, Any]) -> None:
    page.heading("Heuristic against exact", anchor="compare")
    page.table("compare", [Column("measure"), Column("value")], [[k, v] for k, v in gap.items() if not isinstance(v, (dict, list))], page_size=100)
