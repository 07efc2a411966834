"""Hand-made allocation clusters the allocation, capacity and service tests share."""

from __future__ import annotations

from planner.cluster import Cluster


def switches_cluster(free_nodes: dict[str, int], job_pods: int, topology: dict | None = None) -> Cluster:
    """Empty 8-GPU nodes under switches (free_nodes: switch -> nodes) and one pending job of 1-GPU pods."""
    nodes = [{"name": f"{asw}-{k}", "gpus": 8, "cpus": 96, "memory_gib": 512, "asw": asw} for asw, count in free_nodes.items() for k in range(count)]
    pods = [{"name": f"j-{i}", "job": "j", "gpus": 1, "cpus": 12} for i in range(job_pods)]
    job = {"name": "j", **({"topology": topology} if topology else {})}
    return Cluster.model_validate({"nodes": nodes, "pods": pods, "jobs": [job]})
