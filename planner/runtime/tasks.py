"""What the executors share: a task (a value, or a ``Lazy`` recipe built where it runs), running tasks
inline, the executor's type, and the cores this process may use."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Run(Protocol):
    """An executor: ``run(fn, tasks)`` is ``[fn(t) for t in tasks]`` in task order, wherever it runs."""

    def __call__(self, fn: Callable[[T], R], tasks: Iterable[T], /) -> list[R]: ...


Kind = Literal["inline", "process", "ray"]


class Lazy:
    """A task given as ``build(*args)``: built by whoever runs it (a forked worker builds its own)."""

    __slots__ = ("args", "build")

    def __init__(self, build: Callable[..., Any], *args: Any):
        self.build = build
        self.args = args

    def __call__(self) -> Any:
        return self.build(*self.args)


def built(task: Any) -> Any:
    """The task itself, or what a ``Lazy`` task builds."""
    return task() if isinstance(task, Lazy) else task


def run_inline(fn: Callable[[T], R], tasks: Iterable[T]) -> list[R]:
    """Run every task in this process, in order."""
    return [fn(built(task)) for task in tasks]


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)
