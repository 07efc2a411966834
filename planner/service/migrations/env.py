"""Alembic environment: run by ``planner.service.store.migrate`` with an open connection in
``config.attributes['connection']``, or by the ``alembic`` command with ``sqlalchemy.url`` set."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from planner.service.rows import Base

config = context.config
connection = config.attributes.get("connection")


def run(conn) -> None:  # type: ignore[no-untyped-def]
    # batch mode: SQLite cannot drop or alter a column in place, Alembic copies the table instead
    context.configure(connection=conn, target_metadata=Base.metadata, render_as_batch=conn.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    run(connection)
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.connect() as conn:
        run(conn)
    engine.dispose()
