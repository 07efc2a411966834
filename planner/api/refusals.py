"""A request refused as sent (``Refused``: status, error, one message per problem) and the parse of a
JSON body into a request model with field-path messages: shared by the body reader (``bodies.py``) and
the request checks (``requests.py``)."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from planner.bounded_input import capped
from planner.cluster import duplicate_key_problems, pydantic_problems

M = TypeVar("M", bound=BaseModel)


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
    """``model`` from a JSON body, or ``Refused`` (422) with field-path messages."""
    problems = duplicate_key_problems(body, "body")
    if problems:
        raise Refused(422, "invalid request", problems)
    try:
        return model.model_validate_json(body)
    except ValidationError as err:
        raise Refused(422, "invalid request", pydantic_problems(err, model, "body")) from None
