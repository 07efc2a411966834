"""Run the service with uvicorn: settings from the command line and the environment.

Without ``PLANNER_API_TOKEN`` the service has no authentication, so it binds only to a loopback
address unless started with ``insecure=True``.
"""

from __future__ import annotations

import ipaddress
import logging
import os

from planner.api.app import Settings, create_app
from planner.store import sqlite_url

LOOPBACK_NAMES = {"localhost"}


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
) -> None:
    """Start the service (blocks). Raises ValueError for a setting that cannot be honoured."""
    import uvicorn

    from planner.executors import default_workers

    token = os.environ.get("PLANNER_API_TOKEN") or None
    if token is None and not is_loopback(host) and not insecure:
        raise ValueError(
            f"--host: refusing to serve on {host} without authentication; set PLANNER_API_TOKEN, "
            "bind to 127.0.0.1, or pass --insecure"
        )
    settings = Settings(
        db_url=os.environ.get("DATABASE_URL") or sqlite_url(db),
        token=token,
        concurrency=workers or default_workers(),
        max_queue=max_queue,
        max_body_bytes=max_body_mib * 2**20,
        max_job_s=max_job_s,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if token is None:
        logging.getLogger("planner.api").warning("PLANNER_API_TOKEN is not set: no authentication (%s)", host)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", access_log=False)
