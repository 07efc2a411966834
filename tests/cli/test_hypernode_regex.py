"""Issue 40, item 6: a HyperNode's regexMatch runs in linear time, as Volcano's Go (RE2) evaluates it.

``(a+)+$`` against a 30-character node name backtracks for seconds to minutes in Python's ``re``; with RE2
it answers at once. A pattern RE2 does not accept (a lookahead, a backreference: Go refuses them too) is
exit 2 naming the HyperNode and the field, with nothing else printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "instances" / "kubernetes" / "gpu-cluster.json"
SLOW_NAME = "a" * 28 + "-0"


def _with_hypernode(pattern: str, rename: str | None = None) -> dict[str, Any]:
    data = json.loads(EXAMPLE.read_text())
    if rename:  # one node renamed (and the pods on it follow)
        for item in data["items"]:
            if item["kind"] == "Node" and item["metadata"]["name"] == "cpu-0":
                item["metadata"]["name"] = rename
            if item["kind"] == "Pod" and item["spec"].get("nodeName") == "cpu-0":
                item["spec"]["nodeName"] = rename
    data["items"].append(
        {
            "apiVersion": "topology.volcano.sh/v1alpha1",
            "kind": "HyperNode",
            "metadata": {"name": "leaf-x"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}]},
        }
    )
    return data


def test_a_pathological_pattern_is_evaluated_in_linear_time(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps(_with_hypernode("(a+)+$", rename=SLOW_NAME)))
    code = (
        "from typer.testing import CliRunner; from planner.cli import app; "
        f"r = CliRunner().invoke(app, ['import', 'kubernetes', {str(path)!r}, '--out', {str(tmp_path / 's.json')!r}]); "
        "print(r.exit_code); print(r.output)"
    )
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=8, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the HyperNode pattern took more than 8 s (backtracking)")
    assert done.stdout.startswith("0\n"), done.stdout + done.stderr
    assert time.monotonic() - started < 8
    assert "HyperNode leaf-x: spec.members: matches no node or HyperNode in the input" in done.stdout


def test_a_pattern_matches_as_in_go(tmp_path: Path) -> None:
    from planner.adapters.kubernetes_hypernodes import hypernode_topology

    nodes = {"h100-0": {}, "h100-10": {}, "l40s-0": {}, "x-h100-1": {}}
    hypernodes = [
        {
            "kind": "HyperNode",
            "metadata": {"name": "s"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": r"^h100-\d+$"}}}]},
        },
        {
            "kind": "HyperNode",
            "metadata": {"name": "t"},
            "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": r"\pL-h100"}}}]},
        },
    ]
    found = hypernode_topology(hypernodes, nodes)
    assert found.errors == [] and found.asw == {"h100-0": "s", "h100-10": "s", "x-h100-1": "t"}


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("^(?=h100)", "invalid perl operator: (?="),
        ("(h)\\1", "invalid escape sequence: \\1"),
        ("gpu-(", "missing ): gpu-("),
    ],
)
def test_a_pattern_re2_refuses_is_exit_2_naming_hypernode_and_field(tmp_path: Path, pattern: str, why: str) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps(_with_hypernode(pattern)))
    done = subprocess.run(
        [sys.executable, "-m", "planner.cli", "import", "kubernetes", str(path), "--out", str(tmp_path / "s.json")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2, done.stderr
    expected = f"error: HyperNode leaf-x: spec.members[0].selector.regexMatch.pattern: {pattern!r} is not a regular expression RE2 (and Volcano's Go) accepts"
    assert done.stderr.startswith(expected) and why in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, "only the error: no log lines from the regex library"
