"""The baseline scheduler and its node scores: legal placements only, all-or-nothing gangs, policies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cluster import Cluster
from planner.heuristics.scheduler import POLICIES, pick_node, schedule_gang, schedule_pod
from planner.heuristics.scoring import least_allocated, most_allocated
from planner.snapshot import dump_cluster, parse_cluster
from planner.state import PENDING, ClusterState
from tests.support.clusters import make_cluster, node, pod
from tests.support.strategies import clusters


def placed_cluster(state: ClusterState) -> Cluster:
    """The state's cluster with every pod on the node the state says (re-checked by parse_cluster)."""
    cluster = state.cluster
    pods = [p.model_copy(update={"node": state.node_names[n] if n >= 0 else None}) for p, n in zip(cluster.pods, state.pod_node.tolist())]
    return parse_cluster(dump_cluster(cluster.model_copy(update={"pods": pods})))


def three_nodes() -> ClusterState:
    """n-empty (nothing), n-half (4 GPUs, 32 CPUs used), n-full (7 GPUs, 56 CPUs used), and a pending pod."""
    cluster = make_cluster(
        [node("n-empty"), node("n-half"), node("n-full")],
        [
            pod("a", "n-half", 4, cpus=32),
            pod("b", "n-full", 4, cpus=32),
            pod("c", "n-full", 2, cpus=16),
            pod("d", "n-full", 1, cpus=8),
            pod("new", None, 1, cpus=8),
        ],
    )
    return ClusterState(cluster)


# ----------------------------------------------------------------------------------------------
# Scores and policies on a hand-made cluster
# ----------------------------------------------------------------------------------------------


def test_spread_picks_the_emptiest_node():
    state = three_nodes()
    p = state.pod_index["new"]
    assert state.node_names[schedule_pod(state, p, "spread", np.random.default_rng(0))] == "n-empty"


def test_binpack_picks_the_fullest_node_that_fits():
    state = three_nodes()
    p = state.pod_index["new"]
    assert state.node_names[schedule_pod(state, p, "binpack", np.random.default_rng(0))] == "n-full"


def test_scores_are_the_mean_fraction_over_gpus_cpus_and_memory_after_placing():
    state = three_nodes()
    p = state.pod_index["new"]
    nodes = np.arange(3)
    used = most_allocated(state, p, nodes)
    # n-half after the pod: GPUs 5/8, CPUs 40/64, memory 0/512.
    assert used[1] == pytest.approx((5 / 8 + 40 / 64 + 0) / 3)
    assert least_allocated(state, p, nodes) == pytest.approx(1 - used)


def test_scores_leave_out_resources_a_node_does_not_have():
    cluster = make_cluster([node("cpu-only", gpus=0, cpus=10, memory_gib=100)], [pod("x", None, 0, cpus=5, memory_gib=10)])
    state = ClusterState(cluster)
    assert most_allocated(state, 0, np.array([0]))[0] == pytest.approx((0.5 + 0.1) / 2)


def test_ties_are_broken_by_the_seed_deterministically():
    cluster = make_cluster([node(f"n-{i}") for i in range(6)], [pod("x", None, 1)])
    chosen = set()
    for seed in range(30):
        picks = {pick_node(ClusterState(cluster), 0, "spread", np.random.default_rng(seed)) for _ in range(3)}
        assert len(picks) == 1  # same seed, same choice
        chosen |= picks
    assert len(chosen) > 1  # different seeds spread over the tied nodes


def test_random_policy_picks_only_feasible_nodes_and_all_of_them():
    cluster = make_cluster(
        [node("ok-1"), node("ok-2"), node("wrong-model", gpu_model="H800"), node("full")],
        [pod("blocker", "full", 8), pod("x", None, 2, gpu_models=[""])],
    )
    state = ClusterState(cluster)
    p = state.pod_index["x"]
    picks = {state.node_names[pick_node(state, p, "random", np.random.default_rng(s))] for s in range(40)}
    assert picks == {"ok-1", "ok-2"}


def test_a_pod_that_fits_nowhere_is_not_placed():
    state = ClusterState(make_cluster([node("n-0")], [pod("big", None, 8, cpus=100)]))
    assert schedule_pod(state, 0, "spread", np.random.default_rng(0)) == -1
    assert state.pod_node[0] == PENDING


def test_scheduling_a_placed_pod_or_an_unknown_policy_is_refused():
    state = three_nodes()
    with pytest.raises(ValueError, match="already placed"):
        schedule_pod(state, state.pod_index["a"], "spread", np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown scheduling policy"):
        schedule_pod(state, state.pod_index["new"], "first-fit", np.random.default_rng(0))


def test_a_gpu_share_goes_where_a_device_has_room():
    cluster = make_cluster(
        [node("n-0", gpus=1), node("n-1", gpus=1)],
        [pod("s1", "n-0", 0.7), pod("s2", "n-1", 0.5), pod("new", None, 0.4)],
    )
    state = ClusterState(cluster)
    n = schedule_pod(state, state.pod_index["new"], "binpack", np.random.default_rng(0))
    assert state.node_names[n] == "n-1"


# ----------------------------------------------------------------------------------------------
# Gangs
# ----------------------------------------------------------------------------------------------


def two_switches(gang_pods: int, topology: dict | None) -> ClusterState:
    """Two ASWs of three nodes; one node of each is taken, so each ASW has two free nodes."""
    nodes = [node(f"a-{i}", asw="asw-a") for i in range(3)] + [node(f"b-{i}", asw="asw-b") for i in range(3)]
    pods = [pod("busy-a", "a-0", 8), pod("busy-b", "b-0", 8)]
    pods += [pod(f"g-{k}", None, 8, job="gang") for k in range(gang_pods)]
    return ClusterState(make_cluster(nodes, pods, [{"name": "gang", "topology": topology}]))


REQUIRED_ASW = {"level": "asw", "mode": "required"}


@pytest.mark.parametrize("policy", POLICIES)
def test_a_required_gang_lands_under_one_switch(policy):
    state = two_switches(2, REQUIRED_ASW)
    gang = [state.pod_index["g-0"], state.pod_index["g-1"]]
    nodes = schedule_gang(state, gang, policy, np.random.default_rng(1))
    assert nodes is not None and len(set(state.asw_domain[nodes].tolist())) == 1
    placed_cluster(state)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_required_gang_that_fits_only_across_switches_is_not_placed_at_all(policy):
    state = two_switches(3, REQUIRED_ASW)
    gang = [state.pod_index[f"g-{k}"] for k in range(3)]
    before = state.pod_node.copy(), state.whole_used.copy(), state.used_cpus.copy()
    assert schedule_gang(state, gang, policy, np.random.default_rng(1)) is None
    assert np.array_equal(state.pod_node, before[0])
    assert np.array_equal(state.whole_used, before[1]) and np.array_equal(state.used_cpus, before[2])
    assert not state.job_domains.get(int(state.pod_job[gang[0]]))


def test_a_gang_without_topology_or_with_a_preferred_one_may_span_switches():
    for topology in (None, {"level": "asw", "mode": "preferred"}):
        state = two_switches(3, topology)
        gang = [state.pod_index[f"g-{k}"] for k in range(3)]
        nodes = schedule_gang(state, gang, "spread", np.random.default_rng(0))
        assert nodes is not None and len(set(nodes)) == 3


def test_a_gang_too_big_for_the_cluster_is_rolled_back():
    state = two_switches(5, None)
    gang = [state.pod_index[f"g-{k}"] for k in range(5)]
    assert schedule_gang(state, gang, "binpack", np.random.default_rng(0)) is None
    assert all(state.pod_node[p] == PENDING for p in gang)
    assert int(state.whole_used.sum()) == 16


# ----------------------------------------------------------------------------------------------
# Invariants on random clusters
# ----------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(max_nodes=6, max_pods=14), st.sampled_from(POLICIES), st.integers(0, 2**32 - 1))
def test_the_scheduler_places_only_where_state_fits(cluster, policy, seed):
    state = ClusterState(cluster)
    rng = np.random.default_rng(seed)
    for p in np.flatnonzero(state.pod_node == PENDING).tolist():
        n = pick_node(state, p, policy, rng)
        feasible = np.flatnonzero(state.feasible_nodes(p))
        if n < 0:
            assert len(feasible) == 0
            continue
        assert state.fits(p, n) and n in feasible
        state.place(p, n)
    placed_cluster(state)  # every rule of rules/, checked independently of the state


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(max_nodes=6, max_pods=14, max_jobs=3), st.sampled_from(POLICIES), st.integers(0, 2**32 - 1))
def test_gangs_are_placed_all_or_nothing(cluster, policy, seed):
    state = ClusterState(cluster)
    rng = np.random.default_rng(seed)
    for j in range(len(cluster.jobs)):
        gang = np.flatnonzero((state.pod_job == j) & (state.pod_node == PENDING)).tolist()
        used = int(state.whole_used.sum()), float(state.used_cpus.sum())
        nodes = schedule_gang(state, gang, policy, rng)
        if nodes is None:
            assert all(state.pod_node[p] == PENDING for p in gang)
            assert (int(state.whole_used.sum()), float(state.used_cpus.sum())) == pytest.approx(used)
        else:
            assert [int(state.pod_node[p]) for p in gang] == nodes
    placed_cluster(state)
