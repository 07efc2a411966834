"""The ``planner export`` commands: snapshots as real inputs."""

from __future__ import annotations

import typer

from planner.cli.common import emit, err_console, guarded
from planner.cli.inputs import read_snapshot
from planner.snapshot import read_text

export_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Write a snapshot as the input of a real system.")


@export_app.command("kubernetes")
@guarded
def export_kubernetes_command(
    snapshot: str = typer.Argument(..., metavar="SNAPSHOT", help="Snapshot file (- for stdin)."),
    config: str = typer.Option(None, "--config", help="The import configuration the List is written for (YAML; planner import kubernetes --print-config)."),
    out: str = typer.Option("-", "--out", help="kubectl List file (- for stdout)."),
) -> None:
    """The snapshot as a `kubectl get nodes,pods,pdb -A -o json` List that `planner import kubernetes`
    reads back as the same snapshot (renamed jobs and groups aside). What Kubernetes objects do not
    carry (checkpoint times, NUMA, ...) is listed on stderr; GPU shares and standby pods exit 2.
    """
    # deferred: the Kubernetes importer and exporter (~45 ms at start-up), for this command only
    from planner.adapters.kubernetes_config import load_config
    from planner.adapters.kubernetes_export import export_kubernetes

    settings = load_config(read_text(config, "--config") if config else None, config or "config")
    exported = export_kubernetes(read_snapshot(snapshot, from_option=False), settings)  # a kubectl List is told so
    for line in exported.dropped:
        err_console.print(f"warning: {line}", markup=False, highlight=False, soft_wrap=True)
    emit(exported.json(), out)
