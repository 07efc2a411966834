"""Request bodies: read within the size limit and the route's rule (``route_rules.py``), and parsed,
checked and answered off the event loop in a checker process (``checkers.py``), within the request's
deadline.

A snapshot body can be tens of MiB, and parsing and checking it takes seconds of CPU and several
times its size in memory. Done in the event loop, one such request stalls every other (``/healthz``
took 25 s); done concurrently, eight of them took 3 GB; done in a thread, it still holds the
interpreter lock for seconds at a time (the JSON parser and the schema check run in native code), and
a thread cannot be stopped at a deadline. So every body is parsed and checked in one of ``PARSERS``
checker processes (a memory cap of their own, ``PARSER_MEMORY_BYTES``; requests of one route rule hold
at most ``RouteRule.at_once`` of them), and a body above
``LARGE_BYTES`` (or of unknown length) is read only while it holds the one large-body slot: the server
process only ever holds the raw bytes of one large body, and one checker stays free for the others.
The whole request, reading, waiting for the slot or a checker, parsing, checking and answering, ends
by the route's deadline: 503 (``Retry-After``) when it was still waiting, 422 naming the limit when its
own work ran out of time (its checker killed and replaced).

A body must arrive within ``timeout_s`` of the first read (``--body-timeout-s``), else 408: a client
that trickles a large body would otherwise hold the large-body slot (and every large upload behind
it) for as long as it likes. A client that hangs up mid-upload raises Starlette's ``ClientDisconnect``
(the app logs it at info as a 499, not as an error).

A body that is not ``application/json`` gets 415; above the server's or the route's limit 413; one that
is not valid JSON, names a key twice, nests too deeply or does not match the schema gets 422 with one
message per problem and its field path, as every other error of the API: at most
``bounded_input.MAX_LISTED`` of them and a line counting the rest (``Refused`` caps its list), so
200,000 unknown fields are a 422 of a few KB.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request

from planner.api.checkers import CheckerDied, Checkers, Overran
from planner.api.refusals import Refused
from planner.api.route_rules import CHECKERS, RouteRule

LARGE_BYTES = 1 << 20
"""Bodies above this size (or of unknown length) are read only while holding the one large-body slot."""
PARSERS = CHECKERS
"""Checker processes: a large body in one, the others in the others meanwhile (``route_rules.CHECKERS``)."""
PARSER_MEMORY_BYTES = 6 << 30
"""Address-space cap of a checker process: a 64 MiB snapshot body needs about 1.5 GiB to parse and check."""
T = TypeVar("T")


class BodyReader:
    """Reads and parses JSON bodies (see the module docstring)."""

    def __init__(self, max_bytes: int, timeout_s: float = 30.0):
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self._large: asyncio.Semaphore | None = None
        self._held: dict[RouteRule, asyncio.Semaphore] = {}
        self._checkers = Checkers(PARSERS, PARSER_MEMORY_BYTES)

    async def parse(self, request: Request, rule: RouteRule, parse: Callable[..., T], *args: Any) -> T:
        """``parse(body, *args)`` in a checker process, the whole request within ``rule``; raises ``Refused``.
        ``parse`` and ``args`` must pickle. ``parse`` may take the deadline (monotonic) as an argument, to fit
        work of its own within it (``explain_of``)."""
        deadline = rule.deadline()
        content_type = request.headers.get("content-type", "")
        media = content_type.split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise Refused(415, f"the body must be JSON (Content-Type: application/json), not {content_type or 'untyped'!r}")
        limit = min(self.max_bytes, rule.body_bytes)
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise Refused(413, self._too_large(request, limit))
        if length is not None and int(length) <= LARGE_BYTES:
            return await self._checked(await self._read(request, limit, deadline), rule, deadline, parse, *args)
        if self._large is None:
            self._large = asyncio.Semaphore(1)
        try:
            await asyncio.wait_for(self._large.acquire(), timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            raise Refused(503, f"the server is busy reading another large body; retry later (the request's limit is {rule.time_s:g} s)") from None
        try:
            return await self._checked(await self._read(request, limit, deadline), rule, deadline, parse, *args)
        finally:
            self._large.release()

    def _too_large(self, request: Request, limit: int) -> str:
        if limit < self.max_bytes:
            return f"request body above the limit of {limit // 2**20} MiB of {request.url.path}"
        return f"request body above the limit of {self.max_bytes // 2**20} MiB"

    async def _checked(self, body: bytes, rule: RouteRule, deadline: float, parse: Callable[..., T], *args: Any) -> T:
        held = self._held.setdefault(rule, asyncio.Semaphore(rule.at_once))
        try:
            await asyncio.wait_for(held.acquire(), timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            raise Refused(503, f"the server is busy with other requests of this kind; retry later (the request's limit is {rule.time_s:g} s)") from None
        try:
            return await self._checkers.run(parse, body, args, deadline, rule.time_s)
        except Overran:
            raise Refused(
                422,
                "the request could not be answered in its time limit",
                [
                    f"body: parsing, checking and answering this request ({len(body) / 2**20:.1f} MiB) took more than the {rule.time_s:g} s this route allows; send a smaller snapshot, or run the planner command locally"
                ],
            ) from None
        except CheckerDied:
            raise Refused(
                503,
                f"the checker process stopped while checking this body (killed, or out of its {PARSER_MEMORY_BYTES >> 30} GiB); "
                "retry, and if it happens again send a smaller snapshot",
            ) from None
        finally:
            held.release()

    async def run(self, rule: RouteRule, work: Callable[..., T], data: bytes, *args: Any) -> T:
        """``work(data, *args)`` in a checker process, within ``rule`` from now: the answers of GET routes that
        parse a stored snapshot (``stored_views.py``); raises ``Refused`` as ``parse`` does."""
        return await self._checked(data, rule, rule.deadline(), work, *args)

    def ready(self) -> bool:
        """Whether a checker process has started (the service is not ready to check bodies before)."""
        return self._checkers.ready() > 0

    def start(self) -> None:
        """Start the checker processes now (each imports the planner: a second or two), not on the first body."""
        self._checkers.start()

    async def _read(self, request: Request, limit: int, deadline: float) -> bytes:
        allowed_s = min(self.timeout_s, max(0.0, deadline - time.monotonic()))
        try:
            body = await asyncio.wait_for(_read_limited(request, limit), allowed_s)
        except TimeoutError:
            raise Refused(
                408,
                f"the request body did not arrive within {allowed_s:g} s (the server's --body-timeout-s, or the route's limit); send it at once, or a smaller snapshot",
            ) from None
        if body is None:
            raise Refused(413, self._too_large(request, limit))
        return body

    def close(self) -> None:
        self._checkers.close()


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is longer than ``limit``."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
