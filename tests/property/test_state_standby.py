"""Where a pending pod may go on a node with standby reservations: ``ClusterState.feasible_nodes``
against the rules themselves (``rules.resource_shortfalls`` on the node's pods plus the new one),
on random nodes mixing standby HP pods, running HP pods with GPU shares, and spot pods."""

from __future__ import annotations

import numpy as np
import pytest

from planner import rules
from planner.cluster import Cluster
from planner.state import ClusterState


def random_cluster(seed: int) -> Cluster:
    rng = np.random.default_rng(seed)
    nodes, pods = [], []
    for n in range(40):
        name = f"n{n:02d}"
        nodes.append({"name": name, "gpus": 4, "cpus": 16, "memory_gib": 256})
        awake, reserved = [0.0, 0.0], [0.0, 0.0]  # (GPUs, CPUs) of awake pods; of HP pods, standby included
        for k in range(int(rng.integers(0, 7))):
            kind = rng.choice(["standby", "hp", "hp-share", "spot"])
            gpus = float(rng.choice([0.25, 0.5, 0.75])) if kind == "hp-share" else int(rng.integers(1, 3))
            cpus = int(rng.integers(1, 9))
            after_awake = awake if kind == "standby" else [awake[0] + gpus, awake[1] + cpus]  # standby pods lend what they hold
            after_reserved = reserved if kind == "spot" else [reserved[0] + gpus, reserved[1] + cpus]
            if max(after_awake[0], after_reserved[0]) > 4 or max(after_awake[1], after_reserved[1]) > 16:
                continue
            awake, reserved = after_awake, after_reserved
            pods.append(
                {
                    "name": f"{name}-{k}",
                    "node": name,
                    "gpus": gpus,
                    "cpus": cpus,
                    "memory_gib": 8,
                    "priority": "LP" if kind == "spot" else "HP",
                    "standby": kind == "standby",
                    **({"started_s": 0} if kind == "spot" else {}),
                }
            )
    pending = [
        {"name": "whole", "gpus": 2, "cpus": 4, "memory_gib": 8},
        {"name": "share", "gpus": 0.75, "cpus": 2, "memory_gib": 8},
        {"name": "spot", "gpus": 1, "cpus": 4, "memory_gib": 8, "priority": "LP"},
    ]
    return Cluster.model_validate({"nodes": nodes, "pods": pods + pending})


@pytest.mark.parametrize("seed", range(6))
def test_feasible_nodes_keep_every_standby_reservation(seed: int) -> None:
    cluster = random_cluster(seed)
    assert any(p.standby for p in cluster.pods) and any(0 < p.gpus < 1 and p.node for p in cluster.pods)
    cs = ClusterState(cluster)
    cs.enable_standby()
    by_node = cluster.pods_by_node()
    for name in ("whole", "share", "spot"):
        p = cs.pod_names.index(name)
        pod = cluster.pods[p]
        got = cs.feasible_nodes(p)
        want = [not rules.resource_shortfalls(node, [*by_node[node.name], pod.model_copy(update={"node": node.name})]) for node in cluster.nodes]
        assert got.tolist() == want, name
        assert 0 < sum(want) < len(want), name  # the instance tells feasible from infeasible nodes
