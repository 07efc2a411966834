"""A ``planner apply`` killed mid-wave (SIGKILL: no clean-up at all) and resumed with ``--resume`` on the real
control plane (seed 4 of tests/support/apply_cluster.py): the run ends as planned and no pod is evicted twice
(every pod that terminated is a pod the plan moves, each once), no bare pod is copied twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apply_run import Cluster, PdbWatcher, apply_args, evicted_pods, kill_when, planner, planner_leftovers, ready_by_app, seeded_cluster

SEED = 4


@pytest.fixture(scope="module")
def cluster(controlplane_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with seeded_cluster(SEED, tmp_path_factory.mktemp("apply-resume"), controlplane_bin) as made:
        yield made


def test_a_killed_executor_resumed_evicts_nothing_twice(cluster: Cluster, tmp_path: Path) -> None:
    core = cluster.core()
    plan = cluster.plan()
    moves = sum(len(w) for w in plan["waves"])
    bare_moves = sum(1 for w in plan["waves"] for m in w if m["pod"].startswith("solo-"))
    before = ready_by_app(core)
    watcher = PdbWatcher(core).start()
    try:
        killed = kill_when(cluster, apply_args(cluster), {"evicting", "evicted", "copied"}, min_wave=1)
        assert killed["status"] == "running" and killed["next_wave"] >= 1
        terminated_before_resume = len(watcher.terminated)
        report_path = tmp_path / "report.json"
        resumed = planner([*apply_args(cluster, "--resume", "--json", str(report_path))], cluster.env)
    finally:
        watcher.stop()
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(report_path.read_text())
    assert report["moves_done"] == moves
    assert report["nodes_vacated"] == report["nodes_vacated_planned"]
    assert len(watcher.terminated) == len(set(watcher.terminated)) == moves, (terminated_before_resume, watcher.terminated)
    evicted = evicted_pods(killed["stderr"]) + evicted_pods(resumed.stderr)
    assert sorted(evicted) == sorted(set(evicted)), evicted  # no pod evicted by two calls
    # a kill right after an eviction the API accepted, before its log line: that pod was recorded 'evicting'
    in_flight = {f"{r['pod']['namespace']}/{r['pod']['name']}" for r in killed["moves"].values() if r["phase"] == "evicting"}
    assert moves - len(in_flight) <= len(evicted) <= moves, (evicted, in_flight)
    assert terminated_before_resume >= 1
    copies = [p for p in core.list_namespaced_pod("apps").items if (p.metadata.annotations or {}).get("planner.io/copy-of")]
    assert len(copies) == bare_moves
    assert watcher.violations == []
    assert ready_by_app(core) == before
    assert planner_leftovers(core)["tainted"] == []
