"""The ``planner`` command run in this process through Typer's test runner, answering as
``planner_command.planner`` does (``returncode``, ``stdout``, ``stderr``) without a subprocess's start-up:
for tests that run a few commands on small inputs."""

from __future__ import annotations

import subprocess

from typer.testing import CliRunner

from planner.cli import app


def planner(*args: str) -> subprocess.CompletedProcess[str]:
    """``planner ARGS`` in this process: its exit code, standard output and standard error."""
    result = CliRunner().invoke(app, list(args))
    return subprocess.CompletedProcess(["planner", *args], result.exit_code, result.stdout, result.stderr)
