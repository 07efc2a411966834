"""validate.py: every violation class, pinned with small hand-made plans (make-before-break)."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import metrics
from planner.cluster import Cluster
from planner.plans import DefragPlan, Move, PlanMetrics, parse_plan
from planner.state import ClusterState
from planner.validate.defrag import apply_plan, vacated_nodes, validate
from tests.support.clusters import make_cluster, node, pod
from tests.support.strategies import clusters


def plan(*waves: list[tuple[str, str, str]], vacated: list[str] | None = None, cluster: Cluster | None = None) -> DefragPlan:
    """A plan from (pod, from, to) triples; vacated nodes computed from the replay unless given."""
    p = DefragPlan(waves=[[Move(pod=a, **{"from": b}, to=c) for a, b, c in wave] for wave in waves], vacated_nodes=vacated or [])
    if vacated is None and cluster is not None:
        p = p.model_copy(update={"vacated_nodes": vacated_nodes(cluster, apply_plan(cluster, p))})
    return p


def kinds(cluster: Cluster, p: DefragPlan) -> list[str]:
    return [v.kind for v in validate(cluster, p)]


FIG15_CHAIN = [("Job-7-0", "node-2", "node-3")], [("Job-3-0", "node-1", "node-2")], [("Job-1-0", "node-0", "node-1")]


def test_fig15_chain_is_valid_as_three_waves(fig15: Cluster) -> None:
    p = plan(*FIG15_CHAIN, vacated=["node-0"])
    assert validate(fig15, p) == []
    after = apply_plan(fig15, p)
    assert metrics.summary(after)["empty_nodes"] == 1


def test_fig15_chain_squeezed_into_one_wave_is_over_capacity(fig15: Cluster) -> None:
    p = plan([m for wave in FIG15_CHAIN for m in wave], vacated=["node-0"])
    violations = validate(fig15, p)
    assert {(v.kind, v.wave, v.node) for v in violations} == {("over_capacity", 0, "node-2"), ("over_capacity", 0, "node-1")}
    assert "needs 9 GPUs, node 'node-2' has 8" in str(violations[0]) + str(violations[1])


def test_mid_chain_wave_over_capacity_is_reported_at_that_wave(fig15: Cluster) -> None:
    p = plan([("Job-7-0", "node-2", "node-3")], [("Job-3-0", "node-1", "node-2"), ("Job-1-0", "node-0", "node-1")], vacated=["node-0"])
    violations = validate(fig15, p)
    assert [(v.kind, v.wave, v.node) for v in violations] == [("over_capacity", 1, "node-1")]


def test_plan_with_zero_waves_validates(fig15: Cluster) -> None:
    assert validate(fig15, plan()) == []


def test_locked_pod_moved(fig15: Cluster) -> None:
    assert kinds(fig15, plan([("locked-1-0", "node-1", "node-0")], cluster=fig15)) == ["locked_pod_moved"]


def test_pending_pod_moved() -> None:
    c = make_cluster([node("a"), node("b")], [pod("p", None)])
    assert kinds(c, plan([("p", "a", "b")])) == ["pending_pod_moved"]


def test_from_must_be_the_pods_node_at_that_wave(fig15: Cluster) -> None:
    p = plan([("Job-7-0", "node-2", "node-3")], [("Job-7-0", "node-2", "node-0")], vacated=[])
    violations = validate(fig15, p)
    assert [(v.kind, v.wave) for v in violations] == [("wrong_source", 1)]
    assert "is on node 'node-3' at this wave" in violations[0].message


def test_to_equal_to_from(fig15: Cluster) -> None:
    assert kinds(fig15, plan([("Job-1-0", "node-0", "node-0")])) == ["same_source_and_destination"]


def test_pod_moved_twice_in_one_wave(fig15: Cluster) -> None:
    p = plan([("Job-7-0", "node-2", "node-3"), ("Job-7-0", "node-2", "node-1")], vacated=[])
    assert kinds(fig15, p) == ["moved_twice_in_wave"]


def test_unknown_pod_and_node(fig15: Cluster) -> None:
    assert kinds(fig15, plan([("ghost", "node-0", "node-1")])) == ["unknown_pod"]
    assert kinds(fig15, plan([("Job-1-0", "node-0", "node-9")])) == ["unknown_node"]


def test_gpu_model_selector_and_unschedulable_destination() -> None:
    c = make_cluster(
        [
            node("a", gpu_model="A100"),
            node("h", gpu_model="H800"),
            node("t", gpu_model="A100", labels={"pool": "infer"}),
            node("x", gpu_model="A100", schedulable=False),
        ],
        [pod("m", "a", gpu_models=["A100"]), pod("s", "t", node_selector={"pool": "infer"})],
    )
    assert kinds(c, plan([("m", "a", "h")], cluster=c)) == ["gpu_model"]
    assert kinds(c, plan([("s", "t", "a")], cluster=c)) == ["node_selector"]
    assert kinds(c, plan([("m", "a", "x")], cluster=c)) == ["unschedulable_destination"]


def test_anti_affinity_holds_with_the_old_copy_still_present() -> None:
    c = make_cluster([node("a"), node("b"), node("c")], [pod("p", "a", anti_affinity=["svc"]), pod("q", "b", anti_affinity=["svc"])])
    # q arrives on a while p's old copy still holds it (p leaves a in the same wave): conflict
    swap = plan([("p", "a", "c"), ("q", "b", "a")], cluster=c)
    violations = validate(c, swap)
    assert [(v.kind, v.node, v.pod) for v in violations] == [("anti_affinity", "a", "q")]
    # one wave later p is gone and q may come
    assert validate(c, plan([("p", "a", "c")], [("q", "b", "a")], cluster=c)) == []


def test_job_topology_holds_with_old_and_new_copies() -> None:
    jobs = [{"name": "train", "topology": {"level": "asw", "mode": "required"}}]
    c = make_cluster(
        [node("a1", asw="A"), node("a2", asw="A"), node("b1", asw="B"), node("b2", asw="B")],
        [pod("w0", "a1", job="train"), pod("w1", "a2", job="train")],
        jobs,
    )
    assert validate(c, plan([("w0", "a1", "a2")], cluster=c)) == []
    # moving the whole gang to switch B in one wave still spans A and B while both copies exist
    moved = plan([("w0", "a1", "b1"), ("w1", "a2", "b2")], cluster=c)
    assert kinds(c, moved) == ["job_topology"]
    assert "span asw:A, asw:B" in validate(c, moved)[0].message


def test_vacated_nodes_must_match_the_replay(fig15: Cluster) -> None:
    violations = validate(fig15, plan(*FIG15_CHAIN, vacated=["node-3"]))
    assert [v.kind for v in violations] == ["vacated_nodes_mismatch"]
    assert "not listed but vacated: node-0" in violations[0].message
    assert "listed but not vacated: node-3" in violations[0].message
    assert kinds(fig15, plan(vacated=["node-0"])) == ["vacated_nodes_mismatch"]


def test_metrics_after_must_match_the_replay(fig15: Cluster) -> None:
    good = plan(*FIG15_CHAIN, vacated=["node-0"])
    after = metrics.summary(apply_plan(fig15, good))
    right = good.model_copy(update={"metrics": PlanMetrics(before=metrics.summary(fig15), after=after)})
    assert validate(fig15, right) == []
    wrong = good.model_copy(update={"metrics": PlanMetrics(after={**after, "empty_nodes": 3})})
    violations = validate(fig15, wrong)
    assert [v.kind for v in violations] == ["metrics_mismatch"]
    assert "metrics.after.empty_nodes is 3, the replay gives 1" in violations[0].message


def test_plan_json_uses_from_and_to() -> None:
    p = parse_plan('{"version": 1, "kind": "defrag", "waves": [[{"pod": "x", "from": "a", "to": "b"}]], "vacated_nodes": []}')
    assert p.waves[0][0].from_ == "a"
    assert '"from": "a"' in p.model_dump_json(by_alias=True).replace('":"', '": "')


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.integers(0, 2**32 - 1))
def test_moves_the_fast_forms_accept_one_per_wave_always_validate(cluster: Cluster, seed: int) -> None:
    rng = random.Random(seed)
    state = ClusterState(cluster)
    waves = []
    movable = [p for p, q in enumerate(cluster.pods) if q.node is not None and not q.locked]
    for _ in range(8):
        if not movable:
            break
        p = rng.choice(movable)
        options = np.flatnonzero(state.feasible_nodes(p))
        if len(options):
            n = int(rng.choice(options.tolist()))
            waves.append([(cluster.pods[p].name, state.node_names[state.pod_node[p]], state.node_names[n])])
            state.move(p, n)
    p = plan(*waves, cluster=cluster)
    assert validate(cluster, p) == []
