"""What the ``planner`` command needs before it knows which command runs: the exit codes, and the
stand-in for a standard output closed at start. Kept apart from ``common`` (which imports the
renderers and the snapshot models) so that ``planner --help`` imports none of them.

Exit codes: 0 success; 1 ``validate`` found violations; 2 bad input; 3 internal error (a bug).
"""

from __future__ import annotations

import errno
import io
import os
import sys

EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3


CLOSED_STDOUT = "it is closed (the command was started with >&-); redirect it to a file or /dev/null, or give --out FILE"


class ClosedStdout(io.TextIOBase):
    """Stands in for a standard output that was closed when the command started (``>&-``: Python then
    has ``sys.stdout = None``, and every print was an AttributeError): writing to it is an OSError
    with the reason, which ``emit`` and ``main`` turn into exit 2 with a message."""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, CLOSED_STDOUT)

    def flush(self) -> None:
        pass


def stand_in_for_closed_stdout() -> None:
    """When file descriptor 1 was closed at start: hold it with /dev/null (a file the command opens
    later must not become descriptor 1, where a library or a child process could write into it) and
    put a ``ClosedStdout`` in ``sys.stdout``."""
    if sys.stdout is not None:
        return
    try:
        os.fstat(1)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    sys.stdout = ClosedStdout()
