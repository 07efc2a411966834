"""Tables for the terminal other than plan summaries (``render/plan.py``): the fragmentation report,
the simulations' rows, the service's job and plan lists and the spot schedule's summary. Each is a
rich table (or lines) printed on the console the command line gives, or returned for it to print;
``fmt`` is the number format they share."""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from rich.console import Console
from rich.table import Table


def fmt(value: Any) -> str:
    """A value for a table cell: yes/no, four decimals below 1, thousands separators, never an
    exponent (1,004,290 rather than 1.00429e+06)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if abs(value) < 1 and value != 0:
            return f"{value:.4f}"
        if abs(value) >= 1e5 or value == int(value):
            return f"{value:,.0f}"
        return f"{value:,.6g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def signed(value: float) -> str:
    """A change for a table cell: its sign always shown, formatted as ``fmt`` does."""
    text = fmt(value)
    return text if text.startswith("-") or value == 0 else f"+{text}"


# ----------------------------------------------------------------------------------------------
# planner report
# ----------------------------------------------------------------------------------------------


def render_report(console: Console, result: dict[str, Any], source: str) -> None:
    """``planner report``'s tables (``metrics.report``'s result, with large-job capacity when asked)."""
    summary = result["summary"]
    models = summary["by_model"]
    table = Table(title=f"Fragmentation report: {source} (time {result['time_s']:g} s)")
    table.add_column("measure")
    table.add_column("cluster", justify="right")
    for model in models:
        table.add_column(model, justify="right")
    rows = [
        ("nodes", "nodes"),
        ("GPUs", "gpus"),
        ("allocated GPUs", "allocated_gpus"),
        ("GAR (allocated / GPUs)", "gar"),
        ("empty nodes", "empty_nodes"),
        ("full nodes", "full_nodes"),
        ("nodes with slack", "nodes_with_slack"),
        ("GFR (nodes neither empty nor full / nodes)", "gfr"),
        ("pods", "pods"),
    ]
    for label, key in rows:
        table.add_row(label, fmt(summary[key]), *(fmt(m[key]) for m in models.values()))
    fgd = result["fgd"]
    table.add_row(
        "FGD fragmented GPUs",
        fmt(fgd["fragmented_gpus"]),
        *(fmt(fgd["by_model"].get(k, {}).get("fragmented_gpus", "")) for k in models),
    )
    console.print(table)
    console.print(f"pending pods: {summary['pending_pods']} ({fmt(summary['pending_gpus'])} GPUs)")
    if "stranded" in result:
        render_stranded(console, result["stranded"])
    for key, title in (("large_jobs", "Large-job capacity (requests that fit)"), ("large_jobs_after_plan", "... after the plan")):
        if key not in result:
            continue
        table = Table(title=title)
        for column in ("request", "gpu model", "usable GPUs", "across switches", "within one switch"):
            table.add_column(column, justify="left" if column in ("request", "gpu model") else "right")
        for item in result[key]:
            for model, row in item["per_model"].items():
                table.add_row(item["shape"], model, str(row["usable_gpus"]), str(row["across_asw"]), str(row["within_asw"]))
            table.add_row(item["shape"], "(any model)", "", str(item["heterogeneous_across_asw"]), "")
        console.print(table)
    rows_asw = result["per_asw"]
    asw = Table(title="Per access switch (most free whole nodes first)")
    for column in ("asw", "gpu model", "nodes", "GPUs", "free GPUs", "free whole nodes"):
        asw.add_column(column, justify="left" if column in ("asw", "gpu model") else "right")
    ranked = sorted(rows_asw, key=lambda r: (-r["free_whole_nodes"], -r["free_gpus"], r["asw"]))
    for row in ranked[:15]:
        asw.add_row(row["asw"], row["gpu_model"], *(str(row[k]) for k in ("nodes", "gpus", "free_gpus", "free_whole_nodes")))
    console.print(asw)
    if len(ranked) > 15:
        console.print(f"... and {len(ranked) - 15} more access switches (use --json for all)")


STRANDED_CAUSES = {
    "fractional": "idle parts of shared GPUs",
    "stranded_gpus": "too few whole GPUs on their node",
    "insufficient_cpu": "too few free CPUs",
    "insufficient_memory": "too little free memory",
    "topology": "enough slots, not under one switch",
    "unschedulable": "on cordoned nodes",
}
"""``metrics.stranded``'s causes as the report's rows name them (``stranded_gpus`` of a multi-node
request: the slots left over after its requests, ``MULTI_NODE_LEFTOVER``)."""

MULTI_NODE_LEFTOVER = "too few slots left of the model"


def render_stranded(console: Console, stranded: dict[str, Any]) -> None:
    """``planner report --shape``: requests that fit and where the other idle GPUs are stranded, for the
    cluster and per GPU model; the title says whether a request is one pod or multi-node and why."""
    largest = stranded.get("largest_node_gpus")
    why = f": the largest node has {largest:,} GPUs" if isinstance(largest, int) else ""
    kind = "multi-node, from one access switch" if stranded["multi_node"] else "one pod on one node"
    title = f"Requests of shape {stranded['shape']} ({kind}{why})"
    by_model = stranded["by_model"]
    table = Table(title=title, caption="cluster = the sum of the GPU models: a request takes the GPUs of one model" if len(by_model) > 1 else None)
    table.add_column("")
    table.add_column("cluster", justify="right")
    for model in by_model:
        table.add_column(model, justify="right")
    table.add_row("requests that fit", str(stranded["requests_fit"]), *(str(m["requests_fit"]) for m in by_model.values()))
    table.add_row("idle GPUs", fmt(stranded["idle_gpus"]), *(fmt(m["idle_gpus"]) for m in by_model.values()))
    table.add_row("  usable by the requests", str(stranded["gpus_usable"]), *(str(m["gpus_usable"]) for m in by_model.values()))
    for cause, value in stranded["stranded_by_cause"].items():
        words = MULTI_NODE_LEFTOVER if cause == "stranded_gpus" and stranded["multi_node"] else STRANDED_CAUSES.get(cause, cause.replace("_", " "))
        table.add_row(f"  stranded: {words}", fmt(value), *(fmt(m["stranded_by_cause"][cause]) for m in by_model.values()))
    console.print(table)


# ----------------------------------------------------------------------------------------------
# planner simulate, planner solve
# ----------------------------------------------------------------------------------------------


def spot_runs_table(rows: list[dict[str, Any]]) -> Table:
    """``planner simulate spot``: one row per policy and seed."""
    table = Table(title="spot simulation (one row per policy and seed)")
    columns = [
        ("policy", "policy"),
        ("seed", "seed"),
        ("lp_jct_mean_s", "spot JCT mean s"),
        ("lp_jct_p90_s", "spot JCT p90 s"),
        ("lp_gpu_hours_lost", "spot GPU-h lost"),
        ("lp_evicted_twice_share", "evicted 2x+"),
        ("hp_delay_mean_s", "HP delay s"),
        ("hp_delay_growth", "HP delay vs HP-only"),
        ("gar_mean", "GAR"),
        ("standby_harvested", "standby harvested"),
        ("wall_s", "wall s"),
    ]
    for _, title in columns:
        table.add_column(title, justify="left" if title == "policy" else "right")
    for row in rows:
        table.add_row(*[_cell(row.get(key)) for key, _ in columns])
    return table


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.0f}"
    return str(value)


def placement_runs_table(rows: list[dict[str, Any]], load: float) -> Table:
    """``planner simulate placement``: per policy, the means over seeds at a few arrived loads."""
    top = round(load * 100)
    points = sorted({k for k in (50, 80, 100) if k < top} | {top})
    table = Table(title="placement replays: mean over seeds at arrived load (% of GPU capacity)")
    table.add_column("policy")
    for k in points:
        table.add_column(f"alloc % @{k}", justify="right")
    table.add_column(f"EOPC kW @{min(80, top)}", justify="right")
    table.add_column(f"GRAR @{min(100, top)}", justify="right")
    table.add_column("seeds", justify="right")
    for name in dict.fromkeys(r["policy"] for r in rows):
        mine = [r for r in rows if r["policy"] == name]

        def mean(key: str, k: int, rows: list[dict[str, Any]] = mine) -> str:
            values = [r[key] for r in rows if round(r["load"] * 100) == k]
            return f"{statistics.fmean(values):,.2f}" if values else "-"

        eopc = [r["eopc_w"] / 1000 for r in mine if round(r["load"] * 100) == min(80, top)]
        table.add_row(
            name,
            *[mean("gpu_allocation", k) for k in points],
            f"{statistics.fmean(eopc):,.1f}" if eopc else "-",
            mean("grar", min(100, top)),
            str(len({r["seed"] for r in mine})),
        )
    return table


def render_spot_schedule(console: Console, result: Any, hp_delay: bool) -> None:
    """``planner solve spot-schedule``'s summary: status, objective levels with their bounds, the runs."""
    console.print(f"{result.status} ({result.solver}, {result.wall_s:.2f} s, {result.variables:,} variables, {result.rows:,} rows)")
    for name in ("hp_delay_slots", "lost_gpu_slots", "completion_slots"):
        if name != "hp_delay_slots" or hp_delay:
            console.print(f"  {name}: {result.objective[name]} (bound {result.bound[name]})")
    for job, runs in (result.schedule or {}).items():
        text = ", ".join(f"[{r.start_slot}, {r.end_slot}) on {'+'.join(r.nodes)} keeps {r.kept_slots}" for r in runs)
        console.print(f"  {job}: {text}")


# ----------------------------------------------------------------------------------------------
# planner jobs, planner plans
# ----------------------------------------------------------------------------------------------


def _created(row: dict[str, Any]) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["created_at"]))


def jobs_table(rows: list[dict[str, Any]], base: str) -> Table:
    """A service's jobs, with their full ids (what the other commands take)."""
    table = Table(title=f"Jobs at {base}")
    table.add_column("job", no_wrap=True, min_width=32)
    for column in ("kind", "status", "progress", "created", "error"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["job_id"], row["kind"], row["status"], f"{row['progress']:.0%}", _created(row), row.get("error") or "")
    return table


def plans_table(rows: list[dict[str, Any]], base: str) -> Table:
    """A service's stored plans, with their full ids."""
    table = Table(title=f"Plans at {base}")
    table.add_column("plan", no_wrap=True, min_width=32)
    table.add_column("job", no_wrap=True, min_width=32)
    for column in ("kind", "method", "status", "empty nodes", "created"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["plan_id"], row["job_id"], row["kind"], row["method"] or "", row["status"] or "", fmt(row["objective"]), _created(row))
    return table
