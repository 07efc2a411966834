"""Objective room with weights (``--weights``) and with the shapes of the pending jobs
(``--for-pending``, each job's topology mode respected): the weighted objective against a brute force
over every end state of tiny clusters, the report's weighted claims, bad weights, and the level each
pending job is counted at."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.heuristics.switch_room import RoomShape, room_counts
from planner.metrics import parse_shape
from planner.plans import DefragPlan
from planner.state import ClusterState
from planner.validate.defrag import apply_plan, validate

runner = CliRunner()


def snapshot(nodes: list[tuple[str, int, str, str]], pods: list[dict], jobs: list[dict] | None = None) -> Cluster:
    """nodes: (name, GPUs, asw, spine), 8 CPUs each; pods: name, gpus, node (None: pending), job; 1 CPU each."""
    return Cluster.model_validate(
        {
            "nodes": [{"name": n, "gpus": g, "cpus": 8, "memory_gib": 64, "asw": a, "spine": s} for n, g, a, s in nodes],
            "pods": [{"cpus": 1, **pod} for pod in pods],
            "jobs": jobs or [],
        }
    )


def room_plan(c: Cluster, **options: object) -> DefragPlan:
    chosen = DefragOptions(objective="room", **options)  # type: ignore[arg-type]
    result = plan_defrag(c, chosen)
    assert isinstance(result, DefragPlan)
    assert validate(c, result, chosen.limits(len(c.nodes))) == []
    return result


# -- weights: brute force over every end state --------------------------------------------------


def weighted_best(nodes: list[tuple[str, int, str, str]], pods: list[dict], shapes: dict[int, float]) -> tuple[float, float]:
    """(the weighted count on the snapshot, the best weighted count over every placement of the movable
    pods that fits the nodes' GPUs): GPU-only shapes, counted per access switch; written here,
    independent of the planner."""
    fixed = [p for p in pods if p.get("locked")]
    movable = [p for p in pods if not p.get("locked")]

    def value(where: tuple[str, ...]) -> float:
        used = {name: 0 for name, _, _, _ in nodes}
        for pod, node in itertools.chain(((p, p["node"]) for p in fixed), zip(movable, where)):
            used[node] += pod["gpus"]
        if any(used[name] > cap for name, cap, _, _ in nodes):
            return -1.0
        free: dict[str, int] = {}
        for name, cap, asw, _ in nodes:
            free[asw] = free.get(asw, 0) + cap - used[name]
        return sum(weight * sum(slots // gpus for slots in free.values()) for gpus, weight in shapes.items())

    before = value(tuple(p["node"] for p in movable))
    return before, max(value(where) for where in itertools.product([n for n, _, _, _ in nodes], repeat=len(movable)))


@st.composite
def tiny(draw: st.DrawFn) -> tuple[list[tuple[str, int, str, str]], list[dict], dict[int, float]]:
    nodes = [(f"n{s}{k}", 4, f"asw{s}", "S") for s in range(draw(st.integers(2, 3))) for k in range(2)]
    pods: list[dict] = []
    free = {name: gpus for name, gpus, _, _ in nodes}
    for i in range(draw(st.integers(1, 5))):
        node = draw(st.sampled_from(sorted(free)))
        size = draw(st.integers(1, 3))
        if free[node] >= size:
            free[node] -= size
            pods.append({"name": f"p{i}", "gpus": size, "node": node, "locked": i % 4 == 3})
    small, large = draw(st.sampled_from([(2, 4), (2, 6), (4, 8), (3, 6)]))
    return nodes, pods, {large: draw(st.sampled_from([1.0, 2.5])), small: draw(st.sampled_from([1.0, 3.0]))}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_weighted_objective_and_bound_against_every_end_state(case: tuple) -> None:
    nodes, pods, shapes = case
    c = snapshot(nodes, pods)
    before, best = weighted_best(nodes, pods, shapes)
    plan = room_plan(c, requests=[f"{g}g0c" for g in shapes], weights={f"{g}g0c": w for g, w in shapes.items()})
    report = plan.report
    assert report is not None
    counts = {int(s["shape"].split("g")[0]): (s["before"], s["after"], s["bound"]) for s in report.room["shapes"]}  # type: ignore[attr-defined]
    assert sum(w * counts[g][0] for g, w in shapes.items()) == pytest.approx(before)
    assert before - 1e-9 <= report.objective <= best + 1e-9  # never worse than the snapshot, never above the true best
    assert report.objective == pytest.approx(sum(w * counts[g][1] for g, w in shapes.items()))
    assert report.bound == pytest.approx(sum(w * counts[g][2] for g, w in shapes.items()))
    assert report.bound >= best - 1e-9  # the weighted bound holds over every end state
    assert report.room["weights"] == {f"{g}g0c": w for g, w in shapes.items()}  # type: ignore[attr-defined]


def test_weights_order_the_shapes_and_the_report_says_the_weighted_sums() -> None:
    c = snapshot(
        [("n0", 8, "A", "S"), ("n1", 8, "A", "S"), ("n2", 8, "B", "S"), ("n3", 8, "B", "S")],
        [
            {"name": "a", "gpus": 2, "node": "n0"},
            {"name": "b", "gpus": 6, "node": "n1"},
            {"name": "c", "gpus": 4, "node": "n2"},
            {"name": "d", "gpus": 4, "node": "n3"},
        ],
    )
    plan = room_plan(c, requests=["16g16c", "4g4c"], weights={"16g16c": 1, "4g4c": 3})
    report = plan.report
    assert report is not None
    shapes = report.room["shapes"]  # type: ignore[attr-defined]
    assert [s["shape"] for s in shapes] == ["4g4c", "16g16c"]  # by weight, not by size
    assert report.objective == 3 * shapes[0]["after"] + shapes[1]["after"]
    assert report.bound == 3 * shapes[0]["bound"] + shapes[1]["bound"]
    assert report.gap == pytest.approx((report.bound - report.objective) / report.bound)


@pytest.mark.parametrize(
    ("weights", "says"),
    [
        ("16g16c=2", ["--weights", "no weight for shape 4g4c"]),
        ("16g16c=2,4g4c=1,8g8c=1", ["--weights", "8g8c is not planned"]),
        ("16g16c=0,4g4c=1", ["--weights", "above 0"]),
        ("16g16c", ["--weights", "is not SHAPE=WEIGHT"]),
        ("16g16c=x,4g4c=1", ["--weights", "is not SHAPE=WEIGHT"]),
        ("16g16c=1,16g16c=2", ["--weights", "given twice"]),
        ("16g=1,4g4c=1", ["--weights", "gives no CPUs"]),
    ],
)
def test_bad_weights_exit_2_naming_the_option(tmp_path, weights: str, says: list[str]) -> None:  # type: ignore[no-untyped-def]
    c = snapshot([("n0", 8, "A", "S"), ("n1", 8, "A", "S")], [{"name": "a", "gpus": 2, "node": "n0"}])
    path = tmp_path / "c.json"
    path.write_text(json.dumps(c.model_dump(mode="json", by_alias=True, exclude_none=True)))
    result = runner.invoke(app, ["defrag", str(path), "--objective", "room", "--requests", "16g16c,4g4c", "--weights", weights])
    assert result.exit_code == 2, result.output
    for text in says:
        assert text in result.output, result.output
    assert "Traceback" not in result.output
    refused = runner.invoke(app, ["defrag", str(path), "--weights", "16g16c=1"])
    assert refused.exit_code == 2 and "only objective 'room' reads it" in refused.output


def test_the_exact_room_model_refuses_weights(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The exact model plans shape by shape; weights it cannot honour are refused, not ignored."""
    c = snapshot([("n0", 8, "A", "S"), ("n1", 8, "A", "S")], [{"name": "a", "gpus": 2, "node": "n0"}])
    path = tmp_path / "c.json"
    path.write_text(json.dumps(c.model_dump(mode="json", by_alias=True, exclude_none=True)))
    for method in ("exact", "compare"):
        args = ["defrag", str(path), "--objective", "room", "--method", method, "--requests", "16g16c,4g4c", "--weights", "16g16c=1,4g4c=2"]
        result = runner.invoke(app, [*args, "--time-limit", "5"])
        assert result.exit_code == 2, result.output
        assert "--weights" in result.output and "Traceback" not in result.output


# -- for_pending: each pending job at the level its topology asks for ------------------------------

NODES = [(f"n{s}{k}", 8, f"asw{s}", f"spine{s // 2}") for s in range(4) for k in range(2)]


def pending(name: str, pods: int, gpus: int, job: bool = True) -> list[dict]:
    return [{"name": f"{name}-{i}", "gpus": gpus, **({"job": name} if job else {})} for i in range(pods)]


@pytest.mark.parametrize("level", ["asw", "spine"])
def test_for_pending_counts_a_required_job_at_its_level_and_the_others_at_the_level_given(level: str) -> None:
    c = snapshot(
        NODES,
        [{"name": "x", "gpus": 2, "node": "n00"}, *pending("req-spine", 3, 8), *pending("req-asw", 2, 4), *pending("pref", 3, 2), *pending("free", 5, 1)],
        [
            {"name": "req-spine", "topology": {"level": "spine", "mode": "required"}},
            {"name": "req-asw", "topology": {"level": "asw", "mode": "required"}},
            {"name": "pref", "topology": {"level": "spine", "mode": "preferred"}},
            {"name": "free"},
        ],
    )
    plan = room_plan(c, for_pending=True, room_level=level)
    report = plan.report
    assert report is not None
    shapes = {(s["shape"], s["level"]) for s in report.room["shapes"]}  # type: ignore[attr-defined]
    # required: its own level whatever --level says; preferred (a wish, not a need) and no topology: --level
    assert shapes == {("24g3c", "spine"), ("8g2c", "asw"), ("6g3c", level), ("5g5c", level)}
    spine_pair = next(s for s in report.room["shapes"] if s["shape"] == "24g3c")  # type: ignore[attr-defined]
    assert spine_pair["before"] == spine_pair["bound"] == 2  # spine0 has 30 free GPUs, spine1 32: one each


# -- never less room than the empty-nodes plan at the same move budget -------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny())
def test_a_room_plan_never_leaves_less_room_than_the_empty_nodes_plan(case: tuple) -> None:
    nodes, pods, shapes = case
    c = snapshot(nodes, pods)
    requests = [f"{g}g0c" for g in sorted(shapes, reverse=True)]
    empty = plan_defrag(c, DefragOptions(executor="inline"))
    assert isinstance(empty, DefragPlan)
    after_empty = _counts(c, empty, requests)
    room = room_plan(c, requests=requests, max_moves=len(empty.moves()))
    assert len(room.moves()) <= len(empty.moves())
    assert _counts(c, room, requests) >= after_empty  # lexicographically, largest shape first
    assert room.report is not None and room.report.room_plan.startswith(("switch-targeted", "empty-nodes"))  # type: ignore[attr-defined]
    assert room.report.status == "heuristic" and room.report.method == "room"  # no claim carried over from the empty-nodes plan


def _counts(c: Cluster, plan: DefragPlan, requests: list[str]) -> list[int]:
    return room_counts(ClusterState(apply_plan(c, plan)), [RoomShape(parse_shape(text)) for text in requests])


# -- the empty-nodes plan is compared by its moves, finished only when returned ----------------------

WINS = [  # snapshots where the empty-nodes plan leaves more room (found by a random search over tiny())
    (2, ["8g0c", "4g0c"], 3, {"n10": [3], "n01": [2], "n21": [1, 2]}),
    (2, ["4g0c"], 3, {"n20": [2], "n01": [3], "n10": [1, 1], "n11": [1]}),
    (1, ["6g0c", "2g0c"], 2, {"n00": [1, 2], "n11": [1], "n10": [1, 1]}),
]


@pytest.mark.parametrize("max_moves, requests, switches, placed", WINS)
def test_the_counted_moves_are_those_of_the_finished_empty_nodes_plan(max_moves: int, requests: list[str], switches: int, placed: dict) -> None:
    from planner.engine.defrag import EMPTY_NODES, _default_steps

    nodes = [(f"n{s}{k}", 4, f"asw{s}", "S") for s in range(switches) for k in range(2)]
    pods = [{"name": f"p{node}{i}", "gpus": g, "node": node} for node, sizes in placed.items() for i, g in enumerate(sizes)]
    c = snapshot(nodes, pods)
    room = room_plan(c, requests=requests, max_moves=max_moves)
    assert room.report is not None and room.report.room_plan.startswith("empty-nodes")  # type: ignore[attr-defined]
    for limit in (max_moves, None):  # the plans compared: at the room plan's limits, and without max_moves
        options = DefragOptions(objective="room", requests=requests, max_moves=limit).model_copy(update=EMPTY_NODES)
        finished = plan_defrag(c, options)
        assert isinstance(finished, DefragPlan)
        steps = _default_steps(c, options, ClusterState(c))
        names = [(c.pods[p].name, c.nodes[a].name, c.nodes[b].name) for wave in steps for p, a, b in wave]
        assert names == [(m.pod, m.from_, m.to) for m in finished.moves()]  # the same moves in the same order


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(), st.sampled_from([None, 1, 2]))
def test_unfinished_empty_nodes_moves_match_the_plan_on_any_snapshot(case: tuple, max_moves: int | None) -> None:
    from planner.engine.defrag import EMPTY_NODES, _default_steps

    nodes, pods, _ = case
    c = snapshot(nodes, pods)
    options = DefragOptions(max_moves=max_moves, executor="inline").model_copy(update=EMPTY_NODES)
    finished = plan_defrag(c, options)
    assert isinstance(finished, DefragPlan)
    steps = _default_steps(c, options, ClusterState(c))
    assert [(c.pods[p].name, c.nodes[b].name) for wave in steps for p, _, b in wave] == [(m.pod, m.to) for m in finished.moves()]


@pytest.mark.parametrize("max_moves, requests, switches, placed", WINS)
def test_the_comparison_forked_or_inline_gives_the_same_plan(max_moves: int, requests: list[str], switches: int, placed: dict) -> None:
    nodes = [(f"n{s}{k}", 4, f"asw{s}", "S") for s in range(switches) for k in range(2)]
    pods = [{"name": f"p{node}{i}", "gpus": g, "node": node} for node, sizes in placed.items() for i, g in enumerate(sizes)]
    c = snapshot(nodes, pods)
    plans = [room_plan(c, requests=requests, max_moves=limit, executor=kind, workers=2) for kind in ("process", "inline") for limit in (max_moves, None)]
    for forked, inline in zip(plans[:2], plans[2:]):
        assert [(m.pod, m.to) for m in forked.moves()] == [(m.pod, m.to) for m in inline.moves()]
        assert forked.report is not None and inline.report is not None
        assert forked.report.room_plan == inline.report.room_plan  # type: ignore[attr-defined]
        assert forked.report.room == inline.report.room  # type: ignore[attr-defined]
