"""The planning service, driven over HTTP: uvicorn in a subprocess, real workers, its store a real
SQLite file and a real PostgreSQL database (the shared server's tests run on both)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from planner.plans import parse_plan
from planner.snapshot import cluster_to_dict, parse_cluster
from planner.validate.defrag import validate
from tests.support.harness import PLANNER, Server, wait_status, wait_until
from tests.support.paths import FIG15

TOKEN = "test-token-0123456789"
FIG15_SNAPSHOT = json.loads(FIG15.read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, module_database_url: str) -> Server:
    db = tmp_path_factory.mktemp("svc") / "planner.db"
    srv = Server(db, TOKEN, "--workers", "2", "--max-body-mib", "4", env={"DATABASE_URL": module_database_url}).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def long_snapshot() -> dict:
    """A 2,000-node cluster on which the hybrid searches for its whole time limit."""
    from planner.instances.asi import generate_asi

    return cluster_to_dict(generate_asi(nodes=2000, seed=4, allocation=0.75))


def long_job(snapshot: dict, seconds: float = 30.0) -> dict:
    return {"snapshot": snapshot, "options": {"method": "hybrid", "time_limit_s": seconds}}


def test_submit_poll_and_fetch_a_validated_plan(server: Server) -> None:
    with server.client() as client:
        accepted = client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT})
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        assert accepted.json()["status_url"] == f"/v1/jobs/{job_id}"
        status = wait_status(client, job_id, ("succeeded", "failed"))
        assert status["status"] == "succeeded" and status["progress"] == 1.0 and status["attempts"] == 1
        plan = client.get(f"/v1/jobs/{job_id}/plan")
        assert plan.status_code == 200
        parsed = parse_plan(plan.text)
        assert validate(parse_cluster(json.dumps(FIG15_SNAPSHOT)), parsed) == []
        assert parsed.vacated_nodes == ["node-0"] and len(parsed.waves) == 3
        listed = client.get("/v1/plans", params={"kind": "defrag"}).json()["plans"]
        mine = [p for p in listed if p["job_id"] == job_id]
        assert len(mine) == 1 and mine[0]["objective"] == 1
        stored = client.get(mine[0]["plan_url"]).json()
        assert stored["plan"]["vacated_nodes"] == ["node-0"]


def test_wait_returns_the_plan_directly(server: Server) -> None:
    with server.client() as client:
        response = client.post("/v1/defrag", params={"wait": 30}, json={"snapshot": FIG15_SNAPSHOT, "options": {"method": "exact"}})
        assert response.status_code == 200
        assert response.json()["report"]["status"] == "optimal"
        assert client.get(f"/v1/jobs/{response.headers['x-job-id']}").json()["status"] == "succeeded"


def test_plans_list_newest_first_and_since(server: Server) -> None:
    with server.client() as client:
        for _ in range(2):
            client.post("/v1/defrag", params={"wait": 30}, json={"snapshot": FIG15_SNAPSHOT})
        plans = client.get("/v1/plans", params={"limit": 2}).json()["plans"]
        assert len(plans) == 2 and plans[0]["created_at"] >= plans[1]["created_at"]
        later = client.get("/v1/plans", params={"since": plans[0]["created_at"] + 1}).json()["plans"]
        assert later == []


def test_idempotency_key_returns_the_original_job(server: Server) -> None:
    with server.client() as client:
        headers = {"Idempotency-Key": "nightly-2026-11-21"}
        first = client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT}, headers=headers).json()
        again = client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT}, headers=headers).json()
        assert again["job_id"] == first["job_id"]
        other = client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT, "options": {"seed": 9}}, headers=headers)
        assert other.status_code == 409 and other.json()["job_id"] == first["job_id"]
        jobs = client.get("/v1/jobs", params={"limit": 200}).json()
        assert sum(1 for j in jobs if j["job_id"] == first["job_id"]) == 1


def test_no_token_no_entry(server: Server) -> None:
    with server.client(token=None) as anonymous, server.client(token="wrong") as wrong:
        for client in (anonymous, wrong):
            for method, url in (("POST", "/v1/defrag"), ("GET", "/v1/plans"), ("GET", "/v1/jobs/x"), ("GET", "/metrics")):
                response = client.request(method, url, json={"snapshot": FIG15_SNAPSHOT} if method == "POST" else None)
                assert response.status_code == 401, (method, url)
                assert response.headers["www-authenticate"] == "Bearer"
        assert anonymous.get("/healthz").status_code == 200  # probes stay open


def test_body_over_the_limit_gets_413(server: Server) -> None:
    with server.client() as client:
        big = b'{"snapshot": {"nodes": [], "pad": "' + b"x" * (5 * 2**20) + b'"}}'
        response = client.post("/v1/defrag", content=big, headers={"content-type": "application/json"})
        assert response.status_code == 413 and "limit of 4 MiB" in response.json()["error"]


@pytest.mark.parametrize(
    "body,expected",
    [
        ({"snapshot": {**FIG15_SNAPSHOT, "pods": [{**FIG15_SNAPSHOT["pods"][0], "node": "n-9"}]}}, "snapshot.pods[0].node: unknown node 'n-9'"),
        ({"snapshot": {"pods": []}}, "snapshot.nodes: required field is missing"),
        ({"snapshot": FIG15_SNAPSHOT, "options": {"time_limit_s": 0}}, "options.time_limit_s"),
        ({"snapshot": FIG15_SNAPSHOT, "options": {"method": "magic"}}, "options.method"),
        ({"snapshot": FIG15_SNAPSHOT, "optoins": {}}, "optoins: unknown field"),
        ({"snapshot": {**FIG15_SNAPSHOT, "nodes": [{**FIG15_SNAPSHOT["nodes"][0], "gpus": "8"}]}}, "snapshot.nodes[0].gpus"),
        ({"snapshot": FIG15_SNAPSHOT, "options": {"seed": -1}}, "options.seed"),
        ({"snapshot": FIG15_SNAPSHOT, "options": {"max_moves_per_node": 2**70}}, "options.max_moves_per_node"),
        ({"snapshot": FIG15_SNAPSHOT, "options": {"method": "exact", "force": True}}, "options.force: this server does not run forced"),
        ({"snapshot": FIG15_SNAPSHOT, "options": {"method": "repack", "max_moves": 3}}, "options.max_moves: repack repacks"),
        ({"snapshot": FIG15_SNAPSHOT, "options": {"threshold": 0.2}}, "options.threshold: method 'heuristic' does not use it"),
    ],
)
def test_bad_input_gets_422_with_field_paths(server: Server, body: dict, expected: str) -> None:
    with server.client() as client:
        response = client.post("/v1/defrag", json=body)
        assert response.status_code == 422, response.text
        assert any(expected in p for p in response.json()["problems"]), response.json()
        assert "Traceback" not in response.text


def test_an_instance_too_large_for_exact_is_refused_at_submission_in_api_terms(server: Server) -> None:
    nodes = [{"name": f"n{i}", "gpus": 8, "cpus": 64, "memory_gib": 64} for i in range(1001)]
    with server.client() as client:
        response = client.post("/v1/defrag", json={"snapshot": {"nodes": nodes, "pods": []}, "options": {"method": "exact"}})
        assert response.status_code == 422, response.text
        problem = response.json()["problems"][0]
        assert problem.startswith("options.method: the instance is too large") and "options.method = 'hybrid'" in problem
        assert "--" not in problem


@pytest.mark.parametrize(
    "content,headers,status,expected",
    [
        (b'{"snapshot": {"nodes": [', {"content-type": "application/json"}, 422, "body: not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, {"content-type": "application/json"}, 422, "body: line 1 column 101: nested more than 100 levels deep"),
        (bytes(range(256)) * 64, {"content-type": "application/json"}, 422, "body: not valid JSON"),
        (b'{"snapshot": {"nodes": [], "nodes": []}}', {"content-type": "application/json"}, 422, "body: snapshot: key 'nodes' is given twice"),
        (json.dumps({"snapshot": FIG15_SNAPSHOT}).encode(), {"content-type": "text/plain"}, 415, ""),
        (
            json.dumps({"snapshot": FIG15_SNAPSHOT}).encode(),
            {"content-type": "application/json", "idempotency-key": ""},
            422,
            "Idempotency-Key: must not be empty",
        ),
    ],
    ids=["truncated", "deeply-nested", "binary", "duplicate-key", "text-plain", "empty-idempotency-key"],
)
def test_hostile_bodies_get_the_problem_format(server: Server, content: bytes, headers: dict, status: int, expected: str) -> None:
    with server.client() as client:
        response = client.post("/v1/defrag", content=content, headers=headers)
        assert response.status_code == status, response.text
        body = response.json()
        assert set(body) <= {"error", "problems", "job_id"} and "Traceback" not in response.text
        assert expected in " ".join(body["problems"]) or expected in body["error"]


@pytest.mark.parametrize(
    "method,path,status", [("GET", "/v2/defrag", 404), ("POST", "/v1/topology", 404), ("PUT", "/v1/defrag", 405), ("DELETE", "/v1/jobs", 405)]
)
def test_unknown_routes_and_methods_get_the_problem_format(server: Server, method: str, path: str, status: int) -> None:
    with server.client() as client:
        response = client.request(method, path)
        assert response.status_code == status and set(response.json()) == {"error", "problems"}, response.text


def test_options_are_as_strict_as_the_snapshot(server: Server) -> None:
    with server.client() as client:
        response = client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT, "options": {"method": "exact", "time_limit_s": "5"}})
        assert response.status_code == 422 and any("options.time_limit_s" in p for p in response.json()["problems"])


def test_a_dead_fork_server_leaves_no_worker_behind(tmp_path: Path, long_snapshot: dict) -> None:
    """multiprocessing reports the fork server's children dead (exit 255) when the fork server dies,
    while they still run: the dispatcher kills them, and the job fails with a reason."""
    srv = Server(tmp_path / "fork.db", None, "--workers", "1", "--allow-force").start()
    try:
        with srv.client() as client:
            # a forced exact solve sends no progress while it builds and solves: nothing else would end it
            exact = {"snapshot": long_snapshot, "options": {"method": "exact", "force": True, "time_limit_s": 30}}
            job_id = client.post("/v1/defrag", json=exact).json()["job_id"]
            wait_status(client, job_id, ("running",))
            workers = srv.job_workers()
            assert workers
            for pid in set(_parents(workers)):  # the fork server
                os.kill(pid, signal.SIGKILL)
            status = wait_status(client, job_id, ("failed", "succeeded"))
            assert status["status"] == "failed" and "died" in status["error"]
            wait_until(lambda: not any(os.path.exists(f"/proc/{pid}") and not _is_zombie(pid) for pid in workers))
            assert not any(os.path.exists(f"/proc/{pid}") and not _is_zombie(pid) for pid in workers), "a worker outlived its fork server"
            second = client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT}).json()["job_id"]
            assert wait_status(client, second, ("succeeded", "failed"))["status"] == "succeeded"
    finally:
        srv.stop()


def _parents(pids: list[int]) -> list[int]:
    parents = []
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            parents.append(int(f.read().rsplit(")", 1)[1].split()[1]))
    return parents


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_two_authorization_headers_are_refused(server: Server) -> None:
    headers = [("authorization", f"Bearer {TOKEN}"), ("authorization", "Bearer wrong"), ("content-type", "application/json")]
    response = httpx.post(f"{server.url}/v1/defrag", content=json.dumps({"snapshot": FIG15_SNAPSHOT}), headers=headers)
    assert response.status_code == 400 and "one Authorization header" in response.json()["error"]


def test_truncated_json_gets_422_not_500(server: Server) -> None:
    with server.client() as client:
        response = client.post("/v1/defrag", content=b'{"snapshot": {"nodes": [', headers={"content-type": "application/json"})
        assert response.status_code == 422 and "Traceback" not in response.text


def test_validate_and_report_endpoints(server: Server) -> None:
    plan = {
        "version": 1,
        "kind": "defrag",
        "waves": [[{"pod": "Job-7-0", "from": "node-2", "to": "node-3"}, {"pod": "Job-3-0", "from": "node-1", "to": "node-2"}]],
        "vacated_nodes": [],
    }
    with server.client() as client:
        checked = client.post("/v1/validate", json={"snapshot": FIG15_SNAPSHOT, "plan": plan}).json()
        assert checked["valid"] is False and checked["violations"][0]["kind"] == "over_capacity"
        report = client.post("/v1/report", json={"snapshot": FIG15_SNAPSHOT, "shape": "8g64c"}).json()
        assert report["summary"]["nodes_with_slack"] == 4 and report["stranded"]["requests_fit"] == 0
        assert client.post("/v1/report", json={"snapshot": FIG15_SNAPSHOT, "shape": "8x"}).status_code == 422


def test_metrics_count_jobs_and_solve_times(server: Server) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    with server.client() as client:
        before = time.time()
        client.post("/v1/defrag", params={"wait": 30}, json={"snapshot": FIG15_SNAPSHOT})
        response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for family in text_string_to_metric_families(response.text) for s in family.samples}
    assert samples[("planner_jobs", (("kind", "defrag"), ("status", "succeeded")))] >= 1
    assert samples[("planner_jobs_finished_total", (("kind", "defrag"), ("status", "succeeded")))] >= 1
    assert samples[("planner_queue_depth", ())] == 0
    assert samples[("planner_job_seconds_count", (("kind", "defrag"), ("method", "ipc")))] >= 1
    assert samples[("planner_last_plan_objective", (("kind", "defrag"),))] == 1  # Fig. 15: one node vacated
    assert samples[("planner_last_plan_moves", (("kind", "defrag"),))] == 3
    assert samples[("planner_last_success_timestamp_seconds", (("kind", "defrag"),))] >= before
    assert samples[("process_resident_memory_bytes", ())] > 10 * 2**20  # the process collector
    assert samples[("planner_snapshots", ())] >= 1
    raw, stored = samples[("planner_snapshot_bytes", (("form", "raw"),))], samples[("planner_snapshot_bytes", (("form", "stored"),))]
    assert raw >= len(json.dumps(FIG15_SNAPSHOT, separators=(",", ":"))) / 2 and 0 < stored < raw  # compressed


def test_cancel_stops_a_running_solve(server: Server, long_snapshot: dict) -> None:
    with server.client() as client:
        job_id = client.post("/v1/defrag", json=long_job(long_snapshot, 60)).json()["job_id"]
        wait_status(client, job_id, ("running",))
        workers = server.job_workers()
        assert workers, "no worker process found"
        cancelled = client.delete(f"/v1/jobs/{job_id}")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        assert wait_until(lambda: not set(server.descendants()) & set(workers))  # the worker process is gone
        assert client.get(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
        assert client.get(f"/v1/jobs/{job_id}/plan").status_code == 404
        assert client.delete(f"/v1/jobs/{'0' * 32}").status_code == 404
        assert client.delete("/v1/jobs/nope").status_code == 422  # not an id of the service: refused before the store


def test_full_queue_gets_429_with_retry_after(tmp_path: Path, long_snapshot: dict) -> None:
    srv = Server(tmp_path / "q.db", None, "--workers", "1", "--max-queue", "1").start()
    try:
        with srv.client() as client:
            running = client.post("/v1/defrag", json=long_job(long_snapshot, 60)).json()["job_id"]
            wait_status(client, running, ("running",))
            queued = client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT})
            assert queued.status_code == 202
            burst = [client.post("/v1/defrag", json={"snapshot": FIG15_SNAPSHOT}) for _ in range(5)]
            assert [r.status_code for r in burst] == [429] * 5
            assert all(r.headers["retry-after"].isdigit() for r in burst)
            client.delete(f"/v1/jobs/{running}")
            assert wait_status(client, queued.json()["job_id"], ("succeeded",))["status"] == "succeeded"
    finally:
        srv.stop()


def test_job_in_flight_survives_a_server_kill(tmp_path: Path, long_snapshot: dict) -> None:
    """The restarted server takes the job over once the killed one's lease (2 s) has expired (on
    PostgreSQL, another replica does: tests/service/test_service_replicas.py)."""
    srv = Server(tmp_path / "restart.db", None, "--workers", "1", "--lease-s", "2").start()
    try:
        with srv.client() as client:
            job_id = client.post("/v1/defrag", json=long_job(long_snapshot, 8)).json()["job_id"]
            wait_status(client, job_id, ("running",))
        srv.kill()  # SIGKILL: no chance to clean up
        srv.start()
        with srv.client() as client:
            status = wait_status(client, job_id, ("succeeded", "failed"))
            assert status["status"] == "succeeded" and status["attempts"] == 2
            plan = parse_plan(client.get(f"/v1/jobs/{job_id}/plan").text)
        assert validate(parse_cluster(json.dumps(long_snapshot)), plan) == []
    finally:
        srv.stop()


def test_a_worker_that_dies_leaves_the_job_failed_with_a_reason(tmp_path: Path, long_snapshot: dict) -> None:
    srv = Server(tmp_path / "die.db", None, "--workers", "1").start()
    try:
        with srv.client() as client:
            job_id = client.post("/v1/defrag", json=long_job(long_snapshot, 60)).json()["job_id"]
            wait_status(client, job_id, ("running",))
            workers = srv.job_workers()
            assert workers, "no worker process found"
            time.sleep(0.5)  # let the worker start solving
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            status = wait_status(client, job_id, ("failed", "succeeded"))
            assert status["status"] == "failed" and "worker process died" in status["error"]
    finally:
        srv.stop()


def test_a_job_that_cannot_finish_in_its_time_limit_is_refused_at_submission(tmp_path: Path, long_snapshot: dict) -> None:
    srv = Server(tmp_path / "limit.db", None, "--workers", "1", "--max-job-s", "3").start()
    try:
        with srv.client() as client:
            refused = client.post("/v1/defrag", json=long_job(long_snapshot, 60))
            assert refused.status_code == 422, refused.text
            assert "--max-job-s 3" in refused.json()["problems"][0] and "options.time_limit_s" in refused.json()["problems"][0]
    finally:
        srv.stop()


def test_job_time_limit_stops_the_worker(tmp_path: Path, long_snapshot: dict) -> None:
    """The safety net behind the admission estimate: a job that overruns is stopped and failed."""
    from planner.api.worker import Dispatcher
    from planner.service.database import sqlite_url
    from planner.service.store import Store

    store = Store(sqlite_url(str(tmp_path / "limit.db")))
    snapshot = json.dumps(long_snapshot)
    job, _ = store.create_job("defrag", {"method": "hybrid", "time_limit_s": 60}, snapshot, "digest")
    dispatcher = Dispatcher(store, concurrency=1, max_job_s=3)
    dispatcher.start()
    try:
        wait_until(lambda: store.get_job(job.id).status not in ("queued", "running"), interval_s=0.2)
        finished = store.get_job(job.id)
        assert finished.status == "failed" and "exceeded the job time limit of 3 s" in finished.error
        assert not dispatcher.running
    finally:
        dispatcher.stop()
        store.close()


def test_serve_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PLANNER_API_TOKEN"}
    result = subprocess.run([PLANNER, "serve", "--host", "0.0.0.0", "--db", str(tmp_path / "x.db")], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2 and "PLANNER_API_TOKEN" in result.stderr and "--insecure" in result.stderr


def test_cli_submit_for_cron(server: Server, tmp_path: Path) -> None:
    env = {**os.environ, "PLANNER_API_TOKEN": TOKEN}
    out = tmp_path / "plan.json"
    args = [PLANNER, "submit", str(FIG15), "--server", server.url, "--wait", "60", "--idempotency-key", "cron-1", "--out", str(out)]
    first = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert parse_plan(out.read_text()).vacated_nodes == ["node-0"]
    again = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0
    listed = subprocess.run([PLANNER, "jobs", "--server", server.url, "--json"], capture_output=True, text=True, env=env, timeout=60)
    keyed = [j for j in json.loads(listed.stdout)]
    assert listed.returncode == 0 and keyed
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**FIG15_SNAPSHOT, "pods": [{**FIG15_SNAPSHOT["pods"][0], "node": "n-9"}]}))
    rejected = subprocess.run([PLANNER, "submit", str(bad), "--server", server.url], capture_output=True, text=True, env=env, timeout=60)
    assert rejected.returncode == 2 and "unknown node 'n-9'" in rejected.stderr
    anonymous = {k: v for k, v in os.environ.items() if k != "PLANNER_API_TOKEN"}
    denied = subprocess.run([PLANNER, "plans", "--server", server.url], capture_output=True, text=True, env=anonymous, timeout=60)
    assert denied.returncode == 2 and "401" in denied.stderr
    down = subprocess.run([PLANNER, "jobs", "--server", "http://127.0.0.1:1"], capture_output=True, text=True, env=env, timeout=60)
    assert down.returncode == 4 and "cannot reach" in down.stderr


def test_openapi_has_examples_for_every_request_and_response(server: Server) -> None:
    with server.client() as client:
        spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name in ("DefragRequest", "JobAccepted", "JobStatus", "PlanSummary", "ValidateRequest", "ValidateResponse", "ReportRequest", "Problem"):
        assert schemas[name].get("examples"), name
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            ok = [code for code in operation["responses"] if code.startswith("2")]
            assert ok, (method, path)
            for code in ok:
                content = operation["responses"][code].get("content", {}).get("application/json")
                if content is None:
                    continue
                schema = content.get("schema", {})
                ref = schema.get("$ref", "").rsplit("/", 1)[-1]
                has_example = bool(content.get("example") or content.get("examples") or (ref and schemas.get(ref, {}).get("examples")))
                item = schema.get("items", {}).get("$ref", "").rsplit("/", 1)[-1]
                has_example |= bool(item and schemas.get(item, {}).get("examples"))
                has_example |= path == "/metrics" or (path == "/v1/plans" and method == "get")
                assert has_example, (method, path, code)
