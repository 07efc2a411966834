"""A request refused as sent (``Refused``: status, error, one message per problem) and the parse of a
JSON body into a request model with field-path messages: shared by the body reader (``bodies.py``) and
the request checks (``requests.py``)."""

from __future__ import annotations

import re
from typing import TypeVar

from pydantic import BaseModel

from planner.bounded_input import DocumentError, capped
from planner.bounded_json import NotJson, parse_json
from planner.cluster import SnapshotError, validated_json
from planner.suggest import quoted

M = TypeVar("M", bound=BaseModel)
SERVICE_ID = re.compile(r"[0-9a-f]{32}")
"""The form of every job and plan id the service makes (``uuid4().hex``)."""


class Refused(Exception):
    """The request cannot be served as sent: an HTTP status, an error and one message per problem.
    (It crosses from the parser process, so everything it holds is in ``args``.)"""

    def __init__(self, status: int, error: str, problems: list[str] | None = None):
        super().__init__(status, error, capped(problems or []))  # at most MAX_LISTED and a count: a small 4xx whatever the body

    @property
    def status(self) -> int:
        return self.args[0]

    @property
    def error(self) -> str:
        return self.args[1]

    @property
    def problems(self) -> list[str]:
        return self.args[2]


def parse_model(model: type[M], body: bytes) -> M:
    """``model`` from a JSON body, or ``Refused`` (422) with field-path messages. The body is read by the
    bounded JSON reader first (``bounded_json.parse_json``: a key given twice, nesting deeper than
    ``MAX_DEPTH`` anywhere, options and policies included, and overlong integers are refused with where
    they are); what is not JSON at all is left to the schema check, which says where."""
    try:
        parse_json(body.decode("utf-8"), "body")
    except (NotJson, UnicodeDecodeError):
        pass
    except DocumentError as err:
        raise Refused(422, "invalid request", err.problems) from None
    try:
        return validated_json(model, body, "body")
    except SnapshotError as err:
        raise Refused(422, "invalid request", err.problems) from None


def require_id(value: str, name: str) -> None:
    """``Refused`` (422, naming ``name`` and a short prefix of the value) unless ``value`` is an id of the
    service's form: a path segment such as ``..`` or a 1 MB name never reaches the store or a message in full."""
    if not SERVICE_ID.fullmatch(value):
        raise Refused(422, "invalid request", [f"{name}: {quoted(value, 40)} is not an id of this service (32 hexadecimal digits)"])
