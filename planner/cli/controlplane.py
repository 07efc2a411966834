"""The ``planner controlplane`` commands: a throwaway Kubernetes control plane (kube-apiserver, etcd,
kube-scheduler, the controllers plans depend on and a node simulator, built from ``controlplane/``) on
127.0.0.1, loaded with a kubectl List, for judging plans with Kubernetes itself."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import typer

from planner.cli.common import err_console, fail, guarded, stdout_console
from planner.kube.controlplane import PROFILES, ControlPlaneError, default_state_dir, start, stop

controlplane_app = typer.Typer(no_args_is_help=True, help="A throwaway Kubernetes control plane on this machine (127.0.0.1 only).")

STATE_DIR_HELP = "The control plane's state directory (etcd data, certificates, kubeconfig, log); default ~/.cache/planner-controlplane/run/default."


@controlplane_app.command("up")
@guarded
def up_command(
    list_path: str = typer.Option(
        ..., "--from", metavar="LIST", help="kubectl List (JSON or YAML) to load: nodes, pods, budgets, priority classes, workload owners, DRA objects."
    ),
    profile: str = typer.Option("default", "--profile", help=f"Scheduler profile: {' or '.join(PROFILES)} (NodeResourcesFit MostAllocated)."),
    kubeconfig_out: str = typer.Option(None, "--kubeconfig-out", metavar="FILE", help="Also write the kubeconfig to FILE (0600)."),
    state_dir: str = typer.Option(None, "--state-dir", metavar="DIR", help=STATE_DIR_HELP),
    port: int = typer.Option(0, "--port", min=0, max=65535, help="API server port on 127.0.0.1 (0: any free port; a port in use: another one)."),
    timeout_s: float = typer.Option(600.0, "--timeout", min=1.0, help="Seconds to wait for the loaded cluster to settle."),
) -> None:
    """Start the control plane in the background on the List and print the kubeconfig's path once
    every node is Ready, every bound pod Running and every PodDisruptionBudget computed. Pending pods
    are held by the scheduling gate planner.io/hold. Stop it with `planner controlplane down`."""
    directory = Path(state_dir) if state_dir else default_state_dir()
    try:
        running = start(list_path, directory.absolute(), profile=profile, port=port, timeout_s=timeout_s)
    except ControlPlaneError as err:
        fail(err.problems, err.code)
    kubeconfig = running.kubeconfig
    if kubeconfig_out:
        shutil.copyfile(kubeconfig, kubeconfig_out)
        os.chmod(kubeconfig_out, 0o600)
        kubeconfig = Path(kubeconfig_out)
    ready = running.ready
    load = ready.get("load") or {}
    err_console.print(
        f"control plane ready at {running.server} (pid {running.pid}) in {ready.get('readySeconds', 0):.1f} s: "
        f"{ready.get('nodes')} nodes Ready, {ready.get('runningPods')} pods Running, {ready.get('pdbs')} PodDisruptionBudgets",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    if ready.get("portWasInUse"):
        err_console.print(
            f"note: port {ready.get('requestedPort')} was in use; the API server listens on {ready.get('apiserverPort')}", markup=False, highlight=False
        )
    for kind, count in sorted((load.get("skipped") or {}).items()):
        err_console.print(f"note: {count} {kind} object(s) not loaded (a kind this control plane does not serve)", markup=False, highlight=False)
    for kind, names in sorted((load.get("derived") or {}).items()):
        err_console.print(
            f"note: {len(names)} {kind}(s) the List lacks created because its objects name them: {', '.join(names[:10])}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if load.get("ownerReferencesDropped"):
        err_console.print(
            f"note: {load['ownerReferencesDropped']} owner reference(s) to owners not in the List dropped (kept in the annotation planner.io/source-owner-references)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    with stdout_console() as out:
        out.print(str(kubeconfig), soft_wrap=True)


@controlplane_app.command("down")
@guarded
def down_command(state_dir: str = typer.Option(None, "--state-dir", metavar="DIR", help=STATE_DIR_HELP)) -> None:
    """Stop the control plane and remove its state directory."""
    directory = Path(state_dir) if state_dir else default_state_dir()
    try:
        was_running = stop(directory.absolute())
    except ControlPlaneError as err:
        fail(err.problems, err.code)
    err_console.print(
        "control plane stopped and its state removed" if was_running else f"no control plane ran from {directory}; its state (if any) removed",
        markup=False,
        highlight=False,
    )
