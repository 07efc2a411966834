"""Persistence of planning jobs and plans (SQLAlchemy; a SQLite file by default, PostgreSQL by URL).

A job is a request to plan (kind ``defrag`` today; preemption and topology later) with its snapshot
and options; it goes queued -> running -> succeeded | failed | cancelled. A plan is the result of a
succeeded job. Transitions are conditional updates (``... WHERE status = 'queued'``), so two
dispatchers or a dispatcher and a cancel can never both win.

Replicas (``planner serve`` processes sharing one database) share the queue through leases. A
replica claims a job (``claim_next``: on PostgreSQL ``SELECT ... FOR UPDATE SKIP LOCKED``, so two
replicas never wait on or take the same row) and holds it with a lease that it renews while the
job's worker runs (``renew``); its outcome is recorded only while the lease is still its own. A
replica that dies (``kill -9``, a lost node) stops renewing; once the lease has expired, any replica
applies the restart policy (``reclaim_expired``): the job is re-queued, since planning is a pure
function of the stored snapshot and options and running it again is safe, unless it was already
interrupted ``MAX_ATTEMPTS`` times, in which case it is marked ``failed`` (a job that kills its
worker every time must not loop forever). Lease times use the database's clock, so replicas' clocks
need not agree.

Snapshots are stored once per content (key: the SHA-256 of the canonical JSON), zlib-compressed.

The schema is managed by Alembic (``planner/service/migrations``): opening a store upgrades it to the
newest revision, under a PostgreSQL advisory lock so replicas starting together migrate once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import create_engine, delete, event, extract, func, inspect, select, text, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from planner.service.database import check_url, engine_url, rows_changed, sqlite_url
from planner.service.rows import JobRow, PlanRow, ProbeRow, SnapshotRow

MAX_ATTEMPTS = 3
LEASE_S = 30.0
"""How long a replica's claim on a running job holds without renewal (renewed every third of it)."""
MIGRATION_LOCK = 0x706C616E6E6572
"""PostgreSQL advisory lock key held while a replica migrates the schema ("planner" in hex)."""
ZLIB_LEVEL = 6
STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINISHED = ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class Job:
    """A job as callers see it (no snapshot: that can be large)."""

    id: str
    kind: str
    status: str
    options: dict[str, Any]
    idempotency_key: str | None
    request_digest: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    progress: float
    error: str | None
    attempts: int
    plan_id: str | None


@dataclass(frozen=True)
class Plan:
    id: str
    job_id: str
    kind: str
    created_at: float
    method: str | None
    status: str | None
    objective: float | None
    body: dict[str, Any]


class QueueFull(Exception):
    """The queue holds its maximum of jobs; try again later."""


class IdempotencyConflict(Exception):
    """An Idempotency-Key reused with a different request."""


def _job(row: JobRow) -> Job:
    return Job(
        row.id,
        row.kind,
        row.status,
        json.loads(row.options),
        row.idempotency_key,
        row.request_digest,
        row.created_at,
        row.started_at,
        row.finished_at,
        row.progress,
        row.error,
        row.attempts,
        row.plan_id,
    )


def _plan(row: PlanRow) -> Plan:
    return Plan(row.id, row.job_id, row.kind, row.created_at, row.method, row.status, row.objective, json.loads(row.body))


def migrate(connection: Connection) -> None:
    """Upgrade the schema on ``connection`` to the newest revision (in its transaction). A database
    created before migrations (tables, no ``alembic_version``) is first stamped with revision 0001."""
    # deferred: Alembic (its migrations), only when a schema is upgraded
    from alembic import command
    from alembic.config import Config

    if connection.dialect.name == "postgresql":  # replicas starting together: one migrates, the others wait
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
    config = Config()
    config.set_main_option("script_location", "planner.service:migrations")
    config.attributes["connection"] = connection
    tables = set(inspect(connection).get_table_names())
    if "jobs" in tables and "alembic_version" not in tables:
        command.stamp(config, "0001")
    command.upgrade(config, "head")


def pack_snapshot(snapshot: str) -> tuple[str, bytes, int]:
    """(SHA-256 of the text, its zlib compression, its size in bytes)."""
    raw = snapshot.encode()
    return hashlib.sha256(raw).hexdigest(), zlib.compress(raw, ZLIB_LEVEL), len(raw)


class Store:
    """Jobs and plans in one database."""

    def __init__(self, url: str, create: bool = True):
        """``create``: migrate the schema to the newest revision (the server does; its job processes
        open the store it prepared)."""
        self.url = url
        self.dialect = check_url(url)
        kwargs: dict[str, Any] = {"pool_pre_ping": True}
        if self.dialect == "sqlite":
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        elif self.dialect == "postgresql":
            kwargs["connect_args"] = {"connect_timeout": 10}
        self.engine = create_engine(engine_url(url), **kwargs)
        if self.dialect == "sqlite":

            @event.listens_for(self.engine, "connect")
            def _sqlite_pragmas(connection: Any, _record: Any) -> None:
                cursor = connection.cursor()
                cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
                cursor.execute("PRAGMA synchronous=NORMAL")
                cursor.execute("PRAGMA busy_timeout=30000")
                cursor.execute("PRAGMA foreign_keys=ON")
                cursor.close()

        if create:
            with self.engine.begin() as connection:
                migrate(connection)
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    def _announce_end(self, s: Session, job_id: str) -> None:
        """PostgreSQL: tell every replica the job ended (``planner/api/job_events.py``), on commit."""
        if self.dialect == "postgresql":
            s.execute(text("SELECT pg_notify('planner_jobs', :id)"), {"id": job_id})

    def _now(self) -> Any:
        """The database's clock in Unix seconds, as an SQL expression: leases are compared on one clock."""
        if self.dialect == "postgresql":
            return extract("epoch", func.clock_timestamp())
        return (func.julianday("now") - 2440587.5) * 86400.0

    def ping(self) -> bool:
        with self.session() as s:
            s.execute(select(1))
        return True

    def probe_write(self) -> None:
        """Write one row (raises when the store cannot write: full disk, read-only file or database).
        One upsert: replicas starting together on an empty store each inserting the row when they
        found none stopped one of them on the other's key."""
        insert = postgresql_insert if self.dialect == "postgresql" else sqlite_insert
        now = time.time()
        statement = insert(ProbeRow).values(id=1, at=now).on_conflict_do_update(index_elements=[ProbeRow.id], set_={"at": now})
        with self._writing() as s:
            s.execute(statement)
            s.commit()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[Session]:
        """A session for a write. A database error drops the pooled connections: SQLite keeps a
        connection opened on a read-only file read-only for good, so writes only work again once the
        file is writable and the connection is new."""
        try:
            with self.session() as s:
                yield s
        except DBAPIError:
            self.engine.dispose()
            raise

    # -- jobs ------------------------------------------------------------------------------------

    def create_job(
        self,
        kind: str,
        options: dict[str, Any],
        snapshot: str,
        request_digest: str,
        idempotency_key: str | None = None,
        max_queued: int | None = None,
    ) -> tuple[Job, bool]:
        """A new queued job, or the existing one for this idempotency key; (job, created). The
        snapshot is stored once per content."""
        if idempotency_key is not None:
            existing = self.job_by_key(idempotency_key)
            if existing is not None:
                return self._same_request(existing, kind, request_digest), False
        digest, body, raw_bytes = pack_snapshot(snapshot)
        for attempt in range(3):
            with self._writing() as s:
                if max_queued is not None:
                    queued = s.scalar(select(func.count()).select_from(JobRow).where(JobRow.status == "queued")) or 0
                    if queued >= max_queued:
                        raise QueueFull
                self._put_snapshot(s, digest, body, raw_bytes)
                row = JobRow(
                    id=uuid.uuid4().hex,
                    kind=kind,
                    status="queued",
                    options=json.dumps(options),
                    snapshot_sha256=digest,
                    idempotency_key=idempotency_key,
                    request_digest=request_digest,
                    created_at=time.time(),
                    progress=0.0,
                    attempts=0,
                )
                s.add(row)
                try:
                    s.commit()
                except IntegrityError:
                    s.rollback()
                    existing = self.job_by_key(idempotency_key) if idempotency_key is not None else None
                    if existing is not None:  # another request with the same key won the race
                        return self._same_request(existing, kind, request_digest), False
                    if attempt == 2:
                        raise
                    continue  # retention deleted the snapshot row between our insert and the job's: again
                return _job(row), True
        raise AssertionError("unreachable")

    def _put_snapshot(self, s: Session, digest: str, body: bytes, raw_bytes: int) -> None:
        """Insert the snapshot unless a row with its hash exists (concurrent inserts included)."""
        insert = postgresql_insert if self.dialect == "postgresql" else sqlite_insert
        s.execute(
            insert(SnapshotRow).values(sha256=digest, body=body, raw_bytes=raw_bytes, created_at=time.time()).on_conflict_do_nothing(index_elements=["sha256"])
        )

    @staticmethod
    def _same_request(job: Job, kind: str, digest: str) -> Job:
        """``job`` when the request with its key is this one (same kind, same digest); else the key
        was used for a different request (``IdempotencyConflict``: the API's 409)."""
        if job.kind != kind or job.request_digest != digest:
            raise IdempotencyConflict(job.id)
        return job

    def job_by_key(self, key: str) -> Job | None:
        with self.session() as s:
            row = s.scalar(select(JobRow).where(JobRow.idempotency_key == key))
            return _job(row) if row else None

    def get_job(self, job_id: str) -> Job | None:
        with self.session() as s:
            row = s.get(JobRow, job_id)
            return _job(row) if row else None

    def snapshot_of(self, job_id: str) -> str | None:
        with self.session() as s:
            body = s.scalar(select(SnapshotRow.body).join(JobRow, JobRow.snapshot_sha256 == SnapshotRow.sha256).where(JobRow.id == job_id))
            return None if body is None else zlib.decompress(body).decode()

    def snapshot_usage(self) -> dict[str, int]:
        """Stored snapshots: how many, their bytes as received and as stored, and how many jobs use them."""
        with self.session() as s:
            count, raw, stored = s.execute(
                select(func.count(), func.coalesce(func.sum(SnapshotRow.raw_bytes), 0), func.coalesce(func.sum(func.length(SnapshotRow.body)), 0))
            ).one()
            jobs = s.scalar(select(func.count()).select_from(JobRow))
        return {"snapshots": count, "raw_bytes": int(raw), "stored_bytes": int(stored), "jobs": jobs}

    def claim_next(self, owner: str = "local", lease_s: float = LEASE_S) -> Job | None:
        """Mark the oldest queued job running under a lease of ``owner`` and return it (None when the
        queue is empty). On PostgreSQL the candidate row is locked with SKIP LOCKED: replicas claiming
        at once take different jobs without waiting on each other."""
        with self._writing() as s:
            candidates = select(JobRow.id).where(JobRow.status == "queued").order_by(JobRow.created_at)
            if self.dialect == "postgresql":
                candidates = candidates.limit(1).with_for_update(skip_locked=True)
            else:
                candidates = candidates.limit(5)
            for job_id in s.scalars(candidates).all():
                done = s.execute(
                    update(JobRow)
                    .where(JobRow.id == job_id, JobRow.status == "queued")
                    .values(
                        status="running",
                        started_at=time.time(),
                        attempts=JobRow.attempts + 1,
                        progress=0.0,
                        lease_owner=owner,
                        lease_expires_at=self._now() + lease_s,
                    )
                )
                s.commit()
                if rows_changed(done) == 1:
                    return _job(s.get_one(JobRow, job_id, populate_existing=True))
        return None

    def renew(self, owner: str, job_ids: list[str], lease_s: float = LEASE_S) -> set[str]:
        """Extend ``owner``'s leases on these running jobs; the ids it still holds (a job missing
        from the answer was cancelled, or taken over after its lease expired)."""
        if not job_ids:
            return set()
        held = (JobRow.id.in_(job_ids), JobRow.status == "running", JobRow.lease_owner == owner)
        with self._writing() as s:
            s.execute(update(JobRow).where(*held).values(lease_expires_at=self._now() + lease_s))
            ids = set(s.scalars(select(JobRow.id).where(*held)))
            s.commit()
            return ids

    def set_progress(self, job_id: str, progress: float) -> None:
        with self._writing() as s:
            s.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running").values(progress=progress))
            s.commit()

    def succeed(self, job_id: str, plan_body: dict[str, Any], summary: dict[str, Any], owner: str | None = None) -> Plan | None:
        """Store the plan and mark the job succeeded; None when the job is no longer running (cancelled)
        or, given ``owner``, no longer under its lease (another replica took it over)."""
        with self._writing() as s:
            plan = PlanRow(
                id=uuid.uuid4().hex,
                job_id=job_id,
                kind=summary.get("kind", "defrag"),
                created_at=time.time(),
                method=summary.get("method"),
                status=summary.get("status"),
                objective=summary.get("objective"),
                body=json.dumps(plan_body),
            )
            held = () if owner is None else (JobRow.lease_owner == owner,)
            done = s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status == "running", *held)
                .values(status="succeeded", finished_at=time.time(), progress=1.0, plan_id=plan.id)
            )
            if rows_changed(done) != 1:
                s.rollback()
                return None
            s.add(plan)
            self._announce_end(s, job_id)
            s.commit()
            return _plan(plan)

    def fail(self, job_id: str, error: str, owner: str | None = None) -> bool:
        """Mark a queued or running job failed (given ``owner``: only while under its lease)."""
        held = () if owner is None else (JobRow.lease_owner == owner,)
        with self._writing() as s:
            done = s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status.in_(("queued", "running")), *held)
                .values(status="failed", finished_at=time.time(), error=error)
            )
            if rows_changed(done) == 1:
                self._announce_end(s, job_id)
            s.commit()
            return rows_changed(done) == 1

    def cancel(self, job_id: str) -> str | None:
        """Cancel a queued or running job; returns the job's status afterwards (None: no such job)."""
        with self._writing() as s:
            s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status.in_(("queued", "running")))
                .values(status="cancelled", finished_at=time.time(), error="cancelled by request")
            )
            self._announce_end(s, job_id)
            s.commit()
            return s.scalar(select(JobRow.status).where(JobRow.id == job_id))

    def delete_job(self, job_id: str) -> bool:
        """Delete a finished job with its snapshot and its plans; False if there is no such finished job."""
        with self._writing() as s:
            done = s.execute(delete(JobRow).where(JobRow.id == job_id, JobRow.status.in_(FINISHED)))
            if rows_changed(done) == 1:
                s.execute(delete(PlanRow).where(PlanRow.job_id == job_id))
                self._delete_orphan_snapshots(s)
            s.commit()
            return rows_changed(done) == 1

    @staticmethod
    def _delete_orphan_snapshots(s: Session) -> None:
        s.execute(delete(SnapshotRow).where(~select(JobRow.id).where(JobRow.snapshot_sha256 == SnapshotRow.sha256).exists()))

    def purge_finished(self, before: float) -> int:
        """Delete the jobs that finished before ``before`` (Unix s), with their snapshots and plans; how many."""
        with self._writing() as s:
            old = select(JobRow.id).where(JobRow.status.in_(FINISHED), JobRow.finished_at < before)
            s.execute(delete(PlanRow).where(PlanRow.job_id.in_(old)))
            done = s.execute(delete(JobRow).where(JobRow.status.in_(FINISHED), JobRow.finished_at < before))
            if rows_changed(done):
                self._delete_orphan_snapshots(s)
            s.commit()
            return rows_changed(done)

    def delete_plan(self, plan_id: str) -> bool:
        """Delete a stored plan (its job then has none); False if there is no such plan."""
        with self._writing() as s:
            done = s.execute(delete(PlanRow).where(PlanRow.id == plan_id))
            if rows_changed(done) == 1:
                s.execute(update(JobRow).where(JobRow.plan_id == plan_id).values(plan_id=None))
            s.commit()
            return rows_changed(done) == 1

    def reclaim_expired(self) -> dict[str, int]:
        """Apply the restart policy to running jobs whose lease has expired, and to running jobs with
        no lease at all (left by a version before leases); see the module docstring."""
        expired = (JobRow.status == "running") & (JobRow.lease_owner.is_(None) | (JobRow.lease_expires_at < self._now()))
        with self._writing() as s:
            failed = rows_changed(
                s.execute(
                    update(JobRow)
                    .where(expired, JobRow.attempts >= MAX_ATTEMPTS)
                    .values(
                        status="failed",
                        finished_at=time.time(),
                        error=f"interrupted {MAX_ATTEMPTS} times (server restarts or worker crashes); not retried",
                    )
                )
            )
            requeued = rows_changed(
                s.execute(update(JobRow).where(expired).values(status="queued", progress=0.0, started_at=None, lease_owner=None, lease_expires_at=None))
            )
            queued = s.scalar(select(func.count()).select_from(JobRow).where(JobRow.status == "queued")) or 0
            s.commit()
        return {"requeued": requeued, "failed": failed, "queued": queued}

    def counts(self) -> dict[tuple[str, str], int]:
        """Jobs by (kind, status)."""
        with self.session() as s:
            rows = s.execute(select(JobRow.kind, JobRow.status, func.count()).group_by(JobRow.kind, JobRow.status))
            return {(kind, status): n for kind, status, n in rows}

    def queue_depth(self) -> int:
        with self.session() as s:
            return s.scalar(select(func.count()).select_from(JobRow).where(JobRow.status == "queued")) or 0

    def list_jobs(self, status: str | None = None, limit: int = 50) -> list[Job]:
        with self.session() as s:
            query = select(JobRow).order_by(JobRow.created_at.desc()).limit(limit)
            if status is not None:
                query = query.where(JobRow.status == status)
            return [_job(r) for r in s.scalars(query)]

    # -- plans -----------------------------------------------------------------------------------

    def get_plan(self, plan_id: str) -> Plan | None:
        with self.session() as s:
            row = s.get(PlanRow, plan_id)
            return _plan(row) if row else None

    def list_plans(self, kind: str | None = None, since: float | None = None, limit: int = 50) -> list[Plan]:
        """Stored plans, newest first, without their bodies (``get_plan`` has those)."""
        columns = (PlanRow.id, PlanRow.job_id, PlanRow.kind, PlanRow.created_at, PlanRow.method, PlanRow.status, PlanRow.objective)
        with self.session() as s:
            query = select(*columns).order_by(PlanRow.created_at.desc()).limit(limit)
            if kind is not None:
                query = query.where(PlanRow.kind == kind)
            if since is not None:
                query = query.where(PlanRow.created_at >= since)
            return [Plan(*row, body={}) for row in s.execute(query)]

    def close(self) -> None:
        self.engine.dispose()


def open_store(url: str | None, path: str = "planner.db") -> Store:
    """``url`` (e.g. from DATABASE_URL: postgresql+psycopg://...) or a SQLite file at ``path``."""
    return Store(url or sqlite_url(path))
