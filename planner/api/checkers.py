"""Checker processes: where every request body is parsed and checked and every synchronous answer
(validate, report, explain) computed, each call bounded by its request's deadline.

A thread cannot be stopped, and a body's parse and checks hold the interpreter lock for as long as they
run: in a thread of the server, four requests with 26 KB unknown names took 25-28 s each and doubled
``/healthz``'s latency. A process can be stopped. So each call goes to one of ``count`` long-lived
processes (spawned, niceness 5, a memory cap each), over a pipe; a call still running at its deadline
has its process killed (``SIGKILL``) and a fresh one started in its place, and the request is answered
at once. A request that cannot get a process before its deadline is answered 503 with ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import resource
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any, TypeVar

import planner.api.requests  # noqa: F401 - the parse functions, imported by each checker process as it starts
from planner.api.refusals import Refused

log = logging.getLogger("planner.api")
T = TypeVar("T")

NICENESS = 5
"""Below the server's priority: on a busy machine the event loop (health probes, small requests) runs first."""
READY_S = 120.0
"""A new checker process must have imported the planner within this many seconds (about 2 s on a quiet machine)."""


class Overran(Exception):
    """A call still running at its deadline (its process was killed)."""


class CheckerDied(Exception):
    """A checker process ended while it had a call (killed from outside, or out of memory)."""


class _Checker:
    """One checker process and the server's end of its pipe."""

    def __init__(self, memory_bytes: int):
        context = multiprocessing.get_context("spawn")  # the server's own child, apart from the job fork server
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, memory_bytes), name="planner-checker", daemon=True)
        self.process.start()
        child.close()

    def ready(self) -> bool:
        """Wait (in a thread) for the process to say it has started; False if it did not."""
        try:
            return self.conn.poll(READY_S) and self.conn.recv() == "ready"
        except (EOFError, OSError):
            return False

    def call(self, parse: Callable[..., Any], body: bytes, args: tuple) -> Any:
        """Send one call and wait (in a thread) for its outcome: ``("ok", value)``, ``("refused", Refused)`` or ``("crashed", text)``."""
        try:
            self.conn.send((parse, body, args))
            return self.conn.recv()
        except (EOFError, OSError) as err:
            raise CheckerDied(str(err)) from None

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class Checkers:
    """``count`` checker processes; ``run`` a call on one within a deadline."""

    def __init__(self, count: int, memory_bytes: int):
        self.count = count
        self.memory_bytes = memory_bytes
        self._idle: asyncio.Queue[_Checker] | None = None
        self._all: set[_Checker] = set()
        self._ready: set[_Checker] = set()
        self._threads = ThreadPoolExecutor(2 * count + 2, thread_name_prefix="checker-pipe")
        self._closed = False

    def start(self) -> None:
        """Start the processes now (each imports the planner: a second or two), from the event loop."""
        self._idle = asyncio.Queue()
        for _ in range(self.count):
            self._replace()

    def ready(self) -> int:
        """How many checker processes have started (idle or busy): 0 while they import the planner."""
        return len(self._ready)

    async def run(self, parse: Callable[..., T], body: bytes, args: tuple, deadline: float, limit_s: float) -> T:
        """``parse(body, *args)`` in a checker process; ``Refused`` (503) when none is free before
        ``deadline`` (monotonic), ``Overran`` when the call is still running at it."""
        if self._idle is None:
            self.start()
        assert self._idle is not None
        try:
            checker = await asyncio.wait_for(self._idle.get(), timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            raise Refused(503, f"the server is busy: no checker process was free within the request's {limit_s:g} s; retry later") from None
        try:
            outcome = await asyncio.wait_for(
                asyncio.get_running_loop().run_in_executor(self._threads, checker.call, parse, body, args), timeout=max(0.0, deadline - time.monotonic())
            )
        except TimeoutError:
            self._retire(checker)
            raise Overran() from None
        except CheckerDied:
            self._retire(checker)
            raise
        except BaseException:  # cancelled (the client went away): the call may still run, so the process goes
            self._retire(checker)
            raise
        self._idle.put_nowait(checker)
        status, value = outcome
        if status == "ok":
            return value
        if status == "refused":
            raise value
        raise RuntimeError(f"a checker process failed:\n{value}")

    def _retire(self, checker: _Checker) -> None:
        """Kill ``checker`` (in a thread: joining it may take a moment) and start another in its place."""
        self._all.discard(checker)
        self._ready.discard(checker)
        self._threads.submit(checker.kill)
        if not self._closed:
            self._replace()

    def _replace(self) -> None:
        checker = _Checker(self.memory_bytes)
        self._all.add(checker)
        loop = asyncio.get_running_loop()
        idle = self._idle
        assert idle is not None

        def started() -> None:
            if checker in self._all:
                self._ready.add(checker)
                idle.put_nowait(checker)

        def wait_ready() -> None:
            if checker.ready():
                loop.call_soon_threadsafe(started)
            else:
                log.error("a checker process did not start within %g s; starting another", READY_S)
                checker.kill()
                loop.call_soon_threadsafe(self._retire, checker)

        self._threads.submit(wait_ready)

    def close(self) -> None:
        self._closed = True
        for checker in list(self._all):
            checker.kill()
        self._threads.shutdown(wait=False, cancel_futures=True)


def _serve(conn: Connection, memory_bytes: int) -> None:
    """A checker process: its memory cap and lower priority, then one call at a time until the pipe closes."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    os.nice(NICENESS)
    conn.send("ready")
    while True:
        try:
            parse, body, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            outcome: tuple[str, Any] = ("ok", parse(body, *args))
        except Refused as err:
            outcome = ("refused", err)
        except MemoryError:
            outcome = ("refused", Refused(413, f"the body could not be parsed within the checker's {memory_bytes >> 30} GiB; send a smaller snapshot"))
        except Exception:  # noqa: BLE001 - a bug: its traceback goes to the server's log, the client gets a plain 500
            outcome = ("crashed", traceback.format_exc())
        del body
        try:
            conn.send(outcome)
        except MemoryError:
            conn.send(("refused", Refused(413, "the answer could not be sent within the checker's memory; send a smaller snapshot")))
        except Exception:  # noqa: BLE001 - an answer that does not pickle: a bug, reported as one
            conn.send(("crashed", traceback.format_exc()))
