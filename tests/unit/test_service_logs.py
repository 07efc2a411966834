"""The service's log formatters (``planner.api.logs``) write text from requests with its control
characters escaped (issue 40: terminal output strips control characters): messages, fields and
tracebacks, in both formats; a line of a traceback never starts a record."""

from __future__ import annotations

import json
import logging
import sys

from planner.api.logs import JsonFormatter, TextFormatter, safe_lines

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\r\n2026-01-01 00:00:00,000 INFO planner.access: forged\u202e"
TEXT = TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")


def record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    out = logging.LogRecord("planner.api", logging.ERROR, __file__, 1, message, args, None)
    out.__dict__.update(extra)
    return out


def failed() -> logging.LogRecord:
    try:
        raise ValueError(f"unknown job {HOSTILE}")
    except ValueError:
        out = record("job %s crashed", HOSTILE)
        out.exc_info = sys.exc_info()
        return out


def controls(text: str) -> list[str]:
    """Control characters in ``text`` but the newlines that separate a traceback's lines."""
    return sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u2028\u2029"})


def test_a_text_record_is_one_line_with_the_input_escaped() -> None:
    line = TEXT.format(record("%s %s %d", "GET", f"/v1/jobs/{HOSTILE}", 404))
    assert "\n" not in line and not controls(line)
    assert "/v1/jobs/\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\r\\n2026-01-01" in line and "\\u202e" in line


def test_a_json_record_decodes_to_escaped_text() -> None:
    line = JsonFormatter().format(record("job %s failed: %s", "abc", f"bad request: {HOSTILE}", fields={"path": HOSTILE, "status": 404, "nested": [HOSTILE]}))
    assert "\n" not in line and not controls(line)
    entry = json.loads(line)
    for value in (entry["message"], entry["path"], entry["nested"][0]):
        assert not controls(value) and "\n" not in value and "\\x1b[2J" in value, value  # `jq -r` prints no raw control either
    assert entry["status"] == 404


def test_a_traceback_keeps_its_lines_escaped_and_indented() -> None:
    for formatter in (TEXT, JsonFormatter()):
        text = formatter.format(failed())
        if formatter is not TEXT:
            text = json.loads(text)["exception"]
        assert not controls(text), formatter
        lines = text.splitlines()
        assert len(lines) > 3 and all(line.startswith("  ") for line in lines[1 + (formatter is TEXT) :])
        assert not any(line.startswith(("2026-", "{")) for line in lines[1:]), lines  # no forged record
        assert "ValueError: unknown job \\x1b]0;owned" in text


def test_a_workers_traceback_sent_as_text_is_made_safe_too() -> None:
    sent = f"Traceback (most recent call last):\n  File 'x.py', line 1\nKeyError: '{HOSTILE}'\n"
    line = TEXT.format(record("job %s failed: %s", "abc", "internal error", traceback=sent))
    assert not controls(line) and line.split("\n")[1:] == safe_lines(sent).split("\n")
    assert "KeyError: '\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\r" in line
    assert all(part.startswith("  ") for part in line.splitlines()[2:])
    assert json.loads(JsonFormatter().format(record("m", traceback=sent)))["exception"] == safe_lines(sent)
