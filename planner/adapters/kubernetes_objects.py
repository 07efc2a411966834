"""Kubernetes semantics the importer needs, each as its reference defines it (no client library).

* quantities: ``<sign><number><suffix>`` with the binary suffixes Ki..Ei, the decimal ones n, u, m,
  (none), k, M, G, T, P, E, or a decimal exponent ``e3`` / ``E-2`` (k8s.io/apimachinery
  ``resource.Quantity``; "1E" is 10^18, "1E3" is 1000), read exactly as fractions;
* a pod's effective request, as the scheduler computes it (kubernetes.io, "Effective Pod requests and
  limits"): the larger of (containers + sidecars) and, at each regular init container, that container
  plus the sidecars started before it; plus ``spec.overhead``. A request left out while a limit is
  given is the limit (the API server's defaulting);
* label selectors (``matchLabels`` and ``matchExpressions`` In/NotIn/Exists/DoesNotExist; a null
  selector matches nothing, an empty one everything);
* PodDisruptionBudgets: ``maxUnavailable`` or ``minAvailable``, integers or percentages of the
  selected pods, percentages rounded up as the disruption controller does.

Every function reports a problem by raising ``KubeError`` with the field path; the caller names the
object.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from planner.bounded_input import short_text, short_value

BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL_SUFFIXES = {
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
_NUMBER = re.compile(r"([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)", re.DOTALL)
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")
MAX_EXPONENT = 30
"""Decimal exponents beyond 10^±30 are typos for any resource a node has."""
MAX_DIGITS = 64
"""Digits of a quantity's number; more are typos or attacks (Kubernetes keeps 18 significant digits)."""


class KubeError(ValueError):
    """A value that cannot be read; ``path`` is its field path inside the object."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}")


def parse_quantity(value: Any, path: str) -> Fraction:
    """A Kubernetes quantity, exactly: '500m' -> 1/2, '64Gi' -> 64 * 2^30, '1e3' -> 1000."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise KubeError(path, f"a quantity must be a string such as '500m' or '64Gi', got {short_value(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise KubeError(path, f"a quantity must be finite, got {value!r}")
        value = repr(value)
    text = str(value)
    shown = short_text(text, 20)
    if text != text.strip():
        raise KubeError(
            path, f"{shown} has spaces or line breaks around it; a quantity is written without them (Kubernetes' resource.ParseQuantity refuses it)"
        )
    match = _NUMBER.fullmatch(text)
    if not match:
        raise KubeError(path, f"{shown} is not a quantity (a number with an optional suffix such as m, Gi or e3)")
    sign, number, suffix = match.groups()
    if len(number) > MAX_DIGITS:  # also keeps Fraction() below Python's int-conversion limit (4,300 digits)
        raise KubeError(path, f"{shown}: a quantity of {len(number)} digits; at most {MAX_DIGITS} are read")
    if suffix in BINARY_SUFFIXES:
        scale = Fraction(BINARY_SUFFIXES[suffix])
    elif suffix in DECIMAL_SUFFIXES:
        scale = DECIMAL_SUFFIXES[suffix]
    elif exponent := _EXPONENT.fullmatch(suffix):
        written = exponent.group(1)
        digits = written.lstrip("+-").lstrip("0") or "0"  # leading zeros are read (Go's strconv does), and never given to int()
        if len(digits) > 2 or int(digits) > MAX_EXPONENT:  # the length first: int() of 5,000 digits is refused
            raise KubeError(path, f"{shown}: exponent {short_text(written, 20)} is out of range (at most {MAX_EXPONENT} either way)")
        scale = Fraction(10) ** (-int(digits) if written.startswith("-") else int(digits))
    else:
        known = ", ".join([*BINARY_SUFFIXES, *(s for s in DECIMAL_SUFFIXES if s)])
        raise KubeError(path, f"{shown}: unknown quantity suffix {short_text(suffix, 20)} (known: {known}, or an exponent such as e3)")
    amount = Fraction(number) * scale
    return -amount if sign == "-" else amount


_READ: dict[str, Fraction] = {}
"""Quantity strings already read (a List repeats a few hundred of them across 100,000 pods)."""


def request_quantity(value: Any, path: str) -> Fraction:
    """A request or capacity: a quantity that may not be negative."""
    if type(value) is str:
        amount = _READ.get(value)
        if amount is None:
            amount = parse_quantity(value, path)
            if len(_READ) < 100_000:
                _READ[value] = amount
    else:
        amount = parse_quantity(value, path)
    if amount < 0:
        raise KubeError(path, f"negative quantity '{value}'; requests and capacities are at least 0")
    return amount


# ----------------------------------------------------------------------------------------------
# Pod requests
# ----------------------------------------------------------------------------------------------


def container_requests(container: dict[str, Any], path: str) -> dict[str, Fraction]:
    """A container's requests; a resource with a limit and no request requests its limit."""
    resources = as_object(container.get("resources"), f"{path}.resources")
    requests = as_object(resources.get("requests"), f"{path}.resources.requests")
    limits = as_object(resources.get("limits"), f"{path}.resources.limits")
    out = {name: request_quantity(q, f"{path}.resources.requests.{name}") for name, q in requests.items()}
    for name, q in limits.items():
        if name not in out:
            out[name] = request_quantity(q, f"{path}.resources.limits.{name}")
    return out


def _add(total: dict[str, Fraction], more: dict[str, Fraction]) -> dict[str, Fraction]:
    out = dict(total)
    for name, amount in more.items():
        out[name] = out.get(name, Fraction(0)) + amount
    return out


def _max(a: dict[str, Fraction], b: dict[str, Fraction]) -> dict[str, Fraction]:
    """Per resource, the larger of the two, in first-seen order (a set's order varies with the hash
    seed, and the requests' order is the snapshot's: the same objects must give the same bytes)."""
    return {name: max(a.get(name, Fraction(0)), b.get(name, Fraction(0))) for name in dict.fromkeys([*a, *b])}


_POD_REQUESTS: dict[tuple, dict[str, Fraction]] = {}
"""Effective requests already computed, by what they are computed from (a controller's replicas share it)."""


def _requests_key(spec: dict[str, Any]) -> tuple | None:
    """What ``pod_requests`` reads of a pod, as a hashable key; None when it is not plain strings
    and numbers (then the slow path reads it and names whatever is wrong)."""
    try:
        parts: list[Any] = []
        for kind in ("containers", "initContainers"):
            for container in spec.get(kind) or ():
                resources = container.get("resources") or {}
                parts.append(
                    (kind, container.get("restartPolicy"), tuple((resources.get("requests") or {}).items()), tuple((resources.get("limits") or {}).items()))
                )
        parts.append(tuple(((spec.get("resources") or {}).get("requests") or {}).items()))
        parts.append(tuple((spec.get("overhead") or {}).items()))
        key = tuple(parts)
        hash(key)
        return key
    except (AttributeError, TypeError):
        return None


def pod_requests(spec: dict[str, Any]) -> dict[str, Fraction]:
    """The pod's effective request per resource (cached by what it reads: see ``_pod_requests``)."""
    key = _requests_key(spec)
    if key is None:
        return _pod_requests(spec)
    found = _POD_REQUESTS.get(key)
    if found is None:
        found = _pod_requests(spec)
        if len(_POD_REQUESTS) < 100_000:
            _POD_REQUESTS[key] = found
    return dict(found)


def _pod_requests(spec: dict[str, Any]) -> dict[str, Fraction]:
    """The pod's effective request per resource, as kube-scheduler computes it.

    Regular init containers run one at a time, each next to the sidecars (init containers with
    ``restartPolicy: Always``) started before it; sidecars and app containers then run together.
    A pod-level ``spec.resources`` request, where given, is the pod's request for that resource.
    """
    running: dict[str, Fraction] = {}
    for i, container in enumerate(as_list(spec.get("containers"), "spec.containers")):
        running = _add(running, container_requests(as_object(container, f"spec.containers[{i}]"), f"spec.containers[{i}]"))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for i, container in enumerate(as_list(spec.get("initContainers"), "spec.initContainers")):
        path = f"spec.initContainers[{i}]"
        requests = container_requests(as_object(container, path), path)
        if as_object(container, path).get("restartPolicy") == "Always":
            sidecars = _add(sidecars, requests)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(sidecars, requests))
    total = _max(_add(running, sidecars), init_peak)
    pod_level = as_object(as_object(spec.get("resources"), "spec.resources").get("requests"), "spec.resources.requests")
    for name, q in pod_level.items():
        total[name] = request_quantity(q, f"spec.resources.requests.{name}")
    overhead = {name: request_quantity(q, f"spec.overhead.{name}") for name, q in as_object(spec.get("overhead"), "spec.overhead").items()}
    return _add(total, overhead)


# ----------------------------------------------------------------------------------------------
# Label selectors and disruption budgets
# ----------------------------------------------------------------------------------------------

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def check_selector(selector: Any, path: str) -> dict[str, Any] | None:
    """A well-formed LabelSelector (None stays None: it matches nothing)."""
    if selector is None:
        return None
    selector = as_object(selector, path)
    for key, value in as_object(selector.get("matchLabels"), f"{path}.matchLabels").items():
        if not isinstance(value, str):
            raise KubeError(f"{path}.matchLabels.{key}", f"a label value must be a string, got {short_value(value)}")
    for i, expr in enumerate(as_list(selector.get("matchExpressions"), f"{path}.matchExpressions")):
        where = f"{path}.matchExpressions[{i}]"
        expr = as_object(expr, where)
        if expr.get("operator") not in SELECTOR_OPERATORS:
            raise KubeError(f"{where}.operator", f"unknown operator {short_value(expr.get('operator'))}; known: {', '.join(SELECTOR_OPERATORS)}")
        if not isinstance(expr.get("key"), str):
            raise KubeError(f"{where}.key", "a string key is required")
        values = as_list(expr.get("values"), f"{where}.values")
        if not all(isinstance(v, str) for v in values):
            raise KubeError(f"{where}.values", "values must be strings")
    return selector


def selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Does a (checked) LabelSelector select an object with ``labels``?"""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        value = labels.get(expr["key"])
        values = expr.get("values") or []
        operator = expr["operator"]
        ok = (
            value is not None and value in values
            if operator == "In"
            else value is None or value not in values
            if operator == "NotIn"
            else value is not None
            if operator == "Exists"
            else value is None
        )
        if not ok:
            return False
    return True


def selector_text(selector: dict[str, Any]) -> str:
    """A canonical, readable form of a selector: 'app=web,tier in (a,b),!legacy'."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in sorted(selector.get("matchExpressions") or [], key=lambda e: (e["key"], e["operator"])):
        values = ",".join(sorted(expr.get("values") or []))
        parts.append(
            {
                "In": f"{expr['key']} in ({values})",
                "NotIn": f"{expr['key']} notin ({values})",
                "Exists": expr["key"],
                "DoesNotExist": f"!{expr['key']}",
            }[expr["operator"]]
        )
    return ",".join(parts) or "(everything)"


def scaled(value: Any, count: int, path: str) -> int:
    """An IntOrString against ``count`` pods: an integer, or a percentage from 0% to 100% (the API
    server refuses more) rounded up."""
    if isinstance(value, bool):
        raise KubeError(path, f"must be a whole number or a percentage such as '50%', got {short_value(value)}")
    if isinstance(value, int):
        if value < 0:
            raise KubeError(path, f"must be at least 0, got {short_value(value)}")
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,12}%", value):  # int() of more digits is refused (4,300) or slow
        if int(value[:-1]) > 100:
            raise KubeError(path, f"a percentage must be at most 100%, got {value!r}")
        return math.ceil(Fraction(int(value[:-1]), 100) * count)
    raise KubeError(path, f"must be a whole number or a percentage such as '50%', got {short_value(value)}")


def pdb_max_unavailable(spec: dict[str, Any], selected: int) -> int:
    """How many of the ``selected`` pods a PDB lets be unavailable at once."""
    if "maxUnavailable" in spec and "minAvailable" in spec:
        raise KubeError("spec", "maxUnavailable and minAvailable are mutually exclusive")
    if spec.get("maxUnavailable") is not None:
        return min(selected, scaled(spec["maxUnavailable"], selected, "spec.maxUnavailable"))
    minimum = spec.get("minAvailable", 1)
    return max(0, selected - scaled(minimum, selected, "spec.minAvailable"))


# ----------------------------------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------------------------------


def as_object(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise KubeError(path, f"must be an object, got {type(value).__name__}")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise KubeError(path, f"must be a list, got {type(value).__name__}")
    return value
