"""The HTML views in a real headless Chromium (Debian's ``chromium``, driven over the DevTools
protocol): what the page shows is read back from the drawn charts and tables and compared with the plan
and with numbers computed here from the snapshot, and the browser's own request log shows that nothing
leaves the page."""

from __future__ import annotations

import html
import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from planner.capacity import after_plan, large_job_capacity
from planner.metrics import parse_shape
from planner.plans import parse_plan
from planner.render.view import plan_view_html, report_view_html
from planner.render.view.cells import FIG14_SHAPES
from planner.snapshot import parse_cluster
from tests.support.browser import CHROMIUM, Browser, page_requests

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "golden"
PLANNER = [sys.executable, "-m", "planner"]

ROWS_OF_ALL_PAGES = """(() => {
  const root = document.getElementById(%s);
  const next = root.querySelector('button.next'), prev = root.querySelector('button.prev');
  while (!prev.disabled) prev.click();
  let rows = [];
  for (;;) {
    root.querySelectorAll('tbody tr').forEach(tr => rows.push(Array.from(tr.children).map(td => td.textContent)));
    if (next.disabled) break;
    next.click();
  }
  return rows;
})()"""


def traces(browser: Browser, chart: str) -> list[dict[str, Any]]:
    """The traces Plotly drew in ``chart`` (its own copy of the data, after drawing)."""
    return browser.evaluate(f"document.getElementById({json.dumps(chart)}).data.map(t => ({{meta: t.meta, x: t.x, y: t.y, z: t.z}}))")


def table_rows(browser: Browser, table: str) -> list[list[str]]:
    return browser.evaluate(ROWS_OF_ALL_PAGES % json.dumps(table))


@pytest.fixture(scope="module")
def browser() -> Browser:
    with Browser() as b:
        yield b


def show(browser: Browser, page: str, path: Path) -> dict[str, Any]:
    path.write_text(page, encoding="utf-8")
    url = path.as_uri()
    loaded = browser.load(url)
    assert page_requests(loaded, url) == [], "the page made requests"
    assert loaded["requests"][0] == url
    return loaded


def expected_cells(cluster: Any) -> dict[str, dict[tuple[str, str], int | float]]:
    """Per (switch, model), computed from the pods here: idle GPUs, empty nodes, requests of each shape
    within the switch (slots: free whole GPUs, limited by free CPUs per GPU)."""
    used_gpus: dict[str, float] = defaultdict(float)
    used_cpus: dict[str, float] = defaultdict(float)
    pods: dict[str, int] = defaultdict(int)
    for pod in cluster.pods:
        if pod.node is not None:
            used_gpus[pod.node] += pod.gpus
            used_cpus[pod.node] += pod.cpus
            pods[pod.node] += 1
    out: dict[str, dict[tuple[str, str], Any]] = defaultdict(lambda: defaultdict(int))
    slots: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    for node in cluster.nodes:
        cell = (node.asw, node.gpu_model)
        out["idle_gpus"][cell] += node.gpus - used_gpus[node.name]
        out["empty_nodes"][cell] += pods[node.name] == 0
        for text in FIG14_SHAPES:
            shape = parse_shape(text)
            free = int(node.gpus - used_gpus[node.name])
            slots[text][cell] += min(free, math.floor((node.cpus - used_cpus[node.name]) / (shape.cpus / shape.gpus))) if node.schedulable else 0
    for text in FIG14_SHAPES:
        out[f"requests_{parse_shape(text)}"] = {cell: total // parse_shape(text).gpus for cell, total in slots[text].items()}
    return out


def drawn_cells(trace: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(y, x): v for y, row in zip(trace["y"], trace["z"], strict=True) for x, v in zip(trace["x"], row, strict=True) if v is not None}


@pytest.fixture(scope="module")
def defrag_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """asi-500 planned under per-wave budgets (100 moves, 150 nodes per wave)."""
    out = tmp_path_factory.mktemp("defrag") / "plan.json"
    snapshot = REPO / "instances" / "asi-500.json"
    args = [*PLANNER, "defrag", str(snapshot), "--max-moves-per-wave", "100", "--max-nodes-per-wave", "150", "--out", str(out), "-o", "json"]
    subprocess.run(args, check=True, capture_output=True, cwd=REPO)
    return parse_cluster(snapshot.read_text()), parse_plan(out.read_text())


def test_defrag_view_shows_every_move_the_heatmap_cells_and_the_waves_of_the_plan(browser: Browser, defrag_case: tuple[Any, Any], tmp_path: Path) -> None:
    cluster, plan = defrag_case
    show(browser, plan_view_html(plan, cluster), tmp_path / "defrag.html")
    moves = plan.moves()
    # every move, on every page of the table, in plan order
    assert browser.evaluate("document.querySelectorAll('#moves tbody tr').length") == 100  # one page
    rows = table_rows(browser, "moves")
    assert len(rows) == len(moves) > 100
    assert [(r[3], r[4], r[5]) for r in rows] == [(m.pod, m.from_, m.to) for m in moves]
    # the heatmap: one cell per (switch, model) that has nodes, with the values computed here, and
    # per model the sums are the plan's metrics and the large-job capacity
    after = after_plan(cluster, plan)
    drawn = {(t["meta"]["measure"], t["meta"]["phase"]): drawn_cells(t) for t in traces(browser, "heatmap")}
    pairs = {(n.asw, n.gpu_model) for n in cluster.nodes}
    shapes = [parse_shape(s) for s in FIG14_SHAPES]
    for phase, state, summary in (("before", cluster, plan.metrics.before), ("after", after, plan.metrics.after)):
        want = expected_cells(state)
        capacity = large_job_capacity(state, shapes)
        for measure, cells in want.items():
            assert drawn[(measure, phase)] == dict(cells), (measure, phase)
            assert set(drawn[(measure, phase)]) == pairs
        for model, by_model in summary["by_model"].items():
            assert sum(v for (_, m), v in drawn[("empty_nodes", phase)].items() if m == model) == by_model["empty_nodes"]
            assert sum(v for (_, m), v in drawn[("idle_gpus", phase)].items() if m == model) == pytest.approx(by_model["idle_gpus"])
            for s, shape in enumerate(shapes):
                within = capacity[s]["per_model"][model]["within_asw"]
                assert sum(v for (_, m), v in drawn[(f"requests_{shape}", phase)].items() if m == model) == within
    for measure in want:
        before, after_cells, diff = (drawn[(measure, p)] for p in ("before", "after", "difference"))
        assert diff == {cell: pytest.approx(after_cells[cell] - before[cell]) for cell in before}
    # the waves: bars sum to the moves and GPUs moved, within the budgets drawn as lines
    waves = {t["meta"]["series"]: t for t in traces(browser, "waves") if "series" in t["meta"]}
    assert sum(waves["moves"]["y"]) == len(moves)
    assert waves["moves"]["y"] == [len(w) for w in plan.waves]
    assert sum(waves["gpus_moved"]["y"]) == pytest.approx(plan.report.gpus_moved)
    assert max(waves["moves"]["y"]) <= 100 and max(waves["nodes_touched"]["y"]) <= 150
    budgets = [t for t in browser.evaluate("document.getElementById('waves').data.map(t => t.name)") if t.startswith("budget")]
    assert budgets == ["budget: max moves per wave = 100 (given)", "budget: max nodes per wave = 150 (given)"]
    # each budget's line is drawn at its count in the colour of the bars it caps
    drawn_lines = browser.evaluate(
        "(() => { const d = document.getElementById('waves'); const bars = {}; d.data.forEach(t => { if (t.meta.series) bars[t.meta.series] = t.marker.color; });"
        " return d.data.filter(t => t.meta.budget).map(t => [t.meta.budget, t.y, t.line.color === bars[t.meta.budget]]); })()"
    )
    assert drawn_lines == [["moves", [100, 100], True], ["nodes_touched", [150, 150], True]]
    # the node grid colours exactly the vacated nodes as emptied; the headline has the empty nodes
    grid = traces(browser, "node-grid")[0]
    assert sum(v == 1 for row in grid["z"] for v in row) == len(plan.vacated_nodes)
    empty = browser.evaluate("document.querySelector('[data-fact=\"empty nodes\"] .value').textContent")
    assert empty == f"{plan.metrics.before['empty_nodes']:,} -> {plan.metrics.after['empty_nodes']:,}"
    # the filter and the sort work on the whole table
    jobs = {p.name: p.job for p in cluster.pods}
    job = jobs[moves[0].pod]
    browser.evaluate(f"(() => {{ const i = document.querySelector('#moves input'); i.value = {json.dumps(job)}; i.dispatchEvent(new Event('input')); }})()")
    filtered = table_rows(browser, "moves")
    assert filtered and all(any(job in cell for cell in row) for row in filtered)
    assert len(filtered) == sum(jobs[m.pod] == job for m in moves)


def test_preempt_view_shows_where_the_job_lands_and_its_victims(browser: Browser, tmp_path: Path) -> None:
    cluster = parse_cluster((GOLDEN / "snapshot-spot40.json").read_text())
    plan = parse_plan((GOLDEN / "preempt-spotgpu-spot40.json").read_text())
    show(browser, plan_view_html(plan, cluster), tmp_path / "preempt.html")
    placements = table_rows(browser, "placements")
    assert [(r[0], r[1]) for r in placements] == [(p.pod, p.node) for p in plan.placements]
    victims = table_rows(browser, "victims")
    assert [(r[0], r[2], float(r[5].replace(",", ""))) for r in victims] == [(v.pod, v.node, round(v.lost_gpu_s, 3)) for v in plan.victims]
    lost = browser.evaluate("document.querySelector('[data-fact=\"lost GPU-seconds\"] .value').textContent")
    assert lost == f"{round(sum(v.lost_gpu_s for v in plan.victims), 3):,}"


def test_preempt_compare_view_puts_the_heuristic_beside_the_exact_optimum(browser: Browser, tmp_path: Path) -> None:
    cluster = parse_cluster((GOLDEN / "snapshot-spot40.json").read_text())
    text = (GOLDEN / "preempt-compare-spot40.json").read_text()
    from planner.plans import PreemptComparison  # deferred: only this test reads a comparison

    plan = PreemptComparison.model_validate_json(text)
    show(browser, plan_view_html(plan, cluster), tmp_path / "compare.html")
    rows = table_rows(browser, "compare")
    assert [r[0] for r in rows] == ["heuristic (spotgpu)", "exact"]
    assert [r[1] for r in rows][1] == plan.gap["exact_status"]
    assert len(table_rows(browser, "exact-victims")) == len(plan.exact.victims)


def test_allocation_view_shows_each_jobs_switches_and_the_capacity_before_and_after(browser: Browser, tmp_path: Path) -> None:
    snapshot = tmp_path / "asi96.json"
    subprocess.run([*PLANNER, "generate", "asi", "--nodes", "96", "--seed", "5", "--large-jobs", "3", "--out", str(snapshot)], check=True, capture_output=True)
    cluster = parse_cluster(snapshot.read_text())
    plan = parse_plan((GOLDEN / "allocate-largest-first-asi96.json").read_text())
    show(browser, plan_view_html(plan, cluster), tmp_path / "allocate.html")
    jobs = table_rows(browser, "jobs")
    placed = defaultdict(set)
    node_of = {p.pod: p.node for p in plan.placements}
    for pod in cluster.pods:
        if pod.name in node_of:
            placed[pod.job].add(node_of[pod.name])
    assert {r[0]: set(r[6].split(", ")) for r in jobs} == placed
    asw = {n.name: n.asw for n in cluster.nodes}
    assert {r[0]: set(r[4].split(", ")) for r in jobs} == {job: {asw[n] for n in nodes} for job, nodes in placed.items()}
    drawn = {(t["meta"]["measure"], t["meta"]["phase"]): drawn_cells(t) for t in traces(browser, "heatmap")}
    after = after_plan(cluster, plan)
    used = sum(p.gpus for p in cluster.pods if p.name in node_of)
    assert sum(drawn[("idle_gpus", "before")].values()) - sum(drawn[("idle_gpus", "after")].values()) == pytest.approx(used)
    assert drawn[("empty_nodes", "after")] == dict(expected_cells(after)["empty_nodes"])
    fig14 = table_rows(browser, "fig14")
    assert len(fig14) == sum(len({n.gpu_model for n in cluster.nodes}) + 1 for _ in FIG14_SHAPES)


def test_report_view_heatmap_adds_up_to_the_report(browser: Browser, tmp_path: Path) -> None:
    cluster = parse_cluster((REPO / "instances" / "asi-500.json").read_text())
    show(browser, report_view_html(cluster), tmp_path / "report.html")
    drawn = {t["meta"]["measure"]: drawn_cells(t) for t in traces(browser, "heatmap")}
    want = expected_cells(cluster)
    assert drawn == {measure: dict(cells) for measure, cells in want.items()}
    switches = table_rows(browser, "switches")
    assert [r[0] for r in switches] == sorted({n.asw for n in cluster.nodes})


HOSTILE = {
    "asw": '<img src=x onerror="window.pwned=1">',
    "model": "<b>bold</b>",
    "pod": "<script>window.pwned=2</script>",
    "namespace": "</script><script>window.pwned=3</script>",
    "job": "job&amp;<i>",
}


def test_names_from_the_input_are_shown_as_text_never_run(browser: Browser, tmp_path: Path) -> None:
    nodes = [
        {"name": f"n{i}<x>", "gpus": 8, "cpus": 96, "memory_gib": 1024, "gpu_model": HOSTILE["model"], "asw": HOSTILE["asw"] if i else "asw-0"}
        for i in range(2)
    ]
    pod = {"name": HOSTILE["pod"], "job": HOSTILE["job"], "namespace": HOSTILE["namespace"], "node": "n0<x>", "gpus": 2, "cpus": 8}
    other = {"name": "p1", "node": "n1<x>", "gpus": 2, "cpus": 8}
    cluster = parse_cluster(json.dumps({"nodes": nodes, "pods": [pod, other], "jobs": [{"name": HOSTILE["job"]}]}))
    plan = parse_plan(json.dumps({"kind": "defrag", "waves": [[{"pod": HOSTILE["pod"], "from": "n0<x>", "to": "n1<x>"}]], "vacated_nodes": ["n0<x>"]}))
    page = plan_view_html(plan, cluster)
    assert HOSTILE["pod"] not in page and HOSTILE["asw"] not in page and "<b>bold</b>" not in page
    show(browser, page, tmp_path / "hostile.html")
    assert browser.evaluate("typeof window.pwned") == "undefined"
    assert browser.evaluate("document.scripts.length") == 3  # the data, Plotly and the view's own
    rows = table_rows(browser, "moves")
    assert rows == [["1", HOSTILE["namespace"], HOSTILE["job"], HOSTILE["pod"], "n0<x>", "n1<x>", f"asw-0 -> {HOSTILE['asw']}", HOSTILE["model"], "2"]]
    ticks = browser.evaluate("Array.from(document.querySelectorAll('#heatmap .ytick text')).map(t => t.textContent)")
    assert HOSTILE["asw"] in ticks
    assert browser.evaluate("document.querySelectorAll('main b, main img, main i').length") == 0
    assert html.escape(HOSTILE["pod"]) not in browser.evaluate("document.body.innerText")


OVERLAPS = """((id) => {
  const root = document.getElementById(id);
  const boxes = sel => Array.from(root.querySelectorAll(sel)).filter(e => e.textContent.trim()).map(e => [e.textContent, e.getBoundingClientRect()]);
  const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const titles = boxes('text.xtitle, text.x2title, text.x3title, text.ytitle');
  const ticks = boxes('g.xtick text, g.x2tick text, g.x3tick text, g.ytick text');
  const out = [], frame = root.getBoundingClientRect();
  titles.forEach(([t, a]) => ticks.forEach(([k, b]) => { if (hit(a, b)) out.push([t, k]); }));
  const cut = titles.concat(ticks).filter(([, b]) => b.left < frame.left || b.right > frame.right || b.top < frame.top || b.bottom > frame.bottom).map(t => t[0]);
  return {titles: titles.map(t => t[0]), ticks: ticks.length, overlaps: out, cut: cut};
})(%s)"""


def overlaps(browser: Browser, chart: str) -> dict[str, Any]:
    """The axis titles of ``chart``, its tick labels, each (title, tick label) pair drawn over each other
    and the labels cut by the chart's edge."""
    return browser.evaluate(OVERLAPS % json.dumps(chart))


def long_names_cluster() -> Any:
    """Switch and GPU model names as long as real clusters' labels (a rack's leaf switch, a product name)."""
    models = ["NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB", "NVIDIA-L40S-48GB-PCIe", "NVIDIA-H20-96GB-HBM3"]
    nodes = [
        {"name": f"node-{i}", "gpus": 8, "cpus": 96, "memory_gib": 1024, "gpu_model": models[i % 4], "asw": f"rack-{i // 4:02d}-leaf-switch-spine-a"}
        for i in range(24)
    ]
    pods = [{"name": f"p{i}", "node": f"node-{i}", "gpus": 1 + i % 3, "cpus": 4} for i in range(0, 24, 2)]
    return parse_cluster(json.dumps({"nodes": nodes, "pods": pods}))


def test_axis_titles_are_clear_of_the_tick_labels(browser: Browser, defrag_case: tuple[Any, Any], tmp_path: Path) -> None:
    cluster, plan = defrag_case
    show(browser, plan_view_html(plan, cluster), tmp_path / "asi.html")
    for chart in ("heatmap", "node-grid", "waves"):
        drawn = overlaps(browser, chart)
        assert drawn["titles"] and drawn["ticks"] and drawn["overlaps"] == drawn["cut"] == [], (chart, drawn)
    show(browser, report_view_html(long_names_cluster()), tmp_path / "long.html")
    for chart in ("heatmap", "node-grid"):
        drawn = overlaps(browser, chart)
        assert drawn["titles"] and drawn["ticks"] and drawn["overlaps"] == drawn["cut"] == [], (chart, drawn)
