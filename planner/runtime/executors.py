"""Where independent pieces run: inline, on a local process pool (default: one worker per core), or
as Ray tasks (``runtime/ray_executor.py``: ``RAY_ADDRESS`` when set, else a local Ray).

An executor is a callable ``run(fn, tasks) -> list`` returning ``[fn(t) for t in tasks]`` in task
order, so results never depend on which worker finished first. A task is either a value that
pickles (partitions travel as ``ClusterState.subset`` arrays, without the pydantic cluster) or a
``Lazy`` recipe, built where it runs.

Lazy tasks let the process pool skip shipping pieces altogether: when every task is ``Lazy`` and
this process runs no other Python thread, the pool is forked for the call, its workers inherit the
caller's memory (the whole cluster state, copy-on-write) and each builds its own pieces from an
index. Otherwise (threads running, tasks already built) the pool starts from a fork server, safe
with threads, and the tasks are built here and pickled.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from planner.runtime.ray_executor import connect, run_ray
from planner.runtime.tasks import Kind, Lazy, Run, built, default_workers, run_inline

_INHERITED: tuple[Callable[[Any], Any], list[Lazy]] | None = None
"""The call a forked pool works on: set before the fork, read by ``_run_inherited`` in the workers."""


def _run_inherited(index: int) -> Any:
    inherited = _INHERITED
    assert inherited is not None  # set by _run_forked before the fork
    fn, tasks = inherited
    return fn(tasks[index]())


def _run_forked(fn: Callable[[Any], Any], tasks: list[Lazy], count: int) -> list[Any]:
    """``fn`` over lazy tasks on a pool forked for this call: only indexes and results are pickled."""
    global _INHERITED
    _INHERITED = (fn, tasks)
    try:
        # processes are forked at the first submit, after _INHERITED is set (a fork pool starts them all then)
        with ProcessPoolExecutor(max_workers=min(count, len(tasks)), mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_run_inherited, range(len(tasks)), chunksize=1))
    finally:
        _INHERITED = None


def _may_fork() -> bool:
    """Forking copies only the calling thread: safe here only when no other Python thread runs."""
    return hasattr(os, "fork") and threading.active_count() == 1


def _main_is_importable() -> bool:
    """Worker processes re-import the main script; a script read from stdin cannot be (run inline)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path is None or os.path.exists(path)


@contextmanager
def executor(workers: int | None = None, kind: Kind = "process") -> Iterator[Run]:
    """An executor of ``kind`` for ``workers`` processes (None: one per core; 1: inline, no pool).

    ``ray`` connects first (``ray_executor.connect``; an ``ExecutorError`` when it cannot) and
    keeps the connection for the process: later plans reuse it. ``workers`` sizes a local Ray only.
    """
    if kind == "ray":
        connect(workers)
        yield run_ray
        return
    count = default_workers() if workers is None else workers
    if kind == "inline" or count <= 1 or not _main_is_importable():
        yield run_inline
        return
    # forkserver: workers start from a clean process, safe even if this one runs threads
    # (a web server). The pool starts on the first call with two or more tasks that are not all
    # lazy, so small instances (one partition) never pay for it.
    context = multiprocessing.get_context("forkserver")
    pool: ProcessPoolExecutor | None = None

    def run(fn: Callable[[Any], Any], tasks: Iterable[Any]) -> list[Any]:
        nonlocal pool
        tasks = list(tasks)
        if len(tasks) < 2:
            return run_inline(fn, tasks)
        if all(isinstance(task, Lazy) for task in tasks) and _may_fork():
            return _run_forked(fn, tasks, count)
        if pool is None:
            pool = ProcessPoolExecutor(max_workers=count, mp_context=context)
        # map submits while it iterates: workers start on the first tasks while later ones are built
        return list(pool.map(fn, (built(task) for task in tasks), chunksize=1))

    try:
        yield run
    finally:
        if pool is not None:
            pool.shutdown()


_BACKGROUND: Callable[[], Any] | None = None
"""The call a forked background process works on: set before the fork, read by ``_run_background``."""


def _run_background() -> Any:
    call = _BACKGROUND
    assert call is not None  # set by in_background before the fork
    return call()


def forks_background(workers: int | None = None, kind: Kind = "process") -> bool:
    """Whether ``in_background`` forks for these options (else it runs its call inline)."""
    count = default_workers() if workers is None else workers
    return kind == "process" and count > 1 and _may_fork() and _main_is_importable()


@contextmanager
def in_background(call: Callable[[], Any], workers: int | None = None, kind: Kind = "process") -> Iterator[Callable[[], Any]]:
    """``call()`` run in a process forked now, while the caller goes on; yields a function that
    returns its result (or raises its error). Inline (``kind`` inline or ray, one worker, or no safe
    fork): ``call`` runs when its result is asked for. The result is the same either way."""
    global _BACKGROUND
    if not forks_background(workers, kind):
        yield call
        return
    _BACKGROUND = call
    try:
        # a fork pool starts its process at the first submit, before its manager thread: it inherits this state
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
        future = pool.submit(_run_background)
    finally:
        _BACKGROUND = None
    try:
        yield future.result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
