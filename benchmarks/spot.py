"""Spot simulation (issue 14) -> benchmarks/results/spot.md, spot.png (sections 1-2), spot_speed.md (3).

1. The ASI ablation: every policy replays the same seeded workload on the spot-2026 cluster
   (``planner.instances.spot_workload``), ``--seeds`` seeds; the HP jobs alone are replayed too under
   each policy, so its HP delay is compared with a replay of the same policy where no spot job exists. Rows come from
   ``planner.simulate.metrics.replay_row``; the table gives the mean over seeds and the min-max.
   SpotGPU's claim (ASI Sec. 4.2): spot completion time -24% against the paper's baseline (no
   co-location or eviction awareness, random victims: here ``random``, whose placement is the
   least-idle rule alone), HP not affected.
2. The gain against the offered spot load: ``spotgpu`` and ``random`` on the same cluster and HP load
   with the spot load swept (``--load-sweep``, ``--load-seeds`` seeds each), the default load's point
   taken from the ablation's first seeds; the spot jobs' wait for their first start shows how much
   of the completion time is queueing.
3. Simulator speed: ``planner simulate spot`` as a child process on the whole node list for 1, 3 and
   7 days (``--scale-days``), per policy (``--scale-policies``), wall time and peak memory, and the growth exponent of wall
   time in the number of jobs. Its own file, with its own machine line: a wall time is a reading of
   one machine on one day, and ``--only-scale`` takes it again without the ablation's hour and a half.

    .venv/bin/python benchmarks/spot.py [--seeds 5] [--days 4] [--warmup-days 1] [--nodes spot-2026|N] [--warm-start|--no-warm-start]
        [--load-sweep 0.2,0.25,0.3,0.35,0.4] [--load-seeds 3] [--skip-load-sweep] [--scale-days 1,3,7]
        [--scale-policies spotgpu,spotgpu-isolated] [--skip-scale | --only-scale]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import REPO, RESULTS, code_version, machine, run_measured

from planner.instances.spot_workload import SPOT_LOAD, spot2026_cluster, spot2026_jobs
from planner.simulate.metrics import replay_row
from planner.simulate.plots import plot_replays
from planner.simulate.spot import POLICIES, simulate

BASELINE = "random"


def ablation(args: argparse.Namespace) -> tuple[list[str], dict]:
    count = None if args.nodes == "spot-2026" else int(args.nodes)
    horizon, warmup = args.days * 86400, args.warmup_days * 86400
    rows: dict[str, list[dict]] = {p: [] for p in args.policies}
    first: dict = {}
    described = None
    for seed in range(args.seeds):
        nodes = spot2026_cluster(count, seed=seed)
        jobs = spot2026_jobs(nodes, args.days, seed=seed, warm_start=args.warm_start)
        if described is None:
            hp = sum(j.priority == "HP" for j in jobs)
            described = (
                f"{len(nodes):,} nodes, {sum(n.gpus for n in nodes):,} GPUs; seed 0: {len(jobs):,} jobs over {args.days:g} "
                f"day(s), {hp:,} HP and {len(jobs) - hp:,} spot, {sum(bool(j.standby_windows_s) for j in jobs):,} HP jobs with "
                f"standby windows"
                + (f"; {sum(j.name.split('-')[-1].startswith('w') for j in jobs):,} of all the jobs are the warm start's" if args.warm_start else "")
            )
        hp_jobs = [j for j in jobs if j.priority == "HP"]
        for policy in args.policies:
            start = time.perf_counter()
            alone = simulate(nodes, hp_jobs, policy, seed=seed)  # the HP jobs alone, under the same policy
            print(f"seed {seed}: {policy}, HP jobs alone {time.perf_counter() - start:.1f} s", flush=True)
            if seed == 0 and policy == args.policies[0]:
                first["hp-only"] = alone
            start = time.perf_counter()
            replay = simulate(nodes, jobs, policy, seed=seed, restart_overhead_s=args.restart_overhead_s)
            row = {
                **replay_row(replay, horizon, alone, from_s=warmup),
                "wall_s": time.perf_counter() - start,
                **completion_parts(replay, jobs, warmup, horizon),
            }
            rows[policy].append(row)
            if seed == 0:
                first[policy] = replay
            print(
                policy,
                seed,
                {k: row[k] for k in ("lp_jct_mean_s", "lp_gpu_hours_lost", "hp_delay_growth", "hp_delay_added_mean_s", "gar_mean", "wall_s")},
                flush=True,
            )
    base = statistics.mean(r["lp_jct_mean_s"] for r in rows[BASELINE]) if BASELINE in rows else None

    def cell(policy: str, key: str, fmt: str, scale: float = 1.0) -> str:
        values = [r[key] * scale for r in rows[policy] if r[key] is not None]
        if not values:
            return "-"
        return f"{format(statistics.mean(values), fmt)} [{format(min(values), fmt)}, {format(max(values), fmt)}]"

    lines = [
        (
            f"## 1. The ablation: {args.seeds} seeds, {args.days:g} days ({'warm' if args.warm_start else 'cold'} start), the first "
            f"{args.warmup_days:g} left out, restart overhead {args.restart_overhead_s:g} s"
        ),
        "",
        f"Cluster and workload: {described}. Mean over seeds [min, max]. *vs {BASELINE}*: mean spot completion time "
        f"against the `{BASELINE}` policy's (the paper's baseline). *HP alone*: the mean HP start delay in a replay of the "
        "HP jobs alone under the same policy (policies place HP jobs differently, so each has its own); *HP delay growth*: "
        "HP start delay against that replay (mean of the per-seed ratios - 1; 0 = not delayed; `-` when HP jobs alone never "
        "waited on some seed, where no ratio exists); *HP delay added*: the mean HP start delay minus the HP-alone replay's; "
        "*HP started later*: the share of HP jobs that started later than in the HP-alone replay. *vs random* gives the ratio of the means "
        "over seeds and, in brackets, the per-seed ratios' range (a seed gives every policy the same jobs). Jobs count when submitted after "
        + (
            "the warm-up; the cluster starts with the jobs a stationary past leaves running (``warm_start``: submitted at 0 with "
            "the rest of their work; without it the HP load climbs over the first 3-4 days, jobs running up to 3 days). "
            if args.warm_start
            else "the warm-up (the cluster starts empty and jobs run up to 3 days). "
        )
        + "Allocation is averaged over the same span. "
        "Wall time is per replay, with other work on the machine.",
        "",
        (
            "| policy | spot JCT mean s | vs random | spot JCT p90 s | spot GPU-h lost | evictions per spot job | evicted twice+ | "
            "HP delay mean s | HP alone s | HP delay growth | HP delay added s | HP started later | GAR with spot | standby harvested | "
            "wall s |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for policy in args.policies:
        change = "-"
        if base is not None:
            per_seed = [r["lp_jct_mean_s"] / b["lp_jct_mean_s"] - 1 for r, b in zip(rows[policy], rows[BASELINE])]
            change = f"{statistics.mean(r['lp_jct_mean_s'] for r in rows[policy]) / base - 1:+.1%} [{min(per_seed):+.1%}, {max(per_seed):+.1%}]"
        lines.append(
            f"| {policy} | {cell(policy, 'lp_jct_mean_s', ',.0f')} | {change} | {cell(policy, 'lp_jct_p90_s', ',.0f')} | "
            f"{cell(policy, 'lp_gpu_hours_lost', ',.0f')} | {cell(policy, 'lp_evictions_per_job', '.3f')} | "
            f"{cell(policy, 'lp_evicted_twice_share', '.1%')} | {cell(policy, 'hp_delay_mean_s', ',.1f')} | "
            f"{cell(policy, 'hp_delay_hp_only_mean_s', ',.1f')} | "
            f"{cell(policy, 'hp_delay_growth', '+.2%') if all(r['hp_delay_growth'] is not None for r in rows[policy]) else '-'} | "
            f"{cell(policy, 'hp_delay_added_mean_s', '+,.1f')} | {cell(policy, 'hp_started_later_share', '.2%')} | {cell(policy, 'gar_mean', '.1%')} | {cell(policy, 'standby_harvested', '.1%')} | "
            f"{statistics.mean(r['wall_s'] for r in rows[policy]):.1f} |"
        )
    lines += parts_table(args.policies, rows)
    some = rows[args.policies[0]]
    lines += [
        "",
        (
            f"HP alone under `{args.policies[0]}` (the replay without spot jobs): HP delay mean "
            f"{cell(args.policies[0], 'hp_delay_hp_only_mean_s', ',.1f')} s, "
            f"GAR {cell(args.policies[0], 'gar_hp_only_mean', '.1%')} (the paper: 68% with HP alone, 93% with spot; Fig. 9). "
            f"Seeds: {len(some)}."
        ),
        "",
        "![allocation over time and spot completion-time CDF, seed 0](spot.png)",
        "",
    ]
    return lines, first, rows


LONG_WAIT_S = 86400.0


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


def parts_table(policies: list[str], rows: dict[str, list[dict]]) -> list[str]:  # type: ignore[type-arg]
    """The mean completion time taken apart (means over seeds), against the baseline's."""

    def mean(policy: str, key: str) -> float:
        return statistics.mean(r[key] for r in rows[policy])

    def versus(policy: str, key: str) -> str:
        return f" ({mean(policy, key) / mean(BASELINE, key) - 1:+.1%})" if BASELINE in rows and policy != BASELINE else ""

    lines = [
        "",
        (
            f"Where the spot completion time goes (the jobs of the table above; means over seeds). *first wait*: submission "
            f"to first start; *work*: the job's own run time; *rest*: rework after evictions, restart overheads and waits after an "
            f"eviction. *waited > 1 day*: the jobs whose first start came more than {LONG_WAIT_S / 3600:g} h after submission, their "
            f"share of the jobs, the share of those that first started after the last arrival (as the cluster drains), and their "
            f"part of the mean; "
            f"*others*: the mean completion time of the rest. Brackets: against `{BASELINE}`. The target is the mean over all "
            "jobs (first column); the other columns explain it."
        ),
        "",
        (
            "| policy | spot JCT mean s | first wait s | work s | rest s | waited > 1 day | of those, started after the last arrival "
            "| their part of the mean s | others' JCT mean s | JCT p50 s |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for policy in policies:
        lines.append(
            f"| {policy} | {mean(policy, 'lp_jct_mean_s'):,.0f}{versus(policy, 'lp_jct_mean_s')} | {mean(policy, 'part_wait_s'):,.0f} | "
            f"{mean(policy, 'part_work_s'):,.0f} | {mean(policy, 'part_rest_s'):,.0f}{versus(policy, 'part_rest_s')} | "
            f"{mean(policy, 'long_wait_share'):.1%} | {mean(policy, 'long_wait_late_share'):.0%} | {mean(policy, 'long_wait_part_s'):,.0f} | "
            f"{mean(policy, 'short_jct_mean_s'):,.0f}{versus(policy, 'short_jct_mean_s')} | {mean(policy, 'lp_jct_p50_s'):,.0f}{versus(policy, 'lp_jct_p50_s')} |"
        )
    return lines


def load_sweep(args: argparse.Namespace, ablation_rows: dict[str, list[dict]]) -> list[str]:
    """SpotGPU against random victims as the offered spot load grows (the HP load fixed)."""
    count = None if args.nodes == "spot-2026" else int(args.nodes)
    horizon, warmup = args.days * 86400, args.warmup_days * 86400
    loads = [float(x) for x in args.load_sweep.split(",")]
    policies = ("spotgpu", BASELINE)
    lines = [
        f"## 2. The gain against the offered spot load: {args.load_seeds} seeds, HP load fixed",
        "",
        (
            f"The workload of section 1 with the spot load (offered spot GPU-time over the cluster's) swept; the HP load stays "
            f"at the generator's default. *gain*: mean spot completion time of `spotgpu` over `{BASELINE}`'s - 1 (means over the seeds; "
            "per-seed min and max in brackets). *start delay*: a spot job's wait for its first start, the queueing part of its "
            f"completion time. The {SPOT_LOAD:g} row is section 1's first {args.load_seeds} seeds."
        ),
        "",
        (
            "| spot load | spot JCT spotgpu s | spot JCT random s | gain | start delay spotgpu s | start delay random s | "
            "GPU-h lost spotgpu | GPU-h lost random | GAR spotgpu |"
        ),
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for load in loads:
        rows: dict[str, list[dict]] = {p: [] for p in policies}
        for seed in range(args.load_seeds):
            reuse = load == SPOT_LOAD and all(len(ablation_rows.get(p, [])) > seed for p in policies)
            if reuse:
                for p in policies:
                    rows[p].append(ablation_rows[p][seed])
                continue
            nodes = spot2026_cluster(count, seed=seed)
            jobs = spot2026_jobs(nodes, args.days, seed=seed, spot_load=load, warm_start=args.warm_start)
            for p in policies:
                replay = simulate(nodes, jobs, p, seed=seed, restart_overhead_s=args.restart_overhead_s)
                rows[p].append(replay_row(replay, horizon, from_s=warmup))
            print(f"load {load:g} seed {seed}: " + ", ".join(f"{p} {rows[p][-1]['lp_jct_mean_s']:,.0f} s" for p in policies), flush=True)

        def mean(p: str, key: str, rows: dict[str, list[dict]] = rows) -> float:  # this load's rows, bound
            return statistics.mean(r[key] for r in rows[p])

        gains = [a["lp_jct_mean_s"] / b["lp_jct_mean_s"] - 1 for a, b in zip(rows["spotgpu"], rows[BASELINE])]
        lines.append(
            f"| {load:g} | {mean('spotgpu', 'lp_jct_mean_s'):,.0f} | {mean(BASELINE, 'lp_jct_mean_s'):,.0f} | "
            f"{mean('spotgpu', 'lp_jct_mean_s') / mean(BASELINE, 'lp_jct_mean_s') - 1:+.1%} [{min(gains):+.1%}, {max(gains):+.1%}] | "
            f"{mean('spotgpu', 'lp_start_delay_mean_s'):,.0f} | {mean(BASELINE, 'lp_start_delay_mean_s'):,.0f} | "
            f"{mean('spotgpu', 'lp_gpu_hours_lost'):,.0f} | {mean(BASELINE, 'lp_gpu_hours_lost'):,.0f} | "
            f"{mean('spotgpu', 'gar_mean'):.1%} |"
        )
    return lines + [""]


def scale(days_list: list[float], policies: list[str]) -> list[str]:
    lines = [
        "## 3. Simulator speed on the whole spot-2026 node list",
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
                run = run_measured(
                    [
                        str(REPO / ".venv/bin/planner"),
                        "simulate",
                        "spot",
                        "--nodes",
                        "spot-2026",
                        "--days",
                        f"{days:g}",
                        "--policy",
                        policy,
                        "--no-hp-only",
                        "--no-progress",
                        "--out",
                        str(out),
                    ]
                )
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
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--days", type=float, default=4.0)
    parser.add_argument("--warmup-days", type=float, default=1.0)
    parser.add_argument("--nodes", default="spot-2026")
    parser.add_argument("--policies", default=",".join([*POLICIES, "least-allocated+k8s-default"]))
    parser.add_argument("--restart-overhead-s", type=float, default=60.0)
    parser.add_argument(
        "--warm-start",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="start the ablation's replays from a stationary cluster (default) or empty (--no-warm-start)",
    )
    parser.add_argument("--load-sweep", default="0.2,0.25,0.3,0.35,0.4", help="spot loads for section 2")
    parser.add_argument("--load-seeds", type=int, default=3)
    parser.add_argument("--skip-load-sweep", action="store_true")
    parser.add_argument("--scale-days", default="1,3,7")
    parser.add_argument("--scale-policies", default="spotgpu,spotgpu-isolated", help="policies timed in section 3")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--only-scale", action="store_true", help="section 3 alone (spot_speed.md)")
    args = parser.parse_args()
    if args.skip_scale and args.only_scale:
        parser.error("--skip-scale and --only-scale exclude each other")
    args.policies = args.policies.split(",")
    command = " ".join(["benchmarks/spot.py", *sys.argv[1:]])

    def header(title: str) -> list[str]:
        return [
            f"# {title}",
            "",
            f"Machine: {machine()}; {code_version()}; load average at start {os.getloadavg()[0]:.2f}. Reproduce: `.venv/bin/python {command}`.",
            "",
        ]

    if not args.only_scale:
        lines = header("Spot simulation") + [" ".join(line.strip() for line in __doc__.split("\n\n")[1].splitlines()), ""]
        ablation_lines, first, ablation_rows = ablation(args)
        lines += ablation_lines
        plot_replays(first, str(RESULTS / "spot.png"))
        if not args.skip_load_sweep:
            lines += load_sweep(args, ablation_rows)
        lines += ["The simulator's speed (section 3) is in [spot_speed.md](spot_speed.md).", ""]
        (RESULTS / "spot.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS / 'spot.md'}")
    if not args.skip_scale:
        lines = header("Spot simulation: speed") + scale([float(d) for d in args.scale_days.split(",")], args.scale_policies.split(","))
        (RESULTS / "spot_speed.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {RESULTS / 'spot_speed.md'}")


if __name__ == "__main__":
    main()
