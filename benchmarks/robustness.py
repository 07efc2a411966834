"""Adversarial robustness: fuzzed snapshots, malformed command lines, hostile HTTP, kill -9, full disks, load.

Six categories, each reporting how many cases were tried and how many failed (a failure is anything
but the expected behaviour), with the details of the first 20 failures:

1. fuzz: random consistent snapshots (1-40 nodes; 0 to 64 GPUs; awkward CPU, memory and share
   values; model pinning, selectors, anti-affinity, locked and pending pods, cordoned nodes, jobs
   with required or preferred topology, switches present or absent, many shares on one node), built
   only where ``rules.pods_fit`` and ``rules.job_topology_ok`` allow, written as JSON and read back
   with ``parse_cluster``, then planned by a random method with random valid options. Every plan is
   replayed by ``tests.support.defrag_oracle.replay`` (independent of the planner's validator) and checked against
   the limits asked for, its ``vacated_nodes`` and its report; on tiny snapshots the report's claims
   (objective, bound, optimality) are also checked against the oracle's exhaustive search;
2. cli: the real ``planner`` console script on a corpus of malformed invocations (exit 2 with a
   message and no traceback; 0 or 1 where the input is valid, as stated per case);
3. http: hostile requests to a real server (``tests.support.harness.Server``, token set): the
   documented 4xx in the problem format, never 5xx, never a traceback;
4. kill: kill -9 of the whole server (also three times during one job), of one job's worker, of the
   fork server during a job, and of the large-body parser process while it parses;
5. store: the job store on a small tmpfs that fills up during a job, before a submission, and that
   is read-only or full at start-up (skipped with the reason when a tmpfs cannot be mounted);
6. load: ``/healthz`` latency and server memory while the server parses ~60 MiB snapshot bodies
   (one after another, then 8 at once) and solves two jobs.

Writes benchmarks/results/robustness.md (nothing else); a run of some categories only (``--only``)
writes benchmarks/results/robustness-<categories>.md instead, beside the full record. The full run (60,000 fuzzed snapshots, most
of the time) takes about 30-45 minutes on 2 cores; ``--quick`` about 2 minutes.

    .venv/bin/python benchmarks/robustness.py [--quick] [--only fuzz,cli,http,kill,store,load]
        [--count N] [--seed S] [--jobs J]
    .venv/bin/python benchmarks/robustness.py --case I [--seed S]   # print fuzz case I and its check
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gzip
import json
import math
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support
from _measure import RESULTS, _tree_rss_kib, machine

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod, SnapshotError
from planner.engine import METHOD_OPTIONS, DefragOptions, plan_defrag
from planner.snapshot import cluster_to_dict, parse_cluster
from tests.support import defrag_oracle as oracle
from tests.support.harness import PLANNER, Server, rss_mib, wait_status

CATEGORIES = ("fuzz", "cli", "http", "kill", "store", "load")
FUZZ_COUNT = 60_000
FUZZ_TARGET = 20_000
FUZZ_QUICK = 60
MAX_FAILURES_SHOWN = 20
TOKEN = "robustness-token-0123456789"
FIG15 = Path(__file__).resolve().parents[1] / "instances" / "fig15-ejection-chain.json"


@dataclass
class Outcome:
    """What one category tried and how it went."""

    key: str
    title: str
    unit: str
    target: str
    tried: int = 0
    failed: int = 0
    met: bool | None = None
    """None: not judged (skipped, or a quick run below the target's size)."""
    skipped: str | None = None
    wall_s: float = 0.0
    lines: list[str] = field(default_factory=list)
    """Markdown details (tables, measurements) for the category's section."""
    failures: list[str] = field(default_factory=list)

    def fail(self, text: str) -> None:
        self.failed += 1
        self.failures.append(text)

    def check(self, ok: bool, text: str) -> bool:
        """Count one check; a failed one is recorded with ``text``."""
        self.tried += 1
        if not ok:
            self.fail(text)
        return ok


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _env() -> dict[str, str]:
    """The environment for child processes: no token, database URL or debug switch of ours leaks in."""
    return {k: v for k, v in os.environ.items() if k not in ("PLANNER_API_TOKEN", "DATABASE_URL", "PLANNER_DEBUG")}


# ================================================================================================
# 1. Fuzzed snapshots through every method
# ================================================================================================

MODELS = ["A100", "H800", "L40", ""]
NODE_CPUS = [16.0, 32.0, 64.0, 96.0, 128.0]
NODE_CPUS_AWKWARD = [1e-7, 0.3, 1 / 3, 1.0, 2.5, 123.456, 100 / 3]
NODE_MEMORY = [64.0, 256.0, 512.0, 1024.0]
NODE_MEMORY_AWKWARD = [0.0, 1e-7, 1 / 3, 123.456]
POD_CPUS = [0.0, 1e-7, 0.3, 1 / 3, 1.0, 1.0, 2.0, 2.0, 4.0, 8.0, 15.432, 123.456 / 16]
POD_MEMORY = [0.0, 0.0, 1e-7, 1 / 3, 4.0, 16.0, 32.0, 123.456 / 8]
SHARES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1 / 3, 2 / 3, 0.25, 0.15, 0.45]
LABELS = [{}, {}, {"pool": "train"}, {"pool": "infer"}, {"pool": "train", "zone": "a"}]
SOLVER_METHODS = ("exact", "hybrid", "auto", "compare")
METHOD_WEIGHTS = {
    "heuristic": 3.0,
    "random": 2.0,
    "descheduler": 2.0,
    "repack": 2.0,
    "exact": 2.0,
    "auto": 1.5,
    "compare": 1.2,
    "hybrid": 0.8,
}
ORACLE_MAX_NODES = 4
ORACLE_MAX_MOVABLE = 5
"""Snapshots this small also get their report's claims checked by the oracle's exhaustive search."""


def random_snapshot(rng: random.Random, size: int) -> dict[str, Any]:
    """A consistent snapshot of ``size`` nodes as a JSON-ready dict (see the module docstring).

    Pods are placed only where the plain rules allow (a cordoned node is checked as if schedulable:
    pods already on it may stay), so ``parse_cluster`` must accept every snapshot this returns.
    """
    switches = rng.choice(["none", "asw", "both", "mixed"])
    time_s = rng.choice([0.0, 100.0, 3600.0, 1e7])
    node_dicts: list[dict[str, Any]] = []
    for i in range(size):
        gpus = 64 if rng.random() < 0.03 else rng.choices([0, 1, 2, 4, 8, 16], weights=[1, 1, 2, 3, 6, 1])[0]
        node: dict[str, Any] = {
            "name": f"n-{i}",
            "gpu_model": rng.choice(MODELS),
            "gpus": gpus,
            "cpus": 512.0 if gpus == 64 else rng.choice(NODE_CPUS_AWKWARD if rng.random() < 0.15 else NODE_CPUS),
            "memory_gib": 4096.0 if gpus == 64 else rng.choice(NODE_MEMORY_AWKWARD if rng.random() < 0.15 else NODE_MEMORY),
        }
        if switches in ("asw", "both") or (switches == "mixed" and rng.random() < 0.6):
            node["asw"] = f"asw-{rng.randrange(3)}"
        if switches == "both" or (switches == "mixed" and rng.random() < 0.4):
            node["spine"] = f"spine-{rng.randrange(2)}"
        labels = rng.choice(LABELS)
        if labels:
            node["labels"] = dict(labels)
        if rng.random() < 0.1:
            node["schedulable"] = False
        if rng.random() < 0.2:
            node["eviction_count"] = rng.randrange(4)
        node_dicts.append(node)
    nodes = [Node(**n) for n in node_dicts]
    job_dicts: list[dict[str, Any]] = []
    for j in range(rng.randrange(5)):
        job: dict[str, Any] = {"name": f"job-{j}"}
        if rng.random() < 0.7:
            job["topology"] = {"level": rng.choice(["asw", "spine"]), "mode": rng.choice(["required", "required", "preferred"])}
        job_dicts.append(job)
    jobs = {j["name"]: Job(**j) for j in job_dicts}
    residents: dict[str, list[Pod]] = {n.name: [] for n in nodes}
    job_nodes: dict[str, list[Node]] = {name: [] for name in jobs}
    as_if_schedulable = {n.name: n.model_copy(update={"schedulable": True}) for n in nodes}
    pod_dicts: list[dict[str, Any]] = []

    def add_pod(pod: dict[str, Any], targets: list[Node]) -> None:
        candidate = Pod(**pod)
        for target in targets:
            ok = rules.pods_fit(as_if_schedulable[target.name], residents[target.name], [candidate])
            if ok and candidate.job is not None:
                ok = rules.job_topology_ok(jobs[candidate.job], [*job_nodes[candidate.job], target])
            if ok:
                pod["node"] = target.name
                residents[target.name].append(candidate.model_copy(update={"node": target.name}))
                if candidate.job is not None:
                    job_nodes[candidate.job].append(target)
                break
        pod_dicts.append(pod)

    count = min(200, int(size * rng.uniform(0.5, 5.0)) + rng.randrange(3))
    for i in range(count):
        kind = rng.random()
        gpus: float = rng.choice([1, 1, 1, 2, 2, 4, 8]) if kind < 0.55 else rng.choice(SHARES) if kind < 0.85 else 0
        if rng.random() < 0.01:
            gpus = rng.choice([16, 64])
        pod: dict[str, Any] = {"name": f"p-{i}", "gpus": gpus, "cpus": rng.choice(POD_CPUS)}
        memory = rng.choice(POD_MEMORY)
        if memory:
            pod["memory_gib"] = memory
        if jobs and rng.random() < 0.4:
            pod["job"] = rng.choice(list(jobs))
        if rng.random() < 0.25:
            pod["gpu_models"] = rng.sample(MODELS[:3], rng.choice([1, 1, 2]))
        if rng.random() < 0.15:
            pod["node_selector"] = {"pool": rng.choice(["train", "infer"])}
        if rng.random() < 0.15:
            pod["anti_affinity"] = rng.sample(["svc-a", "svc-b", "svc-c"], rng.choice([1, 1, 2]))
        if rng.random() < 0.2:
            pod["locked"] = True
        if rng.random() < 0.3:
            pod["priority"] = "LP"
        if rng.random() < 0.2:
            pod["started_s"] = rng.choice([0.0, time_s])
        if rng.random() < 0.1:
            pod["checkpoint_s"] = rng.choice([0.0, time_s / 2])
        if rng.random() < 0.1:
            pod["standby"] = True
        pending = rng.random() < 0.08
        targets = [] if pending else rng.sample(nodes, min(len(nodes), 4))
        add_pod(pod, targets)
    big = [n for n in nodes if n.gpus >= 16]
    if big and rng.random() < 0.3:  # many shares on one node
        target = rng.choice(big)
        low, high = rng.choice([(0.1, 0.3), (0.34, 0.47), (0.05, 0.95)])
        for i in range(rng.randrange(10, 61)):
            share = round(rng.uniform(low, high), rng.choice([2, 3, 6])) if rng.random() < 0.7 else rng.choice([1 / 3, 2 / 3])
            add_pod({"name": f"s-{i}", "gpus": share, "cpus": rng.choice([0.0, 0.1, 1 / 3]), "locked": rng.random() < 0.2}, [target])
    return {"version": 1, "time_s": time_s, "nodes": node_dicts, "pods": pod_dicts, "jobs": job_dicts}


def random_options(rng: random.Random, method: str) -> dict[str, Any]:
    """Random valid options for ``method``: only the options it uses (``METHOD_OPTIONS``)."""
    used = METHOD_OPTIONS[method]
    options: dict[str, Any] = {"method": method, "workers": 1}
    if "max_moves" in used and rng.random() < 0.4:
        options["max_moves"] = rng.choice([0, 1, 2, 3, 5, 10, 20, 50])
    if "max_moves_per_node" in used and rng.random() < 0.3:
        options["max_moves_per_node"] = rng.choice([0, 1, 2, 3, 6])
    if "same_asw" in used and rng.random() < 0.3:
        options["same_asw"] = True
    if "seed" in used and rng.random() < 0.8:
        options["seed"] = rng.choice([0, 1, 7, rng.randrange(2**31 - 1), 2**31 - 1])
    if "threshold" in used:
        options["threshold"] = rng.choice([0.05, 0.3, 0.5, 0.75, 1.0, round(rng.uniform(0.01, 1.0), 4)])
    if "partition_size" in used and rng.random() < 0.3:
        options["partition_size"] = rng.choice([2, 3, 5, 500])
    if "depth" in used and rng.random() < 0.3:
        options["depth"] = rng.choice([1, 2, 3, 5])
    if "rounds" in used and rng.random() < 0.3:
        options["rounds"] = rng.choice([1, 2, 5, 10])
    if "time_limit_s" in used:
        options["time_limit_s"] = rng.choice([1.0, 1.5, 2.0]) if method == "hybrid" else rng.choice([1.0, 1.0, 2.0, 3.0])
    if "solver" in used:
        options["solver"] = rng.choice(["highs", "cpsat"])
    if "solver_workers" in used and rng.random() < 0.5:
        options["solver_workers"] = rng.choice([1, 2])
    if "formulation" in used and rng.random() < 0.3:
        options["formulation"] = rng.choice(["auto", "pod", "class"])
    if "lexicographic" in used and rng.random() < 0.3:
        options["lexicographic"] = rng.choice(["two-phase", "weighted"])
    if "deterministic" in used and options.get("solver") == "cpsat" and rng.random() < 0.3:
        options["deterministic"] = True
    return options


def fuzz_case_input(seed: int, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Snapshot and options of fuzz case ``index`` (the same for a seed whatever the process)."""
    rng = random.Random(f"robustness-{seed}-{index}")
    method = rng.choices(list(METHOD_WEIGHTS), weights=list(METHOD_WEIGHTS.values()))[0]
    if method in SOLVER_METHODS and rng.random() < 0.9:
        size = rng.randint(1, 12)  # solver methods mostly on tiny snapshots
    else:
        size = rng.choice([rng.randint(1, 8), rng.randint(1, 8), rng.randint(9, 20), rng.randint(21, 40)])
    return random_snapshot(rng, size), random_options(rng, method)


class CaseTimeout(BaseException):
    """A case ran past its time budget (a BaseException, so no ``except Exception`` in the planner swallows it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise CaseTimeout


def fuzz_case(task: tuple[int, int]) -> dict[str, Any]:
    """Run one fuzz case: parse, plan, check. Returns its method, sizes, wall time and failures."""
    seed, index = task
    try:
        return _fuzz_case(seed, index)
    except Exception as err:  # noqa: BLE001 - the generator or a checker broke: reported, the run goes on
        return {
            "index": index,
            "method": "?",
            "nodes": 0,
            "pods": 0,
            "wall_s": 0.0,
            "kind": "harness error",
            "failures": [f"{type(err).__name__}: {err} in the benchmark itself: {traceback.format_exc()[-600:]}"],
            "oracle": False,
            "moves": 0,
            "status": "",
        }


def _fuzz_case(seed: int, index: int) -> dict[str, Any]:
    snapshot, options = fuzz_case_input(seed, index)
    result: dict[str, Any] = {
        "index": index,
        "method": options["method"],
        "nodes": len(snapshot["nodes"]),
        "pods": len(snapshot["pods"]),
        "wall_s": 0.0,
        "kind": "ok",
        "failures": [],
        "oracle": False,
        "moves": 0,
        "status": "",
    }
    text = json.dumps(snapshot)
    try:
        cluster = parse_cluster(text)
    except SnapshotError as err:
        result.update(kind="parser refused", failures=[f"parse_cluster refused a consistent snapshot: {'; '.join(err.problems[:3])}"])
        return result
    except Exception as err:  # noqa: BLE001 - the parser crashed
        result.update(kind="crash", failures=[f"parse_cluster raised {type(err).__name__}: {str(err)[:300]}"])
        return result
    try:
        built = DefragOptions(**options)
    except Exception as err:  # noqa: BLE001 - a valid option refused is a failure to report
        result.update(kind="options refused", failures=[f"DefragOptions refused valid options: {err}"])
        return result
    budget_s = 30.0 + 5.0 * options.get("time_limit_s", 0.0)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, budget_s)
    start = time.perf_counter()
    try:
        plan = plan_defrag(cluster, built)
    except CaseTimeout:
        result.update(kind="hang", failures=[f"no plan after {budget_s:g} s"])
        return result
    except Exception as err:  # noqa: BLE001 - every exception is a crash, PlanBug included
        frames = traceback.extract_tb(err.__traceback__)[-3:]
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
        result.update(kind="crash", failures=[f"{type(err).__name__}: {str(err)[:400]} (at {where})"])
        return result
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        result["wall_s"] = time.perf_counter() - start
    plans = [("exact", plan.exact), ("heuristic", plan.heuristic)] if options["method"] == "compare" else [("", plan)]
    result.update(moves=plans[0][1].report.moves, status=plans[0][1].report.status)
    failures: list[str] = []
    for label, one in plans:
        failures += [f"{label + ': ' if label else ''}{p}" for p in check_plan(cluster, one, options)]
    if options["method"] == "compare":
        gap = plan.gap
        if gap.get("gap_empty_nodes") != plan.exact.report.objective - plan.heuristic.report.objective:
            failures.append(f"compare: gap_empty_nodes {gap.get('gap_empty_nodes')} is not exact minus heuristic")
    movable = sum(1 for p in cluster.pods if p.node is not None and not p.locked)
    if not failures and len(cluster.nodes) <= ORACLE_MAX_NODES and movable <= ORACLE_MAX_MOVABLE:
        result["oracle"] = True
        failures += check_claims(cluster, plans, options)
    if failures:
        result.update(kind="invalid plan", failures=failures)
    return result


def switch_of(node: Node) -> str:
    """The access switch a node hangs under; a node without one is a switch of its own."""
    return f"asw:{node.asw}" if node.asw is not None else f"node:{node.name}"


def check_plan(cluster: Cluster, plan: Any, options: dict[str, Any]) -> list[str]:
    """Independent checks of one plan: replay, limits, vacated nodes and the report's numbers."""
    try:
        replayed = oracle.replay(cluster, plan)
    except AssertionError as err:
        return [f"replay: {err}"]
    problems = []
    moves = replayed.moves
    if options.get("max_moves") is not None and len(moves) > options["max_moves"]:
        problems.append(f"{len(moves)} moves, max_moves {options['max_moves']}")
    if options.get("max_moves_per_node") is not None:
        touched: Counter[str] = Counter()
        for _, source, destination in moves:
            touched[source] += 1
            touched[destination] += 1
        over = {n: c for n, c in touched.items() if c > options["max_moves_per_node"]}
        if over:
            problems.append(f"moves per node {over}, max_moves_per_node {options['max_moves_per_node']}")
    nodes = {n.name: n for n in cluster.nodes}
    if options.get("same_asw"):
        crossing = [m for m in moves if switch_of(nodes[m[1]]) != switch_of(nodes[m[2]])]
        if crossing:
            problems.append(f"same_asw: {len(crossing)} move(s) change switch, e.g. {crossing[0]}")
    busy_before = {p.node for p in cluster.pods if p.node is not None}
    busy_after = {at for at in replayed.end.values() if at is not None}
    vacated = sorted(n for n in busy_before if n not in busy_after)
    if sorted(plan.vacated_nodes) != vacated:
        problems.append(f"vacated_nodes {sorted(plan.vacated_nodes)}, the replay vacates {vacated}")
    empties = len(cluster.nodes) - len(busy_after)
    report = plan.report
    if report is None:
        return problems + ["the plan has no report"]
    if report.objective != empties:
        problems.append(f"report.objective {report.objective}, the replay ends with {empties} empty nodes")
    if report.moves != len(moves):
        problems.append(f"report.moves {report.moves}, the plan has {len(moves)}")
    moved = float(oracle.gpus_moved(cluster, moves))
    if not math.isclose(report.gpus_moved, moved, abs_tol=2e-6):
        problems.append(f"report.gpus_moved {report.gpus_moved}, the moves carry {moved}")
    if (report.model_extra or {}).get("waves", len(plan.waves)) != len(plan.waves):
        problems.append(f"report.waves {report.model_extra['waves']}, the plan has {len(plan.waves)}")
    if plan.metrics is not None and plan.metrics.after.get("empty_nodes", empties) != empties:
        problems.append(f"metrics.after.empty_nodes {plan.metrics.after['empty_nodes']}, the replay gives {empties}")
    if report.bound is not None and report.objective is not None and report.objective > report.bound + 1e-9:
        problems.append(f"report.objective {report.objective} above its proven bound {report.bound}")
    if report.status == "optimal" and report.bound != report.objective:
        problems.append(f"status optimal with objective {report.objective} and bound {report.bound}")
    return problems


def check_claims(cluster: Cluster, plans: list[tuple[str, Any]], options: dict[str, Any]) -> list[str]:
    """The report's claims against the oracle's exhaustive search (tiny snapshots only)."""
    try:
        reach = oracle.explore(cluster, options.get("max_moves"), options.get("max_moves_per_node"), bool(options.get("same_asw")))
    except AssertionError:  # the oracle's state cap: too large after all
        return []
    best = reach.best()
    problems = []
    for label, plan in plans:
        report, tag = plan.report, f"{label + ': ' if label else ''}claims: "
        if report.objective > best.empties:
            problems.append(f"{tag}objective {report.objective} above the oracle's best {best.empties}")
        if report.bound is not None and report.bound < best.empties:
            problems.append(f"{tag}bound {report.bound} below the oracle's best {best.empties} (an unsound bound)")
        if report.status == "optimal" and report.objective != best.empties:
            problems.append(f"{tag}status optimal with {report.objective} empty nodes; the oracle's best is {best.empties}")
        extra = report.model_extra or {}
        fewest = reach.fewest(int(report.objective))  # the cheapest plan emptying as many nodes
        if fewest is None:
            problems.append(f"{tag}no plan within the limits ends with {report.objective} empty nodes, yet this one does")
            continue
        if extra.get("lexicographic_optimal"):
            more_moves = report.moves > fewest.moves
            more_gpus = report.moves == fewest.moves and report.gpus_moved > float(fewest.gpus) + 2e-6
            if more_moves or more_gpus:
                problems.append(
                    f"{tag}lexicographic_optimal with {report.moves} moves / {report.gpus_moved:g} GPUs; "
                    f"the oracle empties as many nodes with {fewest.moves} / {float(fewest.gpus):g}"
                )
        if extra.get("moves_bound") is not None and extra["moves_bound"] > fewest.moves:
            problems.append(f"{tag}moves_bound {extra['moves_bound']} above the oracle's fewest moves {fewest.moves}")
    return problems


def run_fuzz(args: argparse.Namespace) -> Outcome:
    """Category 1: fuzzed snapshots through every method, in ``args.jobs`` spawned processes."""
    count = args.count if args.count is not None else FUZZ_QUICK if args.quick else FUZZ_COUNT
    out = Outcome(
        "fuzz",
        "Fuzzed snapshots through every method",
        "snapshots",
        f">= {FUZZ_TARGET:,} snapshots, 0 crashes, 0 invalid plans",
    )
    start = time.perf_counter()
    kinds: Counter[str] = Counter()
    walls: dict[str, list[float]] = defaultdict(list)
    sizes: list[tuple[int, int]] = []
    oracle_checked = 0
    with_moves = 0
    statuses: Counter[str] = Counter()
    failed_by_method: Counter[str] = Counter()
    tasks = [(args.seed, i) for i in range(count)]
    context = multiprocessing.get_context("spawn")
    done = 0
    with context.Pool(args.jobs) as pool:
        results = pool.imap_unordered(fuzz_case, tasks)
        while True:
            try:
                result = results.next(timeout=900)
            except StopIteration:
                break
            except multiprocessing.TimeoutError:
                out.fail(f"the fuzz pool made no progress for 900 s after {done} cases; stopped")
                pool.terminate()
                break
            done += 1
            out.tried += 1
            kinds[result["kind"]] += 1
            walls[result["method"]].append(result["wall_s"])
            sizes.append((result["nodes"], result["pods"]))
            oracle_checked += result["oracle"]
            with_moves += result["moves"] > 0
            if result["status"]:
                statuses[result["status"]] += 1
            if result["failures"]:
                failed_by_method[result["method"]] += 1
                out.fail(
                    f"case {result['index']} ({result['method']}, {result['nodes']} nodes, {result['pods']} pods): "
                    f"{result['kind']}: {'; '.join(result['failures'])[:900]} "
                    f"(reproduce: `.venv/bin/python benchmarks/robustness.py --case {result['index']} --seed {args.seed}`)"
                )
            if done % 1000 == 0:
                print(f"  fuzz: {done:,}/{count:,} cases, {out.failed} failed, {time.perf_counter() - start:.0f} s", flush=True)
    out.wall_s = time.perf_counter() - start
    out.failures.sort(key=lambda f: int(f.split()[1]) if f.startswith("case ") else -1)
    out.met = (out.failed == 0) if count >= FUZZ_TARGET else None
    nodes = [n for n, _ in sizes]
    pods = [p for _, p in sizes]
    summary = (
        f"{count:,} snapshots (seed {args.seed}, {args.jobs} processes, {out.wall_s:.0f} s): "
        f"{', '.join(f'{k}: {v:,}' for k, v in sorted(kinds.items()))}. "
        f"Nodes per snapshot: median {statistics.median(nodes) if nodes else 0:g}, max {max(nodes, default=0)}; "
        f"pods: median {statistics.median(pods) if pods else 0:g}, max {max(pods, default=0)}. "
        f"Plans with at least one move: {with_moves:,}; plan statuses (compare: the exact plan's): "
        f"{', '.join(f'{k}: {v:,}' for k, v in sorted(statuses.items()))}. "
        f"{oracle_checked:,} tiny snapshots (at most {ORACLE_MAX_NODES} nodes and {ORACLE_MAX_MOVABLE} movable pods) "
        "also had the report's claims checked against the oracle's exhaustive search."
    )
    out.lines += [
        summary,
        "",
        "| method | snapshots | failed | mean s | p50 s | p99 s | max s | total s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method in METHOD_WEIGHTS:
        w = walls.get(method, [])
        if not w:
            continue
        out.lines.append(
            f"| {method} | {len(w):,} | {failed_by_method.get(method, 0)} | {statistics.mean(w):.3f} | {percentile(w, 0.5):.3f} | "
            f"{percentile(w, 0.99):.3f} | {max(w):.3f} | {sum(w):.0f} |"
        )
    return out


def show_case(seed: int, index: int) -> None:
    """Print fuzz case ``index``'s snapshot, options and outcome (for reproducing a failure)."""
    snapshot, options = fuzz_case_input(seed, index)
    print(json.dumps({"options": options, "snapshot": snapshot}))
    result = fuzz_case((seed, index))
    print(json.dumps({k: result[k] for k in ("kind", "wall_s", "failures", "oracle")}, indent=1), file=sys.stderr)


# ================================================================================================
# 2. Malformed command lines
# ================================================================================================


@dataclass
class CliCase:
    name: str
    argv: list[str]
    expect: tuple[int, ...] = (2,)
    stdin: bytes | None = None
    stdout_full: bool = False
    must_contain: str = ""
    """Text the output (stdout or stderr) must contain, e.g. a name given as rich markup."""
    timeout_s: float = 180.0


BASE_SNAPSHOT: dict[str, Any] = {
    "version": 1,
    "time_s": 100,
    "nodes": [
        {"name": "n0", "gpu_model": "A100", "gpus": 8, "cpus": 64, "memory_gib": 256, "asw": "a", "spine": "s", "labels": {"pool": "train"}},
        {"name": "n1", "gpu_model": "A100", "gpus": 8, "cpus": 64, "memory_gib": 256, "asw": "b", "spine": "s"},
        {"name": "n2", "gpus": 4, "cpus": 32, "memory_gib": 128, "asw": "a"},
    ],
    "pods": [
        {"name": "x", "job": "j", "node": "n0", "gpus": 1, "cpus": 1, "memory_gib": 4},
        {"name": "y", "node": "n1", "gpus": 2, "cpus": 1, "anti_affinity": ["g"]},
        {"name": "z", "node": "n1", "gpus": 0.5, "cpus": 1},
        {"name": "w", "node": None, "gpus": 1, "cpus": 1},
    ],
    "jobs": [{"name": "j", "topology": {"level": "asw", "mode": "required"}}],
}


def _edit(path: str, value: Any = None, delete: bool = False) -> dict[str, Any]:
    """BASE_SNAPSHOT with the field at ``path`` (``nodes.0.gpus``) set to ``value`` or deleted."""
    data = copy.deepcopy(BASE_SNAPSHOT)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    target: Any = data
    for part in parents:
        target = target[part]
    if delete:
        del target[last]
    else:
        target[last] = value
    return data


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def cli_corpus(tmp: Path) -> list[CliCase]:
    """At least ~150 malformed (or valid-but-odd) invocations, each with its expected exit codes."""
    base_text = json.dumps(BASE_SNAPSHOT)
    good = tmp / "good.json"
    good.write_text(base_text)
    plan = tmp / "plan.json"
    subprocess.run([PLANNER, "defrag", str(good), "--out", str(plan)], check=True, capture_output=True, env=_env(), cwd=tmp)
    plan_data = json.loads(plan.read_text())
    files: list[tuple[str, str | bytes, tuple[int, ...], str, list[str] | None]] = []
    """(name, content, expected exit codes, text the output must contain, command or None: rotate)"""

    def text(name: str, content: str | bytes, expect: tuple[int, ...] = (2,), must: str = "", command: list[str] | None = None) -> None:
        files.append((name, content, expect, must, command))

    def data(name: str, value: dict[str, Any], expect: tuple[int, ...] = (2,), must: str = "", command: list[str] | None = None) -> None:
        files.append((name, json.dumps(value), expect, must, command))

    # syntax
    for share in (0.1, 0.5, 0.9):
        text(f"truncated at {share:.0%}", base_text[: int(len(base_text) * share)])
    text("truncated by one byte", base_text[:-1])
    text("empty file", "")
    text("whitespace only", " \n\t ")
    text("JSON null", "null")
    text("JSON array", "[]")
    text("JSON number", "42")
    text("JSON string", '"snapshot"')
    text("trailing garbage", base_text + " }")
    text("two documents", base_text + base_text)
    text("trailing comma", base_text[:-2] + ", ]}")
    text("single quotes", base_text.replace('"', "'"))
    text("comment", "// nightly\n" + base_text)
    text("byte-order mark", "\ufeff" + base_text, (0, 2))
    text("UTF-16", base_text.encode("utf-16"))
    text("invalid UTF-8 in a name", base_text.encode().replace(b'"n2"', b'"n\xff\xfe2"'))
    text("random binary", bytes(random.Random(1).randrange(256) for _ in range(4096)))
    text("NUL bytes", b"\x00" * 1024)
    text("gzip-compressed JSON", gzip.compress(base_text.encode()))
    text("NaN literal", _replace(base_text, '"cpus": 64', '"cpus": NaN'))
    text("Infinity literal", _replace(base_text, '"memory_gib": 256', '"memory_gib": Infinity'))
    text("-Infinity literal", _replace(base_text, '"gpus": 4', '"gpus": -Infinity'))
    text("NaN time_s", _replace(base_text, '"time_s": 100', '"time_s": NaN'))
    text("1e400 (overflows to infinity)", _replace(base_text, '"cpus": 32', '"cpus": 1e400'))
    text("-1e400", _replace(base_text, '"memory_gib": 128', '"memory_gib": -1e400'))
    text("huge integer GPUs", _replace(base_text, '"gpus": 4', '"gpus": ' + "9" * 400))
    text("huge integer eviction_count", _replace(base_text, '"asw": "b"', '"asw": "b", "eviction_count": ' + "9" * 5000))
    text("2**64 GPUs", _replace(base_text, '"gpus": 4', f'"gpus": {2**64}'))
    text("1e300 time_s", _replace(base_text, '"time_s": 100', '"time_s": 1e300'))
    text("deeply nested arrays", "[" * 100_000 + "]" * 100_000)
    text("deeply nested objects in labels", _replace(base_text, '{"pool": "train"}', '{"a": ' * 50_000 + "1" + "}" * 50_000))
    text("nested 1,000 deep", _replace(base_text, '{"pool": "train"}', '{"a": ' * 1000 + '"x"' + "}" * 1000))
    text("duplicate top-level key", _replace(base_text, '"time_s": 100', '"time_s": 100, "time_s": 5'))
    text("duplicate node key", _replace(base_text, '"gpus": 4', '"gpus": 4, "gpus": 8'))
    text("duplicate pod key", _replace(base_text, '"name": "x"', '"name": "x", "name": "x2"'))
    text("duplicate label key", _replace(base_text, '{"pool": "train"}', '{"pool": "train", "pool": "infer"}'))
    text("duplicate topology key", _replace(base_text, '"mode": "required"', '"mode": "required", "mode": "preferred"'))
    # types
    data("nodes is an object", _edit("nodes", {"n0": {}}))
    data("a node is a list", _edit("nodes.0", [1, 2]))
    data("gpus as a string", _edit("nodes.0.gpus", "8"))
    data("gpus 8.5", _edit("nodes.0.gpus", 8.5))
    data("gpus true", _edit("nodes.0.gpus", True))
    data("cpus null", _edit("nodes.0.cpus", None))
    data("name as a number", _edit("nodes.0.name", 7))
    data("labels a list", _edit("nodes.0.labels", ["pool"]))
    data("label value a number", _edit("nodes.0.labels", {"pool": 1}))
    data("schedulable as a string", _edit("nodes.0.schedulable", "yes"))
    data("pods an object", _edit("pods", {"x": {}}))
    data("pod gpus 1.5", _edit("pods.0.gpus", 1.5))
    data("pod gpus as a string", _edit("pods.0.gpus", "1"))
    data("pod node a number", _edit("pods.0.node", 0))
    data("priority MP", _edit("pods.0.priority", "MP"))
    data("locked as 1", _edit("pods.0.locked", 1))
    data("gpu_models a string", _edit("pods.0.gpu_models", "A100"))
    data("anti_affinity a string", _edit("pods.1.anti_affinity", "g"))
    data("anti_affinity group listed twice", _edit("pods.1.anti_affinity", ["g", "g"]))
    data("node_selector a list", _edit("pods.0.node_selector", ["pool"]))
    data("topology level rack", _edit("jobs.0.topology.level", "rack"))
    data("topology mode maybe", _edit("jobs.0.topology.mode", "maybe"))
    data("topology a string", _edit("jobs.0.topology", "asw"))
    data("version 2", _edit("version", 2))
    data("version as a string", _edit("version", "1"))
    data("eviction_count 1.5", _edit("nodes.0.eviction_count", 1.5))
    data("numa index out of range", _edit("nodes.0.numa", [{"name": "d0", "gpu_indexes": [0, 9], "cpus": 8}]))
    data("power missing fields", _edit("nodes.0.power", {"cpu_idle_w": 1}))
    # missing and unknown fields
    data("nodes missing", _edit("nodes", delete=True))
    data("node name missing", _edit("nodes.0.name", delete=True))
    data("node gpus missing", _edit("nodes.0.gpus", delete=True))
    data("node cpus missing", _edit("nodes.0.cpus", delete=True))
    data("pod name missing", _edit("pods.0.name", delete=True))
    data("pod gpus missing", _edit("pods.0.gpus", delete=True))
    data("pod cpus missing", _edit("pods.0.cpus", delete=True))
    data("job name missing", _edit("jobs.0.name", delete=True))
    data("unknown top-level field", {**BASE_SNAPSHOT, "clusters": []})
    data("typo memory_gb", _edit("nodes.0.memory_gb", 256), must="did you mean 'memory_gib'")
    data("unknown pod field", _edit("pods.0.replicas", 3))
    data("unknown job field", _edit("jobs.0.size", 3))
    data("unknown topology field", _edit("jobs.0.topology.strict", True))
    # references, names and values
    data("unknown node reference", _edit("pods.0.node", "n-9"), must="unknown node 'n-9'")
    data("unknown job reference", _edit("pods.1.job", "nope"))
    data("duplicate node names", _edit("nodes.1.name", "n0"))
    data("duplicate pod names", _edit("pods.1.name", "x"))
    data("duplicate job names", _edit("jobs", [{"name": "j"}, {"name": "j"}]))
    data("empty node name", _edit("nodes.2.name", ""))
    data("negative node GPUs", _edit("nodes.0.gpus", -8))
    data("negative CPUs", _edit("nodes.0.cpus", -1))
    data("zero node CPUs", _edit("nodes.0.cpus", 0))
    data("negative memory", _edit("nodes.0.memory_gib", -1))
    data("negative pod GPUs", _edit("pods.0.gpus", -0.5))
    data("negative pod CPUs", _edit("pods.0.cpus", -1))
    data("negative eviction_count", _edit("nodes.0.eviction_count", -1))
    data("negative time_s", _edit("time_s", -5))
    data("1,025 GPUs on a node", _edit("nodes.0.gpus", 1025))
    data("started after the snapshot time", _edit("pods.0.started_s", 101))
    data("over capacity: GPUs", _edit("pods.1.gpus", 8), must="over capacity")
    data("over capacity: CPUs", _edit("pods.0.cpus", 65))
    data("over capacity: memory", _edit("pods.0.memory_gib", 300))
    data(
        "over capacity: three halves on one GPU",
        {
            **BASE_SNAPSHOT,
            "nodes": [{"name": "n0", "gpus": 1, "cpus": 8, "memory_gib": 8}],
            "pods": [{"name": f"h{i}", "node": "n0", "gpus": 0.5, "cpus": 1} for i in range(3)],
            "jobs": [],
        },
    )
    data("GPU model mismatch in place", _edit("pods.1.gpu_models", ["H800"]))
    data("selector mismatch in place", _edit("pods.1.node_selector", {"pool": "train"}))
    data("anti-affinity conflict in place", _edit("pods.2.anti_affinity", ["g"]))
    data("required topology broken in place", _edit("pods.1.job", "j"))
    # valid but odd: expected to work
    data("markup names", _edit("nodes.0.asw", "[/]"), (0,), must="[/]", command=["report"])
    renamed = _edit("nodes.0.name", "[bold]n0")
    renamed["pods"][0]["node"] = "[bold]n0"
    data("markup names in a plan table", renamed, (0,), command=["defrag", "--format", "table"])
    data("empty node list", {"nodes": []}, (0,))
    data("no pods", {"nodes": BASE_SNAPSHOT["nodes"]}, (0,))
    data("all pods pending", _edit("pods", [{"name": "p", "gpus": 1, "cpus": 1}]), (0,))
    data("minus zero memory", _edit("pods.0.memory_gib", -0.0), (0,))
    data("NUL and control characters in a name", _edit("nodes.2.name", "n\u0000\u001b[31m2"), (0,))
    data("a 1 MB name", _edit("nodes.2.name", "n" * 1_000_000), (0,))
    data("unicode names", _edit("nodes.2.asw", "交换机-α"), (0,))
    cases: list[CliCase] = []
    commands = (["defrag"], ["report"], ["defrag", "--format", "table"], ["report", "--json"])
    for i, (name, content, expect, must, fixed) in enumerate(files):
        path = tmp / f"snapshot-{i}.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        command = fixed or commands[i % len(commands)]
        cases.append(CliCase(f"{' '.join(command)}: {name}", [command[0], str(path), *command[1:]], expect, must_contain=must))
    markup_error = tmp / "markup-error.json"
    markup_error.write_text(json.dumps(_edit("pods.0.node", "[bold]x")))
    cases.append(CliCase("defrag: unknown node named [bold]x", ["defrag", str(markup_error)], must_contain="'[bold]x'"))

    # plans given to validate
    def plan_file(name: str, content: str | bytes, expect: tuple[int, ...] = (2,), extra: list[str] | None = None) -> None:
        path = tmp / f"plan-{len(cases)}.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        cases.append(CliCase(f"validate: {name}", ["validate", str(good), str(path), *(extra or [])], expect))

    plan_text = json.dumps(plan_data)
    plan_file("the plan itself", plan_text, (0,))
    plan_file("truncated plan", plan_text[: len(plan_text) // 2])
    plan_file("empty plan file", "")
    plan_file("plan version 2", json.dumps({**plan_data, "version": 2}))
    plan_file("plan without waves", json.dumps({k: v for k, v in plan_data.items() if k != "waves"}))
    plan_file("waves not a list", json.dumps({**plan_data, "waves": {"0": []}}))
    plan_file("move without 'to'", json.dumps({**plan_data, "waves": [[{"pod": "x", "from": "n0"}]]}))
    plan_file(
        "duplicate key in a move", '{"version": 1, "kind": "defrag", "waves": [[{"pod": "x", "from": "n0", "to": "n2", "to": "n1"}]], "vacated_nodes": []}'
    )
    plan_file("NaN in the report", _replace(plan_text, '"wall_s": ', '"wall_s": NaN, "x": '))
    plan_file("unknown pod", json.dumps({**plan_data, "waves": [[{"pod": "ghost", "from": "n0", "to": "n1"}]], "vacated_nodes": []}), (1,))
    plan_file(
        "locked-pod free but over capacity",
        json.dumps(
            {
                "version": 1,
                "kind": "defrag",
                "waves": [[{"pod": "y", "from": "n1", "to": "n2"}, {"pod": "z", "from": "n1", "to": "n2"}, {"pod": "x", "from": "n0", "to": "n2"}]],
                "vacated_nodes": [],
            }
        ),
        (1,),
    )
    plan_file("a compare plan given as a plan", json.dumps({"version": 1, "kind": "defrag-compare", "heuristic": plan_data, "exact": plan_data, "gap": {}}))
    plan_file("over --max-moves 0", plan_text, (0, 1), ["--max-moves", "0"])
    cases.append(CliCase("validate: both from stdin", ["validate", "-", "-"], stdin=base_text.encode()))
    cases.append(CliCase("validate: plan is a directory", ["validate", str(good), str(tmp)]))
    cases.append(CliCase("validate: plan missing", ["validate", str(good), str(tmp / "missing.json")]))
    cases.append(CliCase("validate: --max-moves -1", ["validate", str(good), str(plan), "--max-moves", "-1"]))

    # files, stdin and outputs
    g = str(good)
    cases += [
        CliCase("defrag: missing file", ["defrag", str(tmp / "missing.json")]),
        CliCase("defrag: a directory as input", ["defrag", str(tmp)]),
        CliCase("report: /dev/null as input", ["report", "/dev/null"]),
        CliCase("report: a binary executable as input", ["report", "/bin/true"]),
        CliCase("report: /proc/self/status as input", ["report", "/proc/self/status"]),
        CliCase("defrag: stdin garbage", ["defrag", "-"], stdin=b"\x00garbage{"),
        CliCase("defrag: stdin empty", ["defrag", "-"], stdin=b""),
        CliCase("defrag: stdin valid", ["defrag", "-"], (0,), stdin=base_text.encode()),
        CliCase("defrag: --out a directory", ["defrag", g, "--out", str(tmp)]),
        CliCase("defrag: --out in a missing directory", ["defrag", g, "--out", str(tmp / "missing" / "plan.json")]),
        CliCase("defrag: --out /dev/full", ["defrag", g, "--out", "/dev/full"]),
        CliCase("defrag: --out /proc/version", ["defrag", g, "--out", "/proc/version"]),
        CliCase("defrag: --out empty string", ["defrag", g, "--out", ""]),
        CliCase("generate asi: --out a directory", ["generate", "asi", "--nodes", "3", "--seed", "1", "--out", str(tmp)]),
        CliCase("generate asi: --out /dev/full", ["generate", "asi", "--nodes", "3", "--seed", "1", "--out", "/dev/full"]),
        CliCase("defrag: stdout is /dev/full", ["defrag", g], stdout_full=True),
        CliCase("defrag --format table: stdout is /dev/full", ["defrag", g, "--format", "table"], stdout_full=True),
        CliCase("report: stdout is /dev/full", ["report", g], stdout_full=True),
        CliCase("report --json: stdout is /dev/full", ["report", g, "--json"], stdout_full=True),
        CliCase("generate asi: stdout is /dev/full", ["generate", "asi", "--nodes", "3", "--seed", "1"], stdout_full=True),
        CliCase("validate (valid plan): stdout is /dev/full", ["validate", g, str(plan)], stdout_full=True),
        CliCase("validate (violations): stdout is /dev/full", ["validate", g, str(plan), "--max-moves", "0"], (1, 2), stdout_full=True),
        CliCase("defrag --help: stdout is /dev/full", ["defrag", "--help"], (0, 2), stdout_full=True),
    ]
    # options
    huge = str(2**70)
    option_cases: list[tuple[str, list[str], tuple[int, ...]]] = [
        ("--seed -1", ["--seed", "-1"], (2,)),
        ("--seed 2**70", ["--seed", huge], (2,)),
        ("--seed 1.5", ["--seed", "1.5"], (2,)),
        ("--seed abc", ["--seed", "abc"], (2,)),
        ("--max-moves 2**70", ["--max-moves", huge], (2,)),
        ("--max-moves -1", ["--max-moves", "-1"], (2,)),
        ("--max-moves-per-node 2**70", ["--max-moves-per-node", huge], (2,)),
        ("--partition-size 1", ["--partition-size", "1"], (2,)),
        ("--partition-size 2**70", ["--partition-size", huge], (2,)),
        ("--depth 0", ["--depth", "0"], (2,)),
        ("--depth 10**9", ["--depth", "1000000000"], (2,)),
        ("--rounds 0", ["--rounds", "0"], (2,)),
        ("--rounds 2**70", ["--rounds", huge], (2,)),
        ("--workers 0", ["--workers", "0"], (2,)),
        ("--workers 10**6", ["--workers", "1000000"], (2,)),
        ("--method bogus", ["--method", "bogus"], (2,)),
        ("--format xml", ["--format", "xml"], (2,)),
        ("--threshold with heuristic", ["--threshold", "0.3"], (2,)),
        ("--solver cpsat with heuristic", ["--solver", "cpsat"], (2,)),
        ("--time-limit with heuristic", ["--time-limit", "5"], (2,)),
        ("--force with heuristic", ["--force"], (2,)),
        ("--max-moves with repack", ["--method", "repack", "--max-moves", "3"], (2,)),
        ("--max-moves-per-node with repack", ["--method", "repack", "--max-moves-per-node", "3"], (2,)),
        ("--same-asw with repack (valid)", ["--method", "repack", "--same-asw"], (0,)),
        ("--depth with random", ["--method", "random", "--depth", "2"], (2,)),
        ("--threshold 0 with random", ["--method", "random", "--threshold", "0"], (2,)),
        ("--threshold 1.5 with random", ["--method", "random", "--threshold", "1.5"], (2,)),
        ("--threshold nan with random", ["--method", "random", "--threshold", "nan"], (2,)),
        ("--threshold -inf with descheduler", ["--method", "descheduler", "--threshold", "-inf"], (2,)),
        ("--time-limit inf", ["--method", "exact", "--time-limit", "inf"], (2,)),
        ("--time-limit nan", ["--method", "exact", "--time-limit", "nan"], (2,)),
        ("--time-limit 0", ["--method", "exact", "--time-limit", "0"], (2,)),
        ("--time-limit -1", ["--method", "hybrid", "--time-limit", "-1"], (2,)),
        ("--time-limit 1e300", ["--method", "exact", "--time-limit", "1e300"], (2,)),
        ("--time-limit abc", ["--method", "exact", "--time-limit", "abc"], (2,)),
        ("--solver-workers 0", ["--method", "exact", "--solver-workers", "0"], (2,)),
        ("--solver-workers 10**6", ["--method", "exact", "--solver-workers", "1000000"], (2,)),
        ("--formulation bogus", ["--method", "exact", "--formulation", "bogus"], (2,)),
        ("--lexicographic bogus", ["--method", "exact", "--lexicographic", "bogus"], (2,)),
        ("--solver gurobi", ["--method", "exact", "--solver", "gurobi"], (2,)),
        ("--deterministic with hybrid/highs (valid)", ["--method", "hybrid", "--time-limit", "1", "--deterministic"], (0, 2)),
        ("--force with hybrid", ["--method", "hybrid", "--force"], (2,)),
        ("--method compare --format table (valid)", ["--method", "compare", "--time-limit", "2", "--format", "table"], (0,)),
        ("unknown option --fast", ["--fast"], (2,)),
    ]

    def names_flag(name: str, expect: tuple[int, ...]) -> str:
        """A refused option must be named in the message (the case's name starts with it)."""
        first = name.split()[0]
        return first if expect == (2,) and first.startswith("--") else ""

    for name, extra, expect in option_cases:
        cases.append(CliCase(f"defrag {name}", ["defrag", g, *extra], expect, must_contain=names_flag(name, expect)))
    generate_cases: list[tuple[str, list[str], tuple[int, ...]]] = [
        ("--nodes 0", ["--nodes", "0", "--seed", "1"], (2,)),
        ("--nodes -1", ["--nodes", "-1", "--seed", "1"], (2,)),
        ("--nodes 10**9", ["--nodes", "1000000000", "--seed", "1"], (2,)),
        ("--nodes 2**70", ["--nodes", huge, "--seed", "1"], (2,)),
        ("--nodes missing", ["--seed", "1"], (2,)),
        ("--seed -5", ["--nodes", "3", "--seed", "-5"], (2,)),
        ("--seed 2**70", ["--nodes", "3", "--seed", huge], (2,)),
        ("--allocation 2", ["--nodes", "3", "--allocation", "2"], (2,)),
        ("--allocation nan", ["--nodes", "3", "--allocation", "nan"], (2,)),
        ("--locked -1", ["--nodes", "3", "--locked", "-1"], (2,)),
        ("--mix bogus", ["--nodes", "3", "--mix", "bogus"], (2,)),
        ("--scheduler bogus", ["--nodes", "3", "--scheduler", "bogus"], (2,)),
        ("--churn-rounds -1", ["--nodes", "3", "--churn-rounds", "-1"], (2,)),
        ("--churn-rounds 10**9", ["--nodes", "3", "--churn-rounds", "1000000000"], (2,)),
        ("--pending-jobs 10**9", ["--nodes", "3", "--pending-jobs", "1000000000"], (0, 2)),
        ("--nodes 3 (valid)", ["--nodes", "3", "--seed", "1"], (0,)),
    ]
    for name, extra, expect in generate_cases:
        cases.append(CliCase(f"generate asi {name}", ["generate", "asi", *extra], expect, must_contain=names_flag(name, expect)))
    from planner.instances.openb import default_data_dir

    missing_data = str(tmp / "no-such-dir")
    trace = default_data_dir().is_dir()  # without the trace every openb case stops at --data-dir (still exit 2)
    cases += [
        CliCase("generate openb --pods bogus", ["generate", "openb", "--pods", "bogus"], must_contain="--pods" if trace else ""),
        CliCase("generate openb --at nan", ["generate", "openb", "--at", "nan"], must_contain="--at" if trace else ""),
        CliCase("generate openb --at -1", ["generate", "openb", "--at", "-1"], must_contain="--at" if trace else ""),
        CliCase("generate openb --at inf", ["generate", "openb", "--at", "inf"], must_contain="--at" if trace else ""),
        CliCase("generate openb --nodes bogus", ["generate", "openb", "--at", "100", "--nodes", "bogus"], must_contain="--nodes"),
        CliCase("generate openb --data-dir missing", ["generate", "openb", "--at", "100", "--data-dir", missing_data], must_contain="--data-dir"),
        CliCase("generate openb --data-dir a file", ["generate", "openb", "--at", "100", "--data-dir", g], must_contain="--data-dir"),
        CliCase("generate bogus", ["generate", "bogus"]),
    ]
    shapes: list[tuple[str, tuple[int, ...]]] = [
        ("garbage", (2,)),
        ("8x", (2,)),
        ("", (2,)),
        ("0g0c", (2,)),
        ("-1g1c", (2,)),
        ("1.5g1c", (2,)),
        ("nang1c", (2,)),
        ("infg1c", (2,)),
        ("4611686018427387904g1c", (2,)),
        ("1g1e400c", (2,)),
        ("99999999g1c", (2,)),
        ("8g64c512m", (0,)),
        ("128g1536c", (0,)),
        ("8g" + "9" * 5000 + "c", (2,)),
        ("[bold]8g64c", (2,)),
    ]
    for shape, expect in shapes:
        cases.append(CliCase(f"report --shape {shape[:30]!r}", ["report", g, "--shape", shape], expect, must_contain="--shape" if expect == (2,) else ""))
    db = str(tmp / "serve.db")
    port = str(_free_port())
    serve_cases: list[tuple[str, list[str], tuple[int, ...]]] = [
        ("--port 0", ["--port", "0"], (2,)),
        ("--port 70000", ["--port", "70000"], (2,)),
        ("--workers 0", ["--workers", "0", "--port", port], (2,)),
        ("--max-queue 0", ["--max-queue", "0", "--port", port], (2,)),
        ("--max-body-mib 0", ["--max-body-mib", "0", "--port", port], (2,)),
        ("--max-body-mib 2**70", ["--max-body-mib", huge, "--port", port], (2,)),
        ("--max-job-s 0", ["--max-job-s", "0", "--port", port], (2,)),
        ("--max-job-s nan", ["--max-job-s", "nan", "--port", port], (2,)),
        ("--max-job-memory-gib 0", ["--max-job-memory-gib", "0", "--port", port], (2,)),
        ("--max-job-memory-gib nan", ["--max-job-memory-gib", "nan", "--port", port], (2,)),
        ("--max-job-memory-gib -inf", ["--max-job-memory-gib", "-inf", "--port", port], (2,)),
        ("--host 0.0.0.0 without a token", ["--host", "0.0.0.0", "--port", port], (2,)),
        ("--db in a missing directory", ["--db", str(tmp / "missing" / "x.db"), "--port", port], (2,)),
        ("--db a directory", ["--db", str(tmp), "--port", port], (2,)),
        ("--db /proc/version", ["--db", "/proc/version", "--port", port], (2,)),
    ]
    for name, extra, expect in serve_cases:
        argv = ["serve", *extra] if "--db" in extra else ["serve", "--db", db, *extra]
        cases.append(CliCase(f"serve {name}", argv, expect, must_contain=names_flag(name, expect), timeout_s=25.0))
    unreachable = "http://127.0.0.1:1"
    cases += [
        CliCase("submit --server not-a-url", ["submit", g, "--server", "not a url"]),
        CliCase("submit --server empty", ["submit", g, "--server", ""]),
        CliCase("submit --server ftp://", ["submit", g, "--server", "ftp://127.0.0.1/"]),
        CliCase("submit --wait -1", ["submit", g, "--server", unreachable, "--wait", "-1"]),
        CliCase("submit --time-limit nan", ["submit", g, "--server", unreachable, "--time-limit", "nan"]),
        CliCase("submit a missing snapshot", ["submit", str(tmp / "missing.json"), "--server", unreachable]),
        CliCase("submit a malformed snapshot", ["submit", str(tmp / "snapshot-0.json"), "--server", unreachable]),
        CliCase("jobs --limit 0", ["jobs", "--server", unreachable, "--limit", "0"]),
        CliCase("plans --limit 10**6", ["plans", "--server", unreachable, "--limit", "1000000"]),
        CliCase("no command", [], (0, 2)),
        CliCase("unknown command", ["frobnicate"]),
    ]
    return cases


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_cli_case(case: CliCase, cwd: Path) -> tuple[int | None, str, str]:
    """(exit code or None on timeout, stdout, stderr) of one invocation of the real console script."""
    with open("/dev/full", "w") if case.stdout_full else contextlib.nullcontext(subprocess.PIPE) as stdout:
        process = subprocess.Popen(
            [PLANNER, *case.argv],
            stdin=subprocess.PIPE if case.stdin is not None else subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=_env(),
            start_new_session=True,
        )
        code: int | None
        try:
            out, err = process.communicate(case.stdin, timeout=case.timeout_s)
            code = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            code = None
    return code, (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace")


def judge_cli(case: CliCase, code: int | None, out: str, err: str) -> str | None:
    """Why the result is not the expected behaviour, or None."""
    if code is None:
        return f"still running after {case.timeout_s:g} s (killed); expected exit {case.expect}"
    if "Traceback" in out or "Traceback" in err:
        return f"exit {code} with a traceback: {err.strip().splitlines()[-1][:200] if err.strip() else ''}"
    if code not in case.expect:
        return f"exit {code}, expected {'/'.join(map(str, case.expect))}: {err.strip()[:300]!r}"
    if code == 2 and not _has_error_message(err):
        return f"exit 2 without an `error:` line or usage error on stderr: {err.strip()[:200]!r}"
    if case.must_contain and case.must_contain not in out + err:
        return f"exit {code}, but the output lacks {case.must_contain!r}: {(out + err).strip()[:200]!r}"
    return None


def _has_error_message(err: str) -> bool:
    return any(line.startswith("error: ") for line in err.splitlines()) or ("Usage:" in err and "Error" in err)


def run_cli(args: argparse.Namespace) -> Outcome:
    """Category 2: the malformed-invocation corpus on the installed console script (``--quick``: every 4th case)."""
    out = Outcome("cli", "Malformed CLI inputs", "invocations", "0 exit-3 results, 0 tracebacks, expected code every time")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="robustness-cli-") as tmp_name:
        tmp = Path(tmp_name)
        cases = cli_corpus(tmp)
        if args.quick:
            cases = cases[::4]
        codes: Counter[str] = Counter()
        forms: Counter[str] = Counter()
        expected_counts: Counter[str] = Counter()
        lock = threading.Lock()
        todo = iter(cases)

        def worker() -> None:
            for case in todo:
                code, stdout, stderr = run_cli_case(case, tmp)
                why = judge_cli(case, code, stdout, stderr)
                with lock:
                    out.tried += 1
                    codes["timeout" if code is None else str(code)] += 1
                    expected_counts["/".join(map(str, case.expect))] += 1
                    if code == 2:
                        forms["`error:` line" if any(line.startswith("error: ") for line in stderr.splitlines()) else "usage error panel"] += 1
                    if why:
                        out.fail(f"`planner {_shell(case)}`: {why}")

        threads = [threading.Thread(target=worker) for _ in range(max(1, args.jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    out.wall_s = time.perf_counter() - start
    out.met = out.failed == 0 and codes.get("3", 0) == 0 if not args.quick else None
    out.lines.append(
        f"{out.tried} invocations of `{Path(PLANNER).name}` (the installed console script) in {out.wall_s:.0f} s. "
        f"Exit codes: {', '.join(f'{k}: {v}' for k, v in sorted(codes.items()))}. "
        f"Expected per case: {', '.join(f'{k}: {v}' for k, v in sorted(expected_counts.items()))} "
        "(0 or 1 where the input is valid; 0/2 where either is defensible, e.g. a byte-order mark). "
        f"Exit-2 messages: {', '.join(f'{k}: {v}' for k, v in sorted(forms.items()))} "
        "(the usage panel is click's own message for an option it rejects while parsing, naming the option)."
    )
    return out


def _shell(case: CliCase) -> str:
    parts = []
    for a in case.argv:
        shown = a if len(a) <= 60 else a[:40] + "..."
        shown = shown.split("robustness-cli-")[-1].split("/", 1)[-1] if "robustness-cli-" in shown else shown
        parts.append(shown if shown and " " not in shown else repr(shown))
    text = " ".join(parts)
    if case.stdin is not None:
        text = f"{text} < stdin ({len(case.stdin)} bytes)"
    if case.stdout_full:
        text += " > /dev/full"
    return text


# ================================================================================================
# 3. Hostile HTTP requests
# ================================================================================================


@dataclass
class HttpCase:
    name: str
    method: str
    path: str
    expect: tuple[int, ...]
    content: bytes | None = None
    headers: list[tuple[str, str | bytes]] = field(default_factory=lambda: [("content-type", "application/json")])
    params: dict[str, str] | None = None
    token: str | None = TOKEN
    must_contain: str = ""
    problem_format: bool = True
    raw: bytes | None = None
    """Sent as written on a plain socket (headers httpx refuses to send), instead of the fields above."""


def raw_request(port: int, request: bytes, timeout_s: float = 30.0) -> httpx.Response:
    """Send ``request`` bytes as they are and read the response until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines[1:] if ":" in line]
    if any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers):
        decoded, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            decoded, rest = decoded + rest[:size], rest[size + 2 :]
        body = decoded
    headers = [(k, v) for k, v in headers if k.lower() not in ("transfer-encoding", "content-length", "content-encoding")]
    return httpx.Response(status, headers=headers, content=body)


def _raw(method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", *(f"{k}: {v}" for k, v in headers)]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def http_corpus(snapshot: dict[str, Any], max_body: int) -> list[HttpCase]:
    """About 80 hostile requests with the status each must get."""
    body = json.dumps({"snapshot": snapshot}).encode()

    def defrag(name: str, payload: Any, expect: tuple[int, ...] = (422,), must: str = "", **kw: Any) -> HttpCase:
        content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return HttpCase(name, "POST", "/v1/defrag", expect, content, must_contain=must, **kw)

    def options(name: str, opts: dict[str, Any], must: str = "", expect: tuple[int, ...] = (422,)) -> HttpCase:
        return defrag(f"options: {name}", {"snapshot": snapshot, "options": opts}, expect, must)

    text = body.decode()
    cases = [
        defrag("truncated body", body[: len(body) // 2], must="not valid JSON"),
        defrag("truncated by one byte", body[:-1], must="not valid JSON"),
        defrag("empty body", b""),
        defrag("JSON null", b"null"),
        defrag("JSON array", b"[]"),
        defrag("binary body", bytes(range(256)) * 64, must="not valid JSON"),
        defrag("NUL bytes", b"\x00" * 4096),
        defrag("invalid UTF-8", body.replace(b'"node-1"', b'"node-\xff"', 1)),
        defrag("UTF-16 body", text.encode("utf-16")),
        defrag("gzip body without Content-Encoding", gzip.compress(body)),
        defrag("deeply nested arrays", b"[" * 100_000 + b"]" * 100_000, must="nested too deeply"),
        defrag("deeply nested objects", b'{"snapshot": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_001, must="nested too deeply"),
        defrag("duplicate top-level key", b'{"snapshot": {"nodes": []}, "snapshot": {"nodes": []}}', must="duplicate key 'snapshot'"),
        defrag("duplicate nested key", b'{"snapshot": {"nodes": [], "nodes": []}}', must="duplicate key 'nodes'"),
        defrag("NaN literal", text.replace('"cpus": 96', '"cpus": NaN', 1).encode()),
        defrag("Infinity literal", text.replace('"cpus": 96', '"cpus": Infinity', 1).encode()),
        defrag("huge integer", text.replace('"cpus": 96', '"cpus": ' + "9" * 5000, 1).encode()),
        defrag("snapshot null", {"snapshot": None}),
        defrag("snapshot a list", {"snapshot": []}),
        defrag("snapshot missing", {"options": {}}, must="snapshot: required field is missing"),
        defrag("nodes missing", {"snapshot": {"pods": []}}, must="snapshot.nodes: required field is missing"),
        defrag("unknown top-level field", {"snapshot": snapshot, "optoins": {}}, must="optoins: unknown field"),
        defrag("unknown snapshot field", {"snapshot": {**snapshot, "extra": 1}}),
        defrag("unknown node reference", {"snapshot": {**snapshot, "pods": [{**snapshot["pods"][0], "node": "n-9"}]}}, must="unknown node 'n-9'"),
        defrag("gpus as a string", {"snapshot": {**snapshot, "nodes": [{**snapshot["nodes"][0], "gpus": "8"}] + snapshot["nodes"][1:]}}),
        defrag("over capacity in the snapshot", {"snapshot": {**snapshot, "pods": [{**p, "gpus": 8} for p in snapshot["pods"]]}}, must="over capacity"),
        defrag("markup names", {"snapshot": {**snapshot, "pods": [{**snapshot["pods"][0], "node": "[bold]x[/]"}]}}, must="[bold]x[/]"),
        defrag("a plain text body", body, (415,), headers=[("content-type", "text/plain")]),
        defrag("no Content-Type", body, (415,), headers=[]),
        defrag("form-encoded body", b"snapshot=1", (415,), headers=[("content-type", "application/x-www-form-urlencoded")]),
        defrag("multipart Content-Type", body, (415,), headers=[("content-type", "multipart/form-data; boundary=x")]),
        defrag("+json Content-Type (valid)", body, (202,), headers=[("content-type", "application/problem+json")], problem_format=False),
        defrag("over the body limit", b'{"snapshot": {"nodes": [], "pad": "' + b"x" * (max_body + 1024) + b'"}}', (413,), must="limit"),
        defrag("chunked body over the limit", b"", (413,), must="limit"),  # content replaced by a generator below
        defrag("empty Idempotency-Key", body, (422,), must="Idempotency-Key", headers=[("content-type", "application/json"), ("idempotency-key", "")]),
        HttpCase(
            "blank Idempotency-Key (raw)",
            "POST",
            "/v1/defrag",
            (422,),
            must_contain="Idempotency-Key",
            raw=_raw("POST", "/v1/defrag", [("Authorization", f"Bearer {TOKEN}"), ("Content-Type", "application/json"), ("Idempotency-Key", "   ")], body),
        ),
        HttpCase(
            "Idempotency-Key of control characters (raw)",
            "POST",
            "/v1/defrag",
            (202, 422),
            problem_format=True,
            raw=_raw("POST", "/v1/defrag", [("Authorization", f"Bearer {TOKEN}"), ("Content-Type", "application/json"), ("Idempotency-Key", "\x01\x7f")], body),
        ),
        HttpCase(
            "non-ASCII Idempotency-Key (raw)",
            "POST",
            "/v1/defrag",
            (202, 422),
            raw=_raw(
                "POST", "/v1/defrag", [("Authorization", f"Bearer {TOKEN}"), ("Content-Type", "application/json"), ("Idempotency-Key", "cl\xe9-\xff")], body
            ),
        ),
        HttpCase(
            "token with trailing spaces (raw; HTTP strips them)",
            "GET",
            "/v1/jobs",
            (200, 401),
            problem_format=False,
            raw=_raw("GET", "/v1/jobs", [("Authorization", f"Bearer {TOKEN}   ")]),
        ),
        HttpCase("token with a tab inside (raw)", "GET", "/v1/jobs", (401,), raw=_raw("GET", "/v1/jobs", [("Authorization", f"Bearer\t{TOKEN}")])),
        HttpCase(
            "Content-Length not a number (raw; refused by the HTTP layer)",
            "POST",
            "/v1/defrag",
            (400,),
            problem_format=False,
            raw=(
                "POST /v1/defrag HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
                + TOKEN
                + "\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}"
            ).encode(),
        ),
        HttpCase(
            "two different Content-Length headers (raw)",
            "POST",
            "/v1/defrag",
            (400,),
            problem_format=False,
            raw=(
                "POST /v1/defrag HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
                + TOKEN
                + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"
            ).encode(),
        ),
        defrag("Idempotency-Key of 300 characters", body, (422,), headers=[("content-type", "application/json"), ("idempotency-key", "k" * 300)]),
        options("unknown option", {"turbo": True}, "unknown field"),
        options("method bogus", {"method": "magic"}, "options.method"),
        options("threshold with heuristic", {"threshold": 0.2}, "options.threshold: method 'heuristic' does not use it"),
        options("solver with heuristic", {"solver": "cpsat"}, "options.solver"),
        options("time_limit_s with repack", {"method": "repack", "time_limit_s": 5}, "options.time_limit_s"),
        options("max_moves with repack", {"method": "repack", "max_moves": 3}, "options.max_moves: repack repacks"),
        options("depth with random", {"method": "random", "depth": 2}, "options.depth"),
        options("force without --allow-force", {"method": "exact", "force": True}, "options.force: this server does not run forced"),
        options("time_limit_s 0", {"method": "exact", "time_limit_s": 0}, "options.time_limit_s"),
        options("time_limit_s 4000", {"method": "exact", "time_limit_s": 4000}, "options.time_limit_s"),
        options("time_limit_s as a string (lax options: coerced)", {"method": "exact", "time_limit_s": "5"}, expect=(202, 422)),
        options("seed -1", {"seed": -1}, "options.seed"),
        options("seed 2**70", {"seed": 2**70}, "options.seed"),
        options("max_moves_per_node 2**70", {"max_moves_per_node": 2**70}, "options.max_moves_per_node"),
        options("max_moves -1", {"max_moves": -1}, "options.max_moves"),
        options("threshold 0 with random", {"method": "random", "threshold": 0}, "options.threshold"),
        options("solver_workers 0", {"method": "exact", "solver_workers": 0}),
        options("workers 10**6", {"workers": 10**6}),
        options("options a list", [], ""),  # type: ignore[arg-type]
        HttpCase("missing token", "POST", "/v1/defrag", (401,), body, token=None),
        HttpCase("wrong token", "POST", "/v1/defrag", (401,), body, token="wrong"),
        HttpCase("token of another scheme", "GET", "/v1/jobs", (401,), None, [("authorization", f"Basic {TOKEN}")], token=None),
        HttpCase("lower-case scheme", "GET", "/v1/jobs", (200, 401), None, [("authorization", f"bearer {TOKEN}")], token=None, problem_format=False),
        HttpCase("non-ASCII token", "GET", "/v1/jobs", (401,), None, [("authorization", b"Bearer \xff\xfe")], token=None),
        HttpCase(
            "a 64 KiB token (refused by the HTTP layer)",
            "GET",
            "/v1/jobs",
            (400, 401, 431),
            None,
            [("authorization", "Bearer " + "t" * 65536)],
            token=None,
            problem_format=False,
        ),
        HttpCase(
            "two Authorization headers",
            "POST",
            "/v1/defrag",
            (400,),
            body,
            [("authorization", f"Bearer {TOKEN}"), ("authorization", "Bearer wrong"), ("content-type", "application/json")],
            token=None,
            must_contain="one Authorization header",
        ),
        HttpCase("missing token on /metrics", "GET", "/metrics", (401,), None, [], token=None),
        HttpCase("wait -1", "POST", "/v1/defrag", (422,), body, params={"wait": "-1"}),
        HttpCase("wait 1e308", "POST", "/v1/defrag", (422,), body, params={"wait": "1e308"}),
        HttpCase("wait 601", "POST", "/v1/defrag", (422,), body, params={"wait": "601"}),
        HttpCase("wait nan", "POST", "/v1/defrag", (422,), body, params={"wait": "nan"}),
        HttpCase("wait inf", "POST", "/v1/defrag", (422,), body, params={"wait": "inf"}),
        HttpCase("wait abc", "POST", "/v1/defrag", (422,), body, params={"wait": "abc"}),
        HttpCase("jobs limit 0", "GET", "/v1/jobs", (422,), params={"limit": "0"}),
        HttpCase("jobs limit 10**30", "GET", "/v1/jobs", (422,), params={"limit": str(10**30)}),
        HttpCase("jobs status bogus", "GET", "/v1/jobs", (422,), params={"status": "bogus"}),
        HttpCase("plans since -1", "GET", "/v1/plans", (422,), params={"since": "-1"}),
        HttpCase("plans since nan", "GET", "/v1/plans", (422,), params={"since": "nan"}),
        HttpCase("plans kind of 100 characters", "GET", "/v1/plans", (422,), params={"kind": "k" * 100}),
        HttpCase("unknown job", "GET", "/v1/jobs/nope", (404,)),
        HttpCase("unknown job, 10,000-character id", "GET", "/v1/jobs/" + "a" * 10_000, (404, 414)),
        HttpCase("unknown job's plan", "GET", "/v1/jobs/nope/plan", (404,)),
        HttpCase("cancel an unknown job", "DELETE", "/v1/jobs/nope", (404,)),
        HttpCase("unknown plan", "GET", "/v1/plans/nope", (404,)),
        HttpCase("unknown route", "GET", "/v2/defrag", (404,)),
        HttpCase("unknown route below /v1", "POST", "/v1/preempt", (404,), body),
        HttpCase("PUT on /v1/defrag", "PUT", "/v1/defrag", (405,), body),
        HttpCase("GET on /v1/defrag", "GET", "/v1/defrag", (405,)),
        HttpCase("DELETE on /v1/jobs", "DELETE", "/v1/jobs", (405,)),
        HttpCase("PATCH on /healthz", "PATCH", "/healthz", (405,), token=None),
        HttpCase("validate: malformed plan", "POST", "/v1/validate", (422,), json.dumps({"snapshot": snapshot, "plan": {"waves": 1}}).encode()),
        HttpCase("validate: plan missing", "POST", "/v1/validate", (422,), json.dumps({"snapshot": snapshot}).encode()),
        HttpCase("validate: duplicate key", "POST", "/v1/validate", (422,), b'{"snapshot": {"nodes": []}, "plan": {}, "plan": {}}'),
        HttpCase("report: shape garbage", "POST", "/v1/report", (422,), json.dumps({"snapshot": snapshot, "shape": "8x"}).encode(), must_contain="shape"),
        HttpCase("report: huge shape", "POST", "/v1/report", (422,), json.dumps({"snapshot": snapshot, "shape": "4611686018427387904g1c"}).encode()),
        HttpCase("report: text/plain", "POST", "/v1/report", (415,), json.dumps({"snapshot": snapshot}).encode(), [("content-type", "text/plain")]),
    ]
    return cases


def check_http_response(case: HttpCase, response: httpx.Response) -> str | None:
    """Why the response is not the documented one, or None."""
    code = response.status_code
    if code >= 500:
        return f"{code} (server error): {response.text[:200]!r}"
    if "Traceback" in response.text:
        return f"{code} with a traceback in the body"
    if code not in case.expect:
        return f"{code}, expected {'/'.join(map(str, case.expect))}: {response.text[:300]!r}"
    if 400 <= code < 500 and case.problem_format:
        try:
            body = response.json()
        except ValueError:
            return f"{code} without a JSON body: {response.text[:200]!r}"
        if not (
            isinstance(body, dict)
            and isinstance(body.get("error"), str)
            and isinstance(body.get("problems", []), list)
            and set(body) <= {"error", "problems", "job_id"}
        ):
            return f"{code} not in the problem format {{error, problems}}: {response.text[:200]!r}"
        if code == 401 and response.headers.get("www-authenticate") != "Bearer":
            return "401 without WWW-Authenticate: Bearer"
    if case.must_contain and case.must_contain not in response.text:
        return f"{code}, but the body lacks {case.must_contain!r}: {response.text[:300]!r}"
    return None


def http_idempotency_and_health(client: httpx.Client, snapshot: dict[str, Any], out: Outcome, codes: Counter[int]) -> None:
    """The same Idempotency-Key with another body is a 409 naming the original job; cancelling a
    finished job is a 409; the server is healthy after the corpus."""
    headers = {"idempotency-key": "robustness-1"}
    first = client.post("/v1/defrag", json={"snapshot": snapshot}, headers=headers)
    again = client.post("/v1/defrag", json={"snapshot": snapshot}, headers=headers)
    other = client.post("/v1/defrag", json={"snapshot": snapshot, "options": {"seed": 9}}, headers=headers)
    for response in (first, again, other):
        codes[response.status_code] += 1
    out.check(
        first.status_code == 202 and again.json().get("job_id") == first.json().get("job_id"),
        f"Idempotency-Key repeated with the same body: {first.status_code} then {again.status_code} {again.text[:200]!r}",
    )
    out.check(
        other.status_code == 409 and other.json().get("job_id") == first.json().get("job_id") and set(other.json()) <= {"error", "problems", "job_id"},
        f"Idempotency-Key reused with another body: {other.status_code} {other.text[:200]!r}",
    )
    job_id = first.json()["job_id"]
    wait_status(client, job_id, ("succeeded", "failed"), timeout_s=120)
    done = client.delete(f"/v1/jobs/{job_id}")
    codes[done.status_code] += 1
    out.check(done.status_code == 409 and "already" in done.text, f"cancel a finished job: {done.status_code} {done.text[:200]!r}")
    healthy = [client.get(path).status_code for path in ("/healthz", "/readyz")]
    out.check(healthy == [200, 200], f"health after the hostile requests: /healthz, /readyz = {healthy}")


def run_http(args: argparse.Namespace) -> Outcome:
    """Category 3: the hostile-request corpus against a real server with a token and a 2 MiB body limit."""
    out = Outcome("http", "Hostile HTTP requests", "requests", "documented 4xx in the problem format; 0 5xx; 0 tracebacks")
    start = time.perf_counter()
    snapshot = json.loads(FIG15.read_text())
    max_body_mib = 2
    codes: Counter[int] = Counter()
    with tempfile.TemporaryDirectory(prefix="robustness-http-") as tmp:
        server = Server(Path(tmp) / "http.db", TOKEN, "--workers", "1", "--max-body-mib", str(max_body_mib)).start()
        try:
            cases = http_corpus(snapshot, max_body_mib * 2**20)
            with httpx.Client(base_url=server.url, timeout=60.0) as client:
                for case in cases:
                    headers = list(case.headers)
                    if case.token is not None:
                        headers.append(("authorization", f"Bearer {case.token}"))
                    content: Any = case.content
                    if case.name == "chunked body over the limit":  # no Content-Length: the limit is met while reading
                        content = (b'{"snapshot": {"nodes": [], "pad": "' if i == 0 else b"x" * 2**16 for i in range(40 * max_body_mib))
                    try:
                        if case.raw is not None:
                            response = raw_request(server.port, case.raw)
                        else:
                            response = client.request(case.method, case.path, content=content, headers=headers, params=case.params)
                    except (httpx.HTTPError, OSError, ValueError) as err:
                        out.tried += 1
                        out.fail(f"{case.name}: transport error {type(err).__name__}: {err}")
                        continue
                    codes[response.status_code] += 1
                    why = check_http_response(case, response)
                    out.check(why is None, f"{case.name} ({case.method} {case.path[:40]}): {why}")
            with server.client() as client:
                try:
                    http_idempotency_and_health(client, snapshot, out, codes)
                except Exception as err:  # noqa: BLE001 - reported, the rest of the category stands
                    out.tried += 1
                    out.fail(f"idempotency and health checks stopped: {type(err).__name__}: {err}")
            log = server.log.read_text(errors="replace")
            out.check("Traceback" not in log, f"the server log holds {log.count('Traceback')} traceback(s): {log[log.find('Traceback') :][:400]!r}")
        finally:
            server.stop()
    out.wall_s = time.perf_counter() - start
    out.met = out.failed == 0
    out.lines.append(
        f"{out.tried} checks ({sum(codes.values())} requests) against `planner serve --workers 1 --max-body-mib {max_body_mib}` "
        f"with a token, in {out.wall_s:.0f} s. Responses by status: {', '.join(f'{k}: {v}' for k, v in sorted(codes.items()))}. "
        'Every 4xx must be `{"error": ..., "problems": [...]}` (plus `job_id` where documented); the last checks are '
        "the server's health after the corpus and its log (no traceback)."
    )
    return out


# ================================================================================================
# 4. kill -9 and restart
# ================================================================================================


def long_snapshot(nodes: int) -> dict[str, Any]:
    """An ASI-like snapshot on which the hybrid searches for its whole time limit."""
    from planner.instances.asi import generate_asi

    return cluster_to_dict(generate_asi(nodes=nodes, seed=4, allocation=0.75))


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    children[int(f.read().rsplit(")", 1)[1].split()[1])].append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    return children


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def fork_server_of(server: Server) -> int | None:
    """The server's fork server: its child whose command line runs multiprocessing's forkserver."""
    for child in _children().get(server.process.pid, []):
        if "forkserver" in _cmdline(child):
            return child
    return None


def _validates(snapshot: dict[str, Any], plan_text: str) -> str | None:
    """Why a stored plan does not validate (independent replay and the planner's validator), or None."""
    from planner.plans import parse_plan
    from planner.validate.defrag import validate

    cluster = parse_cluster(json.dumps(snapshot))
    plan = parse_plan(plan_text)
    try:
        oracle.replay(cluster, plan)
    except AssertionError as err:
        return f"replay: {err}"
    violations = validate(cluster, plan)
    return "; ".join(map(str, violations[:3])) or None


def kill_server_during_job(tmp: Path, job: dict[str, Any], small: dict[str, Any], out: Outcome, round_: int) -> None:
    """kill -9 of the whole server (its process group) during a running job with another queued:
    after a restart the running job is run again (attempts 2) and succeeds with a valid plan, and the
    queued one runs once."""
    server = Server(tmp / f"server-{round_}.db", TOKEN, "--workers", "1")
    try:
        server.start()
        with server.client() as client:
            running = client.post("/v1/defrag", json=job).json()["job_id"]
            queued = client.post("/v1/defrag", json=small).json()["job_id"]
            wait_status(client, running, ("running",))
            time.sleep(1.0 + round_)
        server.kill()
        server.start()
        with server.client() as client:
            status = wait_status(client, running, ("succeeded", "failed", "cancelled"), timeout_s=180)
            other = wait_status(client, queued, ("succeeded", "failed", "cancelled"), timeout_s=60)
            tag = f"server kill -9 (round {round_ + 1})"
            if out.check(
                status["status"] == "succeeded" and status["attempts"] == 2,
                f"{tag}: the running job ended {status['status']} after {status['attempts']} attempts: {status.get('error')}",
            ):
                why = _validates(job["snapshot"], client.get(f"/v1/jobs/{running}/plan").text)
                out.check(why is None, f"{tag}: the plan does not validate: {why}")
            out.check(
                other["status"] == "succeeded" and other["attempts"] == 1, f"{tag}: the queued job ended {other['status']} after {other['attempts']} attempts"
            )
    finally:
        server.stop()


def kill_server_three_times(tmp: Path, job: dict[str, Any], out: Outcome) -> None:
    """A job interrupted by three server kills is marked failed at the next start, not retried forever."""
    server = Server(tmp / "thrice.db", TOKEN, "--workers", "1")
    try:
        server.start()
        with server.client() as client:
            doomed = client.post("/v1/defrag", json=job).json()["job_id"]
        for _ in range(3):
            with server.client() as client:
                wait_status(client, doomed, ("running",), timeout_s=60)
            time.sleep(0.5)
            server.kill()
            server.start()
        with server.client() as client:
            status = client.get(f"/v1/jobs/{doomed}").json()
            out.check(
                status["status"] == "failed" and "interrupted 3 times" in (status.get("error") or ""),
                f"three kills during one job: {status['status']} after {status['attempts']} attempts ({status.get('error')})",
            )
    finally:
        server.stop()


def kill_worker(tmp: Path, job: dict[str, Any], small: dict[str, Any], out: Outcome) -> None:
    """kill -9 of a job's worker process: the job fails with the reason, the server stays healthy."""
    server = Server(tmp / "worker.db", TOKEN, "--workers", "1")
    try:
        server.start()
        with server.client() as client:
            victim = client.post("/v1/defrag", json={**job, "options": {**job["options"], "time_limit_s": 60}}).json()["job_id"]
            wait_status(client, victim, ("running",))
            workers = server.job_workers()
            time.sleep(0.5)
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            if out.check(bool(workers), "worker kill -9: no worker process found below the fork server"):
                status = wait_status(client, victim, ("succeeded", "failed", "cancelled"), timeout_s=60)
                out.check(
                    status["status"] == "failed" and "worker process died" in (status.get("error") or ""),
                    f"worker kill -9: the job ended {status['status']}: {status.get('error')}",
                )
            health = [client.get(p).status_code for p in ("/healthz", "/readyz")]
            out.check(health == [200, 200], f"worker kill -9: /healthz, /readyz = {health}")
            after = client.post("/v1/defrag", params={"wait": 60}, json=small)
            out.check(after.status_code == 200, f"worker kill -9: the next job got {after.status_code} {after.text[:200]!r}")
    finally:
        server.stop()


def kill_fork_server(tmp: Path, job: dict[str, Any], small: dict[str, Any], out: Outcome, notes: list[str]) -> None:
    """kill -9 of the fork server during a running job: the job must end (not stay running), its
    worker must not outlive it, and later jobs must still run."""
    method = job["options"]["method"]
    server = Server(tmp / f"forkserver-{method}.db", TOKEN, "--workers", "1")
    lingering: list[int] = []
    try:
        server.start()
        with server.client() as client:
            victim = client.post("/v1/defrag", json=job).json()["job_id"]
            wait_status(client, victim, ("running",))
            workers = server.job_workers()
            forkserver = fork_server_of(server)
            time.sleep(0.5)
            if not out.check(forkserver is not None, f"fork server kill -9 ({method}): no fork server found below the server"):
                return
            os.kill(forkserver, signal.SIGKILL)
            killed_at = time.monotonic()
            try:
                status = wait_status(client, victim, ("succeeded", "failed", "cancelled"), timeout_s=120)
            except AssertionError:
                status = {"status": "running", "error": None}
            ended_s = time.monotonic() - killed_at
            out.check(status["status"] in ("failed", "succeeded"), f"fork server kill -9 ({method}): the running job is still {status['status']} 120 s later")
            notes.append(
                f"fork server kill -9 ({method}): the running job ended `{status['status']}` {ended_s:.1f} s after the kill"
                + (f" with error {status.get('error')!r}" if status.get("error") else "")
            )
            survivors = [pid for pid in workers if _alive(pid)]
            while survivors and time.monotonic() - killed_at < 90:
                time.sleep(0.5)
                survivors = [pid for pid in survivors if _alive(pid)]
            gone_s = time.monotonic() - killed_at
            lingering = survivors
            if not workers:
                notes.append(f"fork server kill -9 ({method}): no worker process was found before the kill")
            elif lingering:
                notes.append(f"fork server kill -9 ({method}): the job's worker (pid {lingering[0]}) was still running {gone_s:.0f} s after the kill")
            else:
                notes.append(f"fork server kill -9 ({method}): the job's worker was gone {gone_s:.1f} s after the kill")
            if status["status"] == "failed" and workers:
                out.check(
                    gone_s <= ended_s + 5.0,
                    f"fork server kill -9 ({method}): the job was marked failed {ended_s:.1f} s after the kill, but its worker "
                    f"(orphaned, outside the --workers bound) ran on until {gone_s:.0f} s after it"
                    + (" and was still running when checked" if lingering else ""),
                )
            health = [client.get(p).status_code for p in ("/healthz", "/readyz")]
            out.check(health == [200, 200], f"fork server kill -9 ({method}): /healthz, /readyz = {health}")
            after = client.post("/v1/defrag", params={"wait": 90}, json=small)
            out.check(after.status_code == 200, f"fork server kill -9 ({method}): the next job got {after.status_code} {after.text[:300]!r}")
            notes.append(
                f"fork server kill -9 ({method}): the next job got HTTP {after.status_code}; a fork server is "
                f"{'running again' if fork_server_of(server) else 'NOT running'}"
            )
    finally:
        for pid in lingering:  # leave nothing behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        server.stop()


def _cpu_ticks(pid: int) -> int:
    """User plus system CPU time of a process, in clock ticks (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0


def kill_parser(tmp: Path, base: dict[str, Any], mib: int, out: Outcome, notes: list[str]) -> None:
    """kill -9 of the process that parses large bodies, while it parses one: that request gets an
    answer (not a hang): 503 with a retry hint, since the server, not the body, failed; the server
    stays healthy, and the next large body is parsed."""
    body, _, _ = big_body(base, mib * 2**20)
    server = Server(tmp / "parser.db", TOKEN, "--workers", "1", "--max-body-mib", "64")
    try:
        server.start()
        first = _post_big(server.url, body)  # starts the parser process
        parsers = [pid for pid in _children().get(server.process.pid, []) if "spawn_main" in _cmdline(pid)]
        if not out.check(bool(parsers) and first[0] in (202, 422), f"parser kill -9: no parser process after a large body ({first[0]} {first[3]})"):
            return
        results: list[tuple[int, float, float, str]] = []
        sender = threading.Thread(target=lambda: results.append(_post_big(server.url, body)))
        busy_from = {pid: _cpu_ticks(pid) for pid in parsers}  # the parser processes (two): kill the one that takes the body
        sender.start()
        deadline = time.monotonic() + 60
        parser = parsers[0]
        while time.monotonic() < deadline:
            parser = max(parsers, key=lambda pid: _cpu_ticks(pid) - busy_from[pid])
            if _cpu_ticks(parser) - busy_from[parser] >= 30:  # 0.3 s of CPU into the parse
                break
            time.sleep(0.01)
        os.kill(parser, signal.SIGKILL)
        sender.join(timeout=300)
        status, begin, end, error = results[0] if results else (0, 0.0, 0.0, "no answer in 300 s")
        # the body was fine: the server lost its parser, so 503 (retry later), not a 4xx blaming the client
        out.check(bool(results) and status == 503 and "retry" in error, f"parser kill -9: the request being parsed got {status} {error}")
        health = [_ready_code(server), httpx.get(f"{server.url}/healthz", timeout=10).status_code]
        out.check(health == [200, 200], f"parser kill -9: /readyz, /healthz = {health}")
        again = _post_big(server.url, body)
        out.check(again[0] in (202, 422), f"parser kill -9: the next large body got {again[0]} {again[3]}")
        notes.append(
            f"parser kill -9 during a {len(body) / 2**20:.0f} MiB body: that request got HTTP {status} after "
            f"{end - begin:.1f} s ({error[:160]!r}); the next large body got HTTP {again[0]}"
        )
    finally:
        server.stop()


def run_kill(args: argparse.Namespace) -> Outcome:
    """Category 4: kill -9 of the server, a worker, the fork server and the body parser, each scenario on its own server."""
    out = Outcome("kill", "kill -9 and restart", "checks", "every job ends succeeded or failed with a reason; the server stays healthy")
    start = time.perf_counter()
    nodes, seconds = (500, 6.0) if args.quick else (2000, 10.0)
    job = {"snapshot": long_snapshot(nodes), "options": {"method": "hybrid", "time_limit_s": seconds}}
    small = {"snapshot": json.loads(FIG15.read_text())}
    exact_job = {"snapshot": long_snapshot(500), "options": {"method": "exact", "time_limit_s": 20}}
    notes: list[str] = []
    rounds = 1 if args.quick else 3
    with tempfile.TemporaryDirectory(prefix="robustness-kill-") as tmp_name:
        tmp = Path(tmp_name)
        scenarios: list[tuple[str, Callable[[], None]]] = [
            *((f"server kill round {r + 1}", (lambda r=r: kill_server_during_job(tmp, job, small, out, r))) for r in range(rounds)),
            ("three server kills", lambda: kill_server_three_times(tmp, job, out)),
            ("worker kill", lambda: kill_worker(tmp, job, small, out)),
            ("fork server kill (hybrid)", lambda: kill_fork_server(tmp, {**job, "options": {**job["options"], "time_limit_s": 30}}, small, out, notes)),
            ("fork server kill (exact)", lambda: kill_fork_server(tmp, exact_job, small, out, notes)),
            ("parser kill", lambda: kill_parser(tmp, job["snapshot"], 8 if args.quick else 40, out, notes)),
        ]
        for name, scenario in scenarios:
            try:
                scenario()
            except Exception as err:  # noqa: BLE001 - a scenario that breaks is a failure; the others still run
                out.tried += 1
                out.fail(f"{name}: stopped by {type(err).__name__}: {str(err)[:300]}")
    out.wall_s = time.perf_counter() - start
    out.met = out.failed == 0
    out.lines.append(
        f"Long job: `hybrid` with time_limit_s {seconds:g} on a {nodes:,}-node `generate_asi` snapshot (seed 4, allocation 0.75); "
        f"servers with `--workers 1`. Server kill -9 (the whole process group) during the running job, with a second job queued: "
        f"{rounds} round(s); three kills during one job; kill -9 of the job's worker; kill -9 of the fork server during that hybrid job (30 s) and during an `exact` "
        f"job (time_limit_s 20, 500 nodes: a solve that reports no progress); kill -9 of the large-body parser process "
        f"while it parses a body. {out.wall_s:.0f} s."
    )
    out.lines += [f"* {note}" for note in notes]
    return out


# ================================================================================================
# 5. Store failures on a small tmpfs
# ================================================================================================


def _mount(point: Path, size: str) -> str | None:
    """Mount a tmpfs at ``point``; the reason it could not be, or None."""
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs"
    point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else f"cannot mount a tmpfs: {done.stderr.strip() or done.returncode}"


def _fill(point: Path) -> Path:
    filler = point / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True, check=False)
    return filler


def _until(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def _ready_code(server: Server) -> int:
    try:
        return httpx.get(f"{server.url}/readyz", timeout=10).status_code
    except httpx.HTTPError:
        return 0


def run_store(args: argparse.Namespace) -> Outcome:
    """Category 5: a full and a read-only job store on a 48 MiB tmpfs (skipped when one cannot be mounted)."""
    out = Outcome("store", "Store failures (tmpfs)", "checks", "readiness 503 while full, no job lost or stuck, recovery without restart, clear exit 2")
    start = time.perf_counter()
    job = {"snapshot": long_snapshot(500), "options": {"method": "hybrid", "time_limit_s": 4}}
    with tempfile.TemporaryDirectory(prefix="robustness-store-") as tmp:
        point = Path(tmp) / "disk"
        reason = _mount(point, "48m")
        if reason:
            out.skipped = reason
            out.lines.append(f"Skipped: {reason}.")
            return out
        try:
            # full disk during a job
            server = Server(point / "planner.db", TOKEN, "--workers", "1").start()
            try:
                pid = server.process.pid
                with server.client() as client:
                    job_id = client.post("/v1/defrag", json=job).json()["job_id"]
                    wait_status(client, job_id, ("running",))
                    filler = _fill(point)
                    out.check(_until(lambda: _ready_code(server) == 503, 60), "disk full during a job: readiness never said 503")
                    finished = _until(lambda: not server.job_workers(timeout_s=0), 60)  # the solve is over, its outcome unwritten
                    status = client.get(f"/v1/jobs/{job_id}").json()["status"]
                    out.check(
                        finished and status == "running",
                        f"disk full during a job: the worker {'finished' if finished else 'never finished'} and the job is {status}, expected still running",
                    )
                    refused = client.post("/v1/defrag", json={"snapshot": job["snapshot"]})
                    out.check(
                        refused.status_code == 503 and refused.headers.get("retry-after", "").isdigit(),
                        f"submission while full: {refused.status_code} retry-after={refused.headers.get('retry-after')} {refused.text[:200]!r}",
                    )
                    filler.unlink()
                    final = wait_status(client, job_id, ("succeeded", "failed", "cancelled"), timeout_s=90)
                    out.check(final["status"] == "succeeded", f"space freed: the job ended {final['status']}: {final.get('error')}")
                    out.check(_until(lambda: _ready_code(server) == 200, 30), "space freed: readiness stayed 503")
                    out.check(server.process.poll() is None and server.process.pid == pid, "space freed: the server restarted or exited")
                    if final["status"] == "succeeded":
                        why = _validates(job["snapshot"], client.get(f"/v1/jobs/{job_id}/plan").text)
                        out.check(why is None, f"space freed: the recorded plan does not validate: {why}")
                    again = client.post("/v1/defrag", params={"wait": 60}, json={"snapshot": job["snapshot"]})
                    out.check(again.status_code == 200, f"space freed: the next job got {again.status_code} {again.text[:200]!r}")
            finally:
                server.stop()
            # submission while full, before any job
            server = Server(point / "second.db", TOKEN, "--workers", "1").start()
            try:
                filler = _fill(point)
                with server.client() as client:
                    ready = _ready_code(server)
                    out.check(ready == 503, f"full disk, idle server: readiness {ready}")
                    refused = client.post("/v1/defrag", json={"snapshot": job["snapshot"]})
                    out.check(
                        refused.status_code == 503 and refused.headers.get("retry-after", "").isdigit() and "Traceback" not in refused.text,
                        f"submission while full: {refused.status_code} {refused.text[:200]!r}",
                    )
                    filler.unlink()
                    accepted = client.post("/v1/defrag", json={"snapshot": job["snapshot"]})
                    out.check(accepted.status_code == 202, f"space freed: submission got {accepted.status_code} {accepted.text[:200]!r}")
            finally:
                server.stop()
            # start-up on a full disk with a new database, then read-only
            filler = _fill(point)
            done = subprocess.run(
                [PLANNER, "serve", "--port", str(_free_port()), "--db", str(point / "fresh.db")],
                capture_output=True,
                text=True,
                timeout=60,
                env=_env(),
                check=False,
            )
            out.check(
                done.returncode == 2 and "--db: cannot write the job store" in done.stderr and "Traceback" not in done.stderr,
                f"start-up on a full disk: exit {done.returncode}: {done.stderr.strip()[-300:]!r}",
            )
            filler.unlink()
            subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True, capture_output=True)
            try:
                done = subprocess.run(
                    [PLANNER, "serve", "--port", str(_free_port()), "--db", str(point / "planner.db")],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    env=_env(),
                    check=False,
                )
                out.check(
                    done.returncode == 2 and "--db: cannot write the job store" in done.stderr and "Traceback" not in done.stderr,
                    f"start-up on a read-only store: exit {done.returncode}: {done.stderr.strip()[-300:]!r}",
                )
            finally:
                subprocess.run(["mount", "-o", "remount,rw", str(point)], capture_output=True, check=False)
        finally:
            subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)
    out.wall_s = time.perf_counter() - start
    out.met = out.failed == 0
    out.lines.append(f"The store on a 48 MiB tmpfs filled to the last byte with `dd`; job: `hybrid` time_limit_s 4 on a 500-node snapshot; {out.wall_s:.0f} s.")
    return out


# ================================================================================================
# 6. Event loop and memory under load
# ================================================================================================


def big_body(base: dict[str, Any], target_bytes: int) -> tuple[bytes, int, int]:
    """A snapshot body of at most about ``target_bytes``: ``base`` repeated with every name (nodes,
    pods, jobs, switches) prefixed per copy, so it stays consistent. Returns (body, nodes, pods)."""

    def renamed(c: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        prefix = f"c{c}-"
        nodes = [{**n, "name": prefix + n["name"], **{k: prefix + n[k] for k in ("asw", "spine") if n.get(k)}} for n in base["nodes"]]
        pods = [{**p, "name": prefix + p["name"], **{k: prefix + p[k] for k in ("node", "job") if p.get(k)}} for p in base["pods"]]
        return nodes, pods, [{**j, "name": prefix + j["name"]} for j in base.get("jobs", [])]

    one = len(json.dumps(renamed(99))) + 20
    nodes: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    jobs: list[dict[str, Any]] = []
    for c in range(max(1, target_bytes // one)):
        more = renamed(c)
        nodes += more[0]
        pods += more[1]
        jobs += more[2]
    snapshot = {"version": 1, "time_s": base.get("time_s", 0), "nodes": nodes, "pods": pods, "jobs": jobs}
    # a job that cannot fit --max-job-s: the server reads, parses and checks the whole body, then
    # refuses it (422) instead of queueing a plan of ~100,000 nodes
    body = json.dumps({"snapshot": snapshot, "options": {"method": "hybrid", "time_limit_s": 3600}}).encode()
    return body, len(nodes), len(pods)


class HealthPoller(threading.Thread):
    """``GET /healthz`` every ``every_s``: (start time, latency s, status) of each."""

    def __init__(self, url: str, every_s: float = 0.02):
        super().__init__(daemon=True)
        self.url = url
        self.every_s = every_s
        self.samples: list[tuple[float, float, int]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30.0) as client:
            while not self.stopping.is_set():
                begin = time.monotonic()
                try:
                    status = client.get("/healthz").status_code
                except httpx.HTTPError:
                    status = 0
                latency = time.monotonic() - begin
                self.samples.append((begin, latency, status))
                self.stopping.wait(max(0.0, self.every_s - latency))


class RssSampler(threading.Thread):
    """Resident memory of the server process alone and of its process tree, every ``every_s``."""

    def __init__(self, pid: int, every_s: float = 0.05):
        super().__init__(daemon=True)
        self.pid = pid
        self.every_s = every_s
        self.samples: list[tuple[float, float, float]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.samples.append((time.monotonic(), rss_mib(self.pid), _tree_rss_kib(self.pid) / 1024))
            except (FileNotFoundError, ProcessLookupError):
                pass
            self.stopping.wait(self.every_s)

    def peak(self, since: float = 0.0, until: float = math.inf) -> tuple[float, float]:
        window = [s for s in self.samples if since <= s[0] <= until]
        return max((s[1] for s in window), default=0.0), max((s[2] for s in window), default=0.0)


def _post_big(url: str, body: bytes) -> tuple[int, float, float, str]:
    """(status, start, end, error) of one big POST."""
    begin = time.monotonic()
    try:
        with httpx.Client(base_url=url, timeout=900.0) as client:
            response = client.post("/v1/defrag", content=body, headers={"authorization": f"Bearer {TOKEN}", "content-type": "application/json"})
        return response.status_code, begin, time.monotonic(), "" if response.status_code < 400 else response.text[:200]
    except httpx.HTTPError as err:
        return 0, begin, time.monotonic(), f"{type(err).__name__}: {err}"


def _latencies(samples: list[tuple[float, float, int]], windows: list[tuple[float, float]]) -> list[float]:
    return [lat for begin, lat, _ in samples if any(a <= begin <= b for a, b in windows)]


def run_load(args: argparse.Namespace) -> Outcome:
    """Category 6: /healthz latency and server memory while ~60 MiB bodies are parsed and two jobs solve."""
    out = Outcome("load", "Event loop and memory under load", "checks", "/healthz p99 < 100 ms while parsing ~60 MiB bodies; peak server RSS bounded")
    start = time.perf_counter()
    nodes, seconds, target_mib, sequential, concurrent = (500, 8.0, 6, 2, 3) if args.quick else (2000, 20.0, 60, 3, 8)
    base = long_snapshot(nodes)
    body, big_nodes, big_pods = big_body(base, target_mib * 2**20)
    job = {"snapshot": base, "options": {"method": "hybrid", "time_limit_s": seconds}}
    rows: list[tuple[str, list[float], float, float, float, float, Counter[int]]] = []
    with tempfile.TemporaryDirectory(prefix="robustness-load-") as tmp:
        server = Server(Path(tmp) / "load.db", TOKEN, "--workers", "2", "--max-body-mib", "64").start()
        sampler = RssSampler(server.process.pid)
        sampler.start()
        try:
            with server.client() as client:
                client.post("/v1/defrag", params={"wait": 60}, json={"snapshot": json.loads(FIG15.read_text())})  # warm the fork server
                time.sleep(1.0)
                idle_own, idle_tree = sampler.peak(time.monotonic() - 0.9)
                for phase, parallel, repeats in (("one body at a time", 1, sequential), (f"{concurrent} bodies at once", concurrent, 1)):
                    jobs = [client.post("/v1/defrag", json=job).json()["job_id"] for _ in range(2)]
                    for job_id in jobs:
                        wait_status(client, job_id, ("running", "succeeded", "failed"), timeout_s=60)
                    poller = HealthPoller(server.url)
                    poller.start()
                    time.sleep(0.5)
                    phase_start = time.monotonic()
                    windows: list[tuple[float, float]] = []
                    durations: list[float] = []
                    statuses: Counter[int] = Counter()
                    for _ in range(repeats):
                        threads: list[threading.Thread] = []
                        results: list[tuple[int, float, float, str]] = []
                        for _ in range(parallel):
                            t = threading.Thread(target=lambda into=results: into.append(_post_big(server.url, body)))
                            t.start()
                            threads.append(t)
                        for t in threads:
                            t.join()
                        for status, begin, end, error in results:
                            statuses[status] += 1
                            durations.append(end - begin)
                            out.check(status in (202, 422), f"{phase}: a ~{target_mib} MiB body got {status} {error}")
                        windows.append((min(r[1] for r in results), max(r[2] for r in results)))
                    poller.stopping.set()
                    poller.join()
                    during = _latencies(poller.samples, windows)
                    own, tree = sampler.peak(phase_start)
                    parse_s = statistics.mean(durations)
                    rows.append((phase, during, parse_s, own, tree, max(lat for _, lat, _ in poller.samples), statuses))
                    failed_polls = sum(1 for _, _, status in poller.samples if status != 200)
                    out.check(failed_polls == 0, f"{phase}: {failed_polls} /healthz polls failed")
                    p99 = percentile(during, 0.99)
                    out.check(bool(during) and p99 < 0.100, f"{phase}: /healthz p99 {p99 * 1000:.0f} ms while parsing (target < 100 ms)")
                    for job_id in jobs:
                        final = wait_status(client, job_id, ("succeeded", "failed", "cancelled"), timeout_s=seconds * 3 + 60)
                        out.check(final["status"] == "succeeded", f"{phase}: a solve job ended {final['status']}: {final.get('error')}")
        finally:
            sampler.stopping.set()
            sampler.join()
            server.stop()
    single_own = rows[0][3] if rows else 0.0
    if len(rows) == 2:
        out.check(
            rows[1][3] <= 1.5 * single_own + 64,
            f"peak server RSS with {concurrent} bodies at once {rows[1][3]:.0f} MiB vs {single_own:.0f} MiB with one "
            "(large bodies are parsed one at a time: expected within 1.5x + 64 MiB)",
        )
        out.check(
            rows[1][4] <= 1.5 * rows[0][4] + 256,
            f"peak tree RSS with {concurrent} bodies at once {rows[1][4]:.0f} MiB vs {rows[0][4]:.0f} MiB with one (expected within 1.5x + 256 MiB)",
        )
    out.wall_s = time.perf_counter() - start
    out.met = out.failed == 0 if not args.quick else None
    setup = (
        f"`planner serve --workers 2 --max-body-mib 64`; two `hybrid` jobs (time_limit_s {seconds:g}, {nodes:,}-node `generate_asi` "
        f"snapshot) running in each phase; bodies of {len(body) / 2**20:.1f} MiB ({big_nodes:,} nodes, {big_pods:,} pods: the "
        f"{nodes:,}-node snapshot repeated with renamed nodes, pods, jobs and switches) sent with options the server refuses "
        "after parsing and checking the whole snapshot (hybrid for 3,600 s cannot fit `--max-job-s`: 422), so each costs a full "
        "parse and queues nothing. `/healthz` polled every 20 ms by another client; RSS sampled every 50 ms from /proc. "
        f"Server RSS idle (before the phases): {idle_own:.0f} MiB alone, {idle_tree:.0f} MiB with its children (the fork "
        "server and the job workers; from the first large body on, the body-parser process too)."
    )
    out.lines += [
        setup,
        "",
        "| phase | bodies: status | mean request time | /healthz polls during parsing | p50 | p90 | p99 | max | peak server RSS | peak tree RSS |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for phase, during, parse_s, own, tree, worst, statuses in rows:
        ms = [percentile(during, q) * 1000 for q in (0.5, 0.9, 0.99)]
        out.lines.append(
            f"| {phase} | {', '.join(f'{k}: {v}' for k, v in sorted(statuses.items()))} | {parse_s:.1f} s | {len(during)} | "
            f"{ms[0]:.0f} ms | {ms[1]:.0f} ms | {ms[2]:.0f} ms | {max(during, default=worst) * 1000:.0f} ms | {own:.0f} MiB | {tree:.0f} MiB |"
        )
    return out


# ================================================================================================
# Results
# ================================================================================================

RUNNERS: dict[str, Callable[[argparse.Namespace], Outcome]] = {
    "fuzz": run_fuzz,
    "cli": run_cli,
    "http": run_http,
    "kill": run_kill,
    "store": run_store,
    "load": run_load,
}

WHAT = """\
**What each category checks.** *Fuzz*: random snapshots that are consistent by construction (every
placement passes `rules.pods_fit` and `rules.job_topology_ok`) must be accepted by `parse_cluster`
after a JSON round trip, and every method with random valid options must return a plan (no
exception, `PlanBug` included, and no hang) that an independent make-before-break replay
(`tests.support.defrag_oracle.replay`, which shares no code with the planner's validator) accepts, that keeps the
limits asked for (moves, per-node touches and switch changes counted here), and whose
`vacated_nodes`, `report.objective`, `report.moves`, `report.gpus_moved`, `metrics.after.empty_nodes`
and bound agree with the replay; `compare` has both plans checked; on tiny snapshots the oracle's
exhaustive search also checks the objective, bound, `optimal`, `lexicographic_optimal` and
`moves_bound` claims. *CLI*: the installed `planner` script on malformed files, values, options
and destinations must exit 2 with an `error:` line (or click's usage error naming the option), never
3 and never with a traceback. *HTTP*: hostile bodies, headers, parameters and routes must get the
documented 4xx in the problem format, never a 5xx or a traceback, and leave the server healthy with a
clean log. *Kill*: kill -9 of the server, a worker or the fork server must leave no job `running`
forever, re-run interrupted jobs (up to 3 times) and keep the server serving. *Store*: a full or
read-only store must show in readiness (503), refuse submissions with 503 and Retry-After, keep the
running job's outcome until it can be written, recover without a restart, and stop start-up with
exit 2. *Load*: parsing very large bodies must not stall the event loop (`/healthz`) and bodies
arriving together must be parsed one at a time (bounded memory)."""


def write_results(outcomes: list[Outcome], args: argparse.Namespace, argv: list[str]) -> None:
    """benchmarks/results/robustness.md: the summary table, what each category checks, then each category's details."""
    command = ".venv/bin/python benchmarks/robustness.py" + ("".join(f" {a}" for a in argv) if argv else "")
    lines = [
        "# Adversarial robustness",
        "",
        f"Machine: {machine()}. Reproduce: `{command}`"
        + (" (a quick run: small counts; the full run is `.venv/bin/python benchmarks/robustness.py`)." if args.quick else "."),
        "",
        "| category | tried | failed | target | met? | time |",
        "|---|---:|---:|---|---|---:|",
    ]
    for o in outcomes:
        met = "skipped" if o.skipped else "n/a (quick run)" if o.met is None else "yes" if o.met else "**no**"
        lines.append(f"| {o.title} | {o.tried:,} {o.unit} | {o.failed:,} | {o.target} | {met} | {o.wall_s:.0f} s |")
    lines += ["", WHAT, ""]
    for o in outcomes:
        lines += [f"## {o.title}", "", *o.lines, ""]
        if o.failures:
            shown = o.failures[:MAX_FAILURES_SHOWN]
            lines += [f"Failures ({o.failed}; the first {len(shown)}):", ""]
            lines += [f"{i + 1}. {f}" for i, f in enumerate(shown)]
            lines.append("")
        elif not o.skipped:
            lines += ["No failures.", ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    # a run of some categories only does not replace the full record: it goes beside it
    everything = {o.key for o in outcomes} >= set(CATEGORIES)
    name = "robustness.md" if everything else f"robustness-{'-'.join(o.key for o in outcomes)}.md"
    (RESULTS / name).write_text("\n".join(lines).rstrip() + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Small counts (minutes, not the full run).")
    parser.add_argument("--only", default=",".join(CATEGORIES), help=f"Comma-separated categories: {','.join(CATEGORIES)}.")
    parser.add_argument("--count", type=int, default=None, help=f"Fuzzed snapshots (default {FUZZ_COUNT:,}; --quick {FUZZ_QUICK}).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the fuzzed snapshots.")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="Processes for the fuzz, threads for the CLI corpus.")
    parser.add_argument("--case", type=int, default=None, help="Print fuzz case I (snapshot and options) and its outcome, then exit.")
    args = parser.parse_args()
    if args.case is not None:
        show_case(args.seed, args.case)
        return
    chosen = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in CATEGORIES]
    if unknown:
        parser.error(f"--only: unknown categories {unknown}; choose from {', '.join(CATEGORIES)}")
    outcomes = []
    for key in CATEGORIES:
        if key in chosen:
            print(f"== {key}", flush=True)
            started = time.perf_counter()
            try:
                outcome = RUNNERS[key](args)
            except Exception as err:  # noqa: BLE001 - a category that breaks is reported, the others still run
                outcome = Outcome(key, key, "checks", "ran to completion")
                outcome.tried = 1
                outcome.fail(f"the category itself failed: {type(err).__name__}: {err}\n```\n{traceback.format_exc()[-2000:]}\n```")
                outcome.met = False
                outcome.wall_s = time.perf_counter() - started
            print(f"   {outcome.tried} tried, {outcome.failed} failed, {outcome.wall_s:.0f} s", flush=True)
            outcomes.append(outcome)
    write_results(outcomes, args, sys.argv[1:])


if __name__ == "__main__":
    main()
