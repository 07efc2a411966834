"""Kant's queueing experiment on an 8,000-GPU homogeneous cluster -> benchmarks/results/queueing.md.

1,000 nodes x 8 GPUs in leaf groups of 32 nodes; a seeded Kant-shaped training workload
(``planner.instances.queue_workload.kant_jobs``: jobs of 1-2048 GPUs, 91% under 8 GPUs) offered at 95% of
the GPUs for 14 days, the first 2 left out; strict FIFO, best-effort FIFO and backfill (timeout 1 h)
under spread, binpack and E-Binpack placement; 5 seeds. The paper (Kant §5): backfill against strict
FIFO, median SOR +3.6%; E-Binpack, GFR 8.5% -> under 1%.

Then, on fewer seeds (``--extra-seeds``): defrag when stuck (the planner's make-room for a head
blocked 30 min, at most 128 moves, 5 min set-back per migrated job) against placement alone; two
tenants with quotas per GPU pool (none, shared with reclamation, isolated); E-Spread's inference
zone on a training + inference mix.

Run: ``.venv/bin/python benchmarks/queueing.py [--seeds 5] [--extra-seeds 3] [--days 14]`` (about 20
minutes on 2 cores).
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

from _measure import RESULTS, code_version, machine

from planner.instances.queue_workload import QueueCluster, inference_jobs, kant_jobs
from planner.runtime.executors import executor
from planner.simulate.queue_metrics import queue_row
from planner.simulate.queueing import POLICIES, replay

BUCKETS = ("1", "4", "8", "64", "256", "1024", "2048")
KANT_PLACEMENTS = ("spread", "binpack", "e-binpack")
STUCK = {"stuck_after_s": 1800.0, "make_room_moves": 128, "migration_cost_s": 300.0}
POOLS = (("a100", 512), ("v100", 512))  # 1,024 nodes, 8,192 GPUs
TENANTS = {"research": 0.7, "prod": 0.3}
QUOTAS = {(t, p): 2048 for t in TENANTS for p, _ in POOLS}  # half of each pool each
ZONE_NODES = 128  # four leaf groups


def one(task: tuple) -> dict:  # type: ignore[type-arg]
    section, policy, placement, seed, days, warmup, variant = task
    options: dict = {}  # type: ignore[type-arg]
    if section == "quota":
        cluster = QueueCluster(nodes=1024, pools=POOLS)
        jobs = kant_jobs(cluster, days * 24, 0.95, seed, TENANTS)
        if variant != "none":
            options = {"quotas": QUOTAS, "quota_mode": variant}
    elif section == "espread":
        cluster = QueueCluster()
        jobs = kant_jobs(cluster, days * 24, 0.8, seed, reserve_nodes=ZONE_NODES) + inference_jobs(cluster, days * 24, 0.15, seed)
        options = {"zone_nodes": ZONE_NODES} if placement == "e-spread" else {}
    else:
        cluster = QueueCluster()
        jobs = kant_jobs(cluster, days * 24, 0.95, seed)
        options = dict(STUCK) if section == "stuck" else {}
    start = time.perf_counter()
    run = replay(cluster, jobs, policy, placement, 3600.0, horizon_s=days * 86400, measure_from_s=warmup * 86400, **options)
    return {
        "section": section,
        "policy": policy,
        "placement": placement,
        "seed": seed,
        "variant": variant,
        "wall_s": time.perf_counter() - start,
        **queue_row(run),
    }


def med(rows: list[dict], key: str, **where: str) -> float:  # type: ignore[type-arg]
    values = [r[key] for r in rows if all(r[k] == v for k, v in where.items())]
    return statistics.median(values) if values else float("nan")


def med_in(rows: list[dict], key: str, sub: str, **where: str) -> float:  # type: ignore[type-arg]
    values = [r[key][sub] for r in rows if all(r[k] == v for k, v in where.items()) and r[key].get(sub) is not None]
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--extra-seeds", type=int, default=3)
    parser.add_argument("--days", type=float, default=14)
    parser.add_argument("--warmup-days", type=float, default=2)
    args = parser.parse_args()
    d, w = args.days, args.warmup_days
    tasks = [("stuck", p, q, s, d, w, "stuck") for p in ("strict-fifo", "backfill") for q in ("spread", "e-binpack") for s in range(args.extra_seeds)]
    tasks += [("kant", p, q, s, d, w, "") for q in KANT_PLACEMENTS for p in POLICIES for s in range(args.seeds)]
    tasks += [
        ("quota", p, "e-binpack", s, d, w, v) for p in ("strict-fifo", "backfill") for v in ("none", "shared", "isolated") for s in range(args.extra_seeds)
    ]
    tasks += [("espread", "backfill", q, s, d, w, "") for q in ("spread", "binpack", "e-binpack", "e-spread") for s in range(args.extra_seeds)]
    started = time.perf_counter()
    with executor() as run:
        rows = run(one, tasks)
    wall = time.perf_counter() - started
    kant = [r for r in rows if r["section"] == "kant"]

    lines = [
        "# Kant's queueing experiment (8,000 GPUs, jobs of 1-2048 GPUs)",
        "",
        (
            f"Machine: {machine()}; planner at {code_version()}. Reproduce: `.venv/bin/python benchmarks/queueing.py --seeds {args.seeds} "
            f"--extra-seeds {args.extra_seeds} --days {d:g} --warmup-days {w:g}` ({wall / 60:.0f} min wall on this machine). 1,000 nodes x 8 GPUs, "
            "leaf groups of 32 nodes; offered load 0.95; backfill timeout 1 h; metrics over the days after the warm-up; medians over "
            "seeds (GAR and SOR coincide here: allocated GPU-time over available, accrued from binding)."
        ),
        "",
        "| policy | placement | SOR (median) | vs strict FIFO | GFR | preemptions | GPU-h lost to preemption | JWTD h: "
        + " | ".join(BUCKETS)
        + " | JTTEd nodes @256 | groups @256 | wall s |",
        "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(BUCKETS) + "---:|---:|---:|",
    ]
    for q in KANT_PLACEMENTS:
        base = med(kant, "sor", policy="strict-fifo", placement=q)
        for p in POLICIES:
            sel = {"policy": p, "placement": q}
            waits = [med_in(kant, "jwtd_s", b, **sel) / 3600 for b in BUCKETS]
            lines.append(
                f"| {p} | {q} | {med(kant, 'sor', **sel):.4f} | {100 * (med(kant, 'sor', **sel) / base - 1):+.1f}% | {med(kant, 'gfr', **sel):.4f} | "
                f"{med(kant, 'preemptions', **sel):,.0f} | {med(kant, 'lost_gpu_hours', **sel):,.0f} | "
                + " | ".join(f"{x:.2f}" for x in waits)
                + f" | {med_in(kant, 'jtted_nodes', '256', **sel):.3f} | {med_in(kant, 'jtted_groups', '256', **sel):.3f} | "
                f"{statistics.fmean(r['wall_s'] for r in kant if r['policy'] == p and r['placement'] == q):.1f} |"
            )
    lines += [
        "",
        (
            "JWTD: mean wait from submission to (final) start per job-size bucket (GPUs, powers of two), median over seeds. "
            "JTTEd: nodes used over ceil(GPUs / 8), groups over the fewest groups those nodes need."
        ),
        "",
    ]

    stuck = [r for r in rows if r["section"] == "stuck"]
    seeds = range(args.extra_seeds)
    lines += [
        "## Defrag when stuck: the planner's make-room for a blocked head",
        "",
        (
            f"Same cluster and workloads (seeds 0-{args.extra_seeds - 1}). When a head has waited 30 min for room, `plan_defrag(make_room=[head], "
            "max_moves=128)` (the validated plan) migrates pods smaller than a node; each migrated job is set back 5 min "
            "(`simulate/queue_defrag.py`). A failed attempt is retried 30 min later. Placement alone: the rows above, same seeds. "
            "Medians over seeds."
        ),
        "",
        (
            "| policy | placement | make-room | SOR | change | GFR | JWTD h: 1 | 64 | 256 | 1024 | 2048 | preemptions | make-room calls | heads started | "
            "moves | migration GPU-h | make-room s (total) | wall s |"
        ),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in ("strict-fifo", "backfill"):
        for q in ("spread", "e-binpack"):
            alone = [r for r in kant if r["policy"] == p and r["placement"] == q and r["seed"] in seeds]
            mine = [r for r in stuck if r["policy"] == p and r["placement"] == q]
            base = med(alone, "sor")
            for label, rs in (("off", alone), ("on", mine)):
                cells = [f"{med_in(rs, 'jwtd_s', b) / 3600:.2f}" for b in ("1", "64", "256", "1024", "2048")]
                room = [f"{med(rs, k):,.0f}" if label == "on" else "-" for k in ("make_room_calls", "make_room_starts", "moves")]
                lines.append(
                    f"| {p} | {q} | {label} | {med(rs, 'sor'):.4f} | {100 * (med(rs, 'sor') / base - 1):+.2f}% | {med(rs, 'gfr'):.4f} | "
                    + " | ".join(cells)
                    + f" | {med(rs, 'preemptions'):,.0f} | "
                    + " | ".join(room)
                    + f" | {med(rs, 'migration_gpu_hours') if label == 'on' else 0:,.1f} | {med(rs, 'make_room_wall_s') if label == 'on' else 0:.1f} | "
                    f"{statistics.fmean(r['wall_s'] for r in rs):.1f} |"
                )

    quota = [r for r in rows if r["section"] == "quota"]
    lines += [
        "",
        "## Tenants and quotas per GPU pool",
        "",
        (
            "1,024 nodes in two pools (a100, v100: 512 nodes each, 4,096 GPUs), two tenants: `research` submits 70% of the jobs, "
            "`prod` 30%; quotas 2,048 GPUs per tenant per pool (half). One queue per tenant; E-Binpack. *Shared*: a tenant borrows "
            "the pool's unused quota and the owner reclaims it by preemption; *isolated*: no borrowing. Medians over seeds."
        ),
        "",
        "| policy | quotas | SOR | SOR research | SOR prod | JWTD h research | JWTD h prod | reclaim preemptions | backfill preemptions | GPU-h lost |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in ("strict-fifo", "backfill"):
        for v in ("none", "shared", "isolated"):
            sel = {"policy": p, "variant": v}
            lines.append(
                f"| {p} | {v} | {med(quota, 'sor', **sel):.4f} | {med_in(quota, 'sor_by_tenant', 'research', **sel):.4f} | "
                f"{med_in(quota, 'sor_by_tenant', 'prod', **sel):.4f} | {med_in(quota, 'jwtd_by_tenant_s', 'research', **sel) / 3600:.2f} | "
                f"{med_in(quota, 'jwtd_by_tenant_s', 'prod', **sel) / 3600:.2f} | {med(quota, 'reclaims', **sel):,.0f} | "
                f"{med(quota, 'preemptions', **sel):,.0f} | {med(quota, 'lost_gpu_hours', **sel):,.0f} |"
            )

    spread = [r for r in rows if r["section"] == "espread"]
    lines += [
        "",
        "## E-Spread: an inference zone",
        "",
        (
            f"1,000 nodes; training offered at 0.80 of the GPUs (sizes capped at the {1000 - ZONE_NODES} nodes outside the zone) plus "
            "inference replicas of 1, 2 or 4 GPUs (mean life 12 h) offered at 0.15; backfill. *e-spread*: the first "
            f"{ZONE_NODES} nodes (4 leaf groups) are the inference zone: replicas spread there first, overflow and training are "
            "E-Binpacked outside it. Medians over seeds."
        ),
        "",
        "| placement | SOR | GFR | JWTD h training | JWTD h inference | JWTD h @1024 | preemptions |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for q in ("spread", "binpack", "e-binpack", "e-spread"):
        lines.append(
            f"| {q} | {med(spread, 'sor', placement=q):.4f} | {med(spread, 'gfr', placement=q):.4f} | "
            f"{med_in(spread, 'jwtd_by_kind_s', 'training', placement=q) / 3600:.2f} | {med_in(spread, 'jwtd_by_kind_s', 'inference', placement=q) / 3600:.2f} | "
            f"{med_in(spread, 'jwtd_s', '1024', placement=q) / 3600:.2f} | {med(spread, 'preemptions', placement=q):,.0f} |"
        )
    lines.append("")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "queueing.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
