"""The exact room model solved piece by piece (``models/room_pieces.py``) and the room bound per capacity
component (``heuristics/room_capacity.py``), on hand-made clusters of two GPU models whose answers are
worked out here. The claims against a brute force over every end state are in
``tests/oracle/test_room_exact.py`` (``test_exact_room_claims_on_two_gpu_models``)."""

from __future__ import annotations

from typing import Any

from planner.engine import DefragOptions, plan_defrag
from planner.heuristics.room_capacity import capacity_components
from planner.heuristics.switch_room import RoomShape, domain_groups, room_bound
from planner.limits import MoveBudget, MoveLimits
from planner.metrics import parse_shape
from planner.models.room_exact import RoomProof, build_room_model
from planner.models.room_pieces import PieceProof, combine, independent_pieces
from planner.models.room_tail import tail_objective
from planner.plans import DefragPlan
from planner.pools import PoolPolicy, apply_pools
from planner.state import ClusterState
from planner.validate.defrag import validate
from tests.support.room_oracle import snapshot

SOLVE: dict[str, Any] = {"time_limit_s": 20.0, "solver_workers": 1, "solver": "highs"}


def two_models(cpu_pod: bool = False) -> Any:
    """Two GPU models, two switches each of two 8-GPU nodes (32 CPUs). Model A: switch a1 holds a 4- and a
    2-GPU pod, a2 a 4-GPU pod (10 and 12 GPUs free, 22 in all). Model B: b1 holds two 2-GPU pods, b2 a
    1-GPU pod (12 and 15 free, 27 in all). No 16-GPU request fits now; 8-GPU requests: 1 + 1 + 1 + 1.
    Moving a2's pod into a1 frees a2 (one move, 4 GPUs), and b2's into b1 frees b2 (one move, 1 GPU):
    2 requests of 16 GPUs, then 0 + 2 + 1 + 2 = 5 of 8, the most (A's 22 free GPUs hold one 16-GPU request
    and two of 8, B's 27 one and three), with the fewest moves (2) and GPUs moved (5)."""
    nodes = [
        {"name": f"{s}{i}", "gpus": 8, "cpus": 32, "memory_gib": 256, "asw": s, "gpu_model": s[0].upper()} for s in ("a1", "a2", "b1", "b2") for i in range(2)
    ]
    held = (("pa", 4, "a10"), ("pb", 2, "a11"), ("pc", 4, "a20"), ("qa", 2, "b10"), ("qb", 2, "b11"), ("qc", 1, "b20"))
    pods = [{"name": name, "gpus": gpus, "cpus": 1, "node": node} for name, gpus, node in held]
    if cpu_pod:
        pods.append({"name": "cpu", "gpus": 0, "cpus": 1, "node": "a10"})
    return snapshot(nodes, pods)


def pooled_state(c: Any, allow_product_change: bool = False) -> ClusterState:
    return ClusterState(apply_pools(c, PoolPolicy(allow_product_change=allow_product_change))[0])


def test_room_bound_counts_each_gpu_models_free_gpus_apart() -> None:
    """Per domain every switch could be freed (its pods are movable): 4 requests of 16 GPUs. The cluster's
    49 free GPUs hold 3. Per model, with pods kept to theirs, A's 22 hold 1 and B's 27 hold 1: 2, the
    optimum. Allowed to change model, one component: 3 (all 13 GPUs of pods fit in one switch)."""
    room = RoomShape(parse_shape("16g32c"))
    kept, free = pooled_state(two_models()), pooled_state(two_models(), allow_product_change=True)
    components = capacity_components(kept, domain_groups(kept, room.level))
    assert sorted(components.unused_gpus.tolist()) == [22.0, 27.0]
    assert len(set(components.of_group.tolist())) == 2  # A's two switches, B's two
    assert len(set(capacity_components(free, domain_groups(free, room.level)).of_group.tolist())) == 1
    assert room_bound(kept, room) == 2 and room_bound(free, room) == 3
    small = RoomShape(parse_shape("8g16c"))  # per domain 8; per model 2 + 3; one component 6
    assert room_bound(kept, small) == 5 and room_bound(free, small) == 6


def test_independent_pieces_follow_the_gpu_models_without_a_move_budget() -> None:
    state = pooled_state(two_models())
    rooms = [RoomShape(parse_shape("16g32c"))]
    model = build_room_model(state, rooms, MoveBudget.of(state, MoveLimits()))
    pieces = independent_pieces(model.base.milp, model.counts)
    assert len(pieces) == 2 and sorted(len(p) for p in pieces) == [len(p) for p in pieces]  # smallest first
    assert [sum(r in piece for r in model.counts[0]) for piece in pieces] == [2, 2]  # each model's two switches
    assert sorted(v for piece in pieces for v in piece) == list(range(model.base.milp.num_vars))
    for terms in model.base.milp.row_terms:  # no row holds two pieces
        assert len({next(i for i, piece in enumerate(pieces) if v in piece) for v, _ in terms}) == 1


def test_a_move_budget_or_a_pod_free_to_change_model_joins_the_pieces() -> None:
    rooms = [RoomShape(parse_shape("16g32c"))]
    state = pooled_state(two_models())
    budgeted = build_room_model(state, rooms, MoveBudget.of(state, MoveLimits(max_moves=5)))
    assert independent_pieces(budgeted.base.milp, budgeted.counts) == []
    free = pooled_state(two_models(), allow_product_change=True)
    model = build_room_model(free, rooms, MoveBudget.of(free, MoveLimits()))
    assert independent_pieces(model.base.milp, model.counts) == []
    with_cpu = pooled_state(two_models(cpu_pod=True))  # a CPU-only pod may go to either model's nodes
    model = build_room_model(with_cpu, rooms, MoveBudget.of(with_cpu, MoveLimits()))
    assert independent_pieces(model.base.milp, model.counts) == []


def exact(c: Any, **options: Any) -> DefragPlan:
    chosen = DefragOptions(objective="room", method="exact", requests=["16g32c", "8g16c"], **SOLVE, **options)
    plan = plan_defrag(c, chosen)
    assert isinstance(plan, DefragPlan) and plan.report is not None
    assert validate(c, plan, chosen.limits(len(c.nodes))) == []
    return plan


def test_the_plan_by_pieces_is_the_whole_models_optimum() -> None:
    """Solved by pieces (no budget) and whole (a budget of 50 moves, which binds nothing): both proven at
    the optimum worked out in ``two_models``: 2 and 5 requests, 2 moves, 5 GPUs moved."""
    c = two_models()
    by_pieces, whole = exact(c), exact(c, max_moves=50)
    gpus = {pod.name: pod.gpus for pod in c.pods}
    for plan in (by_pieces, whole):
        assert plan.report is not None and plan.report.status == "optimal"
        assert [shape["after"] for shape in plan.report.room["shapes"]] == [2, 5]  # type: ignore[attr-defined]  # the room report
        assert sorted((m.pod, m.to[:2]) for m in plan.moves()) == [("pc", "a1"), ("qc", "b1")]
        assert sum(gpus[m.pod] for m in plan.moves()) == 5
    assert "2 independent pieces" in str(by_pieces.report.solver_message)  # type: ignore[union-attr]  # an extra field
    assert "independent pieces" not in str(whole.report.solver_message)  # type: ignore[union-attr]
    rows = [[(shape["after"], shape["bound"], shape["lexicographic_bound"]) for shape in plan.report.room["shapes"]] for plan in (by_pieces, whole)]  # type: ignore[union-attr]
    assert rows[0] == rows[1]
    assert by_pieces.report.moves_bound == whole.report.moves_bound == len(whole.moves())  # type: ignore[union-attr]


def proof(shapes: int) -> RoomProof:
    return RoomProof([None] * shapes, [None] * shapes, None, 1000, 8, [], True)


def test_combined_bounds_sum_only_while_every_piece_proved_the_earlier_counts() -> None:
    c = two_models()
    state = pooled_state(c)
    model = build_room_model(state, [RoomShape(parse_shape("16g32c"))], MoveBudget.of(state, MoveLimits()))
    tail = tail_objective(model.base)
    offset = tail.objective_offset
    both = combine(proof(2), [PieceProof([1, 3], [1, 2], 10.0), PieceProof([2, 4], [2, 4], 20.0)], tail)
    assert (both.bounds, both.reached, both.tail_lower) == ([3, 7], [3, 6], 30.0 - offset)
    short = combine(proof(2), [PieceProof([2, 3], [1, 2], 10.0), PieceProof([2, 4], [2, 4], None)], tail)
    assert short.bounds == [4, None]  # piece 1 left its first count unproven: the second's bound is not the sum's
    assert short.reached == [3, 6] and short.tail_lower is None
    unknown = combine(proof(2), [PieceProof([None, 3], [1, 2], 1.0), PieceProof([2, 4], [2, 4], 2.0)], tail)
    assert unknown.bounds == [None, None]
