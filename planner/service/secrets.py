"""Secrets from the environment or from files: ``NAME`` holds the value itself, ``NAME_FILE`` the path
of a file holding it (a mounted Kubernetes Secret, a Docker secret, a root-only file for cron), so it
never appears in a process listing or a crontab. Trailing whitespace (the newline editors add) is
dropped; anything else in the file is the secret.

The file must be a regular file of at most ``MAX_SECRET_BYTES``: a FIFO would block start-up until
someone writes to it, and ``/dev/zero`` would be read until memory runs out. Tokens must be at least
``MIN_TOKEN_CHARS`` long (``check_token``)."""

from __future__ import annotations

import os
import stat

MAX_SECRET_BYTES = 64 << 10
"""A token or a database URL is tens of bytes; a file larger than this is not one."""
MIN_TOKEN_CHARS = 16
"""The shortest bearer token accepted. Comparison is constant-time, so guessing is the only attack:
16 random hex characters are 64 bits, out of reach of online guessing at any request rate, while a
short or dictionary token falls to a loop of requests. (Length is not randomness; it rules out the
one-character and the word-sized tokens.)"""


def secret(name: str) -> str | None:
    """The value of ``name`` from the environment or from the file ``name``_FILE names; None when
    neither is set. ValueError naming the variable and the fix when the file cannot be used."""
    value = os.environ.get(name) or None
    path = os.environ.get(f"{name}_FILE") or None
    if path is None:
        return value
    if value is not None:
        raise ValueError(f"{name}_FILE: {name} is set too; set one of them (which one was meant?)")
    variable = f"{name}_FILE"
    try:
        # O_NONBLOCK: opening a FIFO for reading does not wait for a writer (it is refused below)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise ValueError(f"{variable}: cannot read {path} ({err.strerror or err}); check the path and that this user may read it") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{variable}: {path} is not a regular file (a FIFO, a device or a directory); put the secret in a file and name that file")
        data = f.read(MAX_SECRET_BYTES + 1)
    if len(data) > MAX_SECRET_BYTES:
        raise ValueError(f"{variable}: {path} is larger than {MAX_SECRET_BYTES >> 10} KiB; it should hold the secret alone")
    try:
        text = data.decode("utf-8").rstrip()
    except UnicodeDecodeError:
        raise ValueError(f"{variable}: {path} is not UTF-8 text; put the token itself in the file") from None
    if not text:
        raise ValueError(f"{variable}: {path} is empty; put the token in the file, or unset {variable}")
    return text


def source(name: str) -> str:
    """The variable a secret ``name`` was taken from: ``name``_FILE when that is set, else ``name``."""
    return f"{name}_FILE" if os.environ.get(f"{name}_FILE") else name


def check_token(token: str, setting: str) -> None:
    """ValueError naming ``setting`` when ``token`` is shorter than ``MIN_TOKEN_CHARS``."""
    if len(token) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"{setting}: too short ({len(token)} characters); a bearer token needs at least {MIN_TOKEN_CHARS} characters, "
            "as a short one can be guessed by trying; make one with `openssl rand -hex 24`"
        )
