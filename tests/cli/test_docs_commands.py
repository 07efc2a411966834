"""The README and the documentation say what they can do: every quick-start command runs.

Blocks are marked in the Markdown itself: ``<!-- quickstart -->`` before a fenced ``bash`` block makes
each of its commands a test, run in a fresh directory that holds this checkout's ``instances/`` (as a
user would run them from the repository root), with ``planner`` meaning this checkout's code and
``kubectl`` a stand-in for a cluster (``get`` prints the bundled example List; anything else is
recorded). ``<!-- quickstart continues -->`` runs after the page's block before it, in the same
directory (a walk-through split by prose). ``<!-- quickstart needs=PATH -->`` names data outside the repository (relative to the
repository root); without it the block is skipped, saying so. ``<!-- setup -->`` marks the two set-up
commands: their install steps are not run here, the main job after them is, and the test command must
be the one ``.ci/run`` runs. ``<!-- cheatsheet -->`` marks the README's table of commands, which must
name every command ``planner --help`` lists.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.paths import REPO
from tests.support.planner_command import command_names, planner

README = REPO / "README.md"
DOCS = REPO / "docs"
EXAMPLE_LIST = REPO / "instances" / "kubernetes" / "gpu-cluster.json"
MARKED_BLOCK = re.compile(r"<!-- (?P<mark>quickstart|setup)(?P<attrs>[^>]*)-->\s*\n```bash\n(?P<body>.*?)\n```", re.DOTALL)
INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q -e . && "
TEST_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && bash controlplane/build.sh && .venv/bin/pytest -q"
PLAN_KINDS = {"defrag", "defrag-compare", "preempt", "preempt-compare", "allocate", "allocate-compare"}
FIRST_WORDS = {"planner", "kubectl", "DRY_RUN=1", "cp", "bash"}


@dataclass(frozen=True)
class Block:
    """A marked fenced block: where it is, its mark and attributes, and its commands."""

    where: str
    mark: str
    needs: str | None
    commands: tuple[str, ...]


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def commands_of(body: str) -> tuple[str, ...]:
    """The commands of a block: one a line (a trailing backslash continues it), comments left out."""
    commands, current = [], ""
    for line in body.splitlines():
        current += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            if current.strip() and not current.lstrip().startswith("#"):
                commands.append(current.strip())
            current = ""
    return tuple(commands)


def marked_blocks() -> list[Block]:
    blocks = []
    for path in markdown_files():
        if path.is_relative_to(DOCS / "benchmarks" / "results"):
            continue  # benchmark results (a link into benchmarks/results) hold no quick starts
        text = path.read_text(encoding="utf-8")
        for match in MARKED_BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            needs = re.search(r"needs=(\S+)", match["attrs"])
            commands = commands_of(match["body"])
            if "continues" in match["attrs"].split():  # run after the page's block before it, in its directory
                previous = blocks.pop()
                assert previous.where.startswith(f"{path.relative_to(REPO)}:") and previous.mark == "quickstart", f"{path}:{line}"
                blocks.append(Block(previous.where, previous.mark, previous.needs, previous.commands + commands))
                continue
            blocks.append(Block(f"{path.relative_to(REPO)}:{line}", match["mark"], needs and needs[1], commands))
    return blocks


BLOCKS = marked_blocks()
QUICKSTARTS: dict[tuple[str, ...], list[Block]] = {}
for _block in BLOCKS:
    if _block.mark == "quickstart":
        QUICKSTARTS.setdefault(_block.commands, []).append(_block)  # the same block on two pages runs once


def test_the_readme_and_getting_started_have_the_set_up_commands_and_both_quick_starts() -> None:
    for page in ("README.md", "docs/getting-started.md"):
        setup = [b.commands for b in BLOCKS if b.where.startswith(page + ":") and b.mark == "setup"]
        assert setup == [(INSTALL + ".venv/bin/planner defrag instances/asi-500.json -o table",), (TEST_COMMAND,)], page
        assert sum(b.where.startswith(page + ":") and b.mark == "quickstart" for b in BLOCKS) >= 2, page
    ci = (REPO / ".ci" / "run").read_text()
    assert TEST_COMMAND in ci.splitlines(), ".ci/run must run exactly the README's test command"


def test_every_planner_page_has_a_quick_start() -> None:
    pages = {b.where.split(":")[0] for b in BLOCKS if b.mark == "quickstart"}
    for page in ("defrag", "make-room", "preempt", "allocate", "kubernetes", "simulators", "instances", "operator-guide"):
        assert f"docs/{page}.md" in pages, page


def test_quick_start_commands_are_commands_of_ours() -> None:
    for block in BLOCKS:
        if block.mark != "quickstart":
            continue
        assert block.commands, block.where
        for command in block.commands:
            assert shlex.split(command)[0] in FIRST_WORDS, f"{block.where}: {command}"
        assert any(c.startswith("planner ") or "| planner " in c for c in block.commands), block.where


def test_the_cheat_sheet_names_every_command_and_only_real_ones() -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split("<!-- cheatsheet -->", 1)[1].split("\n\n", 1)[0]
    named: dict[str, set[str]] = {}
    for cell in re.findall(r"^\| `planner ([^`]+)`", table, re.MULTILINE):
        words = cell.replace("\\|", "|").split()
        subcommands = {s for s in words[1].split("|")} if len(words) > 1 and words[1][0].islower() else set()
        named.setdefault(words[0], set()).update(subcommands)
    for cell in re.findall(r"`planner (\w+)`", table):  # `planner jobs` / `planner plans` in one row
        named.setdefault(cell, set())
    assert set(named) == command_names(), "the cheat sheet must name exactly the commands planner --help lists"
    import typer.main

    from planner.cli import app

    groups = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for name, subcommands in named.items():
        real = set(getattr(groups[name], "commands", {}))
        assert subcommands <= real, f"planner {name}: {sorted(subcommands - real)} are not its subcommands"
        if real and name not in {"jobs", "plans"}:  # those two list without a subcommand
            assert subcommands == real, f"planner {name}: the cheat sheet leaves out {sorted(real - subcommands)}"
    assert "planner --version" in text and planner("--version").returncode == 0


PODS_AS_COLUMNS = """
import json, sys
items, args = json.load(open(sys.argv[1]))["items"], sys.argv[4:]
names = args[: next(i for i, a in enumerate(args) if a.startswith("-"))]
namespace = args[args.index("-n") + 1]
pods = {(i["metadata"].get("namespace") or "default", i["metadata"]["name"]): i for i in items if i["kind"] == "Pod"}
for name in names:
    pod = pods.get((namespace, name))
    if pod:
        print(name, "  ", pod["metadata"].get("uid", "<none>"), "  ", pod["spec"].get("nodeName") or "<none>")
"""
"""What the fake ``kubectl get pods NAME... -n NS --no-headers -o custom-columns=...`` prints."""


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of the two programs the quick starts call: ``planner`` (this checkout) and ``kubectl``."""
    bin_dir = tmp_path_factory.mktemp("bin")
    scripts = {
        "planner": f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m planner "$@"\n',
        "kubectl": "#!/usr/bin/env bash\n"
        "# Stands in for a cluster: get prints the bundled example List (get pods NAME... -n NS: those pods as the\n"
        "# kubectl script's check asks, name uid node; get podmigrationjob/NAME: Succeeded, as a migration that\n"
        "# finished); anything else is recorded and succeeds.\n"
        'printf "%s\\n" "$*" >> "$KUBECTL_LOG"\n'
        'if [[ "$1" == get && "$2" == podmigrationjob/* ]]; then printf Succeeded; exit 0; fi\n'
        f'if [[ "$1" == get && "$2" == pods ]]; then exec {shlex.quote(sys.executable)} -c {shlex.quote(PODS_AS_COLUMNS)} {shlex.quote(str(EXAMPLE_LIST))} "$@"; fi\n'
        f'if [[ "$1" == get ]]; then exec cat {shlex.quote(str(EXAMPLE_LIST))}; fi\n'
        "cat > /dev/null\n",
    }
    for name, text in scripts.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


def outputs_of(command: str) -> list[str]:
    """The files a command writes: ``--out FILE``, ``> FILE``, and ``solve``'s ``-o FILE``."""
    words = shlex.split(command)
    files = []
    for flag, value in itertools.pairwise(words):
        if flag in ("--out", ">") or (flag == "-o" and value.endswith(".json")):
            files.append(value)
    return [f for f in files if f != "-"]


def check_output_file(path: Path, command: str) -> None:
    """What a user would look at in the file: it parses, and it is the document the command makes."""
    text = path.read_text()
    assert text.strip(), f"{command}: {path.name} is empty"
    if path.suffix == ".json":
        data = json.loads(text)
        if " generate " in f" {command} " or " import " in f" {command} " or command.startswith("kubectl get"):
            assert data.get("nodes") or data.get("kind") == "List", f"{command}: {path.name} is no snapshot or List"
        elif "simulate" in command:
            assert data, f"{command}: {path.name} holds no rows"
        elif "export kubernetes" in command:
            assert data["kind"] == "List" and data["items"], f"{command}: {path.name} is no kubectl List"
        elif "solve spot-schedule" not in command:
            assert data["version"] == 1 and data["kind"] in PLAN_KINDS, f"{command}: {path.name} is no plan"
    elif path.suffix == ".yaml":
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
        assert documents and all(d.get("kind") for d in documents), f"{command}: {path.name} holds no Kubernetes objects"
    elif path.suffix == ".html":
        assert text.lstrip().lower().startswith("<!doctype html>") and "</html>" in text, f"{command}: {path.name} is no HTML page"
    elif path.suffix == ".sh":
        assert text.startswith("#!/usr/bin/env bash"), f"{command}: {path.name} is no script"


def check_command(command: str, result: subprocess.CompletedProcess[str], cwd: Path, kubectl_log: Path) -> None:
    where = f"{command}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
    assert result.returncode == 0, where
    for name in outputs_of(command):
        check_output_file(cwd / name, command)
    words = shlex.split(command)
    if words[:2] == ["planner", "validate"]:
        assert result.stdout.startswith("valid:"), where
    if "--method" in words and words[words.index("--method") + 1] == "compare" and "-o" in words:
        assert "optimal" in result.stdout, f"the exact side proves nothing: {where}"
    if (words[:2] == ["planner", "report"] and "--out" not in words) or "-o" in words and words[words.index("-o") + 1] in ("table", "wide"):
        assert result.stdout.strip(), where
    if command.startswith("DRY_RUN=1 bash"):
        calls = kubectl_log.read_text().splitlines() if kubectl_log.exists() else []
        sent = [c for c in calls if not c.startswith("get ")]
        assert sent and all("--dry-run=server" in c or "dryRun=All" in c for c in sent), f"{where}\nkubectl calls: {calls}"


def run_commands(commands: tuple[str, ...], cwd: Path, tools: Path) -> None:
    (cwd / "instances").symlink_to(REPO / "instances")
    (cwd / "deploy").symlink_to(REPO / "deploy")  # the policy files the operator guide uses
    kubectl_log = cwd.parent / f"{cwd.name}-kubectl.log"
    env = {
        **os.environ,
        "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "KUBECTL_LOG": str(kubectl_log),
        "COLUMNS": "120",
        "POLL_S": "0",  # the kubectl script's pause between status queries
        "TERM": "dumb",
    }
    for name in ("DRY_RUN", "PLANNER_API_TOKEN", "PLANNER_API_TOKEN_FILE", "DATABASE_URL", "RAY_ADDRESS"):
        env.pop(name, None)
    for command in commands:
        result = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
        )
        check_command(command, result, cwd, kubectl_log)


@pytest.mark.parametrize("commands", list(QUICKSTARTS), ids=[" + ".join(b.where for b in v) for v in QUICKSTARTS.values()])
def test_quick_start_block_runs(commands: tuple[str, ...], tools: Path, tmp_path: Path) -> None:
    needs = {b.needs for b in QUICKSTARTS[commands]} - {None}
    missing = [n for n in needs if not (REPO / n).exists()]
    if missing:
        pytest.skip(f"needs {missing[0]} (data outside the repository)")
    run_commands(commands, tmp_path, tools)


def test_the_main_job_runs(tools: Path, tmp_path: Path) -> None:
    """The first set-up command after its install step: ``planner defrag instances/asi-500.json -o table``."""
    (main_job,) = next(b.commands for b in BLOCKS if b.mark == "setup" and b.where.startswith("README.md"))
    assert main_job.startswith(INSTALL)
    run_commands((main_job.removeprefix(INSTALL).replace(".venv/bin/planner", "planner"),), tmp_path, tools)
