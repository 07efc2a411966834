"""``move_once`` (on by default): every pod moves at most once. The router makes no detours, a plan
that moves a pod twice (IPC's chains, as published, can) is routed again from its end state
(dropping what cannot be reached that way), and the validator checks it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, Node, Pod
from planner.engine import DefragOptions, plan_defrag
from planner.engine.defrag.assembly import _unplace_what_no_longer_fits
from planner.engine.makeroom import MadeRoom
from planner.instances.asi import generate_asi
from planner.limits import MoveBudget, MoveLimits
from planner.plans import DefragPlan, Placement
from planner.snapshot import parse_cluster
from planner.state import ClusterState
from planner.validate.defrag import validate
from planner.waves import target_to_waves
from tests.support.tiny_snapshots import detour_corpus

runner = CliRunner()


def _twice(plan: DefragPlan) -> int:
    return sum(count - 1 for count in Counter(m.pod for m in plan.moves()).values())


def test_an_ipc_plan_moves_no_pod_twice_unless_asked_to() -> None:
    cluster = generate_asi(nodes=100, seed=1, allocation=0.75)
    free = plan_defrag(cluster, DefragOptions(trim="off", move_once=False))
    assert _twice(free) > 0, "IPC as published moves some pod twice here"
    once = plan_defrag(cluster, DefragOptions(trim="off"))
    assert _twice(once) == 0 and once.moves()
    assert {v.kind for v in validate(cluster, free, MoveLimits(move_once=True))} == {"moved_twice"}
    assert validate(cluster, once, MoveLimits(move_once=True)) == []


def test_the_router_makes_no_detour_under_move_once() -> None:
    detoured = 0
    for text in detour_corpus()[:10]:
        cluster = parse_cluster(text)
        state = ClusterState(cluster)
        best = plan_defrag(cluster, DefragOptions(method="exact", move_once=False, time_limit_s=10, solver_workers=2))
        target = {state.pod_index[m.pod]: state.node_index[m.to] for m in best.moves()}
        free = target_to_waves(state.clone(), target, MoveBudget.of(state))
        once = target_to_waves(state.clone(), target, MoveBudget.of(state, MoveLimits(move_once=True)))
        assert once.routed == 0 and len({p for w in once.waves for p, _, _ in w}) == sum(len(w) for w in once.waves)
        detoured += free.routed > 0
        plan = plan_defrag(cluster, DefragOptions(method="exact", time_limit_s=10, solver_workers=2))
        assert _twice(plan) == 0
    assert detoured, "some corpus snapshot needs a detour"


def test_a_job_whose_room_was_dropped_is_reported_unplaced() -> None:
    nodes = [Node(name="n0", gpus=8, cpus=16, memory_gib=64), Node(name="n1", gpus=8, cpus=16, memory_gib=64)]
    pods = [Pod(name="busy", gpus=4, cpus=1, memory_gib=1, node="n0"), Pod(name="big", gpus=8, cpus=1, memory_gib=1)]
    cluster = Cluster(nodes=nodes, pods=pods)
    state = ClusterState(cluster)
    made = MadeRoom(
        waves=[], placements=[Placement(pod="big", node="n0")], unplaced=[], per_job={"big": {"placed": True, "moves": 1, "gpus_moved": 4.0, "nodes": ["n0"]}}
    )
    _unplace_what_no_longer_fits(cluster, state, made)  # busy was not moved off n0: big no longer fits
    assert made.placements == [] and [u.job for u in made.unplaced] == ["big"]
    assert made.per_job["big"]["placed"] is False and "move_once" in made.per_job["big"]["reason"]


def test_move_once_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(generate_asi(nodes=100, seed=1, allocation=0.75).model_dump_json())
    free = runner.invoke(app, ["defrag", str(path), "--trim", "off", "--no-move-once", "--out", str(tmp_path / "free.json")])
    assert free.exit_code == 0, free.output
    assert runner.invoke(app, ["validate", str(path), str(tmp_path / "free.json")]).exit_code == 0
    checked = runner.invoke(app, ["validate", str(path), str(tmp_path / "free.json"), "--move-once"])
    assert checked.exit_code == 1 and "moved_twice" in checked.output
