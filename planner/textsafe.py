"""Text from the input made safe for a terminal, a log line or a shell comment.

Names, labels and annotation values come from files anyone can write. Printed raw, an escape sequence
(ESC, CSI, OSC ...) in one can recolour, rewrite or hide what the operator sees, and a newline can
forge a line of output (or end a comment in a generated script). ``printable`` writes every control
character (C0, DEL, C1) and the Unicode controls that reorder or break lines (bidirectional
overrides and isolates, line and paragraph separators) as a visible escape, so the text stays
readable and one line; everything else is kept as written.
"""

from __future__ import annotations

import re
from typing import Any

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def printable(text: object) -> str:
    """``text`` (any object, as ``str``) with every control character written as an escape (``\\x1b``)."""
    value = str(text)
    return _UNSAFE.sub(_escape, value) if _UNSAFE.search(value) else value


def safe_console_class() -> type:
    """A ``rich`` Console whose every string (printed text, table cells, titles) goes through
    ``printable`` first; the console's own styling still works. Built on demand so that importing this
    module does not import rich."""
    from rich.console import Console  # deferred: rich's Console (~16 ms), so that importing this module does not import rich

    class SafeConsole(Console):
        def render_str(self, text: str, **options: Any) -> Any:
            return super().render_str(printable(text), **options)

    return SafeConsole
