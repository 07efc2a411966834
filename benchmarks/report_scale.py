"""Time and peak memory of `planner report` against cluster size, up to the ASI paper's 37,707 nodes.

Generates seeded ASI-like snapshots (cached under benchmarks/.cache), runs the real command in a
child process for each, and writes benchmarks/results/report_scale.md.

    .venv/bin/python benchmarks/report_scale.py [--sizes 1000 5000 10000 37707] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import RESULTS, cached_asi, machine, run_measured

PLANNER = str(Path(sys.executable).with_name("planner"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000, 37707])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for nodes in args.sizes:
        path = cached_asi(nodes, args.seed)
        run = run_measured([PLANNER, "report", str(path), "--json", "--shape", "8g64c"])
        if run.returncode != 0:
            sys.exit(f"planner report failed on {path}: {run.stderr}")
        summary = json.loads(run.stdout)["summary"]
        rows.append((nodes, summary, path.stat().st_size / 2**20, run))
        print(f"{nodes} nodes: {run.wall_s:.2f} s, {run.peak_rss_mib:.0f} MiB", flush=True)
    lines = [
        "# `planner report` at scale",
        "",
        f"Machine: {machine()}. Command: `planner report SNAPSHOT --json --shape 8g64c` in a child process;",
        "wall time from start to exit (includes interpreter start-up, JSON parsing and all checks);",
        (
            "peak resident memory of the child from `wait4`. Snapshots: `generate_asi(nodes, seed="
            f"{args.seed})` (ASI-like, 70% GPU allocation target, 40% locked pods)."
        ),
        "",
        "Reproduce: `.venv/bin/python benchmarks/report_scale.py`",
        "",
        "| nodes | GPUs | pods | allocated GPUs (GAR) | snapshot MiB | report wall s | report peak RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for nodes, s, size_mib, run in rows:
        lines.append(
            f"| {nodes:,} | {s['gpus']:,} | {s['pods']:,} | {s['allocated_gpus']:,.0f} ({s['gar']:.3f}) "
            f"| {size_mib:.1f} | {run.wall_s:.2f} | {run.peak_rss_mib:.0f} |"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "report_scale.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'report_scale.md'}")


if __name__ == "__main__":
    main()
