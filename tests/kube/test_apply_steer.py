"""The default steering (``--steer fit``) against ``--steer taint`` on the real control plane (seed 7 of
tests/support/apply_cluster.py, 16 nodes, every workload twice as large), each on a fresh cluster: both vacate
every planned node within every budget and lands (nearly) every replacement on its planned target; but
``taint`` keeps every node outside the plan's sources closed from the first wave to the last, while the
default closes a node only for one target's scheduling round (a node watcher times every taint at every event)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.apply_run import PdbWatcher, TaintWatcher, apply_args, planner, planner_leftovers, ready_by_app, seeded_cluster

SEED = 7
NODES = 16
SCALE = 2


def _run(binary: Path, tmp: Path, *steer: str) -> tuple[dict[str, Any], TaintWatcher, dict[str, Any]]:
    with seeded_cluster(SEED, tmp, binary, nodes=NODES, scale=SCALE) as cluster:
        core = cluster.core()
        plan = cluster.plan()
        sources = {m["from"] for wave in plan["waves"] for m in wave}
        before = ready_by_app(core)
        pdbs = PdbWatcher(core).start()
        taints = TaintWatcher(core, sources).start()
        report_path = tmp / "report.json"
        try:
            done = planner([*apply_args(cluster, *steer, "--json", str(report_path), "--wave-deadline", "300")], cluster.env)
        finally:
            taints.stop()
            pdbs.stop()
        assert done.returncode == 0, done.stderr
        report = json.loads(report_path.read_text())
        print(json.dumps({k: v for k, v in report.items() if k not in ("waves", "not_vacated")}), file=sys.stderr)
        assert report["nodes_vacated"] == report["nodes_vacated_planned"] == len(plan["vacated_nodes"])
        assert report["moves_done"] == sum(len(w) for w in plan["waves"])
        assert pdbs.violations == []
        assert ready_by_app(core) == before
        assert planner_leftovers(core)["tainted"] == []
        return report, taints, plan


def test_the_default_steering_blocks_little_and_still_lands_on_target(controlplane_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    fit, fit_taints, plan = _run(controlplane_bin, tmp_path_factory.mktemp("steer-fit"))
    assert fit["steer"] == "fit"
    taint, taint_taints, _ = _run(controlplane_bin, tmp_path_factory.mktemp("steer-taint"), "--steer", "taint")
    targets_and_others = NODES - len({m["from"] for wave in plan["waves"] for m in wave})
    # taint: every node but the open target closed for the run; fit: a window of competitors at a time
    assert taint_taints.most_blocked >= targets_and_others - 1
    # taint: a node outside the plan's sources stays closed from the first wave to the last; fit: for one
    # target's scheduling round at most, then it schedules again
    assert taint_taints.longest_s >= 0.6 * taint["time_s"]
    assert fit_taints.longest_s < 0.35 * fit["time_s"] and fit_taints.longest_s < 0.35 * taint_taints.longest_s
    assert fit["blocked_node_s"] < taint["blocked_node_s"] and fit["blocked_share"] < taint["blocked_share"]
    assert fit["on_target_share"] >= 0.9 and taint["on_target_share"] >= 0.9
    print(
        f"longest closed: fit {fit_taints.longest_s:.2f} s of {fit['time_s']} s, taint {taint_taints.longest_s:.2f} s of {taint['time_s']} s", file=sys.stderr
    )
