"""The ``planner`` command as a user runs it (a subprocess of this checkout's code) and the names of its
top-level commands: the help tests and the documented-commands tests use both."""

from __future__ import annotations

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
