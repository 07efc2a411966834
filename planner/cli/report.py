"""``planner report``: the fragmentation report of a snapshot, with stranded GPUs for a request shape
and large-job capacity (before and after a plan) when asked."""

from __future__ import annotations

from enum import Enum

import typer

from planner import metrics
from planner.capacity import after_plan, large_job_capacity
from planner.cli.common import (
    InputKind,
    emit,
    fail,
    guarded,
    import_config_option,
    input_option,
    load_input,
    stdout_console,
    write_json,
)
from planner.cli.inputs import read_plan
from planner.render.table import render_report


class ReportOutput(str, Enum):
    table = "table"
    json = "json"
    html = "html"


@guarded
def report(
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    shape: str = typer.Option(None, "--shape", help="Request shape for stranded-GPU analysis, e.g. 8g64c (GPUs, CPUs, optional GiB: 8g64c512m)."),
    requests: str = typer.Option(None, "--requests", help="Large-job capacity (ASI Fig. 14) for these shapes, e.g. 128g1536c,256g3072c."),
    plan: str = typer.Option(
        None, "--plan", help="With --requests: also the capacity after this defrag, preempt or allocate plan. With -o html: the page of this plan (any kind)."
    ),
    output: ReportOutput = typer.Option(
        None, "--output", "-o", help="table (the default), json (as --json) or html: a self-contained page (charts and tables, opens offline)."
    ),
    out: str = typer.Option("-", "--out", help="Where -o html writes the page (- for standard output)."),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Fragmentation report: empty nodes, slack, GFR, GAR, stranded GPUs, FGD, per-ASW free capacity."""
    request = None
    if shape is not None:
        try:
            request = metrics.parse_shape(shape)
        except ValueError as err:
            fail([f"--shape: {err}"])
    large = []
    for text in requests.split(",") if requests is not None else []:
        try:
            large.append(metrics.parse_shape(text))
        except ValueError as err:
            fail([f"--requests: {err}"])
    if output == ReportOutput.html:
        # deferred: the view's modules, only with -o html
        from planner.render.view import plan_view_html, report_view_html

        if as_json:
            fail(["--json: give either --json or -o html"])
        cluster = load_input(snapshot, source, import_config)
        shapes = large or None
        page = plan_view_html(read_plan(plan), cluster, shapes) if plan is not None else report_view_html(cluster, shapes)
        emit(page, out)
        return
    if out != "-":
        fail(["--out: applies with -o html (the table and --json print to standard output)"])
    if plan is not None and not large:
        fail(["--plan: give --requests too (the plan's effect is shown on the large-job capacity), or -o html for the plan's page"])
    as_json = as_json or output == ReportOutput.json
    cluster = load_input(snapshot, source, import_config)
    result = metrics.report(cluster, request)
    if large:
        result["large_jobs"] = large_job_capacity(cluster, large)
        if plan is not None:
            result["large_jobs_after_plan"] = large_job_capacity(after_plan(cluster, read_plan(plan)), large)
    if as_json:
        write_json(result, "-")
    else:
        with stdout_console() as console:
            render_report(console, result, snapshot)
