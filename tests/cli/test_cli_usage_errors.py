"""Usage errors (unknown option, bad choice, missing argument, unknown command) are one ``error:``
line in the planner's own style, with where the usage is, and exit 2; help and version exit 0."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import REPO as ROOT

SNAPSHOT = str(ROOT / "instances" / "asi-500.json")


def _planner(*args: str) -> subprocess.CompletedProcess[str]:  # as python -m planner: the usage hint names it so
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("defrag", SNAPSHOT, "--method", "nope"), "error: Invalid value for '--method': 'nope' is not one of 'heuristic',"),
        (("defrag",), "error: Missing argument 'snapshot'. (usage: python -m planner defrag --help)"),
        (("defrag", SNAPSHOT, "--nope"), "error: No such option: --nope"),
        (("nope",), "error: No such command 'nope'. (usage: python -m planner --help)"),
        (("generate", "asi", "--nodes", "x"), "error: Invalid value for '--nodes'"),
    ],
)
def test_a_usage_error_is_one_error_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = _planner(*args)
    assert done.returncode == 2, done
    assert done.stderr.startswith(message), done.stderr
    assert done.stderr.count("\n") == 1 and "╭" not in done.stderr and "Usage:" not in done.stderr, done.stderr
    assert done.stdout == ""


def test_help_and_version_still_exit_0() -> None:
    assert _planner("defrag", "--help").returncode == 0
    version = _planner("--version")
    assert version.returncode == 0 and version.stdout.startswith("planner ")
