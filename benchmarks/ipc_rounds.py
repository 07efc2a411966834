"""IPC's rounds: what each round vacates and costs, and what the early stop (`--min-round-yield`) gives up.

IPC repeats its partitioned ejection chains for up to R = 5 rounds with fresh random partitions (ASI
paper, Sec. 4.1: "little marginal benefit after round 3"). A round after the first tries nearly every
busy node again; on fleets of many small pods almost every try fails, after a full search of its
chains, so a late round costs more CPU than the first while vacating 1-2% as many nodes. The default
stops after a round that vacates fewer than 1 node per 1,000 ejection attempts (`Eject` calls, the
chains' inner ones included: the round's work, counted deterministically; `--min-round-yield 1`);
`--min-round-yield 0` runs every round until one vacates nothing (the published rule).

For each snapshot both plans are computed in process (`plan_defrag`, default options otherwise, one
worker so the CPU seconds per round are the rounds' own): vacated nodes of each, the rounds run, the
vacated nodes per round and the CPU seconds per round of the full run. Families: ASI-like
(`generate_asi`, 40% locked), the openb 2023 replays without departures, and the mixed Kubernetes
fleet (`kubernetes_mixed`, imported as `planner defrag --from kubernetes` does). The threshold was
chosen looking at the first table's snapshots (late rounds yield 0.5-54 nodes per 1,000 attempts on
ASI-like ones, 0.03-0.36 on openb and the mixed fleet); the held-out rows were first run with the
rule fixed.

    .venv/bin/python benchmarks/ipc_rounds.py [--skip-10000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import CACHE, RESULTS, code_version, machine

from planner.adapters.kubernetes import import_kubernetes
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.engine.defrag import DefragPlan
from planner.instances.asi import generate_asi
from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
from planner.instances.openb import generate_openb

COMMAND = ".venv/bin/python benchmarks/ipc_rounds.py"


def mixed(nodes: int, seed: int) -> Cluster:
    cached = CACHE / f"k8s-mixed-{nodes}-seed{seed}.json"
    text = cached.read_text() if cached.exists() else json.dumps(generate_kubernetes_mixed(nodes, seed))
    return import_kubernetes([(text, cached.name)]).cluster


TUNED: list[tuple[str, Callable[[], Cluster]]] = [
    ("ASI 1,000, seed 0", lambda: generate_asi(1000, seed=0)),
    ("ASI 1,000, seed 1, 80% allocated", lambda: generate_asi(1000, seed=1, allocation=0.8)),
    ("ASI 1,000, seed 2, 60% allocated", lambda: generate_asi(1000, seed=2, allocation=0.6)),
    ("ASI 5,000, seed 0", lambda: generate_asi(5000, seed=0)),
    ("openb at 12.5e6 s", lambda: generate_openb(at_s=12_500_000, departures=False)),
    ("mixed 1,000, seed 0", lambda: mixed(1000, 0)),
    ("mixed 1,000, seed 1", lambda: mixed(1000, 1)),
    ("mixed 3,000, seed 2", lambda: mixed(3000, 2)),
]
LARGE = ("mixed 10,000, seed 0", lambda: mixed(10000, 0))
HELD_OUT: list[tuple[str, Callable[[], Cluster]]] = [
    ("ASI 1,000, seed 7", lambda: generate_asi(1000, seed=7)),
    ("ASI 1,000, seed 8, 80% allocated", lambda: generate_asi(1000, seed=8, allocation=0.8)),
    ("ASI 5,000, seed 7", lambda: generate_asi(5000, seed=7)),
    ("openb at 13e6 s", lambda: generate_openb(at_s=13_000_000, departures=False)),
    ("mixed 1,000, seed 7", lambda: mixed(1000, 7)),
    ("mixed 3,000, seed 8", lambda: mixed(3000, 8)),
]


def measure(name: str, cluster: Cluster) -> dict:
    round_cpu: list[float] = []
    mark = [time.process_time()]

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "round":
            now = time.process_time()
            round_cpu.append(now - mark[0])
            mark[0] = now

    every = plan_defrag(cluster, DefragOptions(workers=1, min_round_yield=0), progress)
    mark[0] = time.process_time()
    default = plan_defrag(cluster, DefragOptions(workers=1))
    assert isinstance(every, DefragPlan) and isinstance(default, DefragPlan)
    per_round = every.report.vacated_per_round  # type: ignore[union-attr]  # an extra field of the report
    rounds_default = default.report.rounds_run  # type: ignore[union-attr]  # an extra field of the report
    ipc_cpu = sum(round_cpu)
    return {
        "name": name,
        "every": len(every.vacated_nodes),
        "default": len(default.vacated_nodes),
        "rounds_every": len(per_round),
        "rounds_default": rounds_default,
        "per_round": per_round,
        "attempts": every.report.ejection_attempts_per_round,  # type: ignore[union-attr]  # an extra field of the report
        "round_cpu": round_cpu,
        "saved_cpu_share": sum(round_cpu[rounds_default:]) / ipc_cpu if ipc_cpu else 0.0,
    }


def table(rows: list[dict]) -> list[str]:
    lines = [
        (
            "| snapshot | vacated, every round | vacated, default | lost | rounds: every / default | vacated per round | "
            "vacated per 1,000 attempts | IPC CPU s per round | IPC CPU the stop saves |"
        ),
        "|---|---:|---:|---:|---|---|---|---|---:|",
    ]
    for r in rows:
        lost = r["every"] - r["default"]
        lines.append(
            f"| {r['name']} | {r['every']:,} | {r['default']:,} | {lost:,} ({lost / max(r['every'], 1):.1%}) | {r['rounds_every']} / {r['rounds_default']} | "
            f"{', '.join(str(v) for v in r['per_round'])} | {', '.join(f'{1000 * v / max(a, 1):.2f}' for v, a in zip(r['per_round'], r['attempts'], strict=True))} | "
            f"{', '.join(f'{t:.2f}' for t in r['round_cpu'])} | {r['saved_cpu_share']:.0%} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-10000", action="store_true", help="leave out the 10,000-node mixed fleet (about a minute)")
    args = parser.parse_args()
    tuned = TUNED + ([] if args.skip_10000 else [LARGE])
    sections = {"Snapshots the threshold was chosen on": tuned, "Held-out snapshots (run once, with the rule fixed)": HELD_OUT}
    out = [
        "# IPC's rounds and the early stop",
        "",
        f"Code: {code_version()}. Machine: {machine()}. Reproduce: `{COMMAND}{' --skip-10000' if args.skip_10000 else ''}`.",
        "",
        (__doc__ or "").split("\n\n")[1].replace("\n", " "),
        "",
        (
            "*lost*: vacated nodes of the full run less the default's (the default's rounds are the full run's first ones, so it "
            "never vacates more). *IPC CPU the stop saves*: the CPU seconds of the rounds the default leaves out, as a share of "
            "the full run's IPC CPU seconds (one worker; with the default one worker per core the wall time shrinks alike)."
        ),
    ]
    for title, instances in sections.items():
        rows = []
        for name, make in instances:
            rows.append(measure(name, make()))
            print(table(rows)[-1], flush=True)
        lost = [(r["every"] - r["default"]) / max(r["every"], 1) for r in rows]
        out += ["", f"## {title}", "", *table(rows), "", f"Most lost: {max(lost):.1%} of the vacated nodes; mean {sum(lost) / len(lost):.2%}."]
    (RESULTS / "ipc_rounds.md").write_text("\n".join(out) + "\n")
    print(f"wrote {RESULTS / 'ipc_rounds.md'}")


if __name__ == "__main__":
    main()
