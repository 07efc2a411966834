"""Would Kubernetes run the plans? -> benchmarks/results/kubernetes_fidelity.md

For each input (a kubectl List): plan `planner defrag FILE --from kubernetes` (in process: the same
import and `plan_defrag` with the CLI's defaults; `--method exact` / `hybrid` with a short time limit
on the small inputs), then replay every move on the raw objects with the kube-scheduler oracle of
tests/support/kube_scheduler.py (Filter plugins NodeUnschedulable, NodeResourcesFit by resource name,
TaintToleration, NodeAffinity, InterPodAffinity, NodePorts; make-before-break, wave by wave).
Tabulated: moves, refused moves, refusals by plugin and reason, vacated nodes (and those vacated only
by admitted moves), wall times. On inputs up to 1,000 nodes also `planner allocate` and `planner
preempt --job J` (each job with no pod running) with their default methods, replayed as placements.

Inputs: instances/kubernetes/gpu-cluster.json (the README's example); the audit's 200-node mixed
cluster `tests/data/k8s-mixed-200.json.gz` (a copy of `../shared/repros/k8s-mixed-200.json.gz`);
`generate_kubernetes_mixed(nodes, seed)` at 60 (seeds 0-2), 1,000 (seeds 0-1) and 10,000
(seed 0) nodes.

    .venv/bin/python benchmarks/kubernetes_fidelity.py [--sizes 60 1000 10000] [--time-limit 20] [--out FILE]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _measure import RESULTS, code_version, machine

from planner.adapters.kubernetes import import_kubernetes
from planner.adapters.kubernetes_config import load_config
from planner.engine import DefragOptions, plan_defrag
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
from planner.plans import plan_to_dict
from tests.support.kube_scheduler import replay_defrag, replay_placements

EXAMPLE = REPO / "instances" / "kubernetes" / "gpu-cluster.json"
REPRO = REPO / "tests" / "data" / "k8s-mixed-200.json.gz"
SEEDS = {60: [0, 1, 2], 1000: [0, 1], 10000: [0]}
SMALL = 100  # nodes: exact and hybrid run up to here
PLACEMENTS_UP_TO = 1000  # nodes: allocate and preempt plans are replayed up to here
COMMAND = ".venv/bin/python benchmarks/kubernetes_fidelity.py"


def inputs(sizes: list[int]) -> list[tuple[str, Any]]:
    """(name, loader) of every input, smallest first; a loader returns the List."""
    found: list[tuple[str, Any]] = [
        ("gpu-cluster.json (README example)", lambda: json.loads(EXAMPLE.read_text())),
        ("k8s-mixed-200 (audit repro)", lambda: json.loads(gzip.decompress(REPRO.read_bytes()))),
    ]
    for nodes in sizes:
        for seed in SEEDS.get(nodes, [0]):
            found.append((f"mixed {nodes:,} seed {seed}", lambda nodes=nodes, seed=seed: generate_kubernetes_mixed(nodes, seed)))
    return found


def node_kind(node: dict[str, Any]) -> str:
    """What a node offers, from its raw allocatable and labels: MIG slices, time-sliced replicas of
    ``nvidia.com/gpu`` or of the renamed ``nvidia.com/gpu.shared``, whole GPUs, or none."""
    allocatable, labels = node["status"].get("allocatable") or {}, node["metadata"].get("labels") or {}
    if any(r.startswith("nvidia.com/mig-") for r in allocatable):
        return "MIG"
    if "nvidia.com/gpu.shared" in allocatable:
        return "gpu.shared replicas"
    if "nvidia.com/gpu" in allocatable:
        return "gpu replicas" if int(labels.get("nvidia.com/gpu.replicas") or 1) > 1 else "whole GPUs"
    return "no GPU"


def imported(name: str, objects: dict[str, Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    cluster = import_kubernetes([(json.dumps(objects), name)], load_config(None)).cluster
    return cluster, time.perf_counter() - t0


def measure(name: str, objects: dict[str, Any], cluster: Any, import_s: float, method: str, time_limit: float) -> dict[str, Any]:
    """Plan one input with one method and replay the plan."""
    t1 = time.perf_counter()
    options = DefragOptions(method=method, **({"time_limit_s": time_limit} if method in ("exact", "hybrid") else {}))
    try:
        plan = plan_to_dict(plan_defrag(cluster, options))
    except ValueError as err:  # e.g. exact above its size limit
        return {"input": name, "method": method, "error": str(err).splitlines()[0][:160]}
    t2 = time.perf_counter()
    refusals = replay_defrag(objects, plan)
    t3 = time.perf_counter()
    refused_moves = {(r.wave, r.pod, r.from_, r.to) for r in refusals}
    kinds = {i["metadata"]["name"]: node_kind(i) for i in objects["items"] if i.get("kind") == "Node"}
    routes = Counter(f"{kinds.get(r.from_, '?')} -> {kinds.get(r.to, '?')}: {r.plugin}: {r.reason}" for r in refusals)
    sources_refused = {r.from_ for r in refusals}
    vacated = plan["vacated_nodes"]
    return {
        "input": name,
        "method": method,
        "nodes": sum(1 for i in objects["items"] if i.get("kind") == "Node"),
        "pods": sum(1 for i in objects["items"] if i.get("kind") == "Pod"),
        "moves": sum(len(w) for w in plan["waves"]),
        "waves": len(plan["waves"]),
        "refused": len(refused_moves),
        "reasons": Counter(f"{r.plugin}: {r.reason}" for r in refusals),
        "routes": routes,
        "vacated": len(vacated),
        "vacated_clean": sum(1 for n in vacated if n not in sources_refused),
        "status": (plan.get("report") or {}).get("status"),
        "import_s": import_s,
        "plan_s": t2 - t1,
        "replay_s": t3 - t2,
    }


def measure_placements(name: str, objects: dict[str, Any], cluster: Any) -> list[dict[str, Any]]:
    """`planner allocate` (every pending job, default method) and `planner preempt --job J` (default
    method) for each pending job, each plan replayed from the input's state (victims removed, then
    the placements bound in order)."""
    plans: list[tuple[str, Any]] = []
    try:
        plans.append(("allocate", plan_to_dict(plan_allocate(cluster, AllocateOptions()))))
    except ValueError as err:
        plans.append(("allocate", str(err).splitlines()[0][:160]))
    placed_jobs = {pod.job for pod in cluster.pods if pod.node is not None}
    for job in sorted({pod.job for pod in cluster.pods if pod.node is None and pod.job is not None} - placed_jobs):
        try:
            plans.append((f"preempt --job {job}", plan_to_dict(plan_preempt(cluster, job, PreemptOptions()))))
        except ValueError as err:
            plans.append((f"preempt --job {job}", str(err).splitlines()[0][:160]))
    rows = []
    for what, plan in plans:
        if isinstance(plan, str):
            rows.append({"input": name, "plan": what, "error": plan})
            continue
        refusals = replay_placements(objects, plan)
        rows.append(
            {
                "input": name,
                "plan": what,
                "placements": len(plan.get("placements") or []),
                "victims": len(plan.get("victims") or []),
                "refused": len({r.pod for r in refusals}),
                "reasons": Counter(f"{r.plugin}: {r.reason}" for r in refusals),
            }
        )
    return rows


def render(rows: list[dict[str, Any]], placed: list[dict[str, Any]], args: argparse.Namespace, started: str) -> str:
    lines = [
        "# Kubernetes fidelity: would kube-scheduler admit every planned move?",
        "",
        f"Code: {code_version()}. Machine: {machine()} (shared with other engineers' processes). Started {started}.",
        "",
        f"Reproduce: `{COMMAND}"
        + (f" --sizes {' '.join(map(str, args.sizes))}" if args.sizes != [60, 1000, 10000] else "")
        + (f" --time-limit {args.time_limit:g}" if args.time_limit != 20 else "")
        + "`.",
        "",
        (
            "Each input is planned as `planner defrag FILE --from kubernetes [--method M]` does (in process: import, then "
            "`plan_defrag` with the CLI's defaults; exact and hybrid with `--time-limit "
            f"{args.time_limit:g}` on inputs of at most {SMALL} nodes), and every move is replayed on the raw objects by "
            "tests/support/kube_scheduler.py: kube-scheduler's Filter plugins (NodeUnschedulable, NodeResourcesFit on every "
            "resource by name, TaintToleration, NodeAffinity, InterPodAffinity, NodePorts), make-before-break (a wave's "
            "copies start before its sources stop; a refused copy is still placed, so each move is judged against the "
            "state the plan intends). A move refused by several plugins counts once in *refused*; *vacated, clean* are "
            "the vacated nodes none of whose departing pods was refused somewhere. Wall times: import, plan, replay."
        ),
        "",
        "| input | nodes | pods | method | status | moves | waves | refused (share) | vacated | vacated, clean | import s | plan s | replay s |",
        "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['input']} |  |  | {r['method']} | not planned: {r['error']} |  |  |  |  |  |  |  |  |")
            continue
        share = f"{r['refused'] / r['moves']:.0%}" if r["moves"] else "-"
        lines.append(
            f"| {r['input']} | {r['nodes']:,} | {r['pods']:,} | {r['method']} | {r['status']} | {r['moves']:,} | "
            f"{r['waves']} | {r['refused']:,} ({share}) | {r['vacated']:,} | {r['vacated_clean']:,} | {r['import_s']:.1f} | "
            f"{r['plan_s']:.1f} | {r['replay_s']:.1f} |"
        )
    lines += [
        "",
        "## Refusals by plugin and reason",
        "",
        "A move may be refused by several plugins (each counted here).",
        "",
        "| input | method | plugin: reason | refusals |",
        "|---|---|---|---:|",
    ]
    for r in rows:
        for reason, count in sorted((r.get("reasons") or {}).items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"| {r['input']} | {r['method']} | {reason} | {count:,} |")
    lines += [
        "",
        "## Refusals by route (default method)",
        "",
        (
            "The same refusals by the kind of source and destination node, read from the raw objects: *whole GPUs* "
            "(`nvidia.com/gpu`, no replicas), *gpu replicas* (`nvidia.com/gpu` time-sliced, `nvidia.com/gpu.replicas` > 1), "
            "*gpu.shared replicas* (the renamed `nvidia.com/gpu.shared`), *MIG* (`nvidia.com/mig-*`), *no GPU*."
        ),
        "",
        "| input | source -> destination: plugin: reason | refusals |",
        "|---|---|---:|",
    ]
    for r in rows:
        if r["method"] == "heuristic":
            for route, count in sorted((r.get("routes") or {}).items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"| {r['input']} | {route} | {count:,} |")
    lines += [
        "",
        "## Placements: `planner allocate` and `planner preempt --job J`",
        "",
        (
            f"Inputs of at most {PLACEMENTS_UP_TO:,} nodes: `allocate` (every pending job, default method auto) and `preempt` "
            "(default method spotgpu) for each job with no pod running, each plan replayed from the input's state: victims "
            "removed, then each placement admitted (or refused) in order. The preempt plans of one input are summed in one "
            "row; *refused plans* names (up to four of) the jobs whose placement was refused."
        ),
        "",
        "| input | plan | plans | placements | victims | refused placements | refused plans | plugin: reason (refusals) |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in placed:
        groups.setdefault((r["input"], r["plan"].split(" ")[0]), []).append(r)
    for (name, kind), group in groups.items():
        planned = [r for r in group if "error" not in r]
        errors = [r for r in group if "error" in r]
        reasons: Counter[str] = Counter()
        for r in planned:
            reasons.update(r["reasons"])
        refused_jobs = [r["plan"].removeprefix("preempt --job ") for r in planned if r["refused"] and kind == "preempt"]
        named = ", ".join(f"`{j}`" for j in refused_jobs[:4]) + (f" and {len(refused_jobs) - 4} more" if len(refused_jobs) > 4 else "")
        lines.append(
            f"| {name} | `{kind}` | {len(planned)}"
            + (f" (+{len(errors)} not planned: {errors[0]['error']})" if errors else "")
            + f" | {sum(r['placements'] for r in planned)} | {sum(r['victims'] for r in planned)} | "
            f"{sum(r['refused'] for r in planned)} | {named} | {'; '.join(f'{k} ({v})' for k, v in sorted(reasons.items()))} |"
        )
    totals: Counter[str] = Counter()
    for r in rows:
        if r["method"] == "heuristic":
            totals.update(r.get("reasons") or {})
    lines += ["", "Default method (heuristic), all inputs together: " + (", ".join(f"{k} {v:,}" for k, v in totals.most_common()) or "none") + "."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[60, 1000, 10000])
    parser.add_argument("--time-limit", type=float, default=20.0, help="seconds for exact and hybrid")
    parser.add_argument("--out", default=str(RESULTS / "kubernetes_fidelity.md"))
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows: list[dict[str, Any]] = []
    placed: list[dict[str, Any]] = []
    for name, load in inputs(args.sizes):
        objects = load()
        cluster, import_s = imported(name, objects)
        nodes = len(cluster.nodes)
        for method in ["heuristic"] + (["exact", "hybrid"] if nodes <= SMALL else []):
            row = measure(name, objects, cluster, import_s, method, args.time_limit)
            rows.append(row)
            print(json.dumps(row, default=dict), flush=True)
        if nodes <= PLACEMENTS_UP_TO:
            for row in measure_placements(name, objects, cluster):
                placed.append(row)
                print(json.dumps(row, default=dict), flush=True)
        del objects, cluster
        gc.collect()
        Path(args.out).write_text(render(rows, placed, args, started))  # after every input: partial results survive
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
