"""Run the service with uvicorn: settings from the command line and the environment.

Without ``PLANNER_API_TOKEN`` the service has no authentication, so it binds only to a loopback
address unless started with ``insecure=True``.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from typing import Any

from planner.api.app import Settings, create_app
from planner.api.logs import configure as configure_logs
from planner.runtime.ray_executor import serve_on_ray
from planner.runtime.tasks import default_workers
from planner.service.database import StoreURLError, check_url, database_url, error_reason
from planner.service.secrets import check_token, secret, source
from planner.service.store import Store

LOOPBACK_NAMES = {"localhost"}
SERVER_MEMORY_BYTES = 2 << 30
"""Kept for the server process itself (bodies being parsed, the fork server) when sharing memory out."""


def job_memory_bytes(concurrency: int, gib: float | None) -> int:
    """Each job's address-space cap: ``gib`` if given, else an equal share of the machine's memory
    after the server's own (at least 2 GiB)."""
    if gib is not None:
        if not gib > 0:
            raise ValueError(f"--max-job-memory-gib: must be above 0, got {gib:g}")
        return int(gib * 2**30)
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return max(2 << 30, (total - SERVER_MEMORY_BYTES) // max(1, concurrency))


def check_store(url: str, option: str) -> None:
    """Refuse to start on a store that cannot be opened or written (exit 2 with the reason)."""

    try:
        dialect = check_url(url)
    except StoreURLError as err:
        raise ValueError(f"{option}: {err}") from None
    try:
        store = Store(url)
        try:
            store.probe_write()
        finally:
            store.close()
    except Exception as err:  # noqa: BLE001 - any failure here is a setting to fix, said plainly
        reason = error_reason(err)
        fix = (
            "check that PostgreSQL runs at that host and port and that the user, password and database exist"
            if dialect == "postgresql"
            else "check the path, its permissions and free space"
        )
        raise ValueError(f"{option}: cannot write the job store ({reason}); {fix}") from None


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int | None = None,
    db: str = "planner.db",
    insecure: bool = False,
    max_queue: int = 64,
    max_body_mib: int = 64,
    max_job_s: float = 900.0,
    allow_force: bool = False,
    max_job_memory_gib: float | None = None,
    executor: str = "process",
    metrics_public: bool = False,
    log_format: str = "json",
    docs_public: bool = True,
    keep_days: float | None = None,
    lease_s: float = 30.0,
    body_timeout_s: float = 30.0,
    default_policies: dict[str, Any] | None = None,
) -> None:
    """Start the service (blocks). Raises ValueError for a setting that cannot be honoured."""
    import uvicorn  # deferred: uvicorn (the ASGI server), loaded only when the service starts

    db_url, db_setting = database_url(db)
    token = secret("PLANNER_API_TOKEN")
    read_token = secret("PLANNER_API_READ_TOKEN")
    for name, value in (("PLANNER_API_TOKEN", token), ("PLANNER_API_READ_TOKEN", read_token)):
        if value is not None:
            check_token(value, source(name))
    if read_token is not None and token is None:
        raise ValueError(
            "PLANNER_API_READ_TOKEN: a read-only token needs an admin token too; set PLANNER_API_TOKEN (without it the service has no authentication at all)"
        )
    if read_token is not None and read_token == token:
        raise ValueError("PLANNER_API_READ_TOKEN: must differ from PLANNER_API_TOKEN (a read-only token that can write is none)")
    if token is None and not is_loopback(host) and not insecure:
        raise ValueError(f"--host: refusing to serve on {host} without authentication; set PLANNER_API_TOKEN, bind to 127.0.0.1, or pass --insecure")
    concurrency = workers or default_workers()
    memory = job_memory_bytes(concurrency, max_job_memory_gib)
    settings = Settings(
        db_url=db_url,
        token=token,
        read_token=read_token,
        concurrency=concurrency,
        max_queue=max_queue,
        max_body_bytes=max_body_mib * 2**20,
        max_job_s=max_job_s,
        allow_force=allow_force,
        job_memory_bytes=memory,
        executor=executor,
        metrics_public=metrics_public,
        docs_public=docs_public,
        keep_days=keep_days,
        lease_s=lease_s,
        body_timeout_s=body_timeout_s,
        default_policies=default_policies or {},
    )
    check_store(settings.db_url, db_setting)
    configure_logs(log_format)
    if executor == "ray":
        address = serve_on_ray(workers)
        logging.getLogger("planner.api").info("defrag jobs run their pieces on Ray at %s", address)
    if token is None:
        logging.getLogger("planner.api").warning("PLANNER_API_TOKEN is not set: no authentication (%s)", host)
    app = create_app(settings)
    logging.getLogger("planner.api").info(
        "listening on http://%s:%d",
        host if ":" not in host else f"[{host}]",
        port,
        extra={"fields": {"host": host, "port": port, "workers": concurrency, "executor": executor}},
    )
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False, log_config=None)
