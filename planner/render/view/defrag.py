"""The defrag view: headline numbers, the switch x model heatmap before and after, the wave timeline
against the budgets in force, the node grid, the moves (a table in pages), and for a make-room plan the
pods it starts."""

from __future__ import annotations

from typing import Any

from planner.cluster import Cluster
from planner.metrics import Shape
from planner.plans import DefragPlan
from planner.render.view import charts
from planner.render.view.belongs import moved_state
from planner.render.view.budgets import budgets_caption, other_wave_limits, wave_budgets
from planner.render.view.cells import model_of, switch_of
from planner.render.view.page import Column, Page
from planner.render.view.sections import fig14_section, heatmap_section, metric_facts, node_grid_section, report_table, room_gained, solve_facts
from planner.state import ClusterState

MOVES_PAGE_ROWS = 100


def wave_rows(plan: DefragPlan, cluster: Cluster) -> list[dict[str, Any]]:
    """Per wave: moves, GPUs moved and nodes touched (sources and destinations)."""
    gpus = {p.name: p.gpus for p in cluster.pods}
    rows = []
    for w, wave in enumerate(plan.waves):
        touched = {m.from_ for m in wave} | {m.to for m in wave}
        moved = round(sum(gpus[m.pod] for m in wave), 6)
        rows.append({"wave": w + 1, "moves": len(wave), "gpus_moved": int(moved) if float(moved).is_integer() else moved, "nodes_touched": len(touched)})
    return rows


def move_rows(plan: DefragPlan, cluster: Cluster) -> list[list[Any]]:
    pods = {p.name: p for p in cluster.pods}
    nodes = {n.name: n for n in cluster.nodes}
    rows = []
    for w, wave in enumerate(plan.waves):
        for move in wave:
            pod, source, target = pods[move.pod], nodes[move.from_], nodes[move.to]
            switch = switch_of(source) if switch_of(source) == switch_of(target) else f"{switch_of(source)} -> {switch_of(target)}"
            rows.append([w + 1, pod.namespace, pod.job, move.pod, move.from_, move.to, switch, model_of(source), pod.gpus])
    return rows


def defrag_view(page: Page, plan: DefragPlan, cluster: Cluster, shapes: list[Shape], key: str = "") -> None:
    """The page's sections for ``plan``; with ``key`` (the second plan of a comparison) only its own
    headline, waves, moves and report, under ids that start with ``key``."""
    metrics = plan.metrics
    before_m = metrics.before if metrics is not None else {}
    after_m = metrics.after if metrics is not None else {}
    moves = plan.moves()
    page.heading("Headline" + (f" ({key.rstrip('-')})" if key else ""), anchor=f"{key}headline")
    report = plan.report
    page.facts(
        [
            *metric_facts(before_m, after_m),
            ("vacated nodes", len(plan.vacated_nodes), "nodes that hold pods before the plan and none after"),
            ("moves", len(moves), "pods migrated, make-before-break"),
            ("GPUs moved", report.gpus_moved if report is not None else None, "GPUs of the migrated pods"),
            ("waves", len(plan.waves), "the moves of one wave run at once; a wave starts when the one before has finished"),
            *solve_facts(report),
        ],
        f"{key}headline-facts",
    )
    if not key:
        before = ClusterState(cluster)
        states = [("before", before), ("after", moved_state(before, plan))]
        heatmap_section(page, states, shapes, "Before and after the plan, and the difference (after - before).")
        note = room_gained(fig14_section(page, states, shapes), len(plan.vacated_nodes))
        if note is not None:
            page.paragraph(note, "warn" if "no room" in note else "note")
    page.heading("Waves", anchor=f"{key}waves")
    budgets = wave_budgets(report)
    data, layout = charts.wave_timeline(wave_rows(plan, cluster), budgets)
    page.chart(f"{key}waves", data, layout, budgets_caption(budgets, other_wave_limits(report)))
    if not key:
        node_grid_section(page, states, "Each node under its switch, coloured by what the plan does to it.")
    page.heading("Moves", anchor=f"{key}moves")
    columns = [
        Column("wave", True),
        Column("namespace"),
        Column("job"),
        Column("pod"),
        Column("from"),
        Column("to"),
        Column("switch"),
        Column("GPU model"),
        Column("GPUs", True),
    ]
    page.table(f"{key}moves", columns, move_rows(plan, cluster), MOVES_PAGE_ROWS, "Every move of the plan; click a column to sort, type to filter.")
    if plan.placements or plan.unplaced:
        page.heading("Pods the plan starts (make room)", anchor=f"{key}placements")
        nodes = {n.name: n for n in cluster.nodes}
        job_of = {p.name: p.job for p in cluster.pods}
        page.table(
            f"{key}placements",
            [Column("job"), Column("pod"), Column("node"), Column("switch")],
            [[job_of[p.pod], p.pod, p.node, switch_of(nodes[p.node])] for p in plan.placements],
        )
        page.table(
            f"{key}unplaced", [Column("job"), Column("reason")], [[u.job, u.reason] for u in plan.unplaced], caption="Named jobs the plan does not start."
        )
    report_table(page, report, f"{key}report")
