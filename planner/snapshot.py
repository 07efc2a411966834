"""Reading and writing snapshot files: parse, check everything, dump.

A snapshot is accepted only when every field is well-formed, every reference resolves and every pod
already placed obeys the rules of ``rules`` where it stands. Otherwise ``SnapshotError`` lists
each problem with its field path; the input is never repaired.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from planner import rules
from planner.cluster import (
    SNAPSHOT_VERSION,
    Cluster,
    SnapshotError,
    duplicate_key_problems,
    validated_json,
)
from planner.runtime.gc_pause import collector_paused
from planner.snapshot_checks import reference_problems

MAX_INPUT_BYTES = 1 << 30
"""The largest file a command reads (1 GiB): a 37,707-node snapshot is 26 MB, the largest kubectl List
the importer reads 128 Mi characters; a larger file is refused before it is read, not read into memory."""


def read_text(path: str | Path, what: str = "snapshot", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """Read a file ('-' is stdin) of at most ``max_bytes`` bytes, or raise SnapshotError naming it."""
    too_large = f"{what}: '{path}' is larger than {max_bytes:,} bytes, the most a planner command reads"
    if str(path) == "-":
        data = sys.stdin.buffer.read(max_bytes + 1) if hasattr(sys.stdin, "buffer") else sys.stdin.read(max_bytes + 1).encode()
        if len(data) > max_bytes:
            raise SnapshotError([too_large])
        return _decoded(data, what, path)
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > max_bytes:  # a regular file: refused before it is read
                raise SnapshotError([too_large])
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise SnapshotError([f"{what}: no such file '{path}'"]) from None
    except IsADirectoryError:
        raise SnapshotError([f"{what}: '{path}' is a directory, not a file"]) from None
    except OSError as err:
        raise SnapshotError([f"{what}: cannot read '{path}': {err}"]) from None
    if len(data) > max_bytes:
        raise SnapshotError([too_large])
    return _decoded(data, what, path)


def _decoded(data: bytes, what: str, path: str | Path) -> str:
    """``data`` as UTF-8 text with universal newlines (as text mode reads it), or SnapshotError naming
    the first byte that is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SnapshotError([f"{what}: cannot read '{path}': not UTF-8 text (byte {err.start:,})"]) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


M = TypeVar("M", bound=BaseModel)


def parse_cluster(text: str | bytes, source: str = "snapshot") -> Cluster:
    """Parse and check a snapshot; raise SnapshotError listing every problem."""
    cluster = parse_checked(text, Cluster, source, consistency_problems)
    share_fields_sets([*cluster.nodes, *cluster.pods, *cluster.jobs])
    return cluster


def share_fields_sets(models: list[Any]) -> None:
    """Models read with the same fields given hold one ``__pydantic_fields_set__`` between them.
    pydantic keeps a set of the given field names per model: at 37,707 nodes and 93,990 pods that was
    91 MiB of a 702 MiB plan (issue 62), and a snapshot's pods are given a handful of field lists.
    The sets are only read (``model_fields_set``, ``exclude_unset``; a copy gets its own): the planner
    assigns no field of a snapshot's node, pod or job, the one thing that would add to a shared set."""
    shared: dict[frozenset[str], set[str]] = {}
    for model in models:
        given = model.__pydantic_fields_set__
        object.__setattr__(model, "__pydantic_fields_set__", shared.setdefault(frozenset(given), given))


def parse_checked(text: str | bytes, model: type[M], source: str, problems_of: Callable[[M], list[str]]) -> M:
    """JSON text as a ``model`` (duplicate keys and every field checked), then ``problems_of`` the
    value; raise SnapshotError naming each problem."""
    with collector_paused():  # see runtime/gc_pause.py
        duplicates = duplicate_key_problems(text, source)
        if duplicates:
            raise SnapshotError(duplicates)
        value = validated_json(model, text, source)
        problems = problems_of(value)
    if problems:
        raise SnapshotError(problems)
    return value


def consistency_problems(cluster: Cluster) -> list[str]:
    """Everything wrong with a well-formed snapshot: references first, then the rules in place."""
    problems = reference_problems(cluster)
    return problems or placement_problems(cluster)  # the placement checks need sound references


def load_cluster(path: str | Path) -> Cluster:
    """Read and check a snapshot file ('-' for stdin)."""
    return parse_cluster(read_text(path), source=str(path))


def cluster_to_dict(cluster: Cluster) -> dict[str, Any]:
    """JSON-ready dict; fields at their default are left out, except ``version``."""
    data = cluster.model_dump(mode="json", exclude_defaults=True)
    return {"version": SNAPSHOT_VERSION, **data}


def dump_cluster(cluster: Cluster, indent: int | None = None) -> str:
    return json.dumps(cluster_to_dict(cluster), indent=indent)


def write_cluster(cluster: Cluster, path: str | Path, indent: int | None = None) -> None:
    """Write a snapshot ('-' for stdout)."""
    text = dump_cluster(cluster, indent=indent)
    if str(path) == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(path).write_text(text + "\n", encoding="utf-8")


def placement_problems(cluster: Cluster) -> list[str]:
    """Nodes over capacity, and pods whose current node breaks one of their own rules."""
    problems = []
    pod_row = {pod.name: i for i, pod in enumerate(cluster.pods)}
    by_node = cluster.pods_by_node()
    for i, node in enumerate(cluster.nodes):
        residents = by_node[node.name]
        for shortfall in rules.resource_shortfalls(node, residents):
            problems.append(f"nodes[{i}]: over capacity in the snapshot itself: {shortfall}")
        for pod in residents:
            where = f"pods[{pod_row[pod.name]}].node"
            if not rules.gpu_model_allowed(pod, node):
                problems.append(f"{where}: pod '{pod.name}' allows GPU models {pod.gpu_models} but node '{node.name}' has '{node.gpu_model}'")
            if not rules.selector_matches(pod, node):
                problems.append(f"{where}: node '{node.name}' labels {node.labels} do not satisfy the pod's node_selector {pod.node_selector}")
        for group, a, b in rules.anti_affinity_conflicts(residents):
            problems.append(f"pods[{pod_row[b]}].node: pods '{a}' and '{b}' share anti_affinity group '{group}' but both run on node '{node.name}'")
    node_by_name = {node.name: node for node in cluster.nodes}
    placed_by_job: dict[str, list] = defaultdict(list)
    for pod in cluster.pods:
        if pod.job is not None and pod.node is not None:
            placed_by_job[pod.job].append(node_by_name[pod.node])
    for j, job in enumerate(cluster.jobs):
        placed = placed_by_job.get(job.name, [])
        if not rules.job_topology_ok(job, placed):
            level = job.topology.level if job.topology else ""
            domains = sorted({rules.topology_domain(n, level) for n in placed})
            problems.append(f"jobs[{j}].topology: job '{job.name}' requires one {level} but its pods span {', '.join(domains)}")
    return problems
