"""``planner controlplane`` without the control plane running: the binary missing is exit 2 with the build
command; ``down`` refuses a directory that is not a control plane's state and removes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import INSTANCES, REPO


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", *args], capture_output=True, text=True, env={**env, "PYTHONPATH": str(REPO), "COLUMNS": "200"}, timeout=120
    )


def test_missing_binary_is_exit_2_with_the_build_command(tmp_path: Path) -> None:
    env = {**os.environ, "PLANNER_CONTROLPLANE": str(tmp_path / "no-such-binary")}
    done = run("controlplane", "up", "--from", str(INSTANCES / "kubernetes" / "gpu-cluster.json"), "--state-dir", str(tmp_path / "state"), env=env)
    assert done.returncode == 2
    assert "controlplane/build.sh" in done.stderr and "PLANNER_CONTROLPLANE" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "state").exists()


def test_missing_build_output_names_its_path(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PLANNER_CONTROLPLANE"} | {"PLANNER_CONTROLPLANE_CACHE": str(tmp_path / "cache")}
    done = run("controlplane", "up", "--from", str(INSTANCES / "kubernetes" / "gpu-cluster.json"), "--state-dir", str(tmp_path / "state"), env=env)
    assert done.returncode == 2
    assert str(tmp_path / "cache" / "bin" / "planner-controlplane") in done.stderr and "controlplane/build.sh" in done.stderr


def test_down_refuses_a_directory_that_is_not_a_control_planes_state(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.txt").write_text("keep me")
    done = run("controlplane", "down", "--state-dir", str(precious), env=dict(os.environ))
    assert done.returncode == 2
    assert "not a control plane's state directory" in done.stderr
    assert (precious / "data.txt").read_text() == "keep me"


def test_up_refuses_a_non_empty_foreign_directory(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "data.txt").write_text("keep me")
    fake = tmp_path / "fake-binary"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    env = {**os.environ, "PLANNER_CONTROLPLANE": str(fake)}
    done = run("controlplane", "up", "--from", str(INSTANCES / "kubernetes" / "gpu-cluster.json"), "--state-dir", str(precious), env=env)
    assert done.returncode == 2
    assert "not empty and not a control plane's state" in done.stderr
    assert (precious / "data.txt").read_text() == "keep me"
