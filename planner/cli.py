"""The ``planner`` command.

Exit codes: 0 success; 1 ``validate`` found violations; 2 bad input (unreadable or inconsistent
snapshot or plan, bad option); 3 internal error (a bug: please report it). Bad input never prints a
traceback; set PLANNER_DEBUG=1 to see one for an internal error.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import json
import os
import sys
from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from planner.cli_inputs import read_plan, read_snapshot
from planner.cluster import SnapshotError
from planner.engine import PlanOptionError
from planner.runtime.gc_pause import collector_paused
from planner.runtime.ray_executor import ExecutorError
from planner.textsafe import printable, safe_console_class
from planner.plans import DefragComparison

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Plans for shared GPU clusters: defragmentation, make-room, spot preemption and topology allocation, "
    "exact and heuristic; reports, validation, instances, simulations and the planning service.",
)


def _print_version(value: bool) -> None:
    if value:
        from planner.provenance import planner_version

        typer.echo(f"planner {planner_version() or 'unknown (not installed: no package metadata)'}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the planner's version and exit."
    ),
) -> None:
    pass


generate_app = typer.Typer(no_args_is_help=True, help="Generate a snapshot (seeded synthetic or trace replay).")
app.add_typer(generate_app, name="generate")

EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3

def plain_console(**options: Any) -> Console:
    """A console that prints text as given: no markup, highlighting or emoji codes (``:x:`` in a
    message or a name stays ``:x:``), and control characters from the input escaped (``textsafe``)."""
    return safe_console_class()(markup=False, highlight=False, emoji=False, **options)


err_console = plain_console(stderr=True)


@contextlib.contextmanager
def _stdout_console():  # type: ignore[no-untyped-def]
    """A console for human output: names from the input are shown as written, never read as markup
    (an asw named '[/]' is text), and the output goes out through ``_emit`` (an unwritable stdout is
    exit 2, not a traceback)."""
    import io
    import shutil

    buffer = io.StringIO()
    width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120
    yield plain_console(file=buffer, width=width, force_terminal=sys.stdout.isatty())
    _emit(buffer.getvalue(), "-")
F = TypeVar("F", bound=Callable[..., Any])


def fail(problems: list[str], code: int = EXIT_BAD_INPUT) -> None:
    for problem in problems:
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
        except (PlanOptionError, ExecutorError) as err:
            fail([str(err)])
        except BrokenPipeError:
            raise typer.Exit(0) from None
        except MemoryError:
            fail(["out of memory: the instance is too large for this method on this machine; "
                  "use --method hybrid or heuristic, or plan a part of the cluster"])
        except Exception as err:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("PLANNER_DEBUG"):
                raise
            fail([f"internal error ({type(err).__name__}: {err}); rerun with PLANNER_DEBUG=1 and report it"], EXIT_INTERNAL)

    return wrapper  # type: ignore[return-value]


CLOSED_STDOUT = "it is closed (the command was started with >&-); redirect it to a file or /dev/null, or give --out FILE"


class ClosedStdout(io.TextIOBase):
    """Stands in for a standard output that was closed when the command started (``>&-``: Python then
    has ``sys.stdout = None``, and every print was an AttributeError): writing to it is an OSError
    with the reason, which ``_emit`` and ``main`` turn into exit 2 with a message."""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, CLOSED_STDOUT)

    def flush(self) -> None:
        pass


def stand_in_for_closed_stdout() -> None:
    """When file descriptor 1 was closed at start: hold it with /dev/null (a file the command opens
    later must not become descriptor 1, where a library or a child process could write into it) and
    put a ``ClosedStdout`` in ``sys.stdout``."""
    if sys.stdout is not None:
        return
    try:
        os.fstat(1)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    sys.stdout = ClosedStdout()


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


def _emit(text: str, out: str, flag: str = "--out") -> None:
    """Write ``text`` to the file ``out`` ('-': standard output); an unwritable destination (a
    directory, a missing directory, a full disk, a read-only file) is bad input: exit 2."""
    try:
        if out == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            with open(out, "w", encoding="utf-8") as f:
                f.write(text)
    except BrokenPipeError:
        raise
    except OSError as err:
        reason = err.strerror or str(err)
        problem = f"standard output: cannot write: {reason}" if out == "-" else f"{flag}: cannot write '{out}': {reason}"
        raise SnapshotError([problem]) from None


def report_violations(violations: list[Any], valid_line: str) -> None:
    """``planner validate``'s output for any plan kind: one violation per line and exit 1, or the
    valid line."""
    if violations:
        _emit("".join(f"{printable(violation)}\n" for violation in violations), "-")
        err_console.print(f"{len(violations)} violation(s)", markup=False)
        raise typer.Exit(EXIT_VIOLATIONS)
    _emit(valid_line + "\n", "-")


def _write_json(data: Any, out: str) -> None:
    _emit(json.dumps(data, indent=2) + "\n", out)


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------


class InputKind(str, Enum):
    snapshot = "snapshot"
    kubernetes = "kubernetes"


def input_option() -> Any:
    """``--from``: what the SNAPSHOT argument holds."""
    return typer.Option(
        InputKind.snapshot, "--from",
        help="snapshot: a planner snapshot (JSON); kubernetes: kubectl get nodes,pods,pdb -A -o json output, imported on the fly "
        "(as planner import kubernetes; warnings on stderr).",
    )


def import_config_option() -> Any:
    return typer.Option(None, "--import-config", help="With --from kubernetes: the import configuration (YAML; planner import kubernetes --print-config).")


def load_input(snapshot: str, kind: InputKind, import_config: str | None) -> Any:
    """The cluster in ``snapshot``: a snapshot file, or kubectl output imported on the fly."""
    from planner.snapshot import read_text

    if kind == InputKind.snapshot:
        if import_config is not None:
            fail(["--import-config: applies with --from kubernetes"])
        return read_snapshot(snapshot)
    from planner.adapters.kubernetes import import_kubernetes
    from planner.adapters.kubernetes_config import load_config

    settings = load_config(read_text(import_config, "--import-config") if import_config else None, import_config or "config")
    imported = import_kubernetes([(read_text(snapshot, "SNAPSHOT"), "stdin" if snapshot == "-" else snapshot)], settings)
    for warning in imported.warnings:
        err_console.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    return imported.cluster



@app.command()
@guarded
def report(
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
    shape: str = typer.Option(
        None, "--shape", help="Request shape for stranded-GPU analysis, e.g. 8g64c (GPUs, CPUs, optional GiB: 8g64c512m)."
    ),
    requests: str = typer.Option(
        None, "--requests", help="Large-job capacity (ASI Fig. 14) for these shapes, e.g. 128g1536c,256g3072c."
    ),
    plan: str = typer.Option(None, "--plan", help="With --requests: also the capacity after this defrag, preempt or allocate plan."),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Fragmentation report: empty nodes, slack, GFR, GAR, stranded GPUs, FGD, per-ASW free capacity."""
    from planner import metrics

    request = None
    if shape is not None:
        try:
            request = metrics.parse_shape(shape)
        except ValueError as err:
            fail([f"--shape: {err}"])
    large = []
    for text in (requests.split(",") if requests is not None else []):
        try:
            large.append(metrics.parse_shape(text))
        except ValueError as err:
            fail([f"--requests: {err}"])
    if plan is not None and not large:
        fail(["--plan: give --requests too (the plan's effect is shown on the large-job capacity)"])
    cluster = load_input(snapshot, source, import_config)
    result = metrics.report(cluster, request)
    if large:
        from planner.capacity import after_plan, large_job_capacity

        result["large_jobs"] = large_job_capacity(cluster, large)
        if plan is not None:
            result["large_jobs_after_plan"] = large_job_capacity(after_plan(cluster, read_plan(plan)), large)
    if as_json:
        _write_json(result, "-")
    else:
        _print_report(result, snapshot)


def _print_report(result: dict[str, Any], source: str) -> None:
    with _stdout_console() as console:
        _render_report(console, result, source)


def _render_report(console: Console, result: dict[str, Any], source: str) -> None:
    summary = result["summary"]
    models = summary["by_model"]
    table = Table(title=f"Fragmentation report: {source} (time {result['time_s']:g} s)")
    table.add_column("measure")
    table.add_column("cluster", justify="right")
    for model in models:
        table.add_column(model, justify="right")
    rows = [
        ("nodes", "nodes"),
        ("GPUs", "gpus"),
        ("allocated GPUs", "allocated_gpus"),
        ("GAR (allocated / GPUs)", "gar"),
        ("empty nodes", "empty_nodes"),
        ("full nodes", "full_nodes"),
        ("nodes with slack", "nodes_with_slack"),
        ("GFR (neither empty nor full)", "gfr"),
        ("pods", "pods"),
    ]
    for label, key in rows:
        table.add_row(label, _fmt(summary[key]), *(_fmt(m[key]) for m in models.values()))
    fgd = result["fgd"]
    table.add_row(
        "FGD fragmented GPUs",
        _fmt(fgd["fragmented_gpus"]),
        *(_fmt(fgd["by_model"].get(k, {}).get("fragmented_gpus", "")) for k in models),
    )
    console.print(table)
    console.print(f"pending pods: {summary['pending_pods']} ({_fmt(summary['pending_gpus'])} GPUs)")
    if "stranded" in result:
        _print_stranded(console, result["stranded"])
    for key, title in (("large_jobs", "Large-job capacity (requests that fit)"), ("large_jobs_after_plan", "... after the plan")):
        if key not in result:
            continue
        table = Table(title=title)
        for column in ("request", "gpu model", "usable GPUs", "across switches", "within one switch"):
            table.add_column(column, justify="left" if column in ("request", "gpu model") else "right")
        for item in result[key]:
            for model, row in item["per_model"].items():
                table.add_row(item["shape"], model, str(row["usable_gpus"]), str(row["across_asw"]), str(row["within_asw"]))
            table.add_row(item["shape"], "(any model)", "", str(item["heterogeneous_across_asw"]), "")
        console.print(table)
    rows_asw = result["per_asw"]
    asw = Table(title="Per access switch (most free whole nodes first)")
    for column in ("asw", "gpu model", "nodes", "GPUs", "free GPUs", "free whole nodes"):
        asw.add_column(column, justify="left" if column in ("asw", "gpu model") else "right")
    ranked = sorted(rows_asw, key=lambda r: (-r["free_whole_nodes"], -r["free_gpus"], r["asw"]))
    for row in ranked[:15]:
        asw.add_row(row["asw"], row["gpu_model"], *(str(row[k]) for k in ("nodes", "gpus", "free_gpus", "free_whole_nodes")))
    console.print(asw)
    if len(ranked) > 15:
        console.print(f"... and {len(ranked) - 15} more access switches (use --json for all)")


def _print_stranded(console: Console, stranded: dict[str, Any]) -> None:
    table = Table(title=f"Requests of shape {stranded['shape']}" + (" (multi-node, within one ASW)" if stranded["multi_node"] else ""))
    table.add_column("")
    table.add_column("cluster", justify="right")
    by_model = stranded["by_model"]
    for model in by_model:
        table.add_column(model, justify="right")
    table.add_row("requests that fit", str(stranded["requests_fit"]), *(str(m["requests_fit"]) for m in by_model.values()))
    table.add_row("idle GPUs", _fmt(stranded["idle_gpus"]), *(_fmt(m["idle_gpus"]) for m in by_model.values()))
    table.add_row("  usable by the requests", str(stranded["gpus_usable"]), *(str(m["gpus_usable"]) for m in by_model.values()))
    for cause, value in stranded["stranded_by_cause"].items():
        table.add_row(
            f"  stranded: {cause.replace('_', ' ')}",
            _fmt(value),
            *(_fmt(m["stranded_by_cause"][cause]) for m in by_model.values()),
        )
    console.print(table)


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1 and value != 0 else f"{value:,.6g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


# ----------------------------------------------------------------------------------------------
# validate
# ----------------------------------------------------------------------------------------------


@app.command("validate")
@guarded
def validate_command(
    snapshot: str = typer.Argument(..., help="Snapshot JSON file (- for stdin)."),
    plan: str = typer.Argument(..., help="Plan JSON file (- for stdin)."),
    max_moves: int = typer.Option(None, "--max-moves", min=0, help="Also check the plan has at most this many moves."),
    max_moves_per_node: int = typer.Option(None, "--max-moves-per-node", min=0, help="Also check the moves touching each node."),
    same_asw: bool = typer.Option(False, "--same-asw", help="Also check that no move leaves its access switch."),
    max_moves_per_wave: int = typer.Option(None, "--max-moves-per-wave", min=1, help="Also check the moves of each wave."),
    max_nodes_per_wave: str = typer.Option(None, "--max-nodes-per-wave", help="N or P%: also check the nodes each wave touches."),
    max_moves_per_node_per_wave: int = typer.Option(None, "--max-moves-per-node-per-wave", min=1, help="Also check each node's moves per wave."),
    max_unavailable_per_job: int = typer.Option(None, "--max-unavailable-per-job", min=0, help="Also check each job's pods moving per wave."),
    max_moves_per_namespace: int = typer.Option(
        None, "--max-moves-per-namespace", min=1, help="Also check each namespace's moves per wave (pods without a namespace are in 'default')."
    ),
    only_namespace: str = typer.Option(None, "--only-namespace", help="NS[,NS...]: also check only these namespaces' pods move."),
    exclude_namespace: str = typer.Option(None, "--exclude-namespace", help="NS[,NS...]: also check these namespaces' pods stay."),
    move_once: bool = typer.Option(False, "--move-once", help="Also check that no pod moves twice."),
) -> None:
    """Replay a plan wave by wave (make-before-break) and list every violation; exit 1 if any.

    With --max-moves, --max-moves-per-node, --same-asw or a per-wave limit it also checks the limits the
    plan was asked for.
    """
    from planner.engine.defrag import DefragOptions
    from planner.validate import validate

    if snapshot == "-" and plan == "-":
        fail(["only one of SNAPSHOT and PLAN can be read from stdin (-)"])
    cluster = read_snapshot(snapshot, from_option=False)
    parsed = read_plan(plan)
    given_limits = {"max_moves": max_moves, "max_moves_per_node": max_moves_per_node, "same_asw": same_asw,
                    "max_moves_per_wave": max_moves_per_wave, "max_nodes_per_wave": _count_or_share(max_nodes_per_wave),
                    "max_moves_per_node_per_wave": max_moves_per_node_per_wave, "max_unavailable_per_job": max_unavailable_per_job,
                    "max_moves_per_namespace": max_moves_per_namespace,
                    "only_namespaces": _names(only_namespace), "exclude_namespaces": _names(exclude_namespace), "move_once": move_once}
    limited = any(value not in (None, False) for value in given_limits.values())
    if parsed.kind == "allocate":
        if limited:
            fail(["--max-moves, --max-moves-per-node, --same-asw and the per-wave limits apply to defrag plans; this is an allocation plan"])
        from planner.cli_allocate import validate_allocation_plan

        validate_allocation_plan(cluster, parsed)
        return
    if parsed.kind == "preempt":
        if limited:
            fail(["--max-moves, --max-moves-per-node, --same-asw and the per-wave limits apply to defrag plans; this is a preempt plan"])
        from planner.cli_preempt import validate_preempt_plan

        validate_preempt_plan(cluster, parsed)
        return
    limits = _options_of_flags(DefragOptions, {"move_once": False, **{k: v for k, v in given_limits.items() if v not in (None, False)}}).limits(
        len(cluster.nodes))
    violations = validate(cluster, parsed, limits)
    moves = sum(len(w) for w in parsed.waves)
    report_violations(violations, f"valid: {len(parsed.waves)} wave(s), {moves} move(s), {len(parsed.vacated_nodes)} vacated node(s)")


# ----------------------------------------------------------------------------------------------
# defrag
# ----------------------------------------------------------------------------------------------


class DefragMethod(str, Enum):
    heuristic = "heuristic"
    random = "random"
    descheduler = "descheduler"
    repack = "repack"
    exact = "exact"
    compare = "compare"
    hybrid = "hybrid"
    auto = "auto"


class Solver(str, Enum):
    cpsat = "cpsat"
    highs = "highs"


class Executor(str, Enum):
    inline = "inline"
    process = "process"
    ray = "ray"


class ServeExecutor(str, Enum):
    process = "process"
    ray = "ray"


class LogFormat(str, Enum):
    json = "json"
    text = "text"


class Formulation(str, Enum):
    auto = "auto"
    pod = "pod"
    cls = "class"


class Lexicographic(str, Enum):
    two_phase = "two-phase"
    weighted = "weighted"


class Trim(str, Enum):
    off = "off"
    greedy = "greedy"
    exact = "exact"


class OutputFormat(str, Enum):
    json = "json"
    yaml = "yaml"
    table = "table"
    wide = "wide"
    kubectl = "kubectl"
    podmigrationjob = "podmigrationjob"


OUTPUT_HELP = ("json or yaml: the plan; table: a human summary (the default on a terminal); wide: the summary and every "
               "move; kubectl: a bash script applying a defrag plan wave by wave; podmigrationjob: koordinator objects.")


def output_option() -> Any:
    """``-o``/``--output`` (``--format`` is the older name): how a planning command prints its plan."""
    return typer.Option(None, "--output", "-o", "--format", help=OUTPUT_HELP)


def emit_plan(plan: Any, cluster: Any, output: OutputFormat | None, out: str | None, render_table: Callable[[Any], None]) -> None:
    """Print ``plan`` as asked (``--out`` always gets the JSON plan). With no ``-o``: a table on a
    terminal, JSON otherwise (pipes and files get the machine format, never truncated)."""
    from planner.plans import DefragPlan, dump_plan, plan_to_dict

    if out is not None:
        _emit(dump_plan(plan) + "\n", out)
    if output is None:
        if out is not None:
            return
        output = OutputFormat.table if sys.stdout.isatty() else OutputFormat.json
    from planner.plans import AllocationPlan, PreemptPlan

    if output == OutputFormat.podmigrationjob and not isinstance(plan, DefragPlan):
        fail([f"-o podmigrationjob: renders a defrag plan's moves (this is a {type(plan).__name__}); use -o kubectl, json, yaml, table or wide"])
    if output == OutputFormat.kubectl and not isinstance(plan, (DefragPlan, PreemptPlan, AllocationPlan)):
        fail([f"-o kubectl: renders one plan (this is a {type(plan).__name__}, two plans side by side); choose a method, or use -o json, yaml or table"])
    if output in (OutputFormat.kubectl, OutputFormat.podmigrationjob):
        from planner.render.kubernetes import script_name_problems

        problems = script_name_problems(plan, cluster)
        if problems:
            raise SnapshotError([*problems, f"-o {output.value}: refused; rename them in the snapshot (or import it with "
                                 "planner import kubernetes, which keeps Kubernetes' names)"])
    if output == OutputFormat.json:
        _emit(dump_plan(plan) + "\n", "-")
    elif output == OutputFormat.yaml:
        import yaml

        _emit(yaml.safe_dump(plan_to_dict(plan), sort_keys=False, width=10**6), "-")
    elif output in (OutputFormat.table, OutputFormat.wide):
        render_table(plan)
        if output == OutputFormat.wide and isinstance(plan, DefragPlan):
            from planner.render.kubernetes import wide_table

            _emit(wide_table(plan, cluster), "-")
    elif output == OutputFormat.kubectl:
        from planner.render.kubernetes import kubectl_script, placement_script

        _emit(kubectl_script(plan, cluster) if isinstance(plan, DefragPlan) else placement_script(plan, cluster), "-")
    else:
        from planner.render.kubernetes import podmigrationjob_yaml

        _emit(podmigrationjob_yaml(plan, cluster), "-")


def _names(value: str | None) -> list[str] | None:
    """A comma-separated list of names (None when not given)."""
    return None if value is None else [name.strip() for name in value.split(",") if name.strip()]


def _count_or_share(value: str | None) -> int | str | None:
    """'10%' stays a share; '50' becomes the count 50 (anything else is left for the options to refuse)."""
    if value is None or value.strip().endswith("%"):
        return value
    try:
        return int(value)
    except ValueError:
        return value


PROGRESS_FROM_NODES = 2000
"""Show a progress bar on stderr for clusters at least this large."""


@app.command()
@guarded
def defrag(
    context: typer.Context,
    snapshot: str = typer.Argument(..., help="Snapshot JSON file, or - for stdin."),
    method: DefragMethod = typer.Option(
        DefragMethod.heuristic,
        "--method",
        help="heuristic = IPC ejection chains; random/descheduler/repack = baselines; exact = solver on the whole "
        "instance; hybrid = IPC improved by the solver on neighbourhoods; auto = exact if small, else hybrid; "
        "compare = IPC and exact side by side.",
    ),
    trim: Trim = typer.Option(
        Trim.greedy,
        "--trim",
        help="Move-minimal pass after IPC (heuristic, hybrid): greedy = no double moves, pods back home where they fit; "
        "exact = then the solver's fewest moves at as many empty nodes (heuristic only; uses --solver, --time-limit); off = IPC as is.",
    ),
    partition_size: int = typer.Option(500, "--partition-size", min=2, help="Nodes per IPC partition."),
    depth: int = typer.Option(3, "--depth", min=1, help="K: longest ejection chain."),
    rounds: int = typer.Option(5, "--rounds", min=1, help="R: IPC rounds."),
    max_moves: int = typer.Option(None, "--max-moves", min=0, help="Migration budget for the whole plan."),
    max_moves_per_node: int = typer.Option(None, "--max-moves-per-node", min=0, help="Moves touching any one node."),
    same_asw: bool = typer.Option(False, "--same-asw", help="Pods move only within their access switch."),
    max_moves_per_wave: int = typer.Option(None, "--max-moves-per-wave", help="Moves in any one wave (waves are split; no move is lost)."),
    max_nodes_per_wave: str = typer.Option(
        None, "--max-nodes-per-wave", help="N or P%: nodes any one wave touches (a share is of the cluster's nodes, rounded up)."
    ),
    max_moves_per_node_per_wave: int = typer.Option(None, "--max-moves-per-node-per-wave", help="Moves touching any one node in one wave."),
    max_unavailable_per_job: int = typer.Option(
        None, "--max-unavailable-per-job", help="Pods of one job moving in one wave, for jobs without their own disruption budget (0: they stay)."
    ),
    max_moves_per_namespace: int = typer.Option(
        None, "--max-moves-per-namespace", help="Moves of one namespace's pods in one wave (pods without a namespace are in 'default')."
    ),
    move_once: bool = typer.Option(True, "--move-once/--no-move-once", help="Every pod moves at most once (default: on)."),
    only_namespace: str = typer.Option(None, "--only-namespace", help="NS[,NS...]: only pods of these namespaces move."),
    exclude_namespace: str = typer.Option(None, "--exclude-namespace", help="NS[,NS...]: pods of these namespaces never move."),
    allow_product_change: bool = typer.Option(
        False, "--allow-product-change", help="Let GPU pods move to another GPU product their rules allow (default: a pod keeps its product)."
    ),
    allow_cpu_pods_on_gpu_nodes: bool = typer.Option(
        False, "--allow-cpu-pods-on-gpu-nodes", help="Let CPU-only pods move onto GPU nodes (default: they stay off them)."
    ),
    node_selector: str = typer.Option(
        None, "--node-selector", help="LABEL_EXPR: plan within the nodes this label selector matches ('pool=training,zone in (a,b)'); "
        "pods elsewhere stay and nothing arrives there."
    ),
    threshold: float = typer.Option(0.5, "--threshold", min=0.0, max=1.0, help="Baselines: drain nodes below this GPU allocation."),
    seed: int = typer.Option(0, "--seed", help="Random seed; same snapshot and seed give the same plan."),
    workers: int = typer.Option(None, "--workers", min=1, help="Worker processes for partitions (default: one per core)."),
    executor: Executor = typer.Option(
        Executor.process, "--executor",
        help="Where partitions and neighbourhoods run: inline, a local process pool, or Ray (RAY_ADDRESS when set, else a local Ray; "
        "needs the extra 'ray'). Same seed, same plan.",
    ),
    solver: Solver = typer.Option(Solver.highs, "--solver", help="Exact back-end."),
    time_limit: float = typer.Option(60.0, "--time-limit", help="Seconds for the solver (exact, compare) or the whole search (hybrid)."),
    solver_workers: int = typer.Option(8, "--solver-workers", min=1, help="CP-SAT workers / HiGHS threads."),
    formulation: Formulation = typer.Option(Formulation.auto, "--formulation", help="Exact model: pod-level or class-aggregated."),
    deterministic: bool = typer.Option(False, "--deterministic", help="CP-SAT: deterministic search; the time limit is in deterministic seconds."),
    lexicographic: Lexicographic = typer.Option(
        Lexicographic.two_phase, "--lexicographic", help="Exact objective: two-phase (empty nodes, then moves) or one weighted solve."
    ),
    force: bool = typer.Option(False, "--force", help="Run --method exact even above its size limit."),
    limit_costs: bool = typer.Option(
        False, "--limit-costs", help="Also plan without each limit in force that can cost vacated nodes and report what each cost."
    ),
    make_room: str = typer.Option(
        None, "--make-room", help="NAME[,NAME...]: pending jobs (or pending pods without a job) to make room for and start (method heuristic, exact or compare)."
    ),
    out: str = typer.Option(None, "--out", help="Write the plan JSON here (- for stdout)."),
    output_format: OutputFormat = output_option(),
    source: InputKind = input_option(),
    import_config: str = import_config_option(),
) -> None:
    """Plan a defragmentation: migration waves that vacate as many nodes as possible (with
    --make-room: the moves that let named pending jobs start, and where they start)."""
    from planner.engine import DefragOptions, plan_defrag

    if threshold <= 0:
        fail(["--threshold: must be above 0 (a node is drained when its GPU allocation is below it)"])
    if not time_limit > 0:
        fail([f"--time-limit: must be above 0 seconds, got {time_limit:g}; give the solver some time, e.g. --time-limit 60"])
    given = {
        "method": method.value,
        "trim": trim.value,
        "partition_size": partition_size,
        "depth": depth,
        "rounds": rounds,
        "max_moves": max_moves,
        "max_moves_per_node": max_moves_per_node,
        "same_asw": same_asw,
        "max_moves_per_wave": max_moves_per_wave,
        "max_nodes_per_wave": _count_or_share(max_nodes_per_wave),
        "max_moves_per_node_per_wave": max_moves_per_node_per_wave,
        "max_unavailable_per_job": max_unavailable_per_job,
        "max_moves_per_namespace": max_moves_per_namespace,
        "only_namespaces": _names(only_namespace),
        "exclude_namespaces": _names(exclude_namespace),
        "move_once": move_once,
        "allow_product_change": allow_product_change,
        "allow_cpu_pods_on_gpu_nodes": allow_cpu_pods_on_gpu_nodes,
        "node_selector": node_selector,
        "threshold": threshold,
        "seed": seed,
        "workers": workers,
        "executor": executor.value,
        "solver": solver.value,
        "time_limit_s": time_limit,
        "solver_workers": solver_workers,
        "formulation": formulation.value,
        "deterministic": deterministic,
        "lexicographic": lexicographic.value,
        "force": force,
        "limit_costs": limit_costs,
        "make_room": None if make_room is None else [name.strip() for name in make_room.split(",") if name.strip()],
    }
    options = _options(context, DefragOptions, given)
    check_plan_output(output_format, out)
    with collector_paused():  # one plan and exit: the collector's passes over the snapshot cost seconds (runtime/gc_pause.py)
        cluster = load_input(snapshot, source, import_config)
        if len(cluster.nodes) >= PROGRESS_FROM_NODES:
            with _progress_bar(f"{method.value} on {len(cluster.nodes):,} nodes") as progress:
                plan = plan_defrag(cluster, options, progress)
        else:
            plan = plan_defrag(cluster, options)
        emit_plan(plan, cluster, output_format, out,
                  lambda p: _print_comparison(p) if isinstance(p, DefragComparison) else _print_defrag_table(p))


"""Option fields whose command-line flag is named differently (``--time-limit``)."""


def _flag(field: str) -> str:
    from planner.engine.defrag import CLI_FLAGS

    return "--" + CLI_FLAGS.get(field, field).replace("_", "-")


def _options_of_flags(model: type, given: dict[str, Any]):  # type: ignore[no-untyped-def]
    """``model(**given)``; errors name the flag, exit 2."""
    from pydantic import ValidationError

    try:
        return model(**given)
    except ValidationError as err:
        fail([f"{_flag('.'.join(map(str, e['loc'])))}: {e['msg'].removeprefix('Value error, ')}" for e in err.errors()])


def _options(context: typer.Context, model: type, values: dict[str, Any]):  # type: ignore[no-untyped-def]
    """``model`` built from the options given on the command line only (defaults stay unset, so a
    method can refuse an option it would ignore); errors name the flag, exit 2."""

    def given_here(field: str) -> bool:
        from planner.engine.defrag import CLI_FLAGS

        source = context.get_parameter_source(CLI_FLAGS.get(field, field))
        return source is not None and source.name != "DEFAULT"

    given = {field: value for field, value in values.items() if field == "method" or given_here(field)}
    return _options_of_flags(model, given)


@contextlib.contextmanager
def _progress_bar(title: str):  # type: ignore[no-untyped-def]
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    # no refresh thread: with none running, IPC's process pool forks and its workers share the state
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err_console, transient=True,
                  auto_refresh=False) as bar:
        task = bar.add_task(title, total=None)
        bar.refresh()

        def update(what: str, done: int, total: int) -> None:
            label = "IPC round" if what == "round" else "neighbourhood round"
            bar.update(task, description=f"{title}: {label} {done}", completed=done, total=total or None, refresh=True)

        yield update


def _print_comparison(comparison) -> None:  # type: ignore[no-untyped-def]
    with _stdout_console() as console:
        _render_comparison(console, comparison)


def _render_comparison(console: Console, comparison) -> None:  # type: ignore[no-untyped-def]
    h, e, gap = comparison.heuristic.report, comparison.exact.report, comparison.gap
    table = Table(title="Heuristic (IPC) against exact")
    for column in ("", "heuristic", "exact"):
        table.add_column(column, justify="left" if not column else "right")
    rows = [
        ("empty nodes", h.objective, e.objective),
        ("moves", h.moves, e.moves),
        ("GPUs moved", h.gpus_moved, e.gpus_moved),
        ("waves", len(comparison.heuristic.waves), len(comparison.exact.waves)),
        ("status", h.status, e.status),
        ("solver", "", e.solver),
        ("bound (empty nodes)", "", e.bound),
        ("wall s", h.wall_s, e.wall_s),
    ]
    for label, a, b in rows:
        table.add_row(label, _fmt(a if a is not None else ""), _fmt(b if b is not None else ""))
    console.print(table)
    if "exact_jobs_placed" in gap:  # make room: jobs started and moves, not empty nodes
        saved = gap["moves_saved"]
        console.print(
            f"make room: jobs started heuristic {gap['heuristic_jobs_placed']}, exact {gap['exact_jobs_placed']}; "
            + (f"exact saves {_fmt(saved)} move(s)" if saved is not None else "moves not comparable (different jobs started)")
            + f"; exact {gap['exact_status']}"
            + (", restricted neighbourhood" + (" (optimal within it)" if gap["optimal_within_neighbourhood"] else "") if gap["restricted"] else "")
        )
        for label, plan in (("heuristic", comparison.heuristic), ("exact", comparison.exact)):
            console.print(f"{label}:")
            _render_make_room_jobs(console, plan)
        return
    console.print(
        f"gap: exact empties {_fmt(gap['gap_empty_nodes'])} more nodes than IPC; "
        f"IPC is {_fmt(gap['heuristic_to_bound'])} below the proven bound"
    )


def _render_make_room_jobs(console: Console, plan) -> None:  # type: ignore[no-untyped-def]
    if not plan.metrics.per_job:
        return
    jobs = Table(title="Make room: named jobs")
    for column in ("job", "placed", "moves", "GPUs moved", "nodes / reason"):
        jobs.add_column(column, justify="left" if column in ("job", "nodes / reason") else "right")
    for name, job in plan.metrics.per_job.items():
        where = ", ".join(job["nodes"]) if job["placed"] else job["reason"]
        jobs.add_row(name, _fmt(job["placed"]), _fmt(job.get("moves", "")), _fmt(job.get("gpus_moved", "")), where)
    console.print(jobs)


def _print_defrag_table(plan) -> None:  # type: ignore[no-untyped-def]
    with _stdout_console() as console:
        _render_defrag_table(console, plan)


def _render_defrag_table(console: Console, plan) -> None:  # type: ignore[no-untyped-def]
    report = plan.report
    head = Table(title=f"Defrag plan ({report.method}, seed {report.seed}, {report.wall_s:.2f} s)")
    head.add_column("")
    head.add_column("value", justify="right")
    for label, value in (
        ("moves", report.moves),
        ("GPUs moved", report.gpus_moved),
        ("waves", len(plan.waves)),
        ("vacated nodes", len(plan.vacated_nodes)),
    ):
        head.add_row(label, _fmt(value))
    extra = report.model_extra or {}
    for label, value in (("solver", report.solver), ("status", report.status), ("bound (empty nodes)", report.bound), ("gap", report.gap)):
        if report.solver is not None:
            head.add_row(label, _fmt(value))
    for key in ("jobs_placed", "jobs_unplaced", "lexicographic_optimal", "moves_before_trim", "moves_saved", "moves_bound",
                "move_minimal", "solver_status", "units", "bound_error",
                "auto_choice", "fallback", "ipc_objective", "formulation", "rounds_run", "partitions", "candidates_tried",
                "lns_rounds", "lns_improved", "lns_gained_empty_nodes", "dropped_moves", "waves_before_wave_limits", "pods_held", "move_once_rerouted", "move_once_dropped", "lost_gpu_s", "reason"):
        if key in extra:
            head.add_row(key.replace("_", " "), _fmt(extra[key]))
    console.print(head)
    _render_make_room_jobs(console, plan)
    before, after = plan.metrics.before, plan.metrics.after
    table = Table(title="Cluster before and after")
    for column in ("measure", "before", "after", "change"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for key in ("empty_nodes", "full_nodes", "nodes_with_slack", "gfr", "gar", "allocated_gpus"):
        change = after[key] - before[key]
        table.add_row(key.replace("_", " "), _fmt(before[key]), _fmt(after[key]), f"{change:+.4g}")
    if before["nodes_with_slack"]:
        cut = 1 - after["nodes_with_slack"] / before["nodes_with_slack"]
        table.add_row("nodes with slack cut", "", "", f"{cut:.1%}")
    console.print(table)


# ----------------------------------------------------------------------------------------------
# generate
# ----------------------------------------------------------------------------------------------


class Scheduler(str, Enum):
    spread = "spread"
    random = "random"
    binpack = "binpack"


class NodeList(str, Enum):
    gpu = "gpu"
    all = "all"


@generate_app.command("asi")
@guarded
def generate_asi_command(
    nodes: int = typer.Option(..., "--nodes", help="Number of 8-GPU nodes (1 to 250,000)."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same snapshot."),
    allocation: float = typer.Option(0.7, "--allocation", min=0.0, max=1.0, help="Target share of GPUs allocated."),
    locked: float = typer.Option(0.4, "--locked", min=0.0, max=1.0, help="Share of pods that are locked (may not move)."),
    scheduler: Scheduler = typer.Option(Scheduler.spread, "--scheduler", help="Baseline scheduler placing the pods (spread = Kubernetes' default)."),
    churn_rounds: int = typer.Option(2, "--churn-rounds", min=0, help="Fill-above-target / depart-below rounds before the final fill."),
    pending_jobs: int = typer.Option(0, "--pending-jobs", min=0, help="Jobs that failed the final fill to keep as pending pods."),
    mix: str = typer.Option("asi", "--mix", help="Workload shape: asi (1/2/4/8-GPU pods, training gangs) or small (1-2 GPU pods, the ASI paper's ILP size)."),
    large_jobs: int = typer.Option(0, "--large-jobs", min=0, help="Pending large training jobs to add as a batch for `planner allocate` "
                                   "(32-256 GPUs in 8- or 4-GPU pods, 12 CPUs per GPU, one GPU model each, half ASW-required)."),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """A seeded ASI-like cluster (Alibaba ASI paper): ASWs of 32-64 8-GPU nodes, ~40% locked pods."""
    from planner.instances.asi import generate_asi
    from planner.instances.batch import add_large_jobs
    from planner.snapshot import dump_cluster

    cluster = generate_asi(
        nodes=nodes,
        seed=seed,
        allocation=allocation,
        locked=locked,
        scheduler=scheduler.value,
        churn_rounds=churn_rounds,
        pending_jobs=pending_jobs,
        mix=mix,
    )
    cluster = add_large_jobs(cluster, large_jobs, seed)
    _emit(dump_cluster(cluster) + "\n", out)


@generate_app.command("openb")
@guarded
def generate_openb_command(
    pods: str = typer.Option("default", "--pods", help="Pod list of the openb trace: default, gpushare40, ..."),
    at: float = typer.Option(None, "--at", help="Replay the trace up to this time (seconds)."),
    scheduler: Scheduler = typer.Option(Scheduler.spread, "--scheduler", help="Baseline scheduler placing the pods."),
    node_list: NodeList = typer.Option(NodeList.gpu, "--nodes", help="gpu: the 1,213 GPU nodes; all: plus CPU-only nodes."),
    seed: int = typer.Option(0, "--seed", help="Random seed for the scheduler's tie-breaking."),
    data_dir: str = typer.Option(None, "--data-dir", help="Directory of the openb CSVs (default: $PLANNER_OPENB_DIR or data/openb-2023 of the repository)."),
    departures: bool = typer.Option(
        True,
        "--departures/--no-departures",
        help="Pods leave at their deletion time (the trace as recorded: few are alive at once) or, with "
        "--no-departures, stay once created (the FGD paper's fill, which yields a busy cluster).",
    ),
    out: str = typer.Option("-", "--out", help="Output file (- for stdout)."),
) -> None:
    """A snapshot of the Alibaba 2023 GPU trace (openb) replayed up to a time with a baseline scheduler."""
    from planner.instances.openb import generate_openb
    from planner.snapshot import dump_cluster

    cluster = generate_openb(
        pods=pods,
        at_s=at,
        scheduler=scheduler.value,
        nodes=node_list.value,
        seed=seed,
        data_dir=data_dir,
        departures=departures,
    )
    _emit(dump_cluster(cluster) + "\n", out)


# ----------------------------------------------------------------------------------------------
# service
# ----------------------------------------------------------------------------------------------

@app.command()
@guarded
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (loopback unless PLANNER_API_TOKEN is set or --insecure)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="TCP port."),
    workers: int = typer.Option(None, "--workers", min=1, max=256, help="Jobs solved at once, each in its own process (default: one per core)."),
    db: str = typer.Option("planner.db", "--db", help="SQLite file for jobs and plans (DATABASE_URL, or the file DATABASE_URL_FILE names, overrides: PostgreSQL)."),
    insecure: bool = typer.Option(False, "--insecure", help="Allow a non-loopback address without PLANNER_API_TOKEN."),
    max_queue: int = typer.Option(64, "--max-queue", min=1, max=1_000_000, help="Queued jobs beyond which requests get 429."),
    max_body_mib: int = typer.Option(64, "--max-body-mib", min=1, max=4096, help="Request body limit (413 above it)."),
    max_job_s: float = typer.Option(900.0, "--max-job-s", min=1.0, max=7 * 24 * 3600.0, help="Wall time after which a job is stopped and failed."),
    allow_force: bool = typer.Option(False, "--allow-force", help="Accept options.force (exact solves beyond the size limits)."),
    max_job_memory_gib: float = typer.Option(
        None, "--max-job-memory-gib", help="Memory cap of each job's process (default: an equal share of the machine's memory)."
    ),
    executor: ServeExecutor = typer.Option(
        ServeExecutor.process, "--executor",
        help="Where a defrag job's pieces run: in the job's process, or as Ray tasks (RAY_ADDRESS when set, else a local Ray "
        "started with the server; needs the extra 'ray').",
    ),
    metrics_public: bool = typer.Option(
        False, "--metrics-public", help="Serve /metrics without a token (else it needs PLANNER_API_TOKEN or PLANNER_API_READ_TOKEN)."
    ),
    log_format: LogFormat = typer.Option(LogFormat.json, "--log-format", help="Logs on stderr: one JSON object per line, or text."),
    private_docs: bool = typer.Option(
        False, "--private-docs", help="Require the token for /docs, /redoc and /openapi.json too (public by default: they hold no data)."
    ),
    keep_days: float = typer.Option(
        None, "--keep-days", min=1e-6, max=36500.0,
        help="Purge finished jobs with their snapshots and plans this many days after they end (default: keep them).",
    ),
    lease_s: float = typer.Option(
        30.0, "--lease-s", min=1.0, max=3600.0,
        help="Replicas sharing a database: a running job's lease, renewed every third of it; when a replica dies, "
        "another takes its jobs over this long after its last renewal.",
    ),
    body_timeout_s: float = typer.Option(
        30.0, "--body-timeout-s", min=1.0, max=3600.0,
        help="A request body must arrive within this many seconds, else 408 (a slow upload would hold the large-body slot).",
    ),
) -> None:
    """Run the planning service (REST API, background solve jobs, plan store)."""
    from planner.api.server import serve as run_server

    try:
        run_server(host, port, workers, db, insecure, max_queue, max_body_mib, max_job_s, allow_force, max_job_memory_gib,
                   executor.value, metrics_public, log_format.value, not private_docs, keep_days, lease_s, body_timeout_s)
    except ValueError as err:
        fail([str(err)])


from planner import cli_allocate, cli_client, cli_db, cli_export, cli_import, cli_preempt, cli_solve  # noqa: E402,F401 - register their commands on ``app``
from planner import cli_simulate, cli_simulate_placement, cli_simulate_queue  # noqa: E402,F401 - register ``planner simulate``


def main() -> None:
    """Console-script entry point. Output the command line framework writes itself (help, usage)
    to a full or closed standard output is exit 2 with a message, not a traceback."""
    if len(sys.argv) == 1:
        sys.argv.append("--help")  # no command: the help, as asked for (exit 0)
    stand_in_for_closed_stdout()
    try:
        app()
    except SystemExit as done:
        _flush_stdout()
        raise done
    except OSError as err:
        _unwritable_stdout(err)


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


if __name__ == "__main__":
    from planner.cli import main as _main  # the module proper, where the other command modules registered

    _main()
