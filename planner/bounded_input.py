"""What every reader of a document shares (layer 0, so that the snapshot format, the policies, the
importer, the renderers and the service all use it): the error that lists one message per problem, the
cap on how many problems are listed, short quotes of hostile values, field paths, and the depth check.

Why a cap: a document with 20,000 unknown fields gave 20,000 messages (3 MB on the terminal, a 23.7 MB
HTTP 422 for 200,000). A problem list shows its first ``MAX_LISTED`` problems, then one line
``... and N more like it`` (or ``... and N more problems`` when the rest are of other kinds; ``... and at
least N more ...`` when checking stopped early, ``bounded_models``). Why short
quotes: an error that serialised the offending value whole took 3 GB for an alias bomb; a value is
quoted by at most ``QUOTE_CHARS`` characters, built without writing the rest out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

MAX_DEPTH = 100
"""Nesting levels of one document (JSON or YAML); Kubernetes objects, managed fields included, stay far below."""
MAX_LISTED = 20
"""Problems listed at most; the rest are counted on one more line."""
MAX_PROBLEM_CHARS = 1_200
"""Characters of one problem at most: the middle of a longer one is cut (its start names the field,
its end the fix)."""
QUOTE_CHARS = 60
"""Characters of an offending value quoted in a message at most."""


class DocumentError(ValueError):
    """A document that cannot be used: ``problems`` holds one field-path message each, at most
    ``MAX_LISTED`` of them and a line counting the rest (``capped``)."""

    def __init__(self, problems: Iterable[str]):
        self.problems = capped(list(problems))
        super().__init__("\n".join(self.problems))

    def __reduce__(self) -> tuple[type[DocumentError], tuple[list[str]]]:
        """Pickle by the problem list, so an error raised in another process arrives with the same problems."""
        return (type(self), (self.problems,))


_MORE = re.compile(r"\.\.\. and (at least )?([0-9,]+) more (like it|problems)$")
_VARIABLE = re.compile(r"'[^']*'|\"[^\"]*\"|\[[0-9]+\]|[0-9]+")


def problem_kind(problem: str) -> str:
    """``problem`` with its quoted names, list indexes and numbers left out: two problems of one kind
    (``pods[3].node: unknown node 'a'``, ``pods[9].node: unknown node 'b'``) have the same kind."""
    return _VARIABLE.sub("", problem[:MAX_PROBLEM_CHARS])


def more_line(count: int, alike: bool, at_least: bool = False) -> str:
    """The line that stands for ``count`` problems not listed (``at_least``: and maybe more, not looked for)."""
    return f"... and {'at least ' if at_least else ''}{count:,} more {'like it' if alike else 'problems'}"


def prefixed(where: str, problems: list[str]) -> list[str]:
    """``problems`` each named ``where`` first, but the line that counts the problems not listed."""
    return [problem if _MORE.fullmatch(problem) else f"{where}{problem}" for problem in problems]


def capped(problems: list[str], shown: int = MAX_LISTED) -> list[str]:
    """The first ``shown`` problems (each cut to ``MAX_PROBLEM_CHARS``) and one line counting the rest:
    ``... and N more like it`` when every problem left out is of the kind of the last one listed. A
    count line among those left out (a capped list capped again) counts for its N (and its "at least")."""
    if len(problems) <= shown + 1:
        return [cut(problem) for problem in problems]
    kind = problem_kind(problems[shown - 1])
    count, alike, at_least = 0, True, False
    for problem in problems[shown:]:
        more = _MORE.search(problem)
        count += int(more.group(2).replace(",", "")) if more else 1
        alike = alike and (more.group(3) == "like it" if more else problem_kind(problem) == kind)
        at_least = at_least or bool(more and more.group(1))
    return [*(cut(problem) for problem in problems[:shown]), more_line(count, alike, at_least)]


def cut(text: str, limit: int = MAX_PROBLEM_CHARS) -> str:
    """``text`` whole when short, else its start and end around the count of characters left out."""
    if len(text) <= limit:
        return text
    tail = limit // 5
    return f"{text[: limit - tail]}...({len(text) - limit:,} characters)...{text[-tail:]}"


def short_text(text: str, keep: int = QUOTE_CHARS) -> str:
    """``text`` quoted (``repr``), its first ``keep`` characters when longer, then ``...``."""
    return repr(text) if len(text) <= keep else f"{text[:keep]!r}..."


def short_value(value: Any, keep: int = QUOTE_CHARS) -> str:
    """A JSON-like quote of ``value`` (strings in double quotes) of at most about ``keep`` characters,
    written part by part: a huge or aliased value is never written out whole."""
    out: list[str] = []
    size = 0
    for part in _parts(value):
        out.append(part)
        size += len(part)
        if size > keep:
            return "".join(out)[: keep - 3] + "..."
    return "".join(out)


def _parts(value: Any) -> Iterator[str]:
    """``value`` as JSON text, a piece at a time (lazily: the caller stops when it has enough)."""
    if isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield (", " if i else "") + _scalar(key if isinstance(key, str) else str(key)) + ": "
            yield from _parts(item)
        yield "}"
    elif isinstance(value, (list, tuple, set, frozenset)):
        yield "["
        for i, item in enumerate(value):
            yield ", " if i else ""
            yield from _parts(item)
        yield "]"
    else:
        yield _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        head = value[: QUOTE_CHARS + 1].replace("\\", "\\\\").replace('"', '\\"')
        return f'"{head}' + ('"' if len(value) <= QUOTE_CHARS else "...")
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > 200:  # str() of a long integer is quadratic
        return f"(an integer of about {int(value.bit_length() * 0.30103):,} digits)"
    text = str(value)
    return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS] + "..."


def format_path(parts: tuple[Any, ...] | list[Any]) -> str:
    """('items', 3, 'metadata') -> 'items[3].metadata'; '(top level)' for no parts."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else ("." if text else "") + str(part)
    return text or "(top level)"


def short_path(path: str, keep: int = 120) -> str:
    """A field path cut to ``keep`` characters (a path through long keys or deep nesting)."""
    return path if len(path) <= keep else f"{path[:keep]}..."


def find_path(doc: Any, found: Callable[[Any], bool]) -> str:
    """The field path ('items[3].metadata.labels') of the first container in ``doc`` that ``found`` accepts."""
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


def _identity(target: Any) -> Callable[[Any], bool]:
    """A test for being ``target`` itself (not an equal value)."""
    return lambda value: value is target


def check_depth(doc: Any, source: str, limit: int = MAX_DEPTH) -> int:
    """Refuse (``DocumentError``) a document nested deeper than ``limit`` (later steps recurse on it);
    the number of keys of all its objects, counted on the way."""
    level = [doc] if isinstance(doc, (dict, list)) else []
    depth = 0
    keys = 0
    while level:  # one level at a time, in comprehensions: a 100,000-pod List in about a second
        if depth > limit:
            path = find_path(doc, _identity(level[0]))
            raise DocumentError([f"{source}: {short_path(path)}: nested more than {limit} levels deep"])
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
