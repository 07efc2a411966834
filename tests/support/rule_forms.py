"""The check that state.py's fast forms of the rules answer exactly as the plain rules (rules/) do, for
every pod and node of a state: the rule tests and the taint tests run it."""

from __future__ import annotations

import numpy as np

from planner import rules
from planner.cluster import Cluster
from planner.state import PENDING, ClusterState


def plain_fits(cluster: Cluster, location: list[int], p: int, n: int) -> bool:
    """Plain-rules answer to: may pod p get a copy on node n while every current copy stays?"""
    node_obj = cluster.nodes[n]
    residents = [cluster.pods[q] for q, at in enumerate(location) if at == n]
    if not rules.pods_fit(node_obj, residents, [cluster.pods[p]]):
        return False
    job_name = cluster.pods[p].job
    if job_name is None:
        return True
    job = next(j for j in cluster.jobs if j.name == job_name)
    copies = [cluster.nodes[location[q]] for q, other in enumerate(cluster.pods) if other.job == job_name and location[q] != PENDING]
    return rules.job_topology_ok(job, [*copies, node_obj])


def assert_forms_agree(state: ClusterState) -> None:
    cluster = state.cluster
    location = state.pod_node.tolist()
    for p in range(len(cluster.pods)):
        mask = state.feasible_nodes(p)
        among = np.arange(len(cluster.nodes))[::-1].copy()
        mask_among = state.feasible_nodes(p, among)
        for n in range(len(cluster.nodes)):
            if n == location[p]:
                assert not mask[n]
                continue
            expected = plain_fits(cluster, location, p, n)
            assert state.fits(p, n) == expected, (p, n, state.broken_rules(p, n))
            assert bool(mask[n]) == expected, (p, n)
            assert bool(mask_among[len(cluster.nodes) - 1 - n]) == expected
            assert (state.broken_rules(p, n) == []) == expected
