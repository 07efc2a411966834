"""``planner submit defrag|preempt|allocate SNAPSHOT [options]``: a planning job sent to a running
service, with every option of the local command (``planner defrag``, ``preempt``, ``allocate``) but
the ones that say where this machine runs it (``LOCAL_ONLY``), ``--from kubernetes`` (imported here,
the snapshot sent) and ``--policy FILE`` (sent as the request's ``policy``; the flags given as its
``options``). The flags are the local command's own (the commands are built from its signature), read
into the kind's options model by its ``option_values`` and checked here as the local command checks
them before anything is sent; the service checks them again with the same model.

``planner submit SNAPSHOT [options]`` (no kind; the form before kinds) still submits a defrag job.
Exit codes: see ``client``.
"""

from __future__ import annotations

import inspect
import json
import typing
import uuid
from collections.abc import Callable
from typing import Any

import typer
from pydantic import ValidationError
from typer.core import TyperGroup

from planner.cli import allocate, defrag, preempt
from planner.cli.client import EXIT_UNAVAILABLE, SERVER, TOKEN, Client, wait_for
from planner.cli.common import (
    EXIT_VIOLATIONS,
    emit,
    emit_plan,
    err_console,
    fail,
    given_flags,
    guarded,
    load_input,
    options_with_policy,
    read_policy,
)
from planner.cluster import SnapshotError
from planner.engine.allocate_options import AllocateOptions
from planner.engine.defrag import DefragOptions
from planner.engine.preempt import PreemptOptions
from planner.kinds import KINDS as PLAN_KINDS
from planner.plans import parse_plan
from planner.snapshot import cluster_to_dict
from planner.validate import validate_plan


class SubmitGroup(TyperGroup):
    """``planner submit``'s kinds; arguments that name no kind (``planner submit SNAP --method
    hybrid``, the form before kinds) are a defrag job's."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: typer's own click Context (typer._click, private)
        if args and not {"--help", "-h"} & set(args) and not set(self.commands) & set(args):
            args = ["defrag", *args]
        return super().parse_args(ctx, args)


submit_app = typer.Typer(
    cls=SubmitGroup,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Submit a planning job to a running service (for cron), with the options of the local command; "
    "with --wait, fetch the plan and check it. Exit 0 done, 1 the plan has violations, 2 bad input, "
    "4 server unavailable or gave up, 5 the job failed.",
)


LOCAL_ONLY: dict[str, dict[str, str]] = {
    "defrag": {
        "workers": "where this machine runs partitions; the service runs each job in one process (planner serve --workers sets jobs at once)",
        "executor": "where this machine runs partitions; the service's is planner serve --executor",
    },
    "preempt": {},
    "allocate": {},
}
"""Options of the local commands that ``submit`` does not take, and why (the service refuses them too)."""

CLI_ONLY = {
    "context": "typer's context",
    "snapshot": "the request's snapshot",
    "out": "where the plan is written (here, not on the server)",
    "output_format": "how the plan is printed (here, not on the server)",
    "out_dir": "where -o podmigrationjob writes its wave files (here, not on the server)",
    "source": "--from: read here; the snapshot is sent",
    "import_config": "--import-config: the import runs here",
    "policy": "sent as the request's policy document",
    "job": "the request's job (preempt)",
    "reactivate": "the request's reactivate (preempt)",
}
"""Parameters of the local commands that are not options fields, and what becomes of them in a request."""

KINDS: dict[str, tuple[Callable[..., Any], Callable[[dict[str, Any]], dict[str, Any]], type]] = {
    "defrag": (defrag.defrag, defrag.option_values, DefragOptions),
    "preempt": (preempt.preempt, preempt.option_values, PreemptOptions),
    "allocate": (allocate.allocate, allocate.option_values, AllocateOptions),
}
"""Per kind: the local command, its flags -> options fields, and its options model."""


def _client_parameters() -> list[inspect.Parameter]:
    def option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=annotation)

    return [
        option("server", str, SERVER),
        option("token", str, TOKEN),
        option("wait", float, typer.Option(0.0, "--wait", min=0.0, help="Seconds to retry, wait for the plan and fetch it (0: one try, print the job id).")),
        option(
            "idempotency_key",
            str,
            typer.Option(None, "--idempotency-key", help="Same key, same job: a cron run retried never plans twice (default: a fresh key per run)."),
        ),
    ]


def submit_command(kind: str) -> Callable[..., Any]:
    """``planner submit KIND``: the local command's parameters (less ``LOCAL_ONLY``) and the client's."""
    local, _, _ = KINDS[kind]
    hints = typing.get_type_hints(local)
    kept = [p.replace(annotation=hints[p.name]) for p in inspect.signature(local).parameters.values() if p.name not in LOCAL_ONLY[kind]]
    parameters = kept + _client_parameters()

    def command(**flags: Any) -> None:
        submit(kind, flags)

    command.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]  # typer reads it; typeshed's functions declare none
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    command.__name__ = f"submit_{kind}"
    command.__doc__ = (
        f"Submit {'an' if kind[0] in 'aeiou' else 'a'} {kind} job to a running service: the options of planner {kind} (see its --help), checked here and by the server "
        "with the same model; with --wait, fetch the plan and check it.\n\n"
        "Exit 0 done, 1 the plan has violations, 2 bad input, 4 server unavailable or gave up, 5 the job failed."
    )
    return guarded(command)


def request_body(kind: str, flags: dict[str, Any]) -> dict[str, Any]:
    """The request ``planner submit KIND`` sends, but its snapshot: the flags given as ``options``,
    the policy file as ``policy`` (and a preempt job's ``job`` or ``reactivate``); checked first as the
    local command checks them (exit 2), before anything is read or sent."""
    local, option_values, model = KINDS[kind]
    context = flags["context"]
    parameters = inspect.signature(local).parameters
    flags = {**{name: parameters[name].default.default for name in LOCAL_ONLY[kind]}, **flags}  # never given: at their defaults
    if kind == "preempt":
        preempt.check_target(flags["job"], flags["reactivate"])
    values = option_values(flags)
    document = None if flags["policy"] is None else read_policy(flags["policy"])  # read once: it may be standard input
    options_with_policy(context, model, kind, values, flags["policy"], document)
    body: dict[str, Any] = {"options": given_flags(context, values)}
    if document is not None:
        body["policy"] = document
    if kind == "preempt":
        body.update({key: flags[key] for key in ("job", "reactivate") if flags[key] is not None})
    return body


def submit(kind: str, flags: dict[str, Any]) -> None:
    """Send the job, and with ``--wait`` fetch its plan, print it (JSON, or as ``-o`` asks) and replay it on the snapshot sent."""
    body = request_body(kind, flags)
    cluster = load_input(flags["snapshot"], flags["source"], flags["import_config"])
    body["snapshot"] = cluster_to_dict(cluster)
    wait = flags["wait"]
    key = flags["idempotency_key"] or f"submit-{uuid.uuid4().hex}"
    with Client(flags["server"], flags["token"], wait) as client:
        params = {"wait": min(wait, 600.0)} if wait else {}
        response = client.send("POST", f"/v1/{kind}", json=body, headers={"Idempotency-Key": key}, params=params)
        job_id = response.headers.get("x-job-id", "")
        if response.status_code == 202:
            job_id = response.json()["job_id"]
            if not wait:
                emit(json.dumps(response.json()) + "\n", "-")
                return
            status = wait_for(client, job_id)
            response = client.send("GET", f"/v1/jobs/{job_id}/plan")
            if response.status_code == 404:
                fail([f"job {job_id} is {status['status']} but has no plan"], EXIT_UNAVAILABLE)
        plan = response.json()
    violations = replay(cluster, plan)
    out, output_format = flags["out"], flags["output_format"]
    if output_format is None and flags.get("out_dir") is None:
        emit(json.dumps(plan, indent=2) + "\n", out or "-")
    else:
        emit_plan(plan_model(kind, plan), cluster, output_format, out, flags.get("out_dir"))
    where = f" written to {out}" if out and out != "-" else ""
    err_console.print(f"plan of job {job_id}{where}", markup=False, soft_wrap=True)
    if violations:
        fail([f"the plan of job {job_id} does not replay on the snapshot sent: {v}" for v in violations[:20]], EXIT_VIOLATIONS)


def replay(cluster: Any, plan: dict[str, Any]) -> list[str]:
    """The violations of a returned plan of any kind (or of both plans of a comparison) on ``cluster``."""
    plans = [plan[key] for key in ("heuristic", "greedy", "exact") if key in plan] if str(plan.get("kind", "")).endswith("-compare") else [plan]
    try:
        return [str(v) for p in plans for v in validate_plan(cluster, parse_plan(json.dumps(p), source="the server's plan"))]
    except SnapshotError as err:
        return err.problems


def plan_model(kind: str, plan: dict[str, Any]) -> Any:
    """The returned plan as its model (a comparison's, or the kind's plan), for ``-o``."""
    model = PLAN_KINDS[kind].comparison_model if str(plan.get("kind", "")).endswith("-compare") else PLAN_KINDS[kind].plan_model
    try:
        return model.model_validate(plan)
    except ValidationError as err:
        raise SnapshotError([f"the server's plan: {e['loc']}: {e['msg']}" for e in err.errors()[:10]]) from None


for _kind in KINDS:
    submit_app.command(_kind)(submit_command(_kind))
