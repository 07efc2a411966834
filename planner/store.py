"""Persistence of planning jobs and plans (SQLAlchemy; a SQLite file by default, PostgreSQL by URL).

A job is a request to plan (kind ``defrag`` today; preemption and topology later) with its snapshot
and options; it goes queued -> running -> succeeded | failed | cancelled. A plan is the result of a
succeeded job. Transitions are conditional updates (``... WHERE status = 'queued'``), so two
dispatchers or a dispatcher and a cancel can never both win.

Restart policy (``recover``): jobs a previous process left ``queued`` stay queued and run; jobs it
left ``running`` are re-queued, since planning is a pure function of the stored snapshot and options
and running it again is safe, unless they were already interrupted ``MAX_ATTEMPTS`` times, in which
case they are marked ``failed`` (a job that kills its worker every time must not loop forever).
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Float, Integer, String, Text, create_engine, delete, event, func, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker

MAX_ATTEMPTS = 3
STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
FINISHED = ("succeeded", "failed", "cancelled")


class Base(DeclarativeBase):
    pass


class JobRow(Base):
    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    options: Mapped[str] = mapped_column(Text)
    snapshot: Mapped[str] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), unique=True, nullable=True)
    request_digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Float, index=True)
    started_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    plan_id: Mapped[str | None] = mapped_column(String(32), nullable=True)


class ProbeRow(Base):
    """One row rewritten by ``Store.probe_write``: readiness is whether the store can write."""

    __tablename__ = "probes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[float] = mapped_column(Float)


class PlanRow(Base):
    __tablename__ = "plans"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    job_id: Mapped[str] = mapped_column(String(32), index=True)
    kind: Mapped[str] = mapped_column(String(32), index=True)
    created_at: Mapped[float] = mapped_column(Float, index=True)
    method: Mapped[str | None] = mapped_column(String(32), nullable=True)
    status: Mapped[str | None] = mapped_column(String(16), nullable=True)
    objective: Mapped[float | None] = mapped_column(Float, nullable=True)
    body: Mapped[str] = mapped_column(Text)


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
        row.id, row.kind, row.status, json.loads(row.options), row.idempotency_key, row.request_digest,
        row.created_at, row.started_at, row.finished_at, row.progress, row.error, row.attempts, row.plan_id,
    )


def _plan(row: PlanRow) -> Plan:
    return Plan(row.id, row.job_id, row.kind, row.created_at, row.method, row.status, row.objective, json.loads(row.body))


def sqlite_url(path: str) -> str:
    return f"sqlite:///{path}"


class Store:
    """Jobs and plans in one database."""

    def __init__(self, url: str, create: bool = True):
        self.url = url
        kwargs: dict[str, Any] = {"pool_pre_ping": True}
        if url.startswith("sqlite"):
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        self.engine = create_engine(url, **kwargs)
        if url.startswith("sqlite"):

            @event.listens_for(self.engine, "connect")
            def _sqlite_pragmas(connection: Any, _record: Any) -> None:
                cursor = connection.cursor()
                cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
                cursor.execute("PRAGMA synchronous=NORMAL")
                cursor.execute("PRAGMA busy_timeout=30000")
                cursor.close()

        if create:
            Base.metadata.create_all(self.engine)
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    def ping(self) -> bool:
        with self.session() as s:
            s.execute(select(1))
        return True

    def probe_write(self) -> None:
        """Write one row (raises when the store cannot write: full disk, read-only file or database)."""
        with self._writing() as s:
            row = s.get(ProbeRow, 1)
            if row is None:
                s.add(ProbeRow(id=1, at=time.time()))
            else:
                row.at = time.time()
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
        """A new queued job, or the existing one for this idempotency key; (job, created)."""
        if idempotency_key is not None:
            existing = self.job_by_key(idempotency_key)
            if existing is not None:
                return self._same_request(existing, request_digest), False
        with self._writing() as s:
            if max_queued is not None:
                queued = s.scalar(select(func.count()).select_from(JobRow).where(JobRow.status == "queued"))
                if queued >= max_queued:
                    raise QueueFull
            row = JobRow(
                id=uuid.uuid4().hex,
                kind=kind,
                status="queued",
                options=json.dumps(options),
                snapshot=snapshot,
                idempotency_key=idempotency_key,
                request_digest=request_digest,
                created_at=time.time(),
                progress=0.0,
                attempts=0,
            )
            s.add(row)
            try:
                s.commit()
            except IntegrityError:  # another request with the same key won the race
                s.rollback()
                existing = self.job_by_key(idempotency_key or "")
                if existing is None:
                    raise
                return self._same_request(existing, request_digest), False
            return _job(row), True

    @staticmethod
    def _same_request(job: Job, digest: str) -> Job:
        if job.request_digest != digest:
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
            return s.scalar(select(JobRow.snapshot).where(JobRow.id == job_id))

    def claim_next(self) -> Job | None:
        """Mark the oldest queued job running and return it (None when the queue is empty)."""
        with self._writing() as s:
            for job_id in s.scalars(select(JobRow.id).where(JobRow.status == "queued").order_by(JobRow.created_at).limit(5)):
                done = s.execute(
                    update(JobRow)
                    .where(JobRow.id == job_id, JobRow.status == "queued")
                    .values(status="running", started_at=time.time(), attempts=JobRow.attempts + 1, progress=0.0)
                )
                s.commit()
                if done.rowcount == 1:
                    return _job(s.get(JobRow, job_id, populate_existing=True))
        return None

    def set_progress(self, job_id: str, progress: float) -> None:
        with self._writing() as s:
            s.execute(update(JobRow).where(JobRow.id == job_id, JobRow.status == "running").values(progress=progress))
            s.commit()

    def succeed(self, job_id: str, plan_body: dict[str, Any], summary: dict[str, Any]) -> Plan | None:
        """Store the plan and mark the job succeeded; None when the job is no longer running (cancelled)."""
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
            done = s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status == "running")
                .values(status="succeeded", finished_at=time.time(), progress=1.0, plan_id=plan.id)
            )
            if done.rowcount != 1:
                s.rollback()
                return None
            s.add(plan)
            s.commit()
            return _plan(plan)

    def fail(self, job_id: str, error: str) -> bool:
        with self._writing() as s:
            done = s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status.in_(("queued", "running")))
                .values(status="failed", finished_at=time.time(), error=error)
            )
            s.commit()
            return done.rowcount == 1

    def cancel(self, job_id: str) -> str | None:
        """Cancel a queued or running job; returns the job's status afterwards (None: no such job)."""
        with self._writing() as s:
            s.execute(
                update(JobRow)
                .where(JobRow.id == job_id, JobRow.status.in_(("queued", "running")))
                .values(status="cancelled", finished_at=time.time(), error="cancelled by request")
            )
            s.commit()
            return s.scalar(select(JobRow.status).where(JobRow.id == job_id))

    def delete_job(self, job_id: str) -> bool:
        """Delete a finished job with its snapshot and its plans; False if there is no such finished job."""
        with self._writing() as s:
            done = s.execute(delete(JobRow).where(JobRow.id == job_id, JobRow.status.in_(FINISHED)))
            if done.rowcount == 1:
                s.execute(delete(PlanRow).where(PlanRow.job_id == job_id))
            s.commit()
            return done.rowcount == 1

    def purge_finished(self, before: float) -> int:
        """Delete the jobs that finished before ``before`` (Unix s), with their snapshots and plans; how many."""
        with self._writing() as s:
            old = select(JobRow.id).where(JobRow.status.in_(FINISHED), JobRow.finished_at < before)
            s.execute(delete(PlanRow).where(PlanRow.job_id.in_(old)))
            done = s.execute(delete(JobRow).where(JobRow.status.in_(FINISHED), JobRow.finished_at < before))
            s.commit()
            return done.rowcount

    def delete_plan(self, plan_id: str) -> bool:
        """Delete a stored plan (its job then has none); False if there is no such plan."""
        with self._writing() as s:
            done = s.execute(delete(PlanRow).where(PlanRow.id == plan_id))
            if done.rowcount == 1:
                s.execute(update(JobRow).where(JobRow.plan_id == plan_id).values(plan_id=None))
            s.commit()
            return done.rowcount == 1

    def recover(self) -> dict[str, int]:
        """Apply the restart policy to jobs a previous process left behind (see the module docstring)."""
        with self._writing() as s:
            failed = s.execute(
                update(JobRow)
                .where(JobRow.status == "running", JobRow.attempts >= MAX_ATTEMPTS)
                .values(
                    status="failed",
                    finished_at=time.time(),
                    error=f"interrupted {MAX_ATTEMPTS} times (server restarts or worker crashes); not retried",
                )
            ).rowcount
            requeued = s.execute(
                update(JobRow).where(JobRow.status == "running").values(status="queued", progress=0.0, started_at=None)
            ).rowcount
            queued = s.scalar(select(func.count()).select_from(JobRow).where(JobRow.status == "queued"))
            s.commit()
        return {"requeued": requeued, "failed": failed, "queued": queued}

    def counts(self) -> dict[tuple[str, str], int]:
        """Jobs by (kind, status)."""
        with self.session() as s:
            rows = s.execute(select(JobRow.kind, JobRow.status, func.count()).group_by(JobRow.kind, JobRow.status))
            return {(kind, status): n for kind, status, n in rows}

    def queue_depth(self) -> int:
        with self.session() as s:
            return s.scalar(select(func.count()).select_from(JobRow).where(JobRow.status == "queued"))

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

