"""The `planner` command: exit codes and messages, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.api.schemas import EXAMPLE_PLAN
from planner.cli import app
from planner.cli.validate import VERDICTS
from planner.kinds import KINDS
from tests.support.malformed_snapshots import MALFORMED
from tests.support.paths import FIG15
from tests.support.preempt_clusters import prefix_counterexample

runner = CliRunner()

FIG15_PLAN = EXAMPLE_PLAN  # the Fig. 15 chain as three waves, also the API's example


def write(tmp_path: Path, name: str, data: object) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_report_prints_the_headline_measures() -> None:
    result = runner.invoke(app, ["report", str(FIG15), "--shape", "8g64c"])
    assert result.exit_code == 0, result.output
    assert "nodes with slack" in result.stdout and "Requests of shape 8g64c" in result.stdout


def test_report_json_has_every_section() -> None:
    result = runner.invoke(app, ["report", str(FIG15), "--json", "--shape", "16g128c"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert set(data) == {"time_s", "summary", "fgd", "stranded", "per_asw"}
    assert data["summary"]["nodes_with_slack"] == 4 and data["stranded"]["multi_node"]


def test_report_reads_stdin() -> None:
    result = runner.invoke(app, ["report", "-", "--json"], input=FIG15.read_text())
    assert result.exit_code == 0 and json.loads(result.stdout)["summary"]["gpus"] == 32


@pytest.mark.parametrize("case,snapshot,expected", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_snapshots_exit_2_with_field_paths(tmp_path: Path, case: str, snapshot: object, expected: str) -> None:
    result = runner.invoke(app, ["report", write(tmp_path, "snap.json", snapshot)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    expected = expected.replace("snap.json", str(tmp_path / "snap.json"))
    assert expected in result.stderr.replace("\n", " ") or expected in result.stderr, result.stderr


def test_missing_file_and_bad_shape_exit_2(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["report", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    shape = runner.invoke(app, ["report", str(FIG15), "--shape", "eight"])
    assert shape.exit_code == 2 and "--shape" in shape.stderr


def test_validate_exit_codes(tmp_path: Path) -> None:
    ok = runner.invoke(app, ["validate", str(FIG15), write(tmp_path, "ok.json", FIG15_PLAN)])
    assert ok.exit_code == 0 and "valid: 3 wave(s), 3 move(s), 1 vacated node(s)" in ok.stdout
    squeezed = {**FIG15_PLAN, "waves": [[m for w in FIG15_PLAN["waves"] for m in w]]}
    bad = runner.invoke(app, ["validate", str(FIG15), write(tmp_path, "bad.json", squeezed)])
    assert bad.exit_code == 1
    lines = bad.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("waves[0]: over_capacity") for line in lines)


def test_validate_says_what_it_checked_for_every_kind_of_plan() -> None:
    assert set(VERDICTS) == set(KINDS)  # a new kind of plan needs its line in planner validate


@pytest.mark.parametrize(
    "command,valid,named",
    [
        (["preempt", "--job", "hp"], "valid: 1 placement(s), 1 victim(s), 3 GPU-s lost, 0 surplus victim gang(s)", "a preempt plan"),
        (["allocate"], "valid: 0 placement(s), 1 job(s) left pending", "an allocation plan"),
    ],
)
def test_validate_checks_other_kinds_and_refuses_defrag_limits(tmp_path: Path, command: list[str], valid: str, named: str) -> None:
    snapshot = write(tmp_path, "s.json", prefix_counterexample().model_dump_json(exclude_defaults=True))  # its one node full, HP job hp pending
    plan = str(tmp_path / "plan.json")
    assert runner.invoke(app, [command[0], snapshot, *command[1:], "--out", plan]).exit_code == 0
    checked = runner.invoke(app, ["validate", snapshot, plan])
    assert checked.exit_code == 0 and checked.stdout.strip() == valid
    limited = runner.invoke(app, ["validate", snapshot, plan, "--max-moves", "3"])
    assert limited.exit_code == 2 and limited.stdout == ""
    assert f"apply to defrag plans; this is {named}" in limited.stderr


@pytest.mark.parametrize(
    "plan,expected",
    [
        ("{", "not valid JSON"),
        ({"version": 1, "kind": "defrag", "vacated_nodes": []}, "waves: required field is missing"),
        ({**FIG15_PLAN, "waves": [[{"pod": "Job-7-0", "from": "node-2"}]]}, "waves[0][0].to: required field is missing"),
        ({**FIG15_PLAN, "kind": "preempt"}, "kind"),
        ({**FIG15_PLAN, "waves": [[{"pod": 7, "from": "node-2", "to": "node-3"}]]}, "waves[0][0].pod: must be a string"),
    ],
)
def test_malformed_plans_exit_2(tmp_path: Path, plan: object, expected: str) -> None:
    result = runner.invoke(app, ["validate", str(FIG15), write(tmp_path, "plan.json", plan)])
    assert result.exit_code == 2, result.output
    assert expected in result.stderr


def test_console_script_runs_as_a_real_process(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("planner")
    ok = subprocess.run([str(exe), "report", str(FIG15), "--json"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and json.loads(ok.stdout)["summary"]["empty_nodes"] == 0
    bad = subprocess.run([str(exe), "report", write(tmp_path, "t.json", '{"nodes": [')], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not valid JSON" in bad.stderr and "Traceback" not in bad.stderr


def test_defrag_writes_a_plan_that_validate_accepts(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = runner.invoke(app, ["defrag", str(FIG15), "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    plan = json.loads(out.read_text())
    assert [len(w) for w in plan["waves"]] == [1, 1, 1] and plan["vacated_nodes"] == ["node-0"]
    assert plan["report"]["method"] == "ipc" and plan["report"]["waves"] == 3
    check = runner.invoke(app, ["validate", str(FIG15), str(out)])
    assert check.exit_code == 0 and "valid: 3 wave(s)" in check.stdout


def test_defrag_table_shows_before_and_after() -> None:
    result = runner.invoke(app, ["defrag", str(FIG15), "--format", "table", "--workers", "1"])
    assert result.exit_code == 0
    assert "vacated nodes" in result.stdout and "nodes with slack cut" in result.stdout and "75.0%" in result.stdout


@pytest.mark.parametrize(
    "option,value",
    [
        ("--depth", "0"),
        ("--partition-size", "1"),
        ("--max-moves", "-1"),
        ("--rounds", "0"),
        ("--max-moves-per-node", "-2"),
        ("--workers", "0"),
        ("--method", "magic"),
    ],
)
def test_defrag_out_of_range_options_exit_2_naming_the_option(option: str, value: str) -> None:
    result = runner.invoke(app, ["defrag", str(FIG15), option, value])
    assert result.exit_code == 2
    assert option in result.output


def test_defrag_of_an_inconsistent_snapshot_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["defrag", write(tmp_path, "bad.json", MALFORMED[-1][1])])
    assert result.exit_code == 2 and "jobs[0].topology" in result.stderr


def test_defrag_with_nothing_to_vacate_exits_0_with_the_reason(tmp_path: Path) -> None:
    snapshot = {
        "nodes": [{"name": "a", "gpus": 8, "cpus": 8, "memory_gib": 8}, {"name": "b", "gpus": 8, "cpus": 8, "memory_gib": 8}],
        "pods": [{"name": "x", "node": "a", "gpus": 1, "cpus": 1, "locked": True}, {"name": "y", "node": "b", "gpus": 1, "cpus": 1, "locked": True}],
    }
    result = runner.invoke(app, ["defrag", write(tmp_path, "locked.json", snapshot), "--workers", "1"])
    assert result.exit_code == 0
    plan = json.loads(result.stdout)
    assert plan["waves"] == [] and "locked pod" in plan["report"]["reason"]


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--method", "exact", "--time-limit", "0"], "--time-limit: must be above 0 seconds"),
        (["--method", "exact", "--solver", "gurobi"], "--solver"),
        (["--method", "exact", "--formulation", "magic"], "--formulation"),
    ],
)
def test_bad_solver_options_exit_2(args: list[str], expected: str) -> None:
    result = runner.invoke(app, ["defrag", str(FIG15), *args])
    assert result.exit_code == 2 and expected in result.output


def test_exact_refuses_a_large_instance_naming_hybrid(tmp_path: Path) -> None:
    nodes = [{"name": f"n{i}", "gpus": 8, "cpus": 8, "memory_gib": 8} for i in range(1001)]
    result = runner.invoke(app, ["defrag", write(tmp_path, "big.json", {"nodes": nodes}), "--method", "exact"])
    assert result.exit_code == 2 and "use --method hybrid" in result.stderr and "--force" in result.stderr


def test_compare_prints_both_sides(tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    result = runner.invoke(app, ["defrag", str(FIG15), "--method", "compare", "--format", "table", "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0 and "Heuristic (IPC) against exact" in result.stdout
    data = json.loads(out.read_text())
    assert data["kind"] == "defrag-compare" and data["gap"]["gap_empty_nodes"] == 0 and data["exact"]["report"]["status"] == "optimal"
