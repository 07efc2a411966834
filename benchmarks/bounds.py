"""The at-scale bound on empty nodes against proven optima (issue 45): writes benchmarks/results/bounds.md.

For every instance: the closed-form relaxation, the class LP (``planner/models/defrag_bound_lp.py``),
the bound the plan reports (the smaller) and its wall time on the state the engine plans on (pools
applied), IPC's empty nodes, and the exact method's plan (``--method exact``, HiGHS, the time limit
given). An instance counts only when the exact plan reaches the solver's proven bound (its optimum);
the others are listed apart. The ratio is bound / optimum; every row also checks bound >= optimum.

Families, 200-1,000 nodes:

* ``asi``: the ASI-like generator at 60, 70, 80 and 85% allocation, 200 and 300 nodes;
* ``locked``: the locked-heavy repro of issue 45 (``instances/asi-500-locked.json.gz``, 500 nodes,
  242 of 641 pods locked, 1- and 8-GPU nodes, switch-required gangs) and subsets of its switches
  (each switch kept with probability 0.6, seeded);
* ``openb``: the openb 2023 trace replayed (default pod list) to 12,500,000 s, 200 random busy nodes
  with their pods, seeded;
* ``share``: the share-heavy openb pod list (``gpushare40``) replayed the same way, 200 random busy nodes.

The openb and share instances are also measured with ``move_once=False`` (rows "move once off"),
where the exact method is run on each GPU model's piece (``pieces_proof``) rather than the whole: the
whole-snapshot solves do not close there in minutes, and under the default ``move_once=True`` the
router makes no detours and drops moves of some exact end states, so the optimum of the default problem
can sit below the end-state optimum that every bound here (at scale and the solver's) relaxes to.

Seeds 0-2 (ASI: seeds 0-1 per allocation and size) are the measured set; seeds 7-8 are held out (never
looked at while the bound was built; ASI: seed 7 at 200 nodes per allocation; openb, share: seed 7)
and reported apart. ``--scale`` adds the 37,707-node rows: the ASI-like
generator at 80% and the locked repro tiled 75 times (37,500 nodes, each copy under its own switches
and spine) plus 207 nodes of one more copy: the bound's wall time end to end (state and bound) and
the best plan found (IPC, and the hybrid for 60 s), with no exact optimum.

Exact results are cached in benchmarks/.cache/bounds.jsonl (keyed by instance and time limit), so a
rerun after a change to the bound re-solves nothing.

    .venv/bin/python benchmarks/bounds.py [--time-limit 300] [--quick] [--scale]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import CACHE, REPO, RESULTS, cached_asi, machine

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.engine.defrag.methods import hold_pods
from planner.heuristics.trim import end_state
from planner.instances.asi import generate_asi
from planner.limits import MoveBudget
from planner.models.defrag_bound import closed_form_bound, empties_bound
from planner.models.defrag_exact import ExactOptions, solve_exact
from planner.pools import apply_pools
from planner.snapshot import load_cluster, parse_cluster
from planner.state import ClusterState
from planner.waves import target_to_waves

REPRO = REPO / "instances" / "asi-500-locked.json.gz"
LOG = CACHE / "bounds.jsonl"
MEASURED, HELD_OUT = (0, 1, 2), (7, 8)
PIECE_SOLVERS = {"openb": ("highs",), "share": ("cpsat",)}
"""The back-end of the pieces' solves per family (with several, the better plan and the smaller bound count), from
measurements at 40 s a piece with both joins: openb-200-s0, HiGHS 52 (the optimum) and CP-SAT 51; share-200-s0,
CP-SAT 67 (the relaxed T4 piece's 28 proven, so the optimum) and HiGHS 65. Both on every instance would double the
pieces' time; the held-out seed 7 shows whether the choice holds."""
TARGET = 0.05


def locked_repro() -> Cluster:
    return parse_cluster(gzip.decompress(REPRO.read_bytes()))


def switch_subset(base: Cluster, seed: int, keep: float = 0.6) -> Cluster:
    """Each switch of ``base`` kept with probability ``keep`` (at least one), with its nodes' pods and their jobs."""
    rng = np.random.default_rng(seed)
    switches = sorted({n.asw for n in base.nodes if n.asw is not None})
    kept = {s for s in switches if rng.random() < keep} or {switches[seed % len(switches)]}
    nodes = [n for n in base.nodes if n.asw in kept]
    names = {n.name for n in nodes}
    pods = [p for p in base.pods if p.node in names]
    jobs = {p.job for p in pods}
    return Cluster(time_s=base.time_s, nodes=nodes, pods=pods, jobs=[j for j in base.jobs if j.name in jobs])


def busy_subset(base: Cluster, nodes: int, seed: int) -> Cluster:
    """``nodes`` random busy nodes of ``base`` with the pods on them."""
    rng = np.random.default_rng(seed)
    busy = sorted({p.node for p in base.pods if p.node is not None})
    names = set(rng.choice(busy, size=min(nodes, len(busy)), replace=False).tolist())
    pods = [p for p in base.pods if p.node in names]
    jobs = {p.job for p in pods}
    return Cluster(time_s=base.time_s, nodes=[n for n in base.nodes if n.name in names], pods=pods, jobs=[j for j in base.jobs if j.name in jobs])


def tiled(base: Cluster, copies: int, extra_nodes: int) -> Cluster:
    """``copies`` of ``base`` (names, switches and spines suffixed per copy) and the first ``extra_nodes`` nodes of one more."""
    data = json.loads(base.model_dump_json(by_alias=True, exclude_none=True))
    nodes, pods, jobs = [], [], []
    for k in range(copies + (1 if extra_nodes else 0)):
        keep = {n["name"] for n in data["nodes"][: extra_nodes if k == copies else None]}
        suffix = f"-c{k}"
        for n in data["nodes"]:
            if n["name"] in keep:
                nodes.append({**n, "name": n["name"] + suffix, "asw": n["asw"] + suffix, "spine": n["spine"] + suffix})
        kept_pods = [p for p in data["pods"] if p.get("node") in keep]
        names = {p.get("job") for p in kept_pods}
        pods += [{**p, "name": p["name"] + suffix, "node": p["node"] + suffix, **({"job": p["job"] + suffix} if p.get("job") else {})} for p in kept_pods]
        jobs += [{**j, "name": j["name"] + suffix} for j in data["jobs"] if j["name"] in names]
    return parse_cluster(json.dumps({**data, "nodes": nodes, "pods": pods, "jobs": jobs}))


def instances(seeds: tuple[int, ...], quick: bool) -> Iterator[tuple[str, str, Any]]:
    """(family, name, a function making the cluster) for ``seeds``."""
    held = seeds == HELD_OUT
    for allocation in (0.6, 0.7, 0.8, 0.85)[: 2 if quick else None]:
        for nodes in (200, 300)[: 1 if quick or held else None]:
            for seed in seeds[: 1 if held else 2]:
                yield "asi", f"asi-{nodes}-a{allocation:g}-s{seed}", lambda n=nodes, s=seed, a=allocation: generate_asi(nodes=n, seed=s, allocation=a)
    if seeds == MEASURED:
        yield "locked", "locked-repro-500", locked_repro
    for seed in seeds[: 1 if quick else None]:
        yield "locked", f"locked-switches-s{seed}", lambda s=seed: switch_subset(locked_repro(), s)
    for family, pods, size in (("openb", "default", 200), ("share", "gpushare40", 200)):
        for seed in seeds[: 1 if quick or held else None]:
            yield family, f"{family}-{size}-s{seed}", lambda p=pods, z=size, s=seed: busy_subset(_openb(p), z, s)


_OPENB: dict[str, Cluster] = {}


def _openb(pods: str) -> Cluster:
    from planner.instances.openb import generate_openb  # deferred: the openb trace, read only for its families

    if pods not in _OPENB:
        _OPENB[pods] = generate_openb(pods=pods, at_s=12_500_000, departures=False, seed=0)
    return _OPENB[pods]


def measure_bound(cluster: Cluster, move_once: bool = True) -> dict[str, Any]:
    """The bound on the state the engine plans on (pools applied, pods held), timed end to end."""
    start = time.perf_counter()
    options = DefragOptions(move_once=move_once)
    pooled, _ = apply_pools(cluster, options.pools())
    state = ClusterState(pooled)
    limits = options.limits(options.scope_nodes(pooled))
    hold_pods(pooled, state, limits)
    budget = MoveBudget.of(state, limits)
    got = empties_bound(state, budget)
    wall = time.perf_counter() - start
    closed = closed_form_bound(state, budget)
    return {"bound": got.bound, "method": got.method, "class_lp": got.class_lp, "closed": closed.bound, "note": got.note, "bound_s": wall}


def pieces_proof(cluster: Cluster, seconds: float, move_once: bool = True, solver: str = "highs") -> dict[str, Any]:
    """The exact method on pieces (``openb`` and ``share``: no locked pods, and under the default pool
    policy a placed GPU pod keeps its GPU model, so only CPU-only pods can leave a GPU model's nodes;
    ``benchmarks/openb_gap.py``'s docstring gives the argument):

    * *upper*: the sum over GPU models of the exact solver's proven bound on the piece without its
      CPU-only pods (the relaxed piece; at most the piece's at-scale bound): every plan of the whole
      ends with at most that many empty nodes on the piece's nodes;
    * *found*: the better of two joins, each one target of the whole snapshot routed into
      make-before-break waves within the default limits on the whole (``waves.target_to_waves``, as
      the exact method routes its own end state; moves it drops are not counted): the empty nodes of
      that plan. *restricted*: the end states of the exact plans of the pieces with their CPU-only
      pods moving only inside them. *relaxed*: the end states of the relaxed pieces' exact plans (GPU
      pods only) with the CPU-only pods placed again across the whole (``with_cpu_pods_repacked``),
      as the whole lets them go to any GPU model's nodes. Each solve's end state is replaced by IPC's
      where IPC's empties more nodes. ``found_move_once``: the better join routed without a detour
      (``move_once=True``), a plan of the default problem as well.

    found == upper proves the optimum without the at-scale bound. ``move_once``: the option of that
    name (default on: no pod moves twice, so no detour); off lets the router move a pod again. ``solver``:
    the back-end of the pieces' solves (2 threads or workers; ``PIECE_SOLVERS`` says which run: on
    share-200-s0's T4 piece alone, from IPC's 25, HiGHS found 26 in 40 s and CP-SAT 27, proven, in 60 s,
    yet CP-SAT's pieces at 40 s gave no better plan of any whole snapshot measured)."""
    from openb_gap import pieces  # deferred: the per-GPU-model pieces, only for the families they fit

    options = DefragOptions(move_once=move_once)
    pooled, _ = apply_pools(cluster, options.pools())
    whole = ClusterState(pooled)
    limits = options.limits(options.scope_nodes(pooled))
    hold_pods(pooled, whole, limits)
    start = time.perf_counter()
    upper, target, relaxed_target = 0, {}, {}
    for piece in pieces(pooled):
        ipc = plan_defrag(piece.restricted, DefragOptions(method="heuristic", workers=1, move_once=move_once))  # the warm start
        where = {p.name: p.node for p in piece.restricted.pods if p.node is not None} | {m.pod: m.to for wave in ipc.waves for m in wave}
        bounds = []
        for part in (piece.relaxed, piece.restricted) if len(piece.restricted.pods) > len(piece.relaxed.pods) else (piece.restricted,):
            state = ClusterState(part)
            budget = MoveBudget.of(state, options.limits(options.scope_nodes(part)))  # the whole's rules (move once), per-wave limits of the piece
            hint = {state.pod_index[pod]: state.node_index[node] for pod, node in where.items() if pod in state.pod_index}
            out = solve_exact(state, ExactOptions(solver=solver, time_limit_s=seconds, solver_workers=2, seed=0, phase_one_share=0.9), budget, hint)
            at_scale = empties_bound(state, MoveBudget.of(state)).bound
            bounds.append(at_scale if out.proof.empties_upper is None else min(at_scale, out.proof.empties_upper))
            end = end_state(state, out.waves or [])
            found = {state.pod_names[p]: state.node_names[int(end.pod_node[p])] for p in range(len(state.pod_names)) if end.pod_node[p] >= 0}
            if part is piece.relaxed:
                start_end = state.clone()  # IPC's end state on the relaxed piece: its GPU pods where IPC's plan puts them
                for pod, node in where.items():
                    if pod in state.pod_index:
                        start_end.move(state.pod_index[pod], state.node_index[node])
                if int((end.pods_per_node == 0).sum()) < int((start_end.pods_per_node == 0).sum()):
                    found = {pod: node for pod, node in where.items() if pod in state.pod_index}
                relaxed_target |= {whole.pod_index[pod]: whole.node_index[node] for pod, node in found.items()}
            if part is piece.restricted:
                ipc_empties = int(ipc.report.objective or 0) if ipc.report is not None else 0
                if int((end.pods_per_node == 0).sum()) < ipc_empties:
                    found = where  # the exact plan (or none) empties fewer nodes than IPC's: IPC's end state
                target |= {whole.pod_index[pod]: whole.node_index[node] for pod, node in found.items()}
                if part is not piece.relaxed and len(piece.restricted.pods) == len(piece.relaxed.pods):  # no CPU-only pods: one solve
                    relaxed_target |= {whole.pod_index[pod]: whole.node_index[node] for pod, node in found.items()}
        upper += bounds[0]
    joined, once = {}, {}
    once_limits = DefragOptions(move_once=True).limits(options.scope_nodes(pooled))
    for name, candidate in (("restricted", target), ("relaxed", with_cpu_pods_repacked(whole, relaxed_target))):
        scratch = whole.clone()
        routed = target_to_waves(scratch, candidate, MoveBudget.of(whole, limits))
        joined[name] = (int((scratch.pods_per_node == 0).sum()), len(routed.dropped))
        scratch = whole.clone()
        target_to_waves(scratch, candidate, MoveBudget.of(whole, once_limits))  # no detour: a plan of the default problem too
        once[name] = int((scratch.pods_per_node == 0).sum())
        if os.environ.get("BOUNDS_DEBUG"):
            ideal = whole.clone()
            for q, n in candidate.items():
                ideal.move(q, n)
            print(f"    join {name}: {len(candidate)} pods, end-state empties {int((ideal.pods_per_node == 0).sum())}, routed {joined[name]}", flush=True)
    best = max(joined, key=lambda name: joined[name][0])
    return {
        "pieces_upper": upper,
        "pieces_found": joined[best][0],
        "pieces_dropped": joined[best][1],
        "pieces_join": best,
        "pieces_restricted_found": joined["restricted"][0],
        "pieces_relaxed_found": joined["relaxed"][0],
        "pieces_found_move_once": max(once.values()),
        "pieces_s": round(time.perf_counter() - start, 1),
    }


def with_cpu_pods_repacked(whole: ClusterState, gpu_target: dict[int, int]) -> dict[int, int]:
    """A target of the whole snapshot from the relaxed pieces' end states (``gpu_target``: every GPU
    pod's node): the nodes they leave without a GPU pod are to end empty, so each CPU-only pod on one
    of them, or on a node its GPU pods' arrivals put over its CPUs or memory (its largest CPU-only
    pods first until it fits), is placed again, largest CPU request first, on a node that keeps a GPU
    pod: its home if the rules let it stay, else the one with the least CPU left that takes it (every
    rule, ``fits``); a pod no such node takes goes to the fullest node meant to be empty that takes it
    (one empty node fewer), else stays home. The relaxed pieces let CPU-only pods go anywhere, as the
    whole does, which the restricted pieces do not."""
    end = whole.clone()
    gpu_pods = sorted(gpu_target)
    for p in gpu_pods:
        end.unplace(p)
    for p in gpu_pods:
        end.place(p, gpu_target[p])
    keeps = np.zeros(len(end.node_names), dtype=bool)
    keeps[[gpu_target[p] for p in gpu_pods]] = True
    cpu_pods = [p for p in range(len(end.pod_names)) if end.pod_node[p] >= 0 and p not in gpu_target and not end.pod_locked[p]]
    again = [p for p in cpu_pods if not keeps[int(end.pod_node[p])]]
    for n in np.flatnonzero(keeps).tolist():
        here = sorted((p for p in end.node_pods[n] if p not in gpu_target and not end.pod_locked[p]), key=lambda p: (-end.pod_cpus[p], p))
        while here and (end.used_cpus[n] > end.cap_cpus[n] + 1e-9 or end.used_mem[n] > end.cap_mem[n] + 1e-9):
            again.append(here.pop(0))
    for p in again:
        end.unplace(p)
    for p in sorted(again, key=lambda p: (-end.pod_cpus[p], p)):
        home = int(whole.pod_node[p])
        if keeps[home] and end.fits(p, home):
            end.place(p, home)
            continue
        options = end.feasible_nodes(p)
        for pool in (options & keeps, options & ~keeps):
            nodes = np.flatnonzero(pool)
            if len(nodes):
                left = end.cap_cpus[nodes] - end.used_cpus[nodes]
                n = int(nodes[np.lexsort((nodes, left))[0]])
                end.place(p, n)
                keeps[n] = True
                break
        else:
            end.place(p, home)
    return {p: int(end.pod_node[p]) for p in range(len(end.pod_names)) if end.pod_node[p] >= 0 and not end.pod_locked[p]}


def load_log() -> dict[str, dict]:
    done: dict[str, dict] = {}
    if LOG.exists():
        for line in LOG.read_text().splitlines():
            row = json.loads(line)
            done[row["key"]] = row
    return done


def run_exact(done: dict, name: str, cluster: Cluster, time_limit: float) -> dict:
    """The exact plan's empty nodes and whether it reaches the solver's own proven bound (cached)."""
    key = f"{name}|{time_limit:g}"
    if key in done:
        return done[key]
    start = time.perf_counter()
    plan = plan_defrag(cluster, DefragOptions(method="exact", solver="highs", time_limit_s=time_limit, solver_workers=2, workers=1, force=True))
    extra = plan.report.model_extra or {}
    first = extra["solves"][0]
    row = {
        "key": key,
        "empties": int(plan.report.objective or 0),
        "solver_bound": first.get("bound"),
        "proven": first.get("bound") is not None and int(first["bound"]) == int(plan.report.objective or 0),
        "ipc": extra.get("ipc_objective"),
        "exact_s": round(time.perf_counter() - start, 1),
    }
    CACHE.mkdir(parents=True, exist_ok=True)
    with LOG.open("a") as f:
        f.write(json.dumps(row) + "\n")
    done[key] = row
    return row


def run_pieces(done: dict, name: str, cluster: Cluster, seconds: float, move_once: bool, solver: str) -> dict:
    """``pieces_proof`` (cached like the exact results)."""
    key = f"{name}|pieces-joined|move_once={move_once}|{solver}|{seconds:g}"  # joined: both joins (``pieces_proof``)
    if key not in done:
        done[key] = {"key": key, **pieces_proof(cluster, seconds, move_once, solver)}
        CACHE.mkdir(parents=True, exist_ok=True)
        with LOG.open("a") as f:
            f.write(json.dumps(done[key]) + "\n")
    return done[key]


def _prove(row: dict[str, Any], name: str) -> None:
    """Set the row's ratio where its optimum is proven, checking bound >= optimum."""
    if row["optimum"] is not None:
        assert row["bound"] >= row["optimum"], f"{name}: bound {row['bound']} below the proven optimum {row['optimum']}"
        row["ratio"] = row["bound"] / max(row["optimum"], 1)


def measure(done: dict, family: str, name: str, make: Any, time_limit: float, pieces_s: float) -> list[dict[str, Any]]:
    """The instance's row; for ``openb`` and ``share`` also a row under ``move_once=False`` whose optimum
    the exact method proves on pieces (``pieces_proof``)."""
    cluster = make()
    row = {
        "family": family,
        "instance": name,
        "nodes": len(cluster.nodes),
        "pods": sum(1 for p in cluster.pods if p.node),
        "locked": sum(1 for p in cluster.pods if p.locked),
    }
    base = dict(row)
    row |= measure_bound(cluster)
    exact = run_exact(done, name, cluster, time_limit)
    runs = [run_pieces(done, name, cluster, pieces_s, False, solver) for solver in PIECE_SOLVERS.get(family, ())]
    # the pieces' joined plans routed without a detour are plans of the default problem (move once on) as well
    once = max([got["pieces_found_move_once"] for got in runs], default=0)
    best = max(exact["empties"], once)
    proven = exact["proven"] and exact["empties"] == best or best == row["bound"]
    row |= {"optimum": best if proven else None, "exact": best, "exact_s": exact["exact_s"], "ipc": exact["ipc"]}
    row["proof"] = ("exact" if exact["proven"] and exact["empties"] == best else "pieces plan meets bound") if proven else ""
    _prove(row, name)
    print(
        f"  {name}: bound {row['bound']} ({row['method']}, closed {row['closed']}) in {row['bound_s']:.2f} s; exact {exact['empties']} "
        f"proven={exact['proven']}" + (f"; pieces under move once {once}" if runs else ""),
        flush=True,
    )
    rows = [row]
    if runs:
        off = base | {"family": f"{family}, move once off", "instance": f"{name}, move once off"} | measure_bound(cluster, move_once=False)
        # the best of the back-ends' plans (each a plan of the whole) and of the whole's exact plan (move once on is a
        # plan with it off too), and the smallest of their pieces' proven bounds (each a bound of the whole)
        best = max(exact["empties"], *(got["pieces_found"] for got in runs))
        upper = min(got["pieces_upper"] for got in runs)
        proven = best == min(upper, off["bound"])
        off |= {"optimum": best if proven else None, "exact": best, "exact_s": sum(got["pieces_s"] for got in runs), "ipc": None}
        off["proof"] = "exact on pieces" if proven and best == upper else "plan meets bound" if proven else ""
        _prove(off, off["instance"])
        pieces = ", ".join(
            f"{solver} found {got['pieces_found']} (join of the {got['pieces_join']} pieces) upper {got['pieces_upper']}"
            for solver, got in zip(PIECE_SOLVERS[family], runs)
        )
        print(f"  {off['instance']}: bound {off['bound']}; pieces {pieces}; best {best}, proven={proven}", flush=True)
        rows.append(off)
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| family | instance | nodes | pods (locked) | closed form | class LP | bound | optimum | proof | bound / optimum | bound s | IPC | exact s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        optimum = f"not proven (best plan {r['exact']}: bound / best {r['bound'] / max(r['exact'], 1):.3f})" if r["optimum"] is None else str(r["optimum"])
        ratio = "" if r.get("ratio") is None else f"{r['ratio']:.3f}"
        lines.append(
            f"| {r['family']} | {r['instance']} | {r['nodes']} | {r['pods']} ({r['locked']}) | {r['closed']} | {r['class_lp']} | {r['bound']} | {optimum} | "
            f"{r['proof']} | {ratio} | {r['bound_s']:.2f} | {'' if r['ipc'] is None else r['ipc']} | {r['exact_s']:.0f} |"
        )
    return lines


def summary(rows: list[dict]) -> list[str]:
    """Per family: the proven instances' worst and mean bound / optimum; for the others, bound / best plan
    found, which is at least bound / optimum (the optimum is at least the best plan)."""
    lines = [
        "| family | proven instances | worst bound / optimum | mean | unproven | worst bound / best plan (unproven) | slowest bound s | within 5% |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == family]
        proven = [r["ratio"] for r in mine if r.get("ratio") is not None]
        others = [r["bound"] / max(r["exact"], 1) for r in mine if r.get("ratio") is None]
        slowest = max(r["bound_s"] for r in mine)
        worst, mean = (f"{max(proven):.3f}", f"{statistics.mean(proven):.3f}") if proven else ("", "")
        if proven and max(proven) > 1 + TARGET:
            verdict = "no"
        elif others and max(others) > 1 + TARGET:
            verdict = "proven ones yes; not shown on the others" if proven else "not shown"
        else:
            verdict = "yes" + (" (the unproven ones too: bound / best plan)" if others else "")
        lines.append(f"| {family} | {len(proven)} | {worst} | {mean} | {len(others)} | {f'{max(others):.3f}' if others else ''} | {slowest:.2f} | {verdict} |")
    return lines


def scale_rows() -> list[str]:
    """The 37,707-node rows: bound end to end, IPC's plan and the hybrid's (60 s; its start is the
    better of IPC and repack-then-IPC), the best of them against the bound. Times: wall and CPU
    (this process and its workers), with the 1-minute load average."""
    lines = [
        "| instance | nodes | bound | method | closed form | bound s (cpu) | IPC | IPC s (cpu) | hybrid (start) | hybrid s (cpu) | bound / best | load |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, make in (
        ("asi-37707-a0.8-s0", lambda: load_cluster(cached_asi(37_707, 0, 0.8))),
        ("locked-tiled-37707", lambda: tiled(locked_repro(), 75, 207)),
    ):
        cluster = make()
        cpu = _cpu_s()
        got = measure_bound(cluster)
        bound_cpu = _cpu_s() - cpu
        plans = {}
        for method in ("heuristic", "hybrid"):
            start, cpu = time.perf_counter(), _cpu_s()
            plan = plan_defrag(cluster, DefragOptions(method=method, workers=2, time_limit_s=60.0))
            plans[method] = (int(plan.report.objective or 0), time.perf_counter() - start, _cpu_s() - cpu, plan.report.model_extra or {})
            assert got["bound"] >= plans[method][0]
        (ipc, ipc_s, ipc_cpu, _), (hybrid, hybrid_s, hybrid_cpu, extra) = plans["heuristic"], plans["hybrid"]
        best = max(ipc, hybrid)
        print(f"  {name}: bound {got['bound']} in {got['bound_s']:.1f} s, IPC {ipc} in {ipc_s:.0f} s, hybrid {hybrid} in {hybrid_s:.0f} s", flush=True)
        lines.append(
            f"| {name} | {len(cluster.nodes):,} | {got['bound']:,} | {got['method']} | {got['closed']:,} | {got['bound_s']:.1f} ({bound_cpu:.1f}) | "
            f"{ipc:,} | {ipc_s:.0f} ({ipc_cpu:.0f}) | {hybrid:,} ({extra.get('start')}) | {hybrid_s:.0f} ({hybrid_cpu:.0f}) | "
            f"{got['bound'] / max(best, 1):.3f} | {os.getloadavg()[0]:.1f} |"
        )
        if got["note"]:
            lines.append(f"| | | note: {got['note']} | | | | | | | | | |")
    return lines


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (the workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=300.0, help="exact method's time limit per instance (s)")
    parser.add_argument("--pieces-time-limit", type=float, default=40.0, help="openb, share: the exact method's time limit per piece (s)")
    parser.add_argument("--quick", action="store_true", help="a few instances (to test the script)")
    parser.add_argument("--scale", action="store_true", help="add the 37,707-node rows")
    parser.add_argument("--only", default="", help="only instances whose name contains one of these (comma-separated; to test the script)")
    parser.add_argument("--out", default=str(RESULTS / "bounds.md"))
    args = parser.parse_args()
    done = load_log()
    wanted = args.only.split(",")
    measured = [
        row
        for item in instances(MEASURED, args.quick)
        if any(w in item[1] for w in wanted)
        for row in measure(done, *item, args.time_limit, args.pieces_time_limit)
    ]
    held = [
        row
        for item in instances(HELD_OUT, args.quick)
        if any(w in item[1] for w in wanted)
        for row in measure(done, *item, args.time_limit, args.pieces_time_limit)
    ]
    proven = [r for r in measured if r.get("ratio") is not None]
    worst = max(proven, key=lambda r: r["ratio"]) if proven else None
    distinct = {r["instance"].split(",")[0] for r in proven}
    families = sorted({r["family"].split(",")[0] for r in proven})
    solvers = ", ".join(f"{family} {'/'.join(names)}" for family, names in PIECE_SOLVERS.items())
    flags = (" --quick" if args.quick else "") + (" --scale" if args.scale else "") + (f" --only {args.only}" if args.only else "")
    lines = [
        "# The bound on empty nodes against proven optima (issue 45)",
        "",
        f"Machine: {machine()}. Reproduce: `.venv/bin/python benchmarks/bounds.py --time-limit {args.time_limit:g}{flags}` (exact results cached in "
        + "`benchmarks/.cache/bounds.jsonl`).",
        "",
        *(
            ["**A reduced run** (to test the script), not the target set: `.venv/bin/python benchmarks/bounds.py --time-limit 300 --scale` measures it.", ""]
            if args.only or args.quick
            else []
        ),
        "*bound*: what a defrag plan reports (`report.bound` when no solver proves less): the smaller of the closed-form relaxation",
        "(`planner/models/defrag_bound.py`) and the class LP (`planner/models/defrag_bound_lp.py`, proven in exact arithmetic), on the",
        "state the engine plans on (default pools). *bound s*: its wall time end to end (pools, state, both bounds). *optimum*: the",
        f"exact method's plan (HiGHS, {args.time_limit:g} s) when it reaches the solver's proven bound (*proof* exact), or (openb, share) the",
        "pieces' joined plan below routed without a detour, a plan of this problem too, when it reaches the bound (*proof* pieces plan",
        "meets bound); other rows are not counted, and show the best plan found against the bound. *move once off* rows (openb, share): the same instance with",
        "`move_once=False` (a pod may move twice, so the router may make detours), solved by the exact method on each GPU model's",
        f"piece ({solvers}, {args.pieces_time_limit:g} s a piece; `pieces_proof` says why the pieces' bounds add up to a bound of the whole),",
        "joined (the restricted pieces' plans, or the relaxed pieces' with the CPU-only pods placed again across the whole) and routed on the whole: *proof* exact on pieces when the plan reaches the pieces' proven bounds, *plan meets bound* when it",
        "reaches the at-scale bound (so that is the optimum). Every proven row is checked: bound >= optimum.",
        "",
        "## Summary (measured seeds)",
        "",
        *summary(measured),
        "",
        f"Worst: {worst['instance']} at {worst['ratio']:.3f} (target <= {1 + TARGET:.2f}); {len(proven)} proven rows: "
        f"{len(distinct)} distinct instances (a *move once off* row is an instance under `--no-move-once`) in "
        f"{len(families)} families ({', '.join(families)})."
        if worst
        else "No instance proven.",
        "",
        "## Held-out seeds",
        "",
        *summary(held),
        "",
        "## Every instance",
        "",
        *table(measured),
        "",
        "Held out:",
        "",
        *table(held),
    ]
    if args.scale:
        lines += ["", "## 37,707 nodes (no exact optimum: against the best plan found)", "", *scale_rows()]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
