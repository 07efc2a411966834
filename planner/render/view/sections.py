"""Sections every view shares: the switch x model heatmap, the large-request counts (ASI Fig. 14), the
node grid, how a plan was obtained (status and what it guarantees), and the definitions of the measures."""

from __future__ import annotations

import re
from typing import Any

from planner.capacity import large_job_capacity
from planner.cluster import Cluster
from planner.metrics import Shape
from planner.plans import DefragPlan
from planner.render.kubernetes import plan_digest
from planner.render.view import charts
from planner.render.view.cells import measures, node_states, switch_grid, switch_model_cells
from planner.render.view.page import Column, Page
from planner.state import ClusterState

GFR = "GFR, GPU node fragmentation ratio: the share of nodes (all of them, CPU-only ones too) that are neither empty nor full (Kant)"
GAR = "GAR, GPU allocation ratio: allocated GPUs over all GPUs"

GUARANTEES = {
    "optimal": "proven best: no plan within the same options does better on the objective; bound = objective",
    "feasible": "a valid plan; the solver did not prove it best: the gap bounds what a better plan could gain",
    "timeout": "the time limit ended the search: the plan is valid (checked), the gap bounds what is left",
    "heuristic": "a valid plan (every plan is checked by the validator) from a heuristic: not proven best; the bound, when given, caps what any plan can reach",
    "infeasible": "no plan exists within the options: nothing to carry out (the report says why)",
}
"""What each status guarantees, when the plan does not reach its bound (``status_meaning``)."""

AT_BOUND = {
    "heuristic": "a valid plan (checked by the validator) from a heuristic, and proven best on the objective: it reaches the bound (gap 0), "
    "which no plan within the same options can pass",
    "feasible": "a valid plan, proven best on the objective: it reaches the solver's bound (gap 0)",
    "timeout": "the time limit ended the search, but the plan is proven best on the objective: it reaches the bound (gap 0)",
}
"""What a status means when the plan's objective equals its bound: the bound proves it best."""


def status_meaning(report: Any) -> str:
    """What ``report.status`` guarantees for this plan: a plan at its bound (gap 0, the objective equal
    to the bound: a gap rounded to 0 is not enough) is proven best by that bound, whichever method found it."""
    bound, objective = report.bound, report.objective
    at_bound = report.gap == 0 and bound is not None and objective is not None and abs(objective - bound) <= 1e-9 * max(1.0, abs(bound))
    if at_bound and report.status in AT_BOUND:
        return AT_BOUND[report.status]
    return GUARANTEES.get(report.status, "")


SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def plan_identity(plan: Any, plan_id: str | None = None) -> list[tuple[str, str, str]]:
    """The names of ``plan`` a reader matches it by: the service's id when it was stored, a defrag
    plan's ``planner.io/plan`` label (the digest its PodMigrationJobs, kubectl script and their headers
    carry), and the snapshot digest its provenance records."""
    label = "the planner.io/plan label of the plan's PodMigrationJobs and kubectl script, and the id their headers name"
    rows = []
    if plan_id is not None:
        rows.append(("plan id", plan_id, "the id the service stored the plan under (GET /v1/plans/{id})"))
        if isinstance(plan, DefragPlan):
            rows.append(("planner.io/plan", plan_digest(plan), label))
    elif isinstance(plan, DefragPlan):
        rows.append(("plan id", plan_digest(plan), f"a digest of the moves: {label}"))
    else:
        rows.append(("plan id", "none (not stored)", "the service gives the plans it stores an id; this one was not stored"))
    report = getattr(plan, "report", None) or getattr(getattr(plan, "exact", None), "report", None)
    provenance = (report.model_extra or {}).get("provenance") if report is not None else None
    digest = provenance.get("snapshot_sha256") if isinstance(provenance, dict) else None
    if isinstance(digest, str) and SHA256_HEX.fullmatch(digest):
        rows.append(("snapshot sha256", digest, "the digest of the snapshot the plan was made from (report.provenance.snapshot_sha256)"))
    return rows


Phases = list[tuple[str, ClusterState]]
"""The states a view draws, by name: ``before`` and ``after`` a plan, or ``now``."""


def phases(*named: tuple[str, Cluster]) -> Phases:
    """Each snapshot's array state, built once for every section that draws it."""
    return [(name, ClusterState(cluster)) for name, cluster in named]


def heatmap_section(page: Page, grids: Phases, shapes: list[Shape], what: str) -> None:
    page.heading("Switches x GPU models", anchor="heatmap")
    first = switch_model_cells(grids[0][1], shapes)
    drawn = [(grids[0][0], first)] + [(name, switch_model_cells(c, shapes, first.switches, first.models)) for name, c in grids[1:]]
    kinds = measures(shapes)
    data, layout = charts.heatmap(drawn, kinds)
    definitions = "; ".join(f"{m.label}: {m.definition}" for m in kinds)
    page.chart("heatmap", data, layout, f"{what} One row per access switch, one column per GPU model; the buttons choose the measure. {definitions}.")


def node_grid_section(page: Page, states: Phases, caption: str) -> None:
    """The nodes before and after (the first two of ``states``), one row per switch."""
    before, after = states[0][1], states[1][1]
    assert before.cluster is not None
    page.heading("Nodes", anchor="nodes")
    data, layout = charts.node_grid(switch_grid(before.cluster, node_states(before, after)))
    page.chart("node-grid", data, layout, caption)


def fig14_section(page: Page, states: Phases, shapes: list[Shape]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Large requests that fit across switches and within one, per GPU model, in each phase (returned too)."""
    page.heading("Large requests that fit (ASI Fig. 14)", anchor="fig14")
    counted = [(name, large_job_capacity(state, shapes)) for name, state in states]
    columns = [Column("request"), Column("GPU model")]
    for name, _ in counted:
        columns += [Column(f"within one switch, {name}", True), Column(f"across switches, {name}", True)]
    rows: list[list[Any]] = []
    for s, shape in enumerate(shapes):
        models = sorted(set().union(*(c[s]["per_model"] for _, c in counted)))
        for model in [*models, "(all models pooled)"]:
            row: list[Any] = [str(shape), model]
            for _, capacity in counted:
                if model == "(all models pooled)":
                    row += [None, capacity[s]["heterogeneous_across_asw"]]
                else:
                    cell = capacity[s]["per_model"].get(model, {})
                    row += [cell.get("within_asw"), cell.get("across_asw")]
            rows.append(row)
    page.table(
        "fig14",
        columns,
        rows,
        caption="Requests of G GPUs (with c CPUs per GPU) the free GPUs could take: within one switch, the sum over access switches "
        "of floor(slots under the switch / G); across switches, floor(slots of the model / G) as if the network did not matter.",
    )
    return counted


def room_gained(counted: list[tuple[str, list[dict[str, Any]]]], vacated: int) -> str | None:
    """When a plan empties nodes: whether that adds room for each large request within one switch
    (the question "did emptying 120 nodes make room for a 128-GPU job?"), in a sentence."""
    if vacated == 0 or len(counted) != 2:
        return None
    parts = []
    for before, after in zip(counted[0][1], counted[1][1], strict=True):
        b = sum(m["within_asw"] for m in before["per_model"].values())
        a = sum(m["within_asw"] for m in after["per_model"].values())
        parts.append(f"{before['shape']}: {b:,} -> {a:,}" + (" (no gain)" if a <= b else ""))
    gained = any("(no gain)" not in part for part in parts)
    lead = f"The plan empties {vacated:,} nodes; " + ("" if gained else "they add no room for large jobs within one switch. ")
    return lead + "Requests that fit within one switch, all GPU models: " + "; ".join(parts) + "."


def solve_facts(report: Any) -> list[tuple[str, Any, str]]:
    """Status, objective, bound and gap of a plan's report, with what the status guarantees."""
    if report is None:
        return [("status", "unknown", "the plan carries no report")]
    facts: list[tuple[str, Any, str]] = [
        ("status", report.status, status_meaning(report)),
        ("method", report.method + (f" ({report.solver})" if report.solver else ""), "how the plan was computed"),
        ("objective", report.objective, "the value the method optimises"),
    ]
    extra = report.model_extra or {}
    source = f" ({extra['bound_source']})" if extra.get("bound_source") else ""
    facts.append(("bound", report.bound, f"best proven bound on the objective{source}; none when no bound applies"))
    facts.append(("gap", report.gap, "(bound - objective) / bound: how far from proven best; 0: the plan reaches the bound, so it is proven best"))
    facts.append(("wall time (s)", report.wall_s, "seconds to compute the plan"))
    return facts


def report_table(page: Page, report: Any, key: str = "report") -> None:
    """The report's other scalar fields (what the method tried, counts, reasons), as a table."""
    if report is None:
        return
    skip = {"method", "solver", "status", "objective", "bound", "gap", "wall_s", "provenance"}
    rows = [[k, v] for k, v in report.model_dump().items() if k not in skip and (v is None or isinstance(v, (str, int, float, bool)))]
    page.heading("How the plan was obtained", anchor=key)
    page.table(key, [Column("field"), Column("value")], rows, page_size=100)


def metric_facts(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """Empty nodes, GFR and GAR before and after."""

    def pair(key: str, digits: int = 0) -> str:
        b, a = before.get(key), after.get(key)
        fmt = (lambda v: f"{v:,}") if digits == 0 else (lambda v: f"{v:.{digits}f}")
        return f"{fmt(b) if b is not None else '-'} -> {fmt(a) if a is not None else '-'}"

    return [
        ("empty nodes", pair("empty_nodes"), "nodes with no pod, before -> after the plan"),
        ("GFR", pair("gfr", 4), GFR + "; lower is better"),
        ("GAR", pair("gar", 4), GAR + "; a plan that only moves pods keeps it"),
    ]
