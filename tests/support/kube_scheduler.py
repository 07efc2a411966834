"""An independent replay of kube-scheduler's Filter plugins on raw Kubernetes objects (the judge).

This module reads the dicts of a kubectl List (``kubectl get nodes,pods,pdb,namespaces -A -o json``)
and NOTHING of the planner: no snapshot, no rules, no importer. It answers one question the way
kube-scheduler (v1.30, the default profile) answers it: would this pod be admitted to this node, given
the pods bound there now? Each refusal names the Filter plugin that refuses and its reason, in the
scheduler's own words.

Filter plugins replayed (``pkg/scheduler/framework/plugins``):

* ``NodeUnschedulable``: ``spec.unschedulable`` refuses unless the pod tolerates the
  ``node.kubernetes.io/unschedulable:NoSchedule`` taint.
* ``NodeResourcesFit``: the ``pods`` count against allocatable ``pods``, then EVERY requested resource
  by its name (cpu in millicores, memory and ephemeral-storage in bytes, every scalar resource such as
  ``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``, ``nvidia.com/gpu.shared``, ``rdma/*``,
  ``hugepages-*``) against allocatable minus what the node's pods request. A resource the node does
  not advertise has allocatable 0. The request of a pod is the scheduler's (``component-helpers``
  ``PodRequests``): the sum over containers, sidecars (init containers with ``restartPolicy: Always``)
  added to it and carried under later init containers, the max with the init-container peak, plus
  ``spec.overhead``; a container's missing request defaults to its limit (API defaulting).
* ``TaintToleration``: every NoSchedule/NoExecute taint must be tolerated (PreferNoSchedule never
  refuses).
* ``NodeAffinity``: ``spec.nodeSelector`` and required node affinity (terms ORed, expressions ANDed;
  In/NotIn/Exists/DoesNotExist/Gt/Lt on labels, ``matchFields`` on ``metadata.name``).
* ``InterPodAffinity``: the incoming pod's required podAffinity (in each term's topology domain a
  pod matching all its terms, or no such pod anywhere and the pod matches its own terms) and
  podAntiAffinity (no matching pod in the domain), and existing pods' required anti-affinity
  against the incoming pod;
  namespaces from ``namespaces``, ``namespaceSelector`` (Namespace objects' labels and
  ``kubernetes.io/metadata.name``; ``{}`` = all) or else the pod's own namespace.
* ``NodePorts``: host ports (``hostNetwork`` pods' container ports are host ports, as API defaulting
  makes them) conflict by port and protocol when either hostIP is the ``0.0.0.0`` wildcard or both
  are the same address.
* ``PodTopologySpread``: ``DoNotSchedule`` constraints (maxSkew, minDomains, matchLabelKeys,
  nodeAffinityPolicy, nodeTaintsPolicy), as ``pod_topology_spread`` says.

The readers of raw objects (quantities, a pod's request, host ports, tolerations, selectors) are in
``tests/support/kube_objects.py`` and re-exported here. Pods in the scheduler's view are the non-terminal
pods with a ``spec.nodeName`` (the scheduler's informer excludes Succeeded and Failed pods).

``replay_defrag`` replays a defrag plan make-before-break: in each wave every moving pod's new copy is
admitted (or refused) against the destination's state at that point (residents, earlier arrivals of
the same wave, copies still there), then the wave's sources are released. A refused copy is still
placed, so each move is judged against the state the plan intends.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tests.support.kube_objects import (  # noqa: F401 (re-exported: the oracle's readers of raw objects)
    container_requests,
    host_ports,
    label_selector_matches,
    node_affinity_matches,
    node_selector_term_matches,
    parse_quantity,
    pod_key,
    pod_requests,
    requirement_matches,
    scheduler_amount,
    terminal,
    tolerated,
    tolerates,
)

PLUGINS = ("NodeUnschedulable", "NodeResourcesFit", "TaintToleration", "NodeAffinity", "InterPodAffinity", "NodePorts", "PodTopologySpread")
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
HOSTNAME = "kubernetes.io/hostname"

# ----------------------------------------------------------------------------------------------
# The cluster as the scheduler sees it
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    plugin: str
    reason: str


@dataclass(frozen=True)
class MoveRefusal:
    wave: int
    pod: str
    from_: str
    to: str
    plugin: str
    reason: str


def _affinity_terms(pod: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return (((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []


class KubeScheduler:
    """Nodes and bound pods of a kubectl List; ``filter`` runs every Filter plugin for a pod on a
    node against the current state; ``bind``/``unbind`` change the state (a pod may be bound on two
    nodes at once: the two copies of a make-before-break move)."""

    def __init__(self, objects: dict[str, Any] | list[dict[str, Any]]):
        items = objects.get("items", []) if isinstance(objects, dict) else list(objects)
        self.nodes: dict[str, dict[str, Any]] = {}
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.namespace_labels: dict[str, dict[str, str]] = {}
        for obj in items:
            kind = obj.get("kind")
            if kind == "Node":
                self.nodes[obj["metadata"]["name"]] = obj
            elif kind == "Pod":
                self.pods[pod_key(obj)] = obj
            elif kind == "Namespace":
                self.namespace_labels[obj["metadata"]["name"]] = obj["metadata"].get("labels") or {}
        self.by_name: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for key, pod in self.pods.items():
            if not terminal(pod):
                self.by_name[key[1]].append(key)
        self.allocatable = {
            name: Counter({r: scheduler_amount(r, q) for r, q in (node.get("status") or {}).get("allocatable", {}).items()})
            for name, node in self.nodes.items()
        }
        self.bound: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.requested: dict[str, Counter[str]] = defaultdict(Counter)
        self.ports: dict[str, Counter[tuple[str, str, int]]] = defaultdict(Counter)
        self._requests: dict[tuple[str, str], Counter[str]] = {}
        self._labels_by_key: dict[str, dict[str, list[str]]] = {}
        self.anti_by_domain: dict[tuple[str, str], Counter[tuple[str, str]]] = defaultdict(Counter)
        self.anti_keys: set[str] = set()
        for key, pod in self.pods.items():
            node = (pod.get("spec") or {}).get("nodeName")
            if node and not terminal(pod) and node in self.nodes:
                self.bind(key, node)

    # -- state --------------------------------------------------------------------------------

    def requests(self, key: tuple[str, str]) -> Counter[str]:
        if key not in self._requests:
            self._requests[key] = pod_requests(self.pods[key])
        return self._requests[key]

    def bind(self, key: tuple[str, str], node: str) -> None:
        self.bound[node].append(key)
        self.requested[node].update(self.requests(key))
        self.ports[node].update(host_ports(self.pods[key]))
        for domain in self._anti_domains(key, node):
            self.anti_by_domain[domain][key] += 1
            self.anti_keys.add(domain[0])

    def unbind(self, key: tuple[str, str], node: str) -> None:
        self.bound[node].remove(key)
        self.requested[node].subtract(self.requests(key))
        self.ports[node].subtract(host_ports(self.pods[key]))
        for domain in self._anti_domains(key, node):
            self.anti_by_domain[domain][key] -= 1

    def _anti_domains(self, key: tuple[str, str], node: str) -> set[tuple[str, str]]:
        """The (topologyKey, value) domains the pod's required anti-affinity terms guard from ``node``."""
        labels = self.nodes[node]["metadata"].get("labels") or {}
        return {(t["topologyKey"], labels[t["topologyKey"]]) for t in _affinity_terms(self.pods[key], "podAntiAffinity") if t.get("topologyKey") in labels}

    def resolve(self, name: str, on: str | None = None) -> tuple[str, str] | None:
        """The pod a plan names: ``namespace/name``, or a name (the one on ``on`` when it is not unique)."""
        if "/" in name:
            key = tuple(name.split("/", 1))
            if key in self.pods:
                return key  # type: ignore[return-value]
        found = self.by_name.get(name, [])
        if len(found) > 1 and on is not None:
            found = [k for k in found if k in self.bound.get(on, [])] or found
        return found[0] if len(found) == 1 else None

    def _domain_nodes(self, key: str, value: str) -> list[str]:
        if key == HOSTNAME and value in self.nodes and (self.nodes[value]["metadata"].get("labels") or {}).get(HOSTNAME) == value:
            return [value]
        if key not in self._labels_by_key:
            index: dict[str, list[str]] = defaultdict(list)
            for name, node in self.nodes.items():
                labels = node["metadata"].get("labels") or {}
                if key in labels:
                    index[labels[key]].append(name)
            self._labels_by_key[key] = index
        return self._labels_by_key[key].get(value, [])

    def _pods_in_domain(self, node: str, topology_key: str) -> Iterator[tuple[str, str]]:
        value = (self.nodes[node]["metadata"].get("labels") or {}).get(topology_key)
        if value is None:
            return
        for other in self._domain_nodes(topology_key, value):
            yield from self.bound.get(other, [])

    # -- filters --------------------------------------------------------------------------------

    def filter(self, key: tuple[str, str], node: str) -> list[Refusal]:
        """Every Filter plugin's refusal of the pod ``key`` on ``node`` (empty: admitted)."""
        if node not in self.nodes:
            return [Refusal("NodeName", f"node {node!r} not found")]
        pod, obj = self.pods[key], self.nodes[node]
        return [
            r
            for check in (
                self.node_unschedulable,
                self.node_resources_fit,
                self.taint_toleration,
                self.node_affinity,
                self.inter_pod_affinity,
                self.node_ports,
                self.pod_topology_spread,
            )
            for r in check(key, pod, node, obj)
        ]

    def node_unschedulable(self, key, pod, node, obj) -> list[Refusal]:
        """NodeUnschedulable."""
        if (obj.get("spec") or {}).get("unschedulable") and not tolerated(pod, UNSCHEDULABLE_TAINT):
            return [Refusal("NodeUnschedulable", "node(s) were unschedulable")]
        return []

    def node_resources_fit(self, key, pod, node, obj) -> list[Refusal]:
        """NodeResourcesFit (``fitsRequest``): the pod count, then each requested resource by name."""
        out = []
        allocatable, used = self.allocatable[node], self.requested[node]
        if len(self.bound[node]) + 1 > allocatable.get("pods", 0):
            out.append(Refusal("NodeResourcesFit", "Too many pods"))
        for resource, amount in sorted(self.requests(key).items()):
            if resource == "pods" or amount <= 0:
                continue
            if amount > allocatable.get(resource, 0) - used.get(resource, 0):
                out.append(Refusal("NodeResourcesFit", f"Insufficient {resource}"))
        return out

    def taint_toleration(self, key, pod, node, obj) -> list[Refusal]:
        """TaintToleration: the first NoSchedule/NoExecute taint the pod does not tolerate."""
        for taint in (obj.get("spec") or {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(pod, taint):
                text = f"{taint.get('key')}: {taint['value']}" if taint.get("value") else str(taint.get("key"))
                return [Refusal("TaintToleration", f"node(s) had untolerated taint {{{text}}}")]
        return []

    def node_affinity(self, key, pod, node, obj) -> list[Refusal]:
        """NodeAffinity: nodeSelector and requiredDuringSchedulingIgnoredDuringExecution."""
        return [] if node_affinity_matches(pod, obj) else [Refusal("NodeAffinity", "node(s) didn't match Pod's node affinity/selector")]

    def pod_topology_spread(self, key, pod, node, obj) -> list[Refusal]:
        """PodTopologySpread: every ``DoNotSchedule`` constraint. The node must carry each constraint's
        topology key; matching pods (same namespace, labelSelector plus ``matchLabelKeys``) are counted
        per domain over the nodes with every key that the pod's node affinity admits
        (``nodeAffinityPolicy`` Honor, the default) and, with ``nodeTaintsPolicy: Honor``, whose
        NoSchedule/NoExecute taints it tolerates; the node's domain count plus the pod itself (if it
        matches) minus the smallest domain count (0 when fewer domains than ``minDomains``) must not
        exceed ``maxSkew``."""
        spec = pod.get("spec") or {}
        constraints = [c for c in spec.get("topologySpreadConstraints") or [] if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"]
        if not constraints:
            return []
        labels = obj["metadata"].get("labels") or {}
        if any(c.get("topologyKey") not in labels for c in constraints):
            return [Refusal("PodTopologySpread", "node(s) didn't match pod topology spread constraints (missing required label)")]
        namespace, own = pod_key(pod)[0], pod["metadata"].get("labels") or {}
        for c in constraints:
            selector = c.get("labelSelector")
            if selector is not None and c.get("matchLabelKeys"):
                selector = {
                    **selector,
                    "matchExpressions": [
                        *(selector.get("matchExpressions") or []),
                        *({"key": k, "operator": "In", "values": [own[k]]} for k in c["matchLabelKeys"] if k in own),
                    ],
                }
            counts: Counter[str] = Counter()
            for name, other in self.nodes.items():
                other_labels = other["metadata"].get("labels") or {}
                if not all(x.get("topologyKey") in other_labels for x in constraints):
                    continue
                if c.get("nodeAffinityPolicy", "Honor") == "Honor" and not node_affinity_matches(pod, other):
                    continue
                if c.get("nodeTaintsPolicy", "Ignore") == "Honor" and any(
                    t.get("effect") in ("NoSchedule", "NoExecute") and not tolerated(pod, t) for t in (other.get("spec") or {}).get("taints") or []
                ):
                    continue
                domain = other_labels[c["topologyKey"]]
                counts[domain] += sum(
                    1
                    for o in self.bound.get(name, [])
                    if o[0] == namespace
                    and not self.pods[o]["metadata"].get("deletionTimestamp")
                    and label_selector_matches(selector, self.pods[o]["metadata"].get("labels") or {})
                )
            smallest = min(counts.values()) if counts else 0
            if len(counts) < int(c.get("minDomains") or 1):
                smallest = 0
            skew = counts.get(labels[c["topologyKey"]], 0) + (1 if label_selector_matches(selector, own) else 0) - smallest
            if skew > int(c.get("maxSkew") or 1):
                return [Refusal("PodTopologySpread", "node(s) didn't match pod topology spread constraints")]
        return []

    def _term_namespaces(self, term: dict[str, Any], own: str) -> set[str] | None:
        """The namespaces a pod (anti-)affinity term selects; None = all."""
        listed = set(term.get("namespaces") or [])
        selector = term.get("namespaceSelector")
        if selector is None:
            return listed or {own}
        if not (selector.get("matchLabels") or selector.get("matchExpressions")):
            return None
        chosen = {ns for ns, labels in self.namespace_labels.items() if label_selector_matches(selector, {"kubernetes.io/metadata.name": ns, **labels})}
        return listed | chosen

    def _term_matches(self, term: dict[str, Any], owner: dict[str, Any], other: dict[str, Any]) -> bool:
        """Whether the term of pod ``owner`` selects pod ``other``."""
        namespaces = self._term_namespaces(term, pod_key(owner)[0])
        if namespaces is not None and pod_key(other)[0] not in namespaces:
            return False
        return label_selector_matches(term.get("labelSelector"), other["metadata"].get("labels") or {})

    def inter_pod_affinity(self, key, pod, node, obj) -> list[Refusal]:
        """InterPodAffinity: existing pods' anti-affinity, then the pod's affinity and anti-affinity."""
        out = []
        labels = obj["metadata"].get("labels") or {}
        for topology_key in sorted(self.anti_keys):
            guards = self.anti_by_domain.get((topology_key, labels.get(topology_key, "")), {}) if topology_key in labels else {}
            if any(
                self._term_matches(t, self.pods[other], pod)
                for other, copies in guards.items()
                if copies > 0
                for t in _affinity_terms(self.pods[other], "podAntiAffinity")
                if t.get("topologyKey") == topology_key
            ):
                out.append(Refusal("InterPodAffinity", "node(s) didn't satisfy existing pods anti-affinity rules"))
                break
        affinity = _affinity_terms(pod, "podAffinity")
        if affinity and not self._pod_affinity_met(pod, affinity, labels):
            out.append(Refusal("InterPodAffinity", "node(s) didn't match pod affinity rules"))
        for term in _affinity_terms(pod, "podAntiAffinity"):
            if term.get("topologyKey") in labels and any(self._term_matches(term, pod, self.pods[o]) for o in self._pods_in_domain(node, term["topologyKey"])):
                out.append(Refusal("InterPodAffinity", "node(s) didn't match pod anti-affinity rules"))
                break
        return out

    def _pod_affinity_met(self, pod: dict[str, Any], terms: list[dict[str, Any]], labels: dict[str, str]) -> bool:
        """``satisfyPodAffinity``: the node has every term's topology key, and in each term's domain
        some pod matches ALL the terms; or no such pod exists anywhere (on a node with one of the
        keys) and the pod matches all its own terms (the first pod of a group)."""
        if not all(t.get("topologyKey") in labels for t in terms):
            return False
        keys = {t["topologyKey"] for t in terms}
        counted: set[tuple[str, str]] = set()
        for node, residents in self.bound.items():
            node_labels = self.nodes[node]["metadata"].get("labels") or {}
            if keys.isdisjoint(node_labels) or not residents:
                continue
            if any(all(self._term_matches(t, pod, self.pods[o]) for t in terms) for o in residents):
                counted |= {(k, node_labels[k]) for k in keys if k in node_labels}
        if all((t["topologyKey"], labels[t["topologyKey"]]) in counted for t in terms):
            return True
        return not counted and all(self._term_matches(t, pod, pod) for t in terms)

    def node_ports(self, key, pod, node, obj) -> list[Refusal]:
        """NodePorts: a wanted (ip, protocol, port) conflicts with a used one on the same protocol and
        port when either ip is 0.0.0.0 or both are equal."""
        used = {p for p, n in self.ports[node].items() if n > 0}
        for ip, protocol, port in host_ports(pod):
            if any(uproto == protocol and uport == port and (ip == "0.0.0.0" or uip == "0.0.0.0" or uip == ip) for uip, uproto, uport in used):
                return [Refusal("NodePorts", "node(s) didn't have free ports for the requested pod ports")]
        return []


# ----------------------------------------------------------------------------------------------
# Plans
# ----------------------------------------------------------------------------------------------


def replay_defrag(objects: dict[str, Any], plan: dict[str, Any]) -> list[MoveRefusal]:
    """Every move of a defrag plan (``waves`` of ``{pod, from, to}``) that kube-scheduler would
    refuse under make-before-break, with the plugin and reason; a plan naming a pod that is not on
    its source is refused by plugin ``Plan``."""
    scheduler = KubeScheduler(objects)
    refusals: list[MoveRefusal] = []
    for w, wave in enumerate(plan.get("waves") or []):
        departures = []
        for move in wave:
            name, source, dest = move["pod"], move["from"], move["to"]
            key = scheduler.resolve(name, source)
            if key is None or key not in scheduler.bound.get(source, []):
                refusals.append(MoveRefusal(w, name, source, dest, "Plan", f"pod not bound to {source!r} at wave {w}"))
                continue
            for r in scheduler.filter(key, dest):
                refusals.append(MoveRefusal(w, name, source, dest, r.plugin, r.reason))
            if dest in scheduler.nodes:
                scheduler.bind(key, dest)
            departures.append((key, source))
        for key, source in departures:
            scheduler.unbind(key, source)
    return refusals


def replay_placements(objects: dict[str, Any], plan: dict[str, Any]) -> list[MoveRefusal]:
    """A preemption or allocation plan: victims (``victims`` of ``{pod, node}``) removed, then each
    placement (``{pod, node}``) of a pending pod admitted in order (wave 0, ``from`` empty)."""
    scheduler = KubeScheduler(objects)
    refusals: list[MoveRefusal] = []
    for victim in plan.get("victims") or []:
        key = scheduler.resolve(victim["pod"], victim["node"])
        if key is not None and key in scheduler.bound.get(victim["node"], []):
            scheduler.unbind(key, victim["node"])
        else:
            refusals.append(MoveRefusal(0, victim["pod"], victim["node"], "", "Plan", "victim not bound to its node"))
    for place in plan.get("placements") or []:
        key = scheduler.resolve(place["pod"])
        if key is None:
            refusals.append(MoveRefusal(0, place["pod"], "", place["node"], "Plan", "no such pending pod"))
            continue
        for r in scheduler.filter(key, place["node"]):
            refusals.append(MoveRefusal(0, place["pod"], "", place["node"], r.plugin, r.reason))
        if place["node"] in scheduler.nodes:
            scheduler.bind(key, place["node"])
    return refusals


def refusal_counts(refusals: Iterable[MoveRefusal]) -> tuple[int, Counter[tuple[str, str]]]:
    """Refused moves (a move refused by several plugins counts once) and refusals by (plugin, reason)."""
    refusals = list(refusals)
    moves = {(r.wave, r.pod, r.from_, r.to) for r in refusals}
    return len(moves), Counter((r.plugin, r.reason) for r in refusals)
