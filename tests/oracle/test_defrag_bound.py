"""The combinatorial bound on empty nodes (``models/defrag_bound.py``) against a brute force written here
(every legal final state of tiny clusters, with the move limits), by hand on small cases, and as the
engine reports it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.limits import MoveBudget, MoveLimits
from planner.models.defrag_bound import empties_bound
from planner.state import ClusterState
from tests.support.clusters import make_cluster, node, pod
from tests.support.defrag_oracle import final_states
from tests.support.strategies import clusters


def best_empties(cluster: Cluster, limits: MoveLimits) -> int:
    """Most empty nodes over every final state the rules and the limits allow (``oracle.final_states``:
    a superset of what plans reach, so the bound must not be below it either)."""
    states = final_states(cluster, limits.max_moves, limits.max_moves_per_node, limits.same_asw, pools=False)  # the bound alone
    return max(sum(1 for n in range(len(cluster.nodes)) if n not in where.values()) for where, _ in states)


def bound_of(cluster: Cluster, limits: MoveLimits) -> int:
    state = ClusterState(cluster)
    return empties_bound(state, MoveBudget.of(state, limits)).bound


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(clusters(max_nodes=4, max_pods=6, max_jobs=2), st.sampled_from([None, 0, 1, 2]), st.sampled_from([None, 1, 2]), st.booleans())
def test_the_bound_is_never_below_the_brute_force_optimum(cluster: Cluster, max_moves, per_node, same_asw) -> None:
    limits = MoveLimits(max_moves=max_moves, max_moves_per_node=per_node, same_asw=same_asw)
    best = best_empties(cluster, limits)
    bound = bound_of(cluster, limits)
    now = sum(1 for n in cluster.nodes if not any(p.node == n.name for p in cluster.pods))
    assert best >= now  # staying put is a plan
    assert bound >= best, (bound, best)


def test_by_hand_capacity_locks_and_budget():
    # four 8-GPU nodes with one 4-GPU pod each: 16 GPUs fit on 2 nodes, so 2 can empty
    four = make_cluster([node(f"n{i}", gpus=8, cpus=64) for i in range(4)], [pod(f"p{i}", f"n{i}", gpus=4, cpus=1) for i in range(4)])
    assert bound_of(four, MoveLimits()) == 2 == best_empties(four, MoveLimits())
    # a locked pod keeps its node: the other three 4-GPU pods need 12 GPUs; the locked node has 4 left
    # and one more node holds the other 8, so 2 can still empty
    locked = make_cluster(
        [node(f"n{i}", gpus=8, cpus=64) for i in range(4)],
        [pod("p0", "n0", gpus=4, cpus=1, locked=True)] + [pod(f"p{i}", f"n{i}", gpus=4, cpus=1) for i in range(1, 4)],
    )
    assert bound_of(locked, MoveLimits()) == 2
    # CPUs bind: 4 pods of 40 CPUs, 160 CPUs, need three 64-CPU nodes in total, so the closed form is
    # 1; the optimum is 0 (no two pods share a node): the closed form does not pack whole pods, the
    # class LP counts them per node (test_defrag_bound_lp.py)
    cpu = make_cluster([node(f"n{i}", gpus=8, cpus=64) for i in range(4)], [pod(f"p{i}", f"n{i}", gpus=1, cpus=40) for i in range(4)])
    bound = empties_bound(ClusterState(cpu), MoveBudget.of(ClusterState(cpu), MoveLimits()))
    assert (bound.capacity_bound, bound.binding, bound.bound, bound.method, best_empties(cpu, MoveLimits())) == (1, "cpus", 0, "class-lp", 0)
    # budget: nodes with 1, 2 and 3 pods and an empty one; with 2 moves only the 1-pod node (or the
    # 2-pod one) can empty, plus the empty node
    pods = [pod("a0", "n0", gpus=1, cpus=1)] + [pod(f"b{i}", "n1", gpus=1, cpus=1) for i in range(2)] + [pod(f"c{i}", "n2", gpus=1, cpus=1) for i in range(3)]
    budget = make_cluster([node(f"n{i}", gpus=8, cpus=64) for i in range(4)], pods)
    got = empties_bound(ClusterState(budget), MoveBudget.of(ClusterState(budget), MoveLimits(max_moves=2)))
    assert (got.bound, got.binding, got.budget_bound) == (2, "budget", 2)
    assert best_empties(budget, MoveLimits(max_moves=2)) == 2


def test_by_hand_largest_nodes_first_and_pods_on_cordoned_nodes():
    # three 2-GPU pods on 2-GPU nodes fit on the one 8-GPU node: the three small nodes can empty
    mixed = make_cluster(
        [node("big", gpus=8, cpus=64)] + [node(f"s{i}", gpus=2, cpus=64) for i in range(3)], [pod(f"p{i}", f"s{i}", gpus=2, cpus=1) for i in range(3)]
    )
    assert bound_of(mixed, MoveLimits()) == 3 == best_empties(mixed, MoveLimits())
    # a pod on a cordoned node may stay or leave; nothing may arrive there
    cordoned = make_cluster(
        [node("n0", gpus=8, cpus=64, schedulable=False), node("n1", gpus=8, cpus=64)], [pod("a", "n0", gpus=1, cpus=1), pod("b", "n1", gpus=1, cpus=1)]
    )
    assert bound_of(cordoned, MoveLimits()) == 1 == best_empties(cordoned, MoveLimits())


def test_by_hand_anti_affinity_needs_distinct_nodes():
    # four 1-GPU replicas of one anti-affinity group, one per node: capacity alone would empty 3
    # nodes; the replicas need 4 distinct nodes. With one replica locked on n0 and a fifth node,
    # the other three need three more nodes: 5 - 1 locked - 3 = 1 can empty
    spread = make_cluster([node(f"n{i}", gpus=8, cpus=64) for i in range(4)], [pod(f"r{i}", f"n{i}", gpus=1, cpus=1, anti_affinity=["svc"]) for i in range(4)])
    got = empties_bound(ClusterState(spread), MoveBudget.of(ClusterState(spread), MoveLimits()))
    assert (got.bound, got.binding, best_empties(spread, MoveLimits())) == (0, "anti_affinity", 0)
    five = make_cluster(
        [node(f"n{i}", gpus=8, cpus=64) for i in range(5)],
        [pod("r0", "n0", gpus=1, cpus=1, anti_affinity=["svc"], locked=True)]
        + [pod(f"r{i}", f"n{i}", gpus=1, cpus=1, anti_affinity=["svc"]) for i in range(1, 4)],
    )
    assert bound_of(five, MoveLimits()) == 1 == best_empties(five, MoveLimits())


def test_large_pods_need_holes_they_fit():
    from planner.models.defrag_bound import _largest_sums

    assert _largest_sums([3, 5], 8).tolist() == [0, 0, 0, 3, 3, 5, 6, 6, 8]
    assert _largest_sums([4, 8], 8).tolist() == [0, 0, 0, 0, 4, 4, 4, 4, 8]
    # three locked 4-GPU pods leave 4-GPU holes (12 free GPUs in all); two movable 8-GPU pods fit no
    # hole, so their nodes cannot both empty: GPU volume alone would allow it
    nodes = [node(f"l{i}", gpus=8, cpus=64) for i in range(3)] + [node(f"m{i}", gpus=8, cpus=64) for i in range(2)]
    pods = [pod(f"x{i}", f"l{i}", gpus=4, cpus=1, locked=True) for i in range(3)] + [pod(f"y{i}", f"m{i}", gpus=8, cpus=1) for i in range(2)]
    holes = make_cluster(nodes, pods)
    got = empties_bound(ClusterState(holes), MoveBudget.of(ClusterState(holes), MoveLimits()))
    assert (got.bound, got.binding, best_empties(holes, MoveLimits())) == (0, "gpus>=8", 0)


def test_the_engine_reports_the_bound_and_gap_on_heuristic_plans():
    from planner.instances.asi import generate_asi

    cluster = generate_asi(nodes=60, seed=1, allocation=0.6)
    plans = {m: plan_defrag(cluster, DefragOptions(method=m, seed=0)) for m in ("heuristic", "descheduler", "repack")}
    bounds = {m: plan.report.bound for m, plan in plans.items()}
    assert len(set(bounds.values())) == 1 and bounds["heuristic"] is not None
    for plan in plans.values():
        r = plan.report
        assert r.status == "heuristic" and r.objective <= r.bound
        assert r.gap == pytest.approx((r.bound - r.objective) / max(r.bound, 1), abs=1e-6)
        assert r.bound_source == "relaxation"
