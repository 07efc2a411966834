"""Shared benchmark plumbing: run a command as a child process and measure wall time and peak memory."""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
CACHE = REPO / "benchmarks" / ".cache"


@dataclass
class Run:
    wall_s: float
    peak_rss_mib: float
    returncode: int
    stdout: str
    stderr: str


def run_measured(argv: list[str]) -> Run:
    """Run ``argv`` to completion: wall time and the child's own peak resident memory (from wait4)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(wall, usage.ru_maxrss / 1024, proc.returncode, out.read(), err.read())


def machine() -> str:
    """One line describing where the numbers were measured."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"
