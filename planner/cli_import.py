"""The ``planner import`` commands: snapshots from real traces."""

from __future__ import annotations

import typer

from planner.cli import _emit, app, err_console, guarded

import_app = typer.Typer(no_args_is_help=True, help="Import a snapshot from a real trace.")
app.add_typer(import_app, name="import")


@import_app.command("asi2026")
@guarded
def import_asi2026_command(
    directory: str = typer.Argument(
        ..., metavar="DIR", help="Directory holding asi_opensource_server_hourly and asi_opensource_pod_hourly (Parquet)."
    ),
    day: int = typer.Option(..., "--day", min=0, help="Day of the slice (day=0 is the trace's first day)."),
    hour: int = typer.Option(..., "--hour", min=0, max=23, help="Hour of the slice, 0 to 23."),
    out: str = typer.Option("-", "--out", help="Snapshot file (- for stdout, the summary then goes to stderr)."),
) -> None:
    """One hour of the ASI 2026 trace (cluster-trace-gpu-v2026) as a snapshot.

    Servers become nodes under their access switch (one spine per cluster, no memory: the trace has
    none); Running and Standby pods are placed, Pending pods are pending, finished pods are skipped.
    """
    from planner.adapters.asi2026 import import_asi2026
    from planner.snapshot import dump_cluster

    imported = import_asi2026(directory, day, hour)
    _emit(dump_cluster(imported.cluster) + "\n", out)
    s = imported.summary
    skipped = ", ".join(f"{count} {reason}" for reason, count in s.skipped.items())
    lines = [
        f"asi2026 day={s.day} hour={s.hour}: {s.nodes} nodes under {s.switches} access switches "
        f"({s.nodes_without_switch} without one) in {s.clusters} cluster(s)",
        f"pods: {s.placed_pods} placed ({s.standby_pods} on standby), {s.pending_pods} pending, in {s.jobs} job(s)",
        f"skipped pods: {skipped}",
    ]
    text = "".join(line + "\n" for line in lines)
    if out == "-":
        err_console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
    else:
        _emit(text, "-")
