"""`planner --version`, and a top-level `--help` that names every command."""

from __future__ import annotations

import importlib.metadata

from tests.support.planner_command import command_names, planner


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
