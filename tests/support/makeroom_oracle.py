"""A brute force for make-room: the fewest single legal moves after which a pending request can start,
by breadth-first search over placements with every assignment of the request tried (tiny clusters)."""

from __future__ import annotations

import numpy as np

from planner import rules
from planner.cluster import Cluster


def _fits_after(c: Cluster, where: dict[str, str | None], pods: list, jobs: dict) -> bool:
    """Can the pending ``pods`` (one request) start on the state ``where``? Every assignment tried."""
    nodes = {n.name: n for n in c.nodes}
    residents: dict[str, list] = {n: [] for n in nodes}
    for pod in c.pods:
        if where[pod.name] is not None:
            residents[where[pod.name]].append(pod)
    for assignment in np.ndindex(*([len(c.nodes)] * len(pods))):
        chosen = [c.nodes[k].name for k in assignment]
        job = jobs.get(pods[0].job)
        if job is not None and not rules.job_topology_ok(job, [nodes[n] for n in chosen]):
            continue
        arriving: dict[str, list] = {}
        for pod, n in zip(pods, chosen):
            arriving.setdefault(n, []).append(pod)
        if all(not rules.node_rule_breaks(nodes[n], residents[n], a) for n, a in arriving.items()):
            return True
    return False


def oracle_min_moves(c: Cluster, names: list[str], most: int = 3) -> int | None:
    """Fewest single legal moves after which the named request can start (None: not within ``most``)."""
    (name,) = names
    pods = [p for p in c.pods if p.node is None and (p.job == name or p.name == name)]
    jobs = {j.name: j for j in c.jobs}
    nodes = {n.name: n for n in c.nodes}
    by_name = {p.name: p for p in c.pods}
    start = {p.name: p.node for p in c.pods}
    frontier, seen = [start], {tuple(sorted(start.items(), key=lambda kv: kv[0]))}
    for depth in range(most + 1):
        if any(_fits_after(c, where, pods, jobs) for where in frontier):
            return depth
        following = []
        for where in frontier:
            for pod in c.pods:
                source = where[pod.name]
                if source is None or pod.locked:
                    continue
                for n in nodes:
                    if n == source:
                        continue
                    here = [by_name[q] for q, at in where.items() if at == n]
                    if rules.node_rule_breaks(nodes[n], here, [pod]):
                        continue
                    job = jobs.get(pod.job)
                    if job is not None:
                        copies = [nodes[at] for q, at in where.items() if at is not None and by_name[q].job == pod.job] + [nodes[n]]
                        if not rules.job_topology_ok(job, copies):
                            continue
                    after = {**where, pod.name: n}
                    key = tuple(sorted(after.items(), key=lambda kv: kv[0]))
                    if key not in seen:
                        seen.add(key)
                        following.append(after)
        frontier = following
    return None
