"""A command run from a small process of its own that reports the command's peak memory (``wait4``'s
``ru_maxrss``): the hostile-input tests bound the memory of what they run with it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from tests.support.paths import REPO

SPAWN = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""The command started from a small process of its own: a process started straight from the test's (an xdist
worker that has grown to hundreds of MiB) reports that process's peak as its own (Linux carries the peak of the
memory an exec replaces into the new program's), so every case read the same 537 MiB in a full run."""


def run_measured(*argv: str, stdin: bytes | None = None) -> tuple[int, str, float, float]:
    """``argv`` in a subprocess (this checkout's code on the path): (exit code, standard error, seconds,
    peak memory in MiB). Standard output is dropped."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "TERM": "dumb"}
    started = time.monotonic()
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        command = [sys.executable, "-c", SPAWN, rss.name, *argv]
        with open(os.devnull, "wb") as out:
            child = subprocess.run(command, input=stdin, stdout=out, stderr=subprocess.PIPE, env=env, timeout=600)
        peak_kib = int(rss.read() or 0)
    return child.returncode, child.stderr.decode(), time.monotonic() - started, peak_kib / 1024
