"""The ``planner`` command table: each command's name, where it is defined and its one-line help,
with the command group that imports a command's module only when that command runs (or its own
``--help`` is asked for).

Why: importing every command module to register it cost every call 0.6-0.8 s of CPU before any work
(the engine, the solvers, the service, the renderers; issue 62). ``planner --help`` is built from this
table alone; ``tests/cli/test_lazy_commands.py`` holds each one-line help equal to the command's own
(its docstring or its group's ``help``) and checks that ``planner --help`` imports no planner.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import typer
import typer.main
from typer._click import Command, Context, HelpFormatter
from typer._click.utils import make_default_short_help
from typer.core import TyperGroup
from typer.models import CommandInfo, TyperInfo


@dataclass(frozen=True)
class Entry:
    """One command of ``planner``: a function (``group`` False) or a typer app of subcommands."""

    module: str
    """The module under ``planner.cli`` that defines it."""
    attribute: str
    """The command's function, or the command group's ``typer.Typer``."""
    summary: str
    """The first sentence of its help, as ``planner --help`` shows it."""
    group: bool = False


# the order of `planner --help`: the commands, then the command groups
COMMANDS: dict[str, Entry] = {
    "report": Entry("report", "report", "Fragmentation report: empty nodes, slack, GFR, GAR, stranded GPUs, FGD, per-ASW free capacity."),
    "validate": Entry("validate", "validate_command", "Replay a plan wave by wave (make-before-break) and list every violation; exit 1 if any."),
    "defrag": Entry(
        "defrag",
        "defrag",
        "Plan a defragmentation: migration waves that vacate as many nodes as possible (with --make-room: the moves that let named pending jobs start, and where they start).",
    ),
    "serve": Entry("serve", "serve", "Run the planning service (REST API, background solve jobs, plan store)."),
    "allocate": Entry("allocate", "allocate", "Place pending jobs on as few access switches as possible: one job at a time or jointly."),
    "preempt": Entry("preempt", "preempt", "Plan a preemption: where a pending job starts and which spot pods to evict, at the least lost work."),
    "render": Entry(
        "render",
        "render",
        "Render a plan written earlier: a table, JSON or YAML, a kubectl script, PodMigrationJobs (one file per wave with --out-dir) or a page, against the snapshot it was planned from.",
    ),
    "explain": Entry("explain", "explain", "Why a pending job or pod waits, and what would start it; or why a plan left a node busy."),
    "apply": Entry(
        "apply",
        "apply_command",
        "Carry out a defrag plan on a live cluster, wave by wave: bare pods copied to their target then evicted (make-before-break), pods of controllers evicted and their replacements steered to the target, PDB refusals retried until the wave's deadline; progress recorded in a ConfigMap so --resume evicts nothing twice.",
    ),
    "submit": Entry(
        "submit",
        "submit_app",
        "Submit a planning job to a running service (for cron), with the options of the local command; with --wait, fetch the plan and check it.",
        group=True,
    ),
    "generate": Entry("generate", "generate_app", "Generate a snapshot (seeded synthetic or trace replay).", group=True),
    "jobs": Entry("client", "jobs_app", "Jobs of a running service (`planner jobs` lists them): get, cancel, delete.", group=True),
    "plans": Entry("client", "plans_app", "Stored plans of a running service (`planner plans` lists them): get, delete.", group=True),
    "db": Entry("db", "db_app", "The job store's schema (Alembic migrations in planner/service/migrations).", group=True),
    "export": Entry("export", "export_app", "Write a snapshot as the input of a real system.", group=True),
    "import": Entry("importing", "import_app", "Import a snapshot from a real trace.", group=True),
    "solve": Entry("solve", "solve_app", "Exact solves of whole problems (offline oracles for the heuristics).", group=True),
    "simulate": Entry("simulate", "simulate_app", "Replay a workload over time under each policy (simulation).", group=True),
    "controlplane": Entry("controlplane", "controlplane_app", "A throwaway Kubernetes control plane on this machine (127.0.0.1 only).", group=True),
}


def load(name: str, entry: Entry, rich_markup_mode: Any, pretty_exceptions_short: bool = True) -> Command:
    """The click command of ``entry``, built as ``app.command()`` / ``app.add_typer`` would have built it."""
    target = getattr(importlib.import_module(f"planner.cli.{entry.module}"), entry.attribute)
    if entry.group:
        return typer.main.get_group_from_info(
            TyperInfo(target, name=name), pretty_exceptions_short=pretty_exceptions_short, suggest_commands=True, rich_markup_mode=rich_markup_mode
        )
    return typer.main.get_command_from_info(
        CommandInfo(name=name, callback=target), pretty_exceptions_short=pretty_exceptions_short, rich_markup_mode=rich_markup_mode
    )


class LazyCommands(MutableMapping[str, Command]):
    """The root group's ``commands``: every name of ``COMMANDS`` in order, a command's module imported
    when its command is first looked up (click and the tests read ``group.commands`` as a mapping)."""

    def __init__(self, rich_markup_mode: Any) -> None:
        self.rich_markup_mode = rich_markup_mode
        self.loaded: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self.loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self.loaded[name] = load(name, COMMANDS[name], self.rich_markup_mode)
        return self.loaded[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("the planner's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self.loaded if name not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS) + sum(1 for name in self.loaded if name not in COMMANDS)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self.loaded


class LazyGroup(TyperGroup):
    """The root ``planner`` group: commands from ``COMMANDS``, imported on first use; its help lists
    them from the table's summaries without importing any."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(self.rich_markup_mode)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """As ``TyperGroup.format_commands`` (the same rows, the same shortening), from the table."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, make_default_short_help(entry.summary, limit)) for name, entry in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
