"""The command line with its standard output closed (`planner defrag x.json >&-`): a clear error and
exit 2 before any planning when the output would go there, never a traceback; with --out the plan
is written as asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.paths import FIG15, INSTANCES

SCHEDULE = INSTANCES / "spot-schedule" / "small.json"

PENDING = {
    "version": 1,
    "time_s": 100,
    "nodes": [{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 256, "asw": "a"}],
    "pods": [
        {"name": "spot-0", "node": "n0", "gpus": 8, "cpus": 8, "priority": "LP", "started_s": 40},
        {"name": "train-0", "job": "train", "gpus": 8, "cpus": 8},
    ],
    "jobs": [{"name": "train"}],
}


def closed_stdout(*args: str) -> subprocess.CompletedProcess:
    """``planner ARGS >&-``: the command starts with file descriptor 1 closed."""
    return subprocess.run(
        [sys.executable, "-m", "planner.cli", *args], stdout=None, stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=lambda: os.close(1)
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["defrag", "{fig15}"],
        ["defrag", "{fig15}", "-o", "table"],
        ["defrag", "{fig15}", "--out", "-"],
        ["preempt", "{pending}", "--job", "train"],
        ["allocate", "{pending}"],
        ["report", "{fig15}"],
        ["report", "{fig15}", "--json"],
        ["generate", "asi", "--nodes", "3", "--seed", "1"],
        ["defrag", "--help"],
    ],
)
def test_a_closed_standard_output_is_exit_two_with_the_reason(argv: list[str], tmp_path: Path) -> None:
    pending = tmp_path / "pending.json"
    pending.write_text(json.dumps(PENDING))
    args = [a.replace("{fig15}", str(FIG15)).replace("{pending}", str(pending)) for a in argv]
    started = time.monotonic()
    done = closed_stdout(*args)
    assert done.returncode == 2, done.stderr
    assert "error: standard output: cannot write: it is closed" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and time.monotonic() - started < 120
    assert not (Path.cwd() / "1").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["defrag", "{fig15}", "--method", "exact", "--time-limit", "30"],
        ["solve", "spot-schedule", "{schedule}"],
        ["simulate", "queue", "--out", "-"],
    ],
)
def test_the_work_is_refused_before_it_starts_when_its_result_could_only_go_to_a_closed_stdout(argv: list[str]) -> None:
    done = closed_stdout(*[a.replace("{fig15}", str(FIG15)).replace("{schedule}", str(SCHEDULE)) for a in argv])
    assert done.returncode == 2 and "refused before starting" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("argv", "check"),
    [
        (["defrag", "{fig15}", "--out", "{out}"], lambda result: result["kind"] == "defrag"),
        (["solve", "spot-schedule", "{schedule}", "-o", "{out}"], lambda result: result["status"] in ("optimal", "feasible")),
    ],
)
def test_with_out_the_result_is_written_whatever_standard_output_is(argv: list[str], check, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "result.json"
    done = closed_stdout(*[a.replace("{fig15}", str(FIG15)).replace("{schedule}", str(SCHEDULE)).replace("{out}", str(out)) for a in argv])
    assert done.returncode == 0, done.stderr
    assert check(json.loads(out.read_text()))
