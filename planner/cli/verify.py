"""The ``planner verify`` command: a plan replayed on a Kubernetes control plane and judged by Kubernetes alone
(kube-scheduler, the API server and the Eviction API). By default a throwaway control plane is started on the List
in a temporary state directory and stopped after; ``--kubeconfig`` uses a running cluster instead, and changes it.
The replay is in ``planner/kube/verify*.py``; this module reads the plan, starts and stops, and prints."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import typer

from planner.cli.common import err_console, fail, guarded, stdout_console, write_json
from planner.cli.inputs import read_plan
from planner.kube.apply_client import ApplyError, connect
from planner.kube.controlplane import PROFILES, ControlPlaneError, start, stop
from planner.kube.verify import VerifyOptions, verify_plan
from planner.kube.verify_hold import Holds
from planner.kube.verify_plans import table
from planner.plans import dump_plan
from planner.textsafe import printable

QUOTED = ' "='


def _log(event: str, **fields: Any) -> None:
    """One line per step on standard error: ``verify event=... key=value ...``."""
    parts = [f"event={event}"]
    for key, value in fields.items():
        text = str(value)
        parts.append(f"{key}={json.dumps(text) if (not text or any(c in text for c in QUOTED)) else text}")
    err_console.print(printable("verify " + " ".join(parts)), markup=False, highlight=False, soft_wrap=True)


def _run_id(plan_text: str) -> str:
    """The label value tying a run's pods together: the plan's digest and the start time (two runs never share it)."""
    return hashlib.sha256(f"{plan_text}/{time.time_ns()}".encode()).hexdigest()[:12]


@guarded
def verify_command(
    plan_path: str = typer.Argument(..., metavar="PLAN", help="A defrag, make-room, preempt or allocate plan (JSON) made from the List."),
    list_path: str = typer.Option(None, "--from", metavar="LIST", help="The kubectl List the plan was made from: loaded into a throwaway control plane."),
    kubeconfig: str = typer.Option(
        None, "--kubeconfig", metavar="FILE", help="Instead of --from: a running cluster (one `planner controlplane up` started); verify changes it."
    ),
    context: str = typer.Option(None, "--context", help="With --kubeconfig: the context (default: its current one)."),
    profile: str = typer.Option("default", "--profile", help=f"With --from: the scheduler profile, {' or '.join(PROFILES)}."),
    timeout_s: float = typer.Option(120.0, "--timeout", min=1.0, help="Seconds one step (a wave, its evictions, the placements) may wait for Kubernetes."),
    json_out: str = typer.Option(None, "--json", metavar="FILE", help="Also write the report as JSON to FILE (- for standard output, instead of the table)."),
) -> None:
    """Replay a plan on Kubernetes and let Kubernetes judge it: each move's replacement pinned to its target and
    scheduled by kube-scheduler while the old pod runs, then the old pods evicted through the Eviction API (wave by
    wave); preemption victims evicted, then the job placed; every placement scheduled. Exit 0 all accepted, 1 any
    refused (each refusal with kube-scheduler's message or the API server's answer), 2 bad input (the plan is for
    another snapshot, the List is refused, the control plane binary is missing)."""
    if (list_path is None) == (kubeconfig is None):
        fail(["give --from LIST (a throwaway control plane loaded with it) or --kubeconfig FILE (a running cluster), one of them"])
    if profile not in PROFILES:
        fail([f"--profile: {profile!r} is not one of {', '.join(PROFILES)}"])
    if kubeconfig is not None and profile != "default":
        fail(["--profile: the running cluster's scheduler decides; give --profile only with --from"])
    plan = read_plan(plan_path)  # a plan of any kind; a comparison is refused by the reader (exit 2)
    run_id = _run_id(dump_plan(plan, indent=None))
    options = VerifyOptions(step_timeout_s=timeout_s)
    try:
        result = _run_throwaway(plan, list_path, profile, run_id, options) if list_path is not None else _run_on(plan, kubeconfig, context, run_id, options)
    except (ApplyError, ControlPlaneError) as err:
        fail(err.problems, err.code)
    if json_out:
        write_json(result, json_out)
    if json_out != "-":
        with stdout_console() as out:
            for line in table(result):
                out.print(line, soft_wrap=True, markup=False, highlight=False)
    sys.stdout.flush()
    if result["refused"]:
        raise typer.Exit(1)


def _run_throwaway(plan: Any, list_path: str, profile: str, run_id: str, options: VerifyOptions) -> dict[str, Any]:
    """Start a control plane on the List in a temporary directory, replay, stop it (whatever happens)."""
    base = Path(tempfile.mkdtemp(prefix="planner-verify-"))
    state_dir = base / "state"
    started = time.monotonic()
    try:
        running = start(list_path, state_dir, profile=profile)
        ready_s = time.monotonic() - started
        _log("controlplane-ready", server=running.server, seconds=round(ready_s, 1))
        kube = connect(str(running.kubeconfig), None)
        result = verify_plan(kube, plan, run_id, options, _log)
    finally:
        if state_dir.exists():
            stop(state_dir)
        shutil.rmtree(base, ignore_errors=True)
    cluster = {"server": running.server, "throwaway": True, "profile": profile, "ready_s": round(ready_s, 1), "nodes": running.ready.get("nodes")}
    return {**result, "cluster": cluster}


def _run_on(plan: Any, kubeconfig: str, context: str | None, run_id: str, options: VerifyOptions) -> dict[str, Any]:
    """Replay on a running cluster; the hold policy is removed and the pods it held released at the end."""
    kube = connect(kubeconfig, context)
    try:
        result = verify_plan(kube, plan, run_id, options, _log)
    finally:
        released = Holds(kube, run_id).release()
        _log("released", held_pods=released)
    return {**result, "cluster": {"server": kube.server, "throwaway": False, "context": kube.context}}
