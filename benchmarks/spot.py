"""Spot simulation (issue 14, issue 45 item 4) -> benchmarks/results/spot.md, spot.png (sections 1-3), spot_speed.md (4).

1. The ASI ablation: every policy replays the same seeded workload on the spot-2026 cluster
   (``planner.instances.spot_workload``) in the configuration of ``planner simulate spot --preset
   asi-ablation`` (``planner.simulate.spot_presets``: 1,000 nodes, 4 days, the first left out, warm
   start, 60 s restart overhead, HP load 0.65 and spot load 0.35); the HP jobs alone are replayed too
   under each policy, so its HP delay is compared with a replay of the same policy where no spot job
   exists. Rows come from ``planner.simulate.metrics.replay_row``. SpotGPU's claim (ASI Sec. 4.2): spot
   completion time -24% against the paper's baseline (no co-location or eviction awareness, random
   victims: here ``random``, whose placement is the least-idle rule alone), HP not affected. The key
   policies (spotgpu, spotgpu-isolated, spotgpu-paper, random) run ``--seeds`` seeds (0..n-1), the
   others ``--other-seeds``; each policy is compared with ``random`` on the same seeds, with a 95%
   bootstrap interval over seeds (``benchmarks/_paired.py``).
2. Held-out seeds: the key policies on ``--holdout-seeds`` seeds from ``--holdout-first-seed``, reported
   apart and never used to choose anything.
3. The gain against the offered spot load: ``spotgpu`` and ``random`` on the same cluster and HP load
   with the spot load swept (``--load-sweep``, ``--load-seeds`` seeds each), the default load's point
   taken from the ablation's first seeds.
4. Simulator speed: ``planner simulate spot`` as a child process on the whole node list for 1, 3 and
   7 days (``--scale-days``), per policy (``--scale-policies``), wall time and peak memory, and the
   growth exponent of wall time in the number of jobs. Its own file, with its own machine line.

Every replay's row is kept in ``--cache`` (default benchmarks/results/spot_runs.json, keyed by its
settings, policy and seed): a run that stops resumes where it stopped, and the per-seed numbers behind
every interval are there to check. Replays fan out over ``--workers`` processes (``--executor
process|ray``); a replay is deterministic, so the numbers do not depend on how they ran (wall times do).

    .venv/bin/python benchmarks/spot.py [--seeds 20] [--other-seeds 5] [--holdout-seeds 5] [--holdout-first-seed 100]
        [--workers 1] [--executor process|ray] [--cache FILE] [--load-sweep 0.2,0.25,0.3,0.35,0.4] [--load-seeds 3]
        [--skip-load-sweep] [--scale-days 1,3,7] [--scale-policies spotgpu,spotgpu-isolated] [--skip-scale | --only-scale]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import REPO, RESULTS, code_version, machine, run_measured
from _paired import BOOTSTRAP_SEED, RESAMPLES, fmt_ci, mean_interval, paired, verdict

from planner.instances.spot_workload import spot2026_cluster, spot2026_jobs
from planner.runtime.executors import executor
from planner.simulate.metrics import replay_row
from planner.simulate.plots import plot_replays
from planner.simulate.spot import POLICIES, simulate
from planner.simulate.spot_presets import SPOT_PRESETS, preset_text

BASELINE = "random"
KEY_POLICIES = ("spotgpu", "spotgpu-isolated", "spotgpu-paper", BASELINE)
CLAIM = -0.24  # ASI Sec. 4.2: spot completion time -24% against random victims
PRESET = "asi-ablation"
SETTINGS = SPOT_PRESETS[PRESET]
LONG_WAIT_S = 86400.0
PLOT_SEED = 0


def task_key(task: dict[str, Any]) -> str:
    return json.dumps({k: task[k] for k in sorted(task) if k != "keep"}, sort_keys=True)


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """One (policy, seed[, spot load]) replay and, with ``alone``, its HP jobs alone under the same policy:
    the row, and the replays themselves when ``keep`` (the plot's seed)."""
    count = None if task["nodes"] == "spot-2026" else int(task["nodes"])
    horizon, warmup = task["days"] * 86400, task["warmup_days"] * 86400
    nodes = spot2026_cluster(count, seed=task["seed"])
    jobs = spot2026_jobs(nodes, task["days"], seed=task["seed"], hp_load=task["hp_load"], spot_load=task["spot_load"], warm_start=task["warm_start"])
    alone = None
    start = time.perf_counter()
    if task["alone"]:
        alone = simulate(nodes, [j for j in jobs if j.priority == "HP"], task["policy"], seed=task["seed"])
    alone_wall = time.perf_counter() - start
    start = time.perf_counter()
    replay = simulate(nodes, jobs, task["policy"], seed=task["seed"], restart_overhead_s=task["restart_overhead_s"])
    row = {
        **replay_row(replay, horizon, alone, from_s=warmup),
        "seed": task["seed"],
        "wall_s": time.perf_counter() - start,
        "alone_wall_s": alone_wall,
        **completion_parts(replay, jobs, warmup, horizon),
    }
    if task["seed"] == 0:
        hp = sum(j.priority == "HP" for j in jobs)
        row["described"] = (
            f"{len(nodes):,} nodes, {sum(n.gpus for n in nodes):,} GPUs; seed 0: {len(jobs):,} jobs over {task['days']:g} "
            f"day(s), {hp:,} HP and {len(jobs) - hp:,} spot, {sum(bool(j.standby_windows_s) for j in jobs):,} HP jobs with "
            f"standby windows; {sum(j.name.split('-')[-1].startswith('w') for j in jobs):,} of all the jobs are the warm start's"
        )
    print(f"seed {task['seed']}: {task['policy']} (spot load {task['spot_load']:g}) {row['wall_s']:.1f} s + HP alone {alone_wall:.1f} s", flush=True)
    return {"row": row, "replays": {"replay": replay, "alone": alone} if task["keep"] else None}


def completion_parts(replay, jobs: list, from_s: float, horizon_s: float) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Where the mean spot completion time goes, over the spot jobs ``replay_row`` counts (submitted
    in [from_s, horizon_s), finished): the wait for the first start, the job's own work, and the
    rest (rework after evictions, restart overheads, waits after an eviction); the jobs whose first
    start came more than ``LONG_WAIT_S`` after submission, their share and their part of the mean."""
    work_s = {j.name: j.work_s for j in jobs}
    done = [o for o in replay.outcomes.values() if o.priority == "LP" and from_s <= o.submit_s < horizon_s and o.finish_s is not None]
    jct = [o.finish_s - o.submit_s for o in done]
    wait = [o.first_start_s - o.submit_s for o in done]
    work = [work_s[o.name] for o in done]
    long = [c for c, w in zip(jct, wait) if w > LONG_WAIT_S]
    long_late = sum(w > LONG_WAIT_S and o.first_start_s >= horizon_s for o, w in zip(done, wait))
    short = [c for c, w in zip(jct, wait) if w <= LONG_WAIT_S]
    count = len(done)
    return {
        "part_wait_s": sum(wait) / count,
        "part_work_s": sum(work) / count,
        "part_rest_s": (sum(jct) - sum(wait) - sum(work)) / count,
        "long_wait_share": len(long) / count,
        "long_wait_part_s": sum(long) / count,
        "long_wait_late_share": long_late / len(long) if long else float("nan"),
        "short_jct_mean_s": statistics.mean(short) if short else float("nan"),
    }


class Runs:
    """The cached rows, run on demand (in order, ``workers`` at a time, the cache saved after each batch)."""

    def __init__(self, path: Path, run: Any, workers: int, settings: dict[str, Any]) -> None:
        self.path, self.run, self.workers, self.settings = path, run, max(1, workers), settings
        self.rows: dict[str, dict] = json.loads(path.read_text()) if path.exists() else {}
        self.replays: dict[str, dict] = {}  # policy -> the plot seed's replays, when run here

    def task(self, policy: str, seed: int, spot_load: float | None = None, alone: bool = True) -> dict[str, Any]:
        load = self.settings["spot_load"] if spot_load is None else spot_load
        return {**self.settings, "spot_load": load, "policy": policy, "seed": seed, "alone": alone, "keep": seed == PLOT_SEED and alone}

    def get(self, tasks: list[dict[str, Any]]) -> list[dict]:
        todo = [t for t in tasks if task_key(t) not in self.rows]
        for i in range(0, len(todo), self.workers):
            batch = todo[i : i + self.workers]
            for task, result in zip(batch, self.run(run_task, batch)):
                self.rows[task_key(task)] = result["row"]
                if result["replays"] is not None:
                    self.replays[task["policy"]] = result["replays"]
            self.path.write_text(json.dumps(self.rows, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        return [self.rows[task_key(t)] for t in tasks]

    def have(self, tasks: list[dict[str, Any]]) -> bool:
        return all(task_key(t) in self.rows for t in tasks)


def cell(rows: list[dict], key: str, fmt: str) -> str:
    values = [r[key] for r in rows if r[key] is not None]
    if not values:
        return "-"
    return f"{format(statistics.mean(values), fmt)} [{format(min(values), fmt)}, {format(max(values), fmt)}]"


def ablation(args: argparse.Namespace, runs: Runs) -> tuple[list[str], dict[str, list[dict]]]:
    """Section 1 and its claims, from the rows there are: each policy on the seeds 0..k-1 it has (k up to its
    target; the key policies on the seeds all of them have, the others on no more than the baseline has)."""

    def have(p: str, target: int) -> int:
        return next((k for k in range(target) if task_key(runs.task(p, k)) not in runs.rows), target)

    key = [p for p in args.policies if p in KEY_POLICIES]
    key_seeds = min(have(p, args.seeds) for p in key)
    seeds_of = {p: key_seeds if p in KEY_POLICIES else min(have(p, args.other_seeds), key_seeds) for p in args.policies}
    rows = {p: runs.get([runs.task(p, s) for s in range(n)]) for p, n in seeds_of.items() if n > 0}
    missing = [p for p in args.policies if p not in rows]
    short = [
        f"{p} {seeds_of[p]} of {args.seeds if p in KEY_POLICIES else args.other_seeds}"
        for p in rows
        if seeds_of[p] < (args.seeds if p in KEY_POLICIES else args.other_seeds)
    ]
    base = rows.get(BASELINE, [])
    described = next((r["described"] for rs in rows.values() for r in rs if "described" in r), "-")

    def versus(p: str) -> Any:
        return paired([r["lp_jct_mean_s"] for r in rows[p]], [r["lp_jct_mean_s"] for r in base[: len(rows[p])]])

    lines = [
        f"## 1. The ablation: {key_seeds} seeds for the key policies, up to {args.other_seeds} for the others",
        "",
        (
            f"Settings ({settings_text(args)}). Cluster and workload: {described}. Key policies "
            f"({', '.join(KEY_POLICIES)}): seeds 0-{key_seeds - 1}; the others: seeds 0-{args.other_seeds - 1} (the *seeds* column). Each policy is "
            f"compared with `{BASELINE}` (the paper's baseline) on its own seeds: *ratio of means* is its mean spot completion "
            f"time over `{BASELINE}`'s - 1, *mean per-seed ratio* the mean over seeds of the same ratio taken seed by seed (a seed "
            f"gives every policy the same jobs); brackets: the 95% interval of a percentile bootstrap over seeds ({RESAMPLES:,} "
            f"resamples, generator seeded {BOOTSTRAP_SEED}: `benchmarks/_paired.py`); *per-seed range*: the lowest and highest "
            "per-seed ratio. Other columns: the mean over seeds [min, max]. *HP alone*: the mean HP start delay in a replay of the "
            "HP jobs alone under the same policy (policies place HP jobs differently, so each has its own); *HP delay added*: "
            "the mean HP start delay minus that replay's; *HP started later*: the share of HP jobs that started later than alone. "
            "Jobs count when submitted after the warm-up; the cluster starts with the jobs a stationary past leaves running "
            "(``warm_start``). Allocation is averaged over the same span. Wall time is per replay (the HP-alone replay not "
            "included), measured with other work on the machine: it is a reading of a loaded machine, not the simulator's speed."
        ),
        "",
        (
            "| policy | seeds | spot JCT mean s | vs random: ratio of means | mean per-seed ratio | per-seed range | spot JCT p90 s | "
            "spot GPU-h lost | evictions per spot job | evicted twice+ | HP delay mean s | HP alone s | HP delay added s | "
            "HP started later | GAR with spot | standby harvested | wall s |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p, rs in rows.items():
        v = versus(p) if base and p != BASELINE else None
        lines.append(
            f"| {p} | {len(rs)} | {cell(rs, 'lp_jct_mean_s', ',.0f')} | {fmt_ci(v.ratio_of_means, v.ratio_of_means_ci) if v else '-'} | "
            f"{fmt_ci(v.mean_ratio, v.mean_ratio_ci) if v else '-'} | {f'[{v.low:+.1%}, {v.high:+.1%}]' if v else '-'} | "
            f"{cell(rs, 'lp_jct_p90_s', ',.0f')} | {cell(rs, 'lp_gpu_hours_lost', ',.0f')} | {cell(rs, 'lp_evictions_per_job', '.3f')} | "
            f"{cell(rs, 'lp_evicted_twice_share', '.1%')} | {cell(rs, 'hp_delay_mean_s', ',.1f')} | {cell(rs, 'hp_delay_hp_only_mean_s', ',.1f')} | "
            f"{cell(rs, 'hp_delay_added_mean_s', '+,.1f')} | {cell(rs, 'hp_started_later_share', '.2%')} | {cell(rs, 'gar_mean', '.1%')} | "
            f"{cell(rs, 'standby_harvested', '.1%')} | {statistics.mean(r['wall_s'] for r in rs):.1f} |"
        )
    if missing or short:
        lines += [
            "",
            "**Unfinished run:** not every seed asked for is in the cache yet; rerun the command to finish it (it resumes). "
            + (f"Seeds so far: {', '.join(short)}. " if short else "")
            + (f"No seed yet: {', '.join(missing)}." if missing else ""),
            "",
        ]
    if base:
        lines += claims(rows, versus)
    if rows:
        lines += parts_table(rows)
        first = next(iter(rows))
        lines += [
            "",
            (
                f"HP alone under `{first}` (the replay without spot jobs): HP delay mean {cell(rows[first], 'hp_delay_hp_only_mean_s', ',.1f')} s, "
                f"GAR {cell(rows[first], 'gar_hp_only_mean', '.1%')} (the paper: 68% with HP alone, 93% with spot; Fig. 9). "
                f"Seeds: {len(rows[first])}."
            ),
            "",
            f"![allocation over time and spot completion-time CDF, seed {PLOT_SEED}](spot.png)",
            "",
        ]
    return lines, rows


def claims(rows: dict[str, list[dict]], versus: Any) -> list[str]:
    """Which claims hold at 95%: a cut at all, the paper's -24% (on the ratio of means), HP not delayed."""
    lines = [
        "",
        (
            "**The claims at 95%** (on the ratio of the means and its bootstrap interval; the mean per-seed ratio gives the same verdicts "
            "unless the table says otherwise). *a cut*: the interval lies below 0; *the paper's -24%*: the interval lies at or below "
            "-24% (holds), above it (does not hold) or around it (not established). *HP delay added*: the mean over seeds and its "
            "interval, and the seeds on which not one HP job started later than alone."
        ),
        "",
        "| policy | seeds | ratio of means [95%] | a cut | the paper's -24% | same by the mean per-seed ratio | HP delay added s [95%] | seeds with no HP job later |",
        "|---|---:|---:|---|---|---|---:|---:|",
    ]
    for p, rs in rows.items():
        if p == BASELINE:
            continue
        v = versus(p)
        by_means, by_seed = verdict(v.ratio_of_means_ci, CLAIM), verdict(v.mean_ratio_ci, CLAIM)
        added, low, high = mean_interval([r["hp_delay_added_mean_s"] for r in rs])
        untouched = sum(r["hp_started_later_share"] == 0 for r in rs)
        lines.append(
            f"| {p} | {len(rs)} | {fmt_ci(v.ratio_of_means, v.ratio_of_means_ci)} | "
            f"{'yes' if v.ratio_of_means_ci[1] < 0 else 'no'} | {by_means} | {'yes' if by_means.split(':')[0] == by_seed.split(':')[0] else by_seed} | "
            f"{added:+,.1f} [{low:+,.1f}, {high:+,.1f}] | {untouched} of {len(rs)} |"
        )
    return lines


def parts_table(rows: dict[str, list[dict]]) -> list[str]:
    """The mean completion time taken apart (means over each policy's seeds), against the baseline's on the same seeds."""

    def mean(rs: list[dict], key: str) -> float:
        return statistics.mean(r[key] for r in rs)

    def versus(p: str, key: str) -> str:
        if BASELINE not in rows or p == BASELINE:
            return ""
        return f" ({mean(rows[p], key) / mean(rows[BASELINE][: len(rows[p])], key) - 1:+.1%})"

    lines = [
        "",
        (
            "Where the spot completion time goes (the jobs of the table above; means over each policy's seeds). *first wait*: "
            "submission to first start; *work*: the job's own run time; *rest*: rework after evictions, restart overheads and "
            f"waits after an eviction. *waited > 1 day*: the jobs whose first start came more than {LONG_WAIT_S / 3600:g} h after "
            "submission, their share of the jobs, the share of those that first started after the last arrival (as the cluster "
            f"drains), and their part of the mean; *others*: the mean completion time of the rest. Brackets: against `{BASELINE}` "
            "on the same seeds."
        ),
        "",
        (
            "| policy | spot JCT mean s | first wait s | work s | rest s | waited > 1 day | of those, started after the last arrival "
            "| their part of the mean s | others' JCT mean s | JCT p50 s |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p, rs in rows.items():
        lines.append(
            f"| {p} | {mean(rs, 'lp_jct_mean_s'):,.0f}{versus(p, 'lp_jct_mean_s')} | {mean(rs, 'part_wait_s'):,.0f} | "
            f"{mean(rs, 'part_work_s'):,.0f} | {mean(rs, 'part_rest_s'):,.0f}{versus(p, 'part_rest_s')} | "
            f"{mean(rs, 'long_wait_share'):.1%} | {mean(rs, 'long_wait_late_share'):.0%} | {mean(rs, 'long_wait_part_s'):,.0f} | "
            f"{mean(rs, 'short_jct_mean_s'):,.0f}{versus(p, 'short_jct_mean_s')} | {mean(rs, 'lp_jct_p50_s'):,.0f}{versus(p, 'lp_jct_p50_s')} |"
        )
    return lines


def holdout(args: argparse.Namespace, runs: Runs, main_rows: dict[str, list[dict]]) -> list[str]:
    """Section 2: the key policies on seeds kept apart, against section 1's intervals."""
    seeds = list(range(args.holdout_first_seed, args.holdout_first_seed + args.holdout_seeds))
    title = f"## 2. Held-out seeds {seeds[0]}-{seeds[-1]}" if seeds else "## 2. Held-out seeds"
    tasks = {p: [runs.task(p, s) for s in seeds] for p in KEY_POLICIES}
    if not seeds or not all(runs.have(t) for t in tasks.values()):
        return [title, "", "Not in this run (rerun the command to finish it).", ""]
    rows = {p: runs.get(t) for p, t in tasks.items()}
    lines = [
        title,
        "",
        (
            f"The key policies on {len(seeds)} seeds that section 1 does not use and that nothing here was chosen on, in the same "
            f"settings. *in section 1's interval*: whether the held-out ratio of means falls inside section 1's 95% interval."
        ),
        "",
        "| policy | spot JCT mean s | ratio of means | mean per-seed ratio | per-seed range | in section 1's interval | HP delay added s |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    base = [r["lp_jct_mean_s"] for r in rows[BASELINE]]
    main_base = [r["lp_jct_mean_s"] for r in main_rows.get(BASELINE, [])]
    for p, rs in rows.items():
        if p == BASELINE:
            lines.append(f"| {p} | {cell(rs, 'lp_jct_mean_s', ',.0f')} | - | - | - | - | {cell(rs, 'hp_delay_added_mean_s', '+,.1f')} |")
            continue
        v = paired([r["lp_jct_mean_s"] for r in rs], base)
        inside = "-"
        if p in main_rows and main_base:
            m = paired([r["lp_jct_mean_s"] for r in main_rows[p]], main_base[: len(main_rows[p])])
            inside = "yes" if m.ratio_of_means_ci[0] <= v.ratio_of_means <= m.ratio_of_means_ci[1] else "no"
        lines.append(
            f"| {p} | {cell(rs, 'lp_jct_mean_s', ',.0f')} | {fmt_ci(v.ratio_of_means, v.ratio_of_means_ci)} | "
            f"{fmt_ci(v.mean_ratio, v.mean_ratio_ci)} | [{v.low:+.1%}, {v.high:+.1%}] | {inside} | {cell(rs, 'hp_delay_added_mean_s', '+,.1f')} |"
        )
    return lines + ["", f"{len(seeds)} seeds give a wide interval (brackets, the same bootstrap); it is shown for what it is.", ""]


def load_sweep(args: argparse.Namespace, runs: Runs) -> list[str]:
    """Section 3: SpotGPU against random victims as the offered spot load grows (the HP load fixed)."""
    loads = [float(x) for x in args.load_sweep.split(",")]
    policies = ("spotgpu", BASELINE)
    title = f"## 3. The gain against the offered spot load: {args.load_seeds} seeds, HP load fixed"

    def tasks(p: str, load: float) -> list[dict[str, Any]]:
        at_default = load == runs.settings["spot_load"]  # section 1's replays (with their HP-alone ones)
        return [runs.task(p, s, spot_load=load, alone=at_default) for s in range(args.load_seeds)]

    if not all(runs.have(tasks(p, load)) for p in policies for load in loads):
        return [title, "", "Not in this run (rerun the command to finish it).", ""]
    lines = [
        title,
        "",
        (
            f"The workload of section 1 with the spot load (offered spot GPU-time over the cluster's) swept; the HP load stays "
            f"at {runs.settings['hp_load']:g}. *gain*: mean spot completion time of `spotgpu` over `{BASELINE}`'s - 1 (ratio of the means "
            "over the seeds; per-seed min and max in brackets). *start delay*: a spot job's wait for its first start, the queueing "
            f"part of its completion time. The {runs.settings['spot_load']:g} row is section 1's first {args.load_seeds} seeds."
        ),
        "",
        (
            "| spot load | spot JCT spotgpu s | spot JCT random s | gain | start delay spotgpu s | start delay random s | "
            "GPU-h lost spotgpu | GPU-h lost random | GAR spotgpu |"
        ),
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for load in loads:
        rows = {p: runs.get(tasks(p, load)) for p in policies}

        def mean(p: str, key: str, rows: dict[str, list[dict]] = rows) -> float:  # this load's rows, bound
            return statistics.mean(r[key] for r in rows[p])

        v = paired([r["lp_jct_mean_s"] for r in rows["spotgpu"]], [r["lp_jct_mean_s"] for r in rows[BASELINE]])
        lines.append(
            f"| {load:g} | {mean('spotgpu', 'lp_jct_mean_s'):,.0f} | {mean(BASELINE, 'lp_jct_mean_s'):,.0f} | "
            f"{v.ratio_of_means:+.1%} [{v.low:+.1%}, {v.high:+.1%}] | "
            f"{mean('spotgpu', 'lp_start_delay_mean_s'):,.0f} | {mean(BASELINE, 'lp_start_delay_mean_s'):,.0f} | "
            f"{mean('spotgpu', 'lp_gpu_hours_lost'):,.0f} | {mean(BASELINE, 'lp_gpu_hours_lost'):,.0f} | "
            f"{mean('spotgpu', 'gar_mean'):.1%} |"
        )
    return lines + [""]


def scale(days_list: list[float], policies: list[str]) -> list[str]:
    lines = [
        "## 4. Simulator speed on the whole spot-2026 node list",
        "",
        (
            "`planner simulate spot --nodes spot-2026 --days D --policy P --no-hp-only --no-progress --out F` as a "
            "child process; wall time end to end (generating the workload included) and the process's peak memory."
        ),
        "",
        "| policy | days | jobs | wall s | peak RSS MiB | decisions | spot JCT mean s | GAR |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    growth = []
    for policy in policies:
        points = []
        for days in days_list:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "runs.json"
                command = [str(REPO / ".venv/bin/planner"), "simulate", "spot", "--nodes", "spot-2026", "--days", f"{days:g}"]
                run = run_measured([*command, "--policy", policy, "--no-hp-only", "--no-progress", "--out", str(out)])
                if run.returncode != 0:
                    raise SystemExit(f"simulate failed for {policy}, {days} days: {run.stderr[-2000:]}")
                row = json.loads(out.read_text())["runs"][0]
            points.append((row["jobs"], run.wall_s))
            lines.append(
                f"| {policy} | {days:g} | {row['jobs']:,} | {run.wall_s:.1f} | {run.peak_rss_mib:,.0f} | {row['decisions']:,} | "
                f"{row['lp_jct_mean_s']:,.0f} | {row['gar_mean']:.1%} |"
            )
            print(f"scale {policy} {days} days: {run.wall_s:.1f} s, {run.peak_rss_mib:.0f} MiB", flush=True)
        if len(points) >= 2:
            (j0, w0), (j1, w1) = points[0], points[-1]
            growth.append(f"{policy}: wall time ~ jobs^{math.log(w1 / w0) / math.log(j1 / j0):.2f} between {j0:,} and {j1:,} jobs.")
    return lines + ["", "Growth: " + " ".join(growth) if growth else "", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds of the key policies (0..n-1)")
    parser.add_argument("--other-seeds", type=int, default=5, help="seeds of the other policies (0..n-1)")
    parser.add_argument("--holdout-seeds", type=int, default=5)
    parser.add_argument("--holdout-first-seed", type=int, default=100)
    parser.add_argument("--policies", default=",".join([*POLICIES, "least-allocated+k8s-default"]))
    parser.add_argument("--nodes", default=None, help=f"override the preset's {SETTINGS['nodes']} (a quick check; the report says so)")
    parser.add_argument("--days", type=float, default=None, help=f"override the preset's {SETTINGS['days']:g} (as --nodes)")
    parser.add_argument("--warmup-days", type=float, default=None, help=f"override the preset's {SETTINGS['warmup_days']:g} (as --nodes)")
    parser.add_argument("--workers", type=int, default=1, help="replays at a time")
    parser.add_argument("--executor", choices=("process", "ray"), default="process")
    parser.add_argument("--cache", default=str(RESULTS / "spot_runs.json"), help="every replay's row, kept between runs")
    parser.add_argument("--load-sweep", default="0.2,0.25,0.3,0.35,0.4", help="spot loads for section 3")
    parser.add_argument("--load-seeds", type=int, default=3)
    parser.add_argument("--skip-load-sweep", action="store_true")
    parser.add_argument("--scale-days", default="1,3,7")
    parser.add_argument("--scale-policies", default="spotgpu,spotgpu-isolated", help="policies timed in section 4")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--only-scale", action="store_true", help="section 4 alone (spot_speed.md)")
    parser.add_argument("--report-only", action="store_true", help="write spot.md from the cache, running nothing (an unfinished run's state)")
    args = parser.parse_args()
    if args.skip_scale and args.only_scale:
        parser.error("--skip-scale and --only-scale exclude each other")
    args.policies = args.policies.split(",")
    if BASELINE not in args.policies:
        parser.error(f"--policies: must include the baseline {BASELINE}")
    command = " ".join(["benchmarks/spot.py", *(a for a in sys.argv[1:] if a != "--report-only")])
    load_at_start = os.getloadavg()[0]

    def header(title: str) -> list[str]:
        return [
            f"# {title}",
            "",
            f"Machine: {machine()}; {code_version()}; load average at start {load_at_start:.2f}. Reproduce: `.venv/bin/python {command}`.",
            "",
        ]

    if args.report_only:
        write_report(args, Runs(Path(args.cache), None, 1, settings(args)), header)
        return
    if not args.only_scale:
        with executor(args.workers, args.executor) as run:
            runs = Runs(Path(args.cache), run, args.workers, settings(args))
            key = [p for p in args.policies if p in KEY_POLICIES]
            others = [p for p in args.policies if p not in KEY_POLICIES]
            holdout_seeds = range(args.holdout_first_seed, args.holdout_first_seed + args.holdout_seeds)
            phases = [
                [runs.task(p, s) for s in range(args.seeds) for p in key],
                [runs.task(p, s) for s in holdout_seeds for p in KEY_POLICIES if p in args.policies],
                [runs.task(p, s) for s in range(args.other_seeds) for p in others],
            ]
            if not args.skip_load_sweep:
                loads = [float(x) for x in args.load_sweep.split(",") if float(x) != SETTINGS["spot_load"]]
                phases.append([runs.task(p, s, spot_load=x, alone=False) for x in loads for s in range(args.load_seeds) for p in ("spotgpu", BASELINE)])
            for phase in phases:  # the report is rewritten after each phase: a stopped run leaves a consistent file
                runs.get(phase)
                write_report(args, runs, header)
        if len(runs.replays) == len(args.policies):
            first = {"hp-only": runs.replays[args.policies[0]]["alone"], **{p: runs.replays[p]["replay"] for p in args.policies}}
            plot_replays(first, str(RESULTS / "spot.png"))
        else:
            print(f"spot.png kept: seed {PLOT_SEED}'s replays came from the cache (delete it to redraw)")
    if not args.skip_scale:
        lines = header("Spot simulation: speed") + scale([float(d) for d in args.scale_days.split(",")], args.scale_policies.split(","))
        (RESULTS / "spot_speed.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS / 'spot_speed.md'}")


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """The preset's settings with the overrides given (``--nodes``, ``--days``, ``--warmup-days``)."""
    given = {"nodes": args.nodes, "days": args.days, "warmup_days": args.warmup_days}
    return {**SETTINGS, **{k: v for k, v in given.items() if v is not None}}


def settings_text(args: argparse.Namespace) -> str:
    changed = {k: v for k, v in settings(args).items() if v != SETTINGS[k]}
    text = f"`--preset {PRESET}`: `{preset_text(PRESET)}`"
    return text + (f", overridden here: {', '.join(f'{k} {v}' for k, v in changed.items())} (not the published settings)" if changed else "")


def write_report(args: argparse.Namespace, runs: Runs, header: Any) -> None:
    lines = header("Spot simulation") + [" ".join(line.strip() for line in __doc__.split("\n\n")[1].splitlines()), ""]
    lines += [
        (
            f"One command reproduces every number here: `.venv/bin/python benchmarks/spot.py --skip-scale` (add `--workers N` to run "
            f"N replays at a time); one replay of it: `planner simulate spot --preset {PRESET} --policy spotgpu-isolated --policy random "
            "--seed 0` (the same rows as seed 0 here). The per-seed rows: "
            f"[{Path(args.cache).name}]({Path(args.cache).name})."
        ),
        "",
    ]
    ablation_lines, rows = ablation(args, runs)
    lines += ablation_lines + holdout(args, runs, rows)
    if not args.skip_load_sweep:
        lines += load_sweep(args, runs)
    lines += ["The simulator's speed (section 4) is in [spot_speed.md](spot_speed.md).", ""]
    (RESULTS / "spot.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS / 'spot.md'}", flush=True)


if __name__ == "__main__":
    main()
