"""Issue 40 (terminal output strips control characters), the service's side: requests carrying escape
sequences and CR/LF in a path segment, in headers and in body fields (job and pod names that errors
quote, a job that runs) against the real server (uvicorn in a subprocess, a SQLite store), whose log
is then read: no raw ESC, CR or other control character from the input reaches it, every line is a
record of the server's own (none forged by a newline), and the path is there, escaped."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.harness import Server, wait_status

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\r\n2026-01-01 00:00:00,000 INFO planner.access: forged"
PATH = "/v1/jobs/%1B%5B31mred%0D%0A2026-01-01%2000:00:00,000%20INFO%20planner.access:%20forged%E2%80%AE"
SNAPSHOT = {
    "nodes": [{"name": "n0", "gpus": 8, "cpus": 8, "memory_gib": 64}],
    "pods": [
        {"name": f"a{HOSTILE}", "gpus": 2, "cpus": 1, "node": "n0"},
        {"name": f"p{HOSTILE}", "job": HOSTILE, "gpus": 8, "cpus": 1},
    ],
    "jobs": [{"name": HOSTILE}],
}
TEXT_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR|CRITICAL|DEBUG) [\w.]+: ")


def raw_controls(text: str) -> list[str]:
    return sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F or c in "\u202e\u2028\u2029"})


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_no_control_character_from_a_request_reaches_the_log(tmp_path, log_format):
    server = Server(tmp_path / "planner.db", None, "--workers", "1", "--log-format", log_format).start()
    try:
        with server.client() as client:
            assert client.get(PATH).status_code == 422  # not an id of the service: refused, and the path logged escaped
            hostile_headers = {"X-Request-Id": f"id{HOSTILE[:9]}", "Idempotency-Key": f"key{HOSTILE[:9]}"}
            queued = client.post("/v1/preempt", json={"snapshot": SNAPSHOT, "job": HOSTILE}, headers=hostile_headers)
            assert queued.status_code == 202, queued.text
            assert wait_status(client, queued.json()["job_id"], ("succeeded", "failed"))["status"] == "succeeded"
            refused = client.post("/v1/defrag", json={"snapshot": SNAPSHOT, "options": {"make_room": [f"{HOSTILE}x"]}})
            assert refused.status_code == 422 and "did you mean" in refused.text
            explained = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": f"{HOSTILE}y"})
            assert explained.status_code == 422
    finally:
        server.stop()
    log = server.log.read_bytes().decode()
    assert not raw_controls(log), raw_controls(log)
    lines = [line for line in log.split("\n") if line]
    if log_format == "json":
        records = [json.loads(line) for line in lines]  # every line is one record
        assert all(not raw_controls(json.dumps(r, ensure_ascii=False)) for r in records)  # decoded too
        paths = [r["path"] for r in records if r.get("logger") == "planner.access"]
    else:
        assert all(TEXT_RECORD.match(line) for line in lines), [line for line in lines if not TEXT_RECORD.match(line)]
        paths = [line.split(": ", 1)[1] for line in lines if " planner.access: " in line]
    escaped = [p for p in paths if "\\x1b[31mred" in p]
    assert escaped and "\\u202e" in escaped[0], paths  # the path reached the log, escaped
    assert "forged" not in "".join(line for line in lines if "\\x1b" not in line)  # only inside an escaped value
