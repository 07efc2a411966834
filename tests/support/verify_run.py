"""Running ``planner`` and ``planner verify`` in a subprocess on the test control plane's binary: a plan made
from a List, and its verification that must accept every move (tests/kube/test_verify_*.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.controlplane import binary_env


def planner(binary: Path, *args: str, timeout_s: float = 1200.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True, env=binary_env(binary), timeout=timeout_s)


def plan_of(binary: Path, tmp_path: Path, source: Path, *args: str) -> Path:
    out = tmp_path / "plan.json"
    made = planner(binary, *args, str(source), "--from", "kubernetes", "--out", str(out))
    assert made.returncode == 0, made.stderr[-2000:]
    return out


def verified(binary: Path, plan: Path, source: Path) -> dict[str, Any]:
    done = planner(binary, "verify", str(plan), "--from", str(source), "--json", "-")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["refused"] == 0 and not result["refusals"] and result["cluster"]["throwaway"]
    return result
