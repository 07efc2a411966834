"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` in a temporary directory,
``postgres`` on a free loopback port with trust authentication, fsync off; removed on ``stop``.

Uses the server binaries of Debian's ``postgresql`` package (``/usr/lib/postgresql/N/bin``) or any
``initdb``/``pg_ctl`` on the PATH. PostgreSQL refuses to run as root: as root the server runs as the
``postgres`` user (which the Debian package creates).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from tests.support.harness import free_port


def _binaries() -> tuple[str, str] | None:
    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        initdb, pg_ctl = Path(directory, "initdb"), Path(directory, "pg_ctl")
        if initdb.exists() and pg_ctl.exists():
            return str(initdb), str(pg_ctl)
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    return (initdb, pg_ctl) if initdb and pg_ctl else None


def unavailable_reason() -> str | None:
    """Why a throwaway server cannot be started here, or None."""
    if _binaries() is None:
        return "PostgreSQL server binaries (initdb, pg_ctl) not found; install Debian's postgresql package"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    return None


class ThrowawayPostgres:
    """``start()`` a private server; ``url(database)`` for SQLAlchemy; ``create_database()`` a fresh one."""

    def __init__(self) -> None:
        binaries = _binaries()
        if binaries is None:
            raise RuntimeError(unavailable_reason())
        self.initdb, self.pg_ctl = binaries
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="planner-pg-"))
        self.data = self.dir / "data"
        self.user = "postgres" if os.geteuid() == 0 else None

    def _run(self, *args: str) -> None:
        command = ["runuser", "-u", self.user, "--", *args] if self.user else list(args)
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> ThrowawayPostgres:
        if self.user:
            shutil.chown(self.dir, user=self.user)
        self._run(self.initdb, "-D", str(self.data), "--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.dir / "server.log"), "-w", "-t", "60", "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.data.exists():
            try:
                self._run(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except (RuntimeError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
