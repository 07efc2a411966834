"""Where independent pieces run: inline, on a local process pool (default: one worker per core), or
as Ray tasks (``planner/ray_executor.py``: ``RAY_ADDRESS`` when set, else a local Ray).

An executor is a callable ``run(fn, tasks) -> list`` returning ``[fn(t) for t in tasks]`` in task
order, so results never depend on which worker finished first. ``fn`` and the tasks must pickle
(partitions travel as ``ClusterState.subset`` arrays, without the pydantic cluster).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

T = TypeVar("T")
R = TypeVar("R")
Run = Callable[[Callable[[T], R], Iterable[T]], list[R]]
Kind = Literal["inline", "process", "ray"]
KINDS: tuple[Kind, ...] = ("inline", "process", "ray")


def run_inline(fn: Callable[[T], R], tasks: Iterable[T]) -> list[R]:
    """Run every task in this process, in order."""
    return [fn(task) for task in tasks]


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


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
        from planner.ray_executor import connect, run_ray

        connect(workers)
        yield run_ray
        return
    count = default_workers() if workers is None else workers
    if kind == "inline" or count <= 1 or not _main_is_importable():
        yield run_inline
        return
    # forkserver: workers start from a clean process, safe even if this one runs threads
    # (progress bars, a web server). The pool starts on the first call with two or more tasks, so
    # small instances (one partition) never pay for it.
    context = multiprocessing.get_context("forkserver")
    pool: ProcessPoolExecutor | None = None

    def run(fn: Callable[[Any], Any], tasks: Iterable[Any]) -> list[Any]:
        nonlocal pool
        iterator = iter(tasks)
        head = list(itertools.islice(iterator, 2))
        if len(head) < 2:
            return run_inline(fn, head)
        if pool is None:
            pool = ProcessPoolExecutor(max_workers=count, mp_context=context)
        # map submits while it iterates: workers start on the first tasks while the caller
        # is still building the later ones (tasks may be a generator).
        return list(pool.map(fn, itertools.chain(head, iterator), chunksize=1))

    try:
        yield run
    finally:
        if pool is not None:
            pool.shutdown()
