"""Which database the store opens: the URL from the environment (``DATABASE_URL``, or the file
``DATABASE_URL_FILE`` names, since it holds the password) or the SQLite file of ``--db``; its check
(SQLite files and PostgreSQL through psycopg 3 only), the driver the planner ships, and database
errors reduced to their first line for messages."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.engine import CursorResult, Result, make_url
from sqlalchemy.exc import ArgumentError

from planner.service.secrets import secret, source

DIALECTS = ("sqlite", "postgresql")


def sqlite_url(path: str) -> str:
    return f"sqlite:///{path}"


class StoreURLError(ValueError):
    """A database URL this store cannot use; the message names the fix."""


def check_url(url: str) -> str:
    """The dialect of ``url`` ('sqlite' or 'postgresql'); ``StoreURLError`` when it cannot be used.
    ``postgresql://`` without a driver means psycopg 3 (see ``engine_url``)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreURLError(
            f"not a database URL: {_hide_password(url)!r}; use postgresql+psycopg://USER:PASSWORD@HOST:5432/DATABASE or sqlite:///PATH"
        ) from None
    except ValueError:  # SQLAlchemy's int() of what follows the last ':' of the host part
        raise StoreURLError(
            f"cannot read the host and port in {_hide_password(url)!r}: the port must be a number, and an IPv6 address goes in "
            "brackets, e.g. postgresql+psycopg://USER:PASSWORD@[::1]:5432/DATABASE"
        ) from None
    dialect = parsed.get_backend_name()
    if dialect not in DIALECTS:
        raise StoreURLError(
            f"unsupported database {dialect!r} in {parsed.render_as_string(hide_password=True)}; "
            "use postgresql+psycopg://USER:PASSWORD@HOST:5432/DATABASE or sqlite:///PATH"
        )
    if dialect == "postgresql" and parsed.drivername not in ("postgresql", "postgresql+psycopg"):
        raise StoreURLError(
            f"unsupported PostgreSQL driver {parsed.get_driver_name()!r}; write the URL as postgresql+psycopg://... (psycopg 3, installed with the planner)"
        )
    if dialect == "sqlite" and (
        parsed.database in (None, "", ":memory:") or str(parsed.database).startswith("file::memory:") or parsed.query.get("mode") == "memory"
    ):
        raise StoreURLError(
            f"an in-memory SQLite database ({_hide_password(url)}) is not shared between the "
            "service's processes and connections (each would see its own empty database) and is lost at exit; "
            "use a file, sqlite:///PATH, or PostgreSQL"
        )
    if dialect == "postgresql" and not parsed.database:
        raise StoreURLError(f"no database name in {parsed.render_as_string(hide_password=True)}; end the URL with /DATABASE")
    return dialect


def _hide_password(url: str) -> str:
    """``url`` with the password of ``scheme://user:password@`` replaced by ***, for messages about
    a URL SQLAlchemy could not parse (so cannot redact itself)."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url, count=1)


def error_reason(err: BaseException) -> str:
    """The first line of a database error's own message (the driver's, without SQLAlchemy's wrapping)."""
    lines = str(getattr(err, "orig", None) or err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def engine_url(url: str) -> str:
    """``url`` with the driver the planner ships: a bare ``postgresql://`` (the form libpq, psql and
    most operators' secrets use) is served by psycopg 3."""
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def database_url(db_path: str) -> tuple[str, str]:
    """(the store's URL, the setting it came from): ``DATABASE_URL`` or ``DATABASE_URL_FILE`` (the
    URL holds the database password), else the SQLite file ``db_path`` (``--db``)."""
    url = secret("DATABASE_URL")
    if url is None:
        return sqlite_url(db_path), "--db"
    return url, source("DATABASE_URL")


def rows_changed(result: Result[Any]) -> int:
    """The rows an UPDATE or DELETE changed (the driver's count, on the cursor result DML returns)."""
    assert isinstance(result, CursorResult)  # DML statements return a CursorResult
    return result.rowcount
