"""``planner render PLAN --snapshot SNAP -o FORMAT``: a plan written earlier (``--out``, ``planner plans
get``) in any output format, with the snapshot it was planned from; byte for byte what the planning
command printed (``--out FILE``: into that file, whose name the kubectl script's and the
PodMigrationJobs' headers then give). A snapshot the plan does not belong to is refused (exit 2)
naming the first pod or node that differs (``validate/belongs.py``).

A defrag plan written without UIDs (planned from a snapshot without them), rendered as a script or
PodMigrationJobs against a snapshot that has them, takes each pod's UID from the snapshot (``move_uids``)
and says so on stderr: the script's check then refuses a pod replaced since that snapshot. Pods with
no UID in either are named in a warning (the script can check only their node)."""

from __future__ import annotations

from typing import Any

import typer

from planner.cli.common import (
    InputKind,
    OutputFormat,
    emit,
    emit_plan,
    err_console,
    fail,
    guarded,
    import_config_option,
    input_option,
    load_input,
    out_dir_option,
    output_option,
    wrote,
)
from planner.cli.outdir import check_out_dir
from planner.cluster import Cluster
from planner.plans import DefragPlan, parse_plan
from planner.provenance import snapshot_sha256
from planner.render.formats import NEEDS_SNAPSHOT, refusals, render_text
from planner.render.kubernetes import snapshot_uids
from planner.snapshot import read_text

SCRIPT_FORMATS = ("kubectl", "podmigrationjob")
"""The formats that check or record each pod's UID."""


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
    out: str = typer.Option(
        None,
        "--out",
        help="Write what -o renders (JSON when -o is not given) to this file instead of standard output; a script's or the "
        "PodMigrationJobs' header names it. A symbolic link there is refused.",
    ),
    out_dir: str = out_dir_option(),
    force: bool = force_option(),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Render a plan written earlier: a table, JSON or YAML, a kubectl script, PodMigrationJobs
    (one file per wave with --out-dir) or a page, against the snapshot it was planned from."""
    fmt = output_format.value if output_format else None
    check_out_dir(fmt, out_dir, force)
    if out is not None and out_dir is not None:
        fail(["--out and --out-dir: give one (--out: one file in the -o format; --out-dir: PodMigrationJobs one file per wave)"])
    wanted = fmt or ("podmigrationjob" if out_dir else None)
    if snapshot is None and (wanted in NEEDS_SNAPSHOT or wanted == "html"):
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
            say(
                "warning: --snapshot is not the snapshot the plan was made from (report.provenance.snapshot_sha256 differs); the pods and nodes the plan touches match it"
            )
        if wanted in SCRIPT_FORMATS and isinstance(plan, DefragPlan):
            say_uids(plan, cluster)
    if out is None or out == "-":
        emit_plan(plan, cluster, output_format, None, out_dir, force)
        return
    to_file(plan, cluster, wanted or "json", out)


def say(line: str) -> None:
    err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def say_uids(plan: DefragPlan, cluster: Cluster) -> None:
    """On stderr: the pods whose UID the rendering takes from the snapshot, and those it has none for."""
    taken, unknown = snapshot_uids(plan, cluster)
    if taken:
        say(
            f"note: the plan records no UID for {len(taken)} pod(s) it moves ({shown(taken)}); their UIDs are taken from --snapshot, "
            "so the script refuses a pod replaced since that snapshot"
        )
    if unknown:
        say(
            f"warning: {len(unknown)} pod(s) the plan moves have no UID in the plan or --snapshot ({shown(unknown)}): the script checks their node only "
            "and cannot tell a replaced pod; render against a snapshot from planner import kubernetes"
        )


def shown(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def to_file(plan: Any, cluster: Cluster | None, fmt: str, out: str) -> None:
    """``--out FILE``: the plan in ``fmt`` written to ``out`` (never through a symbolic link to a file:
    ``outdir.open_out_file``); a script or PodMigrationJobs name the file in their header."""
    problems = refusals(plan, cluster, fmt, f"-o {fmt}")
    if problems:
        fail(problems)
    if fmt == "html":
        from planner.render.view import plan_view_html  # deferred: the view's modules, only with -o html

        assert cluster is not None, "checked: -o html needs --snapshot"
        text = plan_view_html(plan, cluster)
    else:
        text = render_text(plan, cluster, fmt, file_name=out)
    emit(text, out)
    wrote(out, f"the plan as {fmt}")
