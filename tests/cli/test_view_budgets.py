"""The defrag view's per-wave budgets in every form a plan is made under: a count, a percentage, the
default 10%, a policy's, 100% (no limit), on the command line as users run it (``-o html``). Each page
draws the budget in force as a line at the count the planner held every wave to (computed here from
the share and the snapshot's nodes), and its caption says which budget applied and where it came from.
The README's quick start (``--max-nodes-per-wave 10%``) and the shipped nightly policy exited 3 before."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.planner_command import planner as planner_subprocess
from tests.support.planner_in_process import planner
from tests.support.view_page import budget_lines, chart_caption, page_data

POLICY = str(REPO / "deploy" / "policies" / "defrag-policy.yaml")
NODES = 64
SHARE_COUNT = math.ceil(NODES * 10 / 100)  # 10% of 64 nodes, rounded up: 7
GIVEN = "given with the plan's options (a flag or the request)"


def bars(page: str) -> dict[str, list[float]]:
    return {t["meta"]["series"]: t["y"] for t in page_data(page)["charts"]["waves"]["data"] if "series" in t["meta"]}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("budgets") / "asi64.json"
    planner(("generate", "asi", "--nodes", str(NODES), "--seed", "0", "--out", str(out)))
    return str(out)


FORMS = [
    pytest.param(
        (),
        {"nodes_touched": (SHARE_COUNT, "budget: max nodes per wave = 7 (default)")},
        ["max moves per wave: not set", f"max nodes per wave = {SHARE_COUNT}, the default budget (none was given): 10% of 64 nodes in scope, rounded up"],
        id="default",
    ),
    pytest.param(
        ("--max-nodes-per-wave", "10%"),
        {"nodes_touched": (SHARE_COUNT, "budget: max nodes per wave = 7 (given)")},
        [f"max nodes per wave = {SHARE_COUNT}, {GIVEN}: 10% of 64 nodes in scope, rounded up"],
        id="percentage",
    ),
    pytest.param(
        ("--max-nodes-per-wave", "5", "--max-moves-per-wave", "3"),
        {"nodes_touched": (5, "budget: max nodes per wave = 5 (given)"), "moves": (3, "budget: max moves per wave = 3 (given)")},
        [f"max moves per wave = 3, {GIVEN}", f"max nodes per wave = 5, {GIVEN}"],
        id="counts",
    ),
    pytest.param(
        ("--max-nodes-per-wave", "100%"),
        {},
        [f"max nodes per wave: no limit (100%), {GIVEN}"],
        id="no-limit",
    ),
    pytest.param(
        ("--policy", POLICY, "--time-limit", "30"),
        {"nodes_touched": (SHARE_COUNT, "budget: max nodes per wave = 7 (policy)")},
        [
            f"max nodes per wave = {SHARE_COUNT}, set by the policy: 10% of 64 nodes in scope, rounded up",
            (
                "Also limiting each wave (per node, namespace or job; not drawn): max moves per namespace per wave = 20, set by the policy; "
                "max unavailable pods per job per wave = 1, set by the policy."
            ),
        ],
        id="policy",
    ),
]


@pytest.mark.parametrize(("flags", "lines", "said"), FORMS)
def test_every_budget_form_is_drawn_at_its_count_and_named_with_its_source(
    snapshot: str, flags: tuple[str, ...], lines: dict[str, tuple[int, str]], said: list[str], tmp_path: Path
) -> None:
    plan_file = tmp_path / "plan.json"
    page = planner(("defrag", snapshot, *flags, "--out", str(plan_file), "-o", "html"))
    plan = json.loads(plan_file.read_text())
    assert budget_lines(page) == lines
    drawn = bars(page)
    assert sum(drawn["moves"]) == sum(len(w) for w in plan["waves"]) > 0
    for series, (count, _) in lines.items():
        assert max(drawn[series]) <= count  # the line is the budget every wave kept
    words = chart_caption(page, "waves")
    assert "no per-wave budget" not in words
    for sentence in said:
        assert sentence in words, words


def test_the_readme_quick_start_with_a_percentage_budget_writes_the_page(snapshot: str, tmp_path: Path) -> None:
    done = planner_subprocess("defrag", snapshot, "--max-moves", "200", "--max-nodes-per-wave", "10%", "-o", "html")
    assert done.returncode == 0, done.stderr
    assert budget_lines(done.stdout)["nodes_touched"] == (SHARE_COUNT, "budget: max nodes per wave = 7 (given)")
