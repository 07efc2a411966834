"""The one error shape of talking to a cluster: problems to print and the exit code to leave with."""

from __future__ import annotations

EXIT_BAD_INPUT = 2


class KubeProblem(Exception):
    """A problem to report to the user: ``problems`` to print, ``code`` to exit with (2: bad input)."""

    def __init__(self, problems: list[str], code: int = EXIT_BAD_INPUT) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
        self.code = code
