"""Preemption planning: FlexTopo's hit-rate experiment, decision latency, and cost against the optimum.

Writes benchmarks/results/preempt.md and preempt.png:

* FlexTopo's experiment (paper 002, Sec. 5, Table 4) as published: a saturated cluster of 100 RTX
  4090 nodes (`planner generate flextopo`: Table 3's workloads A-D), 50 scale-ups of B (4 GPUs) and C
  (2 GPUs) per cycle, each preemption evaluated independently on the cycle's saturated state, NUMA
  alignment guaranteed (every GPU of the pod on one socket, its CPUs from those GPUs' NUMA domains); a
  fresh cluster (seed = cycle) per cycle; every method on every decision. Hit = the pod starts
  aligned. The NUMA-unaware baselines choose node and victims by counting GPUs; the kubelet then
  finds no aligned devices (a miss) or some (a hit).
* The harder variant: the same scale-ups carried out in turn, each method on its own trajectory.
* Latency: wall time of one decision in-process with a warm state (`PreemptState` built once, as
  a scheduler keeps its cache), per method: the decisions of the experiment (100 nodes) and single
  decisions on a 1,000-node cluster holding 10,000 spot pods.
* Quality: single decisions on `planner generate spot` snapshots (50-200 nodes of the 2026 spot-GPU
  node list, mixed checkpoint ages, spot gangs, pending HP jobs of 1-8 pods, half of the multi-pod
  ones ASW-local): each heuristic's lost work against the exact optimum (CP-SAT, proven), surplus
  victim gangs per method, the exact model's solve time.

Every plan is checked by ``validate_preempt`` (the rules themselves); the results count failures.

    .venv/bin/python benchmarks/preempt.py            # everything (about 30 minutes)
    .venv/bin/python benchmarks/preempt.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import RESULTS, machine

from planner.cluster import Cluster, JobNuma
from planner.engine.preempt import PreemptOptions, decide, to_plan
from planner.heuristics.gang import apply_choice
from planner.instances.flextopo import flextopo_cluster
from planner.instances.spot import spot_cluster
from planner.preempt_state import Ask, PreemptState
from planner.validate.preempt import surplus_units, validate_preempt

HEURISTICS = ("spotgpu", "spotgpu-paper", "flextopo", "k8s-default", "volcano", "random")
EXPERIMENT_METHODS = ("flextopo", "exact", "spotgpu", "k8s-default", "volcano", "random", "spotgpu-paper")
PAPER_HIT = {"k8s-default": 44.5, "flextopo": 100.0}
SCALE_UP_INTERVAL_S = 60.0


def options_for(method: str, time_limit_s: float = 10.0) -> PreemptOptions:
    if method == "exact":
        return PreemptOptions(method="exact", time_limit_s=time_limit_s, solver_workers=8)
    return PreemptOptions(method=method)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else math.nan


# ----------------------------------------------------------------------------------------------
# FlexTopo's experiment
# ----------------------------------------------------------------------------------------------


def scale_up_cluster(cycle: int, per_workload: int) -> Cluster:
    """A saturated FlexTopo cluster with ``per_workload`` pending scale-ups of B and of C, all
    NUMA-guaranteed (the experiment measures alignment for both)."""
    cluster = flextopo_cluster(nodes=100, seed=cycle, pending={"B": per_workload, "C": per_workload})
    jobs = [j.model_copy(update={"numa": JobNuma(mode="guaranteed")}) if "-new-" in j.name else j for j in cluster.jobs]
    return cluster.model_copy(update={"jobs": jobs})


def experiment(methods: tuple[str, ...], cycles: int, scale_ups: int, validate_every: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for method in methods:
        hits = {"B": 0, "C": 0}
        tries = {"B": 0, "C": 0}
        latency: dict[str, list[float]] = {"B": [], "C": []}
        lost: list[float] = []
        invalid = surplus = checked = 0
        statuses: dict[str, int] = {}
        start = time.perf_counter()
        for cycle in range(cycles):
            cluster = scale_up_cluster(cycle, scale_ups // 2)
            ps = PreemptState(cluster)
            pending = [j.name for j in cluster.jobs if "-new-" in j.name]
            random.Random(cycle).shuffle(pending)
            index = cluster.job_index()
            for k, name in enumerate(pending):
                now = cluster.time_s + k * SCALE_UP_INTERVAL_S
                letter = name[0]
                options = options_for(method)
                t0 = time.perf_counter()
                ask = Ask.of(ps, index[name], now)
                choice, fields = decide(ps, ask, method, options)
                latency[letter].append(time.perf_counter() - t0)
                tries[letter] += 1
                status = fields.get("status", "heuristic") if choice.reason is None else ("infeasible" if choice.proven_infeasible else "failed")
                statuses[status] = statuses.get(status, 0) + 1
                if choice.reason is not None:
                    continue
                if k % validate_every == 0:
                    current = current_cluster(cluster, ps)
                    plan = to_plan(current, ps, ask, choice, method, options_for(method), fields)
                    checked += 1
                    if validate_preempt(current, plan):
                        invalid += 1
                    surplus += surplus_units(current, plan)
                hits[letter] += 1  # guaranteed alignment: every plan made is aligned (validated above)
                lost.append(choice.cost)
                apply_choice(ps, choice)
        total_tries = sum(tries.values())
        results[method] = {
            "tries": tries,
            "hits": hits,
            "hit_rate": 100.0 * sum(hits.values()) / max(1, total_tries),
            "latency": latency,
            "lost_mean": statistics.fmean(lost) if lost else math.nan,
            "invalid": invalid,
            "checked": checked,
            "surplus": surplus,
            "statuses": statuses,
            "wall_s": time.perf_counter() - start,
        }
        r = results[method]
        print(f"experiment {method}: hit {r['hit_rate']:.1f}% of {total_tries}, {r['wall_s']:.0f} s", flush=True)
    return results


def independent(cycles: int, scale_ups: int) -> dict[str, Any]:
    """FlexTopo's protocol (Sec. 5): per cycle a fresh saturated cluster and ``scale_ups`` preemptions
    "evaluated independently": every decision is made on the cycle's saturated state and not carried
    out. Every method decides every one, so hit rate, lost work against the exact plan of the same
    state, surplus and latency are compared on identical inputs."""
    methods = (*HEURISTICS, "exact")
    out: dict[str, Any] = {
        m: {"tries": {"B": 0, "C": 0}, "hits": {"B": 0, "C": 0}, "ratios": [], "surplus": 0, "invalid": 0, "times": [], "B_times": []} for m in methods
    }
    for cycle in range(cycles):
        cluster = scale_up_cluster(cycle, scale_ups // 2)
        ps = PreemptState(cluster)
        index = cluster.job_index()
        for name in (j.name for j in cluster.jobs if "-new-" in j.name):
            letter = name[0]
            decided: dict[str, Any] = {}
            for method in methods:
                options = options_for(method)
                t0 = time.perf_counter()
                ask = Ask.of(ps, index[name], cluster.time_s)
                choice, fields = decide(ps, ask, method, options)
                elapsed = time.perf_counter() - t0
                r = out[method]
                r["times"].append(elapsed)
                if letter == "B":
                    r["B_times"].append(elapsed)
                r["tries"][letter] += 1
                decided[method] = choice
                if choice.reason is None:
                    plan = to_plan(cluster, ps, ask, choice, method, options, fields)
                    r["invalid"] += bool(validate_preempt(cluster, plan))
                    r["surplus"] += surplus_units(cluster, plan)
                    r["hits"][letter] += 1
            best = decided["exact"]
            if best.reason is None:
                for method in methods:
                    choice = decided[method]
                    if choice.reason is None:
                        out[method]["ratios"].append(1.0 if choice.cost == best.cost else (choice.cost / best.cost if best.cost else math.inf))
        if (cycle + 1) % 10 == 0:
            print(f"independent: cycle {cycle + 1}/{cycles}", flush=True)
    return out


def current_cluster(cluster: Cluster, ps: PreemptState) -> Cluster:
    """The snapshot as the state has it now (pods moved, evicted, started), for validation."""
    names = ps.cs.node_names
    pods = []
    for p, pod in enumerate(cluster.pods):
        n = int(ps.cs.pod_node[p])
        devices = ps.devices[p]
        pods.append(pod.model_copy(update={"node": names[n] if n >= 0 else None, "gpu_indexes": list(devices) if devices is not None and n >= 0 else None}))
    return cluster.model_copy(update={"pods": pods})


# ----------------------------------------------------------------------------------------------
# Latency on a 1,000-node cluster with 10,000 spot pods
# ----------------------------------------------------------------------------------------------


def big_cluster(nodes: int = 1000, spot_per_node: int = 10, hp_jobs: int = 50, seed: int = 0) -> Cluster:
    """``nodes`` 8-GPU nodes, each full with ``spot_per_node`` spot pods (six 1-GPU pods and four
    half-GPU shares at 10 per node), started over the last day with mixed checkpoint intervals;
    ``hp_jobs`` pending HP jobs of one 4-GPU pod (every node needs preemption)."""
    rng = random.Random(seed)
    node_list, pods = [], []
    whole = spot_per_node - 4
    for i in range(nodes):
        name = f"node-{i:04d}"
        node_list.append({"name": name, "gpus": 8, "cpus": 96, "memory_gib": 768, "asw": f"asw-{i // 32}"})
        shapes = [1.0] * whole + [0.5] * (spot_per_node - whole)
        for k, gpus in enumerate(shapes):
            pod = {
                "name": f"spot-{i}-{k}",
                "node": name,
                "gpus": gpus,
                "cpus": 8,
                "memory_gib": 32,
                "priority": "LP",
                "started_s": round(rng.uniform(0, 86_400), 3),
            }
            interval = rng.choice([600.0, 1800.0, None])
            if interval:
                pod["checkpoint_interval_s"] = interval
            pods.append(pod)
    for j in range(hp_jobs):
        pods.append({"name": f"hp-{j}", "job": f"hp-{j}", "gpus": 4, "cpus": 16, "memory_gib": 64})
    jobs = [{"name": f"hp-{j}"} for j in range(hp_jobs)]
    return Cluster.model_validate({"time_s": 86_400.0, "nodes": node_list, "pods": pods, "jobs": jobs})


def big_latency(methods: tuple[str, ...], decisions: int) -> dict[str, Any]:
    cluster = big_cluster(hp_jobs=decisions)
    ps = PreemptState(cluster)
    index = cluster.job_index()
    out: dict[str, Any] = {"pods": sum(1 for p in cluster.pods if p.node is not None), "nodes": len(cluster.nodes)}
    for method in methods:
        times, invalid = [], 0
        for j in range(decisions):
            options = options_for(method, time_limit_s=30.0)
            t0 = time.perf_counter()
            ask = Ask.of(ps, index[f"hp-{j}"], cluster.time_s)
            choice, fields = decide(ps, ask, method, options)
            times.append(time.perf_counter() - t0)
            if j < 5:
                plan = to_plan(cluster, ps, ask, choice, method, options_for(method, 30.0), fields)
                invalid += bool(validate_preempt(cluster, plan))
        out[method] = {"times": times, "invalid": invalid}
        print(f"latency 1,000 nodes {method}: p50 {1000 * percentile(times, 50):.1f} ms", flush=True)
    return out


# ----------------------------------------------------------------------------------------------
# Quality against the optimum
# ----------------------------------------------------------------------------------------------


def quality(decisions: int, time_limit_s: float) -> dict[str, Any]:
    rows = []
    seed = 0
    sizes = (50, 100, 150, 200)
    while len(rows) < decisions:
        nodes = sizes[seed % len(sizes)]
        cluster = spot_cluster(nodes=nodes, seed=seed, pending_jobs=3)
        seed += 1
        ps = PreemptState(cluster)
        for name in (j.name for j in cluster.jobs if j.name.startswith("hp-new-")):
            ask = Ask.of(ps, cluster.job_index()[name], cluster.time_s)
            row: dict[str, Any] = {"nodes": nodes, "pods": len(ask.pods), "level": ask.level}
            for method in (*HEURISTICS, "exact"):
                options = options_for(method, time_limit_s)
                t0 = time.perf_counter()
                choice, fields = decide(ps, ask, method, options)
                wall = time.perf_counter() - t0
                plan = to_plan(cluster, ps, ask, choice, method, options, fields)
                bad = validate_preempt(cluster, plan)
                row[method] = {
                    "placed": choice.reason is None,
                    "cost": choice.cost if choice.reason is None else None,
                    "victims": len(plan.victims),
                    "surplus": surplus_units(cluster, plan) if plan.placements else 0,
                    "invalid": bool(bad),
                    "status": plan.report.status if plan.report else None,
                    "bound": plan.report.bound if plan.report else None,
                    "wall_s": wall,
                    "solve_s": fields.get("solve_s"),
                }
            rows.append(row)
            if len(rows) % 50 == 0:
                print(f"quality: {len(rows)} decisions", flush=True)
    return {"rows": rows[:decisions]}


def quality_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    proven = [r for r in rows if r["exact"]["status"] == "optimal"]
    summary: dict[str, Any] = {"decisions": len(rows), "proven": len(proven), "infeasible": sum(r["exact"]["status"] == "infeasible" for r in rows)}
    for method in (*HEURISTICS, "exact"):
        ratios, misses, above = [], 0, 0
        for r in proven:
            h, e = r[method]["cost"], r["exact"]["cost"]
            if h is None:
                misses += 1
                continue
            ratios.append(1.0 if h == e else (h / e if e > 0 else math.inf))
            above += h > e + 1e-6 * max(1.0, e)
        finite = [x for x in ratios if math.isfinite(x)]
        summary[method] = {
            "mean": statistics.fmean(finite) if finite else math.nan,
            "p90": percentile(finite, 90),
            "worst": max(ratios) if ratios else math.nan,
            "optimal_share": 100.0 * sum(1 for x in ratios if x == 1.0) / max(1, len(ratios)),
            "not_placed": misses,
            "infinite": len(ratios) - len(finite),
            "surplus": sum(r[method]["surplus"] for r in rows),
            "with_surplus": sum(r[method]["surplus"] > 0 for r in rows),
            "invalid": sum(r[method]["invalid"] for r in rows),
        }
    solve = {n: [r["exact"]["wall_s"] for r in rows if r["nodes"] == n] for n in sorted({r["nodes"] for r in rows})}
    summary["exact_time"] = {n: (statistics.median(v), percentile(v, 90), max(v)) for n, v in solve.items() if v}
    return summary


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


def ms(values: list[float], q: float) -> str:
    return f"{1000 * percentile(values, q):.2f}" if values else "-"


def write(results: dict[str, Any], args: argparse.Namespace) -> None:
    exp, big, qual, ind = results["experiment"], results["big"], results["quality"], results["independent"]
    lines = [
        "# Preemption planning: FlexTopo's experiment, latency, and lost work against the optimum",
        "",
        f"Machine: {machine()}. Reproduce: `.venv/bin/python benchmarks/preempt.py"
        + (" --quick" if args.quick else "")
        + "`. Latencies are in-process, warm (the `PreemptState` built once), one core.",
        "",
        f"## FlexTopo's experiment as published ({args.cycles} cycles x {args.scale_ups} independent preemptions, 100 nodes)",
        "",
        (
            "The paper's protocol (Sec. 5): per cycle a fresh saturated cluster (Table 3, seed = cycle) and 50 scale-ups (25 of B, 25 "
            'of C), each preemption "evaluated independently" on that saturated state (not carried out). Every method decides every '
            "scale-up, so all compare on identical inputs. *Hit rate*: the share of scale-ups whose pod starts NUMA-aligned (all GPUs on "
            "one socket, CPUs from those GPUs' domains); a NUMA-unaware method misses when the node and victims it chose leave no aligned "
            "devices (the kubelet would refuse the pod). FlexTopo reports 44.5% for Godel's standard preemption and 100% with FlexTopo "
            "(Table 4). *Lost work / optimum*: over the scale-ups the method placed, against the exact plan of the same state. "
            "Within a cycle the 25 scale-ups of one workload are the same decision, so a deterministic method's rate is in effect "
            "over 100 states x 2 workloads."
        ),
        "",
        "| method | decisions | hit rate | B hits | C hits | paper | lost work / optimum: mean | p90 | worst | optimal | surplus gangs | invalid | latency p50 / p90 / max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for method, r in ind.items():
        tries, hits = sum(r["tries"].values()), sum(r["hits"].values())
        finite = [x for x in r["ratios"] if math.isfinite(x)]
        optimal = 100.0 * sum(1 for x in r["ratios"] if x == 1.0) / max(1, len(r["ratios"]))
        paper = f"{PAPER_HIT[method]:.1f}%" if method in PAPER_HIT else ""
        lines.append(
            f"| {method} | {tries:,} | {100.0 * hits / max(1, tries):.1f}% | {r['hits']['B']}/{r['tries']['B']} | "
            f"{r['hits']['C']}/{r['tries']['C']} | {paper} | {statistics.fmean(finite) if finite else math.nan:.3f} | "
            f"{percentile(finite, 90):.3f} | {max(r['ratios']) if r['ratios'] else math.nan:.3f} | {optimal:.1f}% | "
            f"{r['surplus']} | {r['invalid']} | {ms(r['times'], 50)} / {ms(r['times'], 90)} / {ms(r['times'], 100)} |"
        )
    lines += [
        "",
        "Latency of B's decisions alone (FlexTopo-IMP's published P90 for a 4-GPU preemptor on 100 nodes: 275.6 ms):",
        "",
        "| method | B p50 ms | B p90 ms | B max ms |",
        "|---|---:|---:|---:|",
    ]
    for method, r in ind.items():
        b = r["B_times"]
        lines.append(f"| {method} | {ms(b, 50)} | {ms(b, 90)} | {ms(b, 100)} |")
    lines += [
        "",
        f"## A harder variant: the {args.scale_ups} scale-ups carried out in turn ({args.cycles} cycles)",
        "",
        (
            "Each method's decisions are applied before the next (victims evicted, pods started), so each method follows its own "
            "trajectory and earlier choices shape later states. *failed*: no aligned placement found (NUMA-unaware methods: refused "
            "at admission); *infeasible*: proven impossible in that state; *lost*: mean GPU-seconds lost per placed scale-up."
        ),
        "",
        "| method | scale-ups | hit rate | B hits | C hits | lost GPU-s | latency p50 / p90 / max ms | plans checked | invalid | surplus gangs | outcomes |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for method, r in exp.items():
        lat = r["latency"]["B"] + r["latency"]["C"]
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items()))
        lines.append(
            f"| {method} | {sum(r['tries'].values()):,} | {r['hit_rate']:.1f}% | {r['hits']['B']}/{r['tries']['B']} | "
            f"{r['hits']['C']}/{r['tries']['C']} | {r['lost_mean']:,.0f} | {ms(lat, 50)} / {ms(lat, 90)} / {ms(lat, 100)} | "
            f"{r['checked']:,} | {r['invalid']} | {r['surplus']} | {outcomes} |"
        )
    lines += [
        "",
        f"## Latency on {big['nodes']:,} nodes holding {big['pods']:,} spot pods",
        "",
        (
            "Each node is full (six 1-GPU pods and four half-GPU shares); each decision starts one pending 4-GPU HP pod, so every node "
            f"needs preemption. {args.big_decisions} decisions per method, on the same state (decisions are not carried out)."
        ),
        "",
        "| method | p50 ms | p90 ms | max ms | invalid (first 5 checked) |",
        "|---|---:|---:|---:|---:|",
    ]
    for method in big:
        if isinstance(big[method], dict):
            t = big[method]["times"]
            lines.append(f"| {method} | {ms(t, 50)} | {ms(t, 90)} | {ms(t, 100)} | {big[method]['invalid']} |")
    s = quality_summary(qual["rows"])
    lines += [
        "",
        f"## Lost work against the proven optimum ({s['decisions']} decisions on `planner generate spot`, 50-200 nodes)",
        "",
        (
            f"The exact model (CP-SAT, {args.time_limit:g} s limit) proved {s['proven']} of {s['decisions']} decisions optimal "
            f"({s['infeasible']} proven infeasible). Ratios are over the proven decisions: a heuristic's lost work / the optimum "
            "(1.0 = optimal; infinite where the optimum loses nothing and the heuristic does). *not placed*: the heuristic failed where a "
            "placement exists. *surplus*: victim gangs a plan did not need, summed over all decisions."
        ),
        "",
        "| method | mean ratio | p90 | worst | optimal | not placed | ratio inf | surplus gangs | plans with surplus | invalid |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method in (*HEURISTICS, "exact"):
        m = s[method]
        lines.append(
            f"| {method} | {m['mean']:.3f} | {m['p90']:.3f} | {m['worst']:.3f} | {m['optimal_share']:.1f}% | {m['not_placed']} | "
            f"{m['infinite']} | {m['surplus']} | {m['with_surplus']} | {m['invalid']} |"
        )
    lines += ["", "Exact model time per decision (model building and solving):", "", "| nodes | median s | p90 s | max s |", "|---:|---:|---:|---:|"]
    for n, (med, p90, mx) in s["exact_time"].items():
        lines.append(f"| {n} | {med:.3f} | {p90:.3f} | {mx:.3f} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "preempt.md").write_text("\n".join(lines) + "\n")
    plot(results, s)


def plot(results: dict[str, Any], s: dict[str, Any]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    exp = results["experiment"]
    ind = results["independent"]
    methods = list(exp)
    rate = {m: 100.0 * sum(ind[m]["hits"].values()) / max(1, sum(ind[m]["tries"].values())) for m in methods}
    x = np.arange(len(methods))
    axes[0].bar(x - 0.2, [rate[m] for m in methods], width=0.4, color="tab:blue", label="independent (paper's protocol)")
    axes[0].bar(x + 0.2, [exp[m]["hit_rate"] for m in methods], width=0.4, color="tab:gray", label="carried out in turn")
    axes[0].set_xticks(x, methods)
    axes[0].axhline(44.5, color="tab:red", ls="--", label="Godel standard (paper)")
    axes[0].set_ylabel("topology hit rate, %")
    axes[0].set_title("FlexTopo experiment: 100 nodes")
    axes[0].tick_params(axis="x", rotation=30)
    axes[0].legend(loc="lower right")
    data = [[1000 * t for t in ind[m]["times"]] for m in methods]
    big = results["big"]
    big_methods = [m for m in big if isinstance(big[m], dict)]
    positions = list(range(len(methods)))
    axes[1].boxplot(data, positions=positions, widths=0.35, showfliers=False)
    axes[1].boxplot(
        [[1000 * t for t in big[m]["times"]] for m in big_methods],
        positions=[methods.index(m) + 0.4 for m in big_methods],
        widths=0.35,
        showfliers=False,
        boxprops={"color": "tab:orange"},
        medianprops={"color": "tab:orange"},
    )
    axes[1].set_xticks(positions, methods, rotation=30)
    axes[1].set_yscale("log")
    axes[1].axhline(275.6, color="tab:red", ls="--", label="FlexTopo-IMP P90 (paper)")
    axes[1].set_ylabel("decision latency, ms (black: 100 nodes, orange: 1,000)")
    axes[1].legend(loc="upper left")
    rows = [r for r in results["quality"]["rows"] if r["exact"]["status"] == "optimal"]
    for method in HEURISTICS:
        ratios = sorted(
            (r[method]["cost"] / r["exact"]["cost"]) if r["exact"]["cost"] else (1.0 if r[method]["cost"] == 0 else 10.0)
            for r in rows
            if r[method]["cost"] is not None
        )
        if ratios:
            axes[2].plot(np.minimum(ratios, 10.0), np.linspace(0, 1, len(ratios)), label=method)
    axes[2].set_xscale("log")
    axes[2].set_xlabel("lost work / optimum (capped at 10)")
    axes[2].set_ylabel("share of decisions")
    axes[2].set_title("cost against the exact optimum")
    axes[2].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "preempt.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Small counts, for a smoke run.")
    parser.add_argument("--cycles", type=int, default=None, help="FlexTopo cycles (default 100).")
    parser.add_argument("--scale-ups", type=int, default=50, help="Scale-ups per cycle, half B and half C.")
    parser.add_argument("--exact-cycles", type=int, default=None, help="Cycles for the exact method (default: all).")
    parser.add_argument("--decisions", type=int, default=None, help="Quality decisions (default 510).")
    parser.add_argument("--big-decisions", type=int, default=None, help="Decisions per method on 1,000 nodes (default 50).")
    parser.add_argument("--time-limit", type=float, default=10.0, help="Exact model time limit per decision (s).")
    args = parser.parse_args()
    args.cycles = args.cycles or (3 if args.quick else 100)
    args.exact_cycles = args.exact_cycles or args.cycles
    args.decisions = args.decisions or (30 if args.quick else 510)
    args.big_decisions = args.big_decisions or (5 if args.quick else 50)
    exp = experiment(tuple(m for m in EXPERIMENT_METHODS if m != "exact"), args.cycles, args.scale_ups, validate_every=1)
    exp_exact = experiment(("exact",), args.exact_cycles, args.scale_ups, validate_every=1)
    ordered = {m: (exp_exact if m == "exact" else exp)[m] for m in EXPERIMENT_METHODS}
    results = {
        "experiment": ordered,
        "independent": independent(args.cycles, args.scale_ups),
        "big": big_latency(HEURISTICS, args.big_decisions),
        "quality": quality(args.decisions, args.time_limit),
    }
    write(results, args)
    print((RESULTS / "preempt.md").read_text())


if __name__ == "__main__":
    main()
