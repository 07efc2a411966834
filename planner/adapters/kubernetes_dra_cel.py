"""DRA device selectors (CEL) evaluated as kube-scheduler's DynamicResources plugin evaluates them.

The expressions of DeviceClasses (``spec.selectors[].cel.expression``) and of claim requests see one
variable, ``device``, with ``driver``, ``attributes`` and ``capacity`` (maps from a domain to the
device's attributes or capacities of that domain; an attribute named without a domain is in the
driver's domain) and ``allowMultipleAllocations``. An unknown domain reads as an empty map; an
unknown attribute is an evaluation error, which makes the allocation abort in Kubernetes (and makes
the importer refuse to model the claim: the pod is locked or left out with the reason).

The library is ``common-expression-language`` (Python bindings of cel-rust, pinned in pyproject):
wheels for CPython 3.11+ on Linux, macOS and Windows, maintained (releases through 2026), about 4 us an
evaluation here; ``cel-python`` (pure Python) drags in lark, pendulum and jmespath and is slower. The
Kubernetes CEL extensions the DRA environment adds are provided for quantities only: ``quantity(s)``,
``compareTo``, ``isGreaterThan``, ``isLessThan``, ``asInteger``, ``asApproximateFloat``, ``sign``, on
quantities carried as whole milli-units (so ``quantity("40Gi")`` equals ``40 * 2**30 * 1000``). An
expression calling any function outside CEL's standard functions and these (``semver``, ``ip``,
``cidr``, ``url``, ``lists``...) is refused with its name, and so is a comprehension macro (``all``,
``exists``, ``map``, ``filter``: quadratic over literal lists, and useless on a device's scalar
attributes): never guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import cel

from planner.adapters.kubernetes_objects import KubeError, parse_quantity

MAX_EXPRESSION_CHARS = 10_240
"""Kubernetes' limit on a selector expression's length."""

STANDARD_FUNCTIONS = frozenset({"size", "has", "matches", "startsWith", "endsWith", "contains", "int", "uint", "double", "string", "bool"})
"""CEL's standard functions an expression may call (operators are named ``_op_``)."""

_NAMED = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
"""A function a user calls by name (operators are ``_op_`` or ``!_``, macro internals ``@...``)."""

_COMPREHENSION = re.compile(r"\.\s*(all|exists_one|exists|map|filter)\s*\(")
"""Comprehension macros, refused: a device's attributes are scalars, so a DRA selector needs none, and
over literal lists they cost quadratic time (Kubernetes bounds them by a cost estimate; the planner
refuses them)."""


def quantity_milli(text: Any, path: str = "quantity") -> int:
    """A Kubernetes quantity as whole milli-units (rounded up: a capacity is never overstated below)."""
    return math.ceil(parse_quantity(text, path) * 1000)


def _quantity(text: Any) -> int:
    try:
        return quantity_milli(text)
    except KubeError as err:
        raise ValueError(f"quantity({text!r}): {err}") from None


def _compare(a: int, b: int) -> int:
    return (a > b) - (a < b)


QUANTITY_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: a > b,
    "isLessThan": lambda a, b: a < b,
    "asInteger": lambda a: a // 1000,
    "asApproximateFloat": lambda a: a / 1000,
    "sign": lambda a: _compare(a, 0),
}

_DOMAIN_LOOKUP = re.compile(r"""device\s*\.\s*(?:attributes|capacity)\s*\[\s*(?:"([^"]*)"|'([^']*)')\s*\]""")


class Selector:
    """One compiled CEL selector, with the domains it looks up (which read as empty maps when a device has none)."""

    def __init__(self, expression: Any, path: str):
        if not isinstance(expression, str) or not expression.strip():
            raise KubeError(path, "a CEL selector needs an expression")
        if len(expression) > MAX_EXPRESSION_CHARS:
            raise KubeError(path, f"the expression has {len(expression)} characters; Kubernetes allows {MAX_EXPRESSION_CHARS}")
        try:
            self.program = cel.compile(expression)
        except (ValueError, RuntimeError) as err:
            raise KubeError(path, f"not a CEL expression: {str(err).splitlines()[0][:200]}") from None
        macro = _COMPREHENSION.search(expression)
        if macro:
            raise KubeError(path, f"uses the comprehension macro {macro.group(1)}(), which the planner does not evaluate (a device's attributes are scalars)")
        unknown = sorted(f for f in self.program.functions() if _NAMED.fullmatch(f) and f not in STANDARD_FUNCTIONS and f not in QUANTITY_FUNCTIONS)
        if unknown:
            raise KubeError(path, f"calls {', '.join(unknown)}, outside what the planner evaluates (CEL's standard functions and the quantity library)")
        self.expression = expression
        self.domains = {a or b for a, b in _DOMAIN_LOOKUP.findall(expression)}

    def matches(self, context: cel.Context, label: str) -> bool:
        """Whether the device of ``context`` (``device_context``; ``label`` names it) satisfies the
        selector; KubeError when the evaluation fails or gives no boolean (Kubernetes aborts the
        allocation then)."""
        try:
            result = self.program.execute(context)
        except (KeyError, RuntimeError, TypeError, ValueError, OverflowError, ZeroDivisionError) as err:  # cel-rust raises these by case
            raise KubeError("cel.expression", f"evaluation failed on device '{label}': {type(err).__name__} {str(err)[:200]}") from None
        if not isinstance(result, bool):
            raise KubeError("cel.expression", f"gives {type(result).__name__}, not a boolean, on device '{label}'")
        return result


def device_variable(driver: str, name: str, attributes: Mapping[str, Any], capacity: Mapping[str, Fraction | int], multiple: bool) -> dict[str, Any]:
    """The ``device`` variable of a DRA selector: attributes and capacities grouped by domain (an
    unqualified name is in the driver's domain), capacities as milli-units."""
    by_domain: dict[str, dict[str, Any]] = {}
    for qualified, value in attributes.items():
        domain, _, short = qualified.rpartition("/")
        by_domain.setdefault(domain or driver, {})[short] = value
    caps: dict[str, dict[str, int]] = {}
    for qualified, amount in capacity.items():
        domain, _, short = qualified.rpartition("/")
        caps.setdefault(domain or driver, {})[short] = math.ceil(Fraction(amount) * 1000)
    return {"driver": driver, "name": name, "attributes": by_domain, "capacity": caps, "allowMultipleAllocations": multiple}


def device_context(device: Mapping[str, Any], domains: set[str]) -> cel.Context:
    """The evaluation context of one device (``device_variable``) for selectors looking up ``domains``
    (each an empty map where the device has none, as Kubernetes gives an unknown domain)."""
    attributes = {d: {} for d in domains} | device["attributes"]
    capacity = {d: {} for d in domains} | device["capacity"]
    return cel.Context(variables={"device": {**device, "attributes": attributes, "capacity": capacity}}, functions=QUANTITY_FUNCTIONS)
