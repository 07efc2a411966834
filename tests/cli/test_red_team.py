"""Issue 59's red-team harness (``benchmarks/red_team.py``) works: it flags planted violations of every kind
it can plant, and a quick run on a tiny seed measures every category against the real CLI and service.

Whether the planner has violations is not asserted here (the harness's own exit code says so, and
``benchmarks/results/red-team.md`` records the counts): only that the harness sees them when they exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

SCRIPT = REPO / "benchmarks" / "red_team.py"
CATEGORIES = {"yaml", "http", "names", "files", "quantities", "burst"}


def _run(*args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout_s, cwd=REPO)


def test_self_check_flags_every_planted_violation(tmp_path: Path) -> None:
    record = tmp_path / "self-check.json"
    done = _run("--self-check", "--json", str(record), timeout_s=180)
    assert done.returncode == 0, done.stdout + done.stderr
    flags = {case["kind"]: set(case["flags"]) for case in json.loads(record.read_text())}
    assert flags == {
        "dummy over time and memory, exit 3, traceback, file outside": {"over-time", "over-1GiB", "exit-3", "traceback", "outside-dir"},
        "stub server /500": {"http-500", "traceback"},
        "stub server /long": {"long-message"},
    }
    dummy = json.loads(record.read_text())[0]
    assert dummy["peak_rss_mib"] > 1024 and dummy["wall_s"] > dummy["limit_s"] + 2 and dummy["outcome"] == "exit 3"


def test_quick_run_measures_every_category_and_exits_by_its_violations(tmp_path: Path) -> None:
    out, record = tmp_path / "red-team.md", tmp_path / "red-team.json"
    done = _run("--quick", "--seeds", "3", "--out", str(out), "--json", str(record), timeout_s=900)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    cases = json.loads(record.read_text())
    assert {case["category"] for case in cases} == CATEGORIES
    measured = [case for case in cases if case["limit_s"] > 0]
    assert all(case["wall_s"] > 0 and case["outcome"] for case in measured), [c for c in measured if not (c["wall_s"] > 0 and c["outcome"])]
    commands = [case for case in measured if case["outcome"].startswith("exit")]
    assert commands and all(case["peak_rss_mib"] > 10 for case in commands)  # a planner process was measured
    assert any(case["outcome"].startswith("HTTP 4") for case in cases)  # the service answered and refused
    violations = [case for case in cases if case["flags"]]
    assert done.returncode == (1 if violations else 0)
    text = out.read_text()
    assert "Seeds: 3 (quick run)" in text and "| **all** |" in text and "load average before" in text
    assert f"## Violations ({len(violations):,})" in text
