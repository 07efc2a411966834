"""Ids and header values from the command line against a real service: the client sends only ids of the
service's form, percent-encoded (``planner plans delete ../jobs/ID`` once deleted a job with its snapshot
and plan), refuses header values with control characters (exit 2, not retried as "cannot reach"), and the
server refuses what is not an id with a 4xx naming the parameter and a short prefix."""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from tests.support.harness import PLANNER, Server
from tests.support.paths import FIG15

TOKEN = "client-ids-token-0123456789"
ENV = {**os.environ, "PLANNER_API_TOKEN": TOKEN}
JOB_ID = re.compile(r"\b[0-9a-f]{32}\b")


def planner(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PLANNER, *args], capture_output=True, text=True, env=ENV, timeout=120)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Server, str, str]:
    """A server with one finished job and its plan."""
    srv = Server(tmp_path_factory.mktemp("ids") / "planner.db", TOKEN, "--workers", "1").start()
    done = planner("submit", str(FIG15), "--server", srv.url, "--wait", "120")
    assert done.returncode == 0, done.stderr
    job_id = JOB_ID.search(done.stderr).group(0)  # type: ignore[union-attr]
    with srv.client() as client:
        plan_id = client.get(f"/v1/jobs/{job_id}").json()["plan_id"]
    yield srv, job_id, plan_id
    srv.stop()


def _still_stored(srv: Server, job_id: str, plan_id: str) -> None:
    with srv.client() as client:
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded"
        assert client.get(f"/v1/plans/{plan_id}").status_code == 200
        assert client.get(f"/v1/jobs/{job_id}/plan").status_code == 200


def test_a_path_for_an_id_is_exit_2_and_deletes_nothing(stored: tuple[Server, str, str]) -> None:
    srv, job_id, plan_id = stored
    for args, names in (
        (("plans", "delete", f"../jobs/{job_id}"), "PLAN_ID"),  # was exit 0: the job, its snapshot and its plan deleted
        (("plans", "get", "../../v1/jobs"), "PLAN_ID"),  # was exit 3
        (("plans", "get", "--job", f"{job_id}/../../plans/{plan_id}"), "--job"),
        (("jobs", "delete", f"{job_id}/.."), "JOB_ID"),
        (("jobs", "cancel", f"%2e%2e%2fplans%2f{plan_id}"), "JOB_ID"),
        (("jobs", "get", f"{job_id}?x=1"), "JOB_ID"),
        (("jobs", "get", "a\r\nX-Evil: 1"), "JOB_ID"),
        (("jobs", "get", "x" * 100_000), "JOB_ID"),
        (("jobs", "get", job_id.upper()), "JOB_ID"),
    ):
        done = planner(*args, "--server", srv.url)
        assert done.returncode == 2, (args, done.stderr)
        assert f"error: {names}: " in done.stderr and "is not an id of the service (32 hexadecimal digits" in done.stderr, done.stderr
        assert len(done.stderr) < 400 and "\r" not in done.stderr and "X-Evil" not in done.stderr.splitlines()[-1][:20]
    _still_stored(srv, job_id, plan_id)
    fetched = planner("plans", "get", plan_id, "--server", srv.url)  # ids of the service's form still work
    assert fetched.returncode == 0, fetched.stderr


def test_a_header_value_with_a_line_break_is_exit_2_at_once(stored: tuple[Server, str, str]) -> None:
    srv, _, _ = stored
    for key in ("cron\r\nX-Evil: 1", "tab\there", "\x1b[2J", "k" * 256, " "):
        start = time.monotonic()
        done = planner("submit", str(FIG15), "--server", srv.url, "--wait", "60", "--idempotency-key", key)
        assert done.returncode == 2 and "error: --idempotency-key: " in done.stderr, done.stderr  # was retried for the whole --wait as "cannot reach"
        assert "cannot reach" not in done.stderr and time.monotonic() - start < 30
        assert "\x1b" not in done.stderr and len(done.stderr) < 400


def test_the_server_refuses_what_is_not_an_id_with_a_4xx(stored: tuple[Server, str, str]) -> None:
    srv, job_id, plan_id = stored
    with srv.client() as client:
        for method, path in (
            ("DELETE", f"/v1/plans/..%2Fjobs%2F{job_id}"),
            ("DELETE", f"/v1/jobs/{job_id}%2F..%2F..%2Fplans%2F{plan_id}"),
            ("GET", "/v1/jobs/%0d%0aX-Evil:%201"),
            ("GET", "/v1/plans/" + "z" * 4_000),
            ("GET", f"/v1/jobs/{job_id.upper()}/plan"),
            ("GET", f"/v1/plans/{plan_id}%00/view"),
        ):
            answer = client.request(method, path)
            assert 400 <= answer.status_code < 500, (method, path, answer.status_code)
            assert len(answer.text) < 400, answer.text
        malformed = client.get("/v1/plans/" + "z" * 4_000)
        assert malformed.status_code == 422 and malformed.json()["problems"][0].startswith("plan_id: 'zzzz")
        assert "(4,000 characters) is not an id of this service" in malformed.json()["problems"][0]
    _still_stored(srv, job_id, plan_id)
