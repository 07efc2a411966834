"""The preemption view: where the job lands (node, switch, devices and their NUMA domains when the
node has them), the victims with the GPU-seconds they lose and their last checkpoint, the alternatives
the method reports, and for a ``compare`` plan the heuristic beside the exact optimum."""

from __future__ import annotations

from typing import Any

from planner.cluster import Cluster
from planner.plans import PreemptComparison, PreemptPlan
from planner.render.view.cells import model_of, switch_of
from planner.render.view.page import Column, Page
from planner.render.view.sections import report_table, solve_facts


def numa_of(node: Any, indexes: list[int] | None) -> str | None:
    """The NUMA domains holding ``indexes`` on ``node`` (None when either is unknown)."""
    if not indexes or not node.numa:
        return None
    names = [d.name for d in node.numa if set(indexes) & set(d.gpu_indexes)]
    return ", ".join(names) or None


def preempt_view(page: Page, plan: PreemptPlan, cluster: Cluster, key: str = "") -> None:
    nodes = {n.name: n for n in cluster.nodes}
    pods = {p.name: p for p in cluster.pods}
    lost = sum(v.lost_gpu_s for v in plan.victims)
    what = f"wakes standby pod {plan.reactivate}" if plan.reactivate else f"starts job {plan.job}"
    page.heading(f"Preemption: {what}" + (f" ({key.rstrip('-')})" if key else ""), anchor=f"{key}headline")
    page.facts(
        [
            ("pods placed", len(plan.placements), "pods of the job started by the plan"),
            ("victims", len(plan.victims), "spot pods evicted to make room"),
            ("lost GPU-seconds", round(lost, 3), "work the victims lose since their last checkpoint, GPUs x seconds"),
            ("switches", len({switch_of(nodes[p.node]) for p in plan.placements}), "access switches the job spans"),
            *solve_facts(plan.report),
        ],
        f"{key}facts",
    )
    page.heading("Where the job lands", anchor=f"{key}placements")
    page.table(
        f"{key}placements",
        [Column("pod"), Column("node"), Column("switch"), Column("GPU model"), Column("GPUs", True), Column("devices"), Column("NUMA domains")],
        [
            [
                p.pod,
                p.node,
                switch_of(nodes[p.node]),
                model_of(nodes[p.node]),
                pods[p.pod].gpus,
                ", ".join(map(str, p.gpu_indexes)) if p.gpu_indexes else None,
                numa_of(nodes[p.node], p.gpu_indexes),
            ]
            for p in plan.placements
        ],
    )
    page.heading("Victims", anchor=f"{key}victims")
    page.table(
        f"{key}victims",
        [Column("pod"), Column("job"), Column("node"), Column("switch"), Column("GPUs", True), Column("lost GPU-s", True), Column("last checkpoint (s)", True)],
        [
            [v.pod, v.job, v.node, switch_of(nodes[v.node]), pods[v.pod].gpus, round(v.lost_gpu_s, 3), pods[v.pod].checkpoint_s or pods[v.pod].started_s]
            for v in plan.victims
        ],
        caption=f"Lost GPU-seconds at now = {plan.now_s:,.0f} s: GPUs x the time since the pod's last checkpoint (or its start when it has none).",
    )
    alternatives = (plan.report.model_extra or {}).get("alternatives") if plan.report is not None else None
    page.heading("Alternatives", anchor=f"{key}alternatives")
    if isinstance(alternatives, list) and alternatives and all(isinstance(a, dict) for a in alternatives):
        names = sorted({k for a in alternatives for k in a})
        page.table(
            f"{key}alternatives",
            [Column(n) for n in names],
            [[a.get(n) if not isinstance(a.get(n), (list, dict)) else str(a.get(n)) for n in names] for a in alternatives],
        )
    else:
        page.paragraph(f"The method ({plan.report.method if plan.report else 'unknown'}) reports no alternatives it compared.", "note")
    report_table(page, plan.report, f"{key}report")


def preempt_compare_view(page: Page, plan: PreemptComparison, cluster: Cluster) -> None:
    gap = plan.gap
    page.heading("Heuristic against the exact optimum", anchor="compare")
    lost, victims = gap.get("lost_gpu_s", {}), gap.get("victims", {})
    page.table(
        "compare",
        [Column("plan"), Column("status"), Column("lost GPU-s", True), Column("victims", True)],
        [
            [
                f"heuristic ({gap.get('heuristic')})",
                plan.heuristic.report.status if plan.heuristic.report else None,
                lost.get("heuristic"),
                victims.get("heuristic"),
            ],
            ["exact", gap.get("exact_status"), lost.get("exact"), victims.get("exact")],
        ],
        caption=f"cost ratio (heuristic lost / exact lost): {gap.get('cost_ratio')}; the exact plan is the optimum when its status is optimal.",
    )
    preempt_view(page, plan.heuristic, cluster, "heuristic-")
    preempt_view(page, plan.exact, cluster, "exact-")
