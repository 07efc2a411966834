"""Make-room clusters the make-room tests share: a terse builder, three hand-made cases (one move, an
ejection chain, a job that needs a switch cleared) and random tiny clusters by seed."""

from __future__ import annotations

import numpy as np

from planner.cluster import Cluster


def cluster(nodes: list[tuple], pods: list[dict], jobs: list[dict] | None = None) -> Cluster:
    """nodes: (name, gpus[, asw]); pods: dicts with name, gpus, node (None: pending) and extras."""
    return Cluster.model_validate(
        {
            "nodes": [{"name": n[0], "gpus": n[1], "cpus": 96, "memory_gib": 512, **({"asw": n[2]} if len(n) > 2 else {})} for n in nodes],
            "pods": [{"cpus": 1, **p} for p in pods],
            "jobs": jobs or [],
        }
    )


ONE_MOVE = cluster([("n0", 8), ("n1", 8)], [{"name": "a", "gpus": 4, "node": "n0"}, {"name": "b", "gpus": 4, "node": "n1"}, {"name": "big", "gpus": 8}])


# n0 frees 8 GPUs only if a (4) leaves; no node has 4 free, but n1 does once d (2) goes to n2: a chain
CHAIN = cluster(
    [("n0", 8), ("n1", 8), ("n2", 8)],
    [
        {"name": "a", "gpus": 4, "node": "n0"},
        {"name": "c", "gpus": 4, "node": "n1", "locked": True},
        {"name": "d", "gpus": 2, "node": "n1"},
        {"name": "e", "gpus": 6, "node": "n2"},
        {"name": "big", "gpus": 8},
    ],
)


REQUIRED = cluster(
    [("s1-0", 8, "s1"), ("s1-1", 8, "s1"), ("s2-0", 8, "s2"), ("s2-1", 8, "s2")],
    [
        {"name": "a", "gpus": 2, "node": "s1-0"},
        {"name": "b", "gpus": 2, "node": "s1-1"},
        {"name": "c", "gpus": 4, "node": "s2-0", "locked": True},
        {"name": "d", "gpus": 4, "node": "s2-1", "locked": True},
        {"name": "j-0", "job": "j", "gpus": 8},
        {"name": "j-1", "job": "j", "gpus": 8},
    ],
    [{"name": "j", "topology": {"level": "asw", "mode": "required"}}],
)


def tiny_cluster(seed: int) -> Cluster:
    rng = np.random.default_rng(seed)
    n_nodes = int(rng.integers(2, 5))
    nodes = [(f"n{k}", 4, f"s{k % 2}") for k in range(n_nodes)]
    pods: list[dict] = []
    for k in range(n_nodes):
        free = 4
        for i in range(int(rng.integers(1, 4))):
            gpus = int(rng.integers(1, 3))
            if gpus <= free:
                pods.append({"name": f"p{k}{i}", "gpus": gpus, "node": f"n{k}", "locked": bool(rng.random() < 0.15)})
                free -= gpus
    size, count = int(rng.integers(2, 5)), int(rng.integers(1, 3))
    required = bool(rng.random() < 0.4)
    pods += [{"name": f"j-{i}", "job": "j", "gpus": size} for i in range(count)]
    job = {"name": "j", **({"topology": {"level": "asw", "mode": "required"}} if required else {})}
    return cluster(nodes, pods, [job])
