"""JSON documents read safely (``json``, at C speed): a key given twice in one object is refused with
its path (parsers silently keep the last value; a count of the keys the text can hold, against those
the parse kept, clears the usual document without a Python hook on every object); nesting deeper than
``MAX_DEPTH`` and integers longer than ``MAX_INT_DIGITS`` are refused with their position. Every
problem is a ``DocumentError`` naming the input and where in it.

The limits are the YAML reader's (``bounded_yaml``): the same depth, the same integer length, so a
document reads the same way whichever of the two it was written in.
"""

from __future__ import annotations

import json
import re
from typing import Any

from planner.bounded_input import MAX_DEPTH, DocumentError, check_depth, find_path, short_path, short_text

MAX_INT_DIGITS = 100
"""Digits of an integer at most (Kubernetes' integers have 19; Python reads at most 4,300 from text,
and more take quadratic time)."""


class NotJson(ValueError):
    """The text is not JSON at all (a syntax error): it may still be YAML."""


class _Duplicated(dict[str, Any]):
    """An object that named ``key`` twice (found after the parse, to name its path)."""

    key: str


def parse_json(text: str, source: str) -> Any:
    """One JSON document, checked for duplicate keys, depth and overlong integers; ``NotJson`` when
    it is not JSON, ``DocumentError`` when it is and cannot be used.

    Parsed first without a hook (C speed); the keys the parse kept are counted while the depth is
    checked, and compared with an upper bound on the keys the text holds (``_keys_at_most``): when
    they are equal no key was given twice. Otherwise (or when the bound cannot be taken) the text is
    parsed again with a hook that finds the duplicated key and its path, or finds there is none.
    """
    doc = _loads(text, source, None)
    long_number = _long_number_at(text)
    if long_number is not None:
        raise DocumentError([f"{source}: {long_number}"])
    kept = check_depth(doc, source)
    bound = _keys_at_most(text)
    if bound is not None and bound == kept:
        return doc
    duplicated: list[_Duplicated] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) == len(pairs):
            return value
        seen: set[str] = set()
        marked = _Duplicated(value)
        marked.key = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]  # set.add's None is the point: it records the key, the "or" goes on
        duplicated.append(marked)
        return marked

    doc = _loads(text, source, pairs_hook)
    if duplicated:
        path = find_path(doc, lambda value: value is duplicated[0])
        raise DocumentError(
            [f"{source}: {short_path(path)}: key {short_text(duplicated[0].key)} is given twice; a key may appear once (which value was meant?)"]
        )
    return doc


def _loads(text: str, source: str, pairs_hook: Any) -> Any:
    try:
        return json.loads(text, object_pairs_hook=pairs_hook)
    except RecursionError:
        raise DocumentError([f"{source}: {_too_deep_at(text)}nested more than {MAX_DEPTH} levels deep"]) from None
    except json.JSONDecodeError as err:
        raise NotJson(f"{err.msg} at line {err.lineno} column {err.colno}") from None
    except ValueError as err:  # an integer longer than int() reads (sys.get_int_max_str_digits)
        raise DocumentError([f"{source}: {_long_number_at(text) or ' '.join(str(err).split())[:200]}"]) from None


_SPACE_BEFORE_COLON = re.compile(r'"[ \t\r\n]+:')


def _keys_at_most(text: str) -> int | None:
    """At least as many as the keys (with repeats) of the valid JSON ``text``, or None when not taken.

    A key ends with an unescaped quote, then the colon; with no space between (``_SPACE_BEFORE_COLON``
    finds none, else None), every key is one ``":`` whose quote has no backslash before it or at
    least two. Counted: every ``":``, less those with one backslash or more before, plus those with
    two or more (a quote after three is counted too: the bound stays an upper bound). A string value
    that starts with a colon also counts: the bound is then above the keys and the caller checks
    the slow way."""
    if _SPACE_BEFORE_COLON.search(text):
        return None
    return text.count('":') - text.count('\\":') + text.count('\\\\":')


_LONG_DIGITS = re.compile(rf"[0-9]{{{MAX_INT_DIGITS + 1},}}")
_STRING_OR_LONG_NUMBER = re.compile(rf'"[^"\\]*(?:\\.[^"\\]*)*"|-?[0-9]{{{MAX_INT_DIGITS + 1},}}')


def _long_number_at(text: str) -> str | None:
    """'line L column C: an integer of N digits; ...' for the first number of more than ``MAX_INT_DIGITS``
    digits outside the strings of ``text``, or None. A run of that many digits anywhere is rare (one
    C-speed search); only then are strings told apart from numbers."""
    if _LONG_DIGITS.search(text) is None:
        return None
    for token in _STRING_OR_LONG_NUMBER.finditer(text):
        if token.group()[:1] != '"':
            at = token.start()
            line = text.count("\n", 0, at) + 1
            column = at - (text.rfind("\n", 0, at) + 1) + 1
            digits = len(token.group().lstrip("-"))
            return f"line {line} column {column}: a number of {digits:,} digits; numbers may have at most {MAX_INT_DIGITS}"
    return None


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def _too_deep_at(text: str, limit: int = MAX_DEPTH) -> str:
    """'line L column C: ' where JSON text first nests deeper than ``limit`` (strings skipped), or ''."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in ("[", "{"):
            depth += 1
            if depth > limit:
                at = token.start()
                return f"line {text.count(chr(10), 0, at) + 1} column {at - (text.rfind(chr(10), 0, at) + 1) + 1}: "
        elif bracket in ("]", "}"):
            depth -= 1
    return ""
