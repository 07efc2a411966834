"""A kubectl List given where a snapshot is read, without ``--from kubernetes``: every command that reads a
snapshot says it is a kubectl List and how to read it (exit 2), whatever else the snapshot parser found,
JSON or YAML, a List the parser stops early on (a duplicate key) included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from tests.support.paths import FIG15, INSTANCES

runner = CliRunner()
EXAMPLE = INSTANCES / "kubernetes" / "gpu-cluster.json"
HINT = "SNAPSHOT: this is a kubectl List (kubectl get ... -o json or -o yaml), not a snapshot: "
FROM = "add --from kubernetes, or convert it once with planner import kubernetes FILE --out SNAPSHOT"
CONVERT = "convert it once with planner import kubernetes FILE --out SNAPSHOT"


@pytest.fixture(scope="module")
def lists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example List as kubectl writes it (JSON), as YAML, as a NodeList, and with a key given twice."""
    directory = tmp_path_factory.mktemp("lists")
    text = EXAMPLE.read_text()
    document = json.loads(text)
    forms = {
        "json": text,
        "yaml": yaml.safe_dump(document),
        "nodelist": json.dumps({**document, "kind": "NodeList", "items": [i for i in document["items"] if i["kind"] == "Node"]}),
        "duplicate-key": text.replace('"kind": "List"', '"kind": "List", "kind": "List"', 1),
    }
    assert forms["duplicate-key"] != text
    paths = {}
    for name, form in forms.items():
        paths[name] = directory / f"{name}.list"
        paths[name].write_text(form)
    return paths


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plan file (render and validate read one beside the snapshot)."""
    plan = tmp_path_factory.mktemp("plan") / "plan.json"
    done = runner.invoke(app, ["defrag", str(FIG15), "--out", str(plan)])
    assert done.exit_code == 0, done.output
    return plan


COMMANDS = {
    "defrag": lambda snapshot, plan: ["defrag", snapshot],
    "allocate": lambda snapshot, plan: ["allocate", snapshot],
    "preempt": lambda snapshot, plan: ["preempt", snapshot, "--job", "j"],
    "explain": lambda snapshot, plan: ["explain", snapshot, "--job", "j"],
    "report": lambda snapshot, plan: ["report", snapshot],
    "render": lambda snapshot, plan: ["render", plan, "--snapshot", snapshot],
    "submit": lambda snapshot, plan: ["submit", "defrag", snapshot, "--server", "http://127.0.0.1:9"],
}


@pytest.mark.parametrize("form", ["json", "yaml", "nodelist", "duplicate-key"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_kubectl_list_gets_the_from_kubernetes_hint_first(lists: dict[str, Path], plan: Path, command: str, form: str) -> None:
    done = runner.invoke(app, COMMANDS[command](str(lists[form]), str(plan)))
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    assert done.stderr.splitlines()[0] == f"error: {HINT}{FROM}", done.stderr


@pytest.mark.parametrize("form", ["json", "yaml", "duplicate-key"])
@pytest.mark.parametrize("command", ["validate", "export"])
def test_commands_without_from_say_convert(lists: dict[str, Path], plan: Path, form: str, command: str) -> None:
    args = ["validate", str(lists[form]), str(plan)] if command == "validate" else ["export", "kubernetes", str(lists[form])]
    done = runner.invoke(app, args)
    assert done.exit_code == 2, done.output
    assert done.stderr.splitlines()[0] == f"error: {HINT}{CONVERT}", done.stderr


def test_a_list_on_stdin_gets_the_hint() -> None:
    done = runner.invoke(app, ["defrag", "-"], input=EXAMPLE.read_text())
    assert done.exit_code == 2 and done.stderr.splitlines()[0] == f"error: {HINT}{FROM}", done.stderr


@pytest.mark.parametrize(
    "document",
    [
        {"version": 1, "nodes": [{"name": "items", "gpus": 8, "cpus": 8, "memory_gib": 8}], "pods": [{"name": "p", "gpus": 9, "node": "items"}]},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "items"}},
        {"items": "not a list", "kind": "List"},
    ],
    ids=["snapshot-naming-items", "one-pod", "items-not-a-list"],
)
def test_what_is_not_a_list_is_not_called_one(tmp_path: Path, document: dict) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(document))
    done = runner.invoke(app, ["defrag", str(path)])
    assert done.exit_code == 2 and "kubectl List" not in done.output, done.output
