"""Planning straight from kubectl output (``--from kubernetes``): the same plan as importing first, and
a clear hint when Kubernetes objects are given as a snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "gpu-cluster.json"


def _timeless(plan: dict) -> dict:
    return {**plan, "report": {k: v for k, v in plan["report"].items() if k != "wall_s"}}


@pytest.mark.parametrize("command", [["defrag"], ["allocate"], ["report", "--json"]])
def test_from_kubernetes_equals_importing_first(tmp_path: Path, command: list[str]) -> None:
    snapshot = tmp_path / "s.json"
    imported = runner.invoke(app, ["import", "kubernetes", str(EXAMPLE), "--out", str(snapshot)])
    assert imported.exit_code == 0, imported.output
    name, *rest = command
    direct = runner.invoke(app, [name, str(EXAMPLE), "--from", "kubernetes", *rest])
    via_file = runner.invoke(app, [name, str(snapshot), *rest])
    assert direct.exit_code == 0 and via_file.exit_code == 0, direct.output + via_file.output
    a, b = json.loads(direct.stdout), json.loads(via_file.stdout)
    if name == "report":
        a.pop("source", None), b.pop("source", None)
        assert a == b
    else:
        assert _timeless(a) == _timeless(b)
        assert name != "defrag" or a["waves"], "the example needs moves"


def test_kubernetes_objects_given_as_a_snapshot_get_a_hint() -> None:
    refused = runner.invoke(app, ["defrag", str(EXAMPLE)])
    assert refused.exit_code == 2
    assert "apiVersion: unknown field" in refused.output and "add --from kubernetes" in refused.output


def test_import_config_needs_from_kubernetes(tmp_path: Path) -> None:
    refused = runner.invoke(app, ["defrag", str(EXAMPLE), "--import-config", str(tmp_path / "c.yaml")])
    assert refused.exit_code == 2 and "--import-config: applies with --from kubernetes" in refused.output
