"""`planner --version`, and a top-level `--help` that names every command."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import typer.main

from planner.cli import app
from tests.support.paths import REPO


def planner(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it (``python -m planner``: this checkout's code), on a wide terminal so
    that help lines are not wrapped."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", "TERM": "dumb"}
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True, env=env, timeout=120)


def command_names() -> set[str]:
    """Every top-level command registered on the app (commands and command groups)."""
    return set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_version_prints_the_package_version_and_exits_0() -> None:
    result = planner("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"planner {importlib.metadata.version('gpu-fleet-planner')}"


def test_top_level_help_names_every_command() -> None:
    result = planner("--help")
    assert result.returncode == 0, result.stderr
    names = command_names()
    assert {"defrag", "preempt", "allocate", "report", "validate", "generate", "serve", "submit"} <= names
    missing = {name for name in names if f" {name} " not in result.stdout}
    assert not missing, f"planner --help does not name {sorted(missing)}"
    assert "--version" in result.stdout
