"""The ``planner`` command run in this process as its console script runs it, and plans without what
varies from run to run (durations, the machine): the golden plans and the submit tests compare plans so."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import tomllib
from collections.abc import Callable
from typing import Any
from unittest import mock

from tests.support.paths import REPO

DURATIONS = frozenset(
    {
        "wall_s",  # every plan's report, each solve and solver phase, spot-schedule, simulate runs
        "solve_wall_s",  # defrag exact: the solver's share
        "heuristic_wall_s",
        "exact_wall_s",  # compare: the gap section
        "solve_s",  # preempt exact
        "phase_gpus_switches_s",
        "phase_entropy_s",
        "entropy_lp_s",
        "entropy_neighbourhood_s",
        "entropy_switch_slack_s",  # allocate exact
        "make_room_wall_s",  # simulate queue
    }
)
"""Measured durations, removed wherever they occur: they differ on every run."""

MACHINE = frozenset({"planner", "versions", "host_cores", "cpu_count"})
"""Keys of a ``provenance`` object that describe the installation and the machine, not the plan: the
planner's version and git commit (a clone has one, a worktree none), Python's and the libraries'
versions, the cores. The options as applied and the snapshot's digest stay."""


def _entry_point() -> Callable[[], Any]:
    """The function the ``planner`` command runs, as ``pyproject.toml`` names it."""
    target = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["planner"]
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def planner(args: tuple[str, ...]) -> str:
    """``planner ARGS`` run in this process as the console script runs it; its standard output."""
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with mock.patch.object(sys, "argv", ["planner", *args]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            _entry_point()()
        except SystemExit as done:
            code = done.code
    assert code in (0, None), f"planner {' '.join(args)}: exit {code}\n{err.getvalue()}"
    return out.getvalue()


def strip(data: Any, key: str | None = None) -> Any:
    """``data`` without the keys that vary from run to run (``DURATIONS``; ``MACHINE`` in provenance)."""
    if isinstance(data, dict):
        drop = DURATIONS | MACHINE if key == "provenance" else DURATIONS
        return {k: strip(v, k) for k, v in data.items() if k not in drop}
    if isinstance(data, list):
        return [strip(item) for item in data]
    return data
