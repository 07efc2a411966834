"""The class LP bound on empty nodes (``models/defrag_bound_lp.py``, issue 45) against a brute force
written here: every end placement of tiny snapshots that the rules accept node by node, within the
move limits. It imports only the snapshot models and ``planner.rules`` for the oracle."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import rules
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.limits import MoveBudget, MoveLimits
from planner.models.defrag_bound import closed_form_bound, empties_bound
from planner.models.defrag_bound_lp import _certified_minimum, _Lp, class_lp_bound
from planner.state import ClusterState
from tests.support.clusters import make_cluster, node, pod
from tests.support.strategies import clusters


def brute_force_most_empty(cluster: Cluster, limits: MoveLimits) -> int:
    """Most nodes without a pod over every end placement of the placed pods such that each node's
    pods fit it (``rules.pods_fit``, those that stayed as residents), a pod that leaves its node may
    arrive (``rules.may_arrive``) and stays under its switch (spine) when its job requires one or
    under ``same_asw``; at most ``max_moves`` pods end elsewhere, and at most ``max_moves_per_node``
    pods leave or reach any one node. Every plan's end state is one of them."""
    nodes = cluster.nodes
    jobs = {j.name: j for j in cluster.jobs}
    row = {n.name: i for i, n in enumerate(nodes)}
    stay: list[list] = [[] for _ in nodes]  # pods that may not move, as residents
    movable = []
    for p in cluster.pods:
        if p.node is None:
            continue
        if p.locked or p.standby:
            stay[row[p.node]].append(p)
        else:
            movable.append((p, row[p.node]))
    choices = []
    for p, home in movable:
        job = jobs.get(p.job) if p.job else None
        options = [home]
        for n, target in enumerate(nodes):
            if n == home or not rules.may_arrive(p, target):
                continue
            levels = ["asw"] if limits.same_asw else []
            if job is not None and job.topology is not None and job.topology.mode == "required":
                levels.append(job.topology.level)
            if any(rules.topology_domain(target, lv) != rules.topology_domain(nodes[home], lv) for lv in levels):
                continue
            options.append(n)
        choices.append(options)
    residents = [list(s) for s in stay]
    arrivals: list[list] = [[] for _ in nodes]
    touches = [0] * len(nodes)
    best = -1

    def search(i: int, moves: int) -> None:
        nonlocal best
        if i == len(movable):
            best = max(best, sum(1 for n in range(len(nodes)) if not residents[n] and not arrivals[n]))
            return
        p, home = movable[i]
        for n in choices[i]:
            moved = n != home
            if moved and limits.max_moves is not None and moves + 1 > limits.max_moves:
                continue
            if moved and limits.max_moves_per_node is not None and max(touches[n], touches[home]) + 1 > limits.max_moves_per_node:
                continue
            (arrivals if moved else residents)[n].append(p)
            if rules.pods_fit(nodes[n], residents[n], arrivals[n]):  # fit is monotone: prune here
                if moved:
                    touches[n] += 1
                    touches[home] += 1
                search(i + 1, moves + moved)
                if moved:
                    touches[n] -= 1
                    touches[home] -= 1
            (arrivals if moved else residents)[n].pop()

    search(0, 0)
    return best


def lp_of(cluster: Cluster, limits: MoveLimits) -> int | None:
    state = ClusterState(cluster)
    return class_lp_bound(state, MoveBudget.of(state, limits)).bound


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(clusters(max_nodes=4, max_pods=6, max_jobs=2), st.sampled_from([None, 0, 1, 2]), st.sampled_from([None, 1, 2]), st.booleans())
def test_the_bounds_are_never_below_the_brute_force_optimum(cluster: Cluster, max_moves, per_node, same_asw) -> None:
    limits = MoveLimits(max_moves=max_moves, max_moves_per_node=per_node, same_asw=same_asw)
    best = brute_force_most_empty(cluster, limits)
    now = sum(1 for n in cluster.nodes if not any(p.node == n.name for p in cluster.pods))
    assert best >= now  # staying put is an end state
    lp = lp_of(cluster, limits)
    assert lp is not None and lp >= best, (lp, best)
    state = ClusterState(cluster)
    budget = MoveBudget.of(state, limits)
    cuts: list = []
    closed = closed_form_bound(state, budget, cuts)
    with_cuts = class_lp_bound(state, budget, cuts=cuts).bound  # the closed form's region counts as rows
    assert with_cuts is not None and best <= with_cuts <= lp
    got = empties_bound(state, budget)
    assert got.bound >= best and got.bound == min(with_cuts, closed.bound)


def pinned_cluster() -> Cluster:
    """Four 1-GPU A10 nodes each with a 1-GPU pod pinned to A10 and two half-empty 8-GPU H800
    nodes with a 4-GPU pod each. The closed form pools the GPUs (the pinned pods 'fit' the H800s'
    free GPUs): 4 empties; only the H800 pair can merge: 1."""
    nodes = [node(f"a{i}", gpus=1, cpus=64, gpu_model="A10") for i in range(4)] + [node(f"h{i}", gpus=8, cpus=64, gpu_model="H800") for i in range(2)]
    pods = [pod(f"p{i}", f"a{i}", gpus=1, cpus=1, gpu_models=["A10"]) for i in range(4)]
    pods += [pod(f"q{i}", f"h{i}", gpus=4, cpus=1) for i in range(2)]
    return make_cluster(nodes, pods)


def test_by_hand_pinned_pods_keep_to_their_nodes():
    cluster = pinned_cluster()
    state = ClusterState(cluster)
    budget = MoveBudget.of(state, MoveLimits())
    assert closed_form_bound(state, budget).bound == 4
    got = empties_bound(state, budget)
    assert (got.bound, got.method, got.class_lp, got.note) == (1, "class-lp", 1, "")
    assert brute_force_most_empty(cluster, MoveLimits()) == 1


def test_by_hand_whole_pods_per_node():
    # four 1-GPU pods of 40 CPUs on 64-CPU nodes: no two share a node, so none can empty (the
    # closed form splits CPUs across nodes: 1)
    cpu = make_cluster([node(f"n{i}", gpus=8, cpus=64) for i in range(4)], [pod(f"p{i}", f"n{i}", gpus=1, cpus=40) for i in range(4)])
    state = ClusterState(cpu)
    budget = MoveBudget.of(state, MoveLimits())
    assert (closed_form_bound(state, budget).bound, empties_bound(state, budget).bound) == (1, 0)
    assert brute_force_most_empty(cpu, MoveLimits()) == 0


def test_without_time_the_closed_form_stands_and_says_so():
    state = ClusterState(pinned_cluster())
    got = empties_bound(state, MoveBudget.of(state, MoveLimits()), time_limit_s=0)
    assert (got.bound, got.method, got.class_lp) == (4, "closed-form", None)
    assert got.note == "no time was left for the class LP; the closed-form bound stands"
    assert empties_bound(state, MoveBudget.of(state, MoveLimits()), time_limit_s=None).note == ""  # not asked for
    late = empties_bound(state, MoveBudget.of(state, MoveLimits()), time_limit_s=1e-9)  # past its deadline while building
    assert (late.bound, late.method, late.class_lp) == (4, "closed-form", None)
    assert late.note == "the class LP was not built within 1e-09 s (0 of 2 pod classes); the closed-form bound stands"


def test_beyond_its_size_cap_the_lp_is_not_built_and_says_so():
    """The cap counts the LP's variables before the build (deterministic, unlike the time limit)."""
    state = ClusterState(pinned_cluster())
    budget = MoveBudget.of(state, MoveLimits())
    built = class_lp_bound(state, budget)
    assert built.bound == 1
    capped = class_lp_bound(state, budget, max_pairs=0)
    assert capped.bound is None and (capped.pod_classes, capped.node_classes) == (0, 0)
    assert capped.note.startswith("the class LP would have up to ") and capped.note.endswith("at most 0 are built): not built")


def test_the_certificate_holds_for_any_multipliers():
    # minimise y1 + y2 s.t. x = 3 (assign), x - 2 y1 - y2 <= 0, 0 <= x <= 3, 0 <= y <= 2: optimum 1.5
    lp = _Lp([0.0, 1.0, 1.0], [3.0, 2.0, 2.0], [[(0, 1.0)], [(0, 1.0), (1, -2.0), (2, -1.0)]], [3.0, None], [3.0, 0.0])
    assert _certified_minimum(lp, [0.5, -0.5]) == Fraction(3, 2)  # the optimal duals prove the optimum
    for duals in ([0.0, 0.0], [1.0, -1.0], [7.0, 3.0], [-2.0, -0.1]):  # any others prove less, never more
        assert _certified_minimum(lp, duals) <= Fraction(3, 2)


def test_the_engine_reports_the_method_and_a_gap_from_it():
    plan = plan_defrag(pinned_cluster(), DefragOptions(method="heuristic", seed=0, allow_product_change=True))  # the pools would pin the pods themselves
    r = plan.report
    assert (r.bound, r.bound_source, r.bound_method, r.objective) == (1, "relaxation", "class-lp", 1)
    assert r.gap == 0 and "bound_note" not in (r.model_extra or {})
    assert r.relaxation_bound["class_lp"] == 1 and r.relaxation_bound["capacity"] == 4


@pytest.mark.parametrize("same_asw", [False, True])
def test_topology_required_jobs_use_only_their_switch(same_asw):
    # a 2-pod job required under one switch sits on two nodes of asw-0; asw-1 has a free 8-GPU node.
    # the pods cannot reach asw-1, so only one node of asw-0 empties (both pods on one node)
    nodes = [node("a0", gpus=8, cpus=64, asw="asw-0"), node("a1", gpus=8, cpus=64, asw="asw-0"), node("b0", gpus=8, cpus=64, asw="asw-1")]
    pods = [pod("g0", "a0", gpus=4, cpus=1, job="gang"), pod("g1", "a1", gpus=4, cpus=1, job="gang"), pod("x", "b0", gpus=8, cpus=1)]
    cluster = make_cluster(nodes, pods, jobs=[{"name": "gang", "topology": {"level": "asw", "mode": "required"}}])
    limits = MoveLimits(same_asw=same_asw)
    assert lp_of(cluster, limits) == 1 == brute_force_most_empty(cluster, limits)


TRACE_SHARES = [0.81, 0.65, 0.55, 0.5, 0.47, 0.32, 0.25, 0.23, 0.16, 0.11]
"""GPU shares as the openb trace holds them (0.81 most often: it pairs only with 0.19 or less)."""


@st.composite
def share_clusters(draw) -> Cluster:
    """2-4 nodes of 1, 2 or 4 GPU devices, 3-7 pods, most of them GPU shares (some whole GPUs, some
    pinned to a GPU model, some locked), each put on its drawn node where the rules let it stand."""
    nodes = [
        node(f"n{i}", gpus=draw(st.sampled_from([1, 1, 2, 2, 4])), cpus=64, gpu_model=draw(st.sampled_from(["A", "A", "B"])))
        for i in range(draw(st.integers(2, 4)))
    ]
    models = {n["name"]: n["gpu_model"] for n in nodes}
    gpus = {n["name"]: n["gpus"] for n in nodes}
    placed: dict[str, list] = {n["name"]: [] for n in nodes}
    pods = []
    for i in range(draw(st.integers(3, 7))):
        on = draw(st.sampled_from(sorted(placed)))
        size = draw(st.sampled_from([*TRACE_SHARES, *TRACE_SHARES, 1.0]))
        pinned = draw(st.sampled_from([False, False, True]))
        wanted = pod(f"p{i}", on, gpus=size, locked=draw(st.sampled_from([False] * 4 + [True])), **({"gpu_models": [models[on]]} if pinned else {}))
        if rules.gpu_devices_needed([*placed[on], size]) <= gpus[on]:
            placed[on].append(size)
            pods.append(wanted)
    return make_cluster(nodes, pods)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(share_clusters())
def test_with_gpu_shares_the_bounds_are_never_below_the_brute_force_optimum(cluster: Cluster) -> None:
    best = brute_force_most_empty(cluster, MoveLimits())
    state = ClusterState(cluster)
    budget = MoveBudget.of(state, MoveLimits())
    cuts: list = []
    closed = closed_form_bound(state, budget, cuts).bound
    lp = class_lp_bound(state, budget).bound
    with_cuts = class_lp_bound(state, budget, cuts=cuts).bound
    assert lp is not None and with_cuts is not None and min(lp, closed, with_cuts) >= best, (lp, closed, with_cuts, best)


def test_by_hand_shares_count_in_devices():
    # four 1-GPU nodes, three 0.6 shares and a 0.2: the shares sum to 2 GPUs (two nodes could empty,
    # counted in GPUs), but no two 0.6 shares share a device: three devices, one node empties
    nodes = [node(f"n{i}", gpus=1, cpus=64) for i in range(4)]
    pods = [pod(f"p{i}", f"n{i}", gpus=0.6) for i in range(3)] + [pod("q", "n3", gpus=0.2)]
    cluster = make_cluster(nodes, pods)
    state = ClusterState(cluster)
    budget = MoveBudget.of(state, MoveLimits())
    assert (closed_form_bound(state, budget).bound, class_lp_bound(state, budget).bound) == (1, 1)
    assert brute_force_most_empty(cluster, MoveLimits()) == 1
    # a locked 0.6 share holds its device: its node's second device takes one more 0.6 share at most
    nodes = [node("a", gpus=2, cpus=64), node("b", gpus=1, cpus=64), node("c", gpus=1, cpus=64)]
    pods = [pod("l", "a", gpus=0.6, locked=True), pod("m", "b", gpus=0.6), pod("k", "c", gpus=0.6)]
    cluster = make_cluster(nodes, pods)
    state = ClusterState(cluster)
    budget = MoveBudget.of(state, MoveLimits())
    assert (closed_form_bound(state, budget).bound, class_lp_bound(state, budget).bound) == (1, 1)
    assert brute_force_most_empty(cluster, MoveLimits()) == 1
