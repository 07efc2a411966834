"""Kant's queueing experiment on an 8,000-GPU homogeneous cluster -> benchmarks/results/queueing.md.

1,000 nodes x 8 GPUs in leaf groups of 32 nodes; a seeded Kant-shaped training workload
(``planner.simulate.queueing.kant_jobs``: jobs of 1-2048 GPUs, 91% under 8 GPUs) offered at 95% of
the GPUs for 14 days, the first 2 left out; strict FIFO, best-effort FIFO and backfill (timeout 1 h)
under spread, binpack and E-Binpack placement; 5 seeds. The paper (Kant §5): backfill against strict
FIFO, median SOR +3.6%; E-Binpack, GFR 8.5% -> under 1%.

Run: ``.venv/bin/python benchmarks/queueing.py [--seeds 5] [--days 14]`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _measure import RESULTS, code_version, machine  # noqa: E402

from planner.executors import executor  # noqa: E402
from planner.simulate.queueing import PLACEMENTS, POLICIES, Cluster, kant_jobs, queue_row, replay  # noqa: E402

BUCKETS = ("1", "4", "8", "64", "256", "1024", "2048")


def one(task: tuple[str, str, int, float, float]) -> dict:  # type: ignore[type-arg]
    policy, placement, seed, days, warmup = task
    cluster = Cluster()
    jobs = kant_jobs(cluster, days * 24, 0.95, seed)
    start = time.perf_counter()
    run = replay(cluster, jobs, policy, placement, 3600.0, horizon_s=days * 86400, measure_from_s=warmup * 86400)
    return {"policy": policy, "placement": placement, "seed": seed, "wall_s": time.perf_counter() - start, **queue_row(run)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--days", type=float, default=14)
    parser.add_argument("--warmup-days", type=float, default=2)
    args = parser.parse_args()
    tasks = [(p, q, s, args.days, args.warmup_days) for q in PLACEMENTS for p in POLICIES for s in range(args.seeds)]
    with executor() as run:
        rows = run(one, tasks)

    def med(p: str, q: str, key: str) -> float:
        return statistics.median(r[key] for r in rows if r["policy"] == p and r["placement"] == q)

    lines = ["# Kant's queueing experiment (8,000 GPUs, jobs of 1-2048 GPUs)", "",
             f"Machine: {machine()}; planner at {code_version()}. Reproduce: `.venv/bin/python benchmarks/queueing.py --seeds {args.seeds} "
             f"--days {args.days:g} --warmup-days {args.warmup_days:g}`. 1,000 nodes x 8 GPUs, leaf groups of 32 nodes; offered load 0.95; "
             "backfill timeout 1 h; metrics over the days after the warm-up; medians over seeds (GAR and SOR coincide here: allocated "
             "GPU-time over available, accrued from binding).", "",
             "| policy | placement | SOR (median) | vs strict FIFO | GFR | preemptions | GPU-h lost to preemption | JWTD h: " + " | ".join(BUCKETS) + " | JTTEd nodes @256 | groups @256 | wall s |",
             "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(BUCKETS) + "---:|---:|---:|"]
    for q in PLACEMENTS:
        base = med("strict-fifo", q, "sor")
        for p in POLICIES:
            mine = [r for r in rows if r["policy"] == p and r["placement"] == q]
            waits = []
            for b in BUCKETS:
                values = [r["jwtd_s"].get(b) for r in mine if r["jwtd_s"].get(b) is not None]
                waits.append(f"{statistics.median(values) / 3600:.2f}" if values else "-")
            nodes = [r["jtted_nodes"].get("256") for r in mine if r["jtted_nodes"].get("256") is not None]
            groups = [r["jtted_groups"].get("256") for r in mine if r["jtted_groups"].get("256") is not None]
            lines.append(f"| {p} | {q} | {med(p, q, 'sor'):.4f} | {100 * (med(p, q, 'sor') / base - 1):+.1f}% | {med(p, q, 'gfr'):.4f} | "
                         f"{med(p, q, 'preemptions'):,.0f} | {med(p, q, 'lost_gpu_hours'):,.0f} | " + " | ".join(waits) +
                         f" | {statistics.median(nodes) if nodes else float('nan'):.3f} | {statistics.median(groups) if groups else float('nan'):.3f} | "
                         f"{statistics.fmean(r['wall_s'] for r in mine):.1f} |")
    lines += ["", "JWTD: mean wait from submission to (final) start per job-size bucket (GPUs, powers of two), median over seeds. "
              "JTTEd: nodes used over ceil(GPUs / 8), groups over the fewest groups those nodes need.", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "queueing.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
