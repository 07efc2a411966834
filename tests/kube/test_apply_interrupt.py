"""Ctrl-C (SIGINT) during a wave of ``planner apply`` on the real control plane (seed 8 of
tests/support/apply_cluster.py): the run stops at its next recorded step, rolls back its holds (no planner
taint left), exits 130 saying the wave to resume at, and records ``interrupted``; ``--resume`` then finishes
the plan with no pod evicted twice (a watch on the pods sees every pod that terminates) and no budget broken
at any instant."""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.apply_run import Cluster, PdbWatcher, apply_args, evicted_pods, kill_when, planner, planner_leftovers, ready_by_app, seeded_cluster

SEED = 8


@pytest.fixture(scope="module")
def cluster(controlplane_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with seeded_cluster(SEED, tmp_path_factory.mktemp("apply-interrupt"), controlplane_bin) as made:
        yield made


def test_ctrl_c_rolls_back_the_holds_and_resume_finishes(cluster: Cluster, tmp_path: Path) -> None:
    core = cluster.core()
    plan = cluster.plan()
    moves = sum(len(w) for w in plan["waves"])
    before = ready_by_app(core)
    watcher = PdbWatcher(core).start()
    try:
        stopped = kill_when(cluster, apply_args(cluster), {"evicting", "evicted", "copied"}, min_wave=1, sig=signal.SIGINT)
        assert stopped["returncode"] == 130, stopped["stderr"]
        said = re.search(r"interrupted in wave (\d+); the holds are removed .* --resume goes on from wave (\d+)", stopped["stderr"])
        assert said, stopped["stderr"]
        assert "event=interrupt" in stopped["stderr"] and "Traceback" not in stopped["stderr"]
        left = planner_leftovers(core)
        assert left["tainted"] == [] and len(left["configmaps"]) == 1
        state = json.loads(core.read_namespaced_config_map(left["configmaps"][0], "default").data["state.json"])
        assert state["status"] == "interrupted" and state["next_wave"] + 1 == int(said.group(1)) == int(said.group(2))
        report_path = tmp_path / "report.json"
        resumed = planner([*apply_args(cluster, "--resume", "--json", str(report_path))], cluster.env)
    finally:
        watcher.stop()
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(report_path.read_text())
    assert report["moves_done"] == moves and report["nodes_vacated"] == report["nodes_vacated_planned"]
    assert len(watcher.terminated) == len(set(watcher.terminated)) == moves
    evicted = evicted_pods(stopped["stderr"]) + evicted_pods(resumed.stderr)
    assert sorted(evicted) == sorted(set(evicted)) and len(evicted) == moves
    assert watcher.violations == []
    assert ready_by_app(core) == before
    assert planner_leftovers(core)["tainted"] == []
