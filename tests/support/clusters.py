"""Small hand-made clusters from plain dicts: an 8-GPU node, a pod, a checked cluster."""

from __future__ import annotations

import json
from typing import Any

from planner.cluster import Cluster
from planner.snapshot import parse_cluster


def node(name: str, **fields: Any) -> dict[str, Any]:
    """An 8-GPU node dict with 64 CPUs and 512 GiB unless told otherwise."""
    return {"name": name, "gpus": 8, "cpus": 64, "memory_gib": 512, **fields}


def pod(name: str, on: str | None, gpus: float = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "node": on, "gpus": gpus, "cpus": fields.pop("cpus", 1), **fields}


def make_cluster(nodes: list[dict], pods: list[dict] = (), jobs: list[dict] = (), **top: Any) -> Cluster:
    """A checked cluster from plain dicts (raises SnapshotError when inconsistent)."""
    return parse_cluster(json.dumps({"nodes": nodes, "pods": list(pods), "jobs": list(jobs), **top}))
