"""Fuzzed snapshots through every method, each plan checked by the independent replay of
``tests/support/defrag_oracle.py`` (not by the planner's validator): no crash, no illegal step, no broken limit, and
the plan's own account (vacated nodes, empty nodes, moves) equal to the replay's.

This is the fast standing part of the adversarial suite; ``benchmarks/robustness.py`` runs the same
kind of check on tens of thousands of snapshots.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod
from planner.engine import METHOD_OPTIONS, DefragOptions, plan_defrag
from planner.plans import DefragComparison, DefragPlan
from tests.support.defrag_oracle import empty_nodes, replay, touches

METHODS = ("heuristic", "random", "descheduler", "repack", "exact", "hybrid", "auto", "compare")
AWKWARD = [0.0, 0.3, 1 / 3, 0.5, 1.0, 1.5, 2.0, 1e-7, 123.456]


@st.composite
def awkward_clusters(draw: st.DrawFn) -> Cluster:
    """Consistent snapshots with the values that broke things before: float thirds and tenths,
    GPU shares that pack tightly, tiny and odd CPU and memory requests, cordoned nodes, topology."""
    nodes = [
        Node(
            name=f"n{i}",
            gpu_model=draw(st.sampled_from(["A", "B", ""])),
            gpus=draw(st.sampled_from([0, 1, 2, 4, 8])),
            cpus=draw(st.sampled_from([1.0, 2.5, 8.0, 64.0])),
            memory_gib=draw(st.sampled_from([1.0, 1.2, 16.0, 512.0])),
            asw=draw(st.sampled_from(["a", "b", None])),
            spine=draw(st.sampled_from(["s", None])),
            labels=draw(st.sampled_from([{}, {"pool": "x"}])),
            schedulable=draw(st.sampled_from([True, True, True, False])),
        )
        for i in range(draw(st.integers(1, 7)))
    ]
    jobs = [Job(name="j0", topology={"level": draw(st.sampled_from(["asw", "spine"])), "mode": draw(st.sampled_from(["required", "preferred"]))})]
    pods: list[Pod] = []
    residents: dict[str, list[Pod]] = {n.name: [] for n in nodes}
    job_nodes: list[Node] = []
    for i in range(draw(st.integers(0, 14))):
        target = draw(st.sampled_from([None, *nodes, *nodes]))
        job = draw(st.sampled_from([None, None, "j0"]))
        pod = Pod(
            name=f"p{i}",
            job=job,
            gpus=draw(st.sampled_from([0.0, 0.1, 0.3, 1 / 3, 0.45, 0.7, 1.0, 1.0, 2.0, 4.0])),
            cpus=draw(st.sampled_from(AWKWARD[:-1])),
            memory_gib=draw(st.sampled_from(AWKWARD)),
            gpu_models=draw(st.sampled_from([[], ["A"], ["A", "B"]])),
            locked=draw(st.booleans()),
            node_selector=draw(st.sampled_from([{}, {}, {"pool": "x"}])),
            anti_affinity=draw(st.sampled_from([[], [], ["g"]])),
        )
        if target is not None and rules.pods_fit(target, residents[target.name], [pod]):
            if job is None or rules.job_topology_ok(jobs[0], [*job_nodes, target]):
                pod = pod.model_copy(update={"node": target.name})
                residents[target.name].append(pod)
                if job is not None:
                    job_nodes.append(target)
        pods.append(pod)
    return Cluster(nodes=nodes, pods=pods, jobs=jobs)


@st.composite
def options_for(draw: st.DrawFn, method: str) -> DefragOptions:
    """Random options the method accepts (it refuses the others)."""
    accepted = METHOD_OPTIONS[method]
    fields: dict[str, Any] = {"method": method, "workers": 1}
    choices: dict[str, st.SearchStrategy] = {
        "max_moves": st.sampled_from([0, 1, 3, 10]),
        "max_moves_per_node": st.sampled_from([0, 1, 2]),
        "same_asw": st.just(True),
        "seed": st.integers(0, 2**31 - 1),
        "threshold": st.sampled_from([0.3, 1.0]),
        "solver": st.sampled_from(["highs", "cpsat"]),
        "lexicographic": st.sampled_from(["two-phase", "weighted"]),
        "depth": st.integers(1, 4),
    }
    for name, strategy in choices.items():
        if name in accepted and draw(st.booleans()):
            fields[name] = draw(strategy)
    if "time_limit_s" in accepted:
        fields["time_limit_s"] = 2.0
        fields["solver_workers"] = 2
    return DefragOptions(**fields)


def _check(cluster: Cluster, plan: DefragPlan, options: DefragOptions) -> None:
    done = replay(cluster, plan)  # raises at the first illegal step
    report = plan.report
    assert report is not None
    before = {p.node for p in cluster.pods if p.node is not None}
    after = {node for node in done.end.values() if node is not None}
    assert sorted(plan.vacated_nodes) == sorted(before - after)
    assert report.objective == empty_nodes(cluster, done.end)
    assert report.moves == len(done.moves)
    if options.max_moves is not None:
        assert len(done.moves) <= options.max_moves
    if options.max_moves_per_node is not None:
        assert max(touches(done.moves).values(), default=0) <= options.max_moves_per_node
    if options.same_asw:
        node = {n.name: n for n in cluster.nodes}
        for _, source, destination in done.moves:
            assert rules.topology_domain(node[source], "asw") == rules.topology_domain(node[destination], "asw")
    if report.bound is not None:
        assert report.bound >= report.objective


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cluster=awkward_clusters(), method=st.sampled_from(METHODS), data=st.data())
def test_every_method_returns_plans_the_independent_replay_accepts(cluster: Cluster, method: str, data: st.DataObject) -> None:
    options = data.draw(options_for(method))
    plan = plan_defrag(cluster, options)
    plans = [plan.heuristic, plan.exact] if isinstance(plan, DefragComparison) else [plan]
    for one in plans:
        _check(cluster, one, options)
