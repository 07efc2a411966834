"""Messages for a name the input does not have: the closest names it does have (did you mean) and,
where the command acts on pending work, the pending ones, so an operator's typo or stale name comes
back with what to type instead."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable

SHOWN = 5
"""Names listed at most, then how many in all."""


def closest(name: str, known: Iterable[str], count: int = 3) -> list[str]:
    """Up to ``count`` names of ``known`` closest to ``name``: difflib's similarity ratio (0.6 or more),
    then the longer common prefix (names that differ in a digit late in them are likelier typos),
    then the name, best first."""
    scored = []
    for other in set(known):
        ratio = difflib.SequenceMatcher(None, name, other).ratio()
        if ratio >= 0.6:
            prefix = len(os.path.commonprefix([name, other]))
            scored.append((-ratio, -prefix, other))
    return [other for _, _, other in sorted(scored)[:count]]


def listed(names: list[str], shown: int = SHOWN) -> str:
    """'a, b, c' or 'a, b, c, d, e (and 7 more)'; 'none' for no names."""
    if not names:
        return "none"
    more = f" (and {len(names) - shown:,} more)" if len(names) > shown else ""
    return ", ".join(f"'{n}'" for n in names[:shown]) + more


def unknown_name(what: str, name: str, known: Iterable[str], pending: list[str] | None = None, pending_what: str = "pending jobs") -> str:
    """ "unknown job 'x'; did you mean 'y'?; pending jobs: ..." (the pending part when ``pending`` is given)."""
    message = f"unknown {what} '{name}'"
    near = closest(name, known)
    if near:
        message += f"; did you mean {' or '.join(repr(n) for n in near)}?"
    if pending is not None:
        message += f"; {pending_what}: {listed(sorted(pending))}"
    return message
