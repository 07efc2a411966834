"""Beyond one machine and with a certificate at any scale (issue 16) -> benchmarks/results/scale.md, scale.png.

Sections (``--sections``; each run keeps the other sections' last rows in benchmarks/results/scale.json):

* ``small``: ASI-like snapshots of 100-400 nodes, several seeds: the exact model's proven optimum
  (HiGHS, 60 s), the relaxation bound (``planner/models/defrag_bound.py``) and IPC, to show how tight the
  bound is and how far IPC is from the optimum.
* ``large``: 1,000 to 37,707 nodes (150,000 with ``--huge``): the bound's time (state build and bound,
  in process), IPC's empty nodes and its gap to the bound, unbudgeted and with 2% of the pods as budget.
* ``cli``: IPC end to end, ``planner defrag SNAPSHOT --method heuristic --out plan.json`` as a child
  process (start-up, reading and checking, planning, validating, writing): wall time and peak memory,
  three runs each up to 37,707 nodes (one at 150,000), and the growth exponent of the wall time.
* ``ray``: the same command with ``--executor ray`` (a local Ray started by the command) against the
  process pool at 5,000 and 37,707 nodes, plans compared; and in one process with Ray already up.
* ``hybrid``: ``--method hybrid --time-limit 300 --executor ray`` on 37,707 nodes: empty nodes gained
  over IPC and the gap left to the bound.

Run: ``.venv/bin/python benchmarks/scale.py [--seeds 3] [--huge] [--sections small,large,cli,ray,hybrid]``
(all sections, with ``--huge``: about 30 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _measure import RESULTS, cached_asi, code_version, machine, run_measured

from planner.engine import DefragOptions, plan_defrag
from planner.limits import MoveBudget, MoveLimits
from planner.models.defrag_bound import empties_bound
from planner.runtime.gc_pause import collector_paused
from planner.snapshot import load_cluster
from planner.state import ClusterState


def small_rows(sizes: list[int], seeds: int) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for nodes in sizes:
        for seed in range(seeds):
            cluster = load_cluster(cached_asi(nodes, seed))
            ipc = plan_defrag(cluster, DefragOptions(method="heuristic", seed=0)).report
            exact = plan_defrag(cluster, DefragOptions(method="exact", solver="highs", time_limit_s=60.0, seed=0, force=True)).report
            relaxed = ipc.relaxation_bound["bound"]
            rows.append(
                {
                    "nodes": nodes,
                    "seed": seed,
                    "ipc": ipc.objective,
                    "exact": exact.objective,
                    "exact_status": exact.status,
                    "relaxation": relaxed,
                    "binding": ipc.relaxation_bound["binding"],
                    "exact_wall_s": exact.wall_s,
                    "ipc_wall_s": ipc.wall_s,
                }
            )
            print(rows[-1], flush=True)
    return rows


def large_rows(sizes: list[int]) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for nodes in sizes:
        cluster = load_cluster(cached_asi(nodes, 0))
        with collector_paused():  # as plan_defrag runs them
            start = time.perf_counter()
            state = ClusterState(cluster)
            built = time.perf_counter()
            bound = empties_bound(state, MoveBudget.of(state, MoveLimits()))
            done = time.perf_counter()
        for budget in (None, max(1, round(0.02 * len(cluster.pods)))):
            report = plan_defrag(cluster, DefragOptions(method="heuristic", seed=0, max_moves=budget)).report
            rows.append(
                {
                    "nodes": nodes,
                    "pods": len(cluster.pods),
                    "budget": budget,
                    "state_s": built - start,
                    "bound_s": done - built,
                    "bound": report.bound,
                    "binding": report.relaxation_bound["binding"],
                    "ipc": report.objective,
                    "gap": report.gap,
                    "ipc_s": report.wall_s,
                    "unbudgeted_bound": bound.bound,
                }
            )
            print(rows[-1], flush=True)
    return rows


PLANNER = str(Path(sys.executable).with_name("planner"))
ROWS = RESULTS / "scale.json"


def cli_run(path: Path, *extra: str) -> tuple[float, float, float, dict]:  # type: ignore[type-arg]
    """``planner defrag PATH --method heuristic --out plan.json EXTRA`` as a child process: (wall s,
    own peak RSS MiB, process-tree peak RSS MiB, the plan)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "plan.json"
        run = run_measured([PLANNER, "defrag", str(path), "--method", "heuristic", "--out", str(out), *extra])
        if run.returncode != 0:
            sys.exit(f"planner defrag {' '.join(extra)} failed on {path}: {run.stderr[-2000:]}")
        return run.wall_s, run.peak_rss_mib, run.peak_tree_rss_mib, json.loads(out.read_text())


def cli_rows(sizes: list[int], repeats: int) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for nodes in sizes:
        path = cached_asi(nodes, 0)
        runs = [cli_run(path) for _ in range(1 if nodes > 40000 else repeats)]
        walls = [r[0] for r in runs]
        plan = runs[0][3]
        rows.append(
            {
                "nodes": nodes,
                "pods": plan["metrics"]["before"]["pods"],
                "walls_s": walls,
                "median_s": statistics.median(walls),
                "rss_mib": max(r[1] for r in runs),
                "tree_rss_mib": max(r[2] for r in runs),
                "vacated": plan["report"]["objective"],
                "bound": plan["report"]["bound"],
                "plan_s": plan["report"]["wall_s"],
            }
        )
        print(rows[-1], flush=True)
    return rows


def growth_exponent(rows: list[dict]) -> float:  # type: ignore[type-arg]
    """Least-squares slope of log(wall) on log(nodes): wall ~ nodes^k."""
    xs = [math.log(r["nodes"]) for r in rows]
    ys = [math.log(r["median_s"]) for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


WARM = """
import json, sys
from planner.engine import DefragOptions, plan_defrag
from planner.snapshot import load_cluster
cluster = load_cluster(sys.argv[1])
plans = [plan_defrag(cluster, DefragOptions(method="heuristic", seed=0, executor=sys.argv[2])) for _ in range(2)]
print(json.dumps({"wall_s": plans[1].report.wall_s, "waves": [[(m.pod, m.from_, m.to) for m in w] for w in plans[1].waves]}))
"""
"""Two plans in one process; prints the second's planning time and waves."""


def ray_rows(sizes: list[int]) -> list[dict]:  # type: ignore[type-arg]
    rows = []
    for nodes in sizes:
        path = cached_asi(nodes, 0)
        process = [cli_run(path, "--executor", "process") for _ in range(2)]
        ray = [cli_run(path, "--executor", "ray") for _ in range(2)]
        # in one process each (Ray already up, as under `planner serve --executor ray`): the second plan
        warm = {}
        for kind in ("process", "ray"):
            done = subprocess.run([sys.executable, "-c", WARM, str(path), kind], capture_output=True, text=True, check=True)
            second = json.loads(done.stdout.strip().splitlines()[-1])
            warm[kind], warm[kind + "_waves"] = second["wall_s"], second["waves"]
        rows.append(
            {
                "nodes": nodes,
                "process_s": [r[0] for r in process],
                "ray_s": [r[0] for r in ray],
                "process_tree_mib": max(r[2] for r in process),
                "ray_tree_mib": max(r[2] for r in ray),
                "same_plan": all(r[3]["waves"] == process[0][3]["waves"] for r in process + ray),
                "warm_process_s": warm["process"],
                "warm_ray_s": warm["ray"],
                "warm_same_plan": warm["process_waves"] == warm["ray_waves"],
                "vacated": process[0][3]["report"]["objective"],
            }
        )
        print({k: v for k, v in rows[-1].items()}, flush=True)
    return rows


def hybrid_rows(nodes: int, seconds: float, allocations: list[float]) -> list[dict]:  # type: ignore[type-arg]
    return [hybrid_row(nodes, seconds, allocation) for allocation in allocations]


def hybrid_row(nodes: int, seconds: float, allocation: float) -> dict:  # type: ignore[type-arg]
    cluster = load_cluster(cached_asi(nodes, 0, allocation))
    ipc = plan_defrag(cluster, DefragOptions(method="heuristic", seed=0, executor="ray")).report
    hybrid = plan_defrag(cluster, DefragOptions(method="hybrid", seed=0, time_limit_s=seconds, executor="ray")).report
    extra = hybrid.model_extra
    row = {
        "nodes": nodes,
        "allocation": allocation,
        "seconds": seconds,
        "ipc": ipc.objective,
        "ipc_moves": ipc.moves,
        "hybrid": hybrid.objective,
        "hybrid_moves": hybrid.moves,
        "bound": hybrid.bound,
        "gap": hybrid.gap,
        "ipc_gap": ipc.gap,
        "wall_s": hybrid.wall_s,
        "rounds": extra["lns_rounds"],
        "neighbourhoods": extra["lns_neighbourhoods"],
        "improved": extra["lns_improved"],
        "gained": extra["lns_gained_empty_nodes"],
        "proven": extra["lns_proven_optimal"],
        "hybrid_ipc_objective": extra["ipc_objective"],
    }
    print(row, flush=True)
    return row


def plot(cli: list[dict], large: list[dict]) -> None:  # type: ignore[type-arg]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.8))
    ax.loglog([r["nodes"] for r in cli], [r["median_s"] for r in cli], "o-", label="IPC end to end (CLI, median)")
    ax.loglog([r["nodes"] for r in cli], [r["plan_s"] for r in cli], "s--", label="of which planning (report.wall_s)")
    bound = [r for r in large if r["budget"] is None]
    ax.loglog([r["nodes"] for r in bound], [r["bound_s"] for r in bound], "^-", label="relaxation bound")
    ax.axhline(20, color="grey", ls=":", lw=0.8, label="20 s target at 37,707 nodes")
    ax.axvline(37707, color="grey", ls="--", lw=0.6)
    ax.set_xlabel("nodes")
    ax.set_ylabel("seconds (2 cores)")
    ax.set_title("Cost against cluster size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "scale.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--huge", action="store_true", help="also 150,000 nodes (large and cli sections)")
    parser.add_argument("--sections", default="small,large,cli,ray,hybrid")
    parser.add_argument("--hybrid-s", type=float, default=300.0)
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    rows = json.loads(ROWS.read_text()) if ROWS.exists() else {}
    sizes = [1000, 5000, 10000, 37707] + ([150000] if args.huge else [])
    if "small" in sections:
        rows["small"] = small_rows([100, 200, 300, 400], args.seeds)
    if "large" in sections:
        rows["large"] = large_rows(sizes)
    if "cli" in sections:
        rows["cli"] = cli_rows(sizes, 3)
    if "ray" in sections:
        rows["ray"] = ray_rows([5000, 37707])
    if "hybrid" in sections:
        rows["hybrid"] = hybrid_rows(37707, args.hybrid_s, [0.7, 0.85])
    rows.setdefault("versions", {}).update({name: code_version() for name in sections})
    RESULTS.mkdir(parents=True, exist_ok=True)
    ROWS.write_text(json.dumps(rows, indent=1))
    lines = render(rows, args)
    (RESULTS / "scale.md").write_text("\n".join(lines))
    if rows.get("cli") and rows.get("large"):
        plot(rows["cli"], rows["large"])
    print("\n".join(lines))


def render(rows: dict, args: argparse.Namespace) -> list[str]:  # type: ignore[type-arg]
    versions = rows.get("versions", {})
    lines = [
        "# Beyond one machine and with a certificate at any scale",
        "",
        (
            f"Machine: {machine()}. Reproduce: `.venv/bin/python benchmarks/scale.py --seeds {args.seeds} --huge` (sections: "
            "`--sections small,large,cli,ray,hybrid`; each section below names the code it ran on). Snapshots: `generate_asi(nodes, seed)` "
            "(ASI-like: 8-GPU nodes, 70% GPU allocation, 40% of pods locked, anti-affinity per job), cached under benchmarks/.cache. The "
            "bound (`planner/models/defrag_bound.py`) holds for every plan within the limits; *binding* names the relaxation's constraint that gives it."
        ),
        "",
    ]
    small, large, cli, ray, hybrid = (rows.get(k) for k in ("small", "large", "cli", "ray", "hybrid"))
    if small:
        lines += [
            "## How tight: against the proven optimum (100-400 nodes)",
            "",
            f"Code: {versions.get('small', '?')}.",
            "",
            (
                "`plan_defrag --method exact --solver highs --time-limit 60` (its status and proven optimum), the relaxation bound, and IPC "
                "(`--method heuristic`, seed 0) on the same snapshot."
            ),
            "",
            "| nodes | seed | exact empty nodes | exact status | relaxation bound | binding | bound - optimum | IPC | IPC - optimum | exact s |",
            "|---:|---:|---:|---|---:|---|---:|---:|---:|---:|",
        ]
        for r in small:
            proven = r["exact_status"] == "optimal"
            lines.append(
                f"| {r['nodes']} | {r['seed']} | {r['exact']:.0f} | {r['exact_status']} | {r['relaxation']} | {r['binding']} | "
                f"{r['relaxation'] - r['exact']:+.0f}{'' if proven else ' (vs incumbent)'} | {r['ipc']:.0f} | {r['ipc'] - r['exact']:+.0f} | "
                f"{r['exact_wall_s']:.1f} |"
            )
        tight = sum(1 for r in small if r["exact_status"] == "optimal" and r["relaxation"] == r["exact"])
        proven = sum(1 for r in small if r["exact_status"] == "optimal")
        lines += ["", f"The bound equals the proven optimum on {tight} of the {proven} instances the solver proved.", ""]
    if large:
        lines += [
            "## At scale: the bound's cost and IPC's gap (seed 0)",
            "",
            f"Code: {versions.get('large', '?')}.",
            "",
            (
                "*state s*: building the array state from the parsed snapshot; *bound s*: the relaxation on it (both in process). IPC: "
                "`plan_defrag --method heuristic` in process (*IPC s* is its report's wall time); *gap* = (bound - IPC) / bound, the "
                "share of the best possible IPC may miss. Budget: none, or 2% of the pods (`--max-moves`)."
            ),
            "",
            "| nodes | pods | budget | state s | bound s | bound | binding | IPC empty nodes | gap | IPC s |",
            "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
        ]
        for r in large:
            budget = "none" if r["budget"] is None else f"{r['budget']:,}"
            lines.append(
                f"| {r['nodes']:,} | {r['pods']:,} | {budget} | {r['state_s']:.2f} | {r['bound_s']:.2f} | {r['bound']:,.0f} | "
                f"{r['binding']} | {r['ipc']:,.0f} | {r['gap']:.4f} | {r['ipc_s']:.1f} |"
            )
        lines.append("")
    if cli:
        exponent = growth_exponent(cli)
        lines += [
            "## IPC end to end: time and memory against size",
            "",
            f"Code: {versions.get('cli', '?')}.",
            "",
            (
                "`planner defrag SNAPSHOT --method heuristic --out plan.json` as a child process (default process pool, one worker per core): "
                "wall time from start to exit (interpreter start-up, reading and checking the snapshot, the bound, IPC, trimming, "
                "validating, writing the plan); three runs (one at 150,000 nodes). *Own peak*: the command's own peak RSS (VmHWM); "
                "*tree peak*: the summed RSS of it and its pool workers, sampled every 50 ms (the forked workers share the parent's pages "
                "copy-on-write, which the sum counts once per process, so it overstates). *plan s*: the planning alone (`report.wall_s`)."
            ),
            "",
            "| nodes | pods | wall s (runs) | median s | plan s | own peak MiB | tree peak MiB | vacated | bound |",
            "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
        ]
        for r in cli:
            lines.append(
                f"| {r['nodes']:,} | {r['pods']:,} | {', '.join(f'{w:.1f}' for w in r['walls_s'])} | {r['median_s']:.1f} | {r['plan_s']:.1f} | "
                f"{r['rss_mib']:,.0f} | {r['tree_rss_mib']:,.0f} | {r['vacated']:,.0f} | {r['bound']:,.0f} |"
            )
        measured = ", ".join(f"{r['nodes']:,}" for r in cli)
        lines += ["", f"Growth: wall time ~ nodes^{exponent:.2f} (least squares on log-log over {measured} nodes). Plot: `scale.png`.", ""]
    if ray:
        lines += [
            "## Ray against the process pool",
            "",
            f"Code: {versions.get('ray', '?')}.",
            "",
            (
                "Cold: `planner defrag SNAPSHOT --method heuristic --executor ray|process` as child processes, two runs each; the Ray runs "
                "start a local Ray (2 CPUs) in the command and stop it at exit. Warm: in one process, the second of two `plan_defrag` calls "
                "(Ray already up and its workers started, as under `planner serve --executor ray`); planning time (`report.wall_s`). "
                "*Same plan*: every run's waves equal the first process-pool run's."
            ),
            "",
            "| nodes | process s (cold) | Ray s (cold) | overhead s | process tree MiB | Ray tree MiB | process s (warm) | Ray s (warm) | warm overhead s | same plan |",
            "|---:|---|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for r in ray:
            overhead = statistics.median(r["ray_s"]) - statistics.median(r["process_s"])
            lines.append(
                f"| {r['nodes']:,} | {', '.join(f'{w:.1f}' for w in r['process_s'])} | {', '.join(f'{w:.1f}' for w in r['ray_s'])} | "
                f"{overhead:+.1f} | {r['process_tree_mib']:,.0f} | {r['ray_tree_mib']:,.0f} | {r['warm_process_s']:.1f} | {r['warm_ray_s']:.1f} | "
                f"{r['warm_ray_s'] - r['warm_process_s']:+.1f} | {'yes' if r['same_plan'] and r['warm_same_plan'] else 'NO'} |"
            )
        lines.append("")
    if hybrid:
        lines += [
            "## Hybrid at scale on a local Ray",
            "",
            f"Code: {versions.get('hybrid', '?')}.",
            "",
            (
                "`plan_defrag --method hybrid --time-limit S --executor ray` on 37,707-node snapshots (GPU allocation 0.7, where IPC "
                "is already proven optimal, and 0.85, where it is not), a local Ray of 2 CPUs (IPC, then large-neighbourhood search "
                "with the exact model, neighbourhoods as Ray tasks), against IPC alone on the same executor. *gap* = (bound - empty "
                "nodes) / bound; *settled*: neighbourhoods whose end state reaches their proven bound."
            ),
            "",
            "| nodes | allocation | S | IPC empty nodes | IPC gap | hybrid empty nodes | gained | hybrid gap | bound | moves IPC / hybrid | LNS rounds | neighbourhoods (improved, settled) | wall s |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|",
        ]
        for r in hybrid:
            lines.append(
                f"| {r['nodes']:,} | {r.get('allocation', 0.7):g} | {r['seconds']:.0f} | {r['ipc']:,.0f} | {r['ipc_gap']:.4f} | {r['hybrid']:,.0f} | {r['hybrid'] - r['ipc']:+,.0f} | "
                f"{r['gap']:.4f} | {r['bound']:,.0f} | {r['ipc_moves']:,} / {r['hybrid_moves']:,} | {r['rounds']} | "
                f"{r['neighbourhoods']} ({r['improved']}, {r['proven']}) | {r['wall_s']:.0f} |"
            )
        lines.append("")
    return lines


if __name__ == "__main__":
    main()
