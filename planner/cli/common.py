"""What the ``planner`` commands share: exit codes and errors, guarded runs, consoles and the output
writer, the input a planning command reads (``--from``), how it prints its plan (``-o``), and its
options model built from the flags given.

Exit codes: 0 success; 1 ``validate`` found violations; 2 bad input (unreadable or inconsistent
snapshot or plan, bad option); 3 internal error (a bug: please report it). Bad input never prints a
traceback; set PLANNER_DEBUG=1 to see one for an internal error.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any, NoReturn, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console

from planner.bounded_input import capped
from planner.cli.exits import CLOSED_STDOUT, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_VIOLATIONS, ClosedStdout
from planner.cli.inputs import read_snapshot
from planner.cluster import SnapshotError
from planner.engine.common import PlanOptionError
from planner.plans import DefragPlan, dump_plan
from planner.runtime.ray_executor import ExecutorError
from planner.snapshot import read_text
from planner.textsafe import printable, safe_console_class

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=BaseModel)


def plain_console(**options: Any) -> Console:
    """A console that prints text as given: no markup, highlighting or emoji codes (``:x:`` in a
    message or a name stays ``:x:``), and control characters from the input escaped (``textsafe``)."""
    return safe_console_class()(markup=False, highlight=False, emoji=False, **options)


err_console = plain_console(stderr=True)


@contextlib.contextmanager
def stdout_console() -> Iterator[Console]:
    """A console for human output: names from the input are shown as written, never read as markup
    (an asw named '[/]' is text), and the output goes out through ``emit`` (an unwritable stdout is
    exit 2, not a traceback)."""
    buffer = io.StringIO()
    width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120
    yield plain_console(file=buffer, width=width, force_terminal=sys.stdout.isatty())
    emit(buffer.getvalue(), "-")


@contextlib.contextmanager
def working(what: str) -> Iterator[None]:
    """A spinner on stderr saying ``what`` is being done, when stderr is a terminal (nothing in logs)."""
    if err_console.is_terminal:
        with err_console.status(what):
            yield
    else:
        yield


def wrote(out: str, what: str) -> None:
    """After a file was written with ``--out``: one line on stderr saying what went where (so a long
    run does not end silently); nothing when the output went to standard output."""
    if out != "-":
        err_console.print(f"wrote {what} to {out}", markup=False, highlight=False, soft_wrap=True)


def fail(problems: list[str], code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``problems`` (capped: at most ``MAX_LISTED``, each cut to ``MAX_PROBLEM_CHARS``) and exit ``code``."""
    for problem in capped(problems):
        err_console.print(f"error: {problem}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def guarded(command: F) -> F:
    """Turn bad input into exit 2 with messages and a bug into exit 3, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except SnapshotError as err:
            fail(err.problems)
        except PlanOptionError as err:
            fail([cli_message(err)])
        except ExecutorError as err:
            fail([str(err)])
        except BrokenPipeError:
            raise typer.Exit(0) from None
        except MemoryError:
            fail(
                [("out of memory: the instance is too large for this method on this machine; use --method hybrid or heuristic, or plan a part of the cluster")]
            )
        except Exception as err:
            if os.environ.get("PLANNER_DEBUG"):
                raise
            fail([f"internal error ({type(err).__name__}: {err}); rerun with PLANNER_DEBUG=1 and report it"], EXIT_INTERNAL)

    return wrapper  # type: ignore[return-value]  # functools.wraps gives the wrapper the command's signature


# ----------------------------------------------------------------------------------------------
# standard output and --out
# ----------------------------------------------------------------------------------------------


def check_stdout(needed: bool) -> None:
    """Before the work: refuse (exit 2) when its result would go to a closed standard output, rather
    than plan or simulate for minutes and then fail to write it."""
    if needed and isinstance(sys.stdout, ClosedStdout):
        fail([f"standard output: cannot write: {CLOSED_STDOUT}; refused before starting"])


def check_plan_output(output: Any, out: str | None) -> None:
    """``check_stdout`` for a planning command (see ``emit_plan`` for where a plan goes)."""
    check_stdout(out == "-" or output is not None or out is None)


def summary_to_stdout(out: str | None) -> bool:
    """Whether a command that writes its results to ``--out`` prints its summary table: not when the
    results go to standard output as JSON (``--out -``), nor when standard output is closed and the
    results are in ``--out``'s file."""
    return out != "-" and not isinstance(sys.stdout, ClosedStdout)


def emit(text: str, out: str, flag: str = "--out") -> None:
    """Write ``text`` to the file ``out`` ('-': standard output); an unwritable destination (a
    directory, a missing directory, a full disk, a read-only file) is bad input: exit 2."""
    try:
        if out == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            from planner.cli.outdir import open_out_file  # deferred: the renderers it names, only for --out

            with open_out_file(out, flag) as f:  # never through a symbolic link to a file (outdir.py)
                f.write(text)
    except BrokenPipeError:
        raise
    except OSError as err:
        reason = err.strerror or str(err)
        problem = f"standard output: cannot write: {reason}" if out == "-" else f"{flag}: cannot write '{out}': {reason}"
        raise SnapshotError([problem]) from None


def write_json(data: Any, out: str) -> None:
    emit(json.dumps(data, indent=2) + "\n", out)


def print_warnings(warnings: list[str]) -> None:
    """An import's warnings on stderr, the first ``MAX_LISTED`` and a line counting the rest (a List can
    warn once per object)."""
    for warning in capped(list(warnings)):
        err_console.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)


def report_violations(violations: list[Any], valid_line: str) -> None:
    """``planner validate``'s output for any plan kind: one violation per line (the first ``MAX_LISTED``,
    then a line counting the rest) and exit 1, or the valid line."""
    if violations:
        emit("".join(f"{printable(violation)}\n" for violation in capped([str(v) for v in violations])), "-")
        err_console.print(f"{len(violations)} violation(s)", markup=False)
        raise typer.Exit(EXIT_VIOLATIONS)
    emit(valid_line + "\n", "-")


# ----------------------------------------------------------------------------------------------
# the input: --from, --import-config
# ----------------------------------------------------------------------------------------------


class InputKind(str, Enum):
    snapshot = "snapshot"
    kubernetes = "kubernetes"


def input_option() -> Any:
    """``--from``: what the SNAPSHOT argument holds."""
    return typer.Option(
        InputKind.snapshot,
        "--from",
        help="snapshot: a planner snapshot (JSON); kubernetes: kubectl get nodes,pods,pdb -A -o json output, imported on the fly "
        "(as planner import kubernetes; warnings on stderr).",
    )


def import_config_option() -> Any:
    return typer.Option(None, "--import-config", help="With --from kubernetes: the import configuration (YAML; planner import kubernetes --print-config).")


def load_input(snapshot: str, kind: InputKind, import_config: str | None) -> Any:
    """The cluster in ``snapshot``: a snapshot file, or kubectl output imported on the fly."""
    if kind == InputKind.snapshot:
        if import_config is not None:
            fail(["--import-config: applies with --from kubernetes"])
        return read_snapshot(snapshot)
    # deferred: the importer (~35 ms at start-up), only with --from kubernetes
    from planner.adapters.kubernetes import import_kubernetes
    from planner.adapters.kubernetes_config import load_config

    settings = load_config(read_text(import_config, "--import-config") if import_config else None, import_config or "config")
    imported = import_kubernetes([(read_text(snapshot, "SNAPSHOT"), "stdin" if snapshot == "-" else snapshot)], settings)
    print_warnings(imported.warnings)
    return imported.cluster


# ----------------------------------------------------------------------------------------------
# the plan: -o, --out
# ----------------------------------------------------------------------------------------------


class OutputFormat(str, Enum):
    json = "json"
    yaml = "yaml"
    table = "table"
    wide = "wide"
    kubectl = "kubectl"
    podmigrationjob = "podmigrationjob"
    html = "html"


OUTPUT_HELP = (
    "json or yaml: the plan; table: a human summary (the default on a terminal); wide: the summary and every "
    "move; kubectl: a bash script applying the plan (a defrag plan wave by wave, checking its pods first); podmigrationjob: koordinator "
    "objects, to apply wave by wave as their header says (--out-dir: one file per wave); "
    "html: a self-contained page of the plan (charts and tables, opens offline)."
)


def output_option() -> Any:
    """``-o``/``--output`` (``--format`` is the older name): how a planning command prints its plan."""
    return typer.Option(None, "--output", "-o", "--format", help=OUTPUT_HELP)


def out_dir_option() -> Any:
    return typer.Option(
        None, "--out-dir", help="With -o podmigrationjob: one YAML file per wave in this directory, and index.txt (the order and how to apply)."
    )


def emit_plan(plan: Any, cluster: Any, output: OutputFormat | None, out: str | None, out_dir: str | None = None, force: bool | None = None) -> None:
    """Print ``plan`` as asked (``--out`` always gets the JSON plan). With no ``-o``: a table on a
    terminal (also when the plan went to ``--out``), JSON otherwise (pipes and files get the machine
    format, never truncated). ``out_dir``: the PodMigrationJobs one file per wave instead (``force``:
    into a directory that is not empty). The renderers are imported here, by the commands that print
    a plan (``planner validate`` and ``--help`` do not pay for them)."""
    from planner.cli.outdir import check_out_dir, write_wave_files  # deferred: the renderers (not for --help, validate)
    from planner.render.formats import refusals, render_text  # deferred: the renderers (not for --help, validate)
    from planner.render.kubernetes import pod_migration_jobs, wide_table  # deferred: the renderers (not for --help, validate)
    from planner.render.plan import render_summary  # deferred: the renderers (not for --help, validate)

    if out is not None:
        emit(dump_plan(plan) + "\n", out)
    if output is None and out_dir is not None:
        output = OutputFormat.podmigrationjob
    if output is None:
        if out is not None and not (out != "-" and sys.stdout.isatty()):
            return  # the plan went to --out; a terminal still gets the summary table below
        output = OutputFormat.table if sys.stdout.isatty() else OutputFormat.json
    check_out_dir(output.value, out_dir, force)
    problems = refusals(plan, cluster, output.value, f"-o {output.value}")
    if problems:
        fail(problems)
    if out_dir is not None:
        written = write_wave_files(pod_migration_jobs(plan, cluster), out_dir, force)
        err_console.print(f"wrote {', '.join(written)} to {out_dir}", markup=False, soft_wrap=True)
    elif output in (OutputFormat.table, OutputFormat.wide):
        with stdout_console() as console:
            render_summary(console, plan, wide=output == OutputFormat.wide)
        if output == OutputFormat.wide and isinstance(plan, DefragPlan):
            emit(wide_table(plan, cluster), "-")
    elif output == OutputFormat.html:
        from planner.render.view import plan_view_html  # deferred: the view's modules, only with -o html

        emit(plan_view_html(plan, cluster), "-")
    else:
        emit(render_text(plan, cluster, output.value), "-")


# ----------------------------------------------------------------------------------------------
# options models from flags
# ----------------------------------------------------------------------------------------------


CLI_FLAGS = {
    "time_limit_s": "time_limit",
    "now_s": "now",
    "only_namespaces": "only_namespace",
    "exclude_namespaces": "exclude_namespace",
    "room_level": "level",
}
"""Options whose command-line flag is not the option's name (the engine names options by field)."""


def flag(field: str) -> str:
    """The command-line flag of an options field (``time_limit_s`` -> ``--time-limit``)."""
    return "--" + CLI_FLAGS.get(field, field).replace("_", "-")


def cli_message(err: PlanOptionError) -> str:
    """``err`` with its options named as command-line flags (``--method hybrid``)."""
    return err.render(lambda name, value: flag(name) + (f" {value}" if value else ""))


def options_of_flags(model: type[M], given: dict[str, Any]) -> M:
    """``model(**given)``; errors name the flag, exit 2."""
    try:
        return model(**given)
    except ValidationError as err:
        fail([f"{flag('.'.join(map(str, e['loc'])))}: {e['msg'].removeprefix('Value error, ')}" for e in err.errors()])


def given_flags(context: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    """The options of ``values`` (by field) that were given on the command line, not defaulted."""

    def given_here(field: str) -> bool:
        source = context.get_parameter_source(CLI_FLAGS.get(field, field))
        return source is not None and source.name != "DEFAULT"

    return {field: value for field, value in values.items() if given_here(field)}


def given_options(context: typer.Context, model: type[M], values: dict[str, Any]) -> M:
    """``model`` built from the options given on the command line only (defaults stay unset, so a
    method can refuse an option it would ignore); errors name the flag, exit 2."""
    return options_of_flags(model, {"method": values["method"], **given_flags(context, values)})


def policy_option() -> Any:
    """``--policy FILE``: a policy document of the command's kind; flags override its values."""
    return typer.Option(
        None,
        "--policy",
        help="FILE: a policy document (YAML or JSON; apiVersion planner.io/v1, kind DefragPolicy, PreemptPolicy or AllocatePolicy) "
        "with this command's options; flags given override it, and the plan's report.provenance.option_sources says where each value came from.",
    )


def read_policy(path: str) -> Any:
    """The document in the policy file ``path`` (- for stdin), exit 2 naming it when unreadable."""
    from planner.policy import PolicyError, parse_policy_text  # deferred: PyYAML (~10 ms at start-up), only with --policy

    try:
        return parse_policy_text(read_text(path, "--policy"), f"--policy {path}")
    except PolicyError as err:
        fail(err.problems)


def options_with_policy(
    context: typer.Context, model: type, kind: str, values: dict[str, Any], policy: str | None, document: Any = None
) -> tuple[Any, dict[str, str] | None]:
    """The kind's options model from the flags given and the ``--policy`` file (flags win; its
    ``document`` when already read), and the source of each value (None without a policy: every
    value is then a flag's or the default); errors name the flag or the policy file's field path, exit 2."""
    if policy is None:
        return given_options(context, model, values), None
    from planner.policy import Layer, PolicyError, policy_layer, resolve  # deferred: PyYAML, only with --policy

    document = read_policy(policy) if document is None else document
    try:
        layers = [Layer("given", given_flags(context, values), flag), policy_layer(document, kind, "policy", f"--policy {policy}: ")]
        options, sources = resolve(model, layers)
        return options, dict(sources)
    except PolicyError as err:
        fail(err.problems)
    raise AssertionError("unreachable")


def names(value: str | None) -> list[str] | None:
    """A comma-separated list of names (None when not given)."""
    return None if value is None else [name.strip() for name in value.split(",") if name.strip()]


def count_or_share(value: str | None) -> int | str | None:
    """'10%' stays a share; '50' becomes the count 50 (anything else is left for the options to refuse)."""
    if value is None or value.strip().endswith("%"):
        return value
    try:
        return int(value)
    except ValueError:
        return value
