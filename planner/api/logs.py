"""The service's logs: one JSON object per line (``--log-format json``, the default) or plain text.

Every record has ``ts`` (ISO 8601, UTC), ``level``, ``logger`` and ``message``; records logged with
``extra={"fields": {...}}`` carry those fields too. The access log (logger ``planner.access``) writes
one record per request: ``request_id`` (the client's ``X-Request-Id`` when it sends a sane one, else a
fresh id, echoed in the response header), ``method``, ``path``, ``status`` and ``duration_ms``.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
import uuid

REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
"""A request id a client may choose (anything else is replaced: it ends up in logs)."""


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure(log_format: str) -> None:
    """Root logging at INFO in ``log_format`` ('json' or 'text')."""
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def request_id(given: str | None) -> str:
    """The client's request id when it is sane, else a fresh one."""
    return given if given and REQUEST_ID.match(given) else uuid.uuid4().hex
