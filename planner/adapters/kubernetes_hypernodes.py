"""Switches from Volcano HyperNodes, for ``planner.adapters.kubernetes``.

Volcano describes the network as a tree of cluster-scoped ``HyperNode`` objects (API group
``topology.volcano.sh/v1alpha1``, documented in Volcano's "Network Topology Aware Scheduling" guide):
``spec.tier`` (1 is the lowest: the nodes under one leaf switch; higher tiers group lower
HyperNodes), ``spec.members[]`` each with ``type`` ``Node`` or ``HyperNode`` and a ``selector`` of
exactly one of ``exactMatch: {name}``, ``regexMatch: {pattern}`` or ``labelMatch`` (a label selector
on nodes). A node's ``asw`` is the HyperNode of tier ``hypernode_tiers.asw`` above it, its ``spine``
the one of tier ``hypernode_tiers.spine`` (directly or through lower HyperNodes).

Decisions: a regex is searched in the name unanchored, as Go's ``regexp.MatchString`` does (anchor
it with ^ and $ to match whole names), with RE2 (``google-re2``): Go's syntax and its linear time, where
Python's backtracking ``re`` takes seconds to minutes on a pattern such as ``(a+)+$``; a pattern RE2 (and
so Go) refuses, such as a lookahead or a backreference, is an error; a node or HyperNode under two HyperNodes of one tier is an
error (the network is a tree); a member HyperNode that does not exist, a HyperNode matching no
member and tiers the configuration does not map are warnings; a selector with no or several kinds,
an unknown member type and a bad regex are errors naming the HyperNode and the field.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import re2

from planner.adapters import kubernetes_objects as k8s
from planner.adapters.kubernetes_objects import KubeError, as_list, as_object

SELECTOR_KINDS = ("exactMatch", "regexMatch", "labelMatch")


@dataclass
class HyperNodeTopology:
    asw: dict[str, str] = field(default_factory=dict)
    """Node -> the name of its HyperNode at the asw tier."""
    spine: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class _Member:
    kind: str  # Node or HyperNode
    exact: str | None = None
    regex: Any = None  # a compiled RE2 pattern
    labels: dict[str, Any] | None = None


def hypernode_topology(
    hypernodes: list[dict[str, Any]], nodes: dict[str, dict[str, str]], asw_tier: int | None = 1, spine_tier: int | None = 2
) -> HyperNodeTopology:
    """Each node's asw and spine from ``hypernodes`` (HyperNode objects); ``nodes``: name -> labels."""
    out = HyperNodeTopology()
    tiers: dict[str, int] = {}
    members: dict[str, list[_Member]] = {}
    for obj in hypernodes:
        name = obj["metadata"]["name"]
        try:
            spec = as_object(obj.get("spec"), "spec")
            tier = spec.get("tier")
            if isinstance(tier, bool) or not isinstance(tier, int) or tier < 0:
                raise KubeError("spec.tier", f"must be a whole number at least 0, got {tier!r}")
            tiers[name] = tier
            members[name] = [_member(m, f"spec.members[{i}]") for i, m in enumerate(as_list(spec.get("members"), "spec.members"))]
        except KubeError as err:
            out.errors.append(f"HyperNode {name}: {err}")
    unmapped = sorted({t for t in tiers.values()} - {asw_tier, spine_tier})
    if unmapped:
        out.warnings.append(
            f"HyperNode tiers {', '.join(map(str, unmapped))}: not mapped to asw or spine "
            f"(hypernode_tiers maps asw to {asw_tier}, spine to {spine_tier}); ignored"
        )
    parents: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)  # (kind, name) -> tier -> HyperNode
    by_label_key: dict[tuple[str, str], list[str]] = defaultdict(list)
    for node, labels in nodes.items():
        for key, value in labels.items():
            by_label_key[(key, value)].append(node)
    for name in sorted(members):
        matched = 0
        for i, member in enumerate(members[name]):
            names = nodes if member.kind == "Node" else tiers
            found = _matches(member, names, nodes, by_label_key)
            if member.kind == "HyperNode" and member.exact is not None and not found:
                out.warnings.append(f"HyperNode {name}: spec.members[{i}].selector.exactMatch.name: no HyperNode '{member.exact}' in the input; ignored")
            for child in found:
                matched += 1
                held = parents[(member.kind, child)]
                other = held.setdefault(tiers[name], name)
                if other != name:
                    out.errors.append(
                        f"HyperNode {name}: spec.members[{i}]: {member.kind} '{child}' is also under HyperNode "
                        f"'{other}' of tier {tiers[name]}; the network must be a tree"
                    )
        if not matched and members[name]:
            out.warnings.append(f"HyperNode {name}: spec.members: matches no node or HyperNode in the input")
    for node in nodes:
        above = _ancestors(("Node", node), parents)
        if asw_tier is not None and asw_tier in above:
            out.asw[node] = above[asw_tier]
        if spine_tier is not None and spine_tier in above:
            out.spine[node] = above[spine_tier]
    return out


def _member(value: Any, where: str) -> _Member:
    member = as_object(value, where)
    kind = member.get("type", "Node")
    if kind not in ("Node", "HyperNode"):
        raise KubeError(f"{where}.type", f"'{kind}' is not a member type (Node, HyperNode)")
    selector = as_object(member.get("selector"), f"{where}.selector")
    given = [k for k in SELECTOR_KINDS if selector.get(k) is not None]
    if len(given) != 1:
        raise KubeError(f"{where}.selector", f"give exactly one of {', '.join(SELECTOR_KINDS)}, got {len(given)}")
    path = f"{where}.selector.{given[0]}"
    body = as_object(selector[given[0]], path)
    if given[0] == "exactMatch":
        if not isinstance(body.get("name"), str) or not body["name"]:
            raise KubeError(f"{path}.name", "must be a name")
        return _Member(kind, exact=body["name"])
    if given[0] == "regexMatch":
        pattern = body.get("pattern")
        if not isinstance(pattern, str):
            raise KubeError(f"{path}.pattern", "must be a regular expression")
        return _Member(kind, regex=_compile(pattern, f"{path}.pattern"))
    if kind != "Node":
        raise KubeError(path, "labelMatch selects nodes only")
    return _Member(kind, labels=k8s.check_selector(body, path))


def _compile(pattern: str, path: str) -> Any:
    """``pattern`` as RE2 compiles it (Go's regexp syntax), or KubeError saying why not."""
    options = re2.Options()
    options.log_errors = False  # RE2 would also print the error (and the pattern, raw) on stderr
    options.never_capture = True
    try:
        return re2.compile(pattern, options=options)
    except re2.error as err:
        reason = err.args[0].decode("utf-8", "replace") if err.args and isinstance(err.args[0], bytes) else str(err)
        raise KubeError(path, f"{pattern!r} is not a regular expression RE2 (and Volcano's Go) accepts ({reason})") from None


def _matches(member: _Member, names: Any, nodes: dict[str, dict[str, str]], by_label: dict[tuple[str, str], list[str]]) -> list[str]:
    if member.exact is not None:
        return [member.exact] if member.exact in names else []
    if member.regex is not None:
        return [n for n in names if member.regex.search(n)]
    selector = member.labels
    if selector is None:
        return []
    pool: Any = nodes
    for key, value in (selector.get("matchLabels") or {}).items():
        pool = by_label.get((key, value), [])
        break
    return [n for n in pool if k8s.selector_matches(selector, nodes[n])]


def _ancestors(start: tuple[str, str], parents: dict[tuple[str, str], dict[int, str]]) -> dict[int, str]:
    """Tier -> HyperNode above ``start``, lowest first (a cycle stops the walk)."""
    found: dict[int, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for item in frontier:
            for tier, name in sorted(parents.get(item, {}).items()):
                found.setdefault(tier, name)
                if ("HyperNode", name) not in seen:
                    seen.add(("HyperNode", name))
                    nxt.append(("HyperNode", name))
        frontier = nxt
    return found


__all__ = ["HyperNodeTopology", "hypernode_topology"]
