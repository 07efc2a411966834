"""The ``planner`` command: the typer app with every command registered, and ``main``, the console
script's entry point.

One module per command group (``defrag``, ``preempt``, ``allocate``, ``render``, ``report``, ``validate``,
``explain``, ``generate``, ``importing``, ``export``, ``simulate``, ``solve``, ``serve``, ``client``, ``db``); what
they share is in ``common`` (errors, exit codes, guarded runs, the output writer, input loading, the
plan output), the option choices built from the engine in ``choices``. Imports run one way: this
module imports the command modules, they import ``common`` (and the layers below), nothing imports
this module back. Exit codes: see ``common``.
"""

from __future__ import annotations

import os
import sys

import typer
from typer._click.exceptions import ClickException

from planner.cli import allocate, client, db, defrag, explain, export, generate, importing, preempt, render, report, serve, simulate, solve, submit, validate
from planner.cli import apply as apply_commands
from planner.cli import controlplane as controlplane_commands
from planner.cli import verify as verify_commands
from planner.cli.common import EXIT_BAD_INPUT, stand_in_for_closed_stdout
from planner.provenance import planner_version

# Help is click's plain text (rich_markup_mode=None here and on every command group): Typer's Rich tables shrink
# the option-name column with the others, which cut 17 of defrag's flags to `--max-moves-per-…` at 80 columns
# (and some still at 100); plain help never cuts a name and wraps the text under it (tests/cli/test_help_at_80_columns.py).
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Plans for shared GPU clusters: defragmentation, make-room, spot preemption and topology allocation, "
    "exact and heuristic; reports, validation, instances, simulations and the planning service.",
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"planner {planner_version() or 'unknown (not installed: no package metadata)'}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True, help="Print the planner's version and exit."),
) -> None:
    pass


# the order of `planner --help`: the commands, then the command groups
app.command()(report.report)
app.command("validate")(validate.validate_command)
app.command()(defrag.defrag)
app.command()(serve.serve)
app.command()(allocate.allocate)
app.command()(preempt.preempt)
app.command()(render.render)
app.command()(explain.explain)
app.command("apply")(apply_commands.apply_command)
app.command("verify")(verify_commands.verify_command)
app.add_typer(submit.submit_app, name="submit")
app.add_typer(generate.generate_app, name="generate")
app.add_typer(client.jobs_app, name="jobs")
app.add_typer(client.plans_app, name="plans")
app.add_typer(db.db_app, name="db")
app.add_typer(export.export_app, name="export")
app.add_typer(importing.import_app, name="import")
app.add_typer(solve.solve_app, name="solve")
app.add_typer(simulate.simulate_app, name="simulate")
app.add_typer(controlplane_commands.controlplane_app, name="controlplane")


def main() -> None:
    """Console-script entry point. Output the command line framework writes itself (help, usage)
    to a full or closed standard output is exit 2 with a message, not a traceback. A usage error
    (an unknown option, a bad choice, a missing argument) is one ``error:`` line like every other
    problem the planner reports, with where to find the usage, and exit 2."""
    if len(sys.argv) == 1:
        sys.argv.append("--help")  # no command: the help, as asked for (exit 0)
    stand_in_for_closed_stdout()
    code = 0
    try:
        returned = app(standalone_mode=False)  # the framework returns (or raises) instead of exiting
        code = returned if isinstance(returned, int) else 0  # an Exit's code; no command returns a value
    except ClickException as err:
        ctx = getattr(err, "ctx", None)  # a UsageError's; other ClickExceptions have none
        command = ctx.command_path if ctx is not None else "planner"
        message = err.format_message().replace("Value error, ", "")  # pydantic's prefix on a choice the engine refused
        sys.stderr.write(f"error: {message} (usage: {command} --help)\n")
        code = err.exit_code
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        code = 1
    except OSError as err:
        _unwritable_stdout(err)
    _flush_stdout()
    sys.exit(code)


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    except OSError as err:
        _unwritable_stdout(err)


def _unwritable_stdout(err: OSError) -> None:
    try:
        sys.stderr.write(f"error: standard output: cannot write: {err.strerror or err}\n")
    finally:
        os._exit(EXIT_BAD_INPUT)  # the buffered output cannot be written: do not try again at exit
