"""What a person at a terminal sees: the summary table even when the plan goes to ``--out``, and a
line saying where ``planner generate`` wrote its snapshot. Run under a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO as ROOT


def _at_terminal(*args: str, cwd: Path) -> tuple[int, str]:
    """Run ``planner ARGS`` with stdout and stderr on a pseudo-terminal; (exit code, what it showed)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "planner", *args], stdout=follower, stderr=follower, cwd=cwd, env={**os.environ, "COLUMNS": "160"})
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done writing
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return process.wait(timeout=120), shown.decode(errors="replace")


def test_a_plan_written_to_out_still_shows_its_summary_on_a_terminal(tmp_path: Path) -> None:
    code, shown = _at_terminal("defrag", str(ROOT / "instances" / "asi-500.json"), "--out", str(tmp_path / "plan.json"), cwd=tmp_path)
    assert code == 0, shown
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert "vacated" in shown.lower() and f"{plan['report']['moves']:,}" in shown, shown


def test_generate_says_where_the_snapshot_went(tmp_path: Path) -> None:
    code, shown = _at_terminal("generate", "asi", "--nodes", "40", "--out", str(tmp_path / "s.json"), cwd=tmp_path)
    assert code == 0, shown
    snapshot = json.loads((tmp_path / "s.json").read_text())
    assert f"wrote a snapshot of 40 nodes and {len(snapshot['pods']):,} pods to {tmp_path / 's.json'}" in shown, shown
