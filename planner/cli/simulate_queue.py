"""The ``planner simulate queue`` command: Kant's queueing experiment (strict FIFO, best-effort FIFO,
backfill with timeout preemption) on a homogeneous cluster, one tidy row per (policy, placement, seed)."""

from __future__ import annotations

import json
from typing import Any

import typer

from planner.cli.common import check_stdout, emit, fail, guarded, summary_to_stdout


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
    pool: list[str] = typer.Option(None, "--pool", help="NAME=NODES: a GPU pool of whole leaf groups, in node order; repeat (default: one pool 'default')."),
    tenant: list[str] = typer.Option(None, "--tenant", help="NAME=SHARE: a tenant (its own queue) and its share of the training jobs; repeat."),
    quota: list[str] = typer.Option(None, "--quota", help="TENANT[:POOL]=GPUS: a tenant's GPU quota in a pool (default pool: the first); repeat."),
    quota_mode: str = typer.Option("shared", "--quota-mode", help="shared (borrow the pool's unused quota; owners reclaim it) or isolated."),
    inference_load: float = typer.Option(
        0.0, "--inference-load", help="Add inference replicas (tenant 'inference') offering this share of the first pool's GPUs."
    ),
    zone_nodes: int = typer.Option(0, "--zone-nodes", help="e-spread: nodes of each pool's inference zone (whole leaf groups)."),
    stuck_after_s: float = typer.Option(
        None, "--stuck-after-s", help="Defrag when stuck: a head blocked this long for room asks the planner's make-room (default: off)."
    ),
    make_room_moves: int = typer.Option(64, "--make-room-moves", help="Defrag when stuck: at most this many migrations per make-room plan."),
    migration_cost_s: float = typer.Option(300.0, "--migration-cost-s", help="Defrag when stuck: seconds a migrated job is set back."),
    out: str = typer.Option(None, "--out", help="results.json: {'runs': [one row per (policy, placement, seed)]} (- for stdout)."),
) -> None:
    """Replay a seeded Kant-shaped training workload (``planner.instances.queue_workload.kant_jobs``, plus
    inference replicas with --inference-load) under each queue policy and placement, with per-tenant
    queues, GPU pools, quotas and defrag when stuck as asked: GAR/SOR (per tenant too), GFR, JWTD and
    JTTEd per job-size bucket, preemptions, quota reclamations, make-room moves."""
    # deferred: the queueing simulator (~15 ms at start-up), for this command only
    from planner.instances.queue_workload import QueueCluster, inference_jobs, kant_jobs
    from planner.simulate.queue_metrics import queue_row
    from planner.simulate.queueing import PLACEMENTS, POLICIES, QUOTA_MODES, replay  # deferred: (as above)

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
    if quota_mode not in QUOTA_MODES:
        problems.append(f"--quota-mode: shared or isolated, got '{quota_mode}'")
    if not 0 <= inference_load <= 3:
        problems.append(f"--inference-load: in [0, 3], got {inference_load:g}")
    if zone_nodes and "e-spread" not in placements:
        problems.append("--zone-nodes: applies to --placement e-spread only")
    if stuck_after_s is not None and not stuck_after_s > 0:
        problems.append(f"--stuck-after-s: above 0, got {stuck_after_s:g}")
    if make_room_moves < 1 or not migration_cost_s >= 0:
        problems.append("--make-room-moves: at least 1; --migration-cost-s: at least 0")
    pools = _pairs(pool or [], "--pool", "NAME=NODES", int, problems)
    tenants = _pairs(tenant or [], "--tenant", "NAME=SHARE", float, problems)
    if any(v <= 0 for v in tenants.values()):
        problems.append("--tenant: every share above 0")
    first_pool = next(iter(pools), "default")
    quotas = {}
    for key, gpus in _pairs(quota or [], "--quota", "TENANT[:POOL]=GPUS", int, problems).items():
        name, _, where = key.partition(":")
        quotas[(name, where or first_pool)] = gpus
    cluster = QueueCluster(max(nodes, 1), max(gpus_per_node, 1), max(group_nodes, 1), tuple(pools.items()))
    try:
        cluster.pool_ranges()
    except ValueError as err:
        problems.append(f"--pool: {err}")
    for name, where in quotas:
        if pools and where not in pools:
            problems.append(f"--quota: tenant '{name}': unknown pool '{where}'; pools: {', '.join(pools)}")
    if problems:
        fail(problems)
    check_stdout(out in (None, "-"))  # the results (or their table) go to standard output
    rows: list[dict[str, Any]] = []
    for seed in range(seeds):
        try:
            jobs = kant_jobs(cluster, days * 24, load, seed, tenants or None, reserve_nodes=zone_nodes)
            if inference_load:
                jobs += inference_jobs(cluster, days * 24, inference_load, seed)
        except ValueError as err:
            fail([f"--pool: {err}"])
        for p in policies:
            for q in placements:
                try:
                    run = replay(
                        cluster,
                        jobs,
                        p,
                        q,
                        timeout_s,
                        horizon_s=days * 86400,
                        measure_from_s=warmup_days * 86400,
                        quotas=quotas or None,
                        quota_mode=quota_mode,
                        zone_nodes=zone_nodes if q == "e-spread" else 0,
                        stuck_after_s=stuck_after_s,
                        make_room_moves=make_room_moves,
                        migration_cost_s=migration_cost_s,
                    )
                except ValueError as err:
                    fail([str(err)])
                rows.append(
                    {
                        "policy": p,
                        "placement": q,
                        "seed": seed,
                        "days": days,
                        "warmup_days": warmup_days,
                        "load": load,
                        "inference_load": inference_load,
                        "stuck_after_s": stuck_after_s,
                        **queue_row(run),
                    }
                )
    text = json.dumps({"runs": rows}, indent=1) + "\n"
    if out is not None:
        emit(text, out)
    if summary_to_stdout(out):
        for r in rows:
            typer.echo(
                f"{r['policy']:12s} {r['placement']:10s} seed {r['seed']}: GAR {r['gar']:.3f}  GFR {r['gfr']:.3f}  "
                f"preemptions {r['preemptions']}  jobs {r['jobs']}"
            )


def _pairs(items: list[str], option: str, form: str, kind: type, problems: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items as a dict (in order); a malformed or repeated item is a problem naming ``option``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.rpartition("=")
        try:
            number = kind(value)
        except ValueError:
            number = None
        if not sep or not key or number is None or number < 0:
            problems.append(f"{option}: expected {form} with a number at least 0, got '{item}'")
        elif key in out:
            problems.append(f"{option}: '{key}' is given twice")
        else:
            out[key] = number
    return out
