"""Alembic environment: run by ``planner.service.store.migrate`` with an open connection in
``config.attributes['connection']``, or by the ``alembic`` command with ``sqlalchemy.url`` set."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection

from planner.service.rows import Base

config = context.config
connection = config.attributes.get("connection")


def run(conn: Connection) -> None:
    # batch mode: SQLite cannot drop or alter a column in place, Alembic copies the table instead
    context.configure(connection=conn, target_metadata=Base.metadata, render_as_batch=conn.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    run(connection)
else:
    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise SystemExit("alembic: no database; set sqlalchemy.url in the Alembic config (or run `planner db upgrade`)")
    engine = create_engine(url)
    with engine.connect() as conn:
        run(conn)
    engine.dispose()
