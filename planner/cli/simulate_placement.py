"""The ``planner simulate placement`` command: the FGD/PWR papers' placement experiment on an openb pod
list, one tidy row per (policy, seed, load point), fanned out over the process pool."""

from __future__ import annotations

import json
import sys
from typing import Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from planner.cli.common import check_stdout, emit, err_console, fail, guarded, plain_console, summary_to_stdout
from planner.render.table import placement_runs_table
from planner.runtime.executors import default_workers, executor
from planner.runtime.ray_executor import ray_cpus

FGD_ARTIFACT_SEEDS = 42  # the FGD artifact's first seed (its runs use 42..51)


@guarded
def simulate_placement_command(
    trace: str = typer.Option("default", "--trace", help="An openb pod list (default, multigpu20, gpushare40, ...) or a .csv path."),
    policy: list[str] = typer.Option(
        None,
        "--policy",
        help="fgd, bestfit, gpu-packing, gpu-clustering, dotprod, random, pwr, pwr-fgd:<alpha> (as the PWR paper ran it) or pwr-fgd-eq5:<alpha> (its Eq. 5 as printed); repeat to compare (default: fgd).",
    ),
    seeds: int = typer.Option(10, "--seeds", help="Seeds per policy: --first-seed, --first-seed + 1, ..."),
    first_seed: int = typer.Option(FGD_ARTIFACT_SEEDS, "--first-seed", help="The first seed (the FGD artifact's runs use 42..51)."),
    load: float = typer.Option(1.3, "--load", help="GPU requested in all, as a share of capacity (Monte-Carlo inflation up to it)."),
    step: int = typer.Option(5, "--step", help="Load points every this many percent of capacity."),
    nodes: str = typer.Option("gpu", "--nodes", help="gpu (the 1,213 GPU nodes, as the FGD artifact) or all (with the 310 CPU-only nodes)."),
    data_dir: str = typer.Option(None, "--data-dir", help="The openb-2023 directory (default: $PLANNER_OPENB_DIR, else the copy the package ships)."),
    workers: int = typer.Option(None, "--workers", help="Processes (default: one per core; 1: inline), or Ray tasks at once."),
    executor_kind: str = typer.Option(
        "process",
        "--executor",
        help="process (a local pool) or ray (replays as Ray tasks: RAY_ADDRESS when set, else a local Ray; "
        "the extra 'ray'; every Ray node needs the trace at the same path).",
    ),
    out: str = typer.Option(None, "--out", help="results.json: {'runs': [one row per (policy, seed, load point)]} (- for stdout)."),
    plot: str = typer.Option(None, "--plot", help="PNG: GPU allocation, power and fragmentation against arrived load, per policy."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar on stderr."),
) -> None:
    """Replay Monte-Carlo inflated openb workloads under each policy (the FGD and PWR papers' setup).

    Pods arrive one by one and never leave; a pod no node can take fails. Rows give, at each arrived
    load, the GPU allocation (% of capacity), GRAR, power (EOPC, W) and FGD fragmentation (GPUs),
    averaged over the pods around that load as the FGD artifact's analysis does.
    """
    from planner.heuristics.share_scores import policy_problem  # deferred: the placement replays (~25 ms at start-up), for this command only

    policies = policy or ["fgd"]
    problems = [f"--policy: {p}" for p in (policy_problem(name) for name in policies) if p]
    if len(set(policies)) != len(policies):
        problems.append("--policy: each policy once")
    if seeds < 1:
        problems.append(f"--seeds: at least 1, got {seeds}")
    if first_seed < 0:
        problems.append(f"--first-seed: at least 0, got {first_seed}")
    if not 0 < load <= 5:
        problems.append(f"--load: above 0 and at most 5 (a share of GPU capacity), got {load:g}")
    if not 1 <= step <= 100:
        problems.append(f"--step: 1 to 100 percent, got {step}")
    if workers is not None and workers < 1:
        problems.append(f"--workers: at least 1, got {workers}")
    if executor_kind not in ("process", "ray"):
        problems.append(f"--executor: process or ray, got '{executor_kind}'")
    if plot is not None and not plot.endswith(".png"):
        problems.append(f"--plot: a .png file, got '{plot}'")
    if problems:
        fail(problems)
    check_stdout(out in (None, "-"))  # the results (or their table) go to standard output
    rows = _run(trace, policies, [first_seed + i for i in range(seeds)], load, step, nodes, data_dir, workers, progress, executor_kind)
    text = json.dumps({"runs": rows}, indent=1) + "\n"
    if out is not None:
        emit(text, out)
    if summary_to_stdout(out):
        _print_table(rows, load)
    if plot is not None:
        from planner.simulate.plots import plot_placement  # deferred: matplotlib, only with --plot

        try:
            plot_placement(rows, plot)
        except OSError as err:
            fail([f"--plot: cannot write '{plot}': {err.strerror or err}"])


def _run(
    trace: str,
    policies: list[str],
    seeds: list[int],
    load: float,
    step: int,
    node_list: str,
    data_dir: str | None,
    workers: int | None,
    progress: bool,
    kind: str = "process",
) -> list[dict[str, Any]]:
    from planner.simulate.placement import RunSpec, _inputs, run_rows  # deferred: the placement simulator (as above)

    _inputs(trace, node_list, data_dir)  # bad input fails here, before any worker starts
    specs = [RunSpec(trace, p, s, load, step, node_list, data_dir) for p in policies for s in seeds]
    rows: list[dict[str, Any]] = []
    with (
        executor(workers, kind) as run,  # type: ignore[arg-type]  # kind: "process" or "ray", checked by the command
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} replays"),
            TimeElapsedColumn(),
            console=err_console,
            disable=not progress,
            transient=True,
        ) as bar,
    ):
        count = workers or (ray_cpus() if kind == "ray" else default_workers())
        task = bar.add_task("replaying", total=len(specs))
        for i in range(0, len(specs), count):  # one batch per round of workers, so the bar moves
            for part in run(run_rows, specs[i : i + count]):
                rows.extend(part)
            bar.update(task, completed=min(len(specs), i + count))
    return rows


def _print_table(rows: list[dict[str, Any]], load: float) -> None:
    plain_console(width=None if sys.stdout.isatty() else 200).print(placement_runs_table(rows, load))
