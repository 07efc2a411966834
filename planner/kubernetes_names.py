"""Kubernetes' object-name rules (k8s.io/apimachinery ``validation``), checked where names enter and
before they leave in a script.

Pod and node names are DNS-1123 subdomains (``NameIsDNSSubdomain``), namespaces DNS-1123 labels
(``ValidateNamespaceName``). A name that breaks them could never name a real object, and in a generated
script it is where shell code or an API path of another namespace (``../``) would hide, so the
importer refuses it and so does every renderer of a script or of objects to apply. Plain snapshots
keep accepting any non-empty name (instances use names such as ``Job-7-0``); only output bound for
Kubernetes needs Kubernetes names.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from planner.bounded_input import short_value

LABEL_MAX = 63
SUBDOMAIN_MAX = 253
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
LABEL_RULE = f"a DNS-1123 label: at most {LABEL_MAX} characters, lower case letters, digits and '-', starting and ending with a letter or digit"
SUBDOMAIN_RULE = (
    f"a DNS-1123 subdomain: at most {SUBDOMAIN_MAX} characters, lower case letters, digits, '-' and '.', "
    "each dot-separated part starting and ending with a letter or digit"
)


def is_dns_label(name: str) -> bool:
    return len(name) <= LABEL_MAX and DNS1123_LABEL.fullmatch(name) is not None


def is_dns_subdomain(name: str) -> bool:
    return len(name) <= SUBDOMAIN_MAX and DNS1123_SUBDOMAIN.fullmatch(name) is not None


QUOTED_CHARS = 80
"""A name longer than this is quoted by its start and its length: a 1 MiB name made a 1 MiB message."""


def quoted(name: Any) -> str:
    """``repr(name)`` of a short string, a long one's first characters and its length, anything else
    quoted short (``short_value``: never written out whole)."""
    if not isinstance(name, str):
        return short_value(name, QUOTED_CHARS)
    if len(name) > QUOTED_CHARS:
        return f"{name[: QUOTED_CHARS - 20]!r}... ({len(name):,} characters)"
    return repr(name)


def name_problem(name: str, what: str) -> str | None:
    """Why ``name`` cannot be a Kubernetes ``what`` ('pod name', 'node name', 'namespace'); None if it can."""
    label = what == "namespace"
    if (is_dns_label if label else is_dns_subdomain)(name):
        return None
    return f"{quoted(name)} is not a valid {what}: it must be {LABEL_RULE if label else SUBDOMAIN_RULE}"


NAME_KIND = {"Pod": "pod name", "Node": "node name", "Namespace": "namespace"}
"""The kinds whose names the importer checks, and what the name is called."""


def metadata_problem(kind: Any, meta: Any) -> str | None:
    """What is wrong with an object's ``metadata.name`` and ``metadata.namespace`` (field path first);
    None when both are usable."""
    if not isinstance(meta, dict):
        return "metadata: missing" if meta is None else f"metadata: must be an object, got {type(meta).__name__}"
    name = meta.get("name")
    if name is None or name == "":
        return "metadata.name: missing"
    if not isinstance(name, str):
        return f"metadata.name: must be a string, got {type(name).__name__} {quoted(name)}"
    problem = name_problem(name, NAME_KIND[kind]) if kind in NAME_KIND else None
    if problem:
        return f"metadata.name: {problem}"
    namespace = meta.get("namespace")
    if namespace is not None and namespace != "":
        if not isinstance(namespace, str):
            return f"metadata.namespace: must be a string, got {type(namespace).__name__} {quoted(namespace)}"
        problem = name_problem(namespace, "namespace")
        if problem:
            return f"metadata.namespace: {problem}"
    return _string_map_problem(meta, "labels") or _string_map_problem(meta, "annotations")


def _string_map_problem(meta: dict[str, Any], field: str) -> str | None:
    """Labels and annotations map strings to strings (the API server refuses anything else); a number
    or a list there is a malformed object, not something to turn into a string."""
    values = meta.get(field)
    if not isinstance(values, dict):
        return None  # absent, or not a mapping: the reader of the field says so
    for key, value in values.items():
        if not isinstance(key, str):
            return f"metadata.{field}: key {quoted(key)} must be a string (quote it in YAML)"
        if not isinstance(value, str):
            shown = repr(value) if isinstance(value, (int, float, bool)) or value is None else f"a {type(value).__name__}"
            return f"metadata.{field}.{key}: must be a string, got {shown} (quote it in YAML)"
    return None


_QUALIFIED = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
RESOURCE_RULE = (
    "a resource name: an optional DNS-1123 subdomain prefix and '/', then at most 63 letters, digits, "
    "'-', '_' or '.', starting and ending with a letter or digit (e.g. nvidia.com/gpu, ephemeral-storage)"
)


@lru_cache(maxsize=4096)
def resource_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a Kubernetes resource name (a qualified name); None if it can."""
    prefix, _, rest = name.rpartition("/")
    if (not prefix and "/" in name) or (prefix and not is_dns_subdomain(prefix)) or len(rest) > LABEL_MAX or not _QUALIFIED.fullmatch(rest):
        return f"{quoted(name)} is not {RESOURCE_RULE}"
    return None
