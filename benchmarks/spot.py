"""Spot simulation (issue 14), first cut -> benchmarks/results/spot.md.

A synthetic workload on a small cluster, replayed by ``planner.simulate.spot.simulate`` under each
policy, several seeds. This is NOT yet the issue's benchmark: the workload generator on the spot-2026
node list, standby windows and the 7-day scale run are still to come; the numbers here only compare
the policies on the same synthetic arrivals.

Workload (seeded): ``--jobs`` jobs arriving uniformly over ``--window-s`` seconds; 30% HP (no
checkpoints), 70% spot (checkpoint every 120 or 300 s, or none, equally likely); 1 or 2 workers
(2 in a third of jobs) of 1, 2, 4 or 8 GPUs; work uniform in [100, 2000) s. Cluster: ``--nodes``
8-GPU nodes, 8 per access switch. Metrics per (policy, seed): spot completion time (mean, p90), spot
GPU-hours lost to preemption, share of spot jobs evicted more than once, HP delay (start - submit,
mean) and the HP delay of an HP-only replay of the same arrivals, wall time.

    .venv/bin/python benchmarks/spot.py [--seeds 5] [--jobs 300] [--nodes 16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import RESULTS, code_version, machine  # noqa: E402

from planner.cluster import Node  # noqa: E402
from planner.instances.spot_workload import synthetic_jobs  # noqa: E402
from planner.simulate.spot import simulate  # noqa: E402

POLICIES = ("spotgpu", "spotgpu-paper", "flextopo", "k8s-default", "volcano", "random")


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--window-s", type=int, default=4000)
    args = parser.parse_args()
    nodes = [Node(name=f"n{i:03d}", gpus=8, cpus=96, memory_gib=512, asw=f"s{i // 8}") for i in range(args.nodes)]
    rows = {p: [] for p in POLICIES}
    for seed in range(args.seeds):
        jobs = synthetic_jobs(seed, args.jobs, args.window_s)
        hp_only = simulate(nodes, [j for j in jobs if j.priority == "HP"], "spotgpu")
        hp_alone = statistics.mean(o.first_start_s - o.submit_s for o in hp_only.outcomes.values())
        for policy in POLICIES:
            start = time.perf_counter()
            replay = simulate(nodes, jobs, policy, seed=seed)
            wall = time.perf_counter() - start
            spot = [o for o in replay.outcomes.values() if o.priority == "LP"]
            jct = [o.finish_s - o.submit_s for o in spot if o.finish_s is not None]
            hp = [o.first_start_s - o.submit_s for o in replay.outcomes.values() if o.priority == "HP" and o.first_start_s is not None]
            rows[policy].append({"jct_mean": statistics.mean(jct), "jct_p90": p90(jct), "lost_h": replay.lost_gpu_s / 3600,
                                 "twice": sum(o.evictions > 1 for o in spot) / len(spot), "hp_delay": statistics.mean(hp),
                                 "hp_alone": hp_alone, "unfinished": sum(o.finish_s is None for o in replay.outcomes.values()),
                                 "wall": wall, "decisions": replay.decisions})
            print(policy, seed, {k: round(v, 2) for k, v in rows[policy][-1].items()}, flush=True)
    base = statistics.mean(r["jct_mean"] for r in rows["random"])
    lines = [
        "# Spot simulation (first cut: synthetic workload)", "",
        f"Machine: {machine()}; {code_version()}. Reproduce: `.venv/bin/python benchmarks/spot.py --seeds {args.seeds} "
        f"--jobs {args.jobs} --nodes {args.nodes}`.", "",
        __doc__.split("\n\n")[2].replace("\n", " "), "",
        f"{args.jobs} jobs over {args.window_s:,} s on {args.nodes} 8-GPU nodes; {args.seeds} seeds; mean over seeds "
        "(min-max in brackets). *vs random*: mean spot completion time against the random-victim policy's.", "",
        "| policy | spot JCT mean s | vs random | spot JCT p90 s | spot GPU-h lost | spot evicted twice+ | HP delay mean s | HP delay, HP-only replay | unfinished | wall s (mean) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(policy: str, key: str, fmt: str) -> str:
        values = [r[key] for r in rows[policy]]
        return f"{format(statistics.mean(values), fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"

    for policy in POLICIES:
        change = statistics.mean(r["jct_mean"] for r in rows[policy]) / base - 1
        lines.append(f"| {policy} | {cell(policy, 'jct_mean', ',.0f')} | {change:+.1%} | {cell(policy, 'jct_p90', ',.0f')} | "
                     f"{cell(policy, 'lost_h', '.2f')} | {cell(policy, 'twice', '.1%')} | {cell(policy, 'hp_delay', '.1f')} | "
                     f"{cell(policy, 'hp_alone', '.1f')} | {sum(r['unfinished'] for r in rows[policy])} | "
                     f"{statistics.mean(r['wall'] for r in rows[policy]):.1f} |")
    (RESULTS / "spot.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS / 'spot.md'}")


if __name__ == "__main__":
    main()
