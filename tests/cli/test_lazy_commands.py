"""The ``planner`` command imports a command's module only when that command runs (issue 62: every call
paid 0.6-0.8 s of CPU importing the engine, the solvers, the service and the renderers before any
work). ``planner --help`` is built from the command table (``planner/cli/commands.py``); these tests
hold that table equal to the commands themselves and check what a call imports, in a fresh process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer.main
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup
from typer.testing import CliRunner

from planner.cli import app
from planner.cli.commands import COMMANDS, load
from tests.support.paths import REPO

HEAVY = (
    "numpy",
    "pydantic",
    "ortools",
    "highspy",
    "fastapi",
    "plotly",
    "sqlalchemy",
    "planner.engine",
    "planner.cluster",
    "planner.heuristics",
    "planner.models",
)
"""What no command pays for before it runs: the arrays, the models, the solvers, the service, the plots, the planners."""

SOLVERS_AND_SERVICE = ("ortools", "highspy", "fastapi", "plotly", "sqlalchemy", "planner.heuristics", "planner.models", "planner.engine.defrag.run")
"""What ``planner validate`` does not need: it checks a plan with the rules, it plans nothing."""

_MODULES_AFTER = """
import json, sys
sys.argv = ["planner", *json.loads(sys.argv[1])]
import planner.cli
try:
    planner.cli.main()
except SystemExit:
    pass
sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _imported(argv: list[str]) -> list[str]:
    """The modules imported by ``planner ARGV``, run in a fresh interpreter as the console script runs it."""
    done = subprocess.run([sys.executable, "-c", _MODULES_AFTER, json.dumps(argv)], capture_output=True, text=True, cwd=REPO, timeout=300)
    line = [text for text in done.stderr.splitlines() if text.startswith("MODULES ")]
    assert line, done.stderr
    return json.loads(line[-1].removeprefix("MODULES "))


def _of(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


def test_help_imports_no_command_module() -> None:
    """``planner --help`` imports the command table and the exit codes, and nothing heavy."""
    modules = _imported(["--help"])
    assert _of(modules, HEAVY) == []
    assert _of(modules, ("planner",)) == ["planner", "planner.cli", "planner.cli.commands", "planner.cli.exits"]


def test_validate_imports_no_planner_or_solver(tmp_path) -> None:
    """``planner validate`` on the bundled 16-node example imports its own command, the snapshot models
    and the validators, not the planners, the solvers, the service or the other commands."""
    snapshot, plan = tmp_path / "snapshot.json", tmp_path / "plan.json"
    runner = CliRunner()
    made = runner.invoke(app, ["import", "kubernetes", str(REPO / "instances" / "kubernetes" / "gpu-cluster.json"), "--out", str(snapshot)])
    assert made.exit_code == 0, made.output
    made = runner.invoke(app, ["defrag", str(snapshot), "--out", str(plan)])
    assert made.exit_code == 0, made.output
    modules = _imported(["validate", str(snapshot), str(plan)])
    assert "planner.validate.defrag" in modules  # it did validate
    assert _of(modules, SOLVERS_AND_SERVICE) == []
    others = {f"planner.cli.{entry.module}" for name, entry in COMMANDS.items() if name != "validate"}
    assert sorted(others & set(modules)) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_summary_is_the_commands_own_short_help(name: str) -> None:
    """The table's one-line help is what the command's own help shortens to, at every width."""
    command = load(name, COMMANDS[name], None)
    for limit in range(10, 400, 3):
        assert make_default_short_help(COMMANDS[name].summary, limit) == command.get_short_help_str(limit), (name, limit)


def test_help_lists_every_command_as_the_loaded_group_does() -> None:
    """``planner --help`` from the table is the help of the group with every command loaded, at 80 and 200 columns."""
    lazy = typer.main.get_command(app)
    loaded = TyperGroup(
        name="", commands={name: load(name, entry, None) for name, entry in COMMANDS.items()}, params=lazy.params, help=lazy.help, rich_markup_mode=None
    )
    for width in (80, 200):
        shown = [lazy.get_help(lazy.make_context("planner", [], max_content_width=width, terminal_width=width, resilient_parsing=True))]
        shown.append(loaded.get_help(loaded.make_context("planner", [], max_content_width=width, terminal_width=width, resilient_parsing=True)))
        assert shown[0] == shown[1]
        assert all(f"\n  {name} " in shown[0] for name in COMMANDS)


def test_an_unknown_command_is_a_usage_error_with_the_nearest_name() -> None:
    """Looked up in the table: a misspelt command still gets click's suggestion and exit 2."""
    done = subprocess.run([sys.executable, "-m", "planner", "defarg"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 2
    assert "No such command 'defarg'" in done.stderr and "defrag" in done.stderr
