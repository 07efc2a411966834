"""The allocation view: each job's switches and nodes, the switch-level capacity before and after, the
large-request counts (ASI Fig. 14) before and after, and the jobs left pending with the reason."""

from __future__ import annotations

from typing import Any

from planner.cluster import Cluster
from planner.metrics import Shape
from planner.plans import AllocationComparison, AllocationPlan
from planner.render.view.cells import switch_of
from planner.render.view.page import Column, Page
from planner.render.view.sections import fig14_section, heatmap_section, node_grid_section, phases, report_table, solve_facts


def job_rows(plan: AllocationPlan, cluster: Cluster) -> list[list[Any]]:
    """Per placed job: pods, GPUs, the switches and nodes it spans, and its locality measures."""
    nodes = {n.name: n for n in cluster.nodes}
    pods = {p.name: p for p in cluster.pods}
    per_job: dict[str, list[Any]] = {}
    for placement in plan.placements:
        job = pods[placement.pod].job or placement.pod
        per_job.setdefault(job, []).append(placement)
    measures = plan.metrics.get("per_job") or {}
    rows = []
    for job, placed in sorted(per_job.items()):
        switches = sorted({switch_of(nodes[p.node]) for p in placed})
        on = sorted({p.node for p in placed})
        extra = measures.get(job) or {}
        rows.append(
            [
                job,
                len(placed),
                round(sum(pods[p.pod].gpus for p in placed), 6),
                len(switches),
                ", ".join(switches),
                len(on),
                ", ".join(on),
                extra.get("entropy"),
                extra.get("locality_cost"),
            ]
        )
    return rows


def allocate_view(page: Page, plan: AllocationPlan, cluster: Cluster, after: Cluster, shapes: list[Shape], key: str = "") -> None:
    page.heading("Allocation" + (f" ({key.rstrip('-')})" if key else ""), anchor=f"{key}headline")
    rows = job_rows(plan, cluster)
    page.facts(
        [
            ("jobs placed", len(rows), "pending jobs the plan starts (gangs whole, or min_available of them)"),
            ("jobs left pending", len(plan.unplaced), "jobs the plan does not start; the table below says why"),
            ("pods placed", len(plan.placements), "pods started"),
            *solve_facts(plan.report),
        ],
        f"{key}facts",
    )
    page.heading("Jobs: switches and nodes", anchor=f"{key}jobs")
    page.table(
        f"{key}jobs",
        [
            Column("job"),
            Column("pods", True),
            Column("GPUs", True),
            Column("switches", True),
            Column("switch names"),
            Column("nodes", True),
            Column("node names"),
            Column("entropy (nats)", True),
            Column("locality cost", True),
        ],
        rows,
        caption="Entropy: ASI Eq. 1 over the switches the job's GPUs spread on (0 = one switch).",
    )
    if plan.unplaced:
        page.table(f"{key}unplaced", [Column("job"), Column("reason")], [[u.job, u.reason] for u in plan.unplaced], caption="Jobs left pending, and why.")
    if not key:
        states = phases(("before", cluster), ("after", after))
        heatmap_section(page, states, shapes, "Capacity per switch before and after the allocation, and the difference.")
        fig14_section(page, states, shapes)
        node_grid_section(page, states, "Each node under its switch: 'filled by the plan' nodes receive the jobs' pods.")
    report_table(page, plan.report, f"{key}report")


def allocate_compare_view(page: Page, plan: AllocationComparison, cluster: Cluster, after_exact: Cluster, shapes: list[Shape]) -> None:
    gap = plan.gap
    page.heading("Greedy against the exact joint model", anchor="compare")
    sides: dict[str, dict[str, Any]] = {"greedy": gap["greedy"], "exact": gap["exact"]}
    summary = [[name, *(side.get(k) for k in ("gpus", "switches", "jobs_placed"))] for name, side in sides.items()]
    page.table(
        "compare",
        [Column("plan"), Column("GPUs placed", True), Column("switches", True), Column("jobs placed", True)],
        summary,
        caption=f"The exact plan places {gap.get('gpus')} GPUs more and uses {gap.get('switches')} switches fewer; exact status {gap.get('exact_status')}.",
    )
    allocate_view(page, plan.exact, cluster, after_exact, shapes)
    allocate_view(page, plan.heuristic, cluster, after_exact, shapes, "greedy-")
