"""The ``planner`` command: the typer app, whose commands are the table of ``commands`` (a command's
module is imported when that command runs), and ``main``, the console script's entry point.

One module per command group (``defrag``, ``preempt``, ``allocate``, ``render``, ``report``, ``validate``,
``explain``, ``generate``, ``importing``, ``export``, ``simulate``, ``solve``, ``serve``, ``client``, ``db``); what
they share is in ``common`` (errors, guarded runs, the output writer, input loading, the plan output),
the option choices built from the engine in ``choices``. Imports run one way: this module imports
``commands`` and ``exits`` only (``planner --help`` imports no planner, no solver and no numpy), the
command modules import ``common`` (and the layers below), nothing imports this module back. Exit
codes: see ``exits``.
"""

from __future__ import annotations

import os
import sys

import typer
from typer._click.exceptions import ClickException

from planner.cli.commands import LazyGroup
from planner.cli.exits import EXIT_BAD_INPUT, stand_in_for_closed_stdout

# Help is click's plain text (rich_markup_mode=None here and on every command group): Typer's Rich tables shrink
# the option-name column with the others, which cut 17 of defrag's flags to `--max-moves-per-…` at 80 columns
# (and some still at 100); plain help never cuts a name and wraps the text under it (tests/cli/test_help_at_80_columns.py).
app = typer.Typer(
    cls=LazyGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Plans for shared GPU clusters: defragmentation, make-room, spot preemption and topology allocation, "
    "exact and heuristic; reports, validation, instances, simulations and the planning service.",
)


def _print_version(value: bool) -> None:
    if value:
        from planner.provenance import planner_version  # deferred: the snapshot models (only for --version)

        typer.echo(f"planner {planner_version() or 'unknown (not installed: no package metadata)'}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True, help="Print the planner's version and exit."),
) -> None:
    pass


def main() -> None:
    """Console-script entry point. Output the command line framework writes itself (help, usage)
    to a full or closed standard output is exit 2 with a message, not a traceback. A usage error
    (an unknown option, a bad choice, a missing argument) is one ``error:`` line like every other
    problem the planner reports, with where to find the usage, and exit 2."""
    # numpy's OpenBLAS starts a thread per core at import, 0.05 s of CPU for every command; the planner
    # does no large linear algebra (issue 62). A value the user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
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
