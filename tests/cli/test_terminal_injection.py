"""Issue 40, item 2: text from the input reaches the terminal with its control characters escaped.

A name or annotation value holding ESC sequences (clear the screen, set the window title, recolour) or
C1 controls must print as visible escapes in every human output: tables, the wide listing, warnings,
errors and validation lines. JSON and YAML outputs escape them by their own rules.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.cli.common import plain_console
from planner.cluster import Cluster, Job, Node, Pod
from planner.textsafe import printable

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "gpu-cluster.json"
HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\r\nforged"


def _clean(text: str) -> None:
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in "\n") or 0x7F <= ord(c) <= 0x9F})
    assert not bad, f"control characters reached the terminal: {bad}"
    assert "\nforged" not in text, "a newline from the input forged a line"


def test_printable_escapes_c0_c1_and_esc_and_keeps_the_rest() -> None:
    assert printable("gpu-0 ünïcode ✓") == "gpu-0 ünïcode ✓"
    assert printable(HOSTILE) == "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\r\\nforged"
    assert printable("a\u202eb") == "a\\u202eb"


def _snapshot(tmp_path: Path) -> Path:
    nodes = [Node(name=f"n{i}", gpus=8, cpus=64, memory_gib=512, asw=HOSTILE, gpu_model=HOSTILE) for i in range(2)]
    pods = [
        Pod(name=f"a{HOSTILE}", gpus=2, cpus=1, node="n0"),
        Pod(name=f"b{HOSTILE}", gpus=2, cpus=1, node="n1"),
        Pod(name=f"c{HOSTILE}", job=HOSTILE, gpus=2, cpus=1),
    ]
    path = tmp_path / "s.json"
    path.write_text(Cluster(nodes=nodes, pods=pods, jobs=[Job(name=HOSTILE)]).model_dump_json())
    return path


@pytest.mark.parametrize("args", [["report"], ["defrag", "-o", "table"], ["defrag", "-o", "wide"], ["allocate", "-o", "table"], ["explain", "--job", HOSTILE]])
def test_tables_escape_names(tmp_path: Path, args: list[str]) -> None:
    done = runner.invoke(app, [args[0], str(_snapshot(tmp_path)), *args[1:]])
    assert done.exit_code == 0, done.output
    _clean(done.output)
    if args[1:] != ["-o", "table"]:  # the defrag summary names no pod, node or switch
        assert "\\x1b" in done.output, "the name should be shown, escaped"


def test_errors_and_validation_lines_escape_names(tmp_path: Path) -> None:
    path = _snapshot(tmp_path)
    data = json.loads(path.read_text())
    data["pods"][0]["node"] = HOSTILE
    (tmp_path / "bad.json").write_text(json.dumps(data))
    done = runner.invoke(app, ["report", str(tmp_path / "bad.json")])
    assert done.exit_code == 2 and "unknown node" in done.output
    _clean(done.output)
    plan = {"version": 1, "kind": "defrag", "waves": [[{"pod": f"a{HOSTILE}", "from": "n0", "to": HOSTILE}]], "vacated_nodes": []}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    done = runner.invoke(app, ["validate", str(path), str(tmp_path / "plan.json")])
    assert done.exit_code in (1, 2), done.output
    _clean(done.output)
    done = runner.invoke(app, ["explain", str(path), "--job", f"{HOSTILE}x"])  # the name asked for, the closest and the pending ones
    assert done.exit_code == 2 and "did you mean '\\x1b]0;owned" in done.output, done.output
    _clean(done.output)


def test_import_warnings_escape_annotation_values(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    items = copy.deepcopy(data["items"])
    pod = next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "pretrain-workers-0-0")
    pod["metadata"].setdefault("annotations", {})["kueue.x-k8s.io/podset-required-topology"] = HOSTILE
    pod["status"]["phase"] = HOSTILE
    (tmp_path / "list.json").write_text(json.dumps({**data, "items": items}))
    done = runner.invoke(app, ["import", "kubernetes", str(tmp_path / "list.json"), "--out", str(tmp_path / "s.json")])
    assert done.exit_code == 0, done.output
    assert "warning: Pod research/pretrain-workers-0-0: status.phase: '\\x1b]0;owned" in done.output
    _clean(done.output)


def test_every_plain_console_escapes(tmp_path: Path) -> None:
    with (tmp_path / "out.txt").open("w") as f:
        plain_console(file=f, force_terminal=True).print(f"name {HOSTILE}")
    _clean((tmp_path / "out.txt").read_text().replace("\x1b[0m", ""))


def test_the_import_summary_escapes_kinds_from_the_input(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["items"].append({"apiVersion": "v1", "kind": HOSTILE, "metadata": {"name": "x"}})
    (tmp_path / "list.json").write_text(json.dumps(data))
    done = runner.invoke(app, ["import", "kubernetes", str(tmp_path / "list.json"), "--out", str(tmp_path / "s.json")])
    assert done.exit_code == 0 and "skipped: 1 \\x1b]0;owned" in done.output, done.output
    _clean(done.output)
