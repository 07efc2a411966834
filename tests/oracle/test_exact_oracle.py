"""The planner's proofs checked against an independent oracle (``tests/oracle.py``) on tiny snapshots.

``status: optimal``, ``bound``, ``gap``, ``lexicographic_optimal``, ``moves_bound`` and the budgets
(``max_moves``, ``max_moves_per_node``, ``same_asw``) are claims. The oracle enumerates every
sequence of single legal moves, so on snapshots of at most 4 nodes and 5 movable pods it knows the
true lexicographic optimum (most empty nodes, then fewest moves, then fewest GPUs moved) under the
same budgets, and every plan is replayed wave by wave by the oracle's own make-before-break replay.

First the oracle itself is pinned on hand-checked snapshots; then hand reproductions of claims the
planner has got wrong; then property tests over random tiny snapshots whose requests (1/3 GPU,
0.3 GiB, ...) do not convert exactly to the integer units a solver model may use: the oracle
against brute force over one-wave plans, and the exact, hybrid, auto and compare methods against
the oracle.
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings, target
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from pydantic import ValidationError

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod, Topology
from planner.engine import DefragOptions, PlanOptionError, plan_defrag
from planner.plans import DefragComparison, DefragPlan
from planner.snapshot import consistency_problems, dump_cluster, parse_cluster
from tests.support import defrag_oracle as oracle
from tests.support.clusters import make_cluster, node, pod
from tests.support.defrag_oracle import Reachable, empty_nodes, gpus_moved, replay, touches

best_plan = partial(oracle.best_plan, pools=False)
"""The hand-made snapshots below cross GPU models on purpose: their oracle has no pools."""
explore = partial(oracle.explore, pools=False)

THIRD = 0.3333333333333333
TWO_THIRDS = 0.6666666666666666

# ----------------------------------------------------------------------------------------------
# Hand snapshots
# ----------------------------------------------------------------------------------------------

SNAPSHOT_CHAIN = json.dumps(
    {
        "version": 1,
        "nodes": [
            {"name": "n0", "gpus": 2, "cpus": 4, "memory_gib": 16, "asw": "a", "gpu_model": "A"},
            {"name": "n1", "gpus": 1, "cpus": 4, "memory_gib": 16, "asw": "a", "gpu_model": "A"},
            {"name": "n2", "gpus": 4, "cpus": 8, "memory_gib": 32, "asw": "a", "gpu_model": "B"},
            {"name": "n3", "gpus": 1, "cpus": 4, "memory_gib": 16, "asw": "a", "gpu_model": "B"},
        ],
        "pods": [
            {"name": "p0", "gpus": 1, "cpus": 4, "memory_gib": 16, "node": "n3"},
            {"name": "p1", "gpus": 2, "cpus": 2, "memory_gib": 4, "anti_affinity": ["g"], "node": "n0"},
            {"name": "p2", "gpus": 1, "cpus": 2, "memory_gib": 4, "node": "n2"},
            {"name": "p3", "gpus": 2, "cpus": 1, "memory_gib": 16, "node": "n2"},
        ],
        "jobs": [],
    }
)
"""Snapshot 1: n1 starts empty; emptying n3 as well needs p2 to step aside to n1 and come back."""

SNAPSHOT_TOPOLOGY = json.dumps(
    {
        "version": 1,
        "nodes": [
            {"name": "n0", "gpus": 2, "cpus": 4, "memory_gib": 64, "asw": "b", "gpu_model": "B"},
            {"name": "n1", "gpus": 2, "cpus": 8, "memory_gib": 64, "asw": "b", "gpu_model": "A"},
            {"name": "n2", "gpus": 4, "cpus": 8, "memory_gib": 16, "asw": "a", "gpu_model": "B"},
            {"name": "n3", "gpus": 8, "cpus": 16, "memory_gib": 16, "asw": "b", "gpu_model": "A"},
        ],
        "pods": [
            {"name": "p0", "gpus": 2, "cpus": 2, "memory_gib": 16, "job": "j0", "node": "n1"},
            {"name": "p1", "gpus": 1, "cpus": 2, "memory_gib": 4, "gpu_models": ["A"], "node": "n3"},
            {"name": "p2", "gpus": 1, "cpus": 2, "memory_gib": 16, "node": "n0"},
        ],
        "jobs": [{"name": "j0", "topology": {"level": "asw", "mode": "required"}}],
    }
)
"""Snapshot 2: the only way to a second empty node parks p2 on n2, under the other switch."""


def chain_cluster() -> Cluster:
    return parse_cluster(SNAPSHOT_CHAIN)


def topology_cluster() -> Cluster:
    return parse_cluster(SNAPSHOT_TOPOLOGY)


def thirds_cluster() -> Cluster:
    """Three shares of 1/3 (as the float 0.333...): a and b on n0, c on n1; all fit one device."""
    nodes = [node("n0", gpus=1, cpus=8, memory_gib=64), node("n1", gpus=1, cpus=8, memory_gib=64)]
    return make_cluster(nodes, [pod("a", "n0", THIRD), pod("b", "n0", THIRD), pod("c", "n1", THIRD)])


def memory_cluster(other_memory_gib: float) -> Cluster:
    """n0's 1 GiB is filled exactly by pinned pods of 0.3, 0.3 and 0.4 GiB; d and e sit alone on n1, n2.

    With ``other_memory_gib`` 0, d and e may join n0 (it has GPUs and CPUs to spare), with 1 they cannot.
    """
    nodes = [
        {"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 1, "gpu_model": "X"},
        {"name": "n1", "gpus": 8, "cpus": 64, "memory_gib": 64},
        {"name": "n2", "gpus": 8, "cpus": 64, "memory_gib": 64},
    ]
    pinned = [pod(name, "n0", 1, memory_gib=gib, gpu_models=["X"]) for name, gib in (("a", 0.3), ("b", 0.3), ("c", 0.4))]
    free = [pod("d", "n1", 1, memory_gib=other_memory_gib), pod("e", "n2", 1, memory_gib=other_memory_gib)]
    return make_cluster(nodes, pinned + free)


def two_switch_cluster() -> Cluster:
    """Two 8-GPU nodes under different switches: x (1 GPU) on n0 under a, y (2 GPUs) on n1 under b."""
    return make_cluster([node("n0", asw="a"), node("n1", asw="b")], [pod("x", "n0", 1), pod("y", "n1", 2)])


# ----------------------------------------------------------------------------------------------
# The oracle itself, on hand-checked answers
# ----------------------------------------------------------------------------------------------


def test_oracle_needs_five_moves_to_empty_a_second_node_in_the_chain_snapshot() -> None:
    # Only n0 (2 GPUs) and n2 (4) can hold all 6 GPUs, and the CPUs and memory force p3 onto n0 and
    # p0, p1, p2 onto n2. p1 and p3 can only swap once n2 has room, so p2 must step aside to n1 and
    # come back: p0, p1, p3 once and p2 twice is 5 moves, 2+2+1+1+1 = 7 GPUs.
    best = best_plan(chain_cluster())
    assert (best.empties, best.moves, best.gpus_moved) == (2, 5, 7.0)
    assert best.end == {"p0": "n2", "p1": "n2", "p2": "n2", "p3": "n0"}
    reach = explore(chain_cluster())
    one = reach.fewest(1)
    assert one is not None and one.moves == 0  # n1 is empty from the start
    assert reach.fewest(3) is None


def test_oracle_on_the_topology_snapshot_under_each_budget() -> None:
    # p0 (job j0, required asw) never leaves switch b; p1 runs only on model A (n1, n3); n3's 16 GiB
    # holds one 16 GiB pod and nothing else. The only second empty node: p0 -> n0 and p1, p2 -> n1,
    # which needs p2 parked on n2 (switch a) first: p2->n2, p0->n0, p1->n1, p2->n1 = 4 moves, 5 GPUs.
    free = best_plan(topology_cluster())
    assert (free.empties, free.moves, free.gpus_moved) == (2, 4, 5.0)
    assert free.end == {"p0": "n0", "p1": "n1", "p2": "n1"}
    capped = best_plan(topology_cluster(), max_moves=3)
    assert (capped.empties, capped.moves) == (1, 0)  # n2 is empty from the start
    assert best_plan(topology_cluster(), same_asw=True).empties == 1  # p2 cannot park on n2
    assert best_plan(topology_cluster(), max_moves_per_node=1).empties == 1  # parking touches n2 twice
    assert best_plan(topology_cluster(), max_moves=4).moves == 4


def test_oracle_packs_three_float_thirds_on_one_device() -> None:
    best = best_plan(thirds_cluster())
    assert (best.empties, best.moves) == (1, 1)
    assert best.gpus_moved == THIRD


def test_oracle_on_the_exactly_full_memory_snapshot() -> None:
    # d and e with 1 GiB cannot join n0 (its 1 GiB is full), so one of them joins the other.
    best = best_plan(memory_cluster(1))
    assert (best.empties, best.moves, best.gpus_moved) == (1, 1, 1.0)
    # without memory they both fit n0 beside a, b, c: two empty nodes in two moves
    best = best_plan(memory_cluster(0))
    assert (best.empties, best.moves, best.gpus_moved) == (2, 2, 2.0)
    assert best.end["d"] == best.end["e"] == "n0"


def test_oracle_honours_switches_and_per_node_budgets() -> None:
    assert (best_plan(two_switch_cluster()).empties, best_plan(two_switch_cluster()).moves) == (1, 1)
    assert best_plan(two_switch_cluster()).gpus_moved == 1.0  # x moves, not y
    assert best_plan(two_switch_cluster(), same_asw=True).empties == 0
    assert best_plan(two_switch_cluster(), max_moves_per_node=0).empties == 0
    assert best_plan(two_switch_cluster(), max_moves=0).empties == 0


def test_replay_rejects_a_wave_that_only_fits_as_a_sequence() -> None:
    # p2 -> n1 then p1 -> n2 is legal; in one wave n2 would hold p2's old copy, p3 and p1: 5 GPUs.
    cluster = chain_cluster()
    sequence = {"waves": [[{"pod": "p2", "from": "n2", "to": "n1"}], [{"pod": "p1", "from": "n0", "to": "n2"}]]}
    assert replay(cluster, sequence).end["p1"] == "n2"
    squeezed = {"waves": [[{"pod": "p2", "from": "n2", "to": "n1"}, {"pod": "p1", "from": "n0", "to": "n2"}]]}
    with pytest.raises(AssertionError, match="needs 5 GPUs"):
        replay(cluster, squeezed)


def test_replay_rejects_a_required_job_changing_switch() -> None:
    cluster = topology_cluster()
    with pytest.raises(AssertionError, match="job j0"):
        replay(cluster, {"waves": [[{"pod": "p0", "from": "n1", "to": "n2"}]]})  # n2 fits p0, switch a does not


def test_replay_of_the_five_move_chain_empties_two_nodes() -> None:
    cluster = chain_cluster()
    steps = [("p2", "n2", "n1"), ("p1", "n0", "n2"), ("p3", "n2", "n0"), ("p0", "n3", "n2"), ("p2", "n1", "n2")]
    done = replay(cluster, {"waves": [[{"pod": p, "from": s, "to": d}] for p, s, d in steps]})
    assert empty_nodes(cluster, done.end) == 2 and gpus_moved(cluster, done.moves) == 7


# ----------------------------------------------------------------------------------------------
# Checking a plan's claims against the oracle
# ----------------------------------------------------------------------------------------------


SOLVER_METHODS = ("exact", "compare", "hybrid", "auto")


@dataclass(frozen=True)
class Budgets:
    """The budget options of one request, given to the planner and the oracle alike."""

    max_moves: int | None = None
    max_moves_per_node: int | None = None
    same_asw: bool = False
    move_once: bool = True
    """The planner's default: every pod moves at most once."""
    pools: bool = False
    """The planner's default pools (a GPU pod keeps its product, CPU-only pods stay off GPU nodes);
    off here by default: the hand-made chains below cross GPU models on purpose."""

    def options(self, method: str, **fields: Any) -> DefragOptions:
        """Options for ``method`` with only the budgets that are set, and solver settings only for the
        solver methods (the planner may refuse options a method does not use)."""
        chosen: dict[str, Any] = {
            name: value
            for name, value in (
                ("max_moves", self.max_moves),
                ("max_moves_per_node", self.max_moves_per_node),
                ("same_asw", self.same_asw),
            )
            if value is not None and value is not False
        }
        if not self.move_once:
            chosen["move_once"] = False
        if method in SOLVER_METHODS:
            chosen.update(time_limit_s=10, solver_workers=2)
        if not self.pools:
            chosen.update(allow_product_change=True, allow_cpu_pods_on_gpu_nodes=True)
        return DefragOptions(**{"method": method, "workers": 1, **chosen, **fields})

    def explore(self, cluster: Cluster) -> Reachable:
        return oracle.explore(cluster, self.max_moves, self.max_moves_per_node, self.same_asw, self.move_once, self.pools)


def explain(text: str) -> None:
    """Add ``text`` to hypothesis's falsifying-example report; a plain test has no report to add to."""
    try:
        note(text)
    except InvalidArgument:
        pass


def assert_budgets_honoured(cluster: Cluster, moves: list[tuple[str, str, str]], budgets: Budgets) -> None:
    """Total moves, per-node touches and switch domains within the request's budgets."""
    if budgets.max_moves is not None:
        assert len(moves) <= budgets.max_moves, f"{len(moves)} moves > max_moves {budgets.max_moves}"
    if budgets.max_moves_per_node is not None:
        worst = max(touches(moves).items(), key=lambda item: item[1], default=("-", 0))
        assert worst[1] <= budgets.max_moves_per_node, f"node {worst[0]} touched {worst[1]} times"
    if budgets.move_once:
        moved = [p for p, _, _ in moves]
        assert len(moved) == len(set(moved)), f"a pod moves twice under move_once: {moves}"
    if budgets.same_asw:
        nodes = {n.name: n for n in cluster.nodes}
        for p, source, destination in moves:
            assert rules.topology_domain(nodes[source], "asw") == rules.topology_domain(nodes[destination], "asw"), (
                f"{p} crosses switches {source}->{destination} under same_asw"
            )


def assert_plan_claims_true(cluster: Cluster, plan: DefragPlan, budgets: Budgets, reach: Reachable) -> None:
    """Every claim of ``plan.report`` holds against the oracle's optimum under the same budgets."""
    report = plan.report
    assert report is not None
    best = reach.best()
    done = replay(cluster, plan)
    empties = empty_nodes(cluster, done.end)
    explain(f"oracle: empties={best.empties} moves={best.moves} gpus={best.gpus_moved} end={best.end}")
    explain(f"plan: {[(p, s, d) for p, s, d in done.moves]}; report={report.model_dump(exclude={'solves'})}")
    assert report.objective == empties, "report.objective is not the replayed end state's empty nodes"
    assert report.moves == len(done.moves)
    assert abs(report.gpus_moved - float(gpus_moved(cluster, done.moves))) <= 1e-6
    assert_budgets_honoured(cluster, done.moves, budgets)
    assert empties <= best.empties, "the plan empties more nodes than any legal plan can"
    if report.bound is not None:
        assert report.bound >= best.empties, f"bound {report.bound} < the true optimum {best.empties}"
    if report.status == "optimal":
        assert empties == best.empties, f"status optimal with {empties} empty nodes; the optimum is {best.empties}"
        assert report.bound == report.objective, "status optimal without bound == objective"
    if report.gap is not None:
        assert report.bound is not None
        assert report.gap == round((report.bound - report.objective) / max(report.bound, 1), 6)
    extra = report.model_extra or {}
    if extra.get("lexicographic_optimal"):
        assert (empties, len(done.moves)) == (best.empties, best.moves), "lexicographic_optimal but not lexicographically best"
        assert abs(float(gpus_moved(cluster, done.moves)) - best.gpus_moved) <= 1e-6
    if extra.get("moves_bound") is not None:
        fewest = reach.fewest(empties)
        assert fewest is not None  # the plan itself reaches that many empty nodes
        assert extra["moves_bound"] <= fewest.moves, f"moves_bound {extra['moves_bound']} > fewest moves {fewest.moves}"


def assert_comparison_claims_true(cluster: Cluster, comparison: DefragComparison, budgets: Budgets, reach: Reachable) -> None:
    """Both plans' claims, and a gap dict consistent with them and with the true optimum."""
    heuristic, exact = comparison.heuristic, comparison.exact
    assert_plan_claims_true(cluster, heuristic, budgets, reach)
    assert_plan_claims_true(cluster, exact, budgets, reach)
    h, e, gap = heuristic.report, exact.report, comparison.gap
    assert h is not None and e is not None and h.objective is not None and e.objective is not None
    assert gap["heuristic_empty_nodes"] == h.objective and gap["exact_empty_nodes"] == e.objective
    assert gap["bound_empty_nodes"] == e.bound
    assert gap["gap_empty_nodes"] == e.objective - h.objective
    assert e.objective >= h.objective, "the exact plan empties fewer nodes than IPC's"
    if e.bound is not None:
        assert gap["bound_empty_nodes"] >= reach.best().empties
        assert gap["heuristic_to_bound"] == e.bound - h.objective
    else:
        assert gap["heuristic_to_bound"] is None


def plan_for(cluster: Cluster, budgets: Budgets, method: str, **fields: Any) -> DefragPlan:
    plan = plan_defrag(cluster, budgets.options(method, **fields))
    assert isinstance(plan, DefragPlan)
    return plan


# ----------------------------------------------------------------------------------------------
# Hand reproductions of claims the planner must get right
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_exact_does_not_prove_one_empty_node_when_two_are_reachable(solver: str) -> None:
    cluster = chain_cluster()
    reach = explore(cluster)
    plan = plan_for(cluster, Budgets(), method="exact", solver=solver)
    report = plan.report
    assert report is not None and report.objective is not None
    assert report.bound is None or report.bound >= 2
    if report.objective < 2:
        assert report.status == "feasible"
    assert_plan_claims_true(cluster, plan, Budgets(), reach)


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize(
    "budgets, empties, moves",
    [(Budgets(max_moves=3), 1, 0), (Budgets(same_asw=True), 1, 0), (Budgets(), 2, 4)],
    ids=["max_moves=3", "same_asw", "free"],
)
def test_exact_claims_on_the_topology_snapshot_are_true(solver: str, budgets: Budgets, empties: int, moves: int) -> None:
    # (empties, moves): the optimum under the budgets, as worked out in the oracle's test above
    cluster = topology_cluster()
    plan = plan_for(cluster, budgets, method="exact", solver=solver)
    report = plan.report
    assert report is not None
    done = replay(cluster, plan)
    assert_budgets_honoured(cluster, done.moves, budgets)  # at most 3 moves; no pod changes switch
    assert report.status != "optimal" or report.objective == empties
    if (report.model_extra or {}).get("lexicographic_optimal"):
        assert (report.objective, report.moves) == (empties, moves)
    assert_plan_claims_true(cluster, plan, budgets, budgets.explore(cluster))


def test_hybrid_keeps_pods_under_their_switch_and_within_per_node_budgets() -> None:
    cluster = two_switch_cluster()
    same = plan_for(cluster, Budgets(same_asw=True), method="hybrid")
    assert [m.pod for m in same.moves()] == [], "x crossed from switch a to switch b under same_asw"
    frozen = plan_for(cluster, Budgets(max_moves_per_node=0), method="hybrid")
    assert frozen.moves() == [], "moves under max_moves_per_node=0"
    for budgets in (Budgets(same_asw=True), Budgets(max_moves_per_node=0), Budgets()):
        assert_plan_claims_true(cluster, plan_for(cluster, budgets, method="hybrid"), budgets, budgets.explore(cluster))


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_exact_packs_three_float_thirds_and_bounds_truthfully(solver: str) -> None:
    cluster = thirds_cluster()
    plan = plan_for(cluster, Budgets(), method="exact", solver=solver)
    report = plan.report
    assert report is not None
    assert report.objective == 1
    assert report.bound is not None and report.bound >= 1
    assert report.gap is not None and report.gap >= 0
    assert_plan_claims_true(cluster, plan, Budgets(), explore(cluster))


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize("other_memory_gib, optimum", [(1, 1), (0, 2)], ids=["d-e-1GiB", "d-e-no-memory"])
def test_exact_solves_the_exactly_full_memory_snapshot(solver: str, other_memory_gib: float, optimum: int) -> None:
    cluster = memory_cluster(other_memory_gib)
    plan = plan_for(cluster, Budgets(), method="exact", solver=solver)
    report = plan.report
    assert report is not None
    assert (report.status, report.objective) == ("optimal", optimum)
    assert_plan_claims_true(cluster, plan, Budgets(), explore(cluster))


def spread_cluster() -> Cluster:
    """Four 1-GPU pods spread over three 8-GPU nodes of one switch: a full repack moves at least two."""
    nodes = [node("n0", asw="a"), node("n1", asw="a"), node("n2", asw="a")]
    return make_cluster(nodes, [pod("a", "n0"), pod("b", "n1"), pod("c", "n2"), pod("d", "n2")])


def plan_or_refusal(cluster: Cluster, budgets: Budgets, method: str, option: str) -> DefragPlan | None:
    """The plan, or None when the planner refuses the request with an error naming ``option``."""
    try:
        return plan_for(cluster, budgets, method=method)
    except (PlanOptionError, ValidationError) as err:
        assert option in str(err), f"{method} refused the request without naming {option}: {err}"
        return None


@pytest.mark.parametrize("method", ["repack", "random", "descheduler"])
def test_baselines_never_cross_switches_under_same_asw(method: str) -> None:
    for cluster in (two_switch_cluster(), topology_cluster()):
        plan = plan_or_refusal(cluster, Budgets(same_asw=True), method, "same_asw")
        if plan is not None:
            assert_budgets_honoured(cluster, replay(cluster, plan).moves, Budgets(same_asw=True))


@pytest.mark.parametrize("method", ["repack", "random", "descheduler"])
@pytest.mark.parametrize(
    "budgets, option",
    [(Budgets(max_moves=1), "max_moves"), (Budgets(max_moves_per_node=1), "max_moves_per_node"), (Budgets(max_moves=0), "max_moves")],
    ids=["max_moves=1", "max_moves_per_node=1", "max_moves=0"],
)
def test_baselines_honour_move_budgets_or_refuse_them(method: str, budgets: Budgets, option: str) -> None:
    cluster = spread_cluster()
    plan = plan_or_refusal(cluster, budgets, method, option)
    if plan is not None:
        assert_budgets_honoured(cluster, replay(cluster, plan).moves, budgets)


# ----------------------------------------------------------------------------------------------
# Random tiny snapshots
# ----------------------------------------------------------------------------------------------

WHOLE_GPUS = [1.0, 2.0, 4.0]
SHARES = [THIRD, TWO_THIRDS, 0.3, 0.7, 0.45, 0.15, 0.55]
POD_MEMORY_GIB = [0.3, 0.4, THIRD, 2.0, 16.0]
NODE_MEMORY_GIB = [16.0, 64.0, 1.0, 2.0]
POD_CPUS = [0.5, 1.0, 1.5, 2.0]
NODE_CPUS = [4.0, 8.0, 2.0]
NODE_GPUS = [8, 4, 2, 1, 8, 4, 2, 0]
"""Repeats weight the draw (towards room to consolidate); hypothesis shrinks towards the first."""
TIGHT_NODE_GPUS = [2, 1, 4, 2]
TIGHT_POD_GPUS = [1.0, 2.0, 1.0]
"""Tight snapshots: small nodes nearly filled by four or five pods, where emptying a node may take
swaps and detours (a pod parked on a third node and moved again)."""
NODE_COUNTS = [3, 4, 2, 4]
REQUIRED_JOB = "j0"
REQUIRED_ASW = Topology(level="asw", mode="required")


def _may_stand(node_obj: Node, residents: list[Pod], candidate: Pod, job_nodes: list[Node] | None, job: Job | None) -> bool:
    """The candidate may stand on ``node_obj`` in a snapshot (a cordoned node keeps what it holds)."""
    if not (rules.gpu_model_allowed(candidate, node_obj) and rules.selector_matches(candidate, node_obj)):
        return False
    if rules.node_rule_breaks(node_obj, [*residents, candidate]):
        return False
    return job is None or job_nodes is None or rules.job_topology_ok(job, [*job_nodes, node_obj])


@st.composite
def tiny_clusters(draw: st.DrawFn) -> Cluster:
    """A consistent snapshot of 2-4 nodes with at most 5 placed pods and maybe one pending pod; GPU
    shares among the requests, and the required job maybe with a gang minimum (``min_available``).

    Roomy snapshots spread pod i onto node i + k (k drawn, modulo the nodes); tight ones (small
    nodes, four or five pods) pack pods first-fit from a drawn node on. A pod goes to the next node
    where the rules let it stand if its own does not; a pod that fits nowhere stays pending (once;
    later ones are dropped). Requests are drawn so that sums hit capacities exactly (0.3 + 0.7 of a
    GPU, 3 x 1/3 GiB in 1 GiB). The result goes through ``parse_cluster``, so it is valid planner
    input.
    """
    tight = draw(st.booleans())
    nodes = [
        Node(
            name=f"n{i}",
            gpu_model=draw(st.sampled_from(["A", "B"])),
            gpus=draw(st.sampled_from(TIGHT_NODE_GPUS if tight else NODE_GPUS)),
            cpus=draw(st.sampled_from(NODE_CPUS)),
            memory_gib=draw(st.sampled_from(NODE_MEMORY_GIB)),
            asw=draw(st.sampled_from(["a", "b", None])),
            schedulable=draw(st.sampled_from([True] * 9 + [False])),
        )
        for i in range(draw(st.sampled_from(NODE_COUNTS)))
    ]
    job = Job(name=REQUIRED_JOB, topology=REQUIRED_ASW) if draw(st.booleans()) else None
    residents: dict[str, list[Pod]] = {n.name: [] for n in nodes}
    job_nodes: list[Node] = []
    pods: list[Pod] = []
    pending = False
    for i in range(draw(st.integers(4 if tight else 3, 5))):
        if tight:
            gpus = draw(st.one_of(st.sampled_from(TIGHT_POD_GPUS), st.sampled_from(SHARES)))
        else:
            gpus = draw(st.one_of(st.sampled_from(WHOLE_GPUS), st.sampled_from(SHARES), st.just(0.0)))
        in_job = job is not None and draw(st.booleans())
        candidate = Pod(
            name=f"p{i}",
            job=REQUIRED_JOB if in_job else None,
            gpus=gpus,
            cpus=draw(st.sampled_from(POD_CPUS)),
            memory_gib=draw(st.sampled_from(POD_MEMORY_GIB)),
            gpu_models=draw(st.sampled_from([[], [], [], ["A"]])),
            anti_affinity=draw(st.sampled_from([[], [], [], [], ["g"]])),
            locked=draw(st.sampled_from([False] * 9 + [True])),
        )
        first = draw(st.integers(0, len(nodes) - 1)) + (0 if tight else i)
        for k in range(len(nodes)):
            target = nodes[(first + k) % len(nodes)]
            if _may_stand(target, residents[target.name], candidate, job_nodes if in_job else None, job if in_job else None):
                placed = candidate.model_copy(update={"node": target.name})
                residents[target.name].append(placed)
                if in_job:
                    job_nodes.append(target)
                pods.append(placed)
                break
        else:
            if not pending:
                pods.append(candidate)
                pending = True
    if not pending and draw(st.booleans()):
        pods.append(Pod(name="waiting", gpus=draw(st.sampled_from([1.0, THIRD])), cpus=1.0))
    members = sum(1 for p in pods if p.job == REQUIRED_JOB)
    if job is not None and members:  # a gang minimum (min_available) changes no rule a move must keep
        job = job.model_copy(update={"min_available": draw(st.sampled_from([None, *range(1, members + 1)]))})
    cluster = Cluster(nodes=nodes, pods=pods, jobs=[job] if job else [])
    return parse_cluster(dump_cluster(cluster))


DETOUR_CORPUS_SIZE = 40
DETOUR_SEARCH_LIMIT = 100_000


def _random_snapshot(rng: random.Random) -> Cluster:
    """A random small snapshot (3-4 nodes, 3-5 pods tried in random node order) from ``rng``."""
    nodes = [
        Node(
            name=f"n{i}",
            gpu_model=rng.choice(["A", "B"]),
            gpus=rng.choice([1, 2, 4]),
            cpus=rng.choice(NODE_CPUS),
            memory_gib=rng.choice(NODE_MEMORY_GIB),
            asw=rng.choice(["a", "b"]),
        )
        for i in range(rng.choice([3, 4, 4]))
    ]
    jobs = [Job(name=REQUIRED_JOB, topology=REQUIRED_ASW)]
    pods: list[Pod] = []
    for i in range(rng.choice([3, 4, 5])):
        candidate = Pod(
            name=f"p{i}",
            job=rng.choice([None, None, REQUIRED_JOB]),
            gpus=rng.choice([1.0, 2.0, THIRD, 0.7, 0.3]),
            cpus=rng.choice([0.5, 1.0, 2.0]),
            memory_gib=rng.choice([0.3, THIRD, 2.0, 16.0]),
            gpu_models=rng.choice([[], [], ["A"]]),
            anti_affinity=rng.choice([[], [], ["g"]]),
            locked=rng.random() < 0.1,
        )
        for target_node in rng.sample(nodes, len(nodes)):
            placed = [*pods, candidate.model_copy(update={"node": target_node.name})]
            if not consistency_problems(Cluster(nodes=nodes, pods=placed, jobs=jobs)):
                pods = placed
                break
    return Cluster(nodes=nodes, pods=pods, jobs=jobs)


@lru_cache(maxsize=1)
def detour_corpus() -> tuple[str, ...]:
    """Snapshots (JSON) whose optimum needs a detour, found by a seeded random search with the oracle.

    A detour is a pod moved twice (parked on a node with room while others swap, then moved on),
    the case where make-before-break routing meets the move budgets. Under 1% of random tiny
    snapshots need one, too few for hypothesis to meet unaided; the search keeps the first
    ``DETOUR_CORPUS_SIZE`` of them (about 8,000 candidates, under 10 s, the same every run).
    """
    rng = random.Random(20240611)
    found: list[str] = []
    for _ in range(DETOUR_SEARCH_LIMIT):
        cluster = _random_snapshot(rng)
        best = best_plan(cluster)
        start = {p.name: p.node for p in cluster.pods}
        if best.moves > sum(1 for p, at in best.end.items() if start[p] != at):
            found.append(dump_cluster(cluster))
            if len(found) == DETOUR_CORPUS_SIZE:
                break
    assert found, "the detour search found no snapshot"
    return tuple(found)


def detour_clusters() -> st.SearchStrategy[Cluster]:
    """One of the detour corpus's snapshots (built on first use)."""
    return st.integers(0, DETOUR_CORPUS_SIZE - 1).map(lambda i: parse_cluster(detour_corpus()[i % len(detour_corpus())]))


snapshots = st.one_of(tiny_clusters(), tiny_clusters(), tiny_clusters(), detour_clusters())
"""Three in four random tiny snapshots, one in four from the detour corpus."""

budgets_strategy = st.builds(
    Budgets,
    max_moves=st.sampled_from([None, 0, 1, 2, 3, None]),
    max_moves_per_node=st.sampled_from([None, 1, 2, None]),
    same_asw=st.booleans(),
    move_once=st.booleans(),
    pools=st.booleans(),
)
"""The request's budgets; unbudgeted twice as likely, as longer plans need no budget to be legal."""

HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def _note_request(cluster: Cluster, budgets: Budgets, **fields: Any) -> None:
    """Put the falsifying snapshot (JSON) and options in hypothesis's report."""
    explain(f"snapshot: {dump_cluster(cluster)}")
    explain(f"options: {budgets} {fields}")


def _aim(cluster: Cluster, reach: Reachable, plan: DefragPlan) -> None:
    """Steer generation towards snapshots where plans are hard to get right.

    Random tiny snapshots rarely need more than one move, and almost never a detour (a pod moved
    twice, or parked and moved on), the case where make-before-break routing and the move budgets
    interact; hypothesis's targeting climbs towards them, and towards plans short of the optimum.
    """
    best = reach.best()
    start = {p.name: p.node for p in cluster.pods}
    target(float(best.moves), label="oracle: fewest moves to the optimum")
    target(float(best.moves - sum(1 for p, at in best.end.items() if start[p] != at)), label="oracle: detour moves")
    if plan.report is not None:
        target(float(plan.report.moves), label="plan: moves")
        target(float(best.empties - (plan.report.objective or 0)), label="plan: empty nodes short of the optimum")


def _one_wave_plans(cluster: Cluster) -> list[list[tuple[str, str, str]]]:
    """Every plan of at most one wave: each movable pod stays or moves straight to another node."""
    movable = [p for p in cluster.pods if p.node is not None and not p.locked]
    names = [n.name for n in cluster.nodes]
    plans = []
    for ends in itertools.product(names, repeat=len(movable)):
        plans.append([(p.name, str(p.node), end) for p, end in zip(movable, ends) if end != p.node])
    return plans


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(cluster=snapshots, budgets=budgets_strategy)
def test_oracle_optimum_replays_and_no_one_wave_plan_beats_it(cluster: Cluster, budgets: Budgets) -> None:
    """The oracle's own optimal path is legal and as claimed, and brute force over one-wave plans
    (each of which is also a sequence of single moves) never finds a better one."""
    _note_request(cluster, budgets)
    best = budgets.explore(cluster).best()
    done = replay(cluster, {"waves": [[{"pod": p, "from": s, "to": d}] for p, s, d in best.path]})
    assert_budgets_honoured(cluster, done.moves, budgets)
    assert {p: done.end[p] for p in best.end} == best.end
    assert (empty_nodes(cluster, done.end), len(done.moves), gpus_moved(cluster, done.moves)) == (
        best.empties,
        best.moves,
        best.gpus_exact,
    )
    pods, nodes = {p.name: p for p in cluster.pods}, {n.name: n for n in cluster.nodes}
    for moves in _one_wave_plans(cluster):
        try:
            end = replay(cluster, {"waves": [[{"pod": p, "from": s, "to": d} for p, s, d in moves]]}).end
            assert_budgets_honoured(cluster, moves, budgets)
            assert not budgets.pools or all(oracle.pool_allows(cluster, pods[p], nodes[s], nodes[d]) for p, s, d in moves)
        except AssertionError:
            continue
        score = (empty_nodes(cluster, end), -len(moves), -gpus_moved(cluster, moves))
        assert score <= (best.empties, -best.moves, -best.gpus_exact), f"one wave {moves} beats the oracle"


@settings(max_examples=1000, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(
    cluster=snapshots,
    budgets=budgets_strategy,
    solver=st.sampled_from(["cpsat", "highs"]),
    formulation=st.sampled_from(["auto", "pod", "class"]),
    lexicographic=st.sampled_from(["two-phase", "weighted"]),
)
def test_exact_claims_hold_against_the_oracle(cluster: Cluster, budgets: Budgets, solver: str, formulation: str, lexicographic: str) -> None:
    _note_request(cluster, budgets, solver=solver, formulation=formulation, lexicographic=lexicographic)
    reach = budgets.explore(cluster)
    plan = plan_for(cluster, budgets, method="exact", solver=solver, formulation=formulation, lexicographic=lexicographic)
    _aim(cluster, reach, plan)
    assert_plan_claims_true(cluster, plan, budgets, reach)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(cluster=snapshots, budgets=budgets_strategy, method=st.sampled_from(["hybrid", "auto"]), solver=st.sampled_from(["cpsat", "highs"]))
def test_hybrid_and_auto_claims_hold_against_the_oracle(cluster: Cluster, budgets: Budgets, method: str, solver: str) -> None:
    _note_request(cluster, budgets, method=method, solver=solver)
    reach = budgets.explore(cluster)
    plan = plan_for(cluster, budgets, method=method, solver=solver)
    _aim(cluster, reach, plan)
    assert_plan_claims_true(cluster, plan, budgets, reach)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=HEALTH)
@given(cluster=snapshots, budgets=budgets_strategy, solver=st.sampled_from(["cpsat", "highs"]))
def test_compare_claims_and_gap_hold_against_the_oracle(cluster: Cluster, budgets: Budgets, solver: str) -> None:
    _note_request(cluster, budgets, method="compare", solver=solver)
    reach = budgets.explore(cluster)
    comparison = plan_defrag(cluster, budgets.options("compare", solver=solver))
    assert isinstance(comparison, DefragComparison)
    _aim(cluster, reach, comparison.exact)
    assert_comparison_claims_true(cluster, comparison, budgets, reach)
