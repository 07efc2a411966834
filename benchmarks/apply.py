"""``planner apply`` end to end on the throwaway control plane, at a size and scheduler profile of your choice,
on a List from ``tests/support/apply_cluster.py`` with a seed the tests never use (held out: the executor was
never tuned on it).

Per run: the List built, the default defrag plan made from it (``planner defrag --from kubernetes``), the
control plane loaded, every workload's Ready pods counted, a watch on the pods that checks every
PodDisruptionBudget at every event (``PdbWatcher``) started, ``planner apply`` run (optionally under
cProfile), then checked: nodes vacated against the plan's, replacements on their planned target, budget
violations seen by the watch, pods that terminated twice, Ready pods per workload before and after, time per
wave and the executor's own share. One JSON object per run is printed (and appended to ``--out``).

    python benchmarks/apply.py --nodes 200 --scale 25 --seed 61 --profile binpack
    python benchmarks/apply.py --nodes 64 --scale 8 --seed 62 --cprofile /tmp/apply.prof
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# run as a script, this directory comes first on the path, and its kubernetes.py would hide the client
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(REPO))

from planner.kube.controlplane import start, stop
from tests.support.apply_cluster import apply_cluster
from tests.support.apply_run import Cluster, PdbWatcher, ready_by_app
from tests.support.controlplane import binary_env, controlplane_binary


def run(nodes: int, scale: int, seed: int, profile: str, steer: str, cprofile: str | None, work: Path) -> dict[str, object]:
    binary = controlplane_binary()
    env = binary_env(binary)
    list_path = work / "cluster.json"
    list_path.write_text(json.dumps(apply_cluster(seed, nodes=nodes, scale=scale)))
    plan_path = work / "plan.json"
    began = time.monotonic()
    made = subprocess.run(
        [sys.executable, "-m", "planner", "defrag", str(list_path), "--from", "kubernetes", "-o", "json", "--out", str(plan_path)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    if made.returncode != 0:
        raise SystemExit(made.stderr)
    plan_s = time.monotonic() - began
    plan = json.loads(plan_path.read_text())
    began = time.monotonic()
    running = start(str(list_path), work / "state", profile=profile, timeout_s=1800, binary=binary)
    load_s = time.monotonic() - began
    try:
        cluster = Cluster(running, list_path, plan_path, env)
        core = cluster.core()
        before = ready_by_app(core)
        watcher = PdbWatcher(core).start()
        report_path = work / "report.json"
        command = [sys.executable, *(["-m", "cProfile", "-o", cprofile] if cprofile else []), "-m", "planner", "apply", str(plan_path)]
        command += ["--kubeconfig", cluster.kubeconfig, "--steer", steer, "--json", str(report_path), "--wave-deadline", "900"]
        began = time.monotonic()
        done = subprocess.run(command, check=False, capture_output=True, text=True, env=env, timeout=7200)
        wall_s = time.monotonic() - began
        watcher.stop()
        if done.returncode != 0:
            raise SystemExit(done.stderr[-4000:])
        report = json.loads(report_path.read_text())
        deadline = time.monotonic() + 300
        after = ready_by_app(core)
        while after != before and time.monotonic() < deadline:
            time.sleep(1)
            after = ready_by_app(core)
        waves = report["waves"]
        return {
            "nodes": nodes,
            "pods": sum(before.values()),
            "seed": seed,
            "profile": profile,
            "steer": steer,
            "plan_s": round(plan_s, 1),
            "load_s": round(load_s, 1),
            "waves": len(plan["waves"]),
            "moves": report["moves_planned"],
            "moves_done": report["moves_done"],
            "vacated_planned": report["nodes_vacated_planned"],
            "vacated": report["nodes_vacated"],
            "vacated_ratio": report["vacated_ratio"],
            "on_target_share": report["on_target_share"],
            "pdb_violations": len(watcher.violations),
            "pdb_refusals": report["pdb_refusals"],
            "terminated_twice": len(watcher.terminated) - len(set(watcher.terminated)),
            "terminated": len(watcher.terminated),
            "ready_before_equals_after": after == before,
            "apply_wall_s": round(wall_s, 1),
            "time_s": report["time_s"],
            "wait_s": report["wait_s"],
            "overhead_s": report["overhead_s"],
            "overhead_share": report["overhead_share"],
            "wave_s_median": round(statistics.median(w["time_s"] for w in waves), 2) if waves else None,
            "wave_s_max": round(max(w["time_s"] for w in waves), 2) if waves else None,
            "blocked_share": report["blocked_share"],
            "node_patches": report["node_patches"],
        }
    finally:
        stop(running.state_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--scale", type=int, default=25)
    parser.add_argument("--seed", type=int, default=61)
    parser.add_argument("--profile", choices=("default", "binpack"), default="default")
    parser.add_argument("--steer", choices=("fit", "taint", "sources"), default="fit")
    parser.add_argument("--cprofile", default=None, help="Run apply under cProfile and write its profile here.")
    parser.add_argument("--out", default=None, help="Append the result (one JSON line) to this file.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="apply-bench-") as tmp:
        result = run(args.nodes, args.scale, args.seed, args.profile, args.steer, args.cprofile, Path(tmp))
    line = json.dumps(result)
    print(line)
    if args.out:
        with open(args.out, "a") as handle:
            handle.write(line + "\n")


if __name__ == "__main__":
    main()
