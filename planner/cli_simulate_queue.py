"""The ``planner simulate queue`` command: Kant's queueing experiment (strict FIFO, best-effort FIFO,
backfill with timeout preemption) on a homogeneous cluster, one tidy row per (policy, placement, seed)."""

from __future__ import annotations

import json
from typing import Any

import typer

from planner.cli import _emit, fail, guarded
from planner.cli_simulate import simulate_app


@simulate_app.command("queue")
@guarded
def simulate_queue_command(
    policy: list[str] = typer.Option(None, "--policy", help="strict-fifo, best-effort or backfill; repeat to compare (default: all three)."),
    placement: list[str] = typer.Option(None, "--placement", help="spread, binpack or e-binpack; repeat (default: binpack)."),
    seeds: int = typer.Option(3, "--seeds", help="Workload seeds 0, 1, ..."),
    days: float = typer.Option(7.0, "--days", help="Days of arrivals."),
    warmup_days: float = typer.Option(1.0, "--warmup-days", help="Leave the first days out of the metrics (the cluster starts empty)."),
    load: float = typer.Option(0.95, "--load", help="Offered load: GPU-time submitted over GPU-time available."),
    timeout_s: float = typer.Option(3600.0, "--timeout-s", help="Backfill: how long the blocked head waits before backfilled jobs are preempted."),
    nodes: int = typer.Option(1000, "--nodes", help="Nodes (Kant's training cluster: 1,000 x 8 = 8,000 GPUs)."),
    gpus_per_node: int = typer.Option(8, "--gpus-per-node"),
    group_nodes: int = typer.Option(32, "--group-nodes", help="Nodes per leaf group (NodeNetGroup)."),
    out: str = typer.Option(None, "--out", help="results.json: {'runs': [one row per (policy, placement, seed)]} (- for stdout)."),
) -> None:
    """Replay a seeded Kant-shaped training workload (``planner.simulate.queueing.kant_jobs``) under each
    queue policy and placement: GAR/SOR, GFR, JWTD and JTTEd per job-size bucket, preemptions."""
    from planner.simulate.queueing import PLACEMENTS, POLICIES, Cluster, kant_jobs, queue_row, replay

    policies, placements = policy or list(POLICIES), placement or ["binpack"]
    problems = [f"--policy: unknown '{p}'; choose from {', '.join(POLICIES)}" for p in policies if p not in POLICIES]
    problems += [f"--placement: unknown '{p}'; choose from {', '.join(PLACEMENTS)}" for p in placements if p not in PLACEMENTS]
    if seeds < 1:
        problems.append(f"--seeds: at least 1, got {seeds}")
    if not days > 0 or not 0 <= warmup_days < days:
        problems.append(f"--days above 0 and --warmup-days in [0, --days), got {days:g} and {warmup_days:g}")
    if not 0 < load <= 3:
        problems.append(f"--load: above 0 and at most 3, got {load:g}")
    if not timeout_s >= 0:
        problems.append(f"--timeout-s: at least 0, got {timeout_s:g}")
    if nodes < 1 or gpus_per_node < 1 or group_nodes < 1:
        problems.append("--nodes, --gpus-per-node and --group-nodes: at least 1")
    if problems:
        fail(problems)
    cluster = Cluster(nodes, gpus_per_node, group_nodes)
    rows: list[dict[str, Any]] = []
    for seed in range(seeds):
        jobs = [j for j in kant_jobs(cluster, days * 24, load, seed) if j.gpus <= cluster.gpus]
        for p in policies:
            for q in placements:
                try:
                    run = replay(cluster, jobs, p, q, timeout_s, horizon_s=days * 86400, measure_from_s=warmup_days * 86400)
                except ValueError as err:
                    fail([str(err)])
                rows.append({"policy": p, "placement": q, "seed": seed, "days": days, "warmup_days": warmup_days, "load": load, **queue_row(run)})
    text = json.dumps({"runs": rows}, indent=1) + "\n"
    if out is not None:
        _emit(text, out)
    if out != "-":
        for r in rows:
            typer.echo(f"{r['policy']:12s} {r['placement']:10s} seed {r['seed']}: GAR {r['gar']:.3f}  GFR {r['gfr']:.3f}  "
                       f"preemptions {r['preemptions']}  jobs {r['jobs']}")


__all__ = ["simulate_queue_command"]
