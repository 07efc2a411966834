"""Every command's ``--help`` readable at 80 columns (no option name cut), and help that names only
subcommands that exist (issue 59: ``planner defrag --help`` cut 17 flag names to ``--max-moves-per-…``;
``planner --help`` advertised ``jobs list`` and ``plans list``)."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from planner.cli import app
from tests.support.paths import REPO

runner = CliRunner()


@functools.cache
def _root() -> Any:
    """The app's click command tree (built once: each build walks every command)."""
    return typer.main.get_command(app)


def _command_paths() -> list[tuple[str, ...]]:
    """Every command and command group of the app, as the words that name it (``()`` is ``planner``)."""
    paths = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(_root(), ())
    return paths


def _command(path: tuple[str, ...]) -> Any:
    command = _root()
    for name in path:
        command = command.commands[name]
    return command


@pytest.mark.parametrize("path", _command_paths(), ids=lambda path: " ".join(path) or "planner")
def test_every_option_name_is_whole_at_80_columns(path: tuple[str, ...]) -> None:
    """At 80 columns no flag name is cut (the Rich help tables cut 17 of defrag's to ``--max-moves-per-…``)
    and no line is wider than the terminal."""
    done = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERM": "dumb"})
    assert done.exit_code == 0, done.output
    assert "…" not in done.output, done.output
    assert max(len(line) for line in done.output.splitlines()) <= 80, done.output
    names = [name for p in _command(path).params if not getattr(p, "hidden", False) for name in (*p.opts, *p.secondary_opts) if name.startswith("-")]
    cut = [name for name in names if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", done.output)]
    assert not cut, f"planner {' '.join(path)} --help at 80 columns does not show {cut} in full:\n{done.output}"


def test_defrag_help_at_80_columns_as_a_terminal_shows_every_budget_flag() -> None:
    """The same through the console script's own process (``COLUMNS=80``, not the test runner)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "80", "TERM": "dumb"}
    done = subprocess.run([sys.executable, "-m", "planner", "defrag", "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("--max-moves-per-node", "--max-moves-per-wave", "--max-nodes-per-wave", "--max-moves-per-node-per-wave", "--max-moves-per-namespace"):
        assert re.search(rf"^\s+{re.escape(name)}(?![\w-])", done.stdout, re.MULTILINE), f"{name} not shown whole:\n{done.stdout}"
    assert "…" not in done.stdout


PLANNER_MENTION = re.compile(r"\bplanner((?: [a-z][a-z0-9-]*)+)")


def _help_texts() -> list[tuple[str, str]]:
    """(where, text) for the help of every command, group and option."""
    texts = []
    for path in _command_paths():
        command = _command(path)
        where = " ".join(("planner", *path))
        texts.append((where, command.help or ""))
        texts += [(f"{where} {p.opts[0]}", getattr(p, "help", None) or "") for p in command.params]
    return texts


def test_every_subcommand_a_help_text_names_exists() -> None:
    """A group's help that ends in a list of its subcommands (``...: get, cancel, delete.``) names only real
    ones (``planner jobs`` advertised ``list``, which does not exist), and every ``planner GROUP WORD`` in any
    help text names a real subcommand."""
    wrong = []
    for path in _command_paths():
        group = _command(path)
        if not hasattr(group, "commands") or ": " not in (group.help or ""):
            continue
        listed = [word for word in re.split(r",\s*|\s+(?:and|or)\s+", group.help.rsplit(": ", 1)[1].strip().rstrip(".")) if word]
        if len(listed) >= 2 and all(re.fullmatch(r"[a-z][a-z-]*", word) for word in listed):
            wrong += [f"planner {' '.join(path)}: {word}" for word in listed if word not in group.commands]
    for where, text in _help_texts():
        for mention in PLANNER_MENTION.finditer(text):
            first, *rest = mention.group(1).split()
            if first not in _root().commands:
                continue  # prose ("a planner snapshot"), not a command line
            command = _root().commands[first]
            for word in rest:
                if not hasattr(command, "commands"):
                    break  # a command: what follows is its arguments or prose
                if word not in command.commands:
                    wrong.append(f"{where}: {mention.group(0)!r}")
                    break
                command = command.commands[word]
    assert not wrong, "help names subcommands that do not exist:\n" + "\n".join(wrong)
