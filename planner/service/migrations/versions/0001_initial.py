"""The store as it was before migrations: jobs (with their snapshot text inline), plans, probes.

A database created by ``Base.metadata.create_all`` before Alembic came is stamped with this
revision when first opened, then upgraded.

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("options", sa.Text, nullable=False),
        sa.Column("snapshot", sa.Text, nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=True, unique=True),
        sa.Column("request_digest", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("started_at", sa.Float, nullable=True),
        sa.Column("finished_at", sa.Float, nullable=True),
        sa.Column("progress", sa.Float, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("plan_id", sa.String(32), nullable=True),
    )
    op.create_index("ix_jobs_kind", "jobs", ["kind"])
    op.create_index("ix_jobs_status", "jobs", ["status"])
    op.create_index("ix_jobs_created_at", "jobs", ["created_at"])
    op.create_table("probes", sa.Column("id", sa.Integer, primary_key=True), sa.Column("at", sa.Float, nullable=False))
    op.create_table(
        "plans",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("method", sa.String(32), nullable=True),
        sa.Column("status", sa.String(16), nullable=True),
        sa.Column("objective", sa.Float, nullable=True),
        sa.Column("body", sa.Text, nullable=False),
    )
    op.create_index("ix_plans_job_id", "plans", ["job_id"])
    op.create_index("ix_plans_kind", "plans", ["kind"])
    op.create_index("ix_plans_created_at", "plans", ["created_at"])


def downgrade() -> None:
    op.drop_table("plans")
    op.drop_table("probes")
    op.drop_table("jobs")
