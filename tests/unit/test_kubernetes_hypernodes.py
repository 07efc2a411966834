"""Switches from Volcano HyperNodes (issue 13, item 1: topology defaults that match Volcano's tiers).
Each expected switch is read off the hand-drawn tree in the test."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from planner.adapters.kubernetes import import_kubernetes
from planner.adapters.kubernetes_config import load_config
from planner.adapters.kubernetes_hypernodes import hypernode_topology
from planner.cluster import SnapshotError


def hypernode(name: str, tier: Any, *members: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name}, "spec": {"tier": tier, "members": list(members)}}


def exact(name: str, kind: str = "Node") -> dict[str, Any]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def regex(pattern: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}


def labelled(**labels: str) -> dict[str, Any]:
    return {"type": "Node", "selector": {"labelMatch": {"matchLabels": labels}}}


NODES = {"gpu-0": {}, "gpu-1": {}, "gpu-2": {"rack": "r2"}, "gpu-3": {"rack": "r2"}, "gpu-10": {}, "cpu-0": {}}
TREE = [
    hypernode("s0", 1, exact("gpu-0"), exact("gpu-1")),
    hypernode("s1", 1, labelled(rack="r2")),
    hypernode("s2", 1, regex("^gpu-1[0-9]$")),
    hypernode("p0", 2, exact("s0", "HyperNode"), exact("s1", "HyperNode")),
    hypernode("p1", 2, exact("s2", "HyperNode")),
]


def test_a_two_tier_tree_gives_each_node_its_leaf_and_spine() -> None:
    found = hypernode_topology(TREE, NODES)
    assert found.asw == {"gpu-0": "s0", "gpu-1": "s0", "gpu-2": "s1", "gpu-3": "s1", "gpu-10": "s2"}
    assert found.spine == {"gpu-0": "p0", "gpu-1": "p0", "gpu-2": "p0", "gpu-3": "p0", "gpu-10": "p1"}
    assert found.warnings == [] and found.errors == []


def test_the_tiers_are_configurable_and_unmapped_tiers_warn() -> None:
    found = hypernode_topology([*TREE, hypernode("root", 3, exact("p0", "HyperNode"), exact("p1", "HyperNode"))], NODES, asw_tier=2, spine_tier=3)
    assert found.asw["gpu-10"] == "p1" and found.spine["gpu-0"] == "root"
    assert found.warnings == ["HyperNode tiers 1: not mapped to asw or spine (hypernode_tiers maps asw to 2, spine to 3); ignored"]


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        (
            [hypernode("a", 1, exact("gpu-0")), hypernode("b", 1, regex("gpu-0"))],
            "HyperNode b: spec.members[0]: Node 'gpu-0' is also under HyperNode 'a' of tier 1; the network must be a tree",
        ),
        (
            [hypernode("a", 1, {"type": "Node", "selector": {"exactMatch": {"name": "x"}, "regexMatch": {"pattern": "y"}}})],
            "HyperNode a: spec.members[0].selector: give exactly one of exactMatch, regexMatch, labelMatch, got 2",
        ),
        ([hypernode("a", 1, regex("gpu-("))], "HyperNode a: spec.members[0].selector.regexMatch.pattern: 'gpu-(' is not a regular expression"),
        ([hypernode("a", 1, {"type": "Rack", "selector": {"exactMatch": {"name": "x"}}})], "HyperNode a: spec.members[0].type: 'Rack' is not a member type"),
        ([hypernode("a", "one", exact("gpu-0"))], "HyperNode a: spec.tier: must be a whole number"),
    ],
)
def test_broken_trees_are_errors_naming_the_hypernode_and_field(objects: list[dict[str, Any]], message: str) -> None:
    found = hypernode_topology(objects, NODES)
    assert any(e.startswith(message) for e in found.errors), found.errors


def test_dangling_members_and_empty_hypernodes_warn() -> None:
    found = hypernode_topology([hypernode("a", 2, exact("ghost", "HyperNode")), hypernode("b", 1, exact("nowhere"))], NODES)
    assert "HyperNode a: spec.members[0].selector.exactMatch.name: no HyperNode 'ghost' in the input; ignored" in found.warnings
    assert "HyperNode b: spec.members: matches no node or HyperNode in the input" in found.warnings


def node_object(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}


def test_the_importer_uses_hypernodes_where_labels_name_no_switch() -> None:
    items = [node_object(n, {**labels, **({"network.topology.nvidia.com/leaf": "leaf-x"} if n == "gpu-0" else {})}) for n, labels in NODES.items()]
    document = json.dumps({"kind": "List", "items": [*items, *TREE]})
    nodes = {n.name: n for n in import_kubernetes([(document, "in.json")]).cluster.nodes}
    assert (nodes["gpu-0"].asw, nodes["gpu-0"].spine) == ("leaf-x", "p0")  # the label first, the HyperNode fills the spine
    assert (nodes["gpu-3"].asw, nodes["gpu-10"].spine, nodes["cpu-0"].asw) == ("s1", "p1", None)
    off = import_kubernetes([(document, "in.json")], load_config("hypernode_tiers: {asw: null, spine: null}")).cluster
    assert {n.name: n.asw for n in off.nodes}["gpu-3"] is None
    broken = json.dumps({"kind": "List", "items": [*items, hypernode("bad", 1, regex("("))]})
    with pytest.raises(SnapshotError, match=r"HyperNode bad: spec\.members\[0\]\.selector\.regexMatch\.pattern"):
        import_kubernetes([(broken, "in.json")])


def test_ten_thousand_nodes_under_320_hypernodes_resolve_fast() -> None:
    nodes = {f"n{i:05d}": {"leaf": f"l{i // 32}"} for i in range(10_000)}
    leaves = [hypernode(f"l{k}", 1, labelled(leaf=f"l{k}")) for k in range(313)]
    spines = [hypernode(f"s{k}", 2, *(exact(f"l{j}", "HyperNode") for j in range(k * 40, min(313, k * 40 + 40)))) for k in range(8)]
    start = time.perf_counter()
    found = hypernode_topology([*leaves, *spines], nodes)
    elapsed = time.perf_counter() - start
    assert found.errors == [] and len(found.asw) == 10_000
    assert (found.asw["n09999"], found.spine["n09999"]) == ("l312", "s7") and found.spine["n01280"] == "s1"  # 1280 // 32 = 40
    assert elapsed < 2.0, elapsed
