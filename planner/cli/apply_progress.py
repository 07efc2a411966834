"""``planner apply``'s progress on a terminal: one bar per wave (its moves done of its moves, the time it has
taken), drawn on standard error only when standard error is a terminal. Anywhere else (a pipe, a file, a
CronJob's log) the structured log lines are written instead, one per step, as before. On a terminal the lines
that matter beyond the bars (drift, a re-plan, a stop, an interrupt, a refused Event) are printed above them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from planner.cli.common import err_console

SHOWN_ON_A_TERMINAL = ("drift", "replanned", "interrupt", "steer-relaxed", "force-deleted", "event-refused", "aborted")


class WaveBars:
    """A log callback that draws a bar per wave (see the module docstring)."""

    def __init__(self, progress: Progress, lines: Callable[..., None]) -> None:
        self.progress = progress
        self.lines = lines
        self.tasks: dict[int, Any] = {}

    def __call__(self, event: str, **fields: Any) -> None:
        if event == "wave-start":
            wave = int(fields["wave"])
            self.tasks[wave] = self.progress.add_task(f"wave {wave}", total=int(fields["moves"]), completed=int(fields.get("done", 0)))
        elif event == "move-done" and int(fields["wave"]) in self.tasks:
            self.progress.advance(self.tasks[int(fields["wave"])])
        elif event == "wave-done" and int(fields["wave"]) in self.tasks:
            task = self.tasks[int(fields["wave"])]
            self.progress.update(task, completed=int(fields["done"]))
            self.progress.stop_task(task)
        elif event in SHOWN_ON_A_TERMINAL:
            self.lines(event, **fields)


@contextmanager
def progress_log(lines: Callable[..., None]) -> Iterator[Callable[..., None]]:
    """The log callback to give the executor: bars on a terminal, ``lines`` elsewhere."""
    if not err_console.is_terminal:
        yield lines
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("moves"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=False) as progress:
        yield WaveBars(progress, lines)
