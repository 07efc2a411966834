"""Kubernetes in and out at scale (issue 13 targets) -> benchmarks/results/kubernetes.md.

1. `planner import kubernetes FILE --out OUT` on kubectl Lists rendered by the exporter
   (`planner/adapters/kubernetes_export.py`) from `generate_asi(nodes, seed=0)`: 10,000 nodes /
   100,000 pods and 37,707 nodes, 3 runs each in a child process (wall time, peak RSS); then
   `planner defrag LIST --from kubernetes` end to end at 10,000 nodes on that List and on a mixed GPU
   fleet (`planner/instances/kubernetes_mixed.py`).
2. `planner defrag -o podmigrationjob` and `-o kubectl` on the 5,000-node snapshot: objects written
   (checked against koordinator's CRD fields by tests/support/pod_migration_job_schema.py), `bash -n`, and
   a run against a fake `kubectl` on PATH recording the calls (in wave order?).
3. Disruption limits on the 5,000-node snapshot and on openb: nodes vacated, moves and waves with no
   limits, `--max-nodes-per-wave 10%`, `--move-once`, PDBs (every multi-pod job max_unavailable 1),
   and all together.

    .venv/bin/python benchmarks/kubernetes.py [--runs 3] [--import-sizes 10000 37707] [--skip-limits]
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
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _measure import CACHE, RESULTS, cached_asi, code_version, machine, run_measured

from planner.adapters.kubernetes_export import DaemonSet, export_kubernetes
from planner.cluster import Cluster, Disruption, Job, Pod
from planner.snapshot import load_cluster

PLANNER = str(Path(sys.executable).with_name("planner"))
PODS_PER_NODE = 10
DAEMONSETS = [
    DaemonSet("node-exporter", "monitoring", 0.1, 0.125),
    DaemonSet("kube-proxy", "kube-system", 0.1, 0.125),
    DaemonSet("fluent-bit", "logging", 0.1, 0.25),
    DaemonSet("nvidia-device-plugin", "gpu-operator", 0.05, 0.0625, True),
    DaemonSet("dcgm-exporter", "gpu-operator", 0.1, 0.5, True),
]
FILLER = (0.5, 1.0)  # CPUs, GiB of each small web pod
REPLICAS = 4
COMMAND = ".venv/bin/python benchmarks/kubernetes.py"


# ----------------------------------------------------------------------------------------------
# 1. Import at scale
# ----------------------------------------------------------------------------------------------


def with_filler(cluster: Cluster, total_pods: int) -> Cluster:
    """``cluster`` plus small CPU-only web pods (Deployments of 4 replicas, namespace web), placed
    round-robin on nodes with CPUs and memory to spare, until the List holds ``total_pods`` pods
    (DaemonSet pods included)."""
    daemons = sum(1 for n in cluster.nodes for ds in DAEMONSETS if n.gpus or not ds.gpu_nodes_only)
    wanted = total_pods - daemons - len(cluster.pods)
    used_cpu, used_mem = Counter(), Counter()
    for pod in cluster.pods:
        if pod.node:
            used_cpu[pod.node] += pod.cpus
            used_mem[pod.node] += pod.memory_gib
    pods, jobs, k = list(cluster.pods), list(cluster.jobs), 0
    while k < wanted:
        placed = False
        for node in cluster.nodes:
            if k >= wanted:
                break
            if node.cpus - used_cpu[node.name] < FILLER[0] or node.memory_gib - used_mem[node.name] < FILLER[1]:
                continue
            used_cpu[node.name] += FILLER[0]
            used_mem[node.name] += FILLER[1]
            job = f"web/Deployment/web-{k // REPLICAS:05d}"
            if k % REPLICAS == 0:
                jobs.append(Job(name=job, min_available=1))  # a Deployment's replicas start one by one
            pods.append(
                Pod(name=f"web-{k // REPLICAS:05d}-{k % REPLICAS}", job=job, namespace="web", node=node.name, gpus=0, cpus=FILLER[0], memory_gib=FILLER[1])
            )
            k, placed = k + 1, True
        if not placed:
            sys.exit(f"no room left for filler pods after {k}")
    return cluster.model_copy(update={"pods": pods, "jobs": jobs})


def rendered_list(nodes: int, seed: int = 0) -> tuple[Path, dict]:
    """The cached List file for ``nodes`` and what it holds."""
    snapshot = cached_asi(nodes, seed)
    path = CACHE / f"k8s2-{snapshot.stem}-ppn{PODS_PER_NODE}.json"  # k8s2: gangs as PodGroups, Deployments min_available 1
    meta_path = path.with_suffix(".meta.json")
    if not path.exists() or not meta_path.exists():
        cluster = load_cluster(snapshot)
        asi_pods = len(cluster.pods)
        cluster = with_filler(cluster, PODS_PER_NODE * nodes)
        exported = export_kubernetes(cluster, daemonsets=DAEMONSETS)
        path.write_text(json.dumps(exported.document) + "\n", encoding="utf-8")
        kinds = Counter(i["kind"] for i in exported.document["items"])
        meta = {
            "nodes": nodes,
            "pods": kinds["Pod"],
            "asi_pods": asi_pods,
            "filler_pods": len(cluster.pods) - asi_pods,
            "daemonset_pods": kinds["Pod"] - len(cluster.pods),
            "pdbs": kinds.get("PodDisruptionBudget", 0),
            "mib": path.stat().st_size / 2**20,
            "dropped": exported.dropped,
        }
        meta_path.write_text(json.dumps(meta))
    return path, json.loads(meta_path.read_text())


def import_rows(sizes: list[int], runs: int) -> list[str]:
    rows = [
        (
            "| nodes | pods in the List (DaemonSet + ASI + web) | List MiB | snapshot pods | wall s min / median / max | "
            "peak RSS MiB min / median / max | targets |"
        ),
        "|---:|---|---:|---:|---|---|---|",
    ]
    for nodes in sizes:
        path, meta = rendered_list(nodes)
        out = Path(tempfile.mkdtemp()) / "snapshot.json"
        measured = []
        for _ in range(runs):
            run = run_measured([PLANNER, "import", "kubernetes", str(path), "--out", str(out)])
            if run.returncode != 0:
                sys.exit(f"import failed on {path}: {run.stderr[-2000:]}")
            measured.append(run)
            print(f"import {nodes} nodes: {run.wall_s:.2f} s, {run.peak_rss_mib:.0f} MiB", flush=True)
        snapshot_pods = len(json.loads(out.read_text())["pods"])
        spread, target = _spread_and_target(measured)
        rows.append(
            f"| {nodes:,} | {meta['pods']:,} ({meta['daemonset_pods']:,} + {meta['asi_pods']:,} + {meta['filler_pods']:,}) | "
            f"{meta['mib']:.0f} | {snapshot_pods:,} | {spread} | {target if nodes == 10_000 else ''} |"
        )
    return rows


def _spread_and_target(measured: list) -> tuple[str, str]:
    """'wall min / median / max | RSS min / median / max' and the 20 s / 2 GiB verdict of the runs."""
    walls = sorted(r.wall_s for r in measured)
    rss = sorted(r.peak_rss_mib for r in measured)
    ok_t, ok_m = walls[-1] <= 20, rss[-1] <= 2048
    return (
        f"{walls[0]:.1f} / {statistics.median(walls):.1f} / {walls[-1]:.1f} | {rss[0]:.0f} / {statistics.median(rss):.0f} / {rss[-1]:.0f}",
        f"<= 20 s: {'met' if ok_t else 'MISSED'}; <= 2 GiB: {'met' if ok_m else 'MISSED'}",
    )


def mixed_list(nodes: int, seed: int = 0) -> Path:
    """The cached List of ``generate_kubernetes_mixed(nodes, seed)`` (issue 40's mixed GPU fleet)."""
    from planner.instances.kubernetes_mixed import generate_kubernetes_mixed

    path = CACHE / f"k8s-mixed-{nodes}-seed{seed}.json"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(generate_kubernetes_mixed(nodes, seed)) + "\n", encoding="utf-8")
    return path


def plan_rows(nodes: int, runs: int) -> list[str]:
    """``planner defrag LIST --from kubernetes --out PLAN`` end to end (import, plan with the defaults,
    validation, writing the plan) on the ASI-rendered List and on the mixed one."""
    rows = [
        (
            "| List | pods in the List | List MiB | moves | vacated nodes | plan report wall s | wall s min / median / max | "
            "peak RSS MiB min / median / max | targets |"
        ),
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    rendered, _ = rendered_list(nodes)
    mixed = mixed_list(nodes)
    for label, path in ((f"ASI-rendered, {nodes:,} nodes", rendered), (f"mixed GPU fleet (kubernetes_mixed, seed 0), {nodes:,} nodes", mixed)):
        pods = sum(1 for item in json.loads(path.read_text())["items"] if item.get("kind") == "Pod")
        out = Path(tempfile.mkdtemp()) / "plan.json"
        measured = []
        for _ in range(runs):
            run = run_measured([PLANNER, "defrag", str(path), "--from", "kubernetes", "--out", str(out), "-o", "json"])
            if run.returncode != 0:
                sys.exit(f"defrag failed on {path}: {run.stderr[-2000:]}")
            measured.append(run)
            print(f"defrag {label}: {run.wall_s:.2f} s, {run.peak_rss_mib:.0f} MiB", flush=True)
        plan = json.loads(out.read_text())
        spread, target = _spread_and_target(measured)
        rows.append(
            f"| {label} | {pods:,} | {path.stat().st_size / 2**20:.0f} | {plan['report']['moves']:,} | {len(plan['vacated_nodes']):,} | "
            f"{plan['report']['wall_s']:.1f} | {spread} | {target} |"
        )
    return rows


# ----------------------------------------------------------------------------------------------
# 2. PodMigrationJobs and the kubectl script
# ----------------------------------------------------------------------------------------------


def output_rows(nodes: int) -> list[str]:
    import yaml

    from tests.support.fake_kubectl import run_script
    from tests.support.pod_migration_job_schema import check_pod_migration_job

    snapshot = cached_asi(nodes, 0)
    work = Path(tempfile.mkdtemp())
    plan_path = work / "plan.json"
    pmj = run_measured([PLANNER, "defrag", str(snapshot), "--out", str(plan_path), "-o", "podmigrationjob"])
    if pmj.returncode != 0:
        sys.exit(f"defrag -o podmigrationjob failed: {pmj.stderr[-2000:]}")
    objects = [o for o in yaml.safe_load_all(pmj.stdout) if o]
    for obj in objects:
        check_pod_migration_job(obj)
    plan = json.loads(plan_path.read_text())
    moves = sum(len(w) for w in plan["waves"])
    script = run_measured([PLANNER, "defrag", str(snapshot), "-o", "kubectl"])
    if script.returncode != 0:
        sys.exit(f"defrag -o kubectl failed: {script.stderr[-2000:]}")
    script_path = work / "plan.sh"
    script_path.write_text(script.stdout)
    syntax = subprocess.run(["bash", "-n", str(script_path)], capture_output=True, text=True, check=False)  # its verdict is a table cell
    start = time.perf_counter()
    done, calls = run_script(work, script.stdout, cluster=load_cluster(snapshot), timeout_s=900)  # the pod check sees the snapshot's pods
    dry_s = time.perf_counter() - start
    applied = [line.split()[-1] for line in calls if line.startswith("  applied ")]
    waves = [int(name.split("-w", 1)[1].split("-", 1)[0]) for name in applied]
    order_ok = _calls_in_wave_order(calls)
    return [
        "| output | objects / moves | waves | checks | wall s | peak RSS MiB |",
        "|---|---|---:|---|---:|---:|",
        (
            f"| `-o podmigrationjob` | {len(objects):,} / {moves:,} | {len(plan['waves'])} | every object passes the CRD-subset check "
            f"of tests/support/pod_migration_job_schema.py | {pmj.wall_s:.1f} | {pmj.peak_rss_mib:.0f} |"
        ),
        (
            f"| `-o kubectl` | {len(applied):,} applied / {moves:,} | {len(set(waves))} | `bash -n` {'ok' if syntax.returncode == 0 else 'FAILED'}; "
            f"fake kubectl run exit {done.returncode}, {len(calls) - len(applied):,} calls ({sum(1 for c in calls if c.startswith('apply')):,} apply, "
            f"{sum(1 for c in calls if c.startswith('get podmigrationjob/')):,} status queries, "
            f"{sum(1 for c in calls if c.startswith('get pods')):,} pod checks) in {dry_s:.1f} s; applies and waits in wave order: "
            f"{'yes' if order_ok and waves == sorted(waves) else 'NO'} | {script.wall_s:.1f} | {script.peak_rss_mib:.0f} |"
        ),
    ]


def _calls_in_wave_order(calls: list[str]) -> bool:
    """Each wave's objects are applied after every status query of the wave before, and each queried
    object was applied before its query."""
    wave_of: dict[str, int] = {}
    current = 0
    for line in calls:
        if line.startswith("  applied "):
            name = line.split()[-1]
            wave = int(name.split("-w", 1)[1].split("-", 1)[0])
            if wave < current:
                return False
            current, wave_of[name] = wave, wave
        elif line.startswith("get podmigrationjob/"):  # a status query (the pod checks, get pods, name no object)
            name = line.split()[1].removeprefix("podmigrationjob/")
            if wave_of.get(name) != current:
                return False
    return True


# ----------------------------------------------------------------------------------------------
# 3. Disruption limits
# ----------------------------------------------------------------------------------------------


def with_budgets(cluster: Cluster) -> tuple[Cluster, int]:
    sizes = Counter(p.job for p in cluster.pods if p.job)
    jobs = [j.model_copy(update={"disruption": Disruption(max_unavailable=1)}) if sizes[j.name] > 1 else j for j in cluster.jobs]
    return cluster.model_copy(update={"jobs": jobs}), sum(1 for j in cluster.jobs if sizes[j.name] > 1)


def limit_rows(name: str, cluster: Cluster) -> list[str]:
    from planner.engine import DefragOptions, plan_defrag

    budgeted, multi = with_budgets(cluster)
    free = "100%"  # no node budget: since issue 42 the default is 10% per wave, so each row lifts it unless it sets one
    cases = [
        ("no limits (`--no-move-once`)", cluster, DefragOptions(move_once=False, max_nodes_per_wave=free)),
        ("`--max-nodes-per-wave 10%`", cluster, DefragOptions(move_once=False, max_nodes_per_wave="10%")),
        ("`--move-once` (the default)", cluster, DefragOptions(max_nodes_per_wave=free)),
        (f"PDBs (max_unavailable 1 on {multi:,} multi-pod jobs)", budgeted, DefragOptions(move_once=False, max_nodes_per_wave=free)),
        ("all together", budgeted, DefragOptions(max_nodes_per_wave="10%")),
        ("IPC as published: `--trim off --no-move-once`", cluster, DefragOptions(trim="off", move_once=False, max_nodes_per_wave=free)),
        ("`--trim off --move-once`", cluster, DefragOptions(trim="off", max_nodes_per_wave=free)),
    ]
    rows = []
    base = None
    for label, snapshot, options in cases:
        start = time.perf_counter()
        plan = plan_defrag(snapshot, options)
        wall = time.perf_counter() - start
        moves = [m for w in plan.waves for m in w]
        vacated = len(plan.vacated_nodes)
        base = vacated if base is None else base
        touched = max((len({m.from_ for m in w} | {m.to for m in w}) for w in plan.waves), default=0)
        twice = sum(1 for c in Counter(m.pod for m in moves).values() if c > 1)
        rows.append(f"| {name} | {label} | {vacated:,} ({vacated - base:+,}) | {len(moves):,} | {len(plan.waves)} | {touched:,} | {twice:,} | {wall:.1f} |")
        print(rows[-1], flush=True)
    return rows


def openb_cluster() -> Cluster | None:
    try:
        from planner.instances.openb import generate_openb

        return generate_openb(at_s=12_500_000, departures=False)
    except (FileNotFoundError, OSError, ValueError) as err:
        print(f"openb skipped: {err}", flush=True)
        return None


# ----------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--import-sizes", type=int, nargs="*", default=[10_000, 37_707])
    parser.add_argument("--output-nodes", type=int, default=5000)
    parser.add_argument("--skip-limits", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()
    lines = [
        "# Kubernetes in and out at scale",
        "",
        (
            f"Code: {code_version()}. Machine: {machine()}. Load average at start: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} "
            "(other engineers' processes may share the machine)."
        ),
        "",
        f"Reproduce: `{COMMAND}` (Lists and snapshots cached under benchmarks/.cache).",
        "",
        "## Import: `planner import kubernetes FILE --out OUT`",
        "",
        (
            f"Lists written by `export_kubernetes` from `generate_asi(nodes, seed=0)` (70% GPU allocation, 40% of jobs locked), "
            f"with {PODS_PER_NODE} pods per node: {len(DAEMONSETS)} DaemonSets (3 on every node, 2 more on GPU nodes; reserved on "
            "their node by the importer, so not snapshot pods), the generator's pods, and enough small CPU-only web pods "
            f"({FILLER[0]:g} CPU, {FILLER[1]:g} GiB, Deployments of {REPLICAS}) placed where CPUs and memory allow. The generator "
            "makes about 2.5 pods per node, below the 10 a 100,000-pod List at 10,000 nodes needs; this is how the "
            f"rest was made. Child process, {args.runs} runs, wall time from start to exit (interpreter start-up, JSON parsing, "
            "every check, writing the snapshot) and peak resident memory from `wait4`."
        ),
        "",
    ]
    lines += import_rows(args.import_sizes, args.runs)
    lines += [
        "",
        "## Import and plan: `planner defrag LIST --from kubernetes --out PLAN`, 10,000 nodes",
        "",
        (
            "End to end in a child process (import, the default plan with every rule by name and the default pools, "
            f"validation, writing the plan), {args.runs} runs: the ASI-rendered List above and a mixed GPU fleet of "
            "`planner/instances/kubernetes_mixed.py` (whole-GPU, MIG of one and of several profiles, time-sliced under both "
            "resource names, a tainted inference pool, CPU-only StatefulSet nodes, gangs, PDBs, affinity, host ports)."
        ),
        "",
    ]
    lines += plan_rows(10_000, args.runs)
    lines += [
        "",
        f"## Plans an operator applies: `planner defrag -o podmigrationjob` / `-o kubectl`, {args.output_nodes:,} nodes",
        "",
        (
            f"`generate_asi({args.output_nodes}, seed=0)`, default options. The kubectl script runs with `POLL_S=0` against the "
            "fake `kubectl` of tests/support/fake_kubectl.py (records every call; answers the script's pod check with the snapshot's "
            "pods and every status query "
            "`Succeeded`). Wave order: every object of wave w is applied after all status queries of wave w-1, and "
            "each query names an object of the wave being waited on."
        ),
        "",
    ]
    lines += output_rows(args.output_nodes)
    if not args.skip_limits:
        lines += [
            "",
            "## Disruption limits: what each costs",
            "",
            (
                "`plan_defrag(cluster, DefragOptions(...))` in process (IPC, trim greedy, seed 0). Vacated nodes (change "
                "against no limits), moves, waves, the most nodes any wave touches, pods moved more than once, wall time. "
                "The per-wave limits and budgets split waves and never cost a move; the default move-minimal pass (trim "
                "greedy) already sends each pod straight to where it ends, so `--move-once` binds only without it (last two "
                "rows). openb's pods are one job each, so no PDB applies there."
            ),
            "",
            "| snapshot | limits | vacated nodes | moves | waves | max nodes in a wave | pods moved twice+ | wall s |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        lines += limit_rows(f"ASI {args.output_nodes:,} nodes", load_cluster(cached_asi(args.output_nodes, 0)))
        openb = openb_cluster()
        if openb is not None:
            lines += limit_rows(f"openb at 12,500,000 s ({len(openb.nodes):,} nodes)", openb)
        else:
            lines.append("| openb | skipped: planner/data/openb-2023 not found | | | | | | |")
    end = os.getloadavg()
    lines += ["", f"Load average at the end: {end[0]:.2f}, {end[1]:.2f}, {end[2]:.2f}.", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "kubernetes.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {RESULTS / 'kubernetes.md'}")


if __name__ == "__main__":
    main()
