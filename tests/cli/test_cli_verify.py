"""``planner verify``'s bad input, none of which starts a control plane: the binary missing (exit 2 with the build
command), the cluster given twice or not at all, a comparison document, a profile for a running cluster, a file that
is not a kubeconfig. Replays themselves are tested on the real control plane in tests/kube/test_verify*.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import INSTANCES, REPO

GPU_CLUSTER = INSTANCES / "kubernetes" / "gpu-cluster.json"
PLAN = {"version": 1, "kind": "defrag", "waves": [[{"pod": "finetune-1", "from": "h100-5", "to": "h100-4"}]], "vacated_nodes": []}


def verify(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    plan = tmp_path / "plan.json"
    if not plan.exists():
        plan.write_text(json.dumps(PLAN))
    environment = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "planner", "verify", *args], capture_output=True, text=True, env=environment, timeout=120, cwd=tmp_path)


def test_a_missing_binary_is_exit_2_with_the_build_command(tmp_path: Path) -> None:
    done = verify(tmp_path, "plan.json", "--from", str(GPU_CLUSTER), env={"PLANNER_CONTROLPLANE": str(tmp_path / "absent")})
    assert done.returncode == 2, done.stderr
    assert "the control plane binary is missing" in done.stderr and "controlplane/build.sh" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [(), ("--from", str(GPU_CLUSTER), "--kubeconfig", "kc")], ids=["neither", "both"])
def test_the_cluster_is_given_once(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = verify(tmp_path, "plan.json", *args)
    assert done.returncode == 2 and "give --from LIST" in done.stderr and "one of them" in done.stderr, done.stderr


def test_a_comparison_is_not_one_plan(tmp_path: Path) -> None:
    (tmp_path / "cmp.json").write_text(json.dumps({"version": 1, "kind": "defrag-compare", "heuristic": PLAN, "exact": PLAN, "gap": {}}))
    done = verify(tmp_path, "cmp.json", "--from", str(GPU_CLUSTER))
    assert done.returncode == 2 and "unknown plan kind 'defrag-compare'" in done.stderr, done.stderr


def test_a_profile_is_for_a_throwaway_cluster_only(tmp_path: Path) -> None:
    done = verify(tmp_path, "plan.json", "--kubeconfig", "kc", "--profile", "binpack")
    assert done.returncode == 2 and "give --profile only with --from" in done.stderr, done.stderr


def test_a_file_that_is_not_a_kubeconfig_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "kc").write_text("not: [a kubeconfig")
    done = verify(tmp_path, "plan.json", "--kubeconfig", "kc")
    assert done.returncode == 2 and "--kubeconfig kc: not a usable kubeconfig" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
