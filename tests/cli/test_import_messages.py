"""Issue 40, item 5: the importer's messages say what is wrong where, in the input's own terms.

A YAML syntax error carries YAML's line and column (not the JSON parser's), a name that is not a string
says so (not "missing"), a key given twice in kubectl input (JSON or YAML) is refused naming the key and
its path (parsers silently keep the last value), and Kubernetes objects in YAML given as a snapshot get
the ``--from kubernetes`` hint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "gpu-cluster.json"


def _import(tmp_path: Path, text: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    done = runner.invoke(app, ["import", "kubernetes", str(path), "--out", str(tmp_path / "s.json")])
    assert done.exit_code == 2 and "internal error" not in done.output, done.output
    return done.output


def test_a_yaml_syntax_error_has_yamls_position(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: a\n  status: {}\n"
    output = _import(tmp_path, text, "in.yaml")
    assert "in.yaml: not valid YAML: line 6 column" in output, output
    assert "JSON" not in output.replace("-o json", ""), output


def test_a_name_that_is_not_a_string_says_so(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["items"][0]["metadata"]["name"] = 12345
    output = _import(tmp_path, json.dumps(data), "in.json")
    assert "Node (unnamed): metadata.name: must be a string, got int 12345" in output, output
    assert "missing" not in output, output


def _with_duplicate_label(as_yaml: bool) -> str:
    data = json.loads(EXAMPLE.read_text())
    text = json.dumps(data, indent=1)
    if as_yaml:
        text = yaml.safe_dump(data, sort_keys=False)
        return text.replace(
            "      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n",
            "      nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n      nvidia.com/gpu.product: NVIDIA-A100\n",
            1,
        )
    return text.replace(
        '"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"', '"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.product": "NVIDIA-A100"', 1
    )


@pytest.mark.parametrize("as_yaml", [False, True])
def test_a_key_given_twice_is_refused_with_its_path(tmp_path: Path, as_yaml: bool) -> None:
    output = _import(tmp_path, _with_duplicate_label(as_yaml), "in.yaml" if as_yaml else "in.json")
    assert "items[0].metadata.labels" in output and "key 'nvidia.com/gpu.product' is given twice" in output, output


@pytest.mark.parametrize("command", [["report"], ["defrag"], ["allocate"]])
def test_kubernetes_yaml_given_as_a_snapshot_gets_the_from_kubernetes_hint(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(json.loads(EXAMPLE.read_text()), sort_keys=False))
    done = runner.invoke(app, [*command, str(path)])
    assert done.exit_code == 2, done.output
    assert "not valid JSON" in done.output and "add --from kubernetes" in done.output, done.output
    machine = ["--json"] if command == ["report"] else ["-o", "json"]
    assert runner.invoke(app, [*command, str(path), "--from", "kubernetes", *machine]).exit_code == 0


def test_a_snapshot_written_as_yaml_is_told_snapshots_are_json(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"nodes": [{"name": "n0", "gpus": 8, "cpus": 8, "memory_gib": 8}], "pods": []}))
    done = runner.invoke(app, ["report", str(path)])
    assert done.exit_code == 2 and "not valid JSON" in done.output and "snapshots are JSON" in done.output, done.output


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("  gpu.replicas: 4\n", "metadata.labels.gpu.replicas: must be a string, got 4 (quote it in YAML)"),
        ("  zones: [a, b]\n", "metadata.labels.zones: must be a string, got a list"),
        ("  7: seven\n", "metadata.labels: key 7 must be a string"),
    ],
)
def test_label_values_that_are_not_strings_are_refused_not_stringified(tmp_path: Path, label: str, message: str) -> None:
    text = "apiVersion: v1\nkind: Node\nmetadata:\n name: n0\n labels:\n" + label.replace("  ", "  ", 1) + "status: {allocatable: {cpu: '8', memory: 8Gi}}\n"
    output = _import(tmp_path, text, "in.yaml")
    assert f"Node n0: {message}" in output, output


def test_validate_tells_yaml_plans_and_kubernetes_snapshots_apart(tmp_path: Path) -> None:
    from planner.cluster import Cluster, Node, Pod

    snapshot = tmp_path / "s.json"
    snapshot.write_text(
        Cluster(
            nodes=[Node(name="n0", gpus=8, cpus=8, memory_gib=8), Node(name="n1", gpus=8, cpus=8, memory_gib=8)],
            pods=[Pod(name="a", gpus=2, cpus=1, node="n0"), Pod(name="b", gpus=2, cpus=1, node="n1")],
        ).model_dump_json()
    )
    plan = tmp_path / "plan.yaml"
    plan.write_text(runner.invoke(app, ["defrag", str(snapshot), "-o", "yaml"]).stdout)
    done = runner.invoke(app, ["validate", str(snapshot), str(plan)])
    assert done.exit_code == 2 and "plan files are JSON: write the plan with -o json or --out FILE" in done.output, done.output
    done = runner.invoke(app, ["report", str(snapshot), "--requests", "8g8c", "--plan", str(plan)])
    assert done.exit_code == 2 and "plan files are JSON" in done.output, done.output
    kubernetes = tmp_path / "cluster.yaml"
    kubernetes.write_text(yaml.safe_dump(json.loads(EXAMPLE.read_text())))
    done = runner.invoke(app, ["validate", str(kubernetes), str(plan)])
    assert done.exit_code == 2 and "convert it once with planner import kubernetes" in done.output, done.output
    assert "--from" not in done.output, "validate has no --from"
    first = done.output.splitlines()[0]
    assert first.startswith("error: SNAPSHOT: this is a kubectl List"), "the fix comes first: " + done.output
