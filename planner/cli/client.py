"""The service's command-line client, for cron and operators: ``planner submit`` (``submit.py``), ``planner jobs``
(a list; ``get|cancel|delete ID``) and ``planner plans`` (a list; ``get|delete ID``).

Exit codes (the same for every client command):

* 0: done (the plan written, the job shown, cancelled or deleted);
* 1: the plan came back with violations (``submit`` replays it against the snapshot it sent);
* 2: bad input (a malformed snapshot or URL, a request the server refused with 4xx, an unknown id);
* 4: the server is unavailable, or the client gave up: unreachable, a 5xx, 429/503 still answered
  when ``--wait`` ran out, or the job not finished within ``--wait``;
* 5: the job failed or was cancelled (its reason is printed).

Connection errors, 429 and 503 are retried with exponential backoff (0.5 s doubling, at most 30 s
between tries), honouring the server's ``Retry-After``, for as long as ``--wait`` allows. ``submit``
sends an ``Idempotency-Key`` (a fresh one when none is given), so a retried submission never plans twice.
"""

from __future__ import annotations

import email.utils
import os
import time
from typing import Any, Self

import typer

from planner.cli.common import OutputFormat, emit, err_console, fail, guarded, out_dir_option, stdout_console, write_json
from planner.cli.outdir import check_out_dir, write_wave_files
from planner.kinds import KINDS
from planner.render.kubernetes_waves import objects_of_stream
from planner.render.table import jobs_table, plans_table
from planner.service.secrets import check_token, secret, source

EXIT_UNAVAILABLE = 4
EXIT_JOB_FAILED = 5
RETRIED = (429, 503)
FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0
FINISHED = ("succeeded", "failed", "cancelled")

jobs_app = typer.Typer(help="Jobs of a running service (`planner jobs` lists them): get, cancel, delete.", no_args_is_help=False, rich_markup_mode=None)
plans_app = typer.Typer(help="Stored plans of a running service (`planner plans` lists them): get, delete.", no_args_is_help=False, rich_markup_mode=None)

SERVER = typer.Option(None, "--server", help="Service URL, e.g. http://planner:8000 (default: PLANNER_SERVER).")
TOKEN = typer.Option(None, "--token", help="Bearer token (default: PLANNER_API_TOKEN, or the file PLANNER_API_TOKEN_FILE names).")


def retry_after_s(value: str | None) -> float | None:
    """A ``Retry-After`` header as seconds from now: delay-seconds or an HTTP date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Client:
    """An HTTP client for the service that retries what can be retried until ``deadline`` (monotonic)."""

    def __init__(self, server: str | None, token: str | None, wait_s: float = 0.0):
        import httpx  # deferred: the HTTP client (~60 ms at start-up), for the client commands only

        server = server or os.environ.get("PLANNER_SERVER")
        if not server:
            fail(["--server: give the service's URL (or set PLANNER_SERVER), e.g. --server http://planner:8000"])
        try:
            parsed = httpx.URL(server)
        except (httpx.InvalidURL, ValueError, TypeError):
            parsed = None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
            fail([f"--server: {server!r} is not an http(s) URL of the service, e.g. http://planner:8000"])
        given = bool(token)
        try:
            if token:
                check_token(token, "--token")
            else:
                token = secret("PLANNER_API_TOKEN")
                if token is not None:
                    check_token(token, source("PLANNER_API_TOKEN"))
        except ValueError as err:
            fail([str(err)])
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.token_from = ("--token" if given else source("PLANNER_API_TOKEN")) if token else None
        self.base = server.rstrip("/")
        self.http = httpx.Client(base_url=self.base, headers=headers, timeout=httpx.Timeout(30.0, read=None))
        self.wait_s = wait_s
        self.deadline = time.monotonic() + wait_s
        self.attempts = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def send(self, method: str, url: str, **kwargs: Any) -> Any:
        """The response (2xx, or 404 for the caller to read); retried on connection errors, 429 and
        503 while the deadline allows; exit 4 when it does not, exit 2 on any other 4xx."""
        import httpx  # deferred: the HTTP client (as in __init__)

        delay = FIRST_DELAY_S
        while True:
            self.attempts += 1
            try:
                response = self.http.request(method, url, **kwargs)
            except httpx.HTTPError as err:
                problem, hinted = f"cannot reach {self.base}: {err}", None
            else:
                if response.status_code not in RETRIED:
                    return self._checked(response, self.token_from)
                problem = f"the server answered {response.status_code} ({_reason(response)})"
                hinted = retry_after_s(response.headers.get("retry-after"))
            pause = min(MAX_DELAY_S, hinted if hinted is not None else delay)
            if time.monotonic() + pause > self.deadline:
                tries = f"{self.attempts} attempt{'s' if self.attempts > 1 else ''}"
                fail([f"--server: {problem}; gave up after {tries} within --wait {self.wait_s:g} s"], EXIT_UNAVAILABLE)
            err_console.print(f"{problem}; retrying in {pause:.1f} s", markup=False, soft_wrap=True)  # for cron logs
            time.sleep(pause)
            delay = min(MAX_DELAY_S, delay * 2)

    @staticmethod
    def _checked(response: Any, token_from: str | None = None) -> Any:
        if response.status_code >= 500:
            fail([f"server error {response.status_code}: {response.text[:300]}"], EXIT_UNAVAILABLE)
        if response.status_code == 401:
            hint = (
                "no token was given: pass --token, or set PLANNER_API_TOKEN (or PLANNER_API_TOKEN_FILE, a file holding it)"
                if token_from is None
                else f"the token from {token_from} was refused: check it is the server's PLANNER_API_TOKEN (or its read token)"
            )
            fail([f"server refused the request (401): {_reason(response)}", hint])
        if response.status_code >= 400 and response.status_code != 404:
            fail([f"server refused the request ({response.status_code}): {_reason(response)}"])
        return response


def _reason(response: Any) -> str:
    try:
        body = response.json()
        return "; ".join([str(body.get("error"))] + [str(p) for p in body.get("problems", [])])
    except (ValueError, AttributeError):
        return response.text[:300]


def _found(response: Any, what: str) -> Any:
    """The JSON of a response that must exist; a 404 is bad input naming the id."""
    if response.status_code == 404:
        fail([f"{what}: {_reason(response)}"])
    return None if response.status_code == 204 else response.json()


# ----------------------------------------------------------------------------------------------
# waiting for a job (planner submit: submit.py)
# ----------------------------------------------------------------------------------------------


def wait_for(client: Client, job_id: str) -> dict[str, Any]:
    """Poll the job until it finishes (exit 5 if it failed or was cancelled) or --wait runs out (exit 4)."""
    while True:
        status = _found(client.send("GET", f"/v1/jobs/{job_id}"), f"job {job_id}")
        if status["status"] == "succeeded":
            return status
        if status["status"] in FINISHED:
            fail([f"job {job_id} {status['status']}: {status.get('error') or 'no reason given'}"], EXIT_JOB_FAILED)
        if time.monotonic() + 1.0 > client.deadline:
            fail(
                [(f"job {job_id} is still {status['status']} after --wait {client.wait_s:g} s; fetch its plan later with: planner plans get --job {job_id}")],
                EXIT_UNAVAILABLE,
            )
        time.sleep(1.0)


# ----------------------------------------------------------------------------------------------
# jobs
# ----------------------------------------------------------------------------------------------


def _list_jobs(server: str | None, token: str | None, status: str | None, limit: int, as_json: bool) -> None:
    with Client(server, token) as client:
        params: dict[str, Any] = {"limit": limit} | ({"status": status} if status else {})
        rows = client.send("GET", "/v1/jobs", params=params).json()
    if as_json:
        write_json(rows, "-")
        return
    with stdout_console() as console:
        console.print(jobs_table(rows, client.base))


@jobs_app.callback(invoke_without_command=True)
def jobs_default(
    context: typer.Context,
    server: str = SERVER,
    token: str = TOKEN,
    status: str = typer.Option(None, "--status", help="Only jobs with this status."),
    limit: int = typer.Option(20, "--limit", min=1, max=1000),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Without a subcommand: recent jobs, newest first, with their full ids."""
    if context.invoked_subcommand is None:
        guarded(_list_jobs)(server, token, status, limit, as_json)


@jobs_app.command("get")
@guarded
def jobs_get(job_id: str = typer.Argument(..., help="The job's id."), server: str = SERVER, token: str = TOKEN) -> None:
    """A job's status as JSON; exit 5 if it failed or was cancelled."""
    with Client(server, token) as client:
        status = _found(client.send("GET", f"/v1/jobs/{job_id}"), f"job {job_id}")
    write_json(status, "-")
    if status["status"] in ("failed", "cancelled"):
        raise typer.Exit(EXIT_JOB_FAILED)


@jobs_app.command("cancel")
@guarded
def jobs_cancel(job_id: str = typer.Argument(..., help="The job's id."), server: str = SERVER, token: str = TOKEN) -> None:
    """Cancel a queued or running job (a running solve is stopped)."""
    with Client(server, token) as client:
        status = _found(client.send("GET", f"/v1/jobs/{job_id}"), f"job {job_id}")
        if status["status"] in FINISHED:
            fail([f"job {job_id} already {status['status']}; nothing to cancel (planner jobs delete {job_id} removes it)"])
        write_json(_found(client.send("DELETE", f"/v1/jobs/{job_id}"), f"job {job_id}"), "-")


@jobs_app.command("delete")
@guarded
def jobs_delete(job_id: str = typer.Argument(..., help="The job's id."), server: str = SERVER, token: str = TOKEN) -> None:
    """Delete a finished job, its snapshot and its plan."""
    with Client(server, token) as client:
        status = _found(client.send("GET", f"/v1/jobs/{job_id}"), f"job {job_id}")
        if status["status"] not in FINISHED:
            fail([f"job {job_id} is {status['status']}; cancel it first (planner jobs cancel {job_id})"])
        _found(client.send("DELETE", f"/v1/jobs/{job_id}"), f"job {job_id}")
    err_console.print(f"job {job_id} deleted", markup=False, soft_wrap=True)


# ----------------------------------------------------------------------------------------------
# plans
# ----------------------------------------------------------------------------------------------


def _list_plans(server: str | None, token: str | None, kind: str | None, since: float | None, limit: int, as_json: bool) -> None:
    with Client(server, token) as client:
        params: dict[str, Any] = {"limit": limit} | ({"kind": kind} if kind else {}) | ({"since": since} if since is not None else {})
        rows = client.send("GET", "/v1/plans", params=params).json()["plans"]
    if as_json:
        write_json(rows, "-")
        return
    with stdout_console() as console:
        console.print(plans_table(rows, client.base))


@plans_app.callback(invoke_without_command=True)
def plans_default(
    context: typer.Context,
    server: str = SERVER,
    token: str = TOKEN,
    kind: str = typer.Option(None, "--kind", help=f"Only plans of this kind ({', '.join(KINDS)})."),
    since: float = typer.Option(None, "--since", help="Only plans created at or after this Unix time."),
    limit: int = typer.Option(20, "--limit", min=1, max=1000),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Without a subcommand: stored plans, newest first, with their full ids."""
    if context.invoked_subcommand is None:
        guarded(_list_plans)(server, token, kind, since, limit, as_json)


@plans_app.command("get")
@guarded
def plans_get(
    plan_id: str = typer.Argument(None, help="The plan's id (or give --job)."),
    job: str = typer.Option(None, "--job", help="The plan of this job instead."),
    server: str = SERVER,
    token: str = TOKEN,
    out: str = typer.Option("-", "--out", help="Write the plan (or what -o renders) here (- for stdout)."),
    output_format: OutputFormat = typer.Option(
        None, "--output", "-o", help="json (default): the plan; yaml, table, wide, kubectl, podmigrationjob: rendered by the service with the plan's snapshot."
    ),
    out_dir: str = out_dir_option(),
    force: bool = typer.Option(False, "--force", help="With --out-dir: write into a directory that is not empty (the planner's files there are replaced)."),
) -> None:
    """A stored plan (the plan document itself, as `planner defrag --out` writes it), or rendered
    as `planner defrag -o` prints it (-o kubectl, podmigrationjob, ...; --out-dir: one file per wave)."""
    if (plan_id is None) == (job is None):
        fail(["give a PLAN_ID or --job JOB_ID (one of them)"])
    fmt = output_format.value if output_format else ("podmigrationjob" if out_dir else "json")
    check_out_dir(fmt, out_dir, force)
    with Client(server, token) as client:
        if fmt != "json":
            if job is not None:
                plan_id = _found(client.send("GET", f"/v1/jobs/{job}"), f"--job {job}")["plan_id"]
                if plan_id is None:
                    fail([f"--job {job}: the job has no plan (yet)"])
            response = client.send("GET", f"/v1/plans/{plan_id}", params={"format": fmt})
            if response.status_code == 404:
                _found(response, f"plan {plan_id}")
            if out_dir is not None:
                written = write_wave_files(objects_of_stream(response.text), out_dir, force)
                err_console.print(f"wrote {', '.join(written)} to {out_dir}", markup=False, soft_wrap=True)
            else:
                emit(response.text, out)
            return
        if job is not None:
            body = _found(client.send("GET", f"/v1/jobs/{job}/plan"), f"--job {job}")
        else:
            body = _found(client.send("GET", f"/v1/plans/{plan_id}"), f"plan {plan_id}")["plan"]
    write_json(body, out)


@plans_app.command("delete")
@guarded
def plans_delete(plan_id: str = typer.Argument(..., help="The plan's id."), server: str = SERVER, token: str = TOKEN) -> None:
    """Delete a stored plan."""
    with Client(server, token) as client:
        _found(client.send("DELETE", f"/v1/plans/{plan_id}"), f"plan {plan_id}")
    err_console.print(f"plan {plan_id} deleted", markup=False, soft_wrap=True)
