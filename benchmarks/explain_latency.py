"""How long `planner explain` takes per pending job against cluster size, with and without the time
limit `POST /v1/explain` runs under (issue 43: answer at once, or bound it).

For each snapshot (the bundled `instances/asi-500.json` and seeded ASI-like ones, each with large
pending jobs added by `planner.instances.batch.add_large_jobs`), explains up to `--jobs` pending jobs
in this process with `explain_job`, once without a limit and once with the service's
`EXPLAIN_TIME_LIMIT_S`, and records wall and CPU seconds (`time.process_time`: on a shared machine
the CPU time is what the work costs) and the remedy; writes benchmarks/results/explain_latency.md.

    .venv/bin/python benchmarks/explain_latency.py [--sizes 5000 40000] [--jobs 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import REPO, RESULTS, machine

from planner.api.requests import EXPLAIN_TIME_LIMIT_S
from planner.engine.explain import ExplainOptions, explain_job, pending_jobs
from planner.instances.asi import generate_asi
from planner.instances.batch import add_large_jobs
from planner.snapshot import load_cluster

LARGE_JOBS = 4


def measure(cluster, jobs: int, limit: float | None) -> list[tuple[str, float, float, str]]:
    rows = []
    names = [n for n in pending_jobs(cluster) if any(p.job == n for p in cluster.pods)][:jobs]
    for name in names:
        wall, cpu = time.perf_counter(), time.process_time()
        out = explain_job(cluster, name, ExplainOptions(time_limit_s=limit))
        rows.append((name, time.perf_counter() - wall, time.process_time() - cpu, f"{out['reason']['code']} / {out['remedy']['code']}"))
        print(f"  {name} limit {limit}: wall {rows[-1][1]:.2f} s, CPU {rows[-1][2]:.2f} s, {rows[-1][3]}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[5000, 40000], help="generated ASI-like snapshots (asi-500.json is always measured)")
    parser.add_argument("--jobs", type=int, default=4, help="pending jobs explained per snapshot")
    args = parser.parse_args()
    snapshots = [("instances/asi-500.json", add_large_jobs(load_cluster(REPO / "instances" / "asi-500.json"), LARGE_JOBS, 0))]
    snapshots += [
        (f"generate_asi({n:,}, seed=0, pending_jobs=5)", add_large_jobs(generate_asi(n, seed=0, pending_jobs=5, allocation=0.7), LARGE_JOBS, 0))
        for n in args.sizes
    ]
    lines = [
        "# `planner explain` latency",
        "",
        f"Machine: {machine()}. Each snapshot gets {LARGE_JOBS} large pending jobs (`add_large_jobs(cluster, {LARGE_JOBS}, seed=0)`);",
        f"up to {args.jobs} pending jobs are explained in one process (`explain_job`), first without a time limit, then with",
        f"`time_limit_s={EXPLAIN_TIME_LIMIT_S:g}` as `POST /v1/explain` runs it. CPU is this process's CPU time (`time.process_time`),",
        "wall the elapsed time: on a loaded machine wall is the larger by the load.",
        "",
        f"Reproduce: `.venv/bin/python benchmarks/explain_latency.py --sizes {' '.join(map(str, args.sizes))} --jobs {args.jobs}`",
        "",
        "| snapshot | nodes | job | no limit: wall s | CPU s | reason / remedy | limit: wall s | CPU s | reason / remedy |",
        "|---|---:|---|---:|---:|---|---:|---:|---|",
    ]
    for label, cluster in snapshots:
        print(f"{label}: {len(cluster.nodes):,} nodes", flush=True)
        free, bounded = measure(cluster, args.jobs, None), measure(cluster, args.jobs, EXPLAIN_TIME_LIMIT_S)
        for (name, w, c, what), (_, lw, lc, lwhat) in zip(free, bounded, strict=True):
            lines.append(f"| {label} | {len(cluster.nodes):,} | {name} | {w:.2f} | {c:.2f} | {what} | {lw:.2f} | {lc:.2f} | {lwhat} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "explain_latency.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'explain_latency.md'}")


if __name__ == "__main__":
    main()
