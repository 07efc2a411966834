"""The one YAML reader of the planner (snapshots' Kubernetes Lists, import configurations, policy
documents, the PodMigrationJob streams the client reads back): every document within bounds, every
problem a ``DocumentError`` naming the input, the field path and YAML's own line and column; never a
crash, a silent choice or a memory blow-up.

Documents are composed here from the parser's events (``yaml.CParser`` when PyYAML has it, else the
pure Python one), not by PyYAML's constructor, which copies every alias, recurses on nesting and builds
any type a tag names:

* an alias is the anchored value itself (shared, never copied), and the values all aliases of a
  document stand for are bounded (``max_alias_values``, ``max_alias_chars``): a "billion laughs"
  document is refused at the alias that crosses the bound, at once and in little memory;
* the whole stream is bounded: its characters (``max_chars``), the values composed (``max_values``),
  the nesting (``max_depth``, without recursion), one scalar's characters (``max_scalar_chars``) and an
  integer's digits (``max_int_digits``, the JSON reader's limit; Python reads at most 4,300 from text);
* the safe tags only: mappings, lists, strings, integers, floats, booleans and null, as
  ``yaml.safe_load`` resolves them. ``!!binary``, ``!!timestamp`` (a plain ``2001-12-14`` too: quote it),
  ``!!set``, ``!!omap``, ``!!pairs``, merge keys (``<<``) and custom tags are refused naming the tag;
* a key given twice in one mapping is refused (YAML says keys are unique; PyYAML keeps the last).

Messages quote a value by a short prefix (``bounded_input.short_text``), never whole. On kubectl
output this reader is faster than ``yaml.CSafeLoader``, whose Python constructor dominates its time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from planner.bounded_input import MAX_DEPTH, DocumentError, format_path, short_path, short_text
from planner.bounded_json import MAX_INT_DIGITS


@dataclass(frozen=True)
class YamlLimits:
    """The bounds of one YAML stream (module docstring)."""

    max_chars: int = 128 * 2**20
    """Larger input is refused (a kubectl List that large reads faster as JSON: ``-o json``)."""
    max_values: int = 20_000_000
    """Values (scalars, mappings, lists, documents) the stream composes; aliases are counted apart."""
    max_depth: int = MAX_DEPTH
    max_alias_values: int = 100_000
    """Values that all aliases of a document stand for, together."""
    max_alias_chars: int = 16 * 2**20
    """Characters of the scalars that all aliases of a document stand for (one long string aliased many
    times is as large, written out, as a deep bomb)."""
    max_scalar_chars: int = 2**20
    """Characters of one scalar (Kubernetes keeps a pod's annotations under 256 KiB together)."""
    max_int_digits: int = MAX_INT_DIGITS


LIST_LIMITS = YamlLimits()
"""Kubernetes Lists and the importer's inputs."""
SMALL_LIMITS = YamlLimits(max_chars=2**20, max_values=100_000, max_alias_values=10_000, max_alias_chars=2**20, max_scalar_chars=2**16)
"""Documents a person writes (policies, the import configuration): a few hundred values each."""

_STR = "tag:yaml.org,2002:str"
_SAFE_SCALARS = {"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
_CONTAINER_TAGS = {"map": (None, "!", "tag:yaml.org,2002:map"), "seq": (None, "!", "tag:yaml.org,2002:seq")}
_SUPPORTED = "only mappings, lists, strings, numbers, true/false and null are read"


def tag_name(tag: str) -> str:
    """'tag:yaml.org,2002:binary' -> '!!binary' (as it is written); other tags as they are."""
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org,2002:") else tag


def parse_yaml(text: str, source: str, limits: YamlLimits = LIST_LIMITS) -> list[Any]:
    """Every document of the YAML stream ``text`` (empty ones as None); ``DocumentError`` naming
    ``source`` and where, when it does not read or crosses one of ``limits``."""
    if len(text) > limits.max_chars:
        raise DocumentError([f"{source}: YAML of {len(text):,} characters; at most {limits.max_chars:,} are read as YAML"])
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        return _Composer(loader, source, limits).documents()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        raise DocumentError([f"{source}: not valid YAML: {where}{err.problem or err.context}"]) from None
    except yaml.YAMLError as err:
        raise DocumentError([f"{source}: not valid YAML ({' '.join(str(err).split())[:200]})"]) from None
    except RecursionError:  # the pure Python parser's own recursion, before the depth bound is reached
        raise DocumentError([f"{source}: not valid YAML: nested more than {limits.max_depth} levels deep"]) from None
    finally:
        loader.dispose()


def load_one(text: str, source: str, limits: YamlLimits = SMALL_LIMITS) -> Any:
    """The one document of ``text`` (a configuration), None when there is none; more than one is refused."""
    docs = parse_yaml(text, source, limits)
    if len(docs) > 1:
        raise DocumentError([f"{source}: {len(docs)} YAML documents; give one"])
    return docs[0] if docs else None


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


class _Composer:
    """Builds Python values from a loader's events without recursion (see the module docstring)."""

    def __init__(self, loader: Any, source: str, limits: YamlLimits):
        self.loader = loader
        self.source = source
        self.limits = limits
        self.stack: list[_Frame] = []
        self.plain: dict[str, Any] = {}  # plain scalar -> value (they repeat: 'true', '100m', 'Running')

    def fail(self, event: Any, message: str) -> DocumentError:
        mark = event.start_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark is not None else "?"
        parts = [f.key if isinstance(f.value, dict) else len(f.value) for f in self.stack if not isinstance(f.value, dict) or f.has_key]
        path = format_path([short_text(p, 40) if isinstance(p, str) and len(p) > 40 else p for p in parts])
        return DocumentError([f"{self.source}: {short_path(path)} (YAML {where}): {message}"])

    def documents(self) -> list[Any]:
        docs: list[Any] = []
        loader, limits = self.loader, self.limits
        anchors: dict[str, tuple[Any, int, int]] = {}  # anchor -> value, values and characters in it
        aliased = aliased_chars = composed = 0
        root: Any = None
        while loader.check_event():
            event = loader.get_event()
            kind = type(event)
            if kind is yaml.ScalarEvent or kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                composed += 1
                if composed > limits.max_values:
                    raise self.fail(event, f"more than {limits.max_values:,} values in the stream; give a smaller input")
            if kind is yaml.ScalarEvent:
                value, size, chars = self.scalar(event), 1, len(event.value)
                if event.anchor:
                    anchors[event.anchor] = (value, 1, chars)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                container = "map" if kind is yaml.MappingStartEvent else "seq"
                if event.tag not in _CONTAINER_TAGS[container]:
                    raise self.fail(event, f"tag {short_text(tag_name(event.tag), 40)} is not supported ({_SUPPORTED})")
                if len(self.stack) >= limits.max_depth:
                    raise self.fail(event, f"nested more than {limits.max_depth} levels deep")
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
                    name = short_text(event.anchor, 40)
                    raise self.fail(event, f"alias *{name} " + ("refers to a value that contains it" if open_anchor else "refers to no anchor before it"))
                value, size, chars = anchors[event.anchor]
                aliased += size
                aliased_chars += chars
                if aliased > limits.max_alias_values or aliased_chars > limits.max_alias_chars:
                    raise self.fail(
                        event,
                        f"aliases stand for more than {limits.max_alias_values:,} values or {limits.max_alias_chars:,} characters (an alias bomb?); "
                        "write the values out",
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
            shown = short_text(key, 40) if isinstance(key, str) else repr(key)
            raise self.fail(event, f"key {shown} is given twice; a key may appear once (which value was meant?)")
        parent.key, parent.has_key = key, True

    def scalar(self, event: Any) -> Any:
        tag, text = event.tag, event.value
        plain = tag in (None, "!") and event.implicit[0]
        if plain and text in self.plain:
            return self.plain[text]
        if len(text) > self.limits.max_scalar_chars:
            raise self.fail(event, f"a value of {len(text):,} characters ({short_text(text, 20)}); at most {self.limits.max_scalar_chars:,} are read")
        if tag in (None, "!"):
            tag = self.loader.resolve(ScalarNode, text, event.implicit)
        if tag == _STR:
            value: Any = text
        else:
            value = self._typed(event, tag, text, implicit=event.tag in (None, "!"))
        if plain:
            self.plain[text] = value
        return value

    def _typed(self, event: Any, tag: str, text: str, implicit: bool) -> Any:
        """A scalar of a safe tag other than str, or the refusal that names its tag."""
        if tag not in _SAFE_SCALARS:
            if implicit:  # a plain scalar YAML 1.1 reads as a timestamp, a merge key or '='
                hint = "merge keys (<<) are not read; write the keys out" if tag.endswith(":merge") else f"quote it ('{text[:40]}') to give a string"
                raise self.fail(event, f"{short_text(text, 40)} reads as YAML {tag_name(tag)}, which is not supported; {hint}")
            raise self.fail(event, f"tag {short_text(tag_name(tag), 40)} is not supported ({_SUPPORTED})")
        if tag.endswith(":int"):
            written = text.lstrip("+-").replace("_", "")
            if len(written) > self.limits.max_int_digits:
                unit = "digits" if written.isdigit() else "characters"  # 0x..., or sexagesimal 1:20:30
                raise self.fail(
                    event, f"cannot read {short_text(text, 20)} as int: {len(written):,} {unit}; integers may have at most {self.limits.max_int_digits} digits"
                )
        try:
            return yaml.SafeLoader.yaml_constructors[tag](self.loader, ScalarNode(tag, text, event.start_mark, event.end_mark, style=event.style))
        except ValueError as err:
            raise self.fail(event, f"cannot read {short_text(text, 40)} as {tag_name(tag)[2:]} ({' '.join(str(err).split())[:160]})") from None
