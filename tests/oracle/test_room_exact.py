"""Objective room, method exact and compare (issue 44): the exact model's claims against a brute force
over every move set of tiny clusters, written here from the snapshot dicts (independent of the planner):
``optimal`` means the counts (shapes in order), then the moves, then the GPUs moved are the best any end
state within the budget reaches; ``bound`` is never below the best count; every plan validates."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.plans import DefragComparison, DefragPlan
from planner.validate.defrag import validate
from tests.support.room_oracle import brute, counts_of, end_states, largest_group, snapshot, tiny, tiny_multiples, tiny_products

runner = CliRunner()
SOLVE = {"time_limit_s": 20.0, "solver_workers": 1}  # explicit limits: tiny models prove in milliseconds


def text(shape: tuple[int, float]) -> str:
    return f"{shape[0]}g{shape[1]:g}c"


def exact_plan(c: Cluster, **options: Any) -> DefragPlan:
    chosen = DefragOptions(objective="room", method="exact", **SOLVE, **options)
    result = plan_defrag(c, chosen)
    assert isinstance(result, DefragPlan)
    assert validate(c, result, chosen.limits(len(c.nodes))) == []
    return result


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(), st.sampled_from(["cpsat", "highs"]))
def test_exact_room_claims_against_every_move_set(case: tuple[Any, ...], solver: str) -> None:
    check_claims(case, solver)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_multiples(), st.sampled_from(["cpsat", "highs"]))
def test_exact_room_claims_with_joint_levels(case: tuple[Any, ...], solver: str) -> None:
    check_claims(case, solver)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_products(), st.sampled_from(["cpsat", "highs"]), st.booleans())
def test_exact_room_claims_on_two_gpu_models(case: tuple[Any, ...], solver: str, allow_product_change: bool) -> None:
    """Two GPU models: where no row links them (each pod kept to its model, no move budget; or no movable
    pod between two switches) the model is solved piece by piece (``models/room_pieces.py``: in about half
    the examples, --hypothesis-show-statistics), with capacity rows per component
    (``room_cuts.add_capacity_rows``); the claims are the brute force's."""
    plan = check_claims(case, solver, allow_product_change)
    if plan is not None and plan.report is not None:
        event(f"solved by pieces: {'independent pieces' in str(plan.report.solver_message)}")  # type: ignore[attr-defined]  # an extra field of exact room plans


def check_claims(case: tuple[Any, ...], solver: str, allow_product_change: bool = False) -> DefragPlan | None:
    """The exact room plan of ``case`` against the brute force (None: a shape refused)."""
    nodes, pods, shapes, max_moves = case
    c = snapshot(nodes, pods)
    if any(shape[0] > largest_group(nodes) for shape in shapes):
        return None  # a shape no switch holds is refused (tests/oracle/test_room_objective.py)
    now, best, fewest_moves, fewest_gpus = brute(nodes, pods, shapes, max_moves, allow_product_change)
    plan = exact_plan(c, requests=[text(shape) for shape in shapes], max_moves=max_moves, solver=solver, allow_product_change=allow_product_change)
    report = plan.report
    assert report is not None
    rows = report.room["shapes"]  # type: ignore[attr-defined]
    order = sorted(range(len(shapes)), key=lambda k: -shapes[k][0])  # the planner counts largest first
    best = tuple(best[k] for k in order)
    now = tuple(now[k] for k in order)
    after = tuple(row["after"] for row in rows)
    moves = plan.moves()
    assert now <= after <= best and [row["before"] for row in rows] == list(now)
    assert report.objective == after[0] and report.bound is not None and report.bound >= best[0]
    assert all(row["bound"] >= b for row, b in zip(rows, best))
    assert all(row["lexicographic_bound"] is None or row["lexicographic_bound"] >= b for row, b in zip(rows, best))
    if max_moves is not None:
        assert len(moves) <= max_moves
    assert report.status in ("optimal", "feasible")
    event(f"status {report.status}, moves {'some' if moves else 'none'}")  # --hypothesis-show-statistics
    if report.status == "optimal":
        gpus = sum(next(p["gpus"] for p in pods if p["name"] == m.pod) for m in moves)
        assert (after, len(moves), gpus) == (best, fewest_moves, fewest_gpus)
        assert report.lexicographic_optimal and report.gap == 0  # type: ignore[attr-defined]
    else:  # not proven: then the plan is not the brute force's best, or the solve was cut short
        assert not report.lexicographic_optimal  # type: ignore[attr-defined]
    return plan


# switch A: a (2 GPUs) and b (6) on two 8-GPU nodes; switch B: c (4) and d (4). Freeing switch A takes
# three moves (a, b and one of c, d to make room: a chain); the exact plan proves it.
SPLIT = snapshot(
    [{"name": f"n{k}", "gpus": 8, "cpus": 8, "memory_gib": 64, "asw": "A" if k < 2 else "B"} for k in range(4)],
    [{"name": name, "gpus": gpus, "cpus": 1, "node": node} for name, gpus, node in (("a", 2, "n0"), ("b", 6, "n1"), ("c", 4, "n2"), ("d", 4, "n3"))],
)


def test_exact_room_plan_is_proven_and_compare_puts_both_side_by_side() -> None:
    plan = exact_plan(SPLIT, requests=["16g16c"])
    assert plan.report is not None
    assert (plan.report.status, plan.report.objective, plan.report.bound, plan.report.moves, plan.report.method) == ("optimal", 1, 1, 3, "room-exact")
    assert plan.report.moves_bound == 3  # type: ignore[attr-defined]
    both = plan_defrag(SPLIT, DefragOptions(objective="room", method="compare", requests=["16g16c"], **SOLVE))  # type: ignore[arg-type]
    assert isinstance(both, DefragComparison)
    gap = both.gap
    assert "exact_counts" in gap
    assert (gap["heuristic_counts"], gap["exact_counts"], gap["bounds"], gap["exact_status"], gap["gap_first_shape"]) == ([1], [1], [1], "optimal", 0)
    assert both.heuristic.report is not None and both.heuristic.report.status == "heuristic"


def test_exact_room_without_room_to_make_is_optimal_with_no_moves() -> None:
    plan = exact_plan(SPLIT, requests=["16g16c"], max_moves=2)  # three moves are needed
    assert plan.report is not None
    assert (plan.report.status, plan.report.objective, plan.report.bound, plan.moves()) == ("optimal", 0, 0, [])
    assert "neither the heuristic nor the exact model" in plan.report.reason  # type: ignore[attr-defined]


def test_exact_room_plan_validates_on_the_command_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    snapshot_file, plan_file = tmp_path / "split.json", tmp_path / "plan.json"
    snapshot_file.write_text(json.dumps(SPLIT.model_dump(mode="json", by_alias=True, exclude_none=True)))
    flags = ["--objective", "room", "--requests", "16g16c", "--method", "exact", "--time-limit", "20", "--solver", "cpsat", "--solver-workers", "1"]
    made = runner.invoke(app, ["defrag", str(snapshot_file), *flags, "--out", str(plan_file)])
    assert made.exit_code == 0, made.output
    assert json.loads(plan_file.read_text())["report"]["status"] == "optimal"
    checked = runner.invoke(app, ["validate", str(snapshot_file), str(plan_file)])
    assert checked.exit_code == 0, checked.output


def test_exact_room_refuses_what_it_cannot_honour(tmp_path) -> None:  # type: ignore[no-untyped-def]
    snapshot_file = tmp_path / "split.json"
    snapshot_file.write_text(json.dumps(SPLIT.model_dump(mode="json", by_alias=True, exclude_none=True)))
    for flags, says in (
        (["--method", "exact", "--lexicographic", "weighted"], ["--lexicographic", "objective 'room' does not use it"]),
        (["--method", "compare", "--depth", "4"], ["--depth", "objective 'room' does not use it"]),
        (["--method", "hybrid"], ["--objective", "not 'hybrid'"]),
        (["--time-limit", "5"], ["--time-limit", "objective 'room' does not use it"]),
    ):
        result = runner.invoke(app, ["defrag", str(snapshot_file), "--objective", "room", *flags])
        assert result.exit_code == 2, result.output
        for part in says:
            assert part in result.output, result.output
        assert "Traceback" not in result.output


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(), st.sampled_from(["auto", "pod"]))
def test_room_model_keeps_every_end_state_with_its_counts(case: tuple[Any, ...], formulation: str) -> None:
    """The room model's added rows (the leave cuts of ``models/room_cuts.py`` among them) cut off no end
    state: for every end state the brute force enumerates, the model's values for it (``hint``) break no
    row and no variable bound, with counts at least the true ones (the model is a relaxation)."""
    check_end_states(case, formulation)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_multiples(), st.sampled_from(["auto", "pod"]))
def test_room_model_with_joint_levels_keeps_every_end_state(case: tuple[Any, ...], formulation: str) -> None:
    """The same for two shapes that share their slot rows: the joint levels (built unless no switch holds
    the smaller shape: about 93% of examples, --hypothesis-show-statistics) cut off none."""
    check_end_states(case, formulation)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_products(), st.sampled_from(["auto", "pod"]), st.booleans())
def test_room_model_on_two_gpu_models_keeps_every_end_state(case: tuple[Any, ...], formulation: str, allow_product_change: bool) -> None:
    """The same on two GPU models, under the pool policy the planner applies: the capacity rows per
    component (each model, when pods keep theirs) cut off no end state."""
    check_end_states(case, formulation, allow_product_change)


def check_end_states(case: tuple[Any, ...], formulation: str, allow_product_change: bool = False) -> bool:
    """``test_room_model_keeps_every_end_state_with_its_counts`` on ``case``: whether joint levels were built."""
    from planner.heuristics.switch_room import RoomShape
    from planner.limits import MoveBudget
    from planner.metrics import Shape
    from planner.models.room_exact import build_room_model
    from planner.pools import PoolPolicy, apply_pools
    from planner.state import ClusterState

    nodes, pods, shapes, _ = case
    c, _ = apply_pools(snapshot(nodes, pods), PoolPolicy(allow_product_change=allow_product_change))
    state = ClusterState(c)
    order = sorted(range(len(shapes)), key=lambda k: -shapes[k][0])
    rooms = [RoomShape(Shape(shapes[k][0], shapes[k][1], 0.0)) for k in order]
    model = build_room_model(state, rooms, MoveBudget.of(state), formulation=formulation)
    milp = model.base.milp
    cuts = sum(name.startswith("leave[") for name in milp.row_names)
    event(f"leave cuts: {'some' if cuts else 'none'}")  # --hypothesis-show-statistics: most examples have some
    event(f"joint levels: {'some' if model.levels else 'none'}")
    event(f"capacity rows: {'some' if any(name.startswith('capacity[') for name in milp.row_names) else 'none'}")
    movable = [pod for pod in pods if not pod.get("locked")]
    checked = 0
    for where in end_states(nodes, pods, allow_product_change):
        counts = counts_of(nodes, where, pods, shapes)
        if counts is None:
            continue
        target = {state.pod_names.index(pod["name"]): state.node_names.index(where[pod["name"]]) for pod in movable}
        values = model.hint(target)
        assert milp.violated_rows(values) == [], (where, milp.violated_rows(values))
        assert all(lo <= v <= hi for v, lo, hi in zip(values, milp.lower, milp.upper)), where
        assert all(model.count(values, i) >= counts[k] for i, k in enumerate(order)), (where, counts)
        checked += 1
    assert checked >= 1  # the snapshot itself
    return bool(model.levels)
