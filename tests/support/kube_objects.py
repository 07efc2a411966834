"""Reading raw Kubernetes objects as kube-scheduler does (for the oracle in ``kube_scheduler.py``):
quantities (``k8s.io/apimachinery/pkg/api/resource``, parsed here exactly), a pod's effective request
(``resourcehelper.PodRequests``) and host ports (NodePorts), tolerations (``ToleratesTaint``), node
selector requirements and label selectors. Nothing of the planner is used."""

from __future__ import annotations

import math
import re
from collections import Counter
from fractions import Fraction
from typing import Any

# ----------------------------------------------------------------------------------------------
# Quantities (k8s.io/apimachinery/pkg/api/resource), parsed here, exactly
# ----------------------------------------------------------------------------------------------

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")


def parse_quantity(text: Any) -> Fraction:
    """A Kubernetes quantity string (or a JSON number) as an exact Fraction: ``100m``, ``1.5Gi``,
    ``1k``, ``2e3``, ``129M``; a bad one raises ValueError naming it."""
    if isinstance(text, bool):
        raise ValueError(f"quantity {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise ValueError(f"quantity {text!r}")
    sign, number, suffix = match.groups()
    value = Fraction(number)
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    elif (exp := _EXPONENT.match(suffix)) is not None:
        value *= Fraction(10) ** int(exp.group(1))
    else:
        raise ValueError(f"quantity {text!r}: unknown suffix {suffix!r}")
    return -value if sign == "-" else value


def scheduler_amount(resource: str, quantity: Any) -> int:
    """What the scheduler counts: cpu as ``MilliValue()``, everything else as ``Value()``; both round
    up to the next integer."""
    value = parse_quantity(quantity)
    return math.ceil(value * 1000) if resource == "cpu" else math.ceil(value)


# ----------------------------------------------------------------------------------------------
# Pod requests and host ports
# ----------------------------------------------------------------------------------------------


def container_requests(container: dict[str, Any]) -> Counter[str]:
    """A container's requests as exact quantities, each missing one defaulting to its limit (API defaulting)."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return Counter({name: parse_quantity(q) for name, q in merged.items()})


def _max_into(into: Counter[str], other: Counter[str]) -> None:
    for name, amount in other.items():
        if amount > into.get(name, 0):
            into[name] = amount


def pod_requests(pod: dict[str, Any]) -> Counter[str]:
    """The pod's effective request per resource name, as NodeResourcesFit computes it
    (``resourcehelper.PodRequests``): containers summed; each sidecar (restartPolicy Always init
    container) added to the sum and carried under every later init container; the max with the init
    peak; plus ``spec.overhead``; summed exactly, then counted as the scheduler counts (cpu
    ``MilliValue()``, the rest ``Value()``, both rounding up)."""
    spec = pod.get("spec") or {}
    total: Counter[str] = Counter()
    for container in spec.get("containers") or []:
        total.update(container_requests(container))
    sidecars: Counter[str] = Counter()
    init_peak: Counter[str] = Counter()
    for container in spec.get("initContainers") or []:
        own = container_requests(container)
        if container.get("restartPolicy") == "Always":
            total.update(own)
            sidecars.update(own)
            running = Counter(sidecars)
        else:
            running = Counter(sidecars)
            running.update(own)
        _max_into(init_peak, running)
    _max_into(total, init_peak)
    for name, q in (spec.get("overhead") or {}).items():
        total[name] += parse_quantity(q)
    return Counter({name: math.ceil(q * 1000) if name == "cpu" else math.ceil(q) for name, q in total.items() if q > 0})


def host_ports(pod: dict[str, Any]) -> list[tuple[str, str, int]]:
    """The pod's host ports as (hostIP, protocol, port) (NodePorts' ``getContainerPorts``: regular
    containers; a hostNetwork pod's container ports default to host ports)."""
    spec = pod.get("spec") or {}
    host_network = bool(spec.get("hostNetwork"))
    found = []
    for container in spec.get("containers") or []:
        for port in container.get("ports") or []:
            number = int(port.get("hostPort") or 0)
            if number <= 0 and host_network:
                number = int(port.get("containerPort") or 0)
            if number > 0:
                found.append((port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", number))
    return found


# ----------------------------------------------------------------------------------------------
# Selectors, tolerations
# ----------------------------------------------------------------------------------------------


def tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    """``v1.Toleration.ToleratesTaint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if key and key != taint.get("key"):
        return False
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def tolerated(pod: dict[str, Any], taint: dict[str, Any]) -> bool:
    return any(tolerates(t, taint) for t in (pod.get("spec") or {}).get("tolerations") or [])


def _int(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def requirement_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    """One node selector requirement (``nodeaffinity``): In, NotIn, Exists, DoesNotExist, Gt, Lt."""
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        have, want = _int(labels[key]), _int(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def node_selector_term_matches(term: dict[str, Any], node: dict[str, Any]) -> bool:
    """A nodeSelectorTerm: its matchExpressions on labels and matchFields on ``metadata.name``, all
    ANDed; a term with neither matches nothing."""
    exprs, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not exprs and not fields:
        return False
    labels = node["metadata"].get("labels") or {}
    name_field = {"metadata.name": node["metadata"]["name"]}
    return all(requirement_matches(e, labels) for e in exprs) and all(f.get("key") == "metadata.name" and requirement_matches(f, name_field) for f in fields)


def node_affinity_matches(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    """The pod's nodeSelector and required node affinity (terms ORed) admit the node."""
    spec = pod.get("spec") or {}
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return required is None or any(node_selector_term_matches(t, node) for t in required.get("nodeSelectorTerms") or [])


def label_selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector: nil selects nothing, ``{}`` everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(requirement_matches(e, labels) for e in selector.get("matchExpressions") or [])


# ----------------------------------------------------------------------------------------------
# Pods in the scheduler's view
# ----------------------------------------------------------------------------------------------


def terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def pod_key(pod: dict[str, Any]) -> tuple[str, str]:
    meta = pod["metadata"]
    return meta.get("namespace") or "default", meta["name"]
