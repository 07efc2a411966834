"""The preemption search's fast forms (issue 62) against what they stand for, on random clusters:
``leaving_check`` answers as ``ClusterState.fits_without`` for every set of leaving pods, and the
cover bounds kept between decisions (``heuristics/cover_bounds.py``) are the bounds computed afresh,
the fractional knapsack worked out here node by node, and follow the placement when it changes."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod
from planner.heuristics import cover_bounds
from planner.preempt_state import Ask, PreemptState, leaving_check
from planner.state import PENDING
from tests.support.strategies import SHARES, clusters


@st.composite
def full_clusters(draw: st.DrawFn) -> Cluster:
    """Nodes filled with spot pods (whole GPUs and shares, CPUs, memory; no named resources, groups or
    standby: the fast forms' own case, which ``clusters`` seldom draws) and pending HP pods to place."""
    nodes = [
        Node(name=f"n-{i}", gpus=draw(st.sampled_from([2, 4, 8])), cpus=draw(st.sampled_from([16.0, 32.0])), memory_gib=64.0)
        for i in range(draw(st.integers(1, 4)))
    ]
    residents: dict[str, list[Pod]] = {n.name: [] for n in nodes}
    pods: list[Pod] = []
    for i in range(draw(st.integers(0, 16))):
        node = draw(st.sampled_from(nodes))
        pod = Pod(
            name=f"spot-{i}",
            job=draw(st.sampled_from([None, None, "gang"])),
            node=node.name,
            gpus=draw(st.sampled_from([1.0, 2.0, *SHARES])),
            cpus=draw(st.sampled_from([0.0, 2.0, 4.5, 8.0])),
            memory_gib=draw(st.sampled_from([0.0, 8.0])),
            priority="LP",
            started_s=draw(st.sampled_from([0.0, 50.0])),
        )
        if rules.pods_fit(node, residents[node.name], [pod]):
            residents[node.name].append(pod)
            pods.append(pod)
    for j in range(2):
        pods.append(
            Pod(name=f"hp-{j}", job=f"hp-{j}", gpus=draw(st.sampled_from([1.0, 2.0, 4.0, 0.5])), cpus=draw(st.sampled_from([1.0, 8.0, 16.0])), priority="HP")
        )
    jobs = [Job(name=f"hp-{j}") for j in range(2)] + ([Job(name="gang", min_available=2)] if any(p.job == "gang" for p in pods) else [])
    return Cluster(time_s=100.0, nodes=nodes, pods=pods, jobs=jobs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(full_clusters(), clusters(max_nodes=4, max_pods=12)))
def test_leaving_check_is_fits_without(cluster: Cluster) -> None:
    cs = PreemptState(cluster).cs
    for p in range(len(cluster.pods)):
        for n in range(len(cluster.nodes)):
            here = [q for q in cs.node_pods[n] if q != p][:7]
            check = leaving_check(cs, p, n)
            for size in range(len(here) + 1):
                for leaving in itertools.permutations(here, size) if size <= 2 else itertools.combinations(here, size):
                    assert check(tuple(leaving)) == cs.fits_without(p, n, tuple(leaving)), (p, n, leaving)


def _knapsack(ps: PreemptState, ask: Ask, p: int, n: int) -> float:
    """The bound of node n worked out alone: per resource, the candidate units by cost per unit freed,
    taken whole until the deficit is met, the last in part; never below the cheapest unit."""
    cs = ps.cs
    pods = [q for q in cs.node_pods[n] if ask.victims[q]]
    units: dict[int, list[int]] = {}
    for q in sorted(pods):
        units.setdefault(int(ps.unit[q]), []).append(q)
    if not units:
        return np.inf
    cost = {u: float(ask.unit_cost[u]) for u in units}
    bound = min(cost.values())
    need_gpus = cs.pod_whole[p] + (1 if cs.pod_share[p] > 0 else 0)
    deficits = (
        (need_gpus - (cs.cap_gpus[n] - cs.whole_used[n] - cs.share_devices[n]), lambda q: cs.pod_whole[q] + (cs.pod_share[q] > 0)),
        (cs.pod_cpus[p] - (cs.cap_cpus[n] - cs.used_cpus[n]), lambda q: cs.pod_cpus[q]),
    )
    for deficit, freed_by in deficits:
        if deficit <= 0:
            continue
        freed = {u: float(sum(freed_by(q) for q in qs)) for u, qs in units.items()}
        left, total = float(deficit), 0.0
        for u in sorted((u for u in units if freed[u] > 0), key=lambda u: cost[u] / freed[u]):
            take = min(1.0, left / freed[u])
            total += cost[u] * take
            left -= freed[u] * take
            if left <= 0:
                break
        bound = max(bound, total)
    return bound


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(full_clusters(), full_clusters(), clusters(max_nodes=5, max_pods=14)), st.data())
def test_kept_bounds_are_the_bounds_of_the_placement(cluster: Cluster, data: st.DataObject) -> None:
    ps = PreemptState(cluster)
    pending = [p for p, pod in enumerate(cluster.pods) if pod.node is None]
    if not pending:
        return
    p = data.draw(st.sampled_from(pending))
    job = cluster.job_index().get(cluster.pods[p].job) if cluster.pods[p].job else None
    if job is None:
        return
    ask = Ask.of(ps, job, cluster.time_s + 10_000)
    nodes = np.arange(len(cluster.nodes))
    for _ in range(3):  # a placement, the same one again (kept rows), then one pod fewer (rows rebuilt)
        kept = cover_bounds.cover_lower_bounds(ps, ask, p, nodes)
        cover_bounds._ROWS.clear()
        fresh = cover_bounds.cover_lower_bounds(ps, ask, p, nodes)
        assert np.array_equal(kept, fresh)
        for n in nodes.tolist():
            expected = _knapsack(ps, ask, p, n)
            assert kept[n] <= expected + 1e-9 and (expected == np.inf or kept[n] >= expected - 1e-6 * max(1.0, expected)), (n, kept[n], expected)
        placed = [q for q in range(len(cluster.pods)) if ps.cs.pod_node[q] != PENDING and ask.victims[q]]
        if placed:
            ps.cs.unplace(placed[0])
