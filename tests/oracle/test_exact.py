"""Exact defragmentation: the models against brute force, the two back-ends against each other,
executable plans from final states, and the engine's exact/compare/hybrid/auto methods."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cluster import Cluster
from planner.engine import DefragOptions, PlanOptionError, plan_defrag
from planner.limits import MoveBudget, MoveLimits
from planner.models.backends import solve
from planner.models.defrag import build_defrag_model
from planner.models.defrag_exact import ExactOptions, solve_exact
from planner.plans import DefragComparison
from planner.state import ClusterState
from planner.validate.defrag import validate
from tests.support.clusters import make_cluster, node, pod
from tests.support.defrag_oracle import final_states
from tests.support.strategies import clusters


def brute_force(cluster: Cluster, max_moves: int | None = None) -> tuple[int, int, float]:
    """Best (empty nodes, -moves, -GPUs moved) over every legal final state, by enumeration."""
    best = None
    for where, moved in final_states(cluster, max_moves, pools=False):  # the model alone: no engine pools
        empties = sum(1 for n in range(len(cluster.nodes)) if n not in where.values())
        score = (empties, -len(moved), -sum(cluster.pods[p].gpus for p, _, _ in moved))
        best = score if best is None or score > best else best
    return best


def solved_score(cluster: Cluster, solver: str, formulation: str, max_moves: int | None = None) -> tuple[int, int, float]:
    """The model's proven optimum (its final state, as brute_force scores it), checked against its bound."""
    state = ClusterState(cluster)
    model = build_defrag_model(state, MoveBudget.of(state, MoveLimits(max_moves)), formulation=formulation)
    result = solve(model.milp, solver, 20, 2)
    assert result.status == "optimal", result
    target = model.target(result.values)
    moved = [p for p, n in target.items() if n != state.pod_node[p]]
    busy = {n for n in target.values()} | {int(state.pod_node[p]) for p in range(len(cluster.pods)) if state.pod_locked[p] and state.pod_node[p] >= 0}
    empties = len(cluster.nodes) - len(busy)
    assert model.empties(result.values) == empties
    assert model.empties_bound(result.bound) == empties
    return empties, -len(moved), -sum(cluster.pods[p].gpus for p in moved)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(clusters(max_nodes=4, max_pods=6, max_jobs=2), st.sampled_from(["cpsat", "highs"]), st.sampled_from(["pod", "class"]), st.sampled_from([None, 1, 2]))
def test_exact_optimum_equals_brute_force(cluster: Cluster, solver: str, formulation: str, budget: int | None) -> None:
    assert solved_score(cluster, solver, formulation, budget) == brute_force(cluster, budget)


@pytest.fixture(scope="module")
def small_asi() -> list[Cluster]:
    from planner.instances.asi import generate_asi

    return [generate_asi(nodes=25, seed=s, allocation=a, mix=m) for s, a, m in ((0, 0.8, "small"), (1, 0.85, "asi"), (2, 0.75, "asi"), (3, 0.7, "small"))]


def test_cpsat_and_highs_and_both_formulations_agree(small_asi: list[Cluster]) -> None:
    for cluster in small_asi:
        scores = {(solver, form): solved_score(cluster, solver, form) for solver in ("cpsat", "highs") for form in ("pod", "class")}
        assert len({score[0] for score in scores.values()}) == 1, scores  # the same empty nodes everywhere
        assert len({score[:2] for score in scores.values()}) == 1, scores  # and the same fewest moves


def test_exact_is_at_least_ipc_and_its_bound_at_least_its_objective(small_asi: list[Cluster]) -> None:
    for cluster in small_asi:
        comparison = plan_defrag(cluster, DefragOptions(method="compare", workers=1, time_limit_s=20))
        assert isinstance(comparison, DefragComparison)
        h, e = comparison.heuristic, comparison.exact
        assert validate(cluster, h) == [] and validate(cluster, e) == []
        assert e.report.objective >= h.report.objective
        assert e.report.bound >= e.report.objective
        assert comparison.gap["gap_empty_nodes"] == e.report.objective - h.report.objective


def swap_cluster(with_room: bool) -> Cluster:
    """Emptying D needs x (6 GPUs) and y (2) to swap between A (full) and B (4 free); D is full too."""
    nodes = [node("A"), node("B"), node("D", gpus=2)] + ([node("C")] if with_room else [])
    pods = [
        pod("x", "A", gpus=6),
        pod("la", "A", gpus=2, locked=True),
        pod("y", "B", gpus=2),
        pod("lb", "B", gpus=2, locked=True, anti_affinity=["d"]),
        pod("d", "D", gpus=2, anti_affinity=["d"]),
    ]
    if with_room:
        pods.append(pod("lc", "C", gpus=6, locked=True, anti_affinity=["d"]))
    return make_cluster(nodes, pods)


@pytest.mark.parametrize("solver", ["cpsat", "highs"])
def test_exact_vacates_what_ipc_cannot(solver: str) -> None:
    cluster = swap_cluster(with_room=True)
    plan = plan_defrag(cluster, DefragOptions(method="exact", solver=solver, workers=1, time_limit_s=10))
    assert validate(cluster, plan) == []
    assert plan.vacated_nodes == ["D"] and plan.report.status == "optimal" and len(plan.moves()) == 3
    assert plan_defrag(cluster, DefragOptions(workers=1)).vacated_nodes == []  # IPC cannot


def test_a_swap_target_is_routed_through_a_node_with_room() -> None:
    from planner.engine import _assemble
    from planner.waves import target_to_waves

    cluster = swap_cluster(with_room=True)
    state = ClusterState(cluster)
    index = state.pod_index
    swap = {index["x"]: state.node_index["B"], index["y"]: state.node_index["A"], index["d"]: state.node_index["A"]}
    before = ClusterState(cluster)
    executed = target_to_waves(state, swap)
    assert executed.dropped == [] and executed.routed == 1  # y waits on C while x and y trade places
    plan = _assemble(cluster, state, executed.waves, {})
    assert validate(cluster, plan.model_copy(update={"metrics": None})) == []
    assert [state.node_names[n] for n in state.pod_node[[index["x"], index["y"], index["d"]]]] == ["B", "A", "A"]
    assert before.pods_per_node.sum() == state.pods_per_node.sum()


def test_unreachable_swap_is_forbidden_and_solved_again() -> None:
    cluster = swap_cluster(with_room=False)
    outcome = solve_exact(ClusterState(cluster), ExactOptions(solver="highs", time_limit_s=10))
    assert outcome.history[0]["model_empties"] == 1  # the final state empties D, but cannot be reached
    assert outcome.history[0]["executed_empties"] == 0 and outcome.resolves >= 1
    assert outcome.proof.empties_bound() == 1  # the first model's bound stands: nothing proves 0 optimal
    plan = plan_defrag(cluster, DefragOptions(method="exact", workers=1, time_limit_s=10))
    assert validate(cluster, plan) == [] and plan.vacated_nodes == []
    assert plan.report.status == "feasible" and plan.report.bound == plan.report.objective + 1


def test_budgets_are_honoured_by_the_exact_model(small_asi: list[Cluster]) -> None:
    cluster = small_asi[2]
    free = plan_defrag(cluster, DefragOptions(method="exact", workers=1, time_limit_s=20))
    capped = plan_defrag(cluster, DefragOptions(method="exact", workers=1, time_limit_s=20, max_moves=3))
    per_node = plan_defrag(cluster, DefragOptions(method="exact", workers=1, time_limit_s=20, max_moves_per_node=1))
    assert len(capped.moves()) <= 3 and capped.report.objective <= free.report.objective
    touches: dict[str, int] = {}
    for m in per_node.moves():
        for n in (m.from_, m.to):
            touches[n] = touches.get(n, 0) + 1
    assert max(touches.values(), default=0) <= 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(max_nodes=6, max_pods=12), st.sampled_from(["exact", "hybrid", "auto"]), st.sampled_from(["cpsat", "highs"]))
def test_solver_methods_on_random_snapshots_validate_and_beat_ipc(cluster: Cluster, method: str, solver: str) -> None:
    ipc = plan_defrag(cluster, DefragOptions(workers=1))
    plan = plan_defrag(cluster, DefragOptions(method=method, solver=solver, workers=1, time_limit_s=5))
    assert validate(cluster, plan) == []
    assert plan.report.objective >= ipc.report.objective
    if plan.report.bound is not None:
        assert plan.report.bound >= plan.report.objective


def test_hybrid_improves_ipc_and_says_so() -> None:
    from planner.instances.asi import generate_asi

    cluster = generate_asi(nodes=100, seed=2, allocation=0.85)
    ipc = plan_defrag(cluster, DefragOptions(workers=1))
    hybrid = plan_defrag(cluster, DefragOptions(method="hybrid", workers=1, time_limit_s=20))
    assert hybrid.report.objective > ipc.report.objective
    assert hybrid.report.model_extra["ipc_objective"] == ipc.report.objective
    extra = hybrid.report.model_extra
    assert extra["start_objective"] == max(extra["ipc_objective"], extra["repack_ipc_objective"])
    assert extra["start_objective"] == (extra["ipc_objective"] if extra["start"] == "ipc" else extra["repack_ipc_objective"])
    assert extra["lns_gained_empty_nodes"] == hybrid.report.objective - extra["start_objective"]


def test_hybrid_starts_from_a_repack_where_ipc_stalls() -> None:
    """At 80% allocation IPC's chains stop one node short on this snapshot (26); repacking first and
    letting IPC finish reaches the bound (27, so optimal); the hybrid starts from that, deterministically."""
    from planner.instances.asi import generate_asi

    cluster = generate_asi(nodes=150, seed=1, allocation=0.8)
    ipc = plan_defrag(cluster, DefragOptions(workers=1))
    assert ipc.report.objective == 26 and ipc.report.bound == 27
    starts = []
    for _ in range(2):
        hybrid = plan_defrag(cluster, DefragOptions(method="hybrid", workers=1, time_limit_s=2, solver_workers=1))
        extra = hybrid.report.model_extra
        assert validate(cluster, hybrid) == []
        assert extra["ipc_objective"] == 26 and extra["repack_ipc_objective"] == 27
        assert extra["start"] == "repack+ipc" and extra["start_objective"] == 27
        assert hybrid.report.objective == hybrid.report.bound == 27
        starts.append((extra["start"], extra["start_objective"]))
    assert starts[0] == starts[1]


def test_auto_says_which_method_it_chose_and_why(fig15: Cluster) -> None:
    plan = plan_defrag(fig15, DefragOptions(method="auto", workers=1, time_limit_s=5))
    assert plan.report.method == "exact" and plan.report.model_extra["auto_choice"].startswith("exact: 4 nodes")


def test_bad_solver_options_are_refused(fig15: Cluster) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="time_limit_s"):
        DefragOptions(method="exact", time_limit_s=0)
    with pytest.raises(ValidationError, match="solver"):
        DefragOptions(method="exact", solver="gurobi")
    big = make_cluster([node(f"n{i}") for i in range(1001)], [pod("p", "n0")])
    with pytest.raises(PlanOptionError, match="use --method hybrid"):
        plan_defrag(big, DefragOptions(method="exact", workers=1))


def test_timeout_without_a_solution_is_reported_not_hidden() -> None:
    from planner.instances.asi import generate_asi

    state = ClusterState(generate_asi(nodes=200, seed=0, allocation=0.8))
    outcome = solve_exact(state, ExactOptions(solver="cpsat", time_limit_s=0.001, solver_workers=1))
    assert outcome.waves is None and outcome.solver_status in ("timeout", "feasible")


def test_a_solver_without_a_solution_falls_back_to_ipc_marked_as_such() -> None:
    from planner.instances.asi import generate_asi

    cluster = generate_asi(nodes=300, seed=5, allocation=0.8)
    plan = plan_defrag(cluster, DefragOptions(method="exact", solver="cpsat", time_limit_s=0.01, workers=1, solver_workers=1))
    extra = plan.report.model_extra
    assert plan.report.status == "timeout" and extra["solver_status"] == "timeout"
    assert extra["fallback"].startswith("ipc: the solver returned no solution")
    assert plan.report.objective == extra["ipc_objective"] and validate(cluster, plan) == []
