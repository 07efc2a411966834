"""The kube-scheduler oracle (tests/support/kube_scheduler.py) on hand-made objects: one accepted and one
refused case per Filter plugin, the quantity parser, the scheduler's pod request and the
make-before-break replay."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from tests.support.kube_scheduler import (
    KubeScheduler,
    host_ports,
    parse_quantity,
    pod_requests,
    refusal_counts,
    replay_defrag,
    replay_placements,
    scheduler_amount,
)


def node(name: str, alloc: dict[str, str] | None = None, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi", **(alloc or {})}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": {"allocatable": allocatable},
    }


def pod(
    name: str,
    on: str | None,
    requests: dict[str, str] | None = None,
    *,
    ns: str = "default",
    labels: dict | None = None,
    limits: dict[str, str] | None = None,
    ports: list[dict] | None = None,
    phase: str = "Running",
    **spec: Any,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {}}
    if requests is not None:
        container["resources"]["requests"] = requests
    if limits is not None:
        container["resources"]["limits"] = limits
    if ports:
        container["ports"] = ports
    body = {"containers": [container], **spec}
    if on:
        body["nodeName"] = on
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": body, "status": {"phase": phase}}


def verdict(items: list[dict], name: str, to: str, ns: str = "default") -> list[tuple[str, str]]:
    """Plugins and reasons refusing pod ``ns/name`` (bound or pending) on node ``to``."""
    scheduler = KubeScheduler({"items": items})
    return [(r.plugin, r.reason) for r in scheduler.filter((ns, name), to)]


# -- quantities --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,value",
    [
        ("100m", Fraction(1, 10)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("1k", 1000),
        ("2e3", 2000),
        ("129M", 129 * 10**6),
        ("1Ki", 1024),
        ("24e9", 24 * 10**9),
        ("0.5", Fraction(1, 2)),
        ("1E", 10**18),
        ("3Ei", 3 * 2**60),
        ("7516192768", 7516192768),
        (".5m", Fraction(1, 2000)),
        ("1e-3", Fraction(1, 1000)),
        ("5n", Fraction(5, 10**9)),
        ("2u", Fraction(2, 10**6)),
        (4, 4),
    ],
)
def test_quantities_parse_exactly(text: Any, value: Any) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "Gi", "1.2.3", "1Q", "1 Gi", "1ki"])
def test_bad_quantities_raise(text: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_scheduler_rounds_up_cpu_to_millicores_and_the_rest_to_units() -> None:
    assert scheduler_amount("cpu", "0.0001") == 1
    assert scheduler_amount("cpu", "1.5") == 1500
    assert scheduler_amount("memory", "0.5") == 1
    assert scheduler_amount("nvidia.com/gpu", "2") == 2


# -- pod requests ------------------------------------------------------------------------------


def test_pod_request_is_the_max_of_containers_and_init_peak_with_sidecars_and_overhead() -> None:
    p = pod(
        "p",
        None,
        {"cpu": "1", "memory": "1Gi"},
        limits={"nvidia.com/gpu": "2"},
        overhead={"cpu": "250m"},
        initContainers=[
            {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
            {"name": "fetch", "resources": {"requests": {"cpu": "4", "memory": "512Mi"}}},
            {"name": "late-sidecar", "restartPolicy": "Always", "resources": {"requests": {"memory": "2Gi"}}},
        ],
    )
    got = pod_requests(p)
    # containers 1 cpu + sidecars 0.5 cpu; init peak: fetch 4 + the sidecar before it 0.5 = 4.5 cpu
    assert got["cpu"] == 4500 + 250
    # memory: containers 1Gi + late sidecar 2Gi = 3Gi; init peak 512Mi (+ 0 from the first sidecar)
    assert got["memory"] == 3 * 2**30
    assert got["nvidia.com/gpu"] == 2  # the request defaults to the limit


def test_pod_request_sums_exact_quantities_then_rounds_up() -> None:
    p = pod("p", None, {"cpu": "100u", "memory": "0.5"})
    p["spec"]["containers"].append({"name": "d", "resources": {"requests": {"cpu": "100u", "memory": "0.25"}}})
    assert pod_requests(p) == {"cpu": 1, "memory": 1}  # 0.2m -> 1m, 0.75 byte -> 1 (not 2m and 2 bytes)


def test_host_network_pods_use_their_container_ports_as_host_ports() -> None:
    p = pod("p", None, ports=[{"containerPort": 9100}], hostNetwork=True)
    assert host_ports(p) == [("0.0.0.0", "TCP", 9100)]
    assert host_ports(pod("q", None, ports=[{"containerPort": 9100}])) == []


# -- one accepted and one refused case per plugin -----------------------------------------------


def test_node_unschedulable() -> None:
    cordoned = node("n1", unschedulable=True)
    items = [cordoned, pod("a", None), pod("b", None, tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}])]
    assert verdict(items, "a", "n1") == [("NodeUnschedulable", "node(s) were unschedulable")]
    assert verdict(items, "b", "n1") == []


def test_node_resources_fit_checks_every_resource_by_name() -> None:
    items = [
        node("whole", {"nvidia.com/gpu": "8"}),
        node("shared", {"nvidia.com/gpu.shared": "32"}),
        node("mig", {"nvidia.com/mig-1g.10gb": "7"}),
        pod("resident", "whole", {"nvidia.com/gpu": "6", "cpu": "2"}),
        pod("shared-nb", None, {"nvidia.com/gpu.shared": "1"}),
        pod("mig-job", None, {"nvidia.com/mig-1g.10gb": "1"}),
        pod("two", None, {"nvidia.com/gpu": "2"}),
        pod("three", None, {"nvidia.com/gpu": "3"}),
        pod("rdma", None, {"rdma/rdma_shared_device_a": "1"}),
        pod("fat", None, {"cpu": "6001m"}),
        pod("disk", None, {"ephemeral-storage": "101Gi"}),
        pod("huge", None, {"hugepages-2Mi": "1Gi"}),
    ]
    assert verdict(items, "two", "whole") == []
    assert verdict(items, "three", "whole") == [("NodeResourcesFit", "Insufficient nvidia.com/gpu")]
    assert verdict(items, "shared-nb", "shared") == []
    assert verdict(items, "shared-nb", "whole") == [("NodeResourcesFit", "Insufficient nvidia.com/gpu.shared")]
    assert verdict(items, "mig-job", "mig") == []
    assert verdict(items, "mig-job", "whole") == [("NodeResourcesFit", "Insufficient nvidia.com/mig-1g.10gb")]
    assert verdict(items, "two", "mig") == [("NodeResourcesFit", "Insufficient nvidia.com/gpu")]
    assert verdict(items, "rdma", "whole") == [("NodeResourcesFit", "Insufficient rdma/rdma_shared_device_a")]
    assert verdict(items, "fat", "whole") == [("NodeResourcesFit", "Insufficient cpu")]
    assert verdict(items, "fat", "shared") == []
    assert verdict(items, "disk", "whole") == [("NodeResourcesFit", "Insufficient ephemeral-storage")]
    assert verdict(items, "huge", "whole") == [("NodeResourcesFit", "Insufficient hugepages-2Mi")]


def test_node_resources_fit_counts_pods() -> None:
    items = [
        node("n1", {"pods": "2"}),
        node("n2", {"pods": "3"}),
        pod("a", "n1"),
        pod("b", "n1"),
        pod("c", "n2"),
        pod("d", "n2"),
        pod("new", None),
        pod("done", "n1", phase="Succeeded"),
    ]
    assert verdict(items, "new", "n1") == [("NodeResourcesFit", "Too many pods")]
    assert verdict(items, "new", "n2") == []  # the Succeeded pod is not in the scheduler's view


def test_taint_toleration() -> None:
    items = [
        node("inf", taints=[{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}, {"key": "soft", "effect": "PreferNoSchedule"}]),
        pod("plain", None),
        pod("tolerant", None, tolerations=[{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}]),
        pod("wrong-value", None, tolerations=[{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]),
        pod("everything", None, tolerations=[{"operator": "Exists"}]),
    ]
    assert verdict(items, "plain", "inf") == [("TaintToleration", "node(s) had untolerated taint {dedicated: inference}")]
    assert verdict(items, "wrong-value", "inf") == [("TaintToleration", "node(s) had untolerated taint {dedicated: inference}")]
    assert verdict(items, "tolerant", "inf") == []
    assert verdict(items, "everything", "inf") == []


def _affinity(*terms: dict) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


@pytest.mark.parametrize(
    "term,accepted",
    [
        ({"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["h100"]}]}, False),
        ({"matchExpressions": [{"key": "mig", "operator": "NotIn", "values": ["x"]}]}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, False),
        ({"matchExpressions": [{"key": "memory", "operator": "Gt", "values": ["40000"]}]}, True),
        ({"matchExpressions": [{"key": "memory", "operator": "Lt", "values": ["40000"]}]}, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1"]}]}, False),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, True),
        ({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}, False),
        ({}, False),
    ],
)
def test_node_affinity_operators(term: dict, accepted: bool) -> None:
    items = [node("n1", labels={"gpu": "h100", "memory": "81559"}), pod("p", None, affinity=_affinity(term))]
    assert (verdict(items, "p", "n1") == []) is accepted


def test_node_affinity_terms_are_ored_and_the_selector_anded() -> None:
    terms = _affinity(
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["l40s"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]},
    )
    items = [node("n1", labels={"gpu": "h100"}), pod("p", None, affinity=terms), pod("q", None, affinity=terms, nodeSelector={"pool": "x"})]
    assert verdict(items, "p", "n1") == []
    assert verdict(items, "q", "n1") == [("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")]


def _anti(app: str, key: str = "kubernetes.io/hostname", **term: Any) -> dict:
    return {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **term}]}
    }


def test_inter_pod_anti_affinity_of_the_incoming_pod() -> None:
    items = [
        node("n1"),
        node("n2"),
        pod("db-0", "n1", labels={"app": "db"}, affinity=_anti("db")),
        pod("db-1", None, labels={"app": "db"}, affinity=_anti("db")),
        pod("other-ns", "n2", ns="team", labels={"app": "db"}),
    ]
    assert verdict(items, "db-1", "n1") == [
        ("InterPodAffinity", "node(s) didn't satisfy existing pods anti-affinity rules"),
        ("InterPodAffinity", "node(s) didn't match pod anti-affinity rules"),
    ]
    assert verdict(items, "db-1", "n2") == []  # the pod on n2 is in another namespace


def test_existing_pods_anti_affinity_refuses_the_incoming_pod() -> None:
    items = [node("n1"), node("n2"), pod("guard", "n1", affinity=_anti("web")), pod("web", None, labels={"app": "web"})]
    assert verdict(items, "web", "n1") == [("InterPodAffinity", "node(s) didn't satisfy existing pods anti-affinity rules")]
    assert verdict(items, "web", "n2") == []


def test_anti_affinity_namespaces_and_namespace_selector() -> None:
    team = {"kind": "Namespace", "metadata": {"name": "team", "labels": {"tier": "t"}}}
    items = [
        team,
        node("n1"),
        pod("x", "n1", ns="team", labels={"app": "a"}),
        pod("listed", None, affinity=_anti("a", namespaces=["team"])),
        pod("selected", None, affinity=_anti("a", namespaceSelector={"matchLabels": {"tier": "t"}})),
        pod("all", None, affinity=_anti("a", namespaceSelector={})),
        pod("other", None, affinity=_anti("a", namespaceSelector={"matchLabels": {"tier": "u"}})),
    ]
    refused = [("InterPodAffinity", "node(s) didn't match pod anti-affinity rules")]
    assert verdict(items, "listed", "n1") == refused
    assert verdict(items, "selected", "n1") == refused
    assert verdict(items, "all", "n1") == refused
    assert verdict(items, "other", "n1") == []


def test_anti_affinity_on_a_zone_and_match_expressions() -> None:
    term = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["kafka"]}]}, "topologyKey": "zone"}
            ]
        }
    }
    items = [
        node("a-1", labels={"zone": "a"}),
        node("a-2", labels={"zone": "a"}),
        node("b-1", labels={"zone": "b"}),
        pod("k0", "a-1", labels={"app": "kafka"}),
        pod("k1", None, labels={"app": "kafka"}, affinity=term),
    ]
    assert verdict(items, "k1", "a-2") == [("InterPodAffinity", "node(s) didn't match pod anti-affinity rules")]
    assert verdict(items, "k1", "b-1") == []


def test_pod_affinity() -> None:
    term = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": "kubernetes.io/hostname"}]
        }
    }
    items = [
        node("n1"),
        node("n2"),
        pod("api", "n1", labels={"app": "api"}),
        pod("cache", None, affinity=term),
        pod(
            "lonely",
            None,
            labels={"app": "solo"},
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}
                    ]
                }
            },
        ),
    ]
    assert verdict(items, "cache", "n1") == []
    assert verdict(items, "cache", "n2") == [("InterPodAffinity", "node(s) didn't match pod affinity rules")]
    assert verdict(items, "lonely", "n2") == []  # no pod matches anywhere and the pod matches its own term


def test_pod_affinity_needs_one_pod_matching_every_term() -> None:
    """Two terms met by two different pods in the domain are not met (``podMatchesAllAffinityTerms``)."""
    terms = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": "kubernetes.io/hostname"},
                {"labelSelector": {"matchLabels": {"tier": "web"}}, "topologyKey": "kubernetes.io/hostname"},
            ]
        }
    }
    items = [
        node("n1"),
        node("n2"),
        pod("api", "n1", labels={"app": "api"}),
        pod("web", "n1", labels={"tier": "web"}),
        pod("both", "n2", labels={"app": "api", "tier": "web"}),
        pod("cache", None, affinity=terms),
    ]
    assert verdict(items, "cache", "n1") == [("InterPodAffinity", "node(s) didn't match pod affinity rules")]
    assert verdict(items, "cache", "n2") == []


def test_node_ports() -> None:
    items = [
        node("n1"),
        node("n2"),
        pod("exporter", "n1", ports=[{"containerPort": 9100}], hostNetwork=True),
        pod("ingress", "n2", ports=[{"containerPort": 80, "hostPort": 80, "hostIP": "10.0.0.1"}]),
        pod("metrics", None, ports=[{"containerPort": 9100, "hostPort": 9100}]),
        pod("udp", None, ports=[{"containerPort": 9100, "hostPort": 9100, "protocol": "UDP"}]),
        pod("web-any", None, ports=[{"containerPort": 80, "hostPort": 80}]),
        pod("web-other-ip", None, ports=[{"containerPort": 80, "hostPort": 80, "hostIP": "10.0.0.2"}]),
    ]
    refused = [("NodePorts", "node(s) didn't have free ports for the requested pod ports")]
    assert verdict(items, "metrics", "n1") == refused
    assert verdict(items, "udp", "n1") == []
    assert verdict(items, "web-any", "n2") == refused  # the 0.0.0.0 wildcard clashes with every address
    assert verdict(items, "web-other-ip", "n2") == []
    assert verdict(items, "metrics", "n2") == []


# -- replays -----------------------------------------------------------------------------------


def test_make_before_break_holds_both_copies_during_a_wave() -> None:
    """A swap of two 6-GPU pods between two 8-GPU nodes in one wave is refused twice (each copy
    arrives while the other still holds its node); one after the other via a third node, it passes."""
    gpu = {"nvidia.com/gpu": "8"}
    items = [node("n1", gpu), node("n2", gpu), node("n3", gpu), pod("a", "n1", {"nvidia.com/gpu": "6"}), pod("b", "n2", {"nvidia.com/gpu": "6"})]
    swap = {"waves": [[{"pod": "a", "from": "n1", "to": "n2"}, {"pod": "b", "from": "n2", "to": "n1"}]]}
    refusals = replay_defrag({"items": items}, swap)
    assert [(r.pod, r.plugin, r.reason) for r in refusals] == [
        ("a", "NodeResourcesFit", "Insufficient nvidia.com/gpu"),
        ("b", "NodeResourcesFit", "Insufficient nvidia.com/gpu"),
    ]
    serial = {"waves": [[{"pod": "a", "from": "n1", "to": "n3"}], [{"pod": "b", "from": "n2", "to": "n1"}], [{"pod": "a", "from": "n3", "to": "n2"}]]}
    assert replay_defrag({"items": items}, serial) == []


def test_arrivals_of_one_wave_count_against_each_other() -> None:
    gpu = {"nvidia.com/gpu": "8"}
    items = [node("n1", gpu), node("n2", gpu), node("n3", gpu), pod("a", "n1", {"nvidia.com/gpu": "5"}), pod("b", "n2", {"nvidia.com/gpu": "5"})]
    plan = {"waves": [[{"pod": "a", "from": "n1", "to": "n3"}, {"pod": "b", "from": "n2", "to": "n3"}]]}
    refusals = replay_defrag({"items": items}, plan)
    assert [(r.wave, r.pod, r.to) for r in refusals] == [(0, "b", "n3")]
    assert refusal_counts(refusals)[0] == 1


def test_plan_names_resolve_by_namespace_and_source() -> None:
    items = [
        node("n1"),
        node("n2"),
        node("n3"),
        pod("redis-0", "n1", ns="a", labels={"app": "redis"}, affinity=_anti("redis")),
        pod("redis-0", "n2", ns="b", labels={"app": "redis"}, affinity=_anti("redis")),
        pod("x", "n3", ns="b", labels={"app": "redis"}),
    ]
    assert replay_defrag({"items": items}, {"waves": [[{"pod": "a/redis-0", "from": "n1", "to": "n3"}]]}) == []
    refused = replay_defrag({"items": items}, {"waves": [[{"pod": "redis-0", "from": "n2", "to": "n3"}]]})
    assert [(r.plugin, r.reason) for r in refused] == [("InterPodAffinity", "node(s) didn't match pod anti-affinity rules")]
    missing = replay_defrag({"items": items}, {"waves": [[{"pod": "redis-0", "from": "n3", "to": "n1"}]]})
    assert [r.plugin for r in missing] == ["Plan"]


def test_placement_replay_removes_victims_first() -> None:
    items = [node("n1", {"nvidia.com/gpu": "8"}), pod("low", "n1", {"nvidia.com/gpu": "8"}), pod("high", None, {"nvidia.com/gpu": "8"}, phase="Pending")]
    plan = {"victims": [{"pod": "low", "node": "n1"}], "placements": [{"pod": "high", "node": "n1"}]}
    assert replay_placements({"items": items}, plan) == []
    refused = replay_placements({"items": items}, {"victims": [], "placements": [{"pod": "high", "node": "n1"}]})
    assert [(r.plugin, r.reason) for r in refused] == [("NodeResourcesFit", "Insufficient nvidia.com/gpu")]


def _spread(key: str = "zone", skew: int = 1, **more: Any) -> list[dict]:
    return [{"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "w"}}, **more}]


def test_pod_topology_spread() -> None:
    items = [
        node("a1", labels={"zone": "a"}),
        node("a2", labels={"zone": "a"}),
        node("b1", labels={"zone": "b"}),
        node("x"),
        pod("w0", "a1", labels={"app": "w"}),
        pod("w1", None, labels={"app": "w"}, topologySpreadConstraints=_spread()),
        pod("loose", None, labels={"app": "w"}, topologySpreadConstraints=_spread(skew=2)),
        pod("soft", None, labels={"app": "w"}, topologySpreadConstraints=_spread(whenUnsatisfiable="ScheduleAnyway")),
    ]
    refused = [("PodTopologySpread", "node(s) didn't match pod topology spread constraints")]
    assert verdict(items, "w1", "a2") == refused  # zone a would hold 2, zone b 0
    assert verdict(items, "w1", "b1") == []
    assert verdict(items, "loose", "a2") == []
    assert verdict(items, "soft", "a2") == []
    assert verdict(items, "w1", "x") == [("PodTopologySpread", "node(s) didn't match pod topology spread constraints (missing required label)")]


def test_pod_topology_spread_counts_only_nodes_the_pod_may_use() -> None:
    items = [
        node("a1", labels={"zone": "a", "pool": "p"}),
        node("b1", labels={"zone": "b"}),
        pod("w0", "a1", labels={"app": "w"}),
        pod("pinned", None, labels={"app": "w"}, nodeSelector={"pool": "p"}, topologySpreadConstraints=_spread()),
        pod("ignoring", None, labels={"app": "w"}, nodeSelector={"pool": "p"}, topologySpreadConstraints=_spread(nodeAffinityPolicy="Ignore")),
    ]
    # zone b is not a domain for a pod that may only use pool p: zone a alone, skew 2 - 2 = 0
    assert verdict(items, "pinned", "a1") == []
    assert verdict(items, "ignoring", "a1") == [("PodTopologySpread", "node(s) didn't match pod topology spread constraints")]


def test_pod_topology_spread_min_domains() -> None:
    items = [
        node("a1", labels={"zone": "a"}),
        node("b1", labels={"zone": "b"}),
        pod("w0", "a1", labels={"app": "w"}),
        pod("wb", "b1", labels={"app": "w"}),
        pod("two", None, labels={"app": "w"}, topologySpreadConstraints=_spread()),
        pod("three", None, labels={"app": "w"}, topologySpreadConstraints=_spread(minDomains=3)),
    ]
    assert verdict(items, "two", "a1") == []  # 1 + 1 - 1
    # two domains, fewer than minDomains 3: the minimum counts as 0, so 1 + 1 - 0 > 1
    assert verdict(items, "three", "a1") == [("PodTopologySpread", "node(s) didn't match pod topology spread constraints")]
