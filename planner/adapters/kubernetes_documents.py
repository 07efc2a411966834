"""The importer's documents (kubectl JSON or YAML) read safely: every problem is a ``SnapshotError``
naming the input and where in it, never a crash, a silent choice or a memory blow-up.

* JSON (``json``, at C speed): a key given twice in one object is refused with its path (parsers
  silently keep the last value; a count of the keys the text can hold, against those the parse kept,
  clears the usual document without a Python hook on every object); nesting deeper than ``MAX_DEPTH`` and integers too long for Python
  (more than 4,300 digits) are refused with their position.
* YAML is composed here from the C parser's events (``yaml.CParser`` when PyYAML has it, else the pure
  Python one), not by PyYAML's constructor: scalars resolve exactly as ``yaml.safe_load`` resolves them,
  but an alias is the anchored value itself (shared, never copied) and the values all aliases stand for
  are bounded (``MAX_ALIAS_VALUES``, ``MAX_ALIAS_CHARS``): a "billion laughs" document is refused at the alias that crosses
  the bound instead of growing until memory runs out. Inputs above ``MAX_YAML_CHARS``, nesting deeper
  than ``MAX_DEPTH``, duplicate keys, merge keys (``<<``), tagged mappings and lists (``!!set``,
  ``!!omap``, ``!Custom``) and scalar tags ``yaml.safe_load`` does not know are refused with YAML's own
  line and column. On kubectl output this is faster than ``yaml.CSafeLoader``
  (whose Python constructor dominates its time), see ``benchmarks``' numbers in the issue note.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from planner.cluster import SnapshotError

MAX_DEPTH = 100
"""Nesting levels of one document; Kubernetes objects (managed fields included) stay far below."""
MAX_YAML_CHARS = 128 * 2**20
"""Larger YAML is refused (give kubectl's JSON: ``-o json`` reads at C speed)."""
MAX_ALIAS_VALUES = 100_000
"""Values (scalars and containers) that all aliases of a document stand for, together."""
MAX_ALIAS_CHARS = 16 * 2**20
"""Characters of the scalars that all aliases of a document stand for (one long string aliased many
times is as large, written out, as a deep bomb)."""
_STR = "tag:yaml.org,2002:str"
_CONTAINER_TAGS = {"map": (None, "!", "tag:yaml.org,2002:map"), "seq": (None, "!", "tag:yaml.org,2002:seq")}


def read_documents(text: str, source: str) -> list[Any]:
    """The documents of ``text``: one JSON value, or the YAML stream's non-empty documents."""
    try:
        return [parse_json(text, source)]
    except _NotJson as not_json:
        json_problem = f"{source}: neither JSON nor YAML (JSON: {not_json}); give the output of kubectl get nodes,pods,pdb -A -o json"
    looks_like_json = text.lstrip("\ufeff \t\r\n")[:1] in ("{", "[")
    try:
        return [doc for doc in parse_yaml(text, source) if doc is not None]
    except SnapshotError as yaml_error:
        if looks_like_json:  # meant as JSON: JSON's position is the useful one
            raise SnapshotError([json_problem]) from None
        raise yaml_error from None


class _NotJson(ValueError):
    """The text is not JSON at all (a syntax error): it may still be YAML."""


class _Duplicated(dict):  # type: ignore[type-arg]
    """An object that named ``key`` twice (found after the parse, to name its path)."""

    key: str


def parse_json(text: str, source: str) -> Any:
    """One JSON document, checked for duplicate keys, depth and overlong integers.

    Parsed first without a hook (C speed); the keys the parse kept are counted while the depth is
    checked, and compared with an upper bound on the keys the text holds (``_keys_at_most``): when
    they are equal no key was given twice. Otherwise (or when the bound cannot be taken) the text is
    parsed again with a hook that finds the duplicated key and its path, or finds there is none.
    """
    doc = _loads(text, source, None)
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
        marked.key = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        duplicated.append(marked)
        return marked

    doc = _loads(text, source, pairs_hook)
    if duplicated:
        path = find_path(doc, lambda value: value is duplicated[0])
        raise SnapshotError([f"{source}: {path}: key {duplicated[0].key!r} is given twice; a key may appear once (which value was meant?)"])
    return doc


def _loads(text: str, source: str, pairs_hook: Any) -> Any:
    try:
        return json.loads(text, object_pairs_hook=pairs_hook)
    except RecursionError:
        raise SnapshotError([f"{source}: {_too_deep_at(text)}nested more than {MAX_DEPTH} levels deep"]) from None
    except json.JSONDecodeError as err:
        raise _NotJson(f"{err.msg} at line {err.lineno} column {err.colno}") from None
    except ValueError as err:  # an integer longer than int() reads (sys.get_int_max_str_digits)
        raise SnapshotError([f"{source}: {_long_number(text, err)}"]) from None


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


def _long_number(text: str, err: ValueError) -> str:
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    found = re.search(rf"[0-9]{{{limit + 1},}}", text)
    if found is None:
        return f"not valid JSON ({err})"
    line = text.count("\n", 0, found.start()) + 1
    column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    return f"line {line} column {column}: a number of {len(found.group())} digits; numbers may have at most {limit}"


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


def check_depth(doc: Any, source: str, limit: int = MAX_DEPTH) -> int:
    """Refuse a document nested deeper than ``limit`` (later steps recurse on it); the number of keys
    of all its objects, counted on the way."""
    level = [doc] if isinstance(doc, (dict, list)) else []
    depth = 0
    keys = 0
    while level:  # one level at a time, in comprehensions: a 100,000-pod List in about a second
        if depth > limit:
            path = find_path(doc, lambda v, target=level[0]: v is target)
            raise SnapshotError([f"{source}: {_short_path(path)}: nested more than {limit} levels deep"])
        deeper: list[Any] = []
        for value in level:
            if isinstance(value, dict):
                keys += len(value)
                deeper += [child for child in value.values() if isinstance(child, (dict, list))]
            else:
                deeper += [child for child in value if isinstance(child, (dict, list))]
        level = deeper
        depth += 1
    return keys


def find_path(doc: Any, found: Any) -> str:
    """The field path ('items[3].metadata.labels') of the first value in ``doc`` that ``found`` accepts."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        value, path = stack.pop()
        if found(value):
            return format_path(path)
        if isinstance(value, dict):
            stack.extend((child, (*path, key)) for key, child in value.items() if isinstance(child, (dict, list)))
        elif isinstance(value, list):
            stack.extend((child, (*path, i)) for i, child in enumerate(value) if isinstance(child, (dict, list)))
    return "(top level)"


def format_path(parts: tuple[Any, ...] | list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + str(part)
    return text or "(top level)"


def _short_path(path: str, keep: int = 120) -> str:
    return path if len(path) <= keep else f"{path[:keep]}..."


# ----------------------------------------------------------------------------------------------
# YAML from events
# ----------------------------------------------------------------------------------------------


class _Frame:
    """An open mapping or sequence while its events arrive."""

    __slots__ = ("anchor", "chars", "has_key", "key", "size", "value")

    def __init__(self, value: Any, anchor: str | None):
        self.value = value
        self.key: Any = None
        self.has_key = False
        self.size = 1
        self.chars = 0
        self.anchor = anchor


def parse_yaml(text: str, source: str) -> list[Any]:
    """Every document of a YAML stream, composed from parser events (module docstring)."""
    if len(text) > MAX_YAML_CHARS:
        raise SnapshotError([(f"{source}: YAML of {len(text):,} characters; at most {MAX_YAML_CHARS:,} are read as YAML (give JSON: kubectl get ... -o json)")])
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        return _YamlComposer(loader, source).documents()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise SnapshotError([f"{source}: not valid YAML: {where}{err.problem or err.context}"]) from None
    except yaml.YAMLError as err:
        raise SnapshotError([f"{source}: not valid YAML ({' '.join(str(err).split())})"]) from None
    finally:
        loader.dispose()


class _YamlComposer:
    """Builds Python values from a loader's events without recursion (see the module docstring)."""

    def __init__(self, loader: Any, source: str):
        self.loader = loader
        self.source = source
        self.stack: list[_Frame] = []
        self.plain: dict[str, Any] = {}  # plain scalar -> value (they repeat: 'true', '100m', 'Running')

    def fail(self, event: Any, message: str) -> SnapshotError:
        mark = event.start_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else "?"
        path = format_path([f.key if isinstance(f.value, dict) else len(f.value) for f in self.stack if not isinstance(f.value, dict) or f.has_key])
        return SnapshotError([f"{self.source}: {_short_path(path)} (YAML {where}): {message}"])

    def documents(self) -> list[Any]:
        docs: list[Any] = []
        loader = self.loader
        anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> value, values and characters in it
        aliased = aliased_chars = 0
        root: Any = None
        while loader.check_event():
            event = loader.get_event()
            kind = type(event)
            if kind is yaml.ScalarEvent:
                value, size, chars = self.scalar(event), 1, len(event.value)
                if event.anchor:
                    anchors[event.anchor] = (value, 1, chars)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                container = "map" if kind is yaml.MappingStartEvent else "seq"
                if event.tag not in _CONTAINER_TAGS[container]:
                    raise self.fail(event, f"tag {event.tag!r} is not supported (plain mappings and lists only)")
                if len(self.stack) >= MAX_DEPTH:
                    raise self.fail(event, f"nested more than {MAX_DEPTH} levels deep")
                self.stack.append(_Frame({} if container == "map" else [], event.anchor))
                continue
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                frame = self.stack.pop()
                value, size, chars = frame.value, frame.size, frame.chars
                if frame.anchor:
                    anchors[frame.anchor] = (value, size, chars)
            elif kind is yaml.AliasEvent:
                if event.anchor not in anchors:
                    open_anchor = any(f.anchor == event.anchor for f in self.stack)
                    raise self.fail(
                        event, f"alias *{event.anchor} " + ("refers to a value that contains it" if open_anchor else "refers to no anchor before it")
                    )
                value, size, chars = anchors[event.anchor]
                aliased += size
                aliased_chars += chars
                if aliased > MAX_ALIAS_VALUES or aliased_chars > MAX_ALIAS_CHARS:
                    raise self.fail(
                        event,
                        f"aliases stand for more than {MAX_ALIAS_VALUES:,} values or {MAX_ALIAS_CHARS:,} characters (an alias bomb?); write the objects out",
                    )
            elif kind is yaml.DocumentStartEvent:
                anchors, aliased, aliased_chars, root = {}, 0, 0, None
                continue
            elif kind is yaml.DocumentEndEvent:
                docs.append(root)
                continue
            else:  # stream start and end
                continue
            if not self.stack:
                root = value
                continue
            parent = self.stack[-1]
            parent.size += size
            parent.chars += chars
            if isinstance(parent.value, list):
                parent.value.append(value)
            elif not parent.has_key:
                self.key(event, parent, value)
            else:
                parent.value[parent.key] = value
                parent.has_key = False
        return docs

    def key(self, event: Any, parent: _Frame, key: Any) -> None:
        if isinstance(key, (dict, list)):
            raise self.fail(event, "a mapping key must be a scalar")
        if key in parent.value:
            raise self.fail(event, f"key {key!r} is given twice; a key may appear once (which value was meant?)")
        parent.key, parent.has_key = key, True

    def scalar(self, event: Any) -> Any:
        tag, text = event.tag, event.value
        plain = tag in (None, "!") and event.implicit[0]
        if plain and text in self.plain:
            return self.plain[text]
        if tag in (None, "!"):
            tag = self.loader.resolve(ScalarNode, text, event.implicit)
        if tag == _STR:
            value: Any = text
        elif tag == "tag:yaml.org,2002:merge":
            raise self.fail(event, "merge keys (<<) are not supported; write the keys out")
        else:
            construct = yaml.SafeLoader.yaml_constructors.get(tag)
            if construct is None or tag in ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"):
                raise self.fail(event, f"tag {tag!r} is not supported")
            try:
                value = construct(self.loader, ScalarNode(tag, text, event.start_mark, event.end_mark, style=event.style))
            except ValueError as err:
                raise self.fail(
                    event, f"cannot read {text[:40]!r}{'...' if len(text) > 40 else ''} as {tag.rsplit(':', 1)[-1]} ({' '.join(str(err).split())[:160]})"
                ) from None
        if plain:
            self.plain[text] = value
        return value


def load_yaml_mapping(text: str, source: str) -> Any:
    """One YAML document (a configuration), read as ``parse_yaml`` reads; None when empty."""
    docs = parse_yaml(text, source)
    if len(docs) > 1:
        raise SnapshotError([f"{source}: {len(docs)} YAML documents; give one"])
    return docs[0] if docs else None
