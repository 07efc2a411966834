"""Kubernetes itself as the judge: `planner verify` on every kind of plan -> benchmarks/results/verify.md

For each input (a kubectl List) the plans `planner defrag`, `defrag --make-room J` (the pending jobs none of whose
pods run, at most three), `preempt --job J` (the first such job whose plan places pods) and `allocate` make with their
defaults (in process: the same import and engine calls), each replayed by `planner verify` on its own throwaway
control plane (`planner/kube/verify.py`: kube-scheduler, the API server and the Eviction API of
k8s.io/kubernetes v1.37.2, the binary of controlplane/). Tabulated per plan: moves, evictions and placements checked,
refused (each refusal listed with its pod, node and Kubernetes' message), the control plane's start (to ready) and
the replay's time.

Inputs: instances/kubernetes/gpu-cluster.json; `generate_kubernetes_mixed(nodes, seed)` at 60 nodes (seed 0, used
while `verify` was written, and seeds 101 and 102, never run before this benchmark) and, with --sizes 1000, at 1,000
nodes (seed 0). DRA fleets (issue 63), with --dra-seeds: instances/kubernetes/dra-fleet.json and
`dra_fleet(60, seed)` (`planner generate kubernetes-dra --nodes 60 --seed S`; seed 212 never run before this
benchmark): kube-scheduler's DynamicResources plugin allocates each replacement's fresh claim.

    PLANNER_CONTROLPLANE=... .venv/bin/python benchmarks/verify.py [--sizes 60 1000] [--dra-seeds 212] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# benchmarks/ (this script's directory, first on the path) goes last: its kubernetes.py must not stand in for the client
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"] + [str(REPO / "benchmarks")]
from _measure import RESULTS, code_version, machine

from planner.adapters.kubernetes import import_kubernetes
from planner.adapters.kubernetes_config import load_config
from planner.engine import DefragOptions, plan_defrag
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.instances.kubernetes_dra import dra_fleet
from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
from planner.kube.apply_client import connect
from planner.kube.controlplane import start, stop
from planner.kube.verify import VerifyOptions, verify_plan
from planner.plans import AnyPlan

EXAMPLE = REPO / "instances" / "kubernetes" / "gpu-cluster.json"
DRA_EXAMPLE = REPO / "instances" / "kubernetes" / "dra-fleet.json"
DRA_NODES = 60
SEEDS = {60: [0, 101, 102], 1000: [0]}
UNTUNED = {101, 102}
MAKE_ROOM_JOBS = 3
KINDS = ("defrag", "make-room", "preempt", "allocate")
COMMAND = "PLANNER_CONTROLPLANE=... .venv/bin/python benchmarks/verify.py"


def plans_of(objects: dict[str, Any], name: str) -> list[tuple[str, AnyPlan | str]]:
    """(what, plan or why there is none) for every kind of plan the input admits."""
    cluster = import_kubernetes([(json.dumps(objects), name)], load_config(None)).cluster
    found: list[tuple[str, AnyPlan | str]] = [("defrag", plan_defrag(cluster, DefragOptions()))]  # type: ignore[list-item]
    running = {p.job for p in cluster.pods if p.node is not None}
    waiting = sorted({p.job for p in cluster.pods if p.node is None and p.job is not None} - running)
    if waiting:
        jobs = waiting[:MAKE_ROOM_JOBS]
        found.append((f"make-room {', '.join(jobs)}", plan_defrag(cluster, DefragOptions(make_room=jobs))))  # type: ignore[arg-type]
    else:
        found.append(("make-room", "no pending job without a running pod"))
    preempt: tuple[str, AnyPlan | str] = ("preempt", "no pending job without a running pod")
    for job in waiting:
        plan = plan_preempt(cluster, job, PreemptOptions())
        preempt = (f"preempt --job {job}", plan)  # type: ignore[assignment]
        if plan.placements:  # type: ignore[union-attr]
            break
    found.append(preempt)
    found.append(("allocate", plan_allocate(cluster, AllocateOptions())))  # type: ignore[arg-type]
    return found


def verify_one(list_path: Path, plan: AnyPlan) -> dict[str, Any]:
    """One throwaway control plane on the List, the plan replayed on it, the control plane stopped."""
    state = Path(tempfile.mkdtemp(prefix="verify-bench-")) / "state"
    t0 = time.perf_counter()
    try:
        running = start(str(list_path), state, timeout_s=1800)
        ready_s = time.perf_counter() - t0
        kube = connect(str(running.kubeconfig), None)
        t1 = time.perf_counter()
        result = verify_plan(kube, plan, f"bench{int(t1)}", VerifyOptions(step_timeout_s=300), lambda *a, **k: None)
        result["verify_s"] = time.perf_counter() - t1
    finally:
        stop(state)
        shutil.rmtree(state.parent, ignore_errors=True)
    result["ready_s"] = ready_s
    result["pods_loaded"] = running.ready.get("load", {}).get("pods") if isinstance(running.ready.get("load"), dict) else None
    return result


def inputs(sizes: list[int], seeds: list[int] | None = None, dra_seeds: list[int] | None = None) -> list[tuple[str, Any, bool]]:
    found: list[tuple[str, Any, bool]] = [("gpu-cluster.json", lambda: json.loads(EXAMPLE.read_text()), False)]
    for nodes in sizes:
        for seed in seeds if seeds is not None else SEEDS.get(nodes, [0]):
            untuned = seed in UNTUNED or seed not in SEEDS.get(nodes, [])
            found.append((f"mixed {nodes:,} seed {seed}", lambda nodes=nodes, seed=seed: generate_kubernetes_mixed(nodes, seed), untuned))
    if dra_seeds is not None:
        found.append(("dra-fleet.json", lambda: json.loads(DRA_EXAMPLE.read_text()), False))
        for seed in dra_seeds:
            found.append((f"dra {DRA_NODES} seed {seed}", lambda seed=seed: dra_fleet(DRA_NODES, seed), True))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[60])
    parser.add_argument("--out", default=str(RESULTS / "verify.md"))
    parser.add_argument(
        "--seeds", type=int, nargs="*", help="these seeds at every size instead of the defaults (a seed not among the defaults of its size is untuned)"
    )
    parser.add_argument("--dra-seeds", type=int, nargs="*", help="also the DRA fleets: dra-fleet.json and 60-node generated Lists of these (untuned) seeds")
    parser.add_argument("--plans", nargs="*", choices=KINDS, default=list(KINDS), help="the kinds of plan to verify")
    parser.add_argument("--keep", help="rows of an earlier run (the .json written next to its --out) to report first; its inputs are not run again")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = json.loads(Path(args.keep).read_text()) if args.keep else []
    done = {r["input"] for r in rows}
    started = time.perf_counter()
    for name, load, untuned in inputs(args.sizes, args.seeds, args.dra_seeds):
        if name in done:
            continue
        objects = load()
        work = Path(tempfile.mkdtemp(prefix="verify-list-"))
        list_path = work / "list.json"
        list_path.write_text(json.dumps(objects))
        nodes = sum(1 for i in objects["items"] if i.get("kind") == "Node")
        pods = sum(1 for i in objects["items"] if i.get("kind") == "Pod")
        for what, plan in plans_of(objects, name):
            if what.split()[0] not in args.plans:
                continue
            row: dict[str, Any] = {"input": name, "untuned": untuned, "nodes": nodes, "pods": pods, "what": what}
            if isinstance(plan, str):
                row["note"] = plan
            else:
                row.update(verify_one(list_path, plan))
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "refusals"}), file=sys.stderr, flush=True)
            write(rows, Path(args.out), time.perf_counter() - started, args.sizes)
        shutil.rmtree(work, ignore_errors=True)
    write(rows, Path(args.out), time.perf_counter() - started, args.sizes)


def _cell(row: dict[str, Any], step: str) -> str:
    if "checked" not in row:
        return "-"
    checked = row["checked"][step]
    refused = checked - row["accepted"][step]
    return f"{checked}" + (f" ({refused} refused)" if refused else "")


def write(rows: list[dict[str, Any]], out: Path, wall_s: float, sizes: list[int]) -> None:
    lines = [
        "# planner verify: plans judged by Kubernetes itself",
        "",
        f"Generated by `{COMMAND} --sizes {' '.join(map(str, sizes))}` ({code_version()}; {machine()}; {wall_s / 60:.1f} min in all).",
        "",
        "Each plan is replayed on its own throwaway control plane (kube-apiserver, kube-scheduler, the controllers and",
        "the Eviction API of Kubernetes v1.37.2, `controlplane/`), loaded with the List the plan was made from:",
        "replacements pinned to their targets and scheduled by kube-scheduler while the old pods run, old pods evicted",
        "through policy/v1, pending pods pinned and released ([verify](../../verify.md)). *ready* is the control",
        "plane's start on the List until every node is Ready and every pod Running; *verify* is the replay alone.",
        "Seeds marked *untuned* were never run before this benchmark.",
        "",
        "| input | plan | moves checked | evictions checked | placements checked | refused | ready s | verify s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = r["input"] + (" (untuned)" if r["untuned"] else "") + f" ({r['nodes']:,} nodes, {r['pods']:,} pods)"
        if "note" in r:
            lines.append(f"| {name} | {r['what']}: {r['note']} | - | - | - | - | - | - |")
            continue
        lines.append(
            f"| {name} | {r['what'][:80]} | {_cell(r, 'moves')} | {_cell(r, 'evictions')} | {_cell(r, 'placements')} | {r['refused']} | "
            f"{r['ready_s']:.1f} | {r['verify_s']:.1f} |"
        )
    refusals = [(r, x) for r in rows for x in r.get("refusals", [])]
    lines += ["", "## Refusals", ""]
    if not refusals:
        lines.append("None: Kubernetes accepted every move, eviction and placement of every plan above.")
    for r, x in refusals:
        where = f"wave {x['wave']}, " if x.get("wave") else ""
        move = f"{x.get('from')} -> {x['node']}" if x.get("from") else f"node {x['node']}"
        lines.append(f"* {r['input']}, {r['what'][:60]}: {where}{x['step']} of `{x['pod']}` {move}: {x['by']} {x.get('plugin') or ''}: {x['message']}")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
