"""Issue 40, items 3 and 4: hostile documents end in exit 2 naming where, never a crash or a memory blow-up.

Deep nesting (JSON and YAML, block and flow), numbers longer than Python's int-conversion limit (4,300
digits) as JSON integers, YAML integers and quantity strings, and a YAML alias bomb (484 bytes that
expand to 9^9 values) against ``planner import kubernetes``, ``--from kubernetes`` and the import
configuration. The importer's YAML reader composes the same values as ``yaml.safe_load`` on real input.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from planner.adapters.kubernetes import import_kubernetes
from planner.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "instances" / "kubernetes" / "gpu-cluster.json"


def _import(tmp_path: Path, text: str, name: str = "in.json", *extra: str) -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    done = runner.invoke(app, ["import", "kubernetes", str(path), "--out", str(tmp_path / "s.json"), *extra])
    assert "Traceback" not in done.output and "internal error" not in done.output, done.output
    return done.exit_code, done.output


def _example_with_annotation(value: object) -> dict:
    data = json.loads(EXAMPLE.read_text())
    pod = next(i for i in data["items"] if i["kind"] == "Pod" and i["metadata"]["name"] == "pretrain-workers-0-0")
    pod["metadata"].setdefault("annotations", {})["x"] = value
    return data


@pytest.mark.parametrize(
    ("text", "name", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "in.json", "in.json: line 1 column 101: nested more than 100 levels deep"),
        ('{"a": "[[[{{",\n "b":' * 100_000 + "1" + "}" * 100_000, "in.json", "in.json: line 101 column 6: nested more than 100 levels deep"),
        ("x: " + "[" * 100_000 + "]" * 100_000 + "\n", "in.yaml", "not valid YAML: line 1 column"),
        (
            "a:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(3000)) + "  " * 3001 + "b: 1\n",
            "in.yaml",
            "(YAML line 101 column 201): nested more than 100 levels deep",
        ),
    ],
)
def test_deep_nesting_is_exit_2(tmp_path: Path, text: str, name: str, message: str) -> None:
    code, output = _import(tmp_path, text, name)
    assert code == 2 and message in output, output


def test_nesting_the_parser_accepts_but_later_steps_would_not_is_exit_2_with_its_path(tmp_path: Path) -> None:
    value: object = "leaf"
    for _ in range(500):
        value = [value]
    code, output = _import(tmp_path, json.dumps(_example_with_annotation(value)))
    assert code == 2 and "metadata.annotations.x[0][0]" in output and "nested more than 100 levels deep" in output, output


def test_a_deep_import_configuration_is_exit_2(tmp_path: Path) -> None:
    deep = "a:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(700)) + "  " * 701 + "b: 1\n"
    assert len(deep) < 2**20  # a configuration may be 1 Mi characters
    (tmp_path / "c.yaml").write_text(deep)
    code, output = _import(tmp_path, EXAMPLE.read_text(), "in.json", "--config", str(tmp_path / "c.yaml"))
    assert code == 2 and "c.yaml: a.a.a" in output and "nested more than 100 levels deep" in output, output


def test_a_quantity_of_5000_digits_is_exit_2_naming_its_field(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["items"][0]["status"]["allocatable"]["cpu"] = "1" * 5000
    code, output = _import(tmp_path, json.dumps(data))
    assert code == 2 and "error: Node h100-0: status.allocatable.cpu: " in output and "5000 digits" in output, output


def test_a_json_integer_of_5000_digits_is_exit_2_with_its_position(tmp_path: Path) -> None:
    text = json.dumps(json.loads(EXAMPLE.read_text()), indent=1).replace('"cpu": "96"', '"cpu": ' + "9" * 5000, 1)
    line = text[: text.index("9" * 5000)].count("\n") + 1
    code, output = _import(tmp_path, text)
    assert code == 2 and f"in.json: line {line} column " in output and "5,000 digits; numbers may have at most 100" in output, output


def test_a_yaml_integer_of_5000_digits_is_exit_2_with_its_path(tmp_path: Path) -> None:
    text = yaml.safe_dump(json.loads(EXAMPLE.read_text()), sort_keys=False).replace("cpu: '96'", "cpu: " + "9" * 5000, 1)
    code, output = _import(tmp_path, text, "in.yaml")
    assert code == 2 and "in.yaml: items[0].status.capacity.cpu (YAML line" in output and "as int" in output, output


def test_a_snapshot_with_a_5000_digit_number_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"nodes": [{"name": "n0", "gpus": ' + "1" * 5000 + ', "cpus": 1, "memory_gib": 1}], "pods": []}')
    done = runner.invoke(app, ["report", str(path)])
    assert done.exit_code == 2 and "internal error" not in done.output, done.output


BOMB = "\n".join(
    [
        "apiVersion: v1",
        "kind: Node",
        "metadata:",
        "  name: bomb",
        "  labels:",
        '    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *[f"    {c}: &{c} [{','.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")],
        "status: {allocatable: {cpu: '8', memory: 8Gi}}",
        "",
    ]
)


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    assert len(BOMB) < 1000
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    code = (
        "from typer.testing import CliRunner; from planner.cli import app; "
        f"r = CliRunner().invoke(app, ['import', 'kubernetes', {str(path)!r}]); print(r.exit_code); print(r.output)"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    )
    elapsed = time.monotonic() - started
    assert done.stdout.startswith("2\n"), done.stdout + done.stderr
    assert "bomb.yaml: metadata.labels.f" in done.stdout and "aliases stand for more than 100,000 values" in done.stdout, done.stdout
    assert elapsed < 20, f"took {elapsed:.1f} s"


def test_a_few_aliases_still_read_as_their_values(tmp_path: Path) -> None:
    text = (
        "items:\n- &node {apiVersion: v1, kind: Node, metadata: {name: a, labels: &l {zone: z1}},\n"
        "   status: {allocatable: &r {cpu: '8', memory: 8Gi}}}\n"
        "- {apiVersion: v1, kind: Node, metadata: {name: b, labels: *l}, status: {allocatable: *r}}\n"
    )
    expanded = {
        "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n, "labels": {"zone": "z1"}}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi"}}}
            for n in "ab"
        ]
    }
    from planner.adapters.kubernetes_documents import parse_yaml

    assert parse_yaml(text, "x") == [expanded]
    a = import_kubernetes([(text, "x.yaml")]).cluster
    assert a == import_kubernetes([(json.dumps(expanded), "x.json")]).cluster


def test_the_yaml_reader_gives_what_safe_load_gives_on_kubectl_output() -> None:
    data = json.loads(EXAMPLE.read_text())
    text = yaml.safe_dump(data, sort_keys=False) + "---\n" + yaml.safe_dump({"a": [1, 2.5, "yes", True, None, "0x1F", "2001-12-14"]})
    from planner.adapters.kubernetes_documents import parse_yaml

    assert parse_yaml(text, "x") == list(yaml.safe_load_all(text))
    assert import_kubernetes([(yaml.safe_dump(data), "x.yaml")]).cluster == import_kubernetes([(EXAMPLE.read_text(), "x.json")]).cluster


def test_one_long_string_aliased_many_times_is_refused(tmp_path: Path) -> None:
    labels = "".join(f"    k{i}: *s\n" for i in range(400))
    text = (
        f"apiVersion: v1\nkind: Node\nmetadata:\n  name: n0\n  annotations:\n    big: &s '{'x' * 50_000}'\n  labels:\n{labels}"
        "status: {allocatable: {cpu: '8', memory: 8Gi}}\n"
    )
    code, output = _import(tmp_path, text, "in.yaml")
    assert code == 2 and "metadata.labels.k335 (YAML line" in output and "16,777,216 characters" in output, output


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["yes", "off", "~", "0x1F", "017", "1_000", "1:20", "2001-12-14", ".inf", "<<x", "!x", "=", "'q'"]),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(_VALUES, st.sampled_from([None, True, False]))
def test_the_yaml_reader_agrees_with_safe_load_on_any_dumped_value(value: object, flow: bool | None) -> None:
    from planner.adapters.kubernetes_documents import parse_yaml

    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True)
    assert parse_yaml(text, "x") == list(yaml.safe_load_all(text))
