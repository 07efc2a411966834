"""The command line's names for options: the flags whose name is not the option field's
(``--time-limit`` for ``time_limit_s``), and ``PlanOptionError`` messages in those flags."""

from __future__ import annotations

from planner.engine.common import PlanOptionError

CLI_FLAGS = {"time_limit_s": "time_limit", "now_s": "now", "only_namespaces": "only_namespace", "exclude_namespaces": "exclude_namespace"}
"""Options whose command-line flag is not the option's name."""


def flag(field: str) -> str:
    """The command-line flag of option field ``field``."""
    return "--" + CLI_FLAGS.get(field, field).replace("_", "-")


def cli_message(err: PlanOptionError) -> str:
    """``err`` with its options named as command-line flags (``--method hybrid``)."""
    return err.render(lambda name, value: flag(name) + (f" {value}" if value else ""))
