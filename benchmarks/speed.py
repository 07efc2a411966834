"""Issue 62: this tree against a fixed baseline commit, side by side in one run -> benchmarks/results/speed.md.

Each side runs as a child process with ``PYTHONPATH`` at its own tree and the same interpreter, on the
same input files; the runs of the two sides alternate (which side goes first alternates too), so the
load of a shared machine hits both alike. What counts are the ratios; absolute times are reported too,
with the machine's load average.

* ``defrag``: ``planner defrag SNAPSHOT --out plan.json`` end to end at 37,707 nodes on three families
  (the own ASI family seed 0, a held-out ASI seed 7, and a locked-heavy family: 70% locked pods placed
  by the random scheduler, seed 3): wall, CPU (user+sys of the command and its workers), peak RSS
  (the command's own VmHWM) and the vacated nodes of each side's plan (same default options).
* ``preempt``: ``plan_preempt`` (decision, plan, validation, provenance) with ``spotgpu`` on a prebuilt
  ``PreemptState``: 1,000 nodes holding 10,000 spot pods (benchmarks/preempt.py's cluster) and 37,707
  nodes; p50/p90/p99 over the decisions.
* ``cli``: CPU time (user+sys) of ``planner --help`` and ``planner validate`` on the bundled 16-node
  kubectl example and a plan of it.

Run: ``.venv/bin/python benchmarks/speed.py --base /work/wt-speed-base [--repeats 3] [--sections defrag,preempt,cli]``
(the baseline tree: ``git worktree add /work/wt-speed-base 2e0b473``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from _measure import _PEAK_MARK, _PEAK_WRAPPER, CACHE, RESULTS, code_version, machine

PYTHON = sys.executable
PLANNER = str(Path(PYTHON).parent / "planner")
NODES = 37_707
FAMILIES = {
    "asi seed 0 (own family)": ["asi", "--nodes", str(NODES), "--seed", "0"],
    "asi seed 7 (held out)": ["asi", "--nodes", str(NODES), "--seed", "7"],
    "locked-heavy (70% locked, random scheduler, seed 3)": ["asi", "--nodes", str(NODES), "--seed", "3", "--locked", "0.7", "--scheduler", "random"],
}


BASELINE_POOLS = "this tree, the baseline's pools"
SIDE_FLAGS = {BASELINE_POOLS: ["--allow-product-change", "--allow-cpu-pods-on-gpu-nodes"]}
"""The baseline has no pool policy: it moves pods across GPU products and CPU pods onto GPU nodes.
This tree keeps both by default (fewer vacated nodes, rightly); the side with these flags plans
under the baseline's pool options, the one the targets compare with."""


@dataclass
class Sample:
    wall_s: float
    cpu_s: float
    peak_mib: float
    returncode: int
    stdout: str
    stderr: str


def run_side(tree: Path, argv: list[str], cwd: Path) -> Sample:
    """``argv`` (a Python script and its arguments) under ``tree``'s planner: wall, user+sys CPU of it
    and its reaped workers, and its own peak RSS (VmHWM at exit)."""
    # bytecode cached per tree outside it, as an installed package has it (a shell with PYTHONDONTWRITEBYTECODE
    # set compiled every module on every call: 0.05 s of CPU more for `planner validate`)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(tree), PYTHONPYCACHEPREFIX=str(CACHE / "pycache" / tree.name))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([PYTHON, "-c", _PEAK_WRAPPER, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stderr, peak_kib = err.read(), usage.ru_maxrss
        if _PEAK_MARK in stderr:
            stderr, _, mark = stderr.rpartition(_PEAK_MARK)
            peak_kib = int(mark.split()[0])
        return Sample(wall, usage.ru_utime + usage.ru_stime, peak_kib / 1024, os.waitstatus_to_exitcode(status), out.read(), stderr)


def snapshot(name: str, args: list[str]) -> Path:
    """The family's snapshot, generated once by this tree's generator (both sides read the same file)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / ("speed-" + "-".join(a.strip("-") for a in args) + ".json")
    if not path.exists():
        sample = run_side(REPO, [PLANNER, "generate", *args, "--out", str(path)], CACHE)
        if sample.returncode:
            raise SystemExit(f"generating {name} failed: {sample.stderr[-2000:]}")
    return path


def alternate(repeats: int, sides: dict[str, Path], measure) -> dict[str, list]:
    """``measure(side, tree)`` ``repeats`` times per side, the sides interleaved, the first side alternating."""
    names = list(sides)
    results: dict[str, list] = {name: [] for name in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            results[name].append(measure(name, sides[name]))
            print(f"  {name} run {r + 1}: {results[name][-1]}", flush=True)
    return results


def defrag_section(sides: dict[str, Path], repeats: int, only: list[str] | None = None) -> list[dict]:
    rows = []
    for family, args in FAMILIES.items():
        if only is not None and not any(family.startswith(prefix) for prefix in only):
            continue
        path = snapshot(family, args)
        print(f"defrag {family}: {path}", flush=True)

        def measure(name: str, tree: Path, path: Path = path) -> dict:
            with tempfile.TemporaryDirectory() as tmp:
                load = os.getloadavg()[0]
                sample = run_side(tree, [PLANNER, "defrag", str(path), "--out", "plan.json", *SIDE_FLAGS.get(name, [])], Path(tmp))
                if sample.returncode:
                    raise SystemExit(f"{name} defrag failed ({sample.returncode}): {sample.stderr[-2000:]}")
                plan = json.loads((Path(tmp) / "plan.json").read_text())
            vacated = len(plan["vacated_nodes"])
            return {"wall_s": sample.wall_s, "cpu_s": sample.cpu_s, "peak_mib": sample.peak_mib, "vacated": vacated, "load": load}

        rows.append({"family": family, "runs": alternate(repeats, sides, measure)})
    return rows


PREEMPT_DRIVER = r"""
import json, random, sys, time
from planner.cluster import Cluster
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.preempt_state import PreemptState

nodes, decisions, seed = int(sys.argv[1]), int(sys.argv[2]), 0
rng = random.Random(seed)
node_list, pods = [], []
for i in range(nodes):  # benchmarks/preempt.py's big_cluster: 8-GPU nodes full of spot pods
    name = f"node-{i:05d}"
    node_list.append({"name": name, "gpus": 8, "cpus": 96, "memory_gib": 768, "asw": f"asw-{i // 32}"})
    for k, gpus in enumerate([1.0] * 6 + [0.5] * 4):
        pod = {"name": f"spot-{i}-{k}", "node": name, "gpus": gpus, "cpus": 8, "memory_gib": 32, "priority": "LP", "started_s": round(rng.uniform(0, 86_400), 3)}
        interval = rng.choice([600.0, 1800.0, None])
        if interval:
            pod["checkpoint_interval_s"] = interval
        pods.append(pod)
for j in range(decisions):
    pods.append({"name": f"hp-{j}", "job": f"hp-{j}", "gpus": 4, "cpus": 16, "memory_gib": 64})
cluster = Cluster.model_validate({"time_s": 86_400.0, "nodes": node_list, "pods": pods, "jobs": [{"name": f"hp-{j}"} for j in range(decisions)]})
state = PreemptState(cluster)
options = PreemptOptions(method="spotgpu")
times, cpu, victims = [], [], 0
for j in range(decisions):
    start, start_cpu = time.perf_counter(), time.process_time()
    plan = plan_preempt(cluster, f"hp-{j}", options, state=state)
    times.append(time.perf_counter() - start)
    cpu.append(time.process_time() - start_cpu)
    victims += len(plan.victims)
print(json.dumps({"times": times, "cpu": cpu, "victims": victims}))
"""


def preempt_section(sides: dict[str, Path], repeats: int, sizes: list[tuple[int, int]]) -> list[dict]:
    rows = []
    for nodes, decisions in sizes:
        print(f"preempt {nodes} nodes, {decisions} decisions", flush=True)

        def measure(name: str, tree: Path, nodes: int = nodes, decisions: int = decisions) -> dict:
            with tempfile.TemporaryDirectory() as tmp:
                script = Path(tmp) / "driver.py"
                script.write_text(PREEMPT_DRIVER)
                load = os.getloadavg()[0]
                sample = run_side(tree, [str(script), str(nodes), str(decisions)], Path(tmp))
            if sample.returncode:
                raise SystemExit(f"{name} preempt failed: {sample.stderr[-2000:]}")
            out = json.loads(sample.stdout.strip().splitlines()[-1])
            return {"times": out["times"], "cpu": out["cpu"], "victims": out["victims"], "load": load}

        rows.append({"nodes": nodes, "decisions": decisions, "runs": alternate(repeats, sides, measure)})
    return rows


def cli_section(sides: dict[str, Path], repeats: int) -> list[dict]:
    example = REPO / "instances" / "kubernetes" / "gpu-cluster.json"
    work = CACHE / "speed-cli"
    work.mkdir(parents=True, exist_ok=True)
    inputs: dict[str, list[str]] = {}
    for name, tree in sides.items():  # each side imports the kubectl List and plans it (the formats differ), untimed
        snapshot, plan = work / f"snapshot16-{tree.name}.json", work / f"plan16-{tree.name}.json"
        for path, argv in ((snapshot, ["import", "kubernetes", str(example)]), (plan, ["defrag", str(snapshot)])):
            made = run_side(tree, [PLANNER, *argv, "--out", str(path)], work)
            if made.returncode:
                raise SystemExit(f"{name}: preparing the 16-node example failed: {made.stderr[-2000:]}")
        inputs[name] = [str(snapshot), str(plan)]
    rows = []
    for label, argv in (("planner --help", ["--help"]), ("planner validate (16 nodes)", ["validate"])):
        print(f"cli {label}", flush=True)

        def measure(name: str, tree: Path, argv: list[str] = argv) -> dict:
            load = os.getloadavg()[0]
            sample = run_side(tree, [PLANNER, *argv, *(inputs[name] if argv == ["validate"] else [])], work)
            if sample.returncode:
                raise SystemExit(f"{name} {argv} failed ({sample.returncode}): {sample.stderr[-2000:]}")
            return {"cpu_s": sample.cpu_s, "wall_s": sample.wall_s, "load": load}

        rows.append({"command": label, "runs": alternate(repeats, sides, measure)})
    return rows


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def spread(values: list[float], digits: int = 1) -> str:
    """min / median / max."""
    return " / ".join(f"{v:.{digits}f}" for v in (min(values), statistics.median(values), max(values)))


def ratio(ours: list[float], base: list[float]) -> str:
    return f"{statistics.median(ours) / statistics.median(base):.2f}x"


def write(results: dict, args: argparse.Namespace) -> Path:
    lines = [
        "# Speed: this tree against the baseline commit (issue 62)",
        "",
        f"Written by `benchmarks/speed.py` (each section's arguments and tree below; rows kept in speed.json); {machine()};",
        f"baseline {results['base_commit']}. Runs alternate between the sides (the first side",
        "alternating too), so the load of the shared machine hits both alike: the ratios (median against median) are",
        "what to read; load averages (1 min) at the runs are given. Cells are min / median / max. Each side runs with its",
        "bytecode cached outside its tree (PYTHONPYCACHEPREFIX), as an installed package has it, and the same interpreter.",
        "",
    ]
    if "defrag" in results:
        lines += [
            f"## `planner defrag SNAPSHOT --out plan.json`, {NODES:,} nodes, end to end",
            "",
            "| family | side | wall s | CPU s (user+sys, workers included) | peak RSS MiB | vacated nodes | load | wall ratio | CPU ratio |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in results["defrag"]:
            runs = row["runs"]
            for side in runs:
                rs = runs[side]
                cell = ratio([r["wall_s"] for r in rs], [r["wall_s"] for r in runs["baseline"]]) if side != "baseline" else ""
                cell += " | " + (ratio([r["cpu_s"] for r in rs], [r["cpu_s"] for r in runs["baseline"]]) if side != "baseline" else "")
                vacated = sorted({r["vacated"] for r in rs})
                lines.append(
                    f"| {row['family']} | {side} | {spread([r['wall_s'] for r in rs])} | {spread([r['cpu_s'] for r in rs])} | "
                    f"{spread([r['peak_mib'] for r in rs], 0)} | {', '.join(map(str, vacated))} | {spread([r['load'] for r in rs])} | {cell} |"
                )
        lines.append("")
        lines += [f"* {row['family']}: `benchmarks/speed.py {row['command']}` ({row['tree']})" for row in results["defrag"] if "command" in row]
        lines.append("")
    if "preempt" in results:
        lines += [
            "## Preemption: `plan_preempt(..., method spotgpu)` with validation, prebuilt state",
            "",
            "Each decision: the request's checks, the decision, the plan, `validate_preempt`, the metrics and the provenance stamp.",
            "",
            "Wall time per decision, and in brackets the CPU time of the deciding process (less moved by the machine's load).",
            "The first decision on a state builds the cluster's indexes and hash (this tree): it is counted.",
            "",
            "| nodes / spot pods | side | decisions | p50 ms | p90 ms | p99 ms | max ms | victims | p99 ratio (wall, CPU) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in results["preempt"]:
            runs = row["runs"]
            p99 = {side: percentile([t for r in rs for t in r["times"]], 99) for side, rs in runs.items()}
            p99_cpu = {side: percentile([t for r in rs for t in r.get("cpu", r["times"])], 99) for side, rs in runs.items()}
            for side, rs in runs.items():
                times = [1000 * t for r in rs for t in r["times"]]
                cpu = [1000 * t for r in rs for t in r.get("cpu", r["times"])]
                cell = f"{p99[side] / p99['baseline']:.2f}x, {p99_cpu[side] / p99_cpu['baseline']:.2f}x" if side != "baseline" else ""
                cells = " | ".join(f"{percentile(times, q):.1f} ({percentile(cpu, q):.1f})" for q in (50, 90, 99))
                lines.append(
                    f"| {row['nodes']:,} / {10 * row['nodes']:,} | {side} | {len(times)} | {cells} | {max(times):.1f} ({max(cpu):.1f}) | "
                    f"{', '.join(str(r['victims']) for r in rs)} | {cell} |"
                )
        lines.append("")
    if "cli" in results:
        lines += [
            "## CLI start-up: CPU time (user+sys)",
            "",
            "`validate`: each side validates its own import of the bundled 16-node kubectl List (`instances/kubernetes/gpu-cluster.json`)",
            "and its own plan of it (the baseline cannot read this tree's snapshot fields), made before the timed runs.",
            "",
            "| command | side | CPU s | wall s | load | CPU ratio |",
            "|---|---|---|---|---|---|",
        ]
        for row in results["cli"]:
            runs = row["runs"]
            for side, rs in runs.items():
                cell = ratio([r["cpu_s"] for r in rs], [r["cpu_s"] for r in runs["baseline"]]) if side != "baseline" else ""
                lines.append(
                    f"| `{row['command']}` | {side} | {spread([r['cpu_s'] for r in rs], 2)} | {spread([r['wall_s'] for r in rs], 2)} | {spread([r['load'] for r in rs])} | {cell} |"
                )
        lines.append("")
    lines += ["## Runs", ""]
    lines += [f"* {section}: `benchmarks/speed.py {command}` on {results['trees'][section]}" for section, command in results.get("commands", {}).items()]
    lines.append("")
    out = RESULTS / "speed.md"
    out.write_text("\n".join(lines))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline tree (a worktree of 2e0b473)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--tree", type=Path, default=REPO, help="this side's tree (default: this checkout; a worktree of a commit keeps a long run apart from edits)"
    )
    parser.add_argument("--sections", default="defrag,preempt,cli")
    parser.add_argument("--decisions", type=int, default=300, help="preemption decisions at 1,000 nodes (a tenth of them at --large-nodes)")
    parser.add_argument("--families", default="", help="defrag families to run, by the start of their names (default: all); the others keep their rows")
    parser.add_argument("--large-nodes", type=int, default=NODES, help="the large preemption cluster's nodes (0: skip it)")
    parser.add_argument("--large-decisions", type=int, default=5, help="decisions on the large preemption cluster")
    args = parser.parse_args()
    tree = args.tree.resolve()
    sides = {"baseline": args.base.resolve(), "this tree": tree}
    base_commit = subprocess.run(["git", "-C", str(args.base), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    store = RESULTS / "speed.json"
    results: dict = json.loads(store.read_text()) if store.exists() else {}  # the sections not run now keep their last rows
    results["base_commit"] = base_commit
    sections = [section for section in args.sections.split(",") if section]  # none: rewrite speed.md from speed.json
    if "cli" in sections:
        results["cli"] = cli_section(sides, max(args.repeats, 5))
    if "preempt" in sections:
        results["preempt"] = preempt_section(
            sides, args.repeats, [(1000, args.decisions)] + ([(args.large_nodes, args.large_decisions)] if args.large_nodes else [])
        )
    if "defrag" in sections:
        fresh = defrag_section({**sides, BASELINE_POOLS: tree}, args.repeats, args.families.split(",") if args.families else None)
        kept = {row["family"]: row for row in results.get("defrag", [])}  # families not run now keep their rows
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        kept.update({row["family"]: {**row, "command": shlex.join(sys.argv[1:]), "tree": f"this tree at commit {commit}"} for row in fresh})
        results["defrag"] = [kept[family] for family in FAMILIES if family in kept]
    results.setdefault("commands", {}).update({section: " ".join(sys.argv[1:]) for section in sections})
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    results.setdefault("trees", {}).update({section: f"commit {head}" if tree != REPO else code_version() for section in sections})
    store.write_text(json.dumps(results))
    print(f"wrote {write(results, args)}")


if __name__ == "__main__":
    main()
