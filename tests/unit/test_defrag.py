"""Defragmentation: IPC ejection chains and the baselines, through plan_defrag (which validates)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.plans import dump_plan
from planner.snapshot import dump_cluster, parse_cluster
from planner.validate.defrag import apply_plan, validate
from tests.support.clusters import make_cluster, node, pod
from tests.support.strategies import clusters


def moves_of(plan) -> list[list[tuple[str, str, str]]]:
    return [[(m.pod, m.from_, m.to) for m in wave] for wave in plan.waves]


def test_fig15_yields_exactly_the_three_wave_chain(fig15: Cluster) -> None:
    plan = plan_defrag(fig15, DefragOptions(workers=1))
    assert moves_of(plan) == [
        [("Job-7-0", "node-2", "node-3")],
        [("Job-3-0", "node-1", "node-2")],
        [("Job-1-0", "node-0", "node-1")],
    ]
    assert plan.vacated_nodes == ["node-0"]
    assert plan.report.method == "ipc" and plan.report.status == "heuristic" and plan.report.solver is None
    assert plan.report.objective == 1 and plan.report.moves == 3 and plan.report.gpus_moved == 5
    assert plan.report.model_extra["waves"] == 3


def test_fig15_needs_depth_three(fig15: Cluster) -> None:
    shallow = plan_defrag(fig15, DefragOptions(depth=2, workers=1))
    assert shallow.waves == [] and shallow.vacated_nodes == []
    assert "depth 2" in shallow.report.model_extra["reason"]


def test_locked_pods_never_move() -> None:
    c = make_cluster(
        [node("a"), node("b"), node("c")],
        [pod("l", "a", gpus=1, locked=True), pod("x", "b", gpus=2), pod("y", "c", gpus=2), pod("z", "a", gpus=1)],
    )
    plan = plan_defrag(c, DefragOptions(workers=1))
    moved = {m.pod for m in plan.moves()}
    assert "l" not in moved
    assert plan.vacated_nodes == ["b", "c"]  # both consolidate onto a, around the locked pod


def test_anti_affinity_holds_inside_chains() -> None:
    # x must leave n0; its only room is n1, which is blocked by same-group pod g1 unless g1 is ejected
    # to n2 - but n2 holds g2 of the same group, so g1 must go to n3 instead.
    c = make_cluster(
        [node("n0"), node("n1"), node("n2"), node("n3")],
        [
            pod("x", "n0", gpus=4, anti_affinity=["svc"]),
            pod("g1", "n1", gpus=1, anti_affinity=["svc"]),
            pod("f1", "n1", gpus=3, locked=True),
            pod("g2", "n2", gpus=1, anti_affinity=["svc"]),
            pod("f2", "n2", gpus=5, locked=True),
            pod("f3", "n3", gpus=7, locked=True),
        ],
    )
    plan = plan_defrag(c, DefragOptions(workers=1))
    assert moves_of(plan) == [[("g1", "n1", "n3")], [("x", "n0", "n1")]]


def test_job_topology_holds_inside_chains() -> None:
    jobs = [{"name": "train", "topology": {"level": "asw", "mode": "required"}}]
    c = make_cluster(
        [node("a0", asw="A"), node("a1", asw="A"), node("b0", asw="B")],
        # b0 is the best fit for w0 (it would be left full) but lies under another switch
        [pod("w0", "a0", gpus=2, job="train"), pod("w1", "a1", gpus=4, job="train"), pod("fix", "b0", gpus=6, locked=True)],
        jobs,
    )
    plan = plan_defrag(c, DefragOptions(workers=1))
    for m in plan.moves():
        if m.pod in ("w0", "w1"):
            assert m.to.startswith("a")  # never across the switch, even for a moment
    assert moves_of(plan) == [[("w0", "a0", "a1")]]
    assert plan.vacated_nodes == ["a0"]


def test_move_budgets_are_honoured() -> None:
    c = make_cluster([node(f"n{i}") for i in range(6)], [pod(f"p{i}", f"n{i}", gpus=2) for i in range(6)])
    free = plan_defrag(c, DefragOptions(workers=1))
    assert len(free.vacated_nodes) >= 3
    capped = plan_defrag(c, DefragOptions(workers=1, max_moves=2))
    assert len(capped.moves()) <= 2 and len(capped.vacated_nodes) == 2
    per_node = plan_defrag(c, DefragOptions(workers=1, max_moves_per_node=1))
    touches: dict[str, int] = {}
    for m in per_node.moves():
        touches[m.from_] = touches.get(m.from_, 0) + 1
        touches[m.to] = touches.get(m.to, 0) + 1
    assert max(touches.values()) <= 1
    assert plan_defrag(c, DefragOptions(workers=1, max_moves=0)).report.model_extra["reason"].startswith("the migration budget")


def test_nothing_to_vacate_gives_an_empty_plan_with_a_reason() -> None:
    c = make_cluster([node("a"), node("b")], [pod("x", "a", locked=True), pod("y", "b", locked=True), pod("z", "b")])
    plan = plan_defrag(c, DefragOptions(workers=1))
    assert plan.waves == [] and plan.vacated_nodes == []
    assert plan.report.model_extra["reason"] == "every node holding pods also holds a locked pod, so no node can be vacated"


@pytest.fixture(scope="module")
def asi_small() -> Cluster:
    from planner.instances.asi import generate_asi

    return generate_asi(nodes=240, seed=3, allocation=0.65)


def test_same_plan_whatever_the_number_of_workers(asi_small: Cluster) -> None:
    one = plan_defrag(asi_small, DefragOptions(workers=1, partition_size=40, seed=5))
    two = plan_defrag(asi_small, DefragOptions(workers=2, partition_size=40, seed=5))
    assert moves_of(one) == moves_of(two) and one.vacated_nodes == two.vacated_nodes
    assert len(one.vacated_nodes) > 0
    other_seed = plan_defrag(asi_small, DefragOptions(workers=1, partition_size=40, seed=6))
    assert moves_of(other_seed) != moves_of(one)


@pytest.mark.parametrize("method", ["random", "descheduler", "repack"])
def test_baselines_produce_valid_plans(asi_small: Cluster, method: str) -> None:
    seeded = {} if method == "repack" else {"seed": 1}  # repack has no randomness (a seed would be refused)
    plan = plan_defrag(asi_small, DefragOptions(method=method, workers=1, **seeded))
    assert validate(asi_small, plan) == []
    assert plan.report.method == method and plan.report.moves == len(plan.moves())


def test_ipc_beats_the_descheduler_under_the_same_budget(asi_small: Cluster) -> None:
    ipc = plan_defrag(asi_small, DefragOptions(workers=1, max_moves=60))
    desched = plan_defrag(asi_small, DefragOptions(method="descheduler", workers=1, max_moves=60))
    assert len(ipc.moves()) <= 60 and len(desched.moves()) <= 60
    assert len(ipc.vacated_nodes) >= len(desched.vacated_nodes)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(max_nodes=7, max_pods=16), st.integers(0, 1000), st.sampled_from([1, 2, 3]))
def test_ipc_plans_on_random_snapshots_validate_and_never_lose_empty_nodes(cluster: Cluster, seed: int, depth: int) -> None:
    plan = plan_defrag(cluster, DefragOptions(workers=1, seed=seed, depth=depth, partition_size=3))
    assert validate(cluster, plan) == []
    after = apply_plan(cluster, plan)
    parse_cluster(dump_cluster(after))  # no node gains a rule violation: the end state is a valid snapshot
    assert plan.metrics.after["empty_nodes"] >= plan.metrics.before["empty_nodes"]
    assert plan.metrics.after["empty_nodes"] - plan.metrics.before["empty_nodes"] == len(plan.vacated_nodes)
    assert all(not p.locked for p in cluster.pods if p.name in {m.pod for m in plan.moves()})
    json.loads(dump_plan(plan))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(max_nodes=7, max_pods=16), st.sampled_from(["random", "descheduler", "repack"]))
def test_baseline_plans_on_random_snapshots_validate(cluster: Cluster, method: str) -> None:
    plan = plan_defrag(cluster, DefragOptions(method=method, workers=1))
    assert validate(cluster, plan) == []
