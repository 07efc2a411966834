"""Messages for a name the input does not have: the closest names it does have (did you mean) and,
where the command acts on pending work, the pending ones, so an operator's typo or stale name comes
back with what to type instead.

The name comes from the request and the known names from the snapshot, both hostile: difflib's
similarity costs up to the product of the two lengths per pair, and a 26 KB name against a few hundred
names took 6-8 s (four such requests at once 25-28 s each). So the search is bounded: a name longer
than ``MAX_NAME_CHARS`` (or than every known name by more than ``TYPO_CHARS``) gets no suggestion,
known names longer than ``MAX_NAME_CHARS`` are not compared, at most ``MAX_EXAMINED`` known names
are scored by the cheap upper bound and the full similarity is computed, best bound first, for
as many as ``MAX_COMPARED_CHARS`` (the product of the two lengths, summed) allows: a few thousand
names of ordinary length, a few dozen at the longest. A suggestion is a help for a typo, never needed for the answer.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import os
from collections.abc import Iterable

SHOWN = 5
"""Names listed at most, then how many in all."""
MAX_NAME_CHARS = 253
"""The longest name a suggestion is looked for (and the longest known name compared): Kubernetes's
longest object name (a DNS subdomain). Anything longer is not a typo of a name."""
TYPO_CHARS = 3
"""A name may be this many characters longer than the longest known name and still be a typo of one."""
MAX_EXAMINED = 5_000
"""Known names scored by difflib's cheap upper bounds (``real_quick_ratio``, ``quick_ratio``): the ones next to the
name in alphabetical order (those sharing its longest prefix) first."""
MAX_COMPARED_CHARS = 8_000_000
"""The full similarity (``ratio``) of two names costs up to the product of their lengths: summed over the names
compared (highest upper bound first), at most this (about 0.3 s)."""
MIN_RATIO = 0.6
"""difflib's similarity a suggestion needs (its ``get_close_matches`` default)."""
QUOTED_CHARS = 80
"""A name quoted in a message is cut to this many characters (its length said)."""


def closest(name: str, known: Iterable[str], count: int = 3) -> list[str]:
    """Up to ``count`` names of ``known`` closest to ``name``: difflib's similarity ratio (0.6 or more),
    then the longer common prefix (names that differ in a digit late in them are likelier typos),
    then the name, best first. Bounded as the module docstring says. difflib's automatic junk (characters
    frequent in a long name ignored) is off: with it, no two names of 200 characters or more matched."""
    names = sorted({other for other in known if len(other) <= MAX_NAME_CHARS})
    if not names or len(name) > min(MAX_NAME_CHARS, max(map(len, names)) + TYPO_CHARS):
        return []
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(name)  # difflib caches what it learns of the second sequence: the name, compared with each
    bounds = []
    for other in _around(names, name, MAX_EXAMINED):
        matcher.set_seq1(other)
        if matcher.real_quick_ratio() >= MIN_RATIO:  # from the lengths alone
            bound = matcher.quick_ratio()  # from the characters in common, in one pass
            if bound >= MIN_RATIO:
                bounds.append((-bound, other))
    scored: list[tuple[float, int, str]] = []
    work = 0
    for negative_bound, other in sorted(bounds):
        work += len(name) * len(other)
        if work > MAX_COMPARED_CHARS or (len(scored) >= count and -negative_bound < -scored[count - 1][0]):
            break  # out of budget, or no name left can beat the ones found
        matcher.set_seq1(other)
        ratio = matcher.ratio()
        if ratio >= MIN_RATIO:
            scored.append((-ratio, -len(os.path.commonprefix([name, other])), other))
            scored.sort()
    return [other for _, _, other in scored[:count]]


def _around(names: list[str], name: str, limit: int) -> list[str]:
    """Up to ``limit`` of the sorted ``names``, nearest to where ``name`` would sit among them first."""
    at = bisect.bisect_left(names, name)
    before, after = names[max(0, at - limit) : at][::-1], names[at : at + limit]
    mixed = [other for pair in itertools.zip_longest(before, after) for other in pair if other is not None]
    return mixed[:limit]


def quoted(name: str, limit: int = QUOTED_CHARS) -> str:
    """``'name'``, or its first ``limit`` characters and how long it is: a message never repeats a
    hostile name in full."""
    if len(name) <= limit:
        return repr(name)
    return f"{name[:limit]!r}... ({len(name):,} characters)"


def listed(names: list[str], shown: int = SHOWN) -> str:
    """'a, b, c' or 'a, b, c, d, e (and 7 more)'; 'none' for no names."""
    if not names:
        return "none"
    more = f" (and {len(names) - shown:,} more)" if len(names) > shown else ""
    return ", ".join(quoted(n) for n in names[:shown]) + more


def unknown_name(what: str, name: str, known: Iterable[str], pending: list[str] | None = None, pending_what: str = "pending jobs") -> str:
    """ "unknown job 'x'; did you mean 'y'?; pending jobs: ..." (the pending part when ``pending`` is given)."""
    message = f"unknown {what} {quoted(name)}"
    near = closest(name, known)
    if near:
        message += f"; did you mean {' or '.join(repr(n) for n in near)}?"
    if pending is not None:
        message += f"; {pending_what}: {listed(sorted(pending))}"
    return message
