"""Room for large jobs (issue 44): `defrag --objective room` against the empty-nodes plan at the same move budget.

For each ASI-like snapshot (`generate_asi`, 40% locked pods, GPU allocation 60-80% cycling by seed:
seeds 0-4, and the held-out seeds 5-6 reported separately, chosen after the heuristic was tuned on
seed 0) the default plan (`planner defrag`: IPC, trim greedy, objective empty-nodes) runs first; its
moves M are the budget of two room plans (`--objective room --max-moves M`): one for 128-GPU requests
only (`--requests 128g1536c`), one for the default shapes (256g3072c, 128g1536c, 64g768c, largest
first). For each plan: the Fig. 14 within-switch counts (`capacity.py`: per GPU model and access
switch, floor(GPU slots / G), summed) of every shape after it, its moves and wall time; for the room
plans the upper bound on the count of their first shape (`report.bound`). Every plan is validated by
the planner before it is returned.

Target: room (128g) >= 1.3x the empty-nodes plan's 128-GPU count, and never fewer on any shape it plans for.

Also (issue 44): the openb replays (`--only openb`: no switches there, node-level shapes; see its
section), the same replays on a stated switch layout (`--only openb-switches`: each GPU model's nodes cut
into switches of 32, so 128-GPU requests exist there too) and 37,707 nodes end to end (`--only scale`:
`planner defrag --objective room` as a child process, target <= 30 s). All sections by default.

    .venv/bin/python benchmarks/room.py [--nodes 1000] [--seeds 0 1 2 3 4] [--held-out 5 6] [--only asi,openb,openb-switches,scale]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import REPO, RESULTS, cached_asi, code_version, machine

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.heuristics.switch_room import RoomShape, room_counts
from planner.instances.asi import generate_asi
from planner.metrics import parse_shape
from planner.plans import DefragPlan
from planner.state import ClusterState
from planner.validate.defrag import apply_plan

SHAPES = ("256g3072c", "128g1536c", "64g768c")
ALLOCATIONS = (0.6, 0.65, 0.7, 0.75, 0.8)
TARGET = 1.3


def timed(cluster: Cluster, options: DefragOptions) -> tuple[DefragPlan, float]:
    start = time.perf_counter()
    plan = plan_defrag(cluster, options)
    assert isinstance(plan, DefragPlan)
    return plan, time.perf_counter() - start


def three_plans(cluster: Cluster, seed: int, first: str, shapes: tuple[str, ...]) -> dict[str, Any]:
    """The empty-nodes plan, then room plans for ``first`` alone and for ``shapes`` at its moves: the
    counts of ``shapes`` before and after each, moves, wall times, bounds and where each room plan came from."""
    empty, empty_s = timed(cluster, DefragOptions(seed=seed, executor="inline"))
    budget = len(empty.moves())
    room1, room1_s = timed(cluster, DefragOptions(objective="room", requests=[first], max_moves=budget, seed=seed))
    room_all, room_all_s = timed(cluster, DefragOptions(objective="room", requests=list(shapes), max_moves=budget, seed=seed))
    rooms = [RoomShape(parse_shape(text)) for text in shapes]

    def counts(plan: DefragPlan | None) -> list[int]:
        return room_counts(ClusterState(cluster if plan is None else apply_plan(cluster, plan)), rooms)

    return {
        "before": counts(None),
        "empty": counts(empty),
        "room1": counts(room1),
        "room_all": counts(room_all),
        "moves": (budget, len(room1.moves()), len(room_all.moves())),
        "wall_s": (empty_s, room1_s, room_all_s),
        "bound1": room1.report.bound if room1.report is not None else None,
        "bound_all": room_all.report.bound if room_all.report is not None else None,
        "plan_from": tuple(str(getattr(p.report, "room_plan", "?")).split(":")[0].split(" (")[0] for p in (room1, room_all)),
    }


def run_one(nodes: int, seed: int) -> dict[str, Any]:
    allocation = ALLOCATIONS[seed % len(ALLOCATIONS)]
    plans = three_plans(generate_asi(nodes, seed, allocation=allocation), seed, "128g1536c", SHAPES)
    row = {
        "nodes": nodes,
        "seed": seed,
        "allocation": allocation,
        **plans,
        "room128": plans["room1"],
        "bound128": plans["bound1"],
        "bound256": plans["bound_all"],
    }
    print(row, flush=True)
    return row


def first_shape_cells(r: dict[str, Any], k: int) -> list[str]:
    """Before, empty-nodes, room (first shape), ratio and bound of shape k, then every shape's counts after both plans."""
    ratio = f"{r['room1'][k] / r['empty'][k]:.2f}x" if r["empty"][k] else "n/a (0 empty-nodes)"
    counts = [r["before"][k], r["empty"][k], r["room1"][k], ratio, f"{r['bound1']:g}"]
    return [str(c) for c in counts] + [" / ".join(map(str, r["empty"])), " / ".join(map(str, r["room_all"]))]


def plan_cells(r: dict[str, Any]) -> str:
    return " / ".join(map(str, r["moves"])) + " | " + " / ".join(f"{t:.1f}" for t in r["wall_s"])


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        (
            "| nodes | seed | alloc | 128g before | 128g empty-nodes | 128g room (128g) | ratio | bound | "
            "256g / 128g / 64g empty-nodes | 256g / 128g / 64g room (all) | 256g bound | moves (empty / room128 / room all) | wall s |"
        ),
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---|---|",
    ]
    lines += [
        f"| {r['nodes']:,} | {r['seed']} | {r['allocation']:.0%} | " + " | ".join(first_shape_cells(r, 1)) + f" | {r['bound_all']:g} | {plan_cells(r)} |"
        for r in rows
    ]
    return lines


def summary(rows: list[dict[str, Any]]) -> str:
    empty = sum(r["empty"][1] for r in rows)
    room = sum(r["room128"][1] for r in rows)
    fewer = [r["seed"] for r in rows if r["room128"][1] < r["empty"][1] or r["room_all"] < r["empty"]]
    worst = min((r["room128"][1] / r["empty"][1] for r in rows if r["empty"][1]), default=float("inf"))
    met = room >= TARGET * empty and not fewer
    fallback = [r["seed"] for r in rows if "empty-nodes" in r["plan_from"]]
    return (
        f"Room plans that are the empty-nodes plan (it left more room than the switch-targeted one): seeds {fallback or 'none'}. "
        f"128-GPU within-switch requests in all: {room} (room) against {empty} (empty-nodes), {room / max(empty, 1):.2f}x; "
        f"lowest ratio on one snapshot {worst:.2f}x; snapshots where a room plan has fewer (128g, or lexicographically over the three shapes): {fewer or 'none'}. "
        f"Target (>= {TARGET}x, never fewer): {'met' if met else 'NOT met'}."
    )


# -- openb: the Alibaba 2023 trace replays (no switches: each node is its own domain) ----------------

OPENB_SHAPES = ("8g64c256m", "4g32c128m", "2g16c64m")
"""Node-level shapes: openb's nodes carry no switch (``asw``), so a node is its own domain and the
largest request that can start within one is 8 GPUs; 8 CPUs and 32 GiB a GPU, what the trace's
multi-GPU pods mostly ask."""
OPENB_FAMILIES = (
    ("default", 12_500_000.0, 0),
    ("default", 12_500_000.0, 1),
    ("default", 12_500_000.0, 2),
    ("gpushare40", 12_700_000.0, 0),
    ("multigpu20", None, 0),
    ("multigpu50", None, 0),
)
"""(pod list, replay time without departures or None for the untimed lists, replay seed)."""


def openb_row(pods: str, at_s: float | None, seed: int) -> dict[str, Any]:
    from planner.instances.openb import generate_openb  # deferred: reads the trace files, only this section needs them

    cluster = generate_openb(pods=pods, at_s=at_s, departures=False, seed=seed) if at_s is not None else generate_openb(pods=pods, seed=seed)
    plans = three_plans(cluster, seed, OPENB_SHAPES[0], OPENB_SHAPES)
    row = {
        "family": f"{pods}{'' if at_s is None else f' at {at_s:.3g} s'}, seed {seed}",
        "nodes": len(cluster.nodes),
        **plans,
        "room8": plans["room1"],
        "bound8": plans["bound1"],
    }
    print("openb", row, flush=True)
    return row


def openb_section(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## openb replays (Alibaba 2023 GPU trace, 1,213 GPU nodes)",
        "",
        "openb's nodes carry no switch: the trace has no topology and `planner/instances/openb.py` invents none, so every",
        "node is its own domain (`rules.topology_domain`), no 128-GPU request can start within one (both plans: 0 on every",
        "replay), and `--objective room` there counts node-level requests. Shapes: " + ", ".join(OPENB_SHAPES) + " (8 CPUs and 32 GiB",
        "a GPU, what the trace's multi-GPU pods mostly ask). Snapshots: `generate_openb(pods, at_s, departures=False, seed)`",
        "(pods created by `at_s` stay; the untimed lists all arrive). *empty-nodes*: the default plan; its moves are the",
        "`--max-moves` of both room plans; *room (8g)*: `--requests " + OPENB_SHAPES[0] + "`; *room (all)*: the three shapes, largest",
        "first. *from*: which plan `--objective room` returned (`report.room_plan`): the switch-targeted heuristic's, or the",
        "empty-nodes plan at the same limits when that leaves more room (the room objective never returns less room).",
        "",
        "| replay | 8g before | 8g empty-nodes | 8g room (8g) | ratio | 8g bound | 8g / 4g / 2g empty-nodes | 8g / 4g / 2g room (all) | from (8g / all) | moves (empty / room 8g / room all) | wall s |",
        "|---|---:|---:|---:|---:|---:|---|---|---|---|---|",
    ]
    lines += [f"| {r['family']} | " + " | ".join(first_shape_cells(r, 0)) + f" | {' / '.join(r['plan_from'])} | {plan_cells(r)} |" for r in rows]
    empty = sum(r["empty"][0] for r in rows)
    room = sum(r["room8"][0] for r in rows)
    fewer = [r["family"] for r in rows if r["room8"][0] < r["empty"][0] or r["room_all"] < r["empty"]]
    lines += [
        "",
        (
            f"8-GPU node-level requests in all: {room} (room, 8g) against {empty} (empty-nodes), {room / max(empty, 1):.2f}x. Replays where a room "
            f"plan has fewer (8g, or lexicographically over the three shapes): {fewer or 'none'}. Target (>= {TARGET}x): "
            f"{'met' if room >= TARGET * empty else 'NOT met'}; never fewer: {'met' if not fewer else 'NOT met'}."
        ),
        "",
    ]
    return lines


# -- openb with switches: the trace's pods on a stated switch layout ----------------------------------

OPENB_SWITCH_NODES = 32
"""Nodes per access switch in the synthetic layout: ASI's smallest switch (``asi_fabric.ASW_NODES``)."""


def with_switches(cluster: Cluster, per_switch: int = OPENB_SWITCH_NODES) -> Cluster:
    """``cluster`` with each GPU model's nodes, in name order, cut into access switches of ``per_switch``
    nodes (the last one smaller): openb records no topology, so this layout is stated, not the trace's."""
    names: dict[str, list[str]] = {}
    for node in cluster.nodes:
        names.setdefault(node.gpu_model, []).append(node.name)
    asw = {name: f"asw-{model}-{i // per_switch:03d}" for model in sorted(names) for i, name in enumerate(sorted(names[model]))}
    return cluster.model_copy(update={"nodes": [node.model_copy(update={"asw": asw[node.name]}) for node in cluster.nodes]})


def openb_switch_row(pods: str, at_s: float | None, seed: int) -> dict[str, Any]:
    from planner.instances.openb import generate_openb  # deferred: reads the trace files, only this section needs them

    cluster = generate_openb(pods=pods, at_s=at_s, departures=False, seed=seed) if at_s is not None else generate_openb(pods=pods, seed=seed)
    plans = three_plans(with_switches(cluster), seed, "128g1536c", SHAPES)
    row = {"family": f"{pods}{'' if at_s is None else f' at {at_s:.3g} s'}, seed {seed}", **plans, "room128": plans["room1"]}
    print("openb-switches", row, flush=True)
    return row


def openb_switch_section(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        f"## openb replays on a stated switch layout ({OPENB_SWITCH_NODES} nodes per access switch)",
        "",
        f"The same replays with each GPU model's nodes, in name order, cut into access switches of {OPENB_SWITCH_NODES} nodes (`with_switches`:",
        "ASI's smallest switch; the last switch of a model is smaller). The trace records no topology, so the layout is this",
        "benchmark's assumption; the pods, their placement and every rule are the trace's. Columns as in the ASI tables.",
        "",
        "| replay | 128g before | 128g empty-nodes | 128g room (128g) | ratio | bound | 256g / 128g / 64g empty-nodes | 256g / 128g / 64g room (all) | from (128g / all) | moves (empty / room128 / room all) | wall s |",
        "|---|---:|---:|---:|---:|---:|---|---|---|---|---|",
    ]
    lines += [f"| {r['family']} | " + " | ".join(first_shape_cells(r, 1)) + f" | {' / '.join(r['plan_from'])} | {plan_cells(r)} |" for r in rows]
    empty = sum(r["empty"][1] for r in rows)
    room = sum(r["room128"][1] for r in rows)
    fewer = [r["family"] for r in rows if r["room128"][1] < r["empty"][1] or r["room_all"] < r["empty"]]
    lines += [
        "",
        (
            f"128-GPU within-switch requests in all: {room} (room) against {empty} (empty-nodes)"
            f"{f', {room / empty:.2f}x' if empty else ''}. Replays where a room plan has fewer: {fewer or 'none'}. "
            f"Target (>= {TARGET}x, never fewer): {'met' if room >= TARGET * empty and room > empty and not fewer else 'NOT met'}."
        ),
        "",
    ]
    return lines


# -- scale: 37,707 nodes end to end --------------------------------------------------------------

SCALE_NODES = 37707
SCALE_RUNS = 3
"""Counted runs per row, after one warm-up run."""


def scale_row(nodes: int, seed: int, allocation: float, extra: list[str]) -> dict[str, Any]:
    """``planner defrag SNAP --objective room EXTRA --out plan.json`` as a child process on the cached
    snapshot of ``nodes`` (37,707 for the target): wall time end to end (interpreter start, snapshot read, plan, validation, write)."""
    path = cached_asi(nodes, seed, allocation)
    walls = []
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.json"
        for _ in range(1 + SCALE_RUNS):  # the first run is a warm-up, not counted (bytecode compiled, files cached)
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "planner", "defrag", str(path), "--objective", "room", *extra, "--out", str(out)],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=False,
            )
            walls.append(time.perf_counter() - start)
            if done.returncode != 0:
                sys.exit(f"planner defrag --objective room {' '.join(extra)} failed: {done.stderr[-2000:]}")
        report = json.loads(out.read_text())["report"]
    wall_s = sorted(walls[1:])
    row = {
        "nodes": nodes,
        "seed": seed,
        "allocation": allocation,
        "flags": " ".join(extra) or "(default shapes)",
        "wall_s": wall_s,
        "plan_s": report["wall_s"],
        "moves": report["moves"],
        "shapes": report["room"]["shapes"],
        "gap": report["gap"],
        "plan_from": str(report.get("room_plan", "?")).split(":")[0].split(" (")[0],
        "load": (load, os.getloadavg()[0]),
    }
    print("scale", row, flush=True)
    return row


def scale_section(rows: list[dict[str, Any]]) -> list[str]:
    sizes = ", ".join(f"{nodes:,}" for nodes in sorted({r["nodes"] for r in rows}))
    lines = [
        f"## {sizes} nodes end to end",
        "",
        "`planner defrag SNAP --objective room [flags] --out plan.json` as a child process on `generate_asi(nodes, seed, allocation)`",
        "(cached as JSON under benchmarks/.cache/): *wall s* is the whole command (interpreter start, snapshot read and checks,",
        (
            "the room plan, the empty-nodes plan it is compared with, waves, validation, writing the plan), min / median / max of"
            f" {SCALE_RUNS} runs after one warm-up run that is not counted; *plan s* the planner's own"
        ),
        "`report.wall_s`. No move limit. Target: <= 30 s. *load*: the 1-minute load average before and after (2 cores).",
        "",
        "| nodes | seed | alloc | flags | wall s | plan s | moves | per shape: before -> after (bound) | gap (first shape) | from | load |",
        "|---:|---:|---:|---|---:|---:|---:|---|---:|---|---|",
    ]
    for r in rows:
        shapes = "; ".join(f"{s['shape']} {s['before']} -> {s['after']} ({s['bound']})" for s in r["shapes"])
        lines.append(
            f"| {r['nodes']:,} | {r['seed']} | {r['allocation']:.0%} | {r['flags']} | {' / '.join(f'{w:.1f}' for w in (r['wall_s'][0], statistics.median(r['wall_s']), r['wall_s'][-1]))} | {r['plan_s']:.1f} | {r['moves']:,} | {shapes} | {r['gap']:.3f} "
            f"| {r['plan_from']} | {r['load'][0]:.1f} / {r['load'][1]:.1f} |"
        )
    worst = max((statistics.median(r["wall_s"]) for r in rows), default=0.0)
    slowest = max((r["wall_s"][-1] for r in rows), default=0.0)
    lines += ["", f"Largest median {worst:.1f} s, slowest run {slowest:.1f} s: target (<= 30 s) {'met' if worst <= 30 else 'NOT met'} (on the median).", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=None, help="default 1000 (200 500 with --only exact)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--held-out", type=int, nargs="+", default=[5, 6])
    parser.add_argument("--out", default=None, help="default: results/room.md (results/room_exact.md with --only exact)")
    parser.add_argument(
        "--only",
        default="asi,openb,openb-switches,scale",
        help="comma-separated sections: asi, openb, openb-switches, scale; or exact alone (the exact room model, method exact, at --nodes, default 200 500)",
    )
    parser.add_argument("--openb", type=int, default=len(OPENB_FAMILIES), help="the first N openb replays")
    parser.add_argument("--scale-nodes", type=int, default=SCALE_NODES)
    parser.add_argument("--scale-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--scale-allocations", type=float, nargs="+", default=[0.7])
    parser.add_argument("--time-limit", type=float, default=60.0, help="--only exact: the solver's time limit per plan, in seconds")
    parser.add_argument("--solver", choices=["highs", "cpsat"], default="highs", help="--only exact: the back-end")
    args = parser.parse_args()
    if args.only == "exact":
        exact_main(args)
        return
    args.out = args.out or str(RESULTS / "room.md")
    only = set(args.only.split(","))
    sections = []
    for nodes in (args.nodes or [1000]) if "asi" in only else []:
        for title, seeds in (("Seeds", args.seeds), ("Held-out seeds", args.held_out)):
            rows = [run_one(nodes, seed) for seed in seeds]
            sections += [f"### {nodes:,} nodes: {title.lower()} {', '.join(map(str, seeds))}", "", *table(rows), "", summary(rows), ""]
    if "openb" in only:
        sections += openb_section([openb_row(*family) for family in OPENB_FAMILIES[: args.openb]])
    if "openb-switches" in only:
        sections += openb_switch_section([openb_switch_row(*family) for family in OPENB_FAMILIES[: args.openb]])
    if "scale" in only:
        runs = [
            (args.scale_nodes, seed, allocation, flags)
            for allocation in args.scale_allocations
            for seed in args.scale_seeds
            for flags in ([], ["--requests", "128g1536c"])
        ]
        sections += scale_section([scale_row(*run) for run in runs])
    text = [
        "# Room for large jobs: objective room against empty nodes",
        "",
        "Generated by `benchmarks/room.py` (" + " ".join(sys.argv[1:]) + f"); {code_version()}; {machine()}. The machine was",
        "shared with other work: wall times are indicative.",
        "",
        "Counts are the Fig. 14 within-switch counts of `planner/capacity.py` after each plan (per GPU model and access",
        "switch, floor(GPU slots / G), summed). *empty-nodes*: the default `planner defrag` plan (IPC, trim greedy);",
        "its moves are the `--max-moves` budget of both room plans. *room (128g)*: `--objective room --requests 128g1536c`;",
        "*room (all)*: `--objective room` with the default shapes 256g3072c, 128g1536c, 64g768c, largest first",
        "(lexicographic). *bound*: the room plan's `report.bound` on the count of its first shape (valid for any plan;",
        "the argument is in docs/algorithms.md). Ratio: room (128g) over empty-nodes for 128-GPU requests.",
        "",
        *sections,
    ]
    Path(args.out).write_text("\n".join(text))
    print(f"wrote {args.out}")


# -- --only exact: the exact room model (method exact) -----------------------------------------------


EXACT_DOC = """The exact room model (`--objective room --method exact`, `planner/models/room_exact.py`): the exact defrag
model with per-node slot and per-switch room variables, the leave cuts (`models/room_cuts.py`: the pods that
must leave a switch for each room) and the capacity rows (per GPU product, the rooms its free GPUs can hold),
solved piece by piece where no row links the GPU products (`models/room_pieces.py`: no move budget here, pods
kept to their product by default) and lexicographically (the shapes largest first, then
fewest moves, then fewest GPUs moved; each count phase also weighs the later counts 64 times below its own,
so its solution starts the next phase well), warm-started from the room heuristic; a moves or GPUs-moved phase the
whole model has not proven in half its time is solved over the minimal level vectors (`models/room_levels.py`), and
with a count unproven both keep the start's rooms in their groups (no moves bound then). Default shapes 256g3072c,
128g1536c, 64g768c. *proven*: `status: optimal`, the whole lexicographic objective proven (every count at its
proven maximum, moves and GPUs moved at the proven least); *counts proven*: every count at its proven maximum
(`lexicographic_bound`), the moves perhaps not. *bound*: `report.bound` on the 256-GPU count (valid for any plan),
*gap*: `report.gap`. Heuristic: the room heuristic's counts (its plan is the warm start). Wall time includes the
heuristic, model building, every phase and validation."""


def exact_row(nodes: int, seed: int, time_limit_s: float, solver: str) -> dict[str, Any]:
    allocation = ALLOCATIONS[seed % len(ALLOCATIONS)]
    cluster = generate_asi(nodes, seed, allocation=allocation)
    options = DefragOptions(objective="room", method="exact", seed=seed, time_limit_s=time_limit_s, solver=solver, solver_workers=8)
    plan, wall_s = timed(cluster, options)
    report = plan.report
    assert report is not None
    shapes = report.room["shapes"]  # type: ignore[attr-defined]  # the room report
    row = {
        "nodes": nodes,
        "seed": seed,
        "allocation": allocation,
        "status": report.status,
        "counts_proven": all(shape["lexicographic_bound"] == shape["after"] for shape in shapes),
        "before": [shape["before"] for shape in shapes],
        "heuristic": report.heuristic_counts,  # type: ignore[attr-defined]  # an extra field of exact room plans
        "after": [shape["after"] for shape in shapes],
        "bound": report.bound,
        "gap": report.gap,
        "moves": report.moves,
        "moves_bound": report.moves_bound,  # type: ignore[attr-defined]  # as above
        "wall_s": wall_s,
    }
    print(row, flush=True)
    return row


def exact_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| nodes | seed | alloc | status | counts proven | 256g / 128g / 64g before | heuristic | exact | 256g bound | gap | moves | moves bound | wall s |",
        "|---:|---:|---:|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['nodes']:,} | {r['seed']} | {r['allocation']:.0%} | {r['status']} | {'yes' if r['counts_proven'] else 'no'} "
            f"| {' / '.join(map(str, r['before']))} | {' / '.join(map(str, r['heuristic']))} | {' / '.join(map(str, r['after']))} "
            f"| {r['bound']} | {r['gap']:g} | {r['moves']} | {r['moves_bound'] if r['moves_bound'] is not None else '-'} | {r['wall_s']:.1f} |"
        )
    return lines


def exact_summary(rows: list[dict[str, Any]], time_limit_s: float) -> str:
    proven = sum(r["status"] == "optimal" for r in rows)
    counts = sum(r["counts_proven"] for r in rows)
    within = sum(r["status"] == "optimal" and r["wall_s"] <= time_limit_s + 5 for r in rows)
    better = sum(r["after"] > r["heuristic"] for r in rows)
    return (
        f"Proven optimal (whole lexicographic objective): {proven} of {len(rows)} ({within} within the {time_limit_s:g} s limit, "
        f"5 s of slack for validation); counts proven: {counts} of {len(rows)}; exact above the heuristic's counts: {better} of {len(rows)}."
    )


def exact_main(args: argparse.Namespace) -> None:
    sections = []
    for nodes in args.nodes or [200, 500]:
        for title, seeds in (("Seeds", args.seeds), ("Held-out seeds", args.held_out)):
            rows = [exact_row(nodes, seed, args.time_limit, args.solver) for seed in seeds]
            sections += [
                f"### {nodes:,} nodes: {title.lower()} {', '.join(map(str, seeds))}",
                "",
                *exact_table(rows),
                "",
                exact_summary(rows, args.time_limit),
                "",
            ]
    out = Path(args.out or RESULTS / "room_exact.md")
    text = [
        "# Room for large jobs: the exact model",
        "",
        "Generated by `benchmarks/room.py` (" + " ".join(sys.argv[1:]) + f"); {code_version()}; {machine()}; solver {args.solver},",
        f"8 workers, time limit {args.time_limit:g} s per plan (the full run: `--only exact`, i.e. --nodes 200 500 --seeds 0 1 2 3 4",
        "--held-out 5 6 --time-limit 60). The machine may have been shared with other work: wall times are indicative.",
        "",
        EXACT_DOC,
        "",
        *sections,
    ]
    out.write_text("\n".join(text))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
