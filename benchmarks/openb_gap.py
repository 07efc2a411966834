"""Where the openb gap comes from (issue 45, item 2): IPC against exact solves and bounds, per GPU model.

An openb replay (the Alibaba 2023 trace, `default` pod list, spread scheduler, 1,213 GPU nodes, pods
staying once created) is cut into one piece per GPU model. Under the default pool policy
(`planner/pools.py`: a placed GPU pod keeps its GPU product) no GPU pod ever leaves its piece; only
CPU-only pods may cross (the trace's GPU node list has no CPU-only nodes, so they may go anywhere).
Per piece:

* *IPC in plan*: the empty nodes of the piece at the end of IPC's plan for the whole snapshot
  (`planner defrag --method heuristic`, default options); their sum is the plan's objective;
* *IPC alone*: IPC run on the piece by itself (its CPU-only pods kept inside it);
* *bound*: the at-scale bound (`planner/models/defrag_bound.py`) of the *relaxed* piece;
* *device bound*: the same bound with the GPUs of the piece counted in devices: whole GPUs plus a
  bin-packing lower bound on the devices the shares need (`planner/models/share_devices.py`: volume,
  Martello and Toth's L2, the configuration LP) instead of the sum of the shares (*Findings* in the
  results); since issue 45's fix the at-scale bound counts shares in devices itself, so the two agree
  up to the relaxed piece's other rows;
* *exact*: `solve_exact` (HiGHS, 2 threads, a time limit per solve) on pieces up to
  `--exact-max-nodes` nodes: *proven* is the best bound of the relaxed piece, *found* the most empty
  nodes of an executed plan of the restricted piece.

The *relaxed* piece drops its CPU-only pods: the end state of any plan of the whole snapshot, read on
the piece's nodes and GPU pods only, is an end state of the relaxed piece (the piece's GPU pods end
inside it; other pods ending there only take room), so a piece ends with at most as many empty nodes
as its relaxed optimum, and the sum of the relaxed pieces' bounds bounds the whole snapshot (the
*composite* bound). The *restricted* piece keeps its CPU-only pods and lets them move only inside it:
its plans are plans of the whole snapshot (the piece's plan leaves every other node as it is). The two
are the same piece when it holds no CPU-only pod.

    .venv/bin/python benchmarks/openb_gap.py            # 3 snapshots, exact on the first (about 5 minutes)
    .venv/bin/python benchmarks/openb_gap.py --quick    # one snapshot, short exact solves (a smoke run)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import RESULTS, machine

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.limits import MoveBudget
from planner.models.defrag_bound import empties_bound
from planner.models.defrag_exact import ExactOptions, solve_exact
from planner.models.share_devices import devices_at_least
from planner.plans import DefragPlan
from planner.pools import PoolPolicy, apply_pools
from planner.state import ClusterState

# ----------------------------------------------------------------------------------------------
# Snapshots and pieces
# ----------------------------------------------------------------------------------------------


def openb_snapshot(at_s: int) -> Cluster:
    from planner.instances.openb import generate_openb  # deferred: reads the trace only when a snapshot is built

    return generate_openb(pods="default", at_s=at_s, scheduler="spread", nodes="gpu", seed=0, departures=False)


@dataclass
class Piece:
    model: str
    relaxed: Cluster
    """The piece's nodes and GPU pods (its CPU-only pods dropped)."""
    restricted: Cluster
    """The piece's nodes and all its pods (CPU-only pods move only inside it)."""


def pieces(pooled: Cluster) -> list[Piece]:
    """One piece per GPU model of ``pooled`` (the snapshot with the pool policy applied)."""
    out = []
    for model in sorted({n.gpu_model for n in pooled.nodes}):
        nodes = [n for n in pooled.nodes if n.gpu_model == model]
        names = {n.name for n in nodes}
        own = [p for p in pooled.pods if p.node in names]
        restricted = pooled.model_copy(update={"nodes": nodes, "pods": own})
        relaxed = pooled.model_copy(update={"nodes": nodes, "pods": [p for p in own if p.gpus > 0]})
        out.append(Piece(model, relaxed, restricted))
    return out


def end_state(cluster: Cluster, plan: DefragPlan) -> dict[str, str]:
    """Where every placed pod of ``cluster`` is at the end of ``plan``."""
    where = {p.name: p.node for p in cluster.pods if p.node is not None}
    for wave in plan.waves:
        for move in wave:
            where[move.pod] = move.to
    return where


def end_empty_nodes(cluster: Cluster, plan: DefragPlan) -> set[str]:
    """The nodes of ``cluster`` empty at the end of ``plan``."""
    used = set(end_state(cluster, plan).values())
    return {n.name for n in cluster.nodes if n.name not in used}


# ----------------------------------------------------------------------------------------------
# The device bound (a diagnostic for the at-scale bound's owner; see write_results)
# ----------------------------------------------------------------------------------------------


def device_bound(piece: Cluster) -> int:
    """Empty nodes of ``piece`` (no locked pod; every pod may end on any of its nodes) with the GPU
    demand counted in devices: the fewest nodes, largest first, holding the whole GPUs plus the
    devices the shares need (``planner.models.share_devices.devices_at_least``) must stay
    non-empty. Also at most the at-scale bound."""
    if any(p.locked for p in piece.pods if p.node is not None):
        raise ValueError("device_bound: a piece with locked pods (the openb replays have none)")
    placed = [p for p in piece.pods if p.node is not None]
    shares = [p.gpus for p in placed if 0 < p.gpus < 1]
    demand = sum(int(p.gpus) for p in placed if p.gpus >= 1) + devices_at_least(shares)
    caps = np.sort(np.array([n.gpus for n in piece.nodes], dtype=np.int64))[::-1]
    needed = len(caps) if demand > caps.sum() else int(np.searchsorted(np.cumsum(caps), demand, side="left")) + (demand > 0)
    state = ClusterState(piece)
    return min(len(caps) - needed, empties_bound(state, MoveBudget.of(state)).bound)


# ----------------------------------------------------------------------------------------------
# Per piece and per snapshot
# ----------------------------------------------------------------------------------------------


@dataclass
class Exact:
    found: int | None
    proven: int | None
    status: str
    wall_s: float


def exact(cluster: Cluster, seconds: float, start_from: dict[str, str]) -> Exact:
    """``solve_exact`` on ``cluster``, warm-started from the end state ``start_from`` (pod -> node)."""
    state = ClusterState(cluster)
    hint = {state.pod_index[pod]: state.node_index[node] for pod, node in start_from.items() if pod in state.pod_index}
    start = time.perf_counter()
    out = solve_exact(state, ExactOptions(solver="highs", time_limit_s=seconds, solver_workers=2, seed=0), hint_target=hint)
    wall = time.perf_counter() - start
    found = None
    if out.waves is not None:
        end = state.clone()
        for wave in out.waves:
            for p, _, destination in wave:
                end.move(p, destination)
        found = int((end.pods_per_node == 0).sum())
    return Exact(found, out.proof.empties_upper, out.solver_status, wall)


def piece_row(piece: Piece, in_plan: int, exact_s: float | None) -> dict:
    relaxed_state = ClusterState(piece.relaxed)
    at_scale = empties_bound(relaxed_state, MoveBudget.of(relaxed_state))
    alone = plan_defrag(piece.restricted, DefragOptions(method="heuristic", workers=1))
    assert isinstance(alone, DefragPlan) and alone.report is not None
    row = {
        "model": piece.model,
        "nodes": len(piece.relaxed.nodes),
        "gpu_pods": sum(1 for p in piece.relaxed.pods if p.node is not None),
        "share_pods": sum(1 for p in piece.relaxed.pods if p.node is not None and 0 < p.gpus < 1),
        "cpu_pods": len(piece.restricted.pods) - len(piece.relaxed.pods),
        "ipc_in_plan": in_plan,
        "ipc_alone": int(alone.report.objective or 0),
        "bound": at_scale.bound,
        "binding": at_scale.binding,
        "device_bound": device_bound(piece.relaxed),
        "proven": None,
        "found": None,
        "exact_note": "",
    }
    if exact_s is not None:
        ipc_end = end_state(piece.restricted, alone)  # the warm start of both solves
        upper = exact(piece.relaxed, exact_s, ipc_end)
        row["proven"] = upper.proven
        row["exact_note"] = f"{upper.status}, {upper.wall_s:.0f} s"
        found = upper.found
        if row["cpu_pods"]:
            lower = exact(piece.restricted, exact_s, ipc_end)
            found = lower.found
            row["exact_note"] += f"; restricted {lower.status}, {lower.wall_s:.0f} s"
        row["found"] = found
    return row


def snapshot_rows(at_s: int, exact_s: float | None, exact_max_nodes: int) -> tuple[dict, list[dict]]:
    cluster = openb_snapshot(at_s)
    start = time.perf_counter()
    plan = plan_defrag(cluster, DefragOptions(method="heuristic", workers=1))
    assert isinstance(plan, DefragPlan) and plan.report is not None
    ipc_wall = time.perf_counter() - start
    empty = end_empty_nodes(cluster, plan)
    pooled, _ = apply_pools(cluster, PoolPolicy())
    rows = []
    for piece in pieces(pooled):
        in_plan = sum(1 for n in piece.relaxed.nodes if n.name in empty)
        solve = exact_s if exact_s is not None and len(piece.relaxed.nodes) <= exact_max_nodes else None
        rows.append(piece_row(piece, in_plan, solve))
        print(f"  @{at_s / 1e6:g}e6 {rows[-1]}", flush=True)
    extra = plan.report.model_extra or {}
    for r in rows:
        r["upper"] = min(r["device_bound"], r["proven"] if r["proven"] is not None else r["device_bound"])
        r["best"] = max(r["ipc_alone"], r["found"] or 0)
    composite = min(sum(r["upper"] for r in rows), int(plan.report.bound or 0))  # both bound every plan
    summary = {
        "snapshot": f"openb default @{at_s / 1e6:g}e6 s",
        "gar": plan.metrics.before["gar"] if plan.metrics is not None else 0.0,
        "ipc": int(plan.report.objective or 0),
        "ipc_wall_s": ipc_wall,
        "bound": int(plan.report.bound or 0),
        "binding": extra.get("relaxation_bound", {}).get("binding", ""),
        "composite": composite,
        "best": max(int(plan.report.objective or 0), sum(r["best"] for r in rows)),
    }
    assert summary["ipc"] == sum(r["ipc_in_plan"] for r in rows)
    assert summary["best"] <= summary["composite"], "a plan above a proven bound: a bug in a bound or a plan"
    return summary, rows


# ----------------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------------


def gap(bound: int, value: int) -> str:
    """(bound - value) / bound, as the plans report it."""
    return f"{(bound - value) / max(bound, 1):.3f}"


def write_results(summaries: list[dict], per_piece: list[tuple[str, list[dict]]], command: str, exact_s: float | None, exact_max_nodes: int) -> None:
    lines = [
        "# The openb gap: which side is loose (issue 45, item 2)",
        "",
        f"Machine: {machine()}. Reproduce: `{command}`. Exact solves stop at a wall-clock limit: on a loaded machine they find and prove less.",
        "",
        (
            "Snapshots: the openb `default` pod list replayed with the spread scheduler on the 1,213 GPU nodes, pods staying once "
            "created (`planner generate openb --at T --no-departures`). *IPC*: `planner defrag --method heuristic` with default "
            "options (GPU pods keep their GPU product: the pool policy's default). *bound*: the plan's reported bound "
            "(`planner/models/defrag_bound.py`). *composite*: the sum over the GPU-model pieces of the least of the piece's "
            "device bound and its exact proven bound, a valid bound on the whole snapshot (the script's docstring says why), "
            "or the bound if that is smaller. "
            "*best plan*: the larger of IPC's plan and the sum over the pieces of the better of IPC alone and the exact plan "
            "(the pieces' plans touch disjoint nodes and pods, so together they are a plan of the snapshot). The gap "
            "bound - IPC splits into *bound loose* (bound - composite: the at-scale bound above a proven bound), *IPC short* "
            "(best plan - IPC: a plan IPC did not find) and *open* (composite - best plan: not decided here)."
        ),
        "",
        "## Per snapshot",
        "",
        "| snapshot | GPU alloc | IPC empty nodes | bound (binding) | gap | composite bound | gap to composite | best plan | bound loose | IPC short | open |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lines.append(
            f"| {s['snapshot']} | {s['gar']:.2f} | {s['ipc']} | {s['bound']} ({s['binding']}) | {gap(s['bound'], s['ipc'])} "
            f"| {s['composite']} | {gap(s['composite'], s['ipc'])} | {s['best']} | {s['bound'] - s['composite']} "
            f"| {s['best'] - s['ipc']} | {s['composite'] - s['best']} |"
        )
    solved = f"HiGHS, 2 threads, {exact_s:g} s a solve, pieces up to {exact_max_nodes} nodes" if exact_s is not None else "not run"
    lines += [
        "",
        "## Per GPU model",
        "",
        (
            "*GPU pods* (of them *shares*) never leave their piece; *CPU pods* (CPU-only) may. *IPC in plan*: the piece's empty "
            "nodes at the end of IPC's plan for the whole snapshot; *IPC alone*: IPC on the piece by itself. *bound*: the "
            "at-scale bound of the relaxed piece (binding resource); *device bound*: the same with the shares counted in GPU "
            f"devices. *exact* ({solved}): *found*, the empty nodes of the executed exact plan of the restricted piece "
            "(warm-started from IPC alone); *proven*, the relaxed piece's proven bound. *upper*: the least of device bound and "
            "proven; *best*: the better of IPC alone and exact found."
        ),
        "",
    ]
    for name, rows in per_piece:
        lines += [
            f"### {name}",
            "",
            "| GPU model | nodes | GPU pods | shares | CPU pods | IPC in plan | IPC alone | exact found | exact proven | bound | device bound | upper | best | exact run |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in rows:
            found = "-" if r["found"] is None else r["found"]
            proven = "-" if r["proven"] is None else r["proven"]
            lines.append(
                f"| {r['model']} | {r['nodes']} | {r['gpu_pods']} | {r['share_pods']} | {r['cpu_pods']} | {r['ipc_in_plan']} "
                f"| {r['ipc_alone']} | {found} | {proven} | {r['bound']} ({r['binding']}) | {r['device_bound']} | {r['upper']} "
                f"| {r['best']} | {r['exact_note']} |"
            )
        lines.append("")
    lines += ["## Now", "", *now_lines(summaries), "", *FINDINGS.splitlines()]
    (RESULTS / "openb_gap.md").write_text("\n".join(lines) + "\n")


def now_lines(summaries: list[dict]) -> list[str]:
    """What this run's tables say, in words (the findings below are the history that led to them)."""
    loose = [s["bound"] - s["composite"] for s in summaries]
    short = [s["best"] - s["ipc"] for s in summaries]
    still = [s["composite"] - s["best"] for s in summaries]
    text = (
        f"On this run's snapshots the at-scale bound is above the composite bound by {', '.join(map(str, loose))} nodes "
        f"(*bound loose*), exact plans of the pieces beat IPC by {', '.join(map(str, short))} (*IPC short*), and "
        f"{', '.join(map(str, still))} nodes stay *open*: since the at-scale bound counts GPU shares in devices (the "
        "findings below), no exact solve of the pieces proves it loose here. `benchmarks/results/bounds.md` measures the open "
        "side on 200-node openb and share-heavy subsets: the exact plans of these pieces joined on the whole (the CPU-only pods "
        "kept in their piece, or placed again across the whole) against the at-scale bound and the pieces' proven bounds, with "
        "`--no-move-once` and under the default move-once (where the router makes no detour)."
    )
    return [text]


FINDINGS = """\
## Findings (history)

Written from runs on the 2-core machine under load (2026-11-28), before the at-scale bound counted GPU shares
in devices (the tables above are this run's); IPC's plans, the bounds and the device
bounds are deterministic, the exact columns depend on the machine. The issue's figures (bound 744
binding on CPUs, gaps 0.24-0.61) predate the default pool policy (GPU pods keep their GPU product):
on the same snapshot the plans now report bound 570 (GPUs), gap 0.107.

**The bound is the loose side; IPC is short by a few nodes on small, mixed pieces.** Of the gap
bound - IPC (61, 87 and 112 nodes at 12e6, 12.5e6 and 12.9e6 s), the bound is provably loose by 37, 57
and 76 nodes at least (*bound loose*, without exact solves). The gap to the composite bound is 0.045, 0.089 and 0.468 instead of
0.107, 0.221 and 0.732.

**What makes the at-scale bound loose: GPU shares counted as fractions.** Its GPU row (and every
region's GPU demand) counts a share pod as its share of a GPU, `pod_whole + pod_share`. The rules put
shares on GPU devices of one GPU each that no whole-GPU pod uses (`rules.pack_shares`), and the trace's
shares pack badly: 0.81 is the most common size, a 0.81 share leaves room only for shares of 0.19 or
less, and no two shares above half a GPU ever share a device. At 12e6 s:

| GPU model | shares | their sum (GPUs) | devices, L2 | devices, configuration LP | of them 0.81 |
|---|---:|---:|---:|---:|---:|
| G2 | 605 | 383.1 | 452 | 456 | 326 |
| P100 | 281 | 145.1 | 163 | 165 | 113 |
| T4 | 843 | 397.6 | 414 | 428 | 112 |
| V100M16 | 98 | 73.6 | 91 | 91 | 81 |
| V100M32 | 35 | 21.0 | 25 | 25 | 14 |

Counted in devices, V100M16's bound falls from 32 to 28 at 12e6 s, the proven optimum (HiGHS proved 28
optimal in 22 s, CP-SAT in 20 s: `solve_exact` on the piece), and from 22 to 5 at 12.5e6 s, where IPC
reaches 5: there the whole gap was the bound's. P100 57 -> 48 (an exact plan reaches 47), G2 235 -> 226
(IPC 223), T4 217 -> 202 (IPC 188).

**IPC short.** Exact solves of the small pieces find more than IPC: V100M32 at 12e6 s, 13 empty nodes
(CP-SAT, 60 s limit, proved optimal in 41 s) against IPC's 11 in its plan and 9 on the piece alone: the
optimum empties all nine 4-GPU nodes and four of the 21 8-GPU ones, IPC (candidates with fewest pods
first) empties six 8-GPU nodes and three 4-GPU ones; P100 with its two CPU-only pods, 47 (HiGHS, 90 s; 52 proven) against
44; G3, 14 against 13 in the plan (14 alone); an 80-node sample of T4's 2-GPU nodes with their
CPU-only pods, 40 (HiGHS, 60 s) against 39. That is 1-3 nodes a piece. Put together (the pieces'
plans touch disjoint nodes and pods), the best plans per piece at 12e6 s (A10 0, G2 224 and T4 188 by
IPC alone, G3 14, P100 47, V100M16 28, V100M32 13) empty 514 nodes, 5 more than IPC's plan: of that
snapshot's 61-node gap, at least 37 are the bound's, at least 5 IPC's, at most 19 open. Tried on the three snapshots and
not kept (`planner/heuristics/ipc.py` is unchanged): candidates ordered by node size first (V100M32 alone
9 -> 12 at 12e6 s and 6 -> 9 at 12.5e6 s, but the whole snapshot 508 against 509 at 12e6 s: the order
across models changes the other pieces), the smaller nodes of each GPU model first (509, 306, 43
against 509, 307, 41) and shares placed best-fit on devices (509, 308, 40 and 510, 310, 40): changes
of one to three nodes either way on the snapshots, not an improvement.

**Open: T4.** The open part (24, 30, 36 nodes without exact solves) is mostly T4, whose device bound
is 14, 22 and 27 nodes above IPC. T4 holds nearly all CPU-only pods (717, 890, 1,052), which the
relaxed piece drops; they do not bind in total (the pieces' device counts leave room for every pod's
CPUs and memory on the nodes they keep), and IPC's T4 nodes end with every GPU device in use (464
devices at 12e6 s, where the pods need at least 438 counted over the whole piece; per node they may
need more). T4 is too large for the exact model (HiGHS, 150 s: no solution, no bound). Samples of
its 2-GPU nodes with all their pods, at 12e6 s (HiGHS, 90 s): 40 nodes (seed 0), IPC 19 = exact 19 =
proven 19 = device bound 19; 40 nodes (seed 1), IPC 17, exact 18, device bound 18 (so 18 is the
optimum); 80 nodes, IPC 39, exact 40, proven 43, device bound 42. At 12.9e6 s, 80 nodes: IPC 5, exact 5
found and 12 proven in 60 s, device bound 11. At 12e6 s the device bound is tight or within two nodes
of the best plan on the samples and IPC within one of it, so the T4 remainder is likely shared between
the two; at 12.9e6 s the sample stays undecided (5 to 11). Not decided here.

**Handover to the at-scale bound** (done for issue 45: `planner/models/share_devices.py`, used by
the closed form and the class LP; tables from runs before it show the older bound). Valid and
small: in `empties_bound`, for the resource `gpus`, give each region j the demand
`sum of the whole GPUs of its movable pods + D_j` instead of `sum of pod_whole + pod_share`, where D_j
is a lower bound on the devices the shares of the region need (its movable shares together with the
locked shares on its locked nodes), and give a locked node the residual `cap_gpus - whole GPUs of its
locked pods` (the devices not held by whole-GPU pods; its locked shares are in D_j). D_j: the larger of
`ceil(sum of shares)`, Martello and Toth's L2 and the configuration LP's bound (`share_devices` and
`pattern_devices` in this script; the LP bound is read from a dual solution scaled to be exactly
feasible, so it does not rest on solver tolerance). Bin capacity 1 + `rules.EPS`. Both are tested here
against brute-force bin packing (`tests/oracle/test_openb_gap_bound.py`), and `device_bound` against
the exact oracle on tiny snapshots. Nodes: every GPU model with shares; on openb all of the gap the
bound loses is in this row (the bound binds on GPUs on every piece but one).
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one snapshot, 10 s exact solves, pieces up to 60 nodes")
    parser.add_argument("--times", type=float, nargs="+", help="snapshot times in seconds (default 12e6 12.5e6 12.9e6)")
    parser.add_argument("--exact-s", type=float, default=40.0, help="time limit of one exact solve (default 40)")
    parser.add_argument("--exact-max-nodes", type=int, default=60, help="largest piece solved exactly (default 60; 150 adds P100)")
    parser.add_argument("--exact-snapshots", type=int, default=1, help="how many of the snapshots get exact solves (default 1)")
    args = parser.parse_args()
    times = [int(t) for t in (args.times or ([12_000_000] if args.quick else [12_000_000, 12_500_000, 12_900_000]))]
    exact_s, max_nodes = (10.0, 60) if args.quick else (args.exact_s, args.exact_max_nodes)
    summaries, per_piece = [], []
    for k, at_s in enumerate(times):
        summary, rows = snapshot_rows(at_s, exact_s if k < args.exact_snapshots else None, max_nodes)
        summaries.append(summary)
        per_piece.append((summary["snapshot"], rows))
    command = " ".join([".venv/bin/python benchmarks/openb_gap.py", *sys.argv[1:]])
    write_results(summaries, per_piece, command, exact_s, max_nodes)


if __name__ == "__main__":
    main()
