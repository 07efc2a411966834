"""The throwaway control plane for tests: built if needed (``controlplane/build.sh``, a warm build is
seconds) and started once per session on a List (the ``controlplane`` fixture in tests/kube/conftest.py).

Tests that use it are in ``tests/kube/``: marked ``controlplane`` (and ``slow``, so the fast loop leaves
them out) by tests/conftest.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from planner.kube.controlplane import BINARY_ENV
from tests.support.paths import REPO

BUILD_SCRIPT = REPO / "controlplane" / "build.sh"
BUILD_TIMEOUT_S = 3600.0
"""A cold build on a loaded 2-core machine takes tens of minutes; a warm one seconds."""


def controlplane_binary() -> Path:
    """The binary: ``PLANNER_CONTROLPLANE`` when set, else built (or brought up to date) by the build
    script. Skips the test, with the reason, on a machine without Go."""
    given = os.environ.get(BINARY_ENV)
    if given:
        return Path(given)
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain on PATH: the control plane (controlplane/) cannot be built here")
    built = subprocess.run(["nice", "-n", "10", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if built.returncode != 0:
        raise AssertionError(f"controlplane/build.sh failed ({built.returncode}):\n{built.stderr[-4000:]}")
    return Path(built.stdout.strip().splitlines()[-1])


def binary_env(binary: Path) -> dict[str, str]:
    """The environment for a ``planner`` subprocess that uses ``binary``."""
    return {**os.environ, BINARY_ENV: str(binary), "PYTHONPATH": str(REPO), "COLUMNS": "200", "TERM": "dumb"}
