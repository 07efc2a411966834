"""The HTML views without a browser: a plan that does not belong to the snapshot is refused naming the
first mismatch (exit 2 on the command line), the page is one self-contained file, and the data it
carries cannot end its script element. The pages in a browser: tests/test_view_browser.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cluster import SnapshotError
from planner.plans import parse_plan
from planner.render.view import first_mismatch, plan_view_html
from planner.render.view.page import script_json
from planner.snapshot import parse_cluster

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
