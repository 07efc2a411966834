"""Two `planner serve` replicas on one real PostgreSQL database: they migrate once, share the queue
(every job runs and is recorded exactly once), a job running on a replica killed with -9 is taken
over by the other once its lease expires, and a cancel sent to one replica stops the worker on the
other."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from planner.plans import parse_plan
from planner.snapshot import cluster_to_dict, parse_cluster
from planner.validate.defrag import validate
from tests.support.harness import Server, wait_status
from tests.support.paths import FIG15

TOKEN = "replica-token-0123456789"
LEASE_S = 6.0
"""Short enough for a take-over within the test, long enough that a loaded machine does not let a live
replica's lease lapse (renewed every 2 s; at 2 s, renewed every 0.67 s, a loaded run re-queued jobs of a live replica)."""
SHARED_LEASE_S = 60.0
"""The queue-sharing test takes over nothing: a lease no load can make lapse."""
WAIT_S = 180.0
"""Deadline for any job or worker condition here (generous: never what a quiet machine needs)."""


@pytest.fixture
def replicas(tmp_path: Path, postgres, request: pytest.FixtureRequest) -> tuple[Server, Server, str]:  # type: ignore[no-untyped-def]
    url = postgres.create_database()
    lease_s = getattr(request, "param", LEASE_S)
    servers = [Server(tmp_path / f"replica{k}.db", TOKEN, "--workers", "1", "--lease-s", str(lease_s), env={"DATABASE_URL": url}) for k in range(2)]
    errors: list[BaseException] = []

    def start(server: Server) -> None:
        try:
            server.start()
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=start, args=(s,)) for s in servers]  # at once: both migrate a fresh database
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert not errors, errors
        yield servers[0], servers[1], url
    finally:
        for server in servers:
            server.stop()


def _rows(url: str, query: str) -> list[tuple]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(sa.text(query))]
    engine.dispose()
    return rows


@pytest.fixture(scope="module")
def long_snapshot() -> dict:
    from planner.instances.asi import generate_asi

    return cluster_to_dict(generate_asi(nodes=2000, seed=4, allocation=0.75))


@pytest.mark.parametrize("replicas", [SHARED_LEASE_S], indirect=True)
def test_two_replicas_share_the_queue_and_record_every_job_once(replicas: tuple[Server, Server, str]) -> None:
    a, b, url = replicas
    assert _rows(url, "SELECT version_num FROM alembic_version") == [("0002",)]
    snapshot = json.loads(FIG15.read_text())
    ids = []
    with a.client() as ca, b.client() as cb:
        for i in range(16):
            client = ca if i % 2 == 0 else cb
            response = client.post("/v1/defrag", json={"snapshot": snapshot, "options": {"seed": i}}, headers={"Idempotency-Key": f"k{i}"})
            assert response.status_code == 202
            ids.append(response.json()["job_id"])
        again = cb.post("/v1/defrag", json={"snapshot": snapshot, "options": {"seed": 0}}, headers={"Idempotency-Key": "k0"})
        assert again.json()["job_id"] == ids[0]  # the other replica knows the key
        for job_id in ids:
            assert wait_status(ca, job_id, ("succeeded", "failed"), timeout_s=WAIT_S)["status"] == "succeeded"
    plans = _rows(url, "SELECT job_id, count(*) FROM plans GROUP BY job_id")
    assert sorted(plans) == sorted((job_id, 1) for job_id in ids)
    owners = {row[0].rsplit(":", 1)[0] for row in _rows(url, "SELECT lease_owner FROM jobs")}
    assert len(owners) == 2, f"one replica ran every job: {owners}"
    assert _rows(url, "SELECT count(*), max(attempts) FROM jobs") == [(16, 1)]
    assert _rows(url, "SELECT count(*) FROM snapshots") == [(1,)]  # sixteen jobs, one stored snapshot


def test_a_job_on_a_replica_killed_with_minus_9_is_taken_over(replicas: tuple[Server, Server, str], long_snapshot: dict) -> None:
    a, b, url = replicas
    with a.client() as ca:
        job_id = ca.post("/v1/defrag", json={"snapshot": long_snapshot, "options": {"method": "hybrid", "time_limit_s": 6}}).json()["job_id"]
        wait_status(ca, job_id, ("running",), timeout_s=WAIT_S)
    (owner,) = _rows(url, f"SELECT lease_owner FROM jobs WHERE id = '{job_id}'")[0]
    victim, survivor = (a, b) if f":{a.process.pid}:" in owner else (b, a)
    assert f":{victim.process.pid}:" in owner
    killed_at = time.monotonic()
    victim.kill()
    with survivor.client() as client:
        status = wait_status(client, job_id, ("succeeded", "failed"), timeout_s=WAIT_S)
        assert status["status"] == "succeeded" and status["attempts"] == 2
        plan = parse_plan(client.get(f"/v1/jobs/{job_id}/plan").text)
    assert time.monotonic() - killed_at > LEASE_S  # not before the lease expired
    (new_owner,) = _rows(url, f"SELECT lease_owner FROM jobs WHERE id = '{job_id}'")[0]
    assert f":{survivor.process.pid}:" in new_owner
    assert _rows(url, f"SELECT count(*) FROM plans WHERE job_id = '{job_id}'") == [(1,)]
    assert validate(parse_cluster(json.dumps(long_snapshot)), plan) == []
    assert "re-queued" in survivor.log.read_text()


def test_a_cancel_sent_to_one_replica_stops_the_worker_on_the_other(replicas: tuple[Server, Server, str], long_snapshot: dict) -> None:
    a, b, url = replicas
    with a.client() as ca, b.client() as cb:
        job_id = ca.post("/v1/defrag", json={"snapshot": long_snapshot, "options": {"method": "hybrid", "time_limit_s": 60}}).json()["job_id"]
        wait_status(ca, job_id, ("running",), timeout_s=WAIT_S)
        (owner,) = _rows(url, f"SELECT lease_owner FROM jobs WHERE id = '{job_id}'")[0]
        runner, _other, other_client = (a, b, cb) if f":{a.process.pid}:" in owner else (b, a, ca)
        workers = runner.job_workers()
        assert workers
        assert other_client.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
        deadline = time.monotonic() + WAIT_S  # the runner learns it at its next renewal (a third of the lease), or later under load
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in workers), "the running replica kept solving a cancelled job"
    deadline = time.monotonic() + WAIT_S  # logged once the stopped worker has been joined
    while "no longer ours" not in runner.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "no longer ours" in runner.log.read_text()
    assert _rows(url, f"SELECT count(*) FROM plans WHERE job_id = '{job_id}'") == [(0,)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
