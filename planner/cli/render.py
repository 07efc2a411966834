"""``planner render PLAN --snapshot SNAP -o FORMAT``: a plan written earlier (``--out``, ``planner plans
get``) in any output format, with the snapshot it was planned from; byte for byte what the planning
command printed. A snapshot the plan does not belong to is refused (exit 2) naming the first pod or
node that differs (``validate/belongs.py``)."""

from __future__ import annotations

from typing import Any

import typer

from planner.cli.common import (
    InputKind,
    OutputFormat,
    emit_plan,
    err_console,
    fail,
    guarded,
    import_config_option,
    input_option,
    load_input,
    out_dir_option,
    output_option,
)
from planner.cli.outdir import check_out_dir
from planner.plans import parse_plan
from planner.provenance import snapshot_sha256
from planner.render.formats import NEEDS_SNAPSHOT, refusals
from planner.snapshot import read_text


def force_option() -> Any:
    return typer.Option(
        False, "--force", help="With --out-dir: write into a directory that is not empty (the planner's wave-*.yaml and index.txt there are replaced)."
    )


@guarded
def render(
    plan_file: str = typer.Argument(..., metavar="PLAN", help="Plan JSON file (planner defrag --out, planner plans get), or - for stdin."),
    snapshot: str = typer.Option(
        None, "--snapshot", help="The snapshot the plan was made from (file, or - for stdin); needed for wide, kubectl and podmigrationjob."
    ),
    output_format: OutputFormat = output_option(),
    out_dir: str = out_dir_option(),
    force: bool = force_option(),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Render a plan written earlier: a table, JSON or YAML, a kubectl script or PodMigrationJobs
    (one file per wave with --out-dir), against the snapshot it was planned from."""
    fmt = output_format.value if output_format else None
    check_out_dir(fmt, out_dir, force)
    wanted = fmt or ("podmigrationjob" if out_dir else None)
    if snapshot is None and wanted in NEEDS_SNAPSHOT:
        fail([f"--snapshot: -o {wanted} needs the snapshot the plan was made from (the pods' namespaces, requests and tolerations)"])
    if plan_file == "-" and snapshot == "-":
        fail(["PLAN and --snapshot: only one of them can be read from stdin"])
    plan = parse_plan(read_text(plan_file, "PLAN"), "plan")
    cluster = load_input(snapshot, source, import_config) if snapshot is not None else None
    if cluster is not None:
        problems = refusals(plan, cluster, wanted or "wide", f"-o {wanted or 'wide'}", snapshot="--snapshot")
        if problems:
            fail(problems)
        provenance = getattr(plan.report, "provenance", None) if getattr(plan, "report", None) else None
        planned_from = provenance.get("snapshot_sha256") if isinstance(provenance, dict) else None
        if planned_from and planned_from != snapshot_sha256(cluster):
            err_console.print(
                "warning: --snapshot is not the snapshot the plan was made from (report.provenance.snapshot_sha256 differs); "
                "the pods and nodes the plan touches match it",
                markup=False,
                soft_wrap=True,
            )
    emit_plan(plan, cluster, output_format, None, out_dir, force)
