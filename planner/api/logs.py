"""The service's logs: one JSON object per line (``--log-format json``, the default) or plain text.

Every record has ``ts`` (ISO 8601, UTC), ``level``, ``logger`` and ``message``; records logged with
``extra={"fields": {...}}`` carry those fields too. The access log (logger ``planner.access``) writes
one record per request: ``request_id`` (the client's ``X-Request-Id`` when it sends a sane one, else a
fresh id, echoed in the response header), ``method``, ``path``, ``status`` and ``duration_ms``.

Messages and fields carry text from requests (paths, which arrive percent-decoded; names and error
messages that quote the input), so both formats write them through ``textsafe.printable``: an escape
sequence or a CR/LF from a request appears as ``\\x1b``, ``\\r``, ``\\n``, never raw, in the text log and
in a JSON log's decoded values (``jq -r .message`` prints no raw control character either). A
traceback keeps its lines, each made printable and every line after the first indented, so text that
a request put in an exception's message can neither forge a record nor reach the terminal raw.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import uuid
from typing import Any

from planner.textsafe import printable

REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
"""A request id a client may choose (anything else is replaced: it ends up in logs)."""


def safe_lines(text: str) -> str:
    """A multi-line text (a traceback) with its lines kept, each made printable, and every line after
    the first indented: a line of it never starts a record."""
    first, *rest = text.rstrip("\n").split("\n")  # on newlines only: a CR, NEL or U+2028 is escaped, not a break
    return "\n".join([printable(first), *(f"  {printable(line)}" for line in rest)])


def _safe(value: Any) -> Any:
    """A field's value with every string in it made printable (numbers and booleans as they are)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(k): _safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_safe(v) for v in value]
    return value


def _exception(formatter: logging.Formatter, record: logging.LogRecord) -> str | None:
    """The record's traceback, safe (``safe_lines``): from ``exc_info``, or the text a worker process
    sent (``extra={"traceback": text}``)."""
    text = formatter.formatException(record.exc_info) if record.exc_info else getattr(record, "traceback", None)
    return safe_lines(text) if text else None


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": printable(record.getMessage()),
            **_safe(getattr(record, "fields", {})),
        }
        exception = _exception(self, record)
        if exception:
            entry["exception"] = exception
        return json.dumps(entry, default=lambda value: printable(str(value)))


class TextFormatter(logging.Formatter):
    """``logging.Formatter``'s line with the message made printable and the traceback safe."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = printable(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        line = self.formatMessage(record)
        exception = _exception(self, record)
        return f"{line}\n{exception}" if exception else line


def configure(log_format: str) -> None:
    """Root logging at INFO in ``log_format`` ('json' or 'text')."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def request_id(given: str | None) -> str:
    """The client's request id when it is sane, else a fresh one."""
    return given if given and REQUEST_ID.match(given) else uuid.uuid4().hex
