"""Topology allocation at the ASI paper's scale (issue 11): one 256-GPU job on 37,707 nodes, and Fig. 14.

Two sections, each a function returning markdown (its plot goes to benchmarks/results/), so that
benchmarks/topology.py can import them; run standalone, this writes benchmarks/results/topology-scale.md:

* ``latency_section``: the wall time of ``plan_allocate`` for one pending job of 32 pods x 8 GPUs
  (256 GPUs) on an already-loaded 37,707-node ASI-like snapshot, warm, per method, split into state
  build / input check / job index / choose+place / validate / state release (and the garbage
  collector's share), with the profile's top entries. The job is timed on the snapshot as generated
  (no node has 8 free GPUs: the job is refused) and after the same-switch defrag plan (it starts);
* ``fig14_section``: ASI Fig. 14's large-job capacity (``planner.capacity.large_job_capacity``) for
  128g1536c and 256g3072c, per GPU model across and within one switch and pooled, before and after
  the ``planner defrag --same-asw`` plan (IPC; and the same on one partition of every node, to show
  what IPC's switch-blind partitions cost), and the same counts in whole 8-GPU pods.

    .venv/bin/python benchmarks/topology_scale.py [--seed 0] [--runs 20] [--no-one-partition]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import gc
import os
import pstats
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import REPO, RESULTS, cached_asi, code_version, machine

from planner import metrics
from planner.capacity import after_plan, gpu_slots, large_job_capacity
from planner.cluster import Cluster, Job, Pod, Topology
from planner.engine import allocate
from planner.engine.defrag import DefragOptions, plan_defrag
from planner.plans import DefragPlan
from planner.snapshot import load_cluster
from planner.state import ClusterState
from planner.validate import allocate as validate_allocate
from planner.warm_allocator import WarmAllocator

NODES = 37_707
METHODS = ("largest-first", "alg2", "kueue-bestfit", "kueue-leastfree", "slurm", "random")
TARGET_MS = 50.0
KUEUE_MS = 27.0
JOB, JOB_PODS, POD_GPUS, POD_CPUS, POD_MEMORY_GIB, JOB_MODEL = "big", 32, 8, 96, 768, "H800"
"""The timed job: 32 pods of 8 GPUs, 12 CPUs and 96 GiB per GPU (the generator's nodes have 128 to
192 CPUs and 8 GiB per CPU, so a pod fits any empty node), pinned to the largest GPU pool."""
REQUESTS = ("128g1536c", "256g3072c")
DEFAULT_PARTITION = DefragOptions.model_fields["partition_size"].default
STAGES = ("state", "check", "index", "choose", "validate", "release")
STAGE_NAMES = {
    "state": "state build",
    "check": "input check",
    "index": "job index",
    "choose": "choose+place",
    "validate": "validate",
    "release": "state release",
}


# ----------------------------------------------------------------------------------------------
# The snapshots: as generated, and after the same-switch defrag plan
# ----------------------------------------------------------------------------------------------


@functools.cache
def asi_snapshot(seed: int) -> Cluster:
    """The 37,707-node ASI-like snapshot (``generate_asi`` defaults: 70% allocation, 40% locked, no
    pending jobs), cached on disk by ``cached_asi`` and checked on load like any snapshot."""
    return load_cluster(cached_asi(NODES, seed))


@functools.cache
def same_asw_defrag(seed: int, partition_size: int = DEFAULT_PARTITION) -> tuple[DefragPlan, float, Cluster]:
    """What ``planner defrag SNAPSHOT --method heuristic --same-asw [--partition-size N]`` plans
    (IPC, otherwise default options, one worker process per core), its in-process wall time, and the
    snapshot once it is carried out."""
    cluster = asi_snapshot(seed)
    start = time.perf_counter()
    plan = plan_defrag(cluster, DefragOptions(method="heuristic", same_asw=True, partition_size=partition_size))
    wall = time.perf_counter() - start
    assert isinstance(plan, DefragPlan)
    return plan, wall, after_plan(cluster, plan)


def with_job(cluster: Cluster, mode: str) -> Cluster:
    """``cluster`` plus the pending 256-GPU job, its topology ``asw`` ``mode``."""
    pods = [Pod(name=f"{JOB}-{i:02d}", job=JOB, gpus=POD_GPUS, cpus=POD_CPUS, memory_gib=POD_MEMORY_GIB, gpu_models=[JOB_MODEL]) for i in range(JOB_PODS)]
    job = Job(name=JOB, topology=Topology(level="asw", mode=mode))
    return cluster.model_copy(update={"pods": [*cluster.pods, *pods], "jobs": [*cluster.jobs, job]})


# ----------------------------------------------------------------------------------------------
# Latency
# ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def stage_timers() -> Iterator[tuple[dict[str, float], list[Any]]]:
    """Time the stages of the real ``plan_allocate`` by wrapping what it calls for them: the
    module's ``ClusterState`` (state build), ``pending_jobs`` (input check) and ``validate_allocate``,
    and ``Cluster.job_index`` (job index; inside another stage it counts there), and the garbage
    collector's time (``gc``, which falls inside the stages). The states built are
    kept in the list yielded, so that the caller can time their release (when the call returns, as
    the last reference goes). Restored on exit."""
    spent = dict.fromkeys(("state", "check", "index", "validate", "gc"), 0.0)
    built: list[Any] = []
    depth = [0]
    gc_start = [0.0]

    def collecting(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_start[0] = time.perf_counter()
        else:
            spent["gc"] += time.perf_counter() - gc_start[0]

    def timed(fn: Any, stage: str) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
            finally:
                spent[stage] += time.perf_counter() - t0
                depth[0] -= 1
            if stage == "state":
                built.append(result)
            return result

        return run

    module = {"ClusterState": "state", "pending_jobs": "check", "validate_allocate": "validate"}
    originals = {name: getattr(allocate, name) for name in module}
    job_index = Cluster.job_index
    for name, stage in module.items():
        setattr(allocate, name, timed(originals[name], stage))
    Cluster.job_index = timed(job_index, "index")  # type: ignore[method-assign]
    gc.callbacks.append(collecting)
    try:
        yield spent, built
    finally:
        gc.callbacks.remove(collecting)
        for name, fn in originals.items():
            setattr(allocate, name, fn)
        Cluster.job_index = job_index  # type: ignore[method-assign]


def time_calls(call: Callable[[], Any], runs: int) -> tuple[list[dict[str, float]], Any]:
    """``runs`` timed calls of ``call`` after one discarded warm-up: per call the total and each
    stage, in seconds, and the last plan. *choose* is the call less its other stages; *release* is
    freeing the states the call built, which it pays as it returns."""
    call()
    samples = []
    with stage_timers() as (spent, built):
        for _ in range(runs):
            for stage in spent:
                spent[stage] = 0.0
            t0 = time.perf_counter()
            plan = call()
            elapsed = time.perf_counter() - t0
            t0 = time.perf_counter()
            built.clear()
            release = time.perf_counter() - t0
            inside = sum(v for k, v in spent.items() if k != "gc")
            samples.append({"total": elapsed + release, **spent, "choose": elapsed - inside, "release": release})
    return samples, plan


def profile(call: Callable[[], Any], roots: tuple[tuple[str, str], ...], calls: int = 5) -> tuple[dict[str, float], list[tuple[str, int, float]]]:
    """cProfile over ``calls`` calls, per call: the cumulative ms of each function that one of the
    ``roots`` (file, function name) calls directly, labelled ``root -> callee``; and every
    function's (label, calls, own ms)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        call()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    callees: dict[str, float] = {}
    own = []
    for key, (_, ncalls, tottime, _, callers) in stats.items():
        own.append((_label(key), round(ncalls / calls), 1000 * tottime / calls))
        for caller, (_, _, _, cumtime) in callers.items():
            if (caller[0], caller[2]) in roots:
                label = f"{caller[2]} -> {_label(key)}"
                callees[label] = callees.get(label, 0.0) + 1000 * cumtime / calls
    return callees, own


def _label(key: tuple[str, int, str]) -> str:
    path, line, name = key
    where = Path(path)
    if "site-packages" in where.parts:
        return f"{'/'.join(where.parts[where.parts.index('site-packages') + 1 :])}:{line}({name})"
    if where.is_relative_to(REPO):
        return f"{where.relative_to(REPO)}:{line}({name})"
    return f"{where.parent.name}/{where.name}:{line}({name})" if line else name


def ms(values: list[float], q: float) -> float:
    return 1000 * float(np.percentile(values, q))


def latency_section(seed: int = 0, runs: int = 20) -> str:
    """Markdown: the latency of one 256-GPU job on 37,707 nodes, per method, through ``plan_allocate``
    (the state rebuilt per call) and ``WarmAllocator`` (the state kept), with the stage breakdown
    and profiles; writes topology-scale-latency.png."""
    plan_d, _, after = same_asw_defrag(seed)
    snapshots = {"as generated": asi_snapshot(seed), "after same-switch defrag": after}
    load = os.getloadavg()[0]
    cold, warm, builds = [], [], []
    warm_of: dict[tuple[str, str], WarmAllocator] = {}
    for snapshot, base in snapshots.items():
        for mode in ("preferred", "required"):
            cluster = with_job(base, mode)
            t0 = time.perf_counter()
            kept = warm_of[snapshot, mode] = WarmAllocator(cluster)
            builds.append(time.perf_counter() - t0)
            for method in METHODS:
                options = allocate.AllocateOptions(method=method, jobs=[JOB])
                samples, plan = time_calls(functools.partial(allocate.plan_allocate, cluster, options), runs)
                per_job = plan.metrics["per_job"].get(JOB)
                outcome = (
                    f"placed: {per_job['asws']} switches (fewest {per_job['min_asws']}), {per_job['nodes']} nodes"
                    if per_job
                    else f"refused: {plan.unplaced[0].reason}"
                )
                cold.append({"snapshot": snapshot, "mode": mode, "method": method, "samples": samples, "outcome": outcome})
                samples, kept_plan = time_calls(functools.partial(kept.allocate, JOB, method), runs)
                same = (kept_plan.placements, kept_plan.unplaced, kept_plan.metrics) == (plan.placements, plan.unplaced, plan.metrics)
                warm.append({"snapshot": snapshot, "mode": mode, "method": method, "samples": samples, "same": same})
                print(
                    f"latency {snapshot} / {mode} / {method}: plan_allocate p50 {ms([s['total'] for s in cold[-1]['samples']], 50):.1f} ms, "
                    f"warm p50 {ms([s['total'] for s in samples], 50):.2f} ms, same plan {same}; {outcome}",
                    flush=True,
                )
    load = max(load, os.getloadavg()[0])
    largest_first = allocate.AllocateOptions(method="largest-first", jobs=[JOB])
    roots = ((allocate.__file__, "plan_allocate"), (allocate.__file__, "greedy_plan"), (validate_allocate.__file__, "validate_allocate"))
    cold_profile = {mode: profile(functools.partial(allocate.plan_allocate, with_job(after, mode), largest_first), roots) for mode in ("preferred", "required")}
    warm_profile = {
        mode: profile(functools.partial(warm_of["after same-switch defrag", mode].allocate, JOB, "largest-first"), roots, calls=50)
        for mode in ("preferred", "required")
    }
    plot_latency(cold, warm)

    def p50(key: str, r: dict[str, Any]) -> float:
        return ms([s[key] for s in r["samples"]], 50)

    def gc_mean(rows: list[dict[str, Any]]) -> float:
        return 1000 * float(np.mean([s["gc"] for r in rows for s in r["samples"]]))

    def row(r: dict[str, Any], middle: str, stages: tuple[str, ...], digits: int) -> str:
        total = [s["total"] for s in r["samples"]]
        span = " / ".join(f"{ms(total, q):.{digits}f}" for q in (0, 50, 90))
        cells = " | ".join(f"{p50(k, r):.{max(digits, int(k == 'choose'))}f}" for k in stages)
        return f"| {r['snapshot']} | {r['mode']} | {r['method']} | {middle} | {span} | {cells} | {gc_mean([r]):.{digits}f} |"

    totals = [p50("total", r) for r in cold]
    warm_totals = [p50("total", r) for r in warm]
    state_share = float(np.median([s["state"] / s["total"] for r in cold for s in r["samples"]]))
    median = {k: 1000 * float(np.median([s[k] for r in cold for s in r["samples"]])) for k in STAGES}
    choose = [p50("choose", r) for r in cold]
    lines = [
        f"## Latency: one 256-GPU job on {NODES:,} nodes (target <= {TARGET_MS:g} ms warm)",
        "",
        (
            f"Snapshot: `generate_asi(nodes={NODES}, seed={seed})` (70% GPU allocation, 40% locked pods, spread scheduler, no pending "
            f"jobs; on the command line `planner generate asi --nodes {NODES} --seed {seed}`), plus one pending job `{JOB}` of "
            f"{JOB_PODS} pods x {POD_GPUS} GPUs ({JOB_PODS * POD_GPUS} GPUs), {POD_CPUS} CPUs and {POD_MEMORY_GIB} GiB per pod, pinned "
            f"to {JOB_MODEL}, topology `asw` `preferred` or `required`. As generated, no node has {POD_GPUS} free GPUs (the spread "
            "scheduler leaves at most 5 on any node), so the job is refused; after the same-switch defrag plan of the Fig. 14 section "
            f"({len(plan_d.vacated_nodes):,} nodes vacated) the `preferred` job starts. Both are requests a service answers."
        ),
        "",
        (
            f"Measured in-process on the parsed and checked `Cluster` (a service's loaded snapshot), one discarded warm-up call, then "
            f"{runs} calls per row, one core (load average during the runs up to {load:.1f}), two ways:"
        ),
        "",
        (
            "* `plan_allocate(cluster, AllocateOptions(method=M, jobs=['big']))`, the function behind `planner allocate` and `POST "
            "/v1/allocate`: it builds `ClusterState` and the validator's index from the `Cluster` on every call and frees them as it "
            "returns;"
        ),
        (
            "* `WarmAllocator(cluster).allocate('big', M)` (`planner/warm_allocator.py`): the state and the index built once and kept "
            "between requests, as a scheduler keeps its cache; this is what a service pays per request on an already-loaded "
            f"cluster. Building it took {1000 * min(builds):.0f} to {1000 * max(builds):.0f} ms per snapshot (once, not per request)."
        ),
        "",
        (
            "The stages are timed inside the real calls by wrapping what they call: `ClusterState` (*build*), `pending_jobs` (*check*: "
            "every pod scanned for the job's pending pods and their shape), `Cluster.job_index` (*index*: a dict of every job) and "
            "`validate_allocate` (with the validator's index of every node, pod and job when not kept); *release* is freeing the "
            "call's state (timed by holding it until the call returns); *choose+place* is the rest (usable capacity per node and per "
            "switch, the method's choice, placing the pods, per-job metrics, the plan object). Medians (p50) in ms; *GC mean* is the "
            "garbage collector's mean time per call, inside the stages (a full collection every few calls walks every object of the "
            "snapshot and the state: most of the spread between p50 and p90)."
        ),
        "",
        "`plan_allocate`, the state rebuilt per call:",
        "",
        "| snapshot | topology | method | outcome | end-to-end min / p50 / p90 | build | check | index | choose+place | validate | release | GC mean |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [row(r, r["outcome"], STAGES, 0) for r in cold]
    lines += [
        "",
        "`WarmAllocator`, the state kept (same rows; *same plan*: placements, unplaced and metrics equal to `plan_allocate`'s):",
        "",
        "| snapshot | topology | method | same plan | end-to-end min / p50 / p90 | choose+place | validate | GC mean |",
        "|---|---|---|---|---|---:|---:|---:|",
    ]
    lines += [row(r, "yes" if r["same"] else "NO", ("choose", "validate"), 1) for r in warm]
    verdict = "meets" if max(warm_totals) <= TARGET_MS else "misses"
    lines += [
        "",
        f"Per request on a loaded cluster (`WarmAllocator`) the service {verdict} the {TARGET_MS:g} ms target: p50 "
        f"{min(warm_totals):.1f} to {max(warm_totals):.1f} ms, p90 up to {max(ms([s['total'] for s in r['samples']], 90) for r in warm):.1f} "
        f"ms (issue 11 quotes Kueue TAS at ~{KUEUE_MS:g} ms per workload). Through `plan_allocate` the same request takes p50 "
        f"{min(totals):.0f} to {max(totals):.0f} ms. Over all its calls the stages' medians are: "
        + ", ".join(f"{STAGE_NAMES[k]} {median[k]:.0f} ms" for k in STAGES)
        + f"; the garbage collector takes {gc_mean(cold):.0f} ms per call on average, within those. Building `ClusterState` from "
        f"the {NODES:,}-node, {len(asi_snapshot(seed).pods):,}-pod snapshot is {100 * state_share:.0f}% of a call. Only "
        f"*choose+place* depends on the job and the method ({min(choose):.1f} to {max(choose):.1f} ms per row); every other stage is "
        "proportional to the whole cluster, which is what keeping the state removes.",
        "",
        (
            "Where the time goes (cProfile, largest-first after the defrag, per call; cProfile inflates functions called often, such as "
            "`ClusterState._add` once per pod placed, and charges each garbage collection to the function that triggered it). "
            "What `plan_allocate`, `greedy_plan` (the greedy methods' loop, which both call) and `validate_allocate` call directly, "
            "cumulative ms per call (5 calls of `plan_allocate`, 50 of `WarmAllocator.allocate`; callees under 0.1 ms left out):"
        ),
        "",
        "| callee | plan_allocate, preferred | plan_allocate, required | WarmAllocator, preferred | WarmAllocator, required |",
        "|---|---:|---:|---:|---:|",
    ]
    tables = [cold_profile["preferred"][0], cold_profile["required"][0], warm_profile["preferred"][0], warm_profile["required"][0]]
    for label in sorted(set().union(*tables), key=lambda k: -max(t.get(k, 0.0) for t in tables)):
        values = [t.get(label, 0.0) for t in tables]
        if max(values) >= 0.1:
            lines.append(f"| `{label}` | " + " | ".join(f"{v:.1f}" for v in values) + " |")
    for name, own, count in (("`plan_allocate`", cold_profile["preferred"][1], 10), ("`WarmAllocator`", warm_profile["preferred"][1], 8)):
        lines += ["", f"The functions with the most own time under {name} (preferred), per call:", "", "| function | calls | own ms |", "|---|---:|---:|"]
        for label, ncalls, ms_own in sorted(own, key=lambda r: -r[2])[:count]:
            lines.append(f"| `{label}` | {ncalls:,} | {ms_own:.2f} |")
    lines += ["", "![latency breakdown](topology-scale-latency.png)", ""]
    return "\n".join(lines)


def plot_latency(cold: list[dict[str, Any]], warm: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(15, 0.36 * len(cold) + 1.8), sharey=True)
    labels = [f"{r['snapshot']}, {r['mode']}, {r['method']}" for r in cold]
    y = np.arange(len(cold))[::-1]
    colors = {"state": "tab:gray", "check": "tab:orange", "index": "tab:brown", "choose": "tab:blue", "validate": "tab:green", "release": "silver"}
    for ax, rows, title in ((axes[0], cold, "plan_allocate (state rebuilt per call)"), (axes[1], warm, "WarmAllocator (state kept)")):
        left = np.zeros(len(rows))
        for stage in STAGES:
            width = np.array([ms([s[stage] for s in r["samples"]], 50) for r in rows])
            if width.any():
                ax.barh(y, width, left=left, color=colors[stage], label=STAGE_NAMES[stage])
            left += width
        ax.set_xlim(0, 1.45 * max(left.max(), TARGET_MS))  # room for the legend
        ax.axvline(TARGET_MS, color="tab:red", ls="--", label=f"target {TARGET_MS:g} ms")
        ax.axvline(KUEUE_MS, color="tab:purple", ls=":", label=f"Kueue TAS ~{KUEUE_MS:g} ms")
        ax.set_xlabel("median ms per stage (one core)")
        ax.set_title(title)
        ax.legend(loc="lower right", fontsize=8)
    axes[0].set_yticks(y, labels, fontsize=8)
    fig.suptitle(f"One 256-GPU job on {NODES:,} nodes")
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / "topology-scale-latency.png", dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------
# ASI Fig. 14: large-job capacity before and after the same-switch defrag
# ----------------------------------------------------------------------------------------------


def counts(state: ClusterState, slots: np.ndarray, gpus: int) -> dict[str, Any]:
    """Requests of ``gpus`` GPUs that ``slots`` (GPU slots per node) hold, per GPU model across and
    within one switch, and pooled across models: Fig. 14's counting rule on any slot vector; and
    the slots under the roomiest switch."""
    model_of = np.array([n.gpu_model or "(unnamed)" for n in state.cluster.nodes])  # type: ignore[union-attr]
    per_model = {}
    roomiest = 0
    for model in sorted(set(model_of.tolist())):
        mask = model_of == model
        under_switch = np.bincount(state.asw_domain[mask], weights=slots[mask])
        roomiest = max(roomiest, int(under_switch.max()))
        per_model[model] = {
            "usable_gpus": int(slots[mask].sum()),
            "across_asw": int(slots[mask].sum() // gpus),
            "within_asw": int(np.floor(under_switch / gpus).sum()),
        }
    return {"per_model": per_model, "heterogeneous_across_asw": int(slots.sum() // gpus), "roomiest_asw": roomiest}


def capacity(cluster: Cluster) -> dict[str, dict[str, dict[str, Any]]]:
    """Per request: Fig. 14's counts as ``large_job_capacity`` gives them (GPU slots) and in whole
    8-GPU pods (a node offers its slots rounded down to a multiple of 8)."""
    shapes = [metrics.parse_shape(text) for text in REQUESTS]
    state = ClusterState(cluster)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for shape, library in zip(shapes, large_job_capacity(state, shapes)):
        slots = gpu_slots(state, shape)
        mine = counts(state, slots, shape.gpus)
        assert mine["per_model"] == library["per_model"] and mine["heterogeneous_across_asw"] == library["heterogeneous_across_asw"]
        out[str(shape)] = {"gpus": mine, "pods": counts(state, slots // POD_GPUS * POD_GPUS, shape.gpus)}
    return out


def fig14_section(seed: int = 0, one_partition: bool = True) -> str:
    """Markdown: ASI Fig. 14's counts before and after the same-switch defrag plan (and, with
    ``one_partition``, after the same plan made on one partition of every node), in GPU slots and in
    whole 8-GPU pods; writes topology-scale-fig14.png."""
    cluster = asi_snapshot(seed)
    plans = {"IPC": (DEFAULT_PARTITION, *same_asw_defrag(seed))}
    if one_partition:
        plans["IPC, one partition"] = (NODES, *same_asw_defrag(seed, NODES))
    states = {"before": capacity(cluster), **{f"after {name}": capacity(after) for name, (_, _, _, after) in plans.items()}}
    plot_fig14(states)
    idle = metrics.summary(cluster)["by_model"]
    first = states["before"][REQUESTS[0]]["gpus"]["per_model"]
    cpu_binds = any(x["usable_gpus"] != int(idle[model]["idle_gpus"]) for model, x in first.items())
    lines = [
        f"## Large-job capacity (ASI Fig. 14) before and after a same-switch defrag, {NODES:,} nodes",
        "",
        (
            f"Snapshot: `generate_asi(nodes={NODES}, seed={seed})` (70% GPU allocation, 40% locked pods, spread scheduler, no pending "
            f"jobs). Requests {' and '.join(REQUESTS)}: 128 and 256 GPUs with 12 CPUs per GPU. `planner.capacity.large_job_capacity` "
            "(seed-specs D's rule): a node offers min(free GPUs, floor(free CPUs / 12)) GPU slots; *across* switches = floor(slots of "
            "the model / G); *within* one switch = sum over switches of floor(slots under the switch / G); *pooled* = every model "
            "across switches (heterogeneous GPUs allowed; within one switch pooling changes nothing, a switch has one model). The "
            "second table counts the same requests in whole 8-GPU pods of 96 CPUs (each node's slots rounded down to a multiple of 8; "
            "computed here, `planner report` counts GPU slots only)."
        ),
        "",
        "Defrag: `plan_defrag(cluster, DefragOptions(method='heuristic', same_asw=True))`, i.e. `planner defrag --method heuristic "
        "--same-asw` (IPC: K = 3, R = 5, seed 0, one worker process per core), applied with `planner.capacity.after_plan` (the "
        "plan validated, as `planner report --plan` does). `exact` and `hybrid` are not practical at this size (`exact` refuses "
        "above 1,000 nodes). IPC draws random partitions of 500 nodes: about "
        f"{DEFAULT_PARTITION * len(cluster.nodes) / len({n.asw for n in cluster.nodes}) / len(cluster.nodes):.2f} nodes of any one "
        "switch per partition, so under `--same-asw` few partitions hold two nodes of a switch to consolidate. "
        + ("*IPC, one partition* (`--partition-size 37707`) keeps every switch whole, to show what the partitioning costs." if one_partition else ""),
        "",
        "| plan | partition size | moves | GPUs moved | waves | vacated nodes | nodes with slack before -> after | wall s (in-process) |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name, (size, plan, wall, _) in plans.items():
        m, report = plan.metrics, plan.report
        slack = f"{m.before['nodes_with_slack']:,} -> {m.after['nodes_with_slack']:,}" if m else ""
        lines.append(
            f"| {name} | {size:,} | {len(plan.moves()):,} | {report.gpus_moved if report else 0:,.0f} | {len(plan.waves)} | "
            f"{len(plan.vacated_nodes):,} | {slack} | {wall:.1f} |"
        )
    names = list(states)
    lines += [
        "",
        "Reproduce with the command line (the same plans and counts):",
        "",
        "```",
        f"planner generate asi --nodes {NODES} --seed {seed} --out asi-{NODES}.json",
        f"planner defrag asi-{NODES}.json --method heuristic --same-asw --out same-asw.json",
        f"planner report asi-{NODES}.json --requests {','.join(REQUESTS)} --plan same-asw.json --json",
        *([f"planner defrag asi-{NODES}.json --method heuristic --same-asw --partition-size {NODES} --out same-asw-one.json"] if one_partition else []),
        "```",
        "",
    ]
    header = " / ".join(names)
    for granularity, title in (("gpus", "GPU slots (`large_job_capacity`, the paper's rule)"), ("pods", "whole 8-GPU pods of 96 CPUs")):
        lines += [
            f"Requests that fit, in {title}; each cell {header}:",
            "",
            "| request | GPU model | usable GPUs | across switches | within one switch |",
            "|---|---|---:|---:|---:|",
        ]
        for request in REQUESTS:
            per = [states[n][request][granularity] for n in names]
            for model in per[0]["per_model"]:
                cell = {k: " / ".join(f"{d['per_model'][model][k]:,}" for d in per) for k in ("usable_gpus", "across_asw", "within_asw")}
                lines.append(f"| {request} | {model} | {cell['usable_gpus']} | {cell['across_asw']} | {cell['within_asw']} |")
            pooled = " / ".join(f"{d['heterogeneous_across_asw']:,}" for d in per)
            summed = " / ".join(f"{sum(x['within_asw'] for x in d['per_model'].values()):,}" for d in per)
            lines.append(f"| {request} | pooled (heterogeneous) | | {pooled} | {summed} (the models' sum) |")
        lines.append("")
    r = REQUESTS[0]
    b, a = states["before"][r], states["after IPC"][r]
    ceiling = sum(x["within_asw"] for x in b["gpus"]["per_model"].values())
    reached = sum(x["within_asw"] for x in a["pods"]["per_model"].values())
    unchanged = all(states["before"][q]["gpus"] == states["after IPC"][q]["gpus"] for q in REQUESTS)
    lines += [
        "In GPU slots a same-switch defrag cannot change the counts unless the 12-CPU limit binds: a same-switch move keeps every "
        "switch's free GPUs and CPUs (so the within-switch sums) and every model's free GPUs (so the across-switch ones). "
        + ("Here it never binds (usable GPUs equal idle GPUs) " if not cpu_binds else "Here it binds on some nodes ")
        + ("and the counts are unchanged. " if unchanged else "and the counts changed. ")
        + f"The rule counts a {r[:3]}-GPU request as single GPUs anywhere under a switch, which an 8-GPU-pod job cannot use. In "
        f"whole 8-GPU pods the generated snapshot takes {b['pods']['heterogeneous_across_asw']:,} requests (the spread scheduler "
        f"leaves no node with 8 free GPUs); the vacated nodes are what creates large-job capacity: "
        f"{a['pods']['heterogeneous_across_asw']:,} {r} requests across switches after IPC, but {reached:,} within one switch, "
        f"where the GPU-slot count, {ceiling:,}, is the most a same-switch defrag could reach: after IPC the roomiest switch has "
        f"{a['pods']['roomiest_asw']:,} GPUs in whole free 8-GPU slots."
        + (
            " On one partition the same defrag reaches "
            f"{sum(x['within_asw'] for x in states['after IPC, one partition'][r]['pods']['per_model'].values()):,} "
            f"(roomiest switch {states['after IPC, one partition'][r]['pods']['roomiest_asw']:,} GPUs): the switch-blind partitions, "
            "not the snapshot, hold IPC back under `--same-asw`."
            if one_partition
            else ""
        )
        + " For 256 GPUs within one switch every count is near zero, as Fig. 14 says of large homogeneous requests: at 70% "
        "allocation a switch of 32 to 64 nodes has about 77 to 154 free GPUs.",
        "",
        "![Fig. 14 before and after](topology-scale-fig14.png)",
        "",
    ]
    return "\n".join(lines)


def plot_fig14(states: dict[str, dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(REQUESTS), figsize=(14, 8.5), squeeze=False)
    shades = {"across_asw": ("tab:blue", "cornflowerblue", "lightsteelblue"), "within_asw": ("tab:orange", "sandybrown", "moccasin")}
    bars = [(key, name, shades[key][k]) for key in ("across_asw", "within_asw") for k, name in enumerate(states)]
    width = 0.8 / len(bars)
    for row, (granularity, title) in enumerate((("gpus", "GPU slots (Fig. 14 rule)"), ("pods", "whole 8-GPU pods"))):
        for col, request in enumerate(REQUESTS):
            ax = axes[row][col]
            models = list(states["before"][request][granularity]["per_model"])
            groups = [*models, "pooled"]
            x = np.arange(len(groups))
            for k, (key, name, color) in enumerate(bars):
                d = states[name][request][granularity]
                values = [d["per_model"][m][key] for m in models]
                values.append(d["heterogeneous_across_asw"] if key == "across_asw" else np.nan)
                drawn = ax.bar(
                    x + (k - (len(bars) - 1) / 2) * width,
                    values,
                    width=width,
                    color=color,
                    label=f"{'across' if key == 'across_asw' else 'within one switch'}, {name}",
                )
                ax.bar_label(drawn, labels=["" if np.isnan(v) else f"{v:.0f}" for v in values], fontsize=6)
            ax.set_xticks(x, groups)
            ax.set_ylabel("requests that fit")
            ax.set_title(f"{request}: {title}")
            if row == 0 and col == 0:
                ax.legend(fontsize=7)
    fig.suptitle(f"ASI Fig. 14 on {NODES:,} nodes, before and after `planner defrag --same-asw`")
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / "topology-scale-fig14.png", dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="Snapshot seed (the defrag keeps its own default seed 0).")
    parser.add_argument("--runs", type=int, default=20, help="Timed calls per configuration (after one warm-up).")
    parser.add_argument("--no-one-partition", action="store_true", help="Skip the one-partition defrag (about 5 minutes).")
    args = parser.parse_args()
    version = code_version()  # the code this run imports
    # the defrag plans first, with the machine to themselves (IPC uses every core)
    same_asw_defrag(args.seed)
    if not args.no_one_partition:
        same_asw_defrag(args.seed, NODES)
    sections = [latency_section(args.seed, args.runs), fig14_section(args.seed, not args.no_one_partition)]
    text = "\n".join(
        [
            f"# Topology allocation at {NODES:,} nodes",
            "",
            f"Machine: {machine()}; planner at {version}. Reproduce: `.venv/bin/python benchmarks/topology_scale.py --seed "
            f"{args.seed} --runs {args.runs}" + (" --no-one-partition" if args.no_one_partition else "") + "` (about 20 minutes).",
            "",
            *sections,
        ]
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "topology-scale.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
