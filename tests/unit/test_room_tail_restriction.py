"""The exact room model's tail phases when a count phase ends unproven (``models/room_exact.py``,
``start_rooms``): no plan can then be proven optimal, so the moves and GPUs-moved phases keep the start's
rooms in their groups, report no moves bound, and their solution holds every count and every room of the
start. Run on a 200-node ASI-like snapshot whose count phases get half a second each (too little to
prove the 256-GPU count), and on a 100-node one with time enough, where the tail is not restricted."""

from __future__ import annotations

import time

from planner.heuristics.switch_room import RoomShape, make_switch_room
from planner.instances.asi import generate_asi
from planner.limits import MoveBudget, MoveLimits
from planner.metrics import parse_shape
from planner.models.room_exact import RoomSolveOptions, build_room_model, solve_phases
from planner.models.room_tail import start_rooms
from planner.state import ClusterState

SHAPES = ("256g3072c", "128g1536c", "64g768c")


def model_and_hint(nodes: int, seed: int, allocation: float):  # type: ignore[no-untyped-def]
    state = ClusterState(generate_asi(nodes, seed, allocation=allocation))
    rooms = [RoomShape(parse_shape(text)) for text in SHAPES]
    budget = MoveBudget.of(state, MoveLimits())
    scratch = state.clone()
    make_switch_room(scratch, rooms, budget.copy(), seed)
    movable = [p for p in range(len(state.pod_names)) if state.pod_node[p] >= 0 and not state.pod_locked[p]]
    model = build_room_model(state, rooms, budget)
    return model, model.hint({p: int(scratch.pod_node[p]) for p in movable})


def test_start_rooms_are_rows_every_solution_keeping_the_start_rooms_meets() -> None:
    model, hint = model_and_hint(200, 0, 0.6)
    rows = start_rooms(model, hint)
    assert rows and all(hint[terms[0][0]] == lower and upper is None for terms, lower, upper, _ in rows)
    assert {terms[0][0] for terms, _, _, _ in rows} == {r for r, _, _ in model.groups if hint[r] > 0}
    restricted = model.base.milp.with_objective([], 0, rows)
    assert restricted.violated_rows(hint) == []
    fewer = list(hint)
    r = rows[0][0][0][0]
    fewer[r] -= 1  # one room of the start given up: the restriction cuts it off
    assert restricted.violated_rows(fewer)


def test_an_unproven_count_restricts_the_tail_and_drops_its_bound() -> None:
    model, hint = model_and_hint(200, 0, 0.6)
    options = RoomSolveOptions(solver="highs", solver_workers=1, time_limit_s=2.0)
    result, proof, records = solve_phases(model, options, time.perf_counter() + 2.0, hint)
    counts = [record for record in records if record["phase"].startswith("count")]
    tail = records[len(counts)]
    assert any(record["status"] != "optimal" for record in counts), records  # half a second per phase proves no 256-GPU count here
    assert tail["phase"] == "moves (the start's rooms)"
    assert proof.tail_lower is None
    assert result is not None and result.values is not None
    assert all(model.count(result.values, k) >= reached for k, reached in enumerate(proof.reached) if reached is not None)


def test_proven_counts_leave_the_tail_unrestricted() -> None:
    model, hint = model_and_hint(100, 0, 0.6)
    options = RoomSolveOptions(solver="highs", solver_workers=1, time_limit_s=20.0)
    _, proof, records = solve_phases(model, options, time.perf_counter() + 20.0, hint)
    counts = [record for record in records if record["phase"].startswith("count")]
    assert all(record["status"] == "optimal" for record in counts), records
    assert records[len(counts)]["phase"] == "moves"
    assert proof.tail_lower is not None


def test_a_moves_phase_left_open_by_the_whole_model_is_closed_over_level_vectors(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The whole model gets half a second (``PLAIN_SHARE`` near 0: too little to prove the moves of this
    snapshot), the level vectors the rest: the moves are proven and equal the whole model's own optimum
    when it has the time (this model has no move budget and reaches counts 2 / 5 / 10; with 90 s and its
    default share the whole model proves 57 moves in 17 s, the vectors in 8 s)."""
    from planner.models import room_tail

    model, hint = model_and_hint(200, 0, 0.6)
    # a generous limit (each phase ends when proven: about 35 s alone): under a loaded CI worker 30 s left the vectors short
    options = RoomSolveOptions(solver="highs", solver_workers=1, time_limit_s=120.0)
    monkeypatch.setattr(room_tail, "PLAIN_SHARE", 1e-3)
    _, proof, records = solve_phases(model, options, time.perf_counter() + 120.0, hint)
    counts = [record for record in records if record["phase"].startswith("count")]
    assert all(record["status"] == "optimal" for record in counts), records
    moves = records[len(counts)]
    assert moves["phase"] == "moves" and moves["status"] == "optimal", records
    assert moves["level_vectors"] >= 1  # the whole model did not prove it in half a second: the vectors did
    assert [c["objective"] for c in counts] == [2, 5, 10]
    assert round(moves["objective"]) == -57 and round(moves["bound"]) == -57
    assert proof.tail_lower is not None and proof.tail_lower >= 57 * model.base.w2
