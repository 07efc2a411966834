"""Duplicate keys are found however the text spells its keys: the importer's fast screen (a count of
the keys the text may hold against the keys the parse kept) never lets a repeated key through.
The oracle here parses with a hook that sees every key of every object, as written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.adapters.kubernetes_documents import parse_json
from planner.bounded_json import _keys_at_most
from planner.cluster import SnapshotError

# keys and strings with the characters that confuse a count: quotes, backslashes, colons, spaces
TRICKY = st.text(alphabet=['"', "\\", ":", " ", "a", "b", "{", "["], max_size=6)


def _has_duplicate(text: str) -> bool:
    found = False

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal found
        found = found or len({k for k, _ in pairs}) < len(pairs)
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return found


def _objects(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.integers(-5, 5), TRICKY, st.none(), st.booleans())
    return st.recursive(
        leaves,
        lambda children: st.one_of(st.lists(children, max_size=3), st.lists(st.tuples(keys, children), max_size=4)),
        max_leaves=12,
    )


def _write(value: Any, space: str) -> str:
    """JSON text of ``value`` where a list of (key, value) tuples is an object that may repeat keys."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return "{" + ",".join(f"{json.dumps(k)}{space}:{_write(v, space)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_write(v, space) for v in value) + "]"
    return json.dumps(value)


@settings(max_examples=400, deadline=None)
@given(_objects(st.one_of(TRICKY, st.sampled_from(["a", "b"]))), st.sampled_from(["", " ", "\n"]))
def test_a_repeated_key_is_refused_and_no_other_text_is(value: Any, space: str) -> None:
    text = _write(value, space)
    if _has_duplicate(text):
        with pytest.raises(SnapshotError, match="is given twice"):
            parse_json(text, "in.json")
    else:
        assert parse_json(text, "in.json") == json.loads(text)


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        ('{"a":1}', 1),
        ('{"a":"\\":"}', 1),  # an escaped quote before a colon inside a string: not a key
        ('{"a\\\\":1}', 1),  # a key that ends with an escaped backslash: a key
        ('{"a":":b"}', 2),  # a string that starts with a colon: counted, so the slow path decides
        ('{"a" :1}', None),  # a space before the colon: no bound, the slow path decides
    ],
)
def test_the_key_bound_counts_every_key_and_says_when_it_cannot(text: str, bound: int | None) -> None:
    assert _keys_at_most(text) == bound


def test_a_repeated_key_behind_a_string_that_looks_like_a_key_is_found() -> None:
    text = '{"items":[{"a":"x\\":1,\\"y"},{"k":1,"k":2}]}'
    with pytest.raises(SnapshotError, match=r"items\[1\]: key 'k' is given twice"):
        parse_json(text, "in.json")
