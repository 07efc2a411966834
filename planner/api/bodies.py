"""Request bodies: read within the size limit and parsed off the event loop, large ones one at a time.

A snapshot body can be tens of MiB, and parsing and checking it takes seconds of CPU and several
times its size in memory. Done in the event loop, one such request stalls every other (``/healthz``
took 25 s); done concurrently, eight of them took 3 GB. So every JSON body is parsed in a worker
thread, and a body above ``LARGE_BYTES`` (or of unknown length) is read and parsed only while it
holds one of ``large_at_once`` slots; others wait their turn. Small bodies are never held up.

A body that is not ``application/json`` gets 415; above the limit 413; one that is not valid JSON,
names a key twice, nests too deeply or does not match the schema gets 422 with one message per
problem and its field path, as every other error of the API.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool

from planner.cluster import duplicate_key_problems, pydantic_problems

LARGE_BYTES = 1 << 20
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class Refused(Exception):
    """The request cannot be served as sent: an HTTP status, an error and one message per problem."""

    def __init__(self, status: int, error: str, problems: list[str] | None = None):
        super().__init__(error)
        self.status = status
        self.error = error
        self.problems = problems or []


class BodyReader:
    """Reads and parses JSON bodies (see the module docstring)."""

    def __init__(self, max_bytes: int, large_at_once: int = 1):
        self.max_bytes = max_bytes
        self.large_at_once = large_at_once
        self._large: asyncio.Semaphore | None = None

    async def parse(self, request: Request, parse: Callable[[bytes], T]) -> T:
        """``parse(body)`` run in a worker thread; raises ``Refused``."""
        content_type = request.headers.get("content-type", "")
        media = content_type.split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise Refused(415, f"the body must be JSON (Content-Type: application/json), not {content_type or 'untyped'!r}")
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            raise Refused(413, f"request body above the limit of {self.max_bytes // 2**20} MiB")
        large = length is None or int(length) > LARGE_BYTES
        if self._large is None:
            self._large = asyncio.Semaphore(self.large_at_once)
        async with self._large if large else contextlib.nullcontext():
            body = await _read_limited(request, self.max_bytes)
            if body is None:
                raise Refused(413, f"request body above the limit of {self.max_bytes // 2**20} MiB")
            return await run_in_threadpool(parse, body)


def parse_model(model: type[M], body: bytes) -> M:
    """``model`` from a JSON body, or ``Refused`` (422) with field-path messages."""
    problems = duplicate_key_problems(body, "body")
    if problems:
        raise Refused(422, "invalid request", problems)
    try:
        return model.model_validate_json(body)
    except ValidationError as err:
        raise Refused(422, "invalid request", pydantic_problems(err, model, "body")) from None


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is longer than ``limit``."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
