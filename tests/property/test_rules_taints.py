"""Taints, tolerations and required node affinity: the rules (rules/) and their fast form (state.py)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import rules
from planner.cluster import Cluster, Taint, Toleration
from planner.state import ClusterState
from tests.support.clusters import make_cluster, node, pod
from tests.support.rule_forms import assert_forms_agree
from tests.support.strategies import clusters


def _taint(key: str, effect: str, value: str = "") -> Taint:
    return Taint(key=key, value=value, effect=effect)


def test_toleration_matching_follows_kubernetes() -> None:
    gpu = _taint("nvidia.com/gpu", "NoSchedule", "present")
    assert rules.tolerates(Toleration(key="nvidia.com/gpu", operator="Exists"), gpu)
    assert rules.tolerates(Toleration(key="nvidia.com/gpu", value="present"), gpu)  # Equal by default
    assert not rules.tolerates(Toleration(key="nvidia.com/gpu", value="absent"), gpu)
    assert not rules.tolerates(Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoExecute"), gpu)
    assert rules.tolerates(Toleration(operator="Exists"), gpu)  # empty key + Exists tolerates everything
    assert not rules.tolerates(Toleration(key="other", operator="Exists"), gpu)


def test_untolerated_taints_keep_arriving_pods_off_but_residents_stay() -> None:
    cl = make_cluster(
        [node("n", taints=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}, {"key": "soft", "effect": "PreferNoSchedule"}])],
        [pod("plain", None), pod("tolerant", None, tolerations=[{"key": "dedicated", "value": "infer", "effect": "NoSchedule"}]), pod("resident", "n")],
    )
    n = cl.nodes[0]
    plain, tolerant, resident = cl.pods
    assert [brk.rule for brk in rules.node_rule_breaks(n, [], [plain])] == [rules.TAINT]
    assert rules.node_rule_breaks(n, [], [tolerant]) == []  # PreferNoSchedule never decides feasibility
    assert rules.node_rule_breaks(n, [resident], []) == []  # tainted after it started: it may stay
    state = ClusterState(cl)
    assert not state.fits(0, 0) and state.fits(1, 0)
    assert state.broken_rules(0, 0) == [rules.TAINT]


def test_node_affinity_terms_are_ored_and_expressions_anded() -> None:
    affinity = [
        [{"key": "zone", "operator": "In", "values": ["a", "b"]}, {"key": "spot", "operator": "DoesNotExist"}],
        [{"key": "pool", "operator": "Exists"}],
    ]
    cl = make_cluster(
        [
            node("za", labels={"zone": "a"}),
            node("za-spot", labels={"zone": "a", "spot": "1"}),
            node("pool", labels={"pool": "x", "spot": "1"}),
            node("zc", labels={"zone": "c"}),
        ],
        [pod("p", None, node_affinity=affinity), pod("q", None, node_affinity=[[{"key": "zone", "operator": "NotIn", "values": ["a"]}]])],
    )
    p, q = cl.pods
    assert [rules.node_affinity_matches(p, n) for n in cl.nodes] == [True, False, True, False]
    # a node without the label satisfies NotIn
    assert [rules.node_affinity_matches(q, n) for n in cl.nodes] == [False, False, True, True]
    state = ClusterState(cl)
    assert [bool(state.eligible[state.pod_signature[0], n]) for n in range(4)] == [True, False, True, False]
    assert state.broken_rules(0, 1) == [rules.NODE_AFFINITY]


KEYS = ["gpu", "dedicated"]
TAINTS = [
    [],
    [],
    [{"key": "gpu", "effect": "NoSchedule"}],
    [{"key": "dedicated", "value": "a", "effect": "NoExecute"}],
    [{"key": "gpu", "effect": "PreferNoSchedule"}],
    [{"key": "gpu", "value": "x", "effect": "NoSchedule"}, {"key": "dedicated", "value": "b", "effect": "NoSchedule"}],
]
TOLERATIONS = [
    [],
    [],
    [{"key": "gpu", "operator": "Exists"}],
    [{"key": "dedicated", "value": "a"}],
    [{"operator": "Exists"}],
    [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}, {"key": "dedicated", "value": "b", "effect": "NoSchedule"}],
]
AFFINITIES = [
    None,
    None,
    [[{"key": "pool", "operator": "In", "values": ["train"]}]],
    [[{"key": "pool", "operator": "NotIn", "values": ["train"]}], [{"key": "pool", "operator": "DoesNotExist"}]],
    [[{"key": "pool", "operator": "Exists"}]],
]


def with_taints(cluster: Cluster, rng: random.Random) -> Cluster:
    """The cluster with random taints on nodes and tolerations / node affinity on pods. Placed pods
    stay valid where they are: these rules bind arriving pods only."""
    data = cluster.model_dump()
    for n in data["nodes"]:
        n["taints"] = rng.choice(TAINTS)
    for p in data["pods"]:
        p["tolerations"] = rng.choice(TOLERATIONS)
        p["node_affinity"] = rng.choice(AFFINITIES)
    return Cluster.model_validate(data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.integers(0, 2**32 - 1))
def test_fast_and_plain_forms_agree_with_taints_and_node_affinity(cluster: Cluster, seed: int) -> None:
    rng = random.Random(seed)
    cluster = with_taints(cluster, rng)
    state = ClusterState(cluster)
    assert_forms_agree(state)
    for p, q in enumerate(cluster.pods):  # the eligibility matrix is exactly rules.may_arrive
        for n, nd in enumerate(cluster.nodes):
            assert bool(state.eligible[state.pod_signature[p], n]) == rules.may_arrive(q, nd)
            assert (rules.static_rule_breaks(q, nd) == []) == rules.may_arrive(q, nd)
    for _ in range(4):
        if not cluster.pods:
            break
        p = rng.randrange(len(cluster.pods))
        options = [int(n) for n in state.feasible_nodes(p).nonzero()[0]]
        if options:
            state.move(p, rng.choice(options))
            assert_forms_agree(state)


LABEL_KEYS = ("pool", "zone", "leaf")
LABEL_VALUES = ("a", "b", "c")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_eligibility_of_every_pod_on_every_node_is_may_arrive(data: st.DataObject) -> None:
    """The fast form evaluates each static check once per distinct pod field and node profile (a
    selector once per label pair): the result is rules.may_arrive's, pod by pod and node by node,
    with selectors of several keys, selectors naming missing labels, taints and tolerations."""
    labels = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=3)
    nodes = [
        node(
            f"n{i}",
            gpu_model=data.draw(st.sampled_from(["A100", "H800"])),
            labels=data.draw(labels),
            schedulable=data.draw(st.booleans()),
            taints=data.draw(st.sampled_from([[], [{"key": "pool", "value": "a", "effect": "NoSchedule"}]])),
        )
        for i in range(data.draw(st.integers(1, 8)))
    ]
    pods = [
        pod(
            f"p{i}",
            None,
            node_selector=data.draw(labels),
            gpu_models=data.draw(st.sampled_from([[], ["A100"]])),
            tolerations=data.draw(st.sampled_from([[], [{"key": "pool", "operator": "Exists"}]])),
        )
        for i in range(data.draw(st.integers(1, 10)))
    ]
    cl = make_cluster(nodes, pods)
    state = ClusterState(cl)
    for p, pod_obj in enumerate(cl.pods):
        for n, node_obj in enumerate(cl.nodes):
            assert bool(state.eligible[state.pod_signature[p], n]) == rules.may_arrive(pod_obj, node_obj), (pod_obj, node_obj)
