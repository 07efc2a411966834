"""``planner db``: the job store's schema, for operators who migrate explicitly (an init container,
a maintenance window) rather than letting the first replica do it when it starts."""

from __future__ import annotations

import typer

from planner.cli.common import fail, guarded

db_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="The job store's schema (Alembic migrations in planner/service/migrations).")

DB = typer.Option("planner.db", "--db", help="SQLite file of the store (DATABASE_URL, or the file DATABASE_URL_FILE names, overrides: PostgreSQL).")


def _url(db: str) -> tuple[str, str]:
    """(URL, the setting it came from), checked."""
    from planner.service.database import StoreURLError, check_url, database_url  # deferred: SQLAlchemy (~0.2 s), for this command only

    try:
        url, option = database_url(db)
    except ValueError as err:
        fail([str(err)])
    try:
        check_url(url)
    except StoreURLError as err:
        fail([f"{option}: {err}"])
    return url, option


def _revisions(url: str, option: str) -> tuple[str | None, str | None]:
    """(the database's revision or None, the newest revision)."""
    # deferred: Alembic and SQLAlchemy (~0.3 s), for this command only
    from alembic.config import Config  # deferred: Alembic (as above)
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine  # deferred: SQLAlchemy (as above)

    from planner.service.database import engine_url, error_reason  # deferred: SQLAlchemy (as above)

    config = Config()
    config.set_main_option("script_location", "planner.service:migrations")
    head = ScriptDirectory.from_config(config).get_current_head()
    engine = create_engine(engine_url(url))
    try:
        with engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
    except Exception as err:  # noqa: BLE001 - a setting to fix, said plainly
        fail([f"{option}: cannot read the job store ({error_reason(err)})"])
    finally:
        engine.dispose()
    return current, head


@db_app.command("current")
@guarded
def current(db: str = DB) -> None:
    """Print the store's schema revision and the newest this planner knows (exit 1 when behind)."""
    url, option = _url(db)
    revision, head = _revisions(url, option)
    typer.echo(f"revision {revision or 'none'}; newest {head}")
    if revision != head:
        raise typer.Exit(1)


@db_app.command("upgrade")
@guarded
def upgrade(db: str = DB) -> None:
    """Upgrade the store's schema to the newest revision (a database made before migrations included)."""
    # deferred: SQLAlchemy, as above
    from planner.service.database import error_reason
    from planner.service.store import Store

    url, option = _url(db)
    before, head = _revisions(url, option)
    try:
        Store(url).close()
    except Exception as err:  # noqa: BLE001 - a setting to fix, said plainly
        fail([f"{option}: cannot upgrade the job store ({error_reason(err)})"])
    typer.echo(f"revision {before or 'none'} -> {head}")
