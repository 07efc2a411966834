"""Hand-made preemption clusters the preemption, provenance and service tests share: the published
prefix rule's counterexample, a FlexTopo NUMA node, a standby reservation."""

from __future__ import annotations

from planner.cluster import Cluster


def prefix_counterexample() -> Cluster:
    """seed-specs A.2: victims costing 1, 2, 3 with 1, 1, 4 GPUs; the HP pod needs 4 GPUs."""
    return Cluster.model_validate(
        {
            "time_s": 100,
            "nodes": [{"name": "n0", "gpus": 6, "cpus": 64, "memory_gib": 64}],
            "pods": [
                {"name": "a", "gpus": 1, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 99},
                {"name": "b", "gpus": 1, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 98},
                {"name": "c", "gpus": 4, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 99.25},
                {"name": "h", "gpus": 4, "cpus": 1, "job": "hp"},
            ],
            "jobs": [{"name": "hp"}],
        }
    )


def numa_node_cluster() -> Cluster:
    """One FlexTopo node (2 sockets, 8 NUMA domains of 1 GPU and 8 CPUs), GPU 3 free; a 4-GPU
    guaranteed pod must free one socket: socket 0 costs 160 GPU-s (3 old pods), socket 1 costs 6."""
    numa = [{"name": f"d{i}", "gpu_indexes": [i], "cpus": 8, "socket": i // 4} for i in range(8)]

    def pod(name: str, devices: list[int], start: float, priority: int = 200) -> dict:
        return {
            "name": name,
            "gpus": len(devices),
            "cpus": 8 * len(devices),
            "node": "n0",
            "priority": "LP",
            "priority_value": priority,
            "started_s": start,
            "gpu_indexes": devices,
        }

    return Cluster.model_validate(
        {
            "time_s": 1000,
            "nodes": [{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 512, "numa": numa}],
            "pods": [
                pod("d0", [0], 900),
                pod("d1", [1], 990),
                pod("d2", [2], 950),
                pod("d4", [4], 999),
                pod("d5", [5], 999),
                pod("c67", [6, 7], 998, 500),
                {"name": "b", "gpus": 4, "cpus": 32, "job": "B", "priority_value": 1000},
            ],
            "jobs": [{"name": "B", "numa": {"mode": "guaranteed"}}],
        }
    )


def standby_cluster(hp_gpus: int) -> Cluster:
    """An 8-GPU node: a standby HP pod reserving 4 GPUs it lent, spot pods x and y on all 8."""
    return Cluster.model_validate(
        {
            "time_s": 100,
            "nodes": [{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 64}],
            "pods": [
                {"name": "s", "gpus": 4, "cpus": 1, "node": "n0", "standby": True},
                {"name": "x", "gpus": 4, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 90},
                {"name": "y", "gpus": 4, "cpus": 1, "node": "n0", "priority": "LP", "started_s": 50},
                {"name": "h", "gpus": hp_gpus, "cpus": 1, "job": "hp"},
            ],
            "jobs": [{"name": "hp"}],
        }
    )
