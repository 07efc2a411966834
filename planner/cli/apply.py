"""The ``planner apply`` command: carry out a defrag or make-room plan on a live cluster through the Eviction
API, resumable, with a final report (table on standard output, JSON with ``--json``). The work is in
``planner/kube/apply*.py``; this module reads the plan, connects and prints."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer

from planner.bounded_input import DocumentError
from planner.cli.apply_progress import progress_log
from planner.cli.common import err_console, fail, guarded, stdout_console, write_json
from planner.cli.inputs import read_plan
from planner.kube.apply import abort, apply_plan
from planner.kube.apply_client import ApplyError, connect, connect_in_cluster
from planner.kube.apply_execute import ON_DRIFT, ApplyOptions
from planner.kube.apply_policy import ApplyPolicy, read_apply_policy
from planner.kube.apply_steer import DEFAULT_STEER, STEER_MODES
from planner.plans import DefragPlan
from planner.snapshot import read_text
from planner.textsafe import printable

VIA = ("eviction",)
POLICY_BYTES = 1 << 20
QUOTED = ' "='


def _log(event: str, **fields: Any) -> None:
    """One structured line per step on standard error: ``apply event=... key=value ...`` (values JSON-quoted
    when they hold a space or a quote)."""
    parts = [f"event={event}"]
    for key, value in fields.items():
        text = str(value)
        quoted = json.dumps(text) if (not text or any(c in text for c in QUOTED)) else text
        parts.append(f"{key}={quoted}")
    err_console.print(printable("apply " + " ".join(parts)), markup=False, highlight=False, soft_wrap=True)


def _table(result: dict[str, Any]) -> list[str]:
    lines = [
        f"plan {result['plan']}: {result['status']} (via {result['via']}, steer {result['steer']})",
        f"nodes vacated: {result['nodes_vacated']} of {result['nodes_vacated_planned']} planned (ratio {result['vacated_ratio']})",
        (
            f"moves done: {result['moves_done']} of {result['moves_planned']}; replacements on their target: {result['replacements_on_target']}, "
            f"elsewhere: {result['replacements_elsewhere']} (on-target share {result['on_target_share']})"
        ),
        f"PDB refusals met: {result['pdb_refusals']}; forced deletes: {result['forced_deletes']}; evictions: {result['evictions']}",
        f"time {result['time_s']:.1f} s: waiting for pods {result['wait_s']:.1f} s, executor's own {result['overhead_s']:.1f} s ({100 * result['overhead_share']:.1f}%)",
        "",
        f"{'wave':>4} {'moves':>5} {'done':>4} {'target':>6} {'else':>4} {'429s':>4} {'time s':>7} {'wait s':>7} {'own s':>6}",
    ]
    for w in result["waves"]:
        lines.append(
            f"{w['wave']:>4} {w['moves']:>5} {w['done']:>4} {w['on_target']:>6} {w['elsewhere']:>4} {w['pdb_refusals']:>4} {w['time_s']:>7.2f} {w['wait_s']:>7.2f} {w['overhead_s']:>6.2f}"
        )
    for replan in result.get("replans") or []:
        changes = replan["changes"]
        why = replan["why"][0] + (f" (and {len(replan['why']) - 1} more)" if len(replan["why"]) > 1 else "")
        lines.append(
            f"re-planned after wave {replan['after_wave']} ({replan['plan_s']:.1f} s) because {why}: {changes['moves_kept']} moves kept, "
            f"{len(changes['moves_dropped'])} dropped, {len(changes['moves_added'])} added; nodes to vacate {changes['vacated_planned_before']} -> "
            f"{changes['vacated_planned_now']} (lost: {', '.join(changes['vacated_lost']) or 'none'}; gained: {', '.join(changes['vacated_gained']) or 'none'})"
        )
    for node, pods in result["not_vacated"].items():
        lines.append(f"not vacated: {node} still holds {', '.join(pods)}")
    return lines


def _policy(path: str | None) -> ApplyPolicy:
    if path is None:
        return ApplyPolicy()
    try:
        return read_apply_policy(read_text(path, "--policy", POLICY_BYTES), path, ON_DRIFT, STEER_MODES)
    except DocumentError as err:
        fail(err.problems)


@guarded
def apply_command(
    plan_path: str = typer.Argument(..., metavar="PLAN", help="A defrag or make-room plan (JSON) made from this cluster."),
    kubeconfig: str = typer.Option(
        None, "--kubeconfig", metavar="FILE", help="kubeconfig of the cluster to change (default inside a pod: its own cluster, by its ServiceAccount)."
    ),
    context: str = typer.Option(None, "--context", help="Context of the kubeconfig (default: its current context)."),
    via: str = typer.Option("eviction", "--via", help="How pods move: eviction (the Eviction API, any cluster)."),
    steer: str = typer.Option(
        None,
        "--steer",
        help=(
            "fit: the nodes still to vacate tainted for the run, and the nodes a target's replacements also fit on only until they are bound; "
            "taint: every node but the open target for the whole run (nothing else schedules); sources: only the nodes still to vacate. "
            f"Default {DEFAULT_STEER}."
        ),
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the plan against the cluster and print what would be done; change nothing."),
    resume: bool = typer.Option(False, "--resume", help="Go on with the execution recorded in the cluster (nothing evicted twice)."),
    abort_run: bool = typer.Option(False, "--abort", help="Remove every taint, copy and state object runs of this plan created."),
    force_delete: bool = typer.Option(
        None, "--force-delete", help="When a PodDisruptionBudget still refuses an eviction at the wave's deadline, delete the pod (bypasses the budget)."
    ),
    on_drift: str = typer.Option(
        None,
        "--on-drift",
        help="After a wave, when the cluster differs from what the plan expects: stop (before the next wave, the differences listed; the default) or replan (the rest from the live cluster, same options).",
    ),
    policy: str = typer.Option(
        None, "--policy", metavar="FILE", help="An ApplyPolicy (apply: false keeps the plan and changes nothing; onDrift, steer, ...); flags win over it."
    ),
    state_namespace: str = typer.Option("default", "--state-namespace", help="Namespace of the state ConfigMap planner-apply-<plan id>."),
    wave_deadline_s: float = typer.Option(None, "--wave-deadline", min=1.0, help="Seconds a wave may take (PDB refusals are retried until then)."),
    json_out: str = typer.Option(None, "--json", metavar="FILE", help="Also write the report as JSON to FILE (- for standard output, instead of the table)."),
) -> None:
    """Carry out a defrag plan on a live cluster, wave by wave: bare pods copied to their target then evicted
    (make-before-break), pods of controllers evicted and their replacements steered to the target, PDB
    refusals retried until the wave's deadline; progress recorded in a ConfigMap so --resume evicts nothing
    twice. Exit 0 done, 1 stopped (drift, a wave's deadline), 2 bad input (kubeconfig, plan for another
    cluster, missing permission)."""
    rules = _policy(policy)
    if not rules.apply and not abort_run:
        err_console.print(f"{policy}: apply: false; the plan is kept and nothing is changed", markup=False, highlight=False)
        raise typer.Exit(0)
    steer = steer or rules.steer or DEFAULT_STEER
    on_drift = on_drift or rules.on_drift or "stop"
    wave_deadline_s = wave_deadline_s or rules.wave_deadline_s or 600.0
    force_delete = bool(force_delete if force_delete is not None else rules.force_delete)
    if via not in VIA:
        fail([f"--via: {via!r} is not supported here (supported: {', '.join(VIA)}); podmigrationjob: use `planner render PLAN -o podmigrationjob`"])
    if steer not in STEER_MODES:
        fail([f"--steer: {steer!r} is not one of {', '.join(STEER_MODES)}"])
    if on_drift not in ON_DRIFT:
        fail([f"--on-drift: {on_drift!r} is not one of {', '.join(ON_DRIFT)}"])
    if sum((dry_run, resume, abort_run)) > 1:
        fail(["--dry-run, --resume and --abort: give at most one"])
    plan = read_plan(plan_path)
    if not isinstance(plan, DefragPlan):
        fail([f"{plan_path}: a {getattr(plan, 'kind', 'comparison')} plan; apply carries out defrag and make-room plans only"])
    options = ApplyOptions(state_namespace, steer, dry_run, resume, force_delete, wave_deadline_s, on_drift=on_drift)
    try:
        kube = connect(kubeconfig, context) if kubeconfig else connect_in_cluster()
        with progress_log(_log) as log:
            result = abort(kube, plan, state_namespace, log) if abort_run else apply_plan(kube, plan, options, log)
    except ApplyError as err:
        if err.code == 0:
            err_console.print(err.problems[0], markup=False, highlight=False)
            raise typer.Exit(0) from None
        fail(err.problems, err.code)
    if json_out:
        write_json(result, json_out)
        if json_out == "-":
            return
    with stdout_console() as out:
        if abort_run or dry_run:
            for line in json.dumps(result, indent=2).splitlines():
                out.print(line, soft_wrap=True)
        else:
            for line in _table(result):
                out.print(line, soft_wrap=True)
    sys.stdout.flush()
