"""``planner simulate``: the command group, and its ``spot`` command (replay an HP/spot workload on the
spot-2026 cluster under each policy and seed, and write one tidy row per (policy, seed)); ``placement``
and ``queue`` are in their own modules and registered on the group here."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from planner.cli.common import check_stdout, emit, err_console, fail, guarded, plain_console, summary_to_stdout
from planner.cli.simulate_placement import simulate_placement_command
from planner.cli.simulate_queue import simulate_queue_command
from planner.render.table import spot_runs_table
from planner.simulate.spot_presets import SPOT_PRESETS, preset_text, resolve

MAX_JOBS = 250_000
"""``--jobs`` at most: about ten days of the whole spot-2026 cluster at the default loads (24,000 jobs a
day), some 400 MB of workload before the replay starts. A million jobs took 1.6 GB and kept growing."""

simulate_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Replay a workload over time under each policy (simulation).")


@simulate_app.command("spot")
@guarded
def simulate_spot_command(
    preset: str = typer.Option(
        None,
        "--preset",
        metavar="NAME",
        help=f"A published experiment's settings; options given explicitly override them. asi-ablation (benchmarks/results/spot.md): {preset_text('asi-ablation')}.",
    ),
    nodes: str = typer.Option(
        None,
        "--nodes",
        help="spot-2026 (every node of the trace's node list) or N (a seeded sample of N of them, model mix kept). Default spot-2026; asi-ablation: 1000.",
    ),
    node_list: str = typer.Option(None, "--node-list", help="The trace's node_info_df.csv (default: the copy the package ships)."),
    days: float = typer.Option(None, "--days", help="Days of arrivals. Default 1; asi-ablation: 4."),
    warmup_days: float = typer.Option(
        None, "--warmup-days", help="Leave the first days out of the metrics (jobs run up to 3 days). Default 0; asi-ablation: 1."
    ),
    warm_start: bool = typer.Option(
        None,
        "--warm-start/--cold-start",
        help="Start from the jobs a stationary past leaves running (submitted at 0 with the rest of their work) instead of an empty cluster. Default cold; asi-ablation: warm.",
    ),
    jobs: int = typer.Option(None, "--jobs", help=f"Jobs in the workload, at most {MAX_JOBS:,} (default: from the generator's loads)."),
    hp_load: float = typer.Option(
        None, "--hp-load", help="HP GPU-time offered, as a share of the cluster's GPU-time (0 to 10). Default 0.65 (the generator's); asi-ablation: 0.65."
    ),
    spot_load: float = typer.Option(
        None, "--spot-load", help="Spot GPU-time offered, as a share of the cluster's GPU-time (0 to 10). Default 0.35 (the generator's); asi-ablation: 0.35."
    ),
    policy: list[str] = typer.Option(
        None, "--policy", help="A policy to replay (a preemption method, or <placement>+<method>); repeat to compare several (default: every method)."
    ),
    seed: list[int] = typer.Option(None, "--seed", help="Workload and policy seed; repeat for several (default: 0)."),
    restart_overhead_s: float = typer.Option(
        None, "--restart-overhead-s", help="Seconds a restarted spot run spends before progressing. Default 0; asi-ablation: 60."
    ),
    hp_only: bool = typer.Option(
        True, "--hp-only/--no-hp-only", help="Also replay the HP jobs alone under each policy (HP delay growth, allocation without spot)."
    ),
    out: str = typer.Option(None, "--out", help="results.json: {'runs': [one row per (policy, seed)]} (- for stdout)."),
    plot: str = typer.Option(None, "--plot", help="PNG: allocation over time per policy (first seed) and spot completion-time CDFs."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar on stderr."),
) -> None:
    """Replay HP and spot jobs over days on the spot-2026 cluster, each decision by the planner.

    The workload is ``planner.instances.spot_workload.spot2026_jobs`` (seeded); each policy replays
    it, and ``--hp-only`` replays its HP jobs alone under each policy too. Rows hold spot completion times,
    GPU-hours lost, evictions, HP delay against the HP-only replay, allocation (GAR, SOR) and the
    standby GPU-time harvested (``planner.simulate.metrics``).
    """
    # deferred: the simulator and its workload generator (~0.2 s), for this command only
    from planner.simulate.spot import POLICIES, policy_problem

    if preset is not None and preset not in SPOT_PRESETS:
        fail([f"--preset: one of {', '.join(SPOT_PRESETS)}, got '{preset}'"])
    given = {"nodes": nodes, "days": days, "warmup_days": warmup_days, "warm_start": warm_start, "restart_overhead_s": restart_overhead_s}
    settings, sources = resolve(preset, {**given, "hp_load": hp_load, "spot_load": spot_load})
    nodes, days, warmup_days, warm_start = settings["nodes"], settings["days"], settings["warmup_days"], settings["warm_start"]
    restart_overhead_s, hp_load, spot_load = settings["restart_overhead_s"], settings["hp_load"], settings["spot_load"]
    policies = policy or list(POLICIES)
    problems = ["--" + problem for problem in (policy_problem(p) for p in policies) if problem]
    if len(set(policies)) != len(policies):
        problems.append("--policy: each policy once")
    seeds = seed or [0]
    if any(s < 0 for s in seeds):
        problems.append("--seed: must be at least 0")
    if not days > 0:
        problems.append(f"--days: must be above 0, got {days:g}")
    if not 0 <= warmup_days < days:
        problems.append(f"--warmup-days: must be at least 0 and below --days ({days:g}), got {warmup_days:g}")
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        problems.append(f"--jobs: must be from 1 to {MAX_JOBS:,}, got {jobs:,}; for a longer workload use --days (the loads set its size)")
    from planner.instances.spot_workload import HP_LOAD, SPOT_LOAD  # deferred: the spot workload generator (as above)

    loads = (HP_LOAD if hp_load is None else hp_load, SPOT_LOAD if spot_load is None else spot_load)
    for option, value in zip(("--hp-load", "--spot-load"), loads):
        if not 0 <= value <= 10:
            problems.append(f"{option}: must be between 0 and 10, got {value:g}")
    if all(0 <= value <= 10 for value in loads) and sum(loads) <= 0:
        problems.append("--hp-load, --spot-load: at least one must be above 0")
    if not restart_overhead_s >= 0:
        problems.append(f"--restart-overhead-s: must be at least 0, got {restart_overhead_s:g}")
    count = None
    if nodes != "spot-2026":
        try:
            count = int(nodes)
        except ValueError:
            count = 0
        if count < 1:
            problems.append(f"--nodes: 'spot-2026' or a number of nodes (at least 1), got '{nodes}'")
    if plot is not None and not plot.endswith(".png"):
        problems.append(f"--plot: a .png file, got '{plot}'")
    if problems:
        fail(problems)
    check_stdout(out in (None, "-"))  # the results (or their table) go to standard output
    try:
        rows, series = _run(count, node_list, days, warmup_days, jobs, policies, seeds, restart_overhead_s, hp_only, progress, warm_start, loads)
    except ValueError as err:
        fail([str(err)])
    provenance = {key: {"value": value, "source": sources[key]} for key, value in settings.items()}
    provenance["hp_load"]["value"], provenance["spot_load"]["value"] = loads
    for row in rows:
        row["preset"] = preset
    text = json.dumps({"runs": rows, "preset": preset, "settings": provenance}, indent=1) + "\n"
    if out is not None:
        emit(text, out)
    if summary_to_stdout(out):
        _print_table(rows, provenance)
    if plot is not None:
        from planner.simulate.plots import plot_replays  # deferred: matplotlib, only with --plot

        try:
            plot_replays(series, plot)
        except OSError as err:
            fail([f"--plot: cannot write '{plot}': {err.strerror or err}"])


def _run(
    count: int | None,
    node_list: str | None,
    days: float,
    warmup_days: float,
    jobs: int | None,
    policies: list[str],
    seeds: list[int],
    restart_overhead_s: float,
    hp_only: bool,
    progress: bool,
    warm_start: bool,
    loads: tuple[float, float],
) -> tuple[list[dict[str, Any]], dict]:
    # deferred: the simulator and its workload generator, as above
    from planner.instances.spot_workload import spot2026_cluster, spot2026_jobs
    from planner.simulate.metrics import replay_row
    from planner.simulate.spot import simulate  # deferred: the simulator (as above)

    path = Path(node_list) if node_list else None
    horizon_s = days * 86400
    rows: list[dict[str, Any]] = []
    series: dict[str, Any] = {}
    replays = len(seeds) * len(policies) * (2 if hp_only else 1)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=err_console,
        disable=not progress,
        transient=True,
    ) as bar:
        task = bar.add_task("simulating", total=replays * horizon_s)
        done = 0
        for s in seeds:
            cluster = spot2026_cluster(count, seed=s, node_list=path)
            workload = spot2026_jobs(cluster, days, jobs=jobs, seed=s, hp_load=loads[0], spot_load=loads[1], warm_start=warm_start)
            hp_jobs = [j for j in workload if j.priority == "HP"]
            # each policy's HP jobs alone under that policy: what its spot work changes for them
            runs = [(p, subset) for p in policies for subset in ([hp_jobs] if hp_only else []) + [workload]]
            alone = None
            for name, subset in runs:
                label = name if subset is workload else f"{name}, HP jobs alone"
                bar.update(task, description=f"seed {s}: {label}")
                start = time.perf_counter()

                def tick(now_s: float, base: float = done * horizon_s) -> None:
                    bar.update(task, completed=base + min(now_s, horizon_s))

                replay = simulate(cluster, subset, name, restart_overhead_s=restart_overhead_s, seed=s, progress=tick if progress else None)
                wall = time.perf_counter() - start
                done += 1
                if subset is not workload:
                    alone = replay
                    if s == seeds[0] and "hp-only" not in series:
                        series["hp-only"] = replay  # the first policy's, for the allocation plot
                    continue
                row = {
                    "policy": name,
                    "seed": s,
                    **replay_row(replay, horizon_s, alone, from_s=warmup_days * 86400),
                    "nodes": len(cluster),
                    "days": days,
                    "warmup_days": warmup_days,
                    "warm_start": warm_start,
                    "hp_load": loads[0],
                    "spot_load": loads[1],
                    "restart_overhead_s": restart_overhead_s,
                    "wall_s": round(wall, 3),
                }
                rows.append(row)
                if s == seeds[0]:
                    series[name] = replay
    return rows, series


def _print_table(rows: list[dict[str, Any]], provenance: dict[str, dict[str, Any]]) -> None:
    wide = None if sys.stdout.isatty() else 200  # piped or in a file: never fold the columns
    console = plain_console(width=wide)
    console.print(spot_runs_table(rows))
    settings = ", ".join(f"{key} {item['value']} ({item['source']})" for key, item in provenance.items())
    console.print(f"settings: {settings}", markup=False, highlight=False, soft_wrap=True)


simulate_app.command("placement")(simulate_placement_command)
simulate_app.command("queue")(simulate_queue_command)
