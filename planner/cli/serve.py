"""``planner serve``: the planning service (REST API, background solve jobs, plan store)."""

from __future__ import annotations

from enum import Enum

import typer

from planner.cli.choices import ServeExecutor
from planner.cli.common import fail, guarded
from planner.snapshot import read_text


class LogFormat(str, Enum):
    json = "json"
    text = "text"


@guarded
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback unless PLANNER_API_TOKEN is set or --insecure)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    workers: int = typer.Option(None, "--workers", min=1, max=256, help="Jobs solved at once, each in its own process (default: one per core)."),
    db: str = typer.Option(
        "planner.db", "--db", help="SQLite file for jobs and plans (DATABASE_URL, or the file DATABASE_URL_FILE names, overrides: PostgreSQL)."
    ),
    insecure: bool = typer.Option(False, "--insecure", help="Allow a non-loopback address without PLANNER_API_TOKEN."),
    max_queue: int = typer.Option(64, "--max-queue", min=1, max=1_000_000, help="Queued jobs beyond which requests get 429."),
    max_body_mib: int = typer.Option(64, "--max-body-mib", min=1, max=4096, help="Request body limit (413 above it)."),
    max_job_s: float = typer.Option(900.0, "--max-job-s", min=1.0, max=7 * 24 * 3600.0, help="Wall time after which a job is stopped and failed."),
    allow_force: bool = typer.Option(False, "--allow-force", help="Accept options.force (exact solves beyond the size limits)."),
    max_job_memory_gib: float = typer.Option(
        None, "--max-job-memory-gib", help="Memory cap of each job's process (default: an equal share of the machine's memory)."
    ),
    executor: ServeExecutor = typer.Option(
        ServeExecutor("process"),
        "--executor",
        help="Where a defrag job's pieces run: in the job's process, or as Ray tasks (RAY_ADDRESS when set, else a local Ray "
        "started with the server; needs the extra 'ray').",
    ),
    metrics_public: bool = typer.Option(
        False, "--metrics-public", help="Serve /metrics without a token (else it needs PLANNER_API_TOKEN or PLANNER_API_READ_TOKEN)."
    ),
    log_format: LogFormat = typer.Option(LogFormat.json, "--log-format", help="Logs on stderr: one JSON object per line, or text."),
    private_docs: bool = typer.Option(
        False, "--private-docs", help="Require the token for /docs, /redoc and /openapi.json too (public by default: they hold no data)."
    ),
    keep_days: float = typer.Option(
        None,
        "--keep-days",
        min=1e-6,
        max=36500.0,
        help="Purge finished jobs with their snapshots and plans this many days after they end (default: keep them).",
    ),
    lease_s: float = typer.Option(
        30.0,
        "--lease-s",
        min=1.0,
        max=3600.0,
        help="Replicas sharing a database: a running job's lease, renewed every third of it; when a replica dies, "
        "another takes its jobs over this long after its last renewal.",
    ),
    default_policy: str = typer.Option(
        None,
        "--default-policy",
        help="FILE: policy documents (YAML or JSON; a DefragPolicy, PreemptPolicy and AllocatePolicy, one of each at most) whose "
        "values apply to what a request leaves out; a request's options and policy override them.",
    ),
    body_timeout_s: float = typer.Option(
        30.0,
        "--body-timeout-s",
        min=1.0,
        max=3600.0,
        help="A request body must arrive within this many seconds, else 408 (a slow upload would hold the large-body slot).",
    ),
) -> None:
    """Run the planning service (REST API, background solve jobs, plan store)."""
    from planner.api.server import serve as run_server  # deferred: FastAPI, uvicorn and the store (~0.3 s), for this command only
    from planner.policy import PolicyError, default_policies  # deferred: PyYAML and the engine, for this command only

    policies: dict[str, object] = {}
    if default_policy is not None:
        try:
            policies = default_policies(read_text(default_policy, "--default-policy"), f"--default-policy {default_policy}")
        except PolicyError as err:
            fail(err.problems)
    try:
        run_server(
            host,
            port,
            workers,
            db,
            insecure,
            max_queue,
            max_body_mib,
            max_job_s,
            allow_force,
            max_job_memory_gib,
            executor.value,
            metrics_public,
            log_format.value,
            not private_docs,
            keep_days,
            lease_s,
            body_timeout_s,
            policies,
        )
    except ValueError as err:
        fail([str(err)])
