"""The job store on SQLite and on a real PostgreSQL server: schema migrations (fresh and from a
database made before migrations), snapshots stored once per content, leases between replicas, and
concurrent claims and submissions from several store instances (as several replicas would)."""

from __future__ import annotations

import json
import threading
import time
import zlib

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext

from planner.service.database import StoreURLError, check_url
from planner.service.rows import Base
from planner.service.store import MAX_ATTEMPTS, Store
from tests.support.harness import wait_until

SNAPSHOT = json.dumps({"nodes": [{"name": f"n{i}", "gpus": 8} for i in range(200)], "pods": []})


def _config(connection: sa.Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", "planner.service:migrations")
    config.attributes["connection"] = connection
    return config


def test_a_fresh_database_gets_exactly_the_models_schema(database_url: str) -> None:
    store = Store(database_url)
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one() == "0002"
    Store(database_url).close()  # opening again is a no-op
    store.close()


def test_a_database_made_before_migrations_upgrades_without_losing_data(database_url: str) -> None:
    """Revision 0001 is the schema ``create_all`` made before Alembic; with alembic_version dropped
    the database looks exactly like one of those."""
    engine = sa.create_engine(database_url)
    with engine.begin() as conn:
        command.upgrade(_config(conn), "0001")
        conn.execute(sa.text("DROP TABLE alembic_version"))
        for i, text in enumerate([SNAPSHOT, SNAPSHOT, '{"nodes": []}']):
            conn.execute(
                sa.text(
                    "INSERT INTO jobs (id, kind, status, options, snapshot, request_digest, created_at, progress, attempts, plan_id) "
                    "VALUES (:id, 'defrag', :status, '{}', :snap, :d, :t, 0, 1, :plan)"
                ),
                {
                    "id": f"job{i}",
                    "status": "succeeded" if i == 0 else "running",
                    "snap": text,
                    "d": f"d{i}",
                    "t": 100.0 + i,
                    "plan": "plan0" if i == 0 else None,
                },
            )
        conn.execute(sa.text("INSERT INTO plans (id, job_id, kind, created_at, body) VALUES ('plan0', 'job0', 'defrag', 1, '{\"a\": 1}')"))
    engine.dispose()

    store = Store(database_url)
    assert [store.snapshot_of(f"job{i}") for i in range(3)] == [SNAPSHOT, SNAPSHOT, '{"nodes": []}']
    usage = store.snapshot_usage()
    assert usage["snapshots"] == 2 and usage["jobs"] == 3
    assert store.get_plan("plan0").body == {"a": 1} and store.get_job("job0").plan_id == "plan0"
    # a job the old version left running has no lease: it is taken over at once
    assert store.reclaim_expired() == {"requeued": 2, "failed": 0, "queued": 2}
    with store.engine.begin() as conn:  # and back: the snapshots are inline again
        command.downgrade(_config(conn), "0001")
        rows = dict(conn.execute(sa.text("SELECT id, snapshot FROM jobs")).all())
    assert rows == {"job0": SNAPSHOT, "job1": SNAPSHOT, "job2": '{"nodes": []}'}
    store.close()


def test_one_compressed_copy_per_snapshot_and_none_once_its_jobs_are_gone(database_url: str) -> None:
    store = Store(database_url)
    first, _ = store.create_job("defrag", {}, SNAPSHOT, "d1")
    second, _ = store.create_job("defrag", {"method": "exact"}, SNAPSHOT, "d2")  # the cron job sends the same cluster again
    other, _ = store.create_job("defrag", {}, '{"nodes": []}', "d3")
    usage = store.snapshot_usage()
    assert usage["snapshots"] == 2
    assert usage["raw_bytes"] == len(SNAPSHOT) + len('{"nodes": []}')
    assert usage["stored_bytes"] < usage["raw_bytes"] / 5  # 200 near-identical nodes compress well
    assert store.snapshot_of(second.id) == SNAPSHOT
    with store.session() as s:  # the stored bytes are the zlib of the text, keyed by its SHA-256
        import hashlib

        body = s.scalar(sa.text("SELECT body FROM snapshots WHERE sha256 = :h"), {"h": hashlib.sha256(SNAPSHOT.encode()).hexdigest()})
        assert zlib.decompress(body).decode() == SNAPSHOT
    for job in (first, second, other):
        store.cancel(job.id)
    assert store.delete_job(first.id)
    assert store.snapshot_usage()["snapshots"] == 2  # the second job still uses it
    assert store.purge_finished(time.time() + 1) == 2
    assert store.snapshot_usage() == {"snapshots": 0, "raw_bytes": 0, "stored_bytes": 0, "jobs": 0}
    store.close()


def test_leases_a_dead_replicas_job_is_taken_over_once_and_recorded_once(database_url: str) -> None:
    a, b = Store(database_url), Store(database_url)
    job, _ = a.create_job("defrag", {}, SNAPSHOT, "d")
    claimed = a.claim_next("replica-a", lease_s=120.0)  # leases no stall of a loaded machine lets lapse
    assert claimed.id == job.id and claimed.attempts == 1
    assert b.claim_next("replica-b", lease_s=120.0) is None
    assert b.reclaim_expired()["requeued"] == 0  # the lease holds
    assert a.renew("replica-a", [job.id], lease_s=120.0) == {job.id}
    assert b.renew("replica-b", [job.id], lease_s=120.0) == set()  # not b's
    assert a.renew("replica-a", [job.id], lease_s=0.5) == {job.id}  # its last renewal: replica a stops (killed)
    reclaims: list[dict] = []
    assert wait_until(lambda: reclaims.append(b.reclaim_expired()) or reclaims[-1]["requeued"]), reclaims  # once its lease lapses
    assert reclaims[-1] == {"requeued": 1, "failed": 0, "queued": 1} and all(r["requeued"] == 0 for r in reclaims[:-1])
    taken = b.claim_next("replica-b", lease_s=30.0)
    assert taken.id == job.id and taken.attempts == 2
    # replica a comes back from a stall: it no longer holds the job and cannot record an outcome
    assert a.renew("replica-a", [job.id]) == set()
    assert a.succeed(job.id, {"from": "a"}, {}, owner="replica-a") is None
    assert not a.fail(job.id, "late", owner="replica-a")
    plan = b.succeed(job.id, {"from": "b"}, {}, owner="replica-b")
    assert plan is not None and a.get_plan(plan.id).body == {"from": "b"}
    assert len(a.list_plans()) == 1 and a.get_job(job.id).status == "succeeded"
    a.close()
    b.close()


def test_a_job_interrupted_too_often_fails_with_the_reason(database_url: str) -> None:
    store = Store(database_url)
    job, _ = store.create_job("defrag", {}, SNAPSHOT, "d")
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert store.claim_next(f"replica-{attempt}", lease_s=0.2).attempts == attempt
        time.sleep(0.3)
        reclaimed = store.reclaim_expired()
    assert reclaimed == {"requeued": 0, "failed": 1, "queued": 0}
    assert store.get_job(job.id).status == "failed" and f"interrupted {MAX_ATTEMPTS} times" in store.get_job(job.id).error
    store.close()


def test_replicas_claiming_at_once_take_every_job_exactly_once(database_url: str) -> None:
    seed = Store(database_url)
    ids = {seed.create_job("defrag", {}, SNAPSHOT, f"d{i}")[0].id for i in range(60)}
    stores = [Store(database_url) for _ in range(4)]
    claims: list[list[str]] = [[] for _ in stores]

    def claim_all(k: int) -> None:
        while (job := stores[k].claim_next(f"replica-{k}")) is not None:
            claims[k].append(job.id)

    threads = [threading.Thread(target=claim_all, args=(k,)) for k in range(len(stores))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    taken = [job_id for c in claims for job_id in c]
    assert sorted(taken) == sorted(ids)  # every job once, none twice
    with seed.session() as s:
        by_owner = dict(s.execute(sa.text("SELECT id, lease_owner FROM jobs")).all())
    assert all(by_owner[job_id] == f"replica-{k}" for k, c in enumerate(claims) for job_id in c)
    for store in (seed, *stores):
        store.close()


def test_replicas_probing_a_fresh_store_at_once_all_succeed(database_url: str) -> None:
    """Readiness writes one probe row; replicas starting together on an empty store must not fail on
    each other's first insert (it once stopped a replica with a duplicate key on PostgreSQL)."""
    for _ in range(5):
        with Store(database_url).session() as s:  # an empty probes table each round
            s.execute(sa.text("DELETE FROM probes"))
            s.commit()
        stores = [Store(database_url) for _ in range(4)]
        errors: list[BaseException] = []
        start = threading.Barrier(len(stores))

        def probe(k: int) -> None:
            start.wait()
            try:
                stores[k].probe_write()
            except BaseException as error:  # noqa: BLE001 - collected for the assertion
                errors.append(error)

        threads = [threading.Thread(target=probe, args=(k,)) for k in range(len(stores))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        with stores[0].session() as s:
            assert s.execute(sa.text("SELECT count(*) FROM probes")).scalar_one() == 1
        for store in stores:
            store.close()


def test_the_same_idempotency_key_from_many_replicas_at_once_makes_one_job(database_url: str) -> None:
    stores = [Store(database_url) for _ in range(4)]
    results: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def submit(k: int) -> None:
        job, created = stores[k].create_job("defrag", {}, SNAPSHOT, "same", idempotency_key="nightly-2026-11-26")
        with lock:
            results.append((job.id, created))

    threads = [threading.Thread(target=submit, args=(k % 4,)) for k in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len({job_id for job_id, _ in results}) == 1 and sum(created for _, created in results) == 1
    assert stores[0].snapshot_usage()["jobs"] == 1
    for store in stores:
        store.close()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mysql://u@h/db", "unsupported database 'mysql'"),
        ("postgresql+asyncpg://u@h/db", "unsupported PostgreSQL driver 'asyncpg'"),
        ("postgresql://u@h", "no database name"),
        ("not a url", "not a database URL"),
    ],
)
def test_urls_the_store_cannot_use_are_refused_with_the_fix(url: str, expected: str) -> None:
    with pytest.raises(StoreURLError, match=expected) as refused:
        check_url(url)
    assert "postgresql+psycopg://USER" in str(refused.value) or "psycopg" in str(refused.value) or "/DATABASE" in str(refused.value)


def test_a_bare_postgresql_url_is_served_by_psycopg(postgres) -> None:  # type: ignore[no-untyped-def]
    url = postgres.create_database().replace("postgresql+psycopg://", "postgresql://")
    store = Store(url)
    assert store.engine.dialect.driver == "psycopg" and store.ping()
    store.close()


def test_planner_db_current_and_upgrade_for_operators_who_migrate_explicitly(postgres) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess

    from tests.support.harness import PLANNER

    database_url = postgres.create_database()
    engine = sa.create_engine(database_url)
    with engine.begin() as conn:
        command.upgrade(_config(conn), "0001")
    engine.dispose()
    env = {**os.environ, "DATABASE_URL": database_url}
    behind = subprocess.run([PLANNER, "db", "current"], capture_output=True, text=True, env=env, timeout=60)
    assert behind.returncode == 1 and behind.stdout.strip() == "revision 0001; newest 0002"
    upgraded = subprocess.run([PLANNER, "db", "upgrade"], capture_output=True, text=True, env=env, timeout=60)
    assert upgraded.returncode == 0 and upgraded.stdout.strip() == "revision 0001 -> 0002"
    current = subprocess.run([PLANNER, "db", "current"], capture_output=True, text=True, env=env, timeout=60)
    assert current.returncode == 0 and current.stdout.strip() == "revision 0002; newest 0002"
    bad = subprocess.run([PLANNER, "db", "current"], capture_output=True, text=True, env={**env, "DATABASE_URL": "mysql://x@y/z"}, timeout=60)
    assert bad.returncode == 2 and "DATABASE_URL: unsupported database 'mysql'" in bad.stderr and "Traceback" not in bad.stderr
