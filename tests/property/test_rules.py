"""rules/ is the one definition of feasible; state.py's fast forms must agree with it exactly."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import rules
from planner.cluster import Cluster
from planner.state import PENDING, ClusterState
from tests.support.clusters import make_cluster, node, pod
from tests.support.rule_forms import assert_forms_agree
from tests.support.strategies import clusters


def brute_force_devices(shares: list[float]) -> int:
    """Fewest devices holding the shares, by trying every assignment."""
    best = len(shares)

    def assign(i: int, fills: list[float]) -> None:
        nonlocal best
        if len(fills) >= best:
            return
        if i == len(shares):
            best = len(fills)
            return
        for d in range(len(fills)):
            if fills[d] + shares[i] <= 1 + 1e-9:
                fills[d] += shares[i]
                assign(i + 1, fills)
                fills[d] -= shares[i]
        assign(i + 1, [*fills, shares[i]])

    assign(0, [])
    return best


def test_shares_pack_onto_fewest_devices_where_first_fit_does_not() -> None:
    # First-fit decreasing: {0.4, 0.4}, {0.3, 0.3, 0.3}, {0.3}; the optimum is two {0.4, 0.3, 0.3}.
    shares = [0.4, 0.4, 0.3, 0.3, 0.3, 0.3]
    assert max(rules._first_fit_decreasing(tuple(sorted(shares, reverse=True)))) + 1 == 3
    assert len(rules.pack_shares(shares)) == 2
    assert rules.gpu_devices_needed([2, *shares, 1]) == 5


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.9]), max_size=8))
def test_packing_is_optimal_against_brute_force(shares: list[float]) -> None:
    fills = rules.pack_shares(shares)
    assert len(fills) == brute_force_devices(shares)
    assert all(f <= 1 + 1e-9 for f in fills)
    assert abs(sum(fills) - sum(shares)) < 1e-9


def test_whole_and_fractional_gpus_count_toward_capacity() -> None:
    n = make_cluster([node("n", gpus=2)]).nodes[0]
    cl = make_cluster([node("n", gpus=2)], [pod("a", None, gpus=1), pod("b", None, gpus=0.5), pod("c", None, gpus=0.5), pod("d", None, gpus=0.6)])
    a, b, c, d = cl.pods
    assert rules.pods_fit(n, [a, b, c])  # 1 + one device for 0.5 + 0.5
    assert not rules.pods_fit(n, [a, b, c, d])  # shares need 2 devices now
    assert rules.pods_fit(n, [b, c, d])


def test_static_rules() -> None:
    cl = make_cluster(
        [node("n", gpu_model="A100", labels={"pool": "train"}, schedulable=False)],
        [
            pod("a", None, gpu_models=["H800"]),
            pod("b", None, node_selector={"pool": "infer"}),
            pod("c", None, gpu_models=["A100"], node_selector={"pool": "train"}),
        ],
    )
    n = cl.nodes[0]
    a, b, c = cl.pods
    assert not rules.gpu_model_allowed(a, n) and rules.gpu_model_allowed(c, n)
    assert not rules.selector_matches(b, n) and rules.selector_matches(c, n)
    breaks = {brk.rule for brk in rules.node_rule_breaks(n, [], [c])}
    assert breaks == {rules.UNSCHEDULABLE}
    assert rules.node_rule_breaks(n, [c], []) == []  # a resident may stay on a cordoned node


def test_anti_affinity_only_between_different_pods() -> None:
    cl = make_cluster([node("n")], [pod("a", None, anti_affinity=["g"]), pod("b", None, anti_affinity=["g", "h"]), pod("c", None, anti_affinity=["h"])])
    a, b, c = cl.pods
    assert rules.anti_affinity_conflicts([a, c]) == []
    assert rules.anti_affinity_conflicts([a, b]) == [("g", "a", "b")]
    assert rules.anti_affinity_conflicts([a, a]) == []


def test_topology_domains_fall_back_to_the_node() -> None:
    cl = make_cluster([node("x", asw="a", spine="s"), node("y", asw="b", spine="s"), node("z"), node("w", asw="b")])
    x, y, z, w = cl.nodes
    job = make_cluster([node("n")], jobs=[{"name": "j", "topology": {"level": "asw", "mode": "required"}}]).jobs[0]
    spine_job = job.model_copy(update={"topology": job.topology.model_copy(update={"level": "spine"})})
    assert rules.job_topology_ok(job, [y, w]) and not rules.job_topology_ok(job, [x, y])
    assert not rules.job_topology_ok(job, [z, y])
    assert rules.job_topology_ok(spine_job, [x, y]) and not rules.job_topology_ok(spine_job, [x, w])


# ----------------------------------------------------------------------------------------------
# Fast forms (state.py) against plain forms (rules/)
# ----------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.integers(0, 2**32 - 1))
def test_fast_and_plain_rule_forms_agree_through_random_moves(cluster: Cluster, seed: int) -> None:
    state = ClusterState(cluster)
    assert_forms_agree(state)
    rng = random.Random(seed)
    for _ in range(6):
        if not cluster.pods:
            break
        p = rng.randrange(len(cluster.pods))
        options = np.flatnonzero(state.feasible_nodes(p))
        if len(options) and rng.random() < 0.8:
            state.move(p, int(rng.choice(options.tolist())))
        else:
            state.unplace(p)
        # the incremental usage equals usage recomputed from scratch
        fresh = ClusterState(
            cluster.model_copy(
                update={
                    "pods": [
                        q.model_copy(update={"node": cluster.nodes[at].name if at != PENDING else None}) for q, at in zip(cluster.pods, state.pod_node.tolist())
                    ]
                }
            )
        )
        for field in ("whole_used", "share_devices", "used_cpus", "used_mem"):
            assert np.allclose(getattr(state, field), getattr(fresh, field)), field
        assert_forms_agree(state)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.integers(0, 2**32 - 1))
def test_fits_without_equals_fits_after_the_pods_leave(cluster: Cluster, seed: int) -> None:
    rng = random.Random(seed)
    state = ClusterState(cluster)
    for _ in range(10):
        if not cluster.pods:
            return
        p = rng.randrange(len(cluster.pods))
        n = rng.randrange(len(cluster.nodes))
        here = [q for q in sorted(state.node_pods[n]) if q != p]
        leaving = rng.sample(here, k=rng.randint(0, len(here))) if here else []
        if state.pod_node[p] == n:
            continue
        claimed = state.fits_without(p, n, leaving)
        for q in leaving:
            state.unplace(q)
        actual = state.fits(p, n)
        for q in leaving:
            state.place(q, n)
        assert claimed == actual


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.integers(0, 2**32 - 1))
def test_subset_and_clone_answer_like_the_whole_state(cluster: Cluster, seed: int) -> None:
    rng = random.Random(seed)
    state = ClusterState(cluster)
    nodes = np.array(sorted(rng.sample(range(len(cluster.nodes)), k=rng.randint(1, len(cluster.nodes)))))
    sub = state.subset(nodes)
    twin = state.clone()
    for k, p in enumerate(sub.pod_ids.tolist()):
        assert state.pod_node[p] == nodes[sub.pod_node[k]]
        for j, n in enumerate(nodes.tolist()):
            assert sub.fits(k, j) == state.fits(p, n)
            assert twin.fits(p, n) == state.fits(p, n)
        assert np.array_equal(sub.feasible_nodes(k), state.feasible_nodes(p, nodes))
    for p in range(len(cluster.pods)):  # mutating the clone leaves the original alone
        twin.unplace(p)
    assert state.pods_per_node.sum() == sum(1 for q in cluster.pods if q.node is not None)
