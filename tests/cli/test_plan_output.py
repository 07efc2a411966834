"""Human output of plans: numbers with separators and no exponent, GFR and GAR defined, the planner's
internals in ``-o wide`` only; every defrag plan's metrics count large requests before and after, and
the table warns when a plan vacates nodes but adds no room for them."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from planner.capacity import after_plan, large_job_capacity, large_request_counts
from planner.cli import app
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.metrics import parse_shape
from planner.plans import DefragPlan
from planner.render.table import fmt, signed
from planner.state import ClusterState
from tests.support.paths import REPO

runner = CliRunner()


def test_numbers_have_separators_and_no_exponent():
    assert fmt(1004290.0) == "1,004,290"
    assert fmt(123456.7) == "123,457"
    assert fmt(2.5) == "2.5" and fmt(0.25) == "0.2500" and fmt(3.0) == "3" and fmt(12345) == "12,345"
    assert signed(1200.0) == "+1,200" and signed(-3) == "-3" and signed(0) == "0"


def two_switches() -> Cluster:
    return Cluster.model_validate(
        {
            "nodes": [{"name": f"n{i}", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": f"s{i}"} for i in range(2)],
            "pods": [{"name": f"p{i}", "gpus": 4, "cpus": 1, "node": f"n{i}"} for i in range(2)],
        }
    )


def test_metrics_count_large_requests_before_and_after_as_the_report_does():
    c = two_switches()
    plan = plan_defrag(c, DefragOptions(large_requests=["8g", "16g8c"], executor="inline"))
    assert isinstance(plan, DefragPlan) and plan.metrics is not None and len(plan.vacated_nodes) == 1
    shapes = [parse_shape("8g"), parse_shape("16g8c")]
    for side, cluster in (("before", c), ("after", after_plan(c, plan))):
        counts = plan.metrics.before["large_requests"] if side == "before" else plan.metrics.after["large_requests"]
        for item in large_job_capacity(cluster, shapes):
            assert counts[item["shape"]]["across_switches"] == item["heterogeneous_across_asw"]
            assert counts[item["shape"]]["within_one_switch"] == sum(m["within_asw"] for m in item["per_model"].values())
    assert plan.metrics.before["large_requests"]["8g0c"]["within_one_switch"] == 0
    assert plan.metrics.after["large_requests"]["8g0c"]["within_one_switch"] == 1


def test_default_shapes_are_the_fig14_ones():
    plan = plan_defrag(two_switches(), DefragOptions(executor="inline"))
    assert isinstance(plan, DefragPlan) and plan.metrics is not None
    assert list(plan.metrics.after["large_requests"]) == ["64g768c", "128g1536c", "256g3072c"]


def test_table_warns_when_vacated_nodes_add_no_room(tmp_path):
    one_switch = Cluster.model_validate(
        {**two_switches().model_dump(), "nodes": [{"name": f"n{i}", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": "s"} for i in range(2)]}
    )
    for cluster, warned in ((one_switch, True), (two_switches(), False)):
        path = tmp_path / "s.json"
        path.write_text(cluster.model_dump_json())
        result = runner.invoke(app, ["defrag", str(path), "--executor", "inline", "--large-requests", "8g", "-o", "table"])
        assert result.exit_code == 0, result.output
        assert ("adds no room for a large request (8g0c)" in result.stdout) == warned, result.stdout
        assert "8g0c requests that fit (one switch)" in result.stdout


def test_gfr_gar_defined_and_internals_in_wide_only():
    path = REPO / "instances" / "asi-500.json"
    table = runner.invoke(app, ["defrag", str(path), "--executor", "inline", "-o", "table"])
    wide = runner.invoke(app, ["defrag", str(path), "--executor", "inline", "-o", "wide"])
    assert table.exit_code == wide.exit_code == 0
    assert "GFR: share of all nodes (CPU-only too) neither empty nor full" in table.stdout and "GAR: allocated GPUs / GPUs" in table.stdout
    for internal in ("partitions", "candidates tried", "rounds run"):
        assert internal not in table.stdout and internal in wide.stdout
    assert "e+0" not in table.stdout and "lost work (GPU-seconds" in table.stdout


def test_bad_large_request_shape_is_exit_2_naming_the_flag(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(two_switches().model_dump_json())
    result = runner.invoke(app, ["defrag", str(path), "--large-requests", "12x"])
    assert result.exit_code == 2 and "--large-requests" in result.stderr and "8g64c" in result.stderr
    plan = runner.invoke(app, ["defrag", str(path), "--executor", "inline", "--large-requests", "4g", "-o", "json"])
    assert "4g0c" in json.loads(plan.stdout)["metrics"]["before"]["large_requests"]


def test_allocation_plans_count_large_requests_before_and_after_their_placements():
    c = Cluster.model_validate(
        {
            "nodes": [{"name": f"n{i}", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": f"s{i // 2}"} for i in range(4)],
            "pods": [{"name": f"j-{i}", "job": "j", "gpus": 8, "cpus": 1, "node": None} for i in range(2)],
            "jobs": [{"name": "j", "topology": {"level": "asw", "mode": "required"}}],
        }
    )
    plan = plan_allocate(c, AllocateOptions(method="largest-first", large_requests=["16g"]))
    counts = plan.metrics["large_requests"]
    assert counts["before"]["16g0c"] == {
        "across_switches": 2,
        "within_one_switch": 2,
        "by_model": {"(unnamed)": {"across_switches": 2, "within_one_switch": 2}},
    }
    assert (
        counts["after"]["16g0c"]["within_one_switch"]
        == 1
        == large_job_capacity(after_plan(c, plan), [parse_shape("16g")])[0]["per_model"]["(unnamed)"]["within_asw"]
    )


def test_preempt_plans_count_large_requests_as_the_plan_carried_out_does():
    c = Cluster.model_validate(
        {
            "time_s": 100.0,
            "nodes": [{"name": f"n{i}", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": "s"} for i in range(2)],
            "pods": [
                {"name": "lp0", "job": "lp0", "gpus": 8, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 0.0},
                {"name": "lp1", "job": "lp1", "gpus": 4, "cpus": 1, "node": "n1", "priority": "LP", "started_s": 90.0},
                {"name": "hp-0", "job": "hp", "gpus": 8, "cpus": 1, "node": None, "priority": "HP"},
            ],
            "jobs": [{"name": "lp0"}, {"name": "lp1"}, {"name": "hp"}],
        }
    )
    plan = plan_preempt(c, "hp", PreemptOptions(large_requests=["4g", "8g"]))
    assert plan.victims and plan.placements
    shapes = [parse_shape("4g"), parse_shape("8g")]
    assert plan.metrics["large_requests"]["before"] == large_request_counts(ClusterState(c), shapes)
    assert plan.metrics["large_requests"]["after"] == large_request_counts(ClusterState(after_plan(c, plan)), shapes)
    result = runner.invoke(app, ["preempt", "-", "--job", "hp", "-o", "table", "--large-requests", "4g"], input=c.model_dump_json())
    assert result.exit_code == 0 and "large requests that still fit, before -> after: 4g0c" in result.stdout, result.output


def test_table_warns_when_a_plan_takes_room_within_a_switch_and_points_to_objective_room():
    """The bundled asi-500's default plan leaves one 128-GPU request fewer within one switch (4 -> 3); the
    room plan for the same shapes does not, and gets no hint to itself."""
    path = str(REPO / "instances" / "asi-500.json")
    empty = runner.invoke(app, ["defrag", path, "--executor", "inline", "-o", "table"])
    assert empty.exit_code == 0, empty.output
    assert "fewer large requests fit within one switch after the plan (128g1536c 4 -> 3)" in empty.stdout
    assert "`--objective room` plans for them" in empty.stdout
    room = runner.invoke(app, ["defrag", path, "--executor", "inline", "--objective", "room", "-o", "table"])
    assert room.exit_code == 0, room.output
    assert "fewer large requests fit within one switch" not in room.stdout and "--objective room` plans" not in room.stdout


def test_room_plans_count_large_requests_as_their_room_report_and_the_table_shows_the_room(tmp_path):
    """A room plan's metrics count the large requests as every defrag plan's do (the default Fig. 14
    shapes are the room shapes here), with the counts its report gives per shape; its table shows each
    shape's room before and after with the bound and what the bound bounds."""
    path = REPO / "instances" / "asi-500.json"
    c = Cluster.model_validate_json(path.read_text())
    plan = plan_defrag(c, DefragOptions(objective="room", executor="inline"))
    assert isinstance(plan, DefragPlan) and plan.metrics is not None and plan.report is not None
    shapes = plan.report.room["shapes"]  # type: ignore[attr-defined]  # the room report
    after = large_request_counts(ClusterState(after_plan(c, plan)), [parse_shape(shape["shape"]) for shape in shapes])
    for shape in shapes:
        assert plan.metrics.before["large_requests"][shape["shape"]]["within_one_switch"] == shape["before"]
        assert plan.metrics.after["large_requests"][shape["shape"]]["within_one_switch"] == shape["after"] == after[shape["shape"]]["within_one_switch"]
    assert any(shape["after"] > shape["before"] for shape in shapes)
    result = runner.invoke(app, ["defrag", str(path), "--objective", "room", "--executor", "inline", "-o", "table"])
    assert result.exit_code == 0, result.output
    assert "Room for large requests (within one asw)" in result.stdout and "adds no room" not in result.stdout
    assert f"bound ({shapes[0]['shape']} requests within one asw)" in result.stdout and "bound (empty nodes)" not in result.stdout
    for shape in shapes:
        row = next(line for line in result.stdout.splitlines() if line.startswith(f"│ {shape['shape']} "))
        cells = [cell.strip() for cell in row.strip("│").split("│")]
        assert cells == [shape["shape"], str(shape["before"]), str(shape["after"]), signed(shape["after"] - shape["before"]), str(shape["bound"])]


def test_room_table_says_when_a_room_plan_adds_no_room_and_what_the_exact_plan_proves(tmp_path):
    """Two switches of one 8-GPU node, each half used: one 8-GPU request needs one move. With no move
    allowed the room plan adds none and the table says so; the exact plan proves the one request."""
    path = tmp_path / "s.json"
    path.write_text(two_switches().model_dump_json())
    base = ["defrag", str(path), "--objective", "room", "--requests", "8g8c", "--executor", "inline", "-o", "table"]
    stuck = runner.invoke(app, [*base, "--max-moves", "0"])
    assert stuck.exit_code == 0, stuck.output
    assert "warning: the plan adds no room for 8g8c" in stuck.stdout and "proven most" not in stuck.stdout
    exact = runner.invoke(app, [*base, "--method", "exact", "--solver", "highs", "--solver-workers", "1", "--time-limit", "10"])
    assert exact.exit_code == 0, exact.output
    row = next(line for line in exact.stdout.splitlines() if line.startswith("│ 8g8c "))
    assert [cell.strip() for cell in row.strip("│").split("│")] == ["8g8c", "0", "1", "+1", "1", "1"]  # proven most: 1
    assert "proven most" in exact.stdout and "adds no room" not in exact.stdout  # nor the empty-nodes warning, for the Fig. 14 shapes
