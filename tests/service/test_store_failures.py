"""The service when its store cannot write: a full disk while jobs run and while requests arrive, and
a read-only store at start-up. Every job still ends succeeded or failed, readiness says the store
cannot write, and the server recovers without a restart once the store can write again.

The store lives on a small tmpfs mounted for the test (needs root and permission to mount; skipped
with the reason otherwise). A file system cannot be remounted read-only under an open SQLite
database (the kernel refuses while files are open for writing), so read-only is tested at start-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planner.snapshot import cluster_to_dict
from tests.support.harness import PLANNER, Server, wait_status


def _mount(point: Path, size: str) -> str | None:
    """Mount a tmpfs at ``point``; the reason it could not be, or None."""
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True, text=True)
    return None if done.returncode == 0 else f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "disk"
    reason = _mount(point, "48m")
    if reason:
        pytest.skip(reason)
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


def _remount(point: Path, mode: str) -> None:
    """Remount ``point``; retried for a while (a stopped server's processes may still be exiting)."""
    for _ in range(50):
        done = subprocess.run(["mount", "-o", f"remount,{mode}", str(point)], capture_output=True, text=True)
        if done.returncode == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"cannot remount {point} {mode}: {done.stderr}")


def _fill(point: Path) -> Path:
    """Fill the file system to the last byte with one file (removing it frees the space)."""
    filler = point / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
    return filler


@pytest.fixture(scope="module")
def job_body() -> dict:
    """A hybrid job that runs for about 4 s on a 500-node cluster and returns a plan of some size."""
    from planner.instances.asi import generate_asi

    return {"snapshot": cluster_to_dict(generate_asi(nodes=500, seed=4, allocation=0.75)), "options": {"method": "hybrid", "time_limit_s": 4}}


def _ready(server: Server) -> int:
    return httpx.get(f"{server.url}/readyz", timeout=10).status_code


def _until(condition, timeout_s: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_a_full_disk_leaves_no_job_running_and_the_server_recovers_without_restart(small_disk: Path, job_body: dict) -> None:
    server = Server(small_disk / "planner.db", None, "--workers", "1").start()
    try:
        with server.client() as client:
            job_id = client.post("/v1/defrag", json=job_body).json()["job_id"]
            wait_status(client, job_id, ("running",))
            filler = _fill(small_disk)
            # the job finishes but its plan cannot be written: readiness says so, the job waits
            assert _until(lambda: _ready(server) == 503, 180), "readiness kept saying 200 with a store that cannot write"
            assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "running"
            filler.unlink()
            status = wait_status(client, job_id, ("succeeded", "failed"))
            assert status["status"] == "succeeded", status
            assert _until(lambda: _ready(server) == 200, 180)
            second = client.post("/v1/defrag", json={"snapshot": job_body["snapshot"]}).json()["job_id"]
            assert wait_status(client, second, ("succeeded", "failed"))["status"] == "succeeded"
            assert json.loads(client.get(f"/v1/jobs/{job_id}/plan").text)["kind"] == "defrag"
    finally:
        server.stop()


def test_a_submission_the_store_cannot_take_gets_503_not_500(small_disk: Path, job_body: dict) -> None:
    server = Server(small_disk / "planner.db", None, "--workers", "1").start()
    try:
        filler = _fill(small_disk)
        with server.client() as client:
            refused = client.post("/v1/defrag", json={"snapshot": job_body["snapshot"]})
            assert refused.status_code == 503 and "Retry-After" in refused.headers, refused.text
            filler.unlink()
            accepted = client.post("/v1/defrag", json={"snapshot": job_body["snapshot"]})
            assert accepted.status_code == 202, accepted.text
    finally:
        server.stop()


def test_serving_from_a_read_only_store_is_a_clear_exit_2(small_disk: Path) -> None:
    Server(small_disk / "planner.db", None).start().stop()  # create the database
    _remount(small_disk, "ro")
    try:
        done = subprocess.run([PLANNER, "serve", "--port", "8765", "--db", str(small_disk / "planner.db")], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert "--db: cannot write the job store" in done.stderr and "Traceback" not in done.stderr
    finally:
        _remount(small_disk, "rw")
