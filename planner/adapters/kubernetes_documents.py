"""The importer's documents (kubectl JSON or YAML), read by the planner's bounded readers
(``bounded_json`` and ``bounded_yaml``: duplicate keys, depth, alias and size bounds, the safe YAML tags
only); every problem a ``SnapshotError`` naming the input and where in it."""

from __future__ import annotations

from typing import Any

from planner.bounded_input import DocumentError
from planner.bounded_json import NotJson
from planner.bounded_json import parse_json as _parse_json
from planner.bounded_yaml import LIST_LIMITS, SMALL_LIMITS, load_one
from planner.bounded_yaml import parse_yaml as _parse_yaml
from planner.cluster import SnapshotError

MAX_YAML_CHARS = LIST_LIMITS.max_chars
"""Larger YAML is refused (give kubectl's JSON: ``-o json`` reads at C speed)."""


def read_documents(text: str, source: str) -> list[Any]:
    """The documents of ``text``: one JSON value, or the YAML stream's non-empty documents."""
    try:
        return [parse_json(text, source)]
    except NotJson as not_json:
        json_problem = f"{source}: neither JSON nor YAML (JSON: {not_json}); give the output of kubectl get nodes,pods,pdb -A -o json"
    looks_like_json = text.lstrip("\ufeff \t\r\n")[:1] in ("{", "[")
    try:
        return [doc for doc in parse_yaml(text, source) if doc is not None]
    except SnapshotError as yaml_error:
        if looks_like_json:  # meant as JSON: JSON's position is the useful one
            raise SnapshotError([json_problem]) from None
        if len(text) > MAX_YAML_CHARS:
            raise SnapshotError([f"{yaml_error.problems[0]} (give JSON: kubectl get ... -o json)"]) from None
        raise yaml_error from None


def parse_json(text: str, source: str) -> Any:
    """One JSON document (``bounded_json.parse_json``); ``NotJson`` when it is not JSON, else ``SnapshotError``."""
    try:
        return _parse_json(text, source)
    except DocumentError as err:
        raise SnapshotError(err.problems) from None


def parse_yaml(text: str, source: str) -> list[Any]:
    """Every document of a YAML stream (``bounded_yaml.parse_yaml`` with the limits of a List); ``SnapshotError``."""
    try:
        return _parse_yaml(text, source, LIST_LIMITS)
    except DocumentError as err:
        raise SnapshotError(err.problems) from None


def load_yaml_mapping(text: str, source: str) -> Any:
    """One YAML document (a configuration, a person's size), read as ``parse_yaml`` reads; None when empty."""
    try:
        return load_one(text, source, SMALL_LIMITS)
    except DocumentError as err:
        raise SnapshotError(err.problems) from None
