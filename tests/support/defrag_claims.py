"""A defrag request's budgets, given to the planner and the oracle alike, and the checks that a plan's
claims (status, bound, gap, lexicographic optimum, moves bound) and budgets hold against the oracle's
optimum under the same budgets (``tests/support/defrag_oracle.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import note
from hypothesis.errors import InvalidArgument

from planner import rules
from planner.cluster import Cluster
from planner.engine import DefragOptions
from planner.plans import DefragComparison, DefragPlan
from planner.snapshot import dump_cluster
from tests.support import defrag_oracle as oracle
from tests.support.defrag_oracle import Reachable, empty_nodes, gpus_moved, replay, touches

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


def note_request(cluster: Cluster, budgets: Budgets, **fields: Any) -> None:
    """Put the falsifying snapshot (JSON) and options in hypothesis's report."""
    explain(f"snapshot: {dump_cluster(cluster)}")
    explain(f"options: {budgets} {fields}")
