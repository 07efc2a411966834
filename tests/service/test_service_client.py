"""The cron client against a real service in a subprocess: retries (connection refused, 429 with
Retry-After), the documented exit codes, and jobs / plans get, cancel and delete by full id."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from planner.cli.client import retry_after_s
from planner.plans import parse_plan
from planner.service.store import Store
from planner.snapshot import cluster_to_dict, parse_cluster
from planner.validate.defrag import validate
from tests.support.harness import PLANNER, Server, free_port, wait_status, wait_until
from tests.support.paths import FIG15

TOKEN = "client-token-0123456789"
ENV = {**os.environ, "PLANNER_API_TOKEN": TOKEN}
JOB_ID = re.compile(r"\b[0-9a-f]{32}\b")
WAIT_S = 180.0
"""Deadline for a condition to hold (generous: never what a quiet machine needs)."""


def planner(*args: str, env: dict[str, str] | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([PLANNER, *args], capture_output=True, text=True, env=env or ENV, timeout=timeout)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    """The client's tests need one server; the store behind it is tested on both databases elsewhere
    (tests/service/test_service.py, tests/service/test_store.py) and the retention test below runs on both."""
    srv = Server(tmp_path_factory.mktemp("client") / "planner.db", TOKEN, "--workers", "1").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def long_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2,000-node cluster on which the hybrid searches for its whole time limit."""
    from planner.instances.asi import generate_asi

    path = tmp_path_factory.mktemp("long") / "long.json"
    path.write_text(json.dumps(cluster_to_dict(generate_asi(nodes=2000, seed=4, allocation=0.75))))
    return path


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_s("5") == 5.0
    assert 8.0 <= retry_after_s(formatdate(time.time() + 10, usegmt=True)) <= 10.0  # type: ignore[operator]
    assert retry_after_s(formatdate(time.time() - 60, usegmt=True)) == 0.0
    assert retry_after_s("soon") is None and retry_after_s(None) is None


def test_submit_get_fetch_and_delete_by_full_id(server: Server, tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    done = planner("submit", str(FIG15), "--server", server.url, "--wait", "60", "--out", str(out))
    assert done.returncode == 0, done.stderr
    job_id = JOB_ID.search(done.stderr).group(0)  # type: ignore[union-attr]
    plan = parse_plan(out.read_text())
    assert validate(parse_cluster(FIG15.read_text()), plan) == [] and plan.vacated_nodes == ["node-0"]

    status = planner("jobs", "get", job_id, "--server", server.url)
    assert status.returncode == 0 and json.loads(status.stdout)["status"] == "succeeded"
    listed = planner("jobs", "--server", server.url)
    assert listed.returncode == 0 and job_id in listed.stdout  # the full id, never cut
    fetched = planner("plans", "get", "--job", job_id, "--server", server.url)
    assert fetched.returncode == 0 and json.loads(fetched.stdout) == json.loads(out.read_text())
    plan_id = next(p for p in json.loads(planner("plans", "--server", server.url, "--json").stdout) if p["job_id"] == job_id)["plan_id"]
    assert plan_id in planner("plans", "--server", server.url).stdout

    refused = planner("jobs", "cancel", job_id, "--server", server.url)
    assert refused.returncode == 2 and "already succeeded" in refused.stderr
    deleted = planner("jobs", "delete", job_id, "--server", server.url)
    assert deleted.returncode == 0, deleted.stderr
    gone = planner("jobs", "get", job_id, "--server", server.url)
    assert gone.returncode == 2 and f"no job '{job_id}'" in gone.stderr
    assert planner("plans", "get", plan_id, "--server", server.url).returncode == 2  # its plan went with it


def test_plans_delete_leaves_the_job_without_a_plan(server: Server) -> None:
    done = planner("submit", str(FIG15), "--server", server.url, "--wait", "60")
    assert done.returncode == 0, done.stderr
    job_id = JOB_ID.search(done.stderr).group(0)  # type: ignore[union-attr]
    with server.client() as client:
        plan_id = client.get(f"/v1/jobs/{job_id}").json()["plan_id"]
    assert planner("plans", "delete", plan_id, "--server", server.url).returncode == 0
    assert planner("plans", "delete", plan_id, "--server", server.url).returncode == 2
    missing = planner("plans", "get", "--job", job_id, "--server", server.url)
    assert missing.returncode == 2 and "has no plan" in missing.stderr
    with server.client() as client:
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded"


def test_a_cancelled_job_is_exit_5_with_its_reason(server: Server, long_snapshot: Path) -> None:
    waiting = subprocess.Popen(
        [PLANNER, "submit", str(long_snapshot), "--server", server.url, "--method", "hybrid", "--time-limit", "60", "--wait", "120"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    with server.client() as client:
        running = wait_until(lambda: client.get("/v1/jobs", params={"status": "running"}).json(), WAIT_S, 0.2)
        assert running, "the job never started"
    cancelled = planner("jobs", "cancel", running[0]["job_id"], "--server", server.url)
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["status"] == "cancelled"
    _, stderr = waiting.communicate(timeout=WAIT_S)
    assert waiting.returncode == 5 and "cancelled: cancelled by request" in stderr
    status = planner("jobs", "get", running[0]["job_id"], "--server", server.url)
    assert status.returncode == 5


def test_submit_retries_until_the_server_comes_up(tmp_path: Path) -> None:
    srv = Server(tmp_path / "late.db", TOKEN, "--workers", "1")
    starter = threading.Timer(3.0, srv.start)
    starter.start()
    try:
        done = planner("submit", str(FIG15), "--server", srv.url, "--wait", "90")
    finally:
        starter.join()
        srv.stop()
    assert done.returncode == 0, done.stderr
    assert "retrying in" in done.stderr and parse_plan(done.stdout).vacated_nodes == ["node-0"]


def test_submit_gives_up_within_wait_as_exit_4() -> None:
    start = time.monotonic()
    done = planner("submit", str(FIG15), "--server", f"http://127.0.0.1:{free_port()}", "--wait", "3")
    assert done.returncode == 4 and "gave up after" in done.stderr and "within --wait 3 s" in done.stderr
    assert time.monotonic() - start < 15


def test_a_full_queue_is_retried_after_retry_after(tmp_path: Path, long_snapshot: Path) -> None:
    srv = Server(tmp_path / "q.db", TOKEN, "--workers", "1", "--max-queue", "1").start()
    try:
        with srv.client() as client:
            body = {"snapshot": json.loads(long_snapshot.read_text()), "options": {"method": "hybrid", "time_limit_s": 60}}
            running = client.post("/v1/defrag", json=body).json()["job_id"]
            wait_status(client, running, ("running",), timeout_s=WAIT_S)
            queued = client.post("/v1/defrag", json=body).json()["job_id"]
            assert client.post("/v1/defrag", json=body).status_code == 429

            submitting = subprocess.Popen(
                [PLANNER, "submit", str(FIG15), "--server", srv.url, "--wait", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
            )
            seen = _until_line(submitting, "answered 429", WAIT_S)  # the client met the full queue: now free it
            other_client_deletes = [client.delete(f"/v1/jobs/{queued}").status_code, client.delete(f"/v1/jobs/{running}").status_code]
            stdout, stderr = submitting.communicate(timeout=WAIT_S + 300)
    finally:
        srv.stop()
    assert seen and set(other_client_deletes) <= {200, 204}, (seen, other_client_deletes)  # cancelled, or deleted if it ended meanwhile
    done = subprocess.CompletedProcess(submitting.args, submitting.returncode, stdout, seen + stderr)
    assert done.returncode == 0, done.stderr
    assert "answered 429" in done.stderr and "retrying in" in done.stderr
    assert parse_plan(done.stdout).vacated_nodes == ["node-0"]


def _until_line(process: subprocess.Popen, text: str, timeout_s: float) -> str:
    """The standard error ``process`` wrote up to the first line holding ``text`` (or all of it, if it
    ended or ``timeout_s`` passed first); read in a thread, so a silent process cannot block the test."""
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if text in line:
                found.set()
                return
        found.set()

    threading.Thread(target=read, daemon=True).start()
    found.wait(timeout_s)
    return "".join(lines)


def test_bad_input_is_exit_2_before_the_server_is_asked(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    snapshot = json.loads(FIG15.read_text())
    bad.write_text(json.dumps({**snapshot, "pods": [{**snapshot["pods"][0], "node": "n-9"}]}))
    done = planner("submit", str(bad), "--server", f"http://127.0.0.1:{free_port()}", "--wait", "30")
    assert done.returncode == 2 and "unknown node 'n-9'" in done.stderr  # not 4: the server was never needed
    no_server = planner("jobs", env={k: v for k, v in ENV.items() if k != "PLANNER_SERVER"})
    assert no_server.returncode == 2 and "--server" in no_server.stderr


def test_a_read_only_token_reads_but_cannot_submit_cancel_or_delete(tmp_path: Path) -> None:
    reader = "reader-token-0123456789"
    srv = Server(tmp_path / "roles.db", TOKEN, "--workers", "1", env={"PLANNER_API_READ_TOKEN": reader}).start()
    try:
        with srv.client() as admin:
            job_id = admin.post("/v1/defrag", params={"wait": 30}, json={"snapshot": json.loads(FIG15.read_text())}).headers["x-job-id"]
        with srv.client(reader) as client:
            assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded"
            assert client.get("/v1/plans").status_code == 200 and client.get("/metrics").status_code == 200
            refused = [client.post("/v1/defrag", json={"snapshot": json.loads(FIG15.read_text())}), client.delete(f"/v1/jobs/{job_id}")]
            assert [r.status_code for r in refused] == [403, 403] and "admin token" in refused[0].json()["error"]
        with srv.client("wrong-token-0123456789") as client:
            assert client.get("/v1/jobs").status_code == 401
        listed = planner("jobs", "--server", srv.url, "--json", env={**ENV, "PLANNER_API_TOKEN": reader})
        assert listed.returncode == 0 and job_id in listed.stdout
        denied = planner("jobs", "delete", job_id, "--server", srv.url, env={**ENV, "PLANNER_API_TOKEN": reader})
        assert denied.returncode == 2 and "403" in denied.stderr
    finally:
        srv.stop()


def test_a_read_token_without_an_admin_token_is_refused_at_start(tmp_path: Path) -> None:
    env = {k: v for k, v in ENV.items() if k != "PLANNER_API_TOKEN"} | {"PLANNER_API_READ_TOKEN": "reader-token-0123456789"}
    done = subprocess.run([PLANNER, "serve", "--port", str(free_port()), "--db", str(tmp_path / "p.db")], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and "PLANNER_API_READ_TOKEN" in done.stderr and "Traceback" not in done.stderr


def test_metrics_public_by_an_explicit_flag_only(tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    srv = Server(tmp_path / "m.db", TOKEN, "--workers", "1", "--metrics-public").start()
    try:
        with srv.client(None) as anonymous:
            scraped = anonymous.get("/metrics")
            assert scraped.status_code == 200
            assert "planner_jobs_finished" in {f.name for f in text_string_to_metric_families(scraped.text)}
            assert anonymous.get("/v1/jobs").status_code == 401  # only /metrics went public
    finally:
        srv.stop()


def test_json_logs_give_the_listen_address_and_an_access_record_per_request(tmp_path: Path) -> None:
    srv = Server(tmp_path / "logs.db", TOKEN, "--workers", "1").start()
    try:
        with srv.client() as client:
            mine = client.get("/v1/jobs", headers={"X-Request-Id": "cron-2026-11-25"})
            fresh = client.get("/v1/plans")
        with srv.client(None) as anonymous:
            refused = anonymous.get("/v1/jobs")
    finally:
        srv.stop()
    assert mine.headers["x-request-id"] == "cron-2026-11-25" and re.fullmatch(r"[0-9a-f]{32}", fresh.headers["x-request-id"])
    records = [json.loads(line) for line in srv.log.read_text().splitlines() if line.startswith("{")]
    assert any(r["message"] == f"listening on http://127.0.0.1:{srv.port}" and r["port"] == srv.port for r in records)
    access = {r["request_id"]: r for r in records if r["logger"] == "planner.access"}
    assert access["cron-2026-11-25"]["path"] == "/v1/jobs" and access["cron-2026-11-25"]["status"] == 200
    assert access[refused.headers["x-request-id"]]["status"] == 401  # refused requests are logged too
    assert all({"ts", "level", "logger", "message"} <= set(r) for r in records)


def test_openapi_by_conventions_bearer_scheme_tags_readable_ids_typed_plans(server: Server) -> None:
    with server.client() as client:
        spec = client.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearer"] == {**spec["components"]["securitySchemes"]["bearer"], "type": "http", "scheme": "bearer"}
    assert spec["security"] == [{"bearer": []}]
    operations = {(path, method): op for path, ops in spec["paths"].items() for method, op in ops.items()}
    ids = [op["operationId"] for op in operations.values()]
    assert len(set(ids)) == len(ids) and not [i for i in ids if "_v1_" in i or i.endswith(("_get", "_post", "_delete"))]
    assert operations[("/v1/defrag", "post")]["operationId"] == "submit_defrag" and operations[("/v1/defrag", "post")]["tags"] == ["defrag"]
    assert operations[("/healthz", "get")]["security"] == [] and "security" not in operations[("/v1/jobs", "get")]
    assert {tag["name"] for tag in spec["tags"]} >= {"defrag", "preempt", "allocate", "jobs", "plans"}
    typed = operations[("/v1/preempt", "post")]["responses"]["200"]["content"]["application/json"]["schema"]["oneOf"]
    assert {"#/components/schemas/PreemptPlan", "#/components/schemas/PreemptComparison"} == {ref["$ref"] for ref in typed}
    assert "report" in spec["components"]["schemas"]["DefragPlan"]["properties"]


def test_the_openapi_plan_examples_are_plans() -> None:
    from planner.api.conventions import PLAN_EXAMPLES

    assert {type(parse_plan(json.dumps(example))).__name__ for example in PLAN_EXAMPLES.values()} == {"PreemptPlan", "AllocationPlan"}


def test_keep_days_purges_finished_jobs_with_their_plans_but_never_unfinished_ones(tmp_path: Path, long_snapshot: Path, database_url: str) -> None:
    srv = Server(tmp_path / "keep.db", TOKEN, "--workers", "1", "--keep-days", "0.00003", env={"DATABASE_URL": database_url}).start()  # 2.6 s
    try:
        with srv.client() as client:
            done = client.post("/v1/defrag", params={"wait": 30}, json={"snapshot": json.loads(FIG15.read_text())})
            finished = done.headers["x-job-id"]
            plan_id = client.get(f"/v1/jobs/{finished}").json()["plan_id"]
            body = {"snapshot": json.loads(long_snapshot.read_text()), "options": {"method": "hybrid", "time_limit_s": 20}}
            running = client.post("/v1/defrag", json=body).json()["job_id"]
            wait_status(client, running, ("running",))
            wait_until(lambda: client.get(f"/v1/jobs/{finished}").status_code == 404, WAIT_S, 0.2)
            assert client.get(f"/v1/jobs/{finished}").status_code == 404 and client.get(f"/v1/plans/{plan_id}").status_code == 404
            assert client.get(f"/v1/jobs/{running}").json()["status"] == "running"  # never purged while it runs
            client.delete(f"/v1/jobs/{running}")
    finally:
        srv.stop()
    assert "purged 1 finished job(s)" in srv.log.read_text()
    store = Store(database_url)  # the purged job's snapshot went with it; the cancelled job's stays
    assert store.snapshot_usage()["snapshots"] == 1 and store.snapshot_usage()["jobs"] == 1
    store.close()


def test_keep_days_must_be_positive(tmp_path: Path) -> None:
    done = planner("serve", "--port", str(free_port()), "--db", str(tmp_path / "p.db"), "--keep-days", "0")
    assert done.returncode == 2 and "--keep-days" in done.stderr and "Traceback" not in done.stderr


def test_tokens_from_files_as_kubernetes_and_cron_mount_them(tmp_path: Path) -> None:
    admin, reader = tmp_path / "admin-token", tmp_path / "read-token"
    admin.write_text(TOKEN + "\n")  # the newline an editor adds is not part of the token
    reader.write_text("reader-token-0123456789\n")
    srv = Server(tmp_path / "files.db", None, "--workers", "1", env={"PLANNER_API_TOKEN_FILE": str(admin), "PLANNER_API_READ_TOKEN_FILE": str(reader)}).start()
    try:
        with srv.client(None) as anonymous, srv.client(TOKEN) as client, srv.client("reader-token-0123456789") as read_only:
            assert anonymous.get("/v1/jobs").status_code == 401
            assert client.get("/v1/jobs").status_code == 200 and read_only.get("/v1/jobs").status_code == 200
            assert read_only.post("/v1/defrag", json={"snapshot": json.loads(FIG15.read_text())}).status_code == 403
        env = {k: v for k, v in ENV.items() if k != "PLANNER_API_TOKEN"} | {"PLANNER_API_TOKEN_FILE": str(admin)}
        done = planner("jobs", "--server", srv.url, "--json", env=env)
        assert done.returncode == 0, done.stderr
    finally:
        srv.stop()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"PLANNER_API_TOKEN_FILE": "/nonexistent/token"}, "PLANNER_API_TOKEN_FILE: cannot read /nonexistent/token"),
        ({"PLANNER_API_TOKEN_FILE": "EMPTY"}, "is empty"),
        ({"PLANNER_API_TOKEN_FILE": "/etc/hostname", "PLANNER_API_TOKEN": "x" * 20}, "PLANNER_API_TOKEN is set too"),
        ({"PLANNER_API_READ_TOKEN_FILE": "/nonexistent/read", "PLANNER_API_TOKEN": TOKEN}, "PLANNER_API_READ_TOKEN_FILE: cannot read"),
        ({"DATABASE_URL": "postgres//oops"}, "DATABASE_URL: not a database URL"),
        ({"DATABASE_URL": "mysql://u@h/db"}, "DATABASE_URL: unsupported database 'mysql'"),
        ({"DATABASE_URL": f"postgresql://planner@127.0.0.1:{free_port()}/planner"}, "DATABASE_URL: cannot write the job store"),
        ({"DATABASE_URL_FILE": "/nonexistent/url"}, "DATABASE_URL_FILE: cannot read /nonexistent/url"),
    ],
)
def test_bad_settings_at_start_are_exit_2_with_the_fix_never_a_traceback(tmp_path: Path, env: dict[str, str], expected: str) -> None:
    if env.get("PLANNER_API_TOKEN_FILE") == "EMPTY":
        (tmp_path / "empty").write_text("\n")
        env = {**env, "PLANNER_API_TOKEN_FILE": str(tmp_path / "empty")}
    base = {k: v for k, v in os.environ.items() if k not in ("PLANNER_API_TOKEN", "PLANNER_API_READ_TOKEN", "DATABASE_URL")}
    done = subprocess.run(
        [PLANNER, "serve", "--port", str(free_port()), "--db", str(tmp_path / "p.db")], capture_output=True, text=True, env=base | env, timeout=60
    )
    assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr + done.stdout, done.stderr
    if "cannot write the job store" in expected:
        assert "check that PostgreSQL runs at that host and port" in done.stderr


def test_the_database_url_from_a_file_as_a_mounted_secret(tmp_path: Path, postgres) -> None:  # type: ignore[no-untyped-def]
    url_file = tmp_path / "database-url"
    url_file.write_text(postgres.create_database() + "\n")
    srv = Server(tmp_path / "unused.db", TOKEN, "--workers", "1", env={"DATABASE_URL_FILE": str(url_file)}).start()
    try:
        with srv.client() as client:
            done = client.post("/v1/defrag", params={"wait": 30}, json={"snapshot": json.loads(FIG15.read_text())})
            assert done.status_code == 200
    finally:
        srv.stop()
    assert not (tmp_path / "unused.db").exists()  # the jobs went to PostgreSQL, not to --db
    store = Store(url_file.read_text().strip())
    assert store.snapshot_usage()["jobs"] == 1
    store.close()


def test_an_unknown_flag_is_exit_2_naming_it(tmp_path: Path) -> None:
    done = planner("serve", "--db", str(tmp_path / "p.db"), "--replicas", "2")
    assert done.returncode == 2 and "--replicas" in done.stderr and "Traceback" not in done.stderr


def test_the_client_refuses_an_unreadable_token_file_before_asking_the_server() -> None:
    env = {k: v for k, v in ENV.items() if k != "PLANNER_API_TOKEN"} | {"PLANNER_API_TOKEN_FILE": "/nonexistent/token"}
    done = planner("jobs", "--server", "http://127.0.0.1:9", env=env)
    assert done.returncode == 2 and "PLANNER_API_TOKEN_FILE: cannot read /nonexistent/token" in done.stderr


def test_a_refused_token_says_where_the_token_comes_from_and_how_to_give_one(server: Server) -> None:
    bare = {k: v for k, v in os.environ.items() if not k.startswith("PLANNER_API_TOKEN")}
    missing = planner("jobs", "--server", server.url, env=bare)
    assert missing.returncode == 2, missing
    assert "server refused the request (401)" in missing.stderr
    assert "no token was given: pass --token, or set PLANNER_API_TOKEN (or PLANNER_API_TOKEN_FILE" in missing.stderr
    wrong = planner("jobs", "--server", server.url, "--token", "x" * 32, env=bare)
    assert wrong.returncode == 2 and "the token from --token was refused" in wrong.stderr, wrong
