"""Topology allocation: one job, many jobs, latency and large-job capacity (issue 11).

Writes benchmarks/results/topology.md:

* one job (run here): on random free capacities (multiples of 8 GPUs, 2 to 8 switches, a demand up
  to their total), the fewest switches and least entropy by brute force over every split,
  largest-first and Algorithm 2 as published: how often each is suboptimal and by how much;
* many jobs (``benchmarks/topology_batch.py``, run here unless ``--skip-batch``: then its last
  results file is included as it stands): greedy, Kueue, Slurm and random against the exact joint
  model on 2 x 50 instances;
* latency at 37,707 nodes and ASI Fig. 14 (``benchmarks/topology_scale.py``, about 20 minutes; its
  last results file, ``topology-scale.md``, is included as it stands, with its own command line).

    .venv/bin/python benchmarks/topology.py [--instances 3000] [--seed 0] [--batch-instances 50] [--skip-batch]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import RESULTS, machine

from planner.heuristics.topology import alg2, entropy, largest_first


def brute_force(capacities: list[int], demand: int) -> tuple[int, float]:
    """Fewest switches, then least entropy, over every choice of switches filled largest first
    within the choice (for a fixed set of switches that fill majorises every other split)."""
    best = None
    for k in range(1, len(capacities) + 1):
        for chosen in itertools.combinations(range(len(capacities)), k):
            caps = sorted((capacities[s] for s in chosen), reverse=True)
            if sum(caps) < demand:
                continue
            left, split = demand, []
            for c in caps:
                take = min(c, left)
                if take:
                    split.append(take)
                left -= take
            key = (len(split), entropy(split))
            if best is None or key < best:
                best = key
        if best is not None:
            return best
    raise ValueError("infeasible")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-instances", type=int, default=50)
    parser.add_argument("--skip-batch", action="store_true", help="include the last topology-batch.md instead of running it")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    stats = {"largest-first": [0, 0, 0.0, 0], "alg2": [0, 0, 0.0, 0]}  # suboptimal, excess switches max, excess entropy max, worse on switches
    for _ in range(args.instances):
        capacities = [8 * rng.randint(0, 16) for _ in range(rng.randint(2, 8))]
        if sum(capacities) == 0:
            capacities[0] = 8
        demand = rng.randint(1, sum(capacities))
        switches, h = brute_force(capacities, demand)
        for name, method in (("largest-first", largest_first), ("alg2", alg2)):
            plan = method(capacities, demand)
            got = (len(plan), entropy([n for _, n in plan]))
            if got[0] > switches or got[1] > h + 1e-9:
                stats[name][0] += 1
                stats[name][1] = max(stats[name][1], got[0] - switches)
                stats[name][2] = max(stats[name][2], got[1] - h)
                stats[name][3] += got[0] > switches
    lines = [
        "# Topology allocation",
        "",
        f"Machine: {machine()}. Reproduce: `.venv/bin/python benchmarks/topology.py --instances {args.instances} --seed {args.seed}`.",
        "",
        "## One job: Algorithm 2 as published against largest-first and a brute force",
        "",
        (
            f"{args.instances:,} random instances: 2 to 8 switches with free capacities in multiples of 8 GPUs (0 to 128), a demand "
            "from 1 GPU to their total. *Suboptimal*: more switches, or as many with more entropy (nats), than the brute force."
        ),
        "",
        "| method | suboptimal | of which more switches | worst excess switches | worst excess entropy |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, (bad, worst_sw, worst_h, more) in stats.items():
        lines.append(f"| {name} | {bad:,} / {args.instances:,} ({100 * bad / args.instances:.1f}%) | {more:,} | {worst_sw} | {worst_h:.3f} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    if not args.skip_batch:
        from topology_batch import FAMILIES, batch_lines, run_family

        results = {f: run_family(f, args.batch_instances, 10.0) for f in FAMILIES}
        (RESULTS / "topology-batch.md").write_text("\n".join(batch_lines(results, args.batch_instances, 10.0)) + "\n")
    for name in ("topology-batch.md", "topology-scale.md"):
        part = RESULTS / name
        lines += [""]
        if part.exists():
            lines += ["#" + line if line.startswith("# ") else line for line in part.read_text().splitlines()]
        else:
            lines += [f"({name} has not been produced yet.)"]
    (RESULTS / "topology.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
