"""The ``planner import`` commands: snapshots from real traces."""

from __future__ import annotations

import typer

from planner.cli.common import emit, err_console, guarded, print_warnings
from planner.cluster import SnapshotError
from planner.snapshot import dump_cluster, read_text
from planner.textsafe import printable

import_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Import a snapshot from a real trace.")


@import_app.command("asi2026")
@guarded
def import_asi2026_command(
    directory: str = typer.Argument(..., metavar="DIR", help="Directory holding asi_opensource_server_hourly and asi_opensource_pod_hourly (Parquet)."),
    day: int = typer.Option(..., "--day", min=0, help="Day of the slice (day=0 is the trace's first day)."),
    hour: int = typer.Option(..., "--hour", min=0, max=23, help="Hour of the slice, 0 to 23."),
    out: str = typer.Option("-", "--out", help="Snapshot file (- for stdout, the summary then goes to stderr)."),
) -> None:
    """One hour of the ASI 2026 trace (cluster-trace-gpu-v2026) as a snapshot.

    Servers become nodes under their access switch (one spine per cluster, no memory: the trace has
    none); Running and Standby pods are placed, Pending pods are pending, finished pods are skipped.
    """
    from planner.adapters.asi2026 import import_asi2026  # deferred: pyarrow's Parquet reader (~0.2 s), for this command only

    imported = import_asi2026(directory, day, hour)
    emit(dump_cluster(imported.cluster) + "\n", out)
    s = imported.summary
    skipped = ", ".join(f"{count} {reason}" for reason, count in s.skipped.items())
    lines = [
        (
            f"asi2026 day={s.day} hour={s.hour}: {s.nodes} nodes under {s.switches} access switches "
            f"({s.nodes_without_switch} without one) in {s.clusters} cluster(s)"
        ),
        f"pods: {s.placed_pods} placed ({s.standby_pods} on standby), {s.pending_pods} pending, in {s.jobs} job(s)",
        f"skipped pods: {skipped}",
    ]
    _print_summary(lines, out)


@import_app.command("kubernetes")
@guarded
def import_kubernetes_command(
    files: list[str] = typer.Argument(None, metavar="FILE...", help="kubectl get nodes,pods,pdb -A -o json output (JSON or YAML; several files, - for stdin)."),
    config: str = typer.Option(None, "--config", help="Import configuration (YAML); see --print-config."),
    out: str = typer.Option("-", "--out", help="Snapshot file (- for stdout, the summary then goes to stderr)."),
    print_config: bool = typer.Option(False, "--print-config", help="Print the default configuration and exit."),
) -> None:
    """A snapshot from Kubernetes Nodes, Pods and PodDisruptionBudgets.

    Allocatable CPUs, memory and GPUs; requests as the scheduler computes them; taints, tolerations,
    node affinity, selectors and hostname anti-affinity; jobs from controllers and gang labels;
    budgets from PDBs; pods kube-descheduler would not evict are locked. Warnings go to stderr.
    """
    # deferred: the importer (~35 ms at start-up)
    from planner.adapters.kubernetes import import_kubernetes
    from planner.adapters.kubernetes_config import DEFAULT_CONFIG, load_config

    if print_config:
        emit(DEFAULT_CONFIG, "-")
        return
    if not files:
        raise SnapshotError(["FILE: give at least one file (kubectl get nodes,pods,pdb -A -o json > cluster.json), or - for stdin"])
    if files.count("-") > 1:
        raise SnapshotError(["FILE: '-' (stdin) may be given once"])
    settings = load_config(read_text(config, "--config") if config else None, config or "config")
    imported = import_kubernetes([(read_text(f, "FILE"), "stdin" if f == "-" else f) for f in files], settings)
    print_warnings(imported.warnings)
    emit(dump_cluster(imported.cluster) + "\n", out)
    s = imported.summary
    locked = ", ".join(f"{count} {reason}" for reason, count in s.locked.most_common()) or "none"
    skipped = ", ".join(f"{count} {reason}" for reason, count in sorted(s.skipped.items())) or "none"
    lines = [
        (
            f"kubernetes: {s.nodes} nodes; pods: {s.placed_pods} placed, {s.pending_pods} pending, in {s.jobs} job(s); "
            f"{s.budgets} disruption budget(s) applied; {s.reserved} DaemonSet/mirror/static pod(s) reserved on their nodes"
        ),
        f"locked pods: {locked}",
        f"skipped: {skipped}; {len(imported.warnings)} warning(s)",
    ]
    _print_summary(lines, out)


def _print_summary(lines: list[str], out: str) -> None:
    """An import's summary: on stdout, or on stderr when the snapshot went to stdout."""
    text = "".join(printable(line) + "\n" for line in lines)  # counts by reason: kinds and keys come from the input
    if out == "-":
        err_console.print(text, end="", markup=False, highlight=False, soft_wrap=True)
    else:
        emit(text, "-")
