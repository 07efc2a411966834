"""The HTML views without a browser: a plan that does not belong to the snapshot is refused naming the
first mismatch (exit 2 on the command line), the page is one self-contained file, and the data it
carries cannot end its script element. The pages in a browser: tests/test_view_browser.py."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planner.cluster import SnapshotError
from planner.plans import parse_plan
from planner.render.formats import render_text
from planner.render.view import first_mismatch, plan_view_html
from planner.render.view.page import script_json
from planner.snapshot import parse_cluster
from tests.support.view_page import chart_caption, page_data

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "golden"
PLANNER = [sys.executable, "-m", "planner"]

CLUSTER = {
    "nodes": [{"name": f"n{i}", "gpus": 8, "cpus": 96, "memory_gib": 1024, "gpu_model": "H800", "asw": f"asw-{i // 2}"} for i in range(4)],
    "pods": [
        {"name": "a", "node": "n0", "gpus": 4, "cpus": 8},
        {"name": "b", "node": "n1", "gpus": 4, "cpus": 8},
        {"name": "c", "node": "n2", "gpus": 2, "cpus": 8, "priority": "LP"},
        {"name": "p", "node": None, "gpus": 8, "cpus": 8},
    ],
}


def defrag(waves: list[list[tuple[str, str, str]]], vacated: list[str] | None = None) -> object:
    return parse_plan(
        json.dumps({"kind": "defrag", "waves": [[{"pod": p, "from": f, "to": t} for p, f, t in w] for w in waves], "vacated_nodes": vacated or []})
    )


@pytest.mark.parametrize(
    ("plan", "mismatch"),
    [
        (defrag([[("a", "n0", "n1")]], ["n0"]), None),
        (defrag([[("zz", "n0", "n1")]]), "waves[0][0].pod: unknown pod 'zz'"),
        (defrag([[("a", "n0", "n9")]]), "waves[0][0].to: unknown node 'n9'"),
        (defrag([[("a", "n1", "n3")]]), "waves[0][0].from: pod 'a' is on 'n0' at this wave, not 'n1'"),
        (defrag([[("a", "n0", "n1")], [("a", "n0", "n3")]]), "waves[1][0].from: pod 'a' is on 'n1' at this wave, not 'n0'"),
        (defrag([[("p", "n0", "n1")]]), "waves[0][0].from: pod 'p' is on no node (pending) at this wave, not 'n0'"),
        (defrag([], ["n7"]), "vacated_nodes[0]: unknown node 'n7'"),
        (parse_plan('{"kind": "allocate", "placements": [{"pod": "a", "node": "n3"}]}'), "placements[0].pod: pod 'a' is not pending (it runs on 'n0')"),
        (parse_plan('{"kind": "allocate", "placements": [{"pod": "p", "node": "x"}]}'), "placements[0].node: unknown node 'x'"),
        (
            parse_plan('{"kind": "preempt", "job": "p", "now_s": 0, "placements": [], "victims": [{"pod": "c", "node": "n3", "lost_gpu_s": 0}]}'),
            "victims[0].node: pod 'c' is on 'n2', not 'n3'",
        ),
        (parse_plan('{"kind": "preempt", "job": "nope", "now_s": 0, "placements": [], "victims": []}'), "job: unknown job 'nope'"),
    ],
)
def test_the_first_mismatch_between_a_plan_and_the_snapshot_is_named(plan: object, mismatch: str | None) -> None:
    assert first_mismatch(plan, parse_cluster(json.dumps(CLUSTER))) == mismatch


def test_a_view_of_a_plan_over_another_snapshot_is_refused() -> None:
    with pytest.raises(SnapshotError, match=r"waves\[0\]\[0\]\.pod: unknown pod 'zz': the plan does not belong to this snapshot"):
        plan_view_html(defrag([[("zz", "n0", "n1")]]), parse_cluster(json.dumps(CLUSTER)))


def test_report_html_of_a_plan_over_the_wrong_snapshot_exits_2_naming_the_first_mismatch(tmp_path: Path) -> None:
    snapshot = tmp_path / "small.json"
    snapshot.write_text(json.dumps(CLUSTER))
    plan = GOLDEN / "defrag-ipc-asi500.json"
    done = subprocess.run(
        [*PLANNER, "report", str(snapshot), "--plan", str(plan), "-o", "html", "--out", str(tmp_path / "v.html")], capture_output=True, text=True
    )
    first = json.loads(plan.read_text())["waves"][0][0]["pod"]
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: waves[0][0].pod: unknown pod '{first}': the plan does not belong to this snapshot")
    assert "Traceback" not in done.stderr and not (tmp_path / "v.html").exists()


def test_planning_commands_print_a_self_contained_page_with_o_html(tmp_path: Path) -> None:
    done = subprocess.run([*PLANNER, "defrag", str(REPO / "instances" / "fig15-ejection-chain.json"), "-o", "html"], capture_output=True, text=True, check=True)
    page = done.stdout
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert re.findall(r"<script[^>]*\bsrc=", page) == [] and re.findall(r"<link\b", page) == []
    assert "default-src 'none'" in page
    assert done.stdout.count("<script") == 3


def test_report_html_writes_the_page_to_out_and_out_needs_html(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    subprocess.run([*PLANNER, "report", str(REPO / "instances" / "asi-500.json"), "-o", "html", "--out", str(out)], check=True, capture_output=True)
    assert "Access switches" in out.read_text()
    done = subprocess.run([*PLANNER, "report", str(REPO / "instances" / "asi-500.json"), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 2 and "--out: applies with -o html" in done.stderr


def test_script_json_cannot_end_the_script_element() -> None:
    text = script_json({"name": "</script><script>alert(1)</script>&\u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"name": "</script><script>alert(1)</script>&\u2028"}


def test_a_plan_that_empties_nodes_without_room_for_large_jobs_says_so() -> None:
    from planner.capacity import after_plan, large_job_capacity  # deferred: only this test counts capacity
    from planner.metrics import parse_shape

    cluster = parse_cluster((REPO / "instances" / "asi-500.json").read_text())
    plan = parse_plan((GOLDEN / "defrag-ipc-asi500.json").read_text())
    shapes = [parse_shape("128g1536c"), parse_shape("256g3072c")]
    within = [
        [sum(m["within_asw"] for m in c["per_model"].values()) for c in large_job_capacity(state, shapes)] for state in (cluster, after_plan(cluster, plan))
    ]
    assert within[1][0] <= within[0][0] and within[1][1] <= within[0][1]  # the case the issue describes: no gain
    page = plan_view_html(plan, cluster)
    assert (
        f'<p class="warn">The plan empties {len(plan.vacated_nodes)} nodes; they add no room for large jobs within one switch. '
        f"Requests that fit within one switch, all GPU models: 128g1536c: {within[0][0]} -&gt; {within[1][0]} (no gain); "
        f"256g3072c: {within[0][1]} -&gt; {within[1][1]} (no gain).</p>"
    ) in page


def fig15_plan(**report: Any) -> tuple[Any, Any]:
    """The golden IPC plan of the Fig. 15 snapshot (3 waves, heuristic at its bound), its report's fields replaced."""
    plan = json.loads((GOLDEN / "defrag-ipc-fig15.json").read_text())
    plan["report"].update(report)
    return parse_plan(json.dumps(plan)), parse_cluster((REPO / "instances" / "fig15-ejection-chain.json").read_text())


PROVENANCE = {"options": {"max_nodes_per_wave": "10%", "max_moves_per_wave": 5}, "option_sources": {"max_moves_per_wave": "server-policy"}}


@pytest.mark.parametrize(
    ("report", "lines", "said"),
    [
        # recorded by the planner: the count drawn, the rule and the source said
        (
            {"limits": {"max_nodes_per_wave": {"value": 2, "source": "default", "rule": "10% of 4 nodes in scope, rounded up, at least 2"}}},
            [("max_nodes_per_wave", 2)],
            ["max nodes per wave = 2, the default budget (none was given): 10% of 4 nodes in scope, rounded up, at least 2"],
        ),
        (
            {"limits": {"max_moves_per_wave": {"value": 5, "source": "given"}}, "provenance": PROVENANCE},
            [("max_moves_per_wave", 5)],
            ["max moves per wave = 5, set by the server's default policy", "max nodes per wave: not set"],
        ),
        # a hand-edited plan: a share where a count belongs, a flag, a long text: shown as text, never drawn
        (
            {"limits": {"max_nodes_per_wave": {"value": "10%", "source": "given"}, "max_moves_per_wave": {"value": True, "source": 7}}},
            [],
            ["max nodes per wave: 10%, given with the plan's options", "max moves per wave: True;"],
        ),
        ({"limits": {"max_nodes_per_wave": {"value": "x" * 5000}}}, [], ["max nodes per wave: " + "x" * 77 + "..."]),
        ({"limits": "every wave"}, [], ["max moves per wave: not recorded", "max nodes per wave: not recorded"]),
        # no limits recorded (an older planner's plan): the options as given; a share cannot be drawn
        (
            {"limits": None, "provenance": PROVENANCE},
            [("max_moves_per_wave", 5)],
            ["max moves per wave = 5, set by the server's default policy", "max nodes per wave: 10% of the nodes in scope; the plan's report does not record"],
        ),
    ],
)
def test_the_waves_chart_draws_the_recorded_budgets_and_shows_anything_else_as_text(report: dict, lines: list, said: list[str]) -> None:
    plan, cluster = fig15_plan(**report)
    page = plan_view_html(plan, cluster)
    drawn = [(t["meta"]["key"], t["y"][0]) for t in page_data(page)["charts"]["waves"]["data"] if "budget" in t["meta"]]
    assert drawn == lines
    for words in said:
        assert words in chart_caption(page, "waves")


def status_meaning_on_the_page(page: str) -> str:
    return html.unescape(re.search(r'data-fact="status"><div class="value">\w+</div><div class="name">status</div><div class="def">(.*?)</div>', page).group(1))  # type: ignore[union-attr]


def test_a_heuristic_plan_at_its_bound_is_called_proven_best_and_one_below_it_is_not() -> None:
    plan, cluster = fig15_plan()
    assert (plan.report.status, plan.report.objective, plan.report.bound, plan.report.gap) == ("heuristic", 1.0, 1.0, 0.0)
    at_bound = status_meaning_on_the_page(plan_view_html(plan, cluster))
    assert "proven best on the objective: it reaches the bound (gap 0)" in at_bound and "not proven" not in at_bound
    plan, cluster = fig15_plan(bound=2.0, gap=0.5)
    assert "from a heuristic: not proven best" in status_meaning_on_the_page(plan_view_html(plan, cluster))
    plan, cluster = fig15_plan(bound=None, gap=None)
    assert "not proven best" in status_meaning_on_the_page(plan_view_html(plan, cluster))
    plan, cluster = fig15_plan(objective=999_999.0, bound=1_000_000.0, gap=0.0)  # a gap rounded to 0 proves nothing
    assert "not proven best" in status_meaning_on_the_page(plan_view_html(plan, cluster))


def identity(page: str) -> dict[str, str]:
    return {html.unescape(k): html.unescape(v) for k, v in re.findall(r'<span class="id" data-id="([^"]+)"[^>]*>[^<]*<code>([^<]*)</code>', page)}


def test_the_page_names_the_plan_by_the_id_its_kubernetes_objects_carry() -> None:
    plan_file, snapshot = GOLDEN / "defrag-ipc-asi500.json", REPO / "instances" / "asi-500.json"
    plan, cluster = parse_plan(plan_file.read_text()), parse_cluster(snapshot.read_text())
    objects = render_text(plan, cluster, "podmigrationjob")  # what planner render -o podmigrationjob prints
    labels = set(re.findall(r"planner\.io/plan: (\w+)", objects))
    assert len(labels) == 1
    shown = identity(plan_view_html(plan, cluster))
    assert shown == {"plan id": labels.pop(), "snapshot sha256": plan.report.model_extra["provenance"]["snapshot_sha256"]}
    stored = identity(plan_view_html(plan, cluster, plan_id="5b1d9c4e"))
    assert stored["plan id"] == "5b1d9c4e" and stored["planner.io/plan"] == shown["plan id"]
    preempt = parse_plan((GOLDEN / "preempt-spotgpu-spot40.json").read_text())
    assert identity(plan_view_html(preempt, parse_cluster((GOLDEN / "snapshot-spot40.json").read_text())))["plan id"] == "none (not stored)"
