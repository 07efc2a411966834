"""Validating a JSON document against a pydantic model with a bounded number of errors.

Why: pydantic collects every error of a document before it raises, and one error costs about 850 bytes.
A 5 MiB request body holding 403,298 list items ``{"kind": 7}`` (four required fields missing and one
unknown, each) made 2.0 million errors and a checker process of 1.7 GiB (issue 59's red team); a 64 MiB
body would make ten times as many. Only the first ``MAX_LISTED`` problems are ever shown.

How: the document models mark every list and map ``FAIL_FAST`` (pydantic's ``FailFast``), so a
validation stops a list at its first bad item. A valid document is validated once, as before; an
invalid one raises with the errors of at most one item per list. ``collect_errors`` then goes on past
each bad item, list by list and ``CHUNK_ITEMS`` items at a time (innermost list first, so the errors
stay in document order), and stops once ``MAX_COLLECTED`` errors are found: those are listed and
counted, and the count says "at least" when some items were left unchecked. The memory is that of
``MAX_COLLECTED`` errors and one chunk, whatever the size of the document (the same 5 MiB body: 190 MiB,
about a second).

Models built from Python values (options, a policy's) are not documents with ``FAIL_FAST`` lists:
``long_list_errors`` checks their long lists a chunk at a time before the model is built.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

FAIL_FAST: Any = Field(fail_fast=True)
"""Put on every list and map of a document model: ``Annotated[list[Pod], FAIL_FAST]`` (pydantic's ``FailFast``,
as a field constraint: ``FailFast`` itself cannot be hashed, so it cannot stand in a union)."""
MAX_COLLECTED = 1_000
"""Errors collected at most (then the count of the rest is "at least")."""
CHUNK_ITEMS = 256
"""Items of a list validated at once when going on past a bad item."""

Loc = tuple[int | str, ...]


@dataclass(frozen=True)
class Collected:
    """The errors of an invalid document in document order (pydantic's ``errors()`` form, ``loc`` a
    tuple), and whether they are all of them (``complete``) or collection stopped at ``MAX_COLLECTED``
    with items left unchecked."""

    errors: list[dict[str, Any]]
    complete: bool


def collect_errors(error: ValidationError, model: type[BaseModel], text: str | bytes) -> Collected:
    """The errors of ``text`` against ``model``: ``error`` (a validation stopped at the first bad item of
    each list) and those of the items after each bad item, up to ``MAX_COLLECTED``."""
    first: list[dict[str, Any]] = [{**err, "loc": tuple(err["loc"])} for err in error.errors(include_url=False)]
    errors, complete = _gone_on(first, model, _Document(text), MAX_COLLECTED, -1)
    return Collected(errors, complete)


def long_list_errors(model: type[BaseModel], values: dict[str, Any]) -> Collected | None:
    """The errors in the lists of more than ``CHUNK_ITEMS`` items among ``values`` (fields of ``model`` by
    name, Python values), checked a chunk at a time up to ``MAX_COLLECTED``; None when they have none.
    For models built from Python values (options, a policy's): called before the model is, a valid value
    costs one more check of its long lists, and a list of a million bad items costs ``MAX_COLLECTED``
    errors, not a million at once (1.8 GiB for a 5 MiB request body of them)."""
    errors: list[dict[str, Any]] = []
    complete = True
    document = _Document(None, values)
    for name, value in values.items():
        if not isinstance(value, list) or len(value) <= CHUNK_ITEMS or name not in model.model_fields:
            continue
        if len(errors) >= MAX_COLLECTED:
            return Collected(errors, False)
        found, finished = _chunk_errors(model, document, (name,), 0, MAX_COLLECTED - len(errors), json_form=False)
        errors += found
        complete = complete and finished
    return Collected(errors, complete) if errors else None


class _Document:
    """The document the errors are of, parsed from its text on first need."""

    def __init__(self, text: str | bytes | None, value: Any = None):
        self.text = text
        self.value = value

    def at(self, path: Loc) -> Any:
        if self.text is not None:
            self.value, self.text = _parsed(self.text), None
        return _value_at(self.value, path)


def _gone_on(errors: list[dict[str, Any]], model: type[BaseModel], doc: _Document, room: int, outer: int) -> tuple[list[dict[str, Any]], bool]:
    """``errors`` (in document order) with, after the last error of each bad item of a list, the errors of
    the items after it (innermost list first: the order stays the document's), until about ``room``; and
    whether every item was checked. Lists at ``outer`` levels or fewer are gone on with by the caller."""
    out: list[dict[str, Any]] = []
    complete = True
    for k, err in enumerate(errors):
        out.append(err)
        following: Loc = errors[k + 1]["loc"] if k + 1 < len(errors) else ()
        for path, index in reversed(_list_items(err["loc"])):
            if len(path) <= outer:
                break
            if following[: len(path) + 1] == (*path, index):
                continue  # the next error is in the same item: go on past it after that one
            if len(out) >= room:
                complete = False
                break
            rest, finished = _chunk_errors(model, doc, path, index + 1, room - len(out), json_form=True)
            out += rest
            complete = complete and finished
    return out, complete


def _list_items(loc: Loc) -> list[tuple[Loc, int]]:
    """Each (list path, item index) that ``loc`` passes through, outermost first."""
    return [(loc[:i], part) for i, part in enumerate(loc) if isinstance(part, int)]


def _parsed(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None  # pydantic read it, so this is rare: no list is gone on with


def _chunk_errors(model: type[BaseModel], doc: _Document, path: Loc, start: int, room: int, json_form: bool) -> tuple[list[dict[str, Any]], bool]:
    """The errors of the items from ``start`` of the list at ``path`` of a ``model`` document, a chunk at a
    time (as JSON text, or as Python values), until about ``room`` are found; and whether all were checked.
    Nothing when the path leaves the models (a map of anything): its first problem stands for it."""
    items = doc.at(path)
    item_type = _item_type(model, path)
    owner = model_at(model, path[:-1])
    if not isinstance(items, list) or item_type is None or owner is None:
        return [], True
    # the owner's strictness holds for items that are not models themselves (a model brings its own)
    config = None if any(_is_model(t) for t in _forms(item_type)) else owner.model_config
    adapter: TypeAdapter[Any] = TypeAdapter(list[item_type], config=config)  # type: ignore[valid-type]  # a type found at run time
    found: list[dict[str, Any]] = []
    complete = True
    while start < len(items):
        if len(found) >= room:
            return found, False
        chunk = items[start : start + CHUNK_ITEMS]
        try:
            adapter.validate_json(json.dumps(chunk)) if json_form else adapter.validate_python(chunk)
        except ValidationError as err:
            rebased = [{**e, "loc": (*path, start + int(e["loc"][0]), *tuple(e["loc"])[1:])} for e in err.errors(include_url=False)]
            more, finished = _gone_on(rebased, model, doc, room - len(found), len(path))  # the items' own lists
            found += more
            complete = complete and finished
        start += len(chunk)
    return found, complete


def _value_at(doc: Any, path: Loc) -> Any:
    for part in path:
        if isinstance(part, int) and isinstance(doc, list) and 0 <= part < len(doc):
            doc = doc[part]
        elif isinstance(part, str) and isinstance(doc, dict):
            doc = doc.get(part)
        else:
            return None
    return doc


def _item_type(model: type[BaseModel], path: Loc) -> Any:
    """The type of the items of the list at ``path`` in a ``model`` document, or None when the path
    leaves the models (a map of anything, a union of two kinds of value)."""
    return type_at(model, (*path, 0))


def type_at(model: type[BaseModel], loc: Loc) -> Any:
    """The annotation of the value at ``loc`` (field names and list indexes) in a ``model`` document,
    or None when ``loc`` leaves the models (a map of anything, a union of two kinds of value)."""
    current: Any = model
    for part in loc:
        options = [t for t in _forms(current) if (isinstance(part, int) and typing.get_origin(t) is list) or (isinstance(part, str) and _is_model(t))]
        if len(options) != 1:
            return None
        form = options[0]
        if isinstance(part, int):
            current = typing.get_args(form)[0]
        else:
            field = form.model_fields.get(part)
            if field is None:
                return None
            current = field.annotation
            if field.metadata:
                current = Annotated[(current, *field.metadata)]
    return current


def model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model of the object at ``loc`` in a ``model`` document (``type_at``), or None when it is not one."""
    options = [t for t in _forms(type_at(model, loc)) if _is_model(t)]
    return options[0] if len(options) == 1 else None


def _forms(annotation: Any) -> Iterator[Any]:
    """The forms a value of ``annotation`` may take: its union members, each without ``Annotated``."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        yield from _forms(typing.get_args(annotation)[0])
    elif origin in (typing.Union, types.UnionType):
        for member in typing.get_args(annotation):
            yield from _forms(member)
    else:
        yield annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
