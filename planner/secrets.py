"""Secrets from the environment or from files: ``NAME`` holds the value itself, ``NAME_FILE`` the path
of a file holding it (a mounted Kubernetes Secret, a Docker secret, a root-only file for cron), so it
never appears in a process listing or a crontab. Trailing whitespace (the newline editors add) is
dropped; anything else in the file is the secret."""

from __future__ import annotations

import os


def secret(name: str) -> str | None:
    """The value of ``name`` from the environment or from the file ``name``_FILE names; None when
    neither is set. ValueError naming the variable and the fix when the file cannot be used."""
    value = os.environ.get(name) or None
    path = os.environ.get(f"{name}_FILE") or None
    if path is None:
        return value
    if value is not None:
        raise ValueError(f"{name}_FILE: {name} is set too; set one of them (which one was meant?)")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().rstrip()
    except OSError as err:
        raise ValueError(f"{name}_FILE: cannot read {path} ({err.strerror or err}); check the path and that this user may read it") from None
    except UnicodeDecodeError:
        raise ValueError(f"{name}_FILE: {path} is not UTF-8 text; put the token itself in the file") from None
    if not text:
        raise ValueError(f"{name}_FILE: {path} is empty; put the token in the file, or unset {name}_FILE")
    return text


def database_url(db_path: str) -> tuple[str, str]:
    """(the store's URL, the setting it came from): ``DATABASE_URL`` or ``DATABASE_URL_FILE`` (the
    URL holds the database password), else the SQLite file ``db_path`` (``--db``)."""
    from planner.store import sqlite_url

    url = secret("DATABASE_URL")
    if url is None:
        return sqlite_url(db_path), "--db"
    return url, "DATABASE_URL_FILE" if os.environ.get("DATABASE_URL_FILE") else "DATABASE_URL"
