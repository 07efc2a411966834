"""What a human reads of a DRA snapshot never shows the planner's stand-in for "unlimited" (a kind a node
does not have is offered as ``MAX_RESOURCE``, 2**62, so that the kinds' sums stay exact): reports,
plans, pages and explanations, in every format, on the bundled DRA example."""

from __future__ import annotations

import pytest

from planner.cluster import MAX_RESOURCE
from tests.support.paths import INSTANCES
from tests.support.planner_here import planner

EXAMPLE = INSTANCES / "kubernetes" / "dra-fleet.json"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    out = tmp_path_factory.mktemp("dra") / "snap.json"
    done = planner("import", "kubernetes", str(EXAMPLE), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert str(MAX_RESOURCE) in out.read_text()  # the snapshot carries it (the check below is not vacuous)
    return out


@pytest.mark.parametrize(
    "args",
    [
        ["report", "-o", "html"],
        ["defrag", "-o", "html"],
        ["allocate", "-o", "table"],
        ["explain", "--pod", "pending-1"],
    ],
)
def test_no_human_output_shows_the_unlimited_offer(snapshot, args):
    done = planner(args[0], str(snapshot), *args[1:])
    assert done.returncode == 0, done.stderr
    text = done.stdout + done.stderr
    assert text.strip()
    for shown in (str(MAX_RESOURCE), f"{MAX_RESOURCE:,}", "4.61e+18", "4.6e18"):
        assert shown not in text, (args, shown)
