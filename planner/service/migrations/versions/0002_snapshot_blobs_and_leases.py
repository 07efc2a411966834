"""Snapshots stored once per content, compressed; job leases for replicas sharing one database.

* ``snapshots``: one row per distinct snapshot (key: SHA-256 of its canonical JSON, the same hash a
  plan's provenance reports), zlib-compressed; jobs refer to it by ``snapshot_sha256``. A cron job
  sending the same cluster every night keeps one copy.
* ``jobs.lease_owner`` / ``jobs.lease_expires_at``: the replica running a job and until when (the
  database's clock) its lease holds; another replica takes the job over once it has expired.

Existing jobs' inline snapshots are moved into ``snapshots``; nothing is lost (``downgrade`` moves
them back).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import hashlib
import zlib

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

ZLIB_LEVEL = 6


def upgrade() -> None:
    op.create_table(
        "snapshots",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("raw_bytes", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("snapshot_sha256", sa.String(64), nullable=True))
        batch.add_column(sa.Column("lease_owner", sa.String(128), nullable=True))
        batch.add_column(sa.Column("lease_expires_at", sa.Float, nullable=True))
    conn = op.get_bind()
    jobs = sa.table("jobs", sa.column("id"), sa.column("snapshot"), sa.column("snapshot_sha256"), sa.column("created_at"))
    snapshots = sa.table("snapshots", sa.column("sha256"), sa.column("body"), sa.column("raw_bytes"), sa.column("created_at"))
    seen: set[str] = set()
    for job_id, created_at in conn.execute(sa.select(jobs.c.id, jobs.c.created_at)).all():
        text = conn.execute(sa.select(jobs.c.snapshot).where(jobs.c.id == job_id)).scalar_one()
        raw = text.encode()
        digest = hashlib.sha256(raw).hexdigest()
        if digest not in seen:
            seen.add(digest)
            conn.execute(snapshots.insert().values(sha256=digest, body=zlib.compress(raw, ZLIB_LEVEL), raw_bytes=len(raw), created_at=created_at))
        conn.execute(jobs.update().where(jobs.c.id == job_id).values(snapshot_sha256=digest))
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column("snapshot_sha256", existing_type=sa.String(64), nullable=False)
        batch.create_foreign_key("fk_jobs_snapshot_sha256", "snapshots", ["snapshot_sha256"], ["sha256"])
        batch.create_index("ix_jobs_snapshot_sha256", ["snapshot_sha256"])
        batch.drop_column("snapshot")


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("snapshot", sa.Text, nullable=True))
    conn = op.get_bind()
    jobs = sa.table("jobs", sa.column("id"), sa.column("snapshot"), sa.column("snapshot_sha256"))
    snapshots = sa.table("snapshots", sa.column("sha256"), sa.column("body"))
    for digest, body in conn.execute(sa.select(snapshots.c.sha256, snapshots.c.body)).all():
        conn.execute(jobs.update().where(jobs.c.snapshot_sha256 == digest).values(snapshot=zlib.decompress(body).decode()))
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column("snapshot", existing_type=sa.Text, nullable=False)
        batch.drop_index("ix_jobs_snapshot_sha256")
        batch.drop_constraint("fk_jobs_snapshot_sha256", type_="foreignkey")
        batch.drop_column("snapshot_sha256")
        batch.drop_column("lease_expires_at")
        batch.drop_column("lease_owner")
    op.drop_table("snapshots")
