"""Request bodies: read within the size limit and parsed off the event loop, large ones one at a time
in a separate process.

A snapshot body can be tens of MiB, and parsing and checking it takes seconds of CPU and several
times its size in memory. Done in the event loop, one such request stalls every other (``/healthz``
took 25 s); done concurrently, eight of them took 3 GB; done in a thread, it still holds the
interpreter lock for seconds at a time (the JSON parser and the schema check run in native code).
So a body above ``LARGE_BYTES`` (or of unknown length) is read only while it holds the one large-body
slot, and parsed and checked in a parser process (a memory cap of its own, ``PARSER_MEMORY_BYTES``);
the server process only ever holds the raw bytes of one large body. Bodies above ``SMALL_BYTES`` are
parsed in a parser process too, without the slot: a 1 MiB snapshot takes 50-100 ms of interpreter
time to parse and check, and in a thread of the server that time is taken from the event loop
(``/healthz`` p99 went from 8 to 290-630 ms under four clients sending 1 MiB bodies). Only small
bodies (a few milliseconds) are parsed in a worker thread. ``PARSERS`` processes parse at once, so
one large body does not hold up the medium ones.

A body must arrive within ``timeout_s`` of the first read (``--body-timeout-s``), else 408: a client
that trickles a large body would otherwise hold the large-body slot (and every large upload behind
it) for as long as it likes. A client that hangs up mid-upload raises Starlette's ``ClientDisconnect``
(the app logs it at info as a 499, not as an error).

A body that is not ``application/json`` gets 415; above the limit 413; one that is not valid JSON,
names a key twice, nests too deeply or does not match the schema gets 422 with one message per
problem and its field path, as every other error of the API: at most ``bounded_input.MAX_LISTED`` of
them and a line counting the rest (``Refused`` caps its list), so 200,000 unknown fields are a 422 of a
few KB.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import resource
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

import planner.api.requests  # noqa: F401 - the parse functions, imported by each parser process as it starts
from planner.api.refusals import Refused

SMALL_BYTES = 64 << 10
"""Bodies up to this size are parsed in a worker thread of the server (milliseconds of interpreter time)."""
LARGE_BYTES = 1 << 20
"""Bodies above this size (or of unknown length) are read only while holding the one large-body slot."""
PARSERS = 2
"""Parser processes: a large body in one, medium ones in the other meanwhile."""
PARSER_NICENESS = 5
"""Below the server's priority: on a busy machine the event loop runs first (see ``_parser_process``)."""
PARSER_MEMORY_BYTES = 6 << 30
"""Address-space cap of the parser process: a 64 MiB snapshot body needs about 1.5 GiB to parse and check."""
T = TypeVar("T")


class BodyReader:
    """Reads and parses JSON bodies (see the module docstring)."""

    def __init__(self, max_bytes: int, timeout_s: float = 30.0):
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self._large: asyncio.Semaphore | None = None
        self._parser: ProcessPoolExecutor | None = None

    async def parse(self, request: Request, parse: Callable[..., T], *args: Any) -> T:
        """``parse(body, *args)``, off the event loop; raises ``Refused``. ``parse`` and ``args``
        must pickle (large bodies are parsed in the parser process)."""
        content_type = request.headers.get("content-type", "")
        media = content_type.split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise Refused(415, f"the body must be JSON (Content-Type: application/json), not {content_type or 'untyped'!r}")
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            raise Refused(413, f"request body above the limit of {self.max_bytes // 2**20} MiB")
        if length is not None and int(length) <= LARGE_BYTES:
            return await self._parse(await self._read(request), parse, *args)
        if self._large is None:
            self._large = asyncio.Semaphore(1)
        async with self._large:
            return await self._parse(await self._read(request), parse, *args)

    async def _parse(self, body: bytes, parse: Callable[..., T], *args: Any) -> T:
        if len(body) <= SMALL_BYTES:
            return await run_in_threadpool(parse, body, *args)
        return await self._in_parser(parse, body, *args)

    def start(self) -> None:
        """Start the parser processes now (each imports the planner: a second or two), not on the first
        medium or large body."""
        pool = self._pool()
        for _ in range(PARSERS):
            pool.submit(_ready)

    async def _read(self, request: Request) -> bytes:
        try:
            body = await asyncio.wait_for(_read_limited(request, self.max_bytes), self.timeout_s)
        except TimeoutError:
            raise Refused(
                408, f"the request body did not arrive within {self.timeout_s:g} s (the server's --body-timeout-s); send it at once, or a smaller snapshot"
            ) from None
        if body is None:
            raise Refused(413, f"request body above the limit of {self.max_bytes // 2**20} MiB")
        return body

    def _pool(self) -> ProcessPoolExecutor:
        if self._parser is None:
            # spawned, not forked from the job fork server: the parsers are the server's own children,
            # apart from the job workers (which are the fork server's children)
            context = multiprocessing.get_context("spawn")
            self._parser = ProcessPoolExecutor(PARSERS, mp_context=context, initializer=_parser_process, initargs=(PARSER_MEMORY_BYTES,))
        return self._parser

    async def _in_parser(self, parse: Callable[..., T], body: bytes, *args: Any) -> T:
        pool = self._pool()
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, _call, parse, body, args)
        except BrokenProcessPool:  # every body in the pool gets this at once: the first to see it starts a new pool
            pool.shutdown(wait=False, cancel_futures=True)
            if self._parser is pool:
                self._parser = None
            raise Refused(
                503,
                f"the body parser process stopped while parsing this body (killed, or out of its {PARSER_MEMORY_BYTES >> 30} GiB); "
                "retry, and if it happens again send a smaller snapshot",
            ) from None

    def close(self) -> None:
        if self._parser is not None:
            self._parser.shutdown(wait=False, cancel_futures=True)


def _call(parse: Callable[..., T], body: bytes, args: tuple) -> T:
    try:
        return parse(body, *args)
    except MemoryError:
        raise Refused(413, f"the body could not be parsed within the parser's {PARSER_MEMORY_BYTES >> 30} GiB; send a smaller snapshot") from None


def _ready() -> None:
    """Nothing: unpickling it has the parser process import this module and with it the parse functions."""


def _parser_process(limit: int) -> None:
    """A parser process's set-up: its memory cap, and a lower CPU priority than the server's, so that
    on a busy machine the event loop (health probes, small requests) runs first and parsing takes
    the rest."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.nice(PARSER_NICENESS)


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is longer than ``limit``."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
