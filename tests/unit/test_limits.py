"""The user's limits (max_moves, max_moves_per_node, same_asw) hold for every method, and the hybrid's
neighbourhoods get every option the exact model gets.

Each limit test first shows that the method, left free, breaks the limit on the instance (so the
test can fail), then that the limited plan validates with the limits checked.
"""

from __future__ import annotations

import pytest

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.limits import MoveBudget, MoveLimits
from planner.state import ClusterState
from planner.validate.defrag import limit_violations, validate
from planner.waves import target_to_waves
from tests.support.clusters import make_cluster, node, pod

LIMITS = {
    "same_asw": MoveLimits(same_asw=True),
    "max_moves_per_node": MoveLimits(max_moves_per_node=1),
    "max_moves": MoveLimits(max_moves=10),
}
METHODS = {
    "heuristic": {},
    "random": {"threshold": 1.0, "seed": 3},
    "descheduler": {"threshold": 1.0},
    "repack": {},
    "exact": {"time_limit_s": 10},
    "hybrid": {"time_limit_s": 4},
    "auto": {"time_limit_s": 10},
}


@pytest.fixture(scope="module")
def two_switches() -> Cluster:
    cluster = generate_asi(nodes=100, seed=11, allocation=0.8)
    assert len({n.asw for n in cluster.nodes}) == 2
    return cluster


def _options(method: str, limits: MoveLimits | None = None) -> DefragOptions:
    given = {} if limits is None else {k: v for k, v in limits.__dict__.items() if v not in (None, False, ())}
    # the ASI generator gives each switch its own GPU products: only pods changing product cross a switch,
    # so the limits are tested with product changes allowed (the default pools would already keep them in)
    return DefragOptions(method=method, workers=1, allow_product_change=True, **METHODS[method], **given)


@pytest.mark.parametrize("limit", list(LIMITS))
@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_honours_every_limit(two_switches: Cluster, method: str, limit: str) -> None:
    if method == "repack" and limit != "same_asw":
        pytest.skip("repack has no migration budget: refused (test_repack_refuses_budgets)")
    free = plan_defrag(two_switches, _options(method))
    assert limit_violations(two_switches, free, LIMITS[limit]), f"{method} without {limit} does not cross it here"
    limited = plan_defrag(two_switches, _options(method, LIMITS[limit]))
    assert validate(two_switches, limited, LIMITS[limit]) == []
    assert limited.report.objective >= free.report.objective - 20  # it still plans, it does not give up


def test_repack_refuses_budgets() -> None:
    from pydantic import ValidationError

    for name in ("max_moves", "max_moves_per_node"):
        with pytest.raises(ValidationError, match=f"{name}\n.*repack repacks every movable pod from scratch"):
            DefragOptions(method="repack", **{name: 3})


def _two_switch_pair() -> Cluster:
    """x (asw a) fits beside y (asw b): one move empties a node, but only across switches."""
    return make_cluster([node("n0", asw="a"), node("n1", asw="b")], [pod("x", "n0", gpus=1), pod("y", "n1", gpus=2)])


@pytest.mark.parametrize("method", ["heuristic", "exact", "hybrid", "auto", "random", "descheduler", "repack"])
def test_same_asw_keeps_the_pair_apart(method: str) -> None:
    cluster = _two_switch_pair()
    extra = {"threshold": 1.0} if method in ("random", "descheduler") else {}
    assert plan_defrag(cluster, DefragOptions(method=method, workers=1, **extra)).report.objective == 1
    plan = plan_defrag(cluster, DefragOptions(method=method, workers=1, same_asw=True, **extra))
    assert plan.moves() == [] and plan.report.objective == 0


@pytest.mark.parametrize("method", ["heuristic", "exact", "hybrid", "auto"])
def test_a_zero_per_node_budget_moves_nothing(method: str) -> None:
    plan = plan_defrag(_two_switch_pair(), DefragOptions(method=method, workers=1, max_moves_per_node=0))
    assert plan.moves() == []


def test_the_exact_plan_under_same_asw_is_proven_only_when_true() -> None:
    """The ASI-paper reproduction: the final state needs a detour across switches, which same_asw forbids."""
    cluster = make_cluster(
        [
            {"name": "n0", "gpus": 2, "cpus": 4, "memory_gib": 64, "asw": "b", "gpu_model": "B"},
            {"name": "n1", "gpus": 2, "cpus": 8, "memory_gib": 64, "asw": "b", "gpu_model": "A"},
            {"name": "n2", "gpus": 4, "cpus": 8, "memory_gib": 16, "asw": "a", "gpu_model": "B"},
            {"name": "n3", "gpus": 8, "cpus": 16, "memory_gib": 16, "asw": "b", "gpu_model": "A"},
        ],
        [
            {"name": "p0", "gpus": 2, "cpus": 2, "memory_gib": 16, "job": "j0", "node": "n1"},
            {"name": "p1", "gpus": 1, "cpus": 2, "memory_gib": 4, "gpu_models": ["A"], "node": "n3"},
            {"name": "p2", "gpus": 1, "cpus": 2, "memory_gib": 16, "node": "n0"},
        ],
        [{"name": "j0", "topology": {"level": "asw", "mode": "required"}}],
    )
    limits = MoveLimits(same_asw=True)
    # the chain moves pods across GPU models A and B: the default pools would forbid it outright
    plan = plan_defrag(cluster, DefragOptions(method="exact", workers=1, same_asw=True, allow_product_change=True))
    assert validate(cluster, plan, limits) == []
    assert plan.report.objective == 1 and plan.report.status == "feasible" and plan.report.bound == 2
    capped = plan_defrag(cluster, DefragOptions(method="exact", workers=1, max_moves=3, allow_product_change=True))
    assert len(capped.moves()) <= 3 and capped.report.status != "optimal"


def test_router_detours_stay_within_the_budget_and_the_switch() -> None:
    """A swap of x and y needs a detour; with no move to spare it is dropped, not taken."""
    cluster = make_cluster(
        [node("A", asw="s"), node("B", asw="s"), node("C", asw="t")],
        [pod("x", "A", gpus=6), pod("la", "A", gpus=2, locked=True), pod("y", "B", gpus=6), pod("lb", "B", gpus=2, locked=True)],
    )
    swap = {0: 1, 2: 0}  # x -> B, y -> A
    free = target_to_waves(ClusterState(cluster), swap)
    assert free.dropped == [] and free.routed == 1  # through C
    for limits in (MoveLimits(max_moves=2), MoveLimits(same_asw=True), MoveLimits(max_moves_per_node=1)):
        state = ClusterState(cluster)
        executed = target_to_waves(state, swap, MoveBudget.of(state, limits))
        assert executed.routed == 0 and executed.dropped


def test_hybrid_neighbourhoods_use_the_requested_solver_formulation_and_objective(two_switches: Cluster) -> None:
    for solver, formulation, lexicographic in (("cpsat", "pod", "weighted"), ("highs", "class", "two-phase")):
        plan = plan_defrag(
            two_switches,
            DefragOptions(method="hybrid", workers=1, time_limit_s=3, solver=solver, formulation=formulation, solver_workers=2, lexicographic=lexicographic),
        )
        used = plan.report.model_extra["lns_solved_with"]
        assert used and {u.split("/")[0] for u in used} == {solver}
        assert {u.split("/")[2] for u in used} == {lexicographic}
        if formulation == "pod":
            assert {u.split("/")[1] for u in used} == {"pod"}
        else:
            assert "class" in {u.split("/")[1] for u in used}  # re-solves with forbidden pairs are pod-level
