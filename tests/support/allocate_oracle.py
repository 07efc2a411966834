"""An independent brute force for topology allocation, over plain snapshot dicts (nothing here
imports the planner).

Semantics, re-read from the README: pending jobs start all their pods, or at least ``min_available``
of them (more may start), or not at all; a pod goes on schedulable nodes of its ``gpu_models`` and
``node_selector``, never beside a pod sharing an ``anti_affinity`` group; each node holds its GPUs (whole GPUs plus the fewest devices
the GPU shares pack on, a share being a request below 1), CPUs and memory (1e-9 of slack); a
``required`` job sits under one domain of its level. Domains: a node without an ``asw`` is an access
switch of its own; its spine is its ``spine``, else its access switch. Plans are ranked
lexicographically: most GPUs started, then fewest access switches spanned (summed over jobs), then
least entropy over access switches (ASI Eq. 1 on GPUs, summed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from typing import Any

EPS = 1e-9
Key = tuple[float, int, float]


def asw_of(node: Mapping[str, Any]) -> str:
    return f"asw:{node['asw']}" if node.get("asw") else f"node:{node['name']}"


def spine_of(node: Mapping[str, Any]) -> str:
    return f"spine:{node['spine']}" if node.get("spine") else asw_of(node)


def entropy(counts: list[float]) -> float:
    total = sum(counts)
    return max(0.0, -sum(c / total * math.log(c / total) for c in counts if c > 0)) if total else 0.0


@cache
def devices_for(shares: tuple[float, ...]) -> int:
    """The fewest devices of capacity 1 the shares pack on (exhaustive: the sets are tiny)."""
    best = [len(shares)]

    def put(i: int, fills: list[float]) -> None:
        if len(fills) >= best[0]:
            return
        if i == len(shares):
            best[0] = len(fills)
            return
        for d in range(len(fills)):
            if fills[d] + shares[i] <= 1 + EPS:
                fills[d] += shares[i]
                put(i + 1, fills)
                fills[d] -= shares[i]
        put(i + 1, [*fills, shares[i]])

    put(0, [])
    return best[0]


class Load:
    """What a node holds: whole GPUs, its shares, CPUs, memory, the anti-affinity groups of the pods
    placed by the plan (``groups``) and of those running there (``running_groups``: a conflict among
    running pods is not the plan's doing)."""

    def __init__(self, node: Mapping[str, Any]):
        self.node = node
        self.whole, self.shares, self.cpus, self.memory, self.groups = 0.0, (), 0.0, 0.0, ()
        self.running_groups: set[str] = set()

    def add(self, pod: Mapping[str, Any], k: int, sign: int = 1) -> None:
        if not k:
            return
        g = pod["gpus"]
        if 0 < g < 1:
            self.shares = tuple(sorted((*self.shares, *[g] * k), reverse=True)) if sign > 0 else _without(self.shares, g, k)
        else:
            self.whole += sign * k * g
        self.cpus += sign * k * pod.get("cpus", 0)
        self.memory += sign * k * pod.get("memory_gib", 0)
        if pod.get("anti_affinity"):
            groups = list(pod["anti_affinity"]) * k
            self.groups = (*self.groups, *groups) if sign > 0 else _without(self.groups, None, 0, groups)

    def holds(self) -> bool:
        return (
            len(self.groups) == len(set(self.groups))
            and not self.running_groups.intersection(self.groups)
            and self.whole + devices_for(self.shares) <= self.node["gpus"]
            and self.cpus <= self.node["cpus"] + EPS
            and self.memory <= self.node.get("memory_gib", 0) + EPS
        )


def room_for(here: Load, pod: Mapping[str, Any], most: int) -> int:
    """How many more pods like ``pod`` (up to ``most``) the node of ``here`` holds."""
    if not allowed(pod, here.node):
        return 0
    g = pod["gpus"]
    if 0 < g < 1 or pod.get("anti_affinity"):  # one at a time, by the rules' own check
        k = 0
        while k < most:
            here.add(pod, 1)
            if not here.holds():
                here.add(pod, 1, -1)
                break
            k += 1
        here.add(pod, k, -1)
        return k
    if not here.holds():
        return 0
    free = (here.node["gpus"] - here.whole - devices_for(here.shares), here.node["cpus"] - here.cpus + EPS, here.node.get("memory_gib", 0) - here.memory + EPS)
    for room, each in zip(free, (g, pod.get("cpus", 0), pod.get("memory_gib", 0))):
        if each > 0:
            most = min(most, math.floor(room / each))
    return max(0, int(most))


def _without(items: tuple, value: Any, k: int, values: list | None = None) -> tuple:
    out = list(items)
    for v in values if values is not None else [value] * k:
        out.remove(v)
    return tuple(out)


def allowed(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """The pod's GPU models and node selector, and the node schedulable."""
    models = pod.get("gpu_models") or []
    labels = node.get("labels") or {}
    return (
        node.get("schedulable", True)
        and (not models or node.get("gpu_model", "") in models)
        and all(labels.get(k) == v for k, v in (pod.get("node_selector") or {}).items())
    )


def key_of(snapshot: Mapping[str, Any], where: Mapping[str, str]) -> Key:
    """(GPUs started, access switches spanned, entropy) of pod -> node placements."""
    nodes = {n["name"]: n for n in snapshot["nodes"]}
    per_job: dict[str, dict[str, float]] = {}
    gpus = 0.0
    for pod in snapshot["pods"]:
        if pod["name"] in where:
            d = asw_of(nodes[where[pod["name"]]])
            per_job.setdefault(pod["job"], {}).setdefault(d, 0.0)
            per_job[pod["job"]][d] += pod["gpus"]
            gpus += pod["gpus"]
    return round(gpus, 9), sum(len(v) for v in per_job.values()), sum(entropy(list(v.values())) for v in per_job.values())


def better(a: Key, b: Key) -> bool:
    return (a[0], -a[1], -a[2]) > (b[0], -b[1], -b[2] + 1e-12)


def optimum(snapshot: Mapping[str, Any]) -> Key:
    """The lexicographic optimum over every placement of the pending jobs (each job: not started, or
    every vector of pod counts per node with at least its minimum)."""
    nodes = list(snapshot["nodes"])
    load = {n["name"]: Load(n) for n in nodes}
    for pod in snapshot["pods"]:
        if pod.get("node"):
            load[pod["node"]].add({**pod, "anti_affinity": []}, 1)
            load[pod["node"]].running_groups.update(pod.get("anti_affinity") or [])
    jobs = []
    for job in snapshot["jobs"]:
        pending = [p for p in snapshot["pods"] if p.get("job") == job["name"] and not p.get("node")]
        if not pending:
            continue
        topology = job.get("topology") or {}
        level = topology.get("level") if topology.get("mode") == "required" else None
        least = job.get("min_available") or len(pending)
        jobs.append((pending, least, level))
    best: list[Key] = [(0.0, 0, 0.0)]
    chosen: list[list[int]] = []

    def vectors(rooms: list[int], i: int, left: int):  # type: ignore[no-untyped-def]
        """Pods per node from node i on, exactly ``left`` in all, at most ``rooms[n]`` on node n."""
        if i == len(nodes):
            if left == 0:
                yield []
            return
        for k in range(min(rooms[i], left) + 1):
            for rest in vectors(rooms, i + 1, left - k):
                yield [k, *rest]

    def score() -> None:
        gpus, switches, h = 0.0, 0, 0.0
        for (pending, _, _), vector in zip(jobs, chosen):
            per: dict[str, float] = {}
            for n, k in enumerate(vector):
                if k:
                    per[asw_of(nodes[n])] = per.get(asw_of(nodes[n]), 0.0) + k * pending[0]["gpus"]
            gpus += sum(vector) * pending[0]["gpus"]
            switches += len(per)
            h += entropy(list(per.values()))
        key = (round(gpus, 9), switches, h)
        if better(key, best[0]):
            best[0] = key

    def walk(i: int) -> None:
        if i == len(jobs):
            score()
            return
        pending, least, level = jobs[i]
        rooms = [room_for(load[n["name"]], pending[0], len(pending)) for n in nodes]  # nodes are independent
        every = [[0] * len(nodes)] + [v for total in range(least, len(pending) + 1) for v in vectors(rooms, 0, total)]
        for vector in every:
            domain = asw_of if level == "asw" else spine_of
            if level and len({domain(nodes[n]) for n, k in enumerate(vector) if k}) > 1:
                continue
            # the pods of one job are alike: which of them go where does not matter
            for n, k in enumerate(vector):
                load[nodes[n]["name"]].add(pending[0], k)
            chosen.append(vector)
            walk(i + 1)
            chosen.pop()
            for n, k in enumerate(vector):
                load[nodes[n]["name"]].add(pending[0], k, -1)

    walk(0)
    return best[0]
