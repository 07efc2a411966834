"""A real planner service in a subprocess (uvicorn, a real SQLite file): for tests, benchmarks and
integration checks of deployments."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

PLANNER = str(Path(sys.executable).with_name("planner"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``planner serve`` on a free loopback port; ``client()`` talks to it."""

    def __init__(self, db: Path, token: str | None = None, *args: str, env: dict[str, str] | None = None):
        self.db = db
        self.token = token
        self.env = env or {}
        self.args = list(args)
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.log = db.with_suffix(".log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 180.0) -> Server:
        """Start the server and wait for ``/readyz`` (generous: on a loaded machine the store, the fork
        server and the checker processes take many times their quiet 2-3 s)."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k
            not in ("PLANNER_API_TOKEN", "PLANNER_API_READ_TOKEN", "DATABASE_URL", "DATABASE_URL_FILE", "PLANNER_API_TOKEN_FILE", "PLANNER_API_READ_TOKEN_FILE")
        }
        if self.token:
            env["PLANNER_API_TOKEN"] = self.token
        env.update(self.env)
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [PLANNER, "serve", "--port", str(self.port), "--db", str(self.db), *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"server not ready in {timeout_s} s: {self.log.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL the server and everything it started (workers, fork server)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def client(self, token: str | None = "default") -> httpx.Client:
        token = self.token if token == "default" else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0)

    def descendants(self) -> list[int]:
        """PIDs of every process below the server (fork server, resource tracker, job workers)."""
        children = _process_children()
        out, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            for child in children.get(pid, []):
                out.append(child)
                todo.append(child)
        return out

    def job_workers(self, timeout_s: float = 120.0) -> list[int]:
        """PIDs of the job worker processes, waiting up to `timeout_s` for at least one to exist.

        Workers are the fork server's children: processes two levels below the server (its direct
        children are the fork server and the resource tracker). A job is marked running when it is
        claimed, which can be before its worker exists (the fork server may still be importing).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            children = _process_children()
            workers = [pid for child in children.get(self.process.pid, []) for pid in children.get(child, [])]
            if workers or time.monotonic() > deadline:
                return workers
            time.sleep(0.05)


def _process_children() -> dict[int, list[int]]:
    """Every live process's children, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    return children


WAIT_S = 180.0
"""The default deadline for a job or process condition in the service tests: generous, never what a quiet
machine needs (tests run beside other work; a fixed sleep or a tight deadline fails there)."""


def wait_status(client: httpx.Client, job_id: str, statuses: tuple[str, ...], timeout_s: float = WAIT_S) -> dict:
    """The job's status once it is one of ``statuses``; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = client.get(f"/v1/jobs/{job_id}").json()
        if body["status"] in statuses:
            return body
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} never reached {statuses} in {timeout_s:g} s: {body}")


def wait_until(condition: Callable[[], Any], timeout_s: float = WAIT_S, interval_s: float = 0.1) -> Any:
    """``condition()``'s first true value, polled until ``timeout_s``; the last (false) value after it."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval_s)


def rss_mib(pid: int) -> float:
    """Resident memory of one process (MiB)."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
