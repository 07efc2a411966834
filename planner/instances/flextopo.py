"""Seeded FlexTopo clusters: the paper's KWOK experiment (Sec. 5, Table 3), saturated from the start.

The hardware (Sec. 2.2 and 5): every node is an RTX 4090 server, 8 GPUs, 64 CPUs, 2 sockets and 8
NUMA domains, one GPU and 8 CPUs per domain, GPUs 0-3 on socket 0 and 4-7 on socket 1. The paper gives
no memory size; nodes get 512 GiB and pods 32 GiB per GPU, so memory never decides a fit.

The workload (Table 3), one single-pod job per instance, 8 CPUs per GPU:

==========  ========  =====  =========  ==================  ===============================
workload    priority  class  GPUs/pod   instances at 100    job ``numa``
==========  ========  =====  =========  ==================  ===============================
A           1500      HP     8          20                  best-effort (see below)
B           1000      HP     4          40                  guaranteed
C           500       LP     2          200                 none (checkpoint every 1800 s)
D           200       LP     1          80                  none (no checkpoints)
==========  ========  =====  =========  ==================  ===============================

Counts scale with ``nodes`` (100 nodes give exactly Table 3 and use all 800 GPUs); at any size every
GPU and every CPU is taken. A ``guaranteed`` pod needs all its GPUs on one socket, which an 8-GPU pod
on a 4-GPU socket can never have, so A is ``best-effort``: a pending A would otherwise be unplaceable.

The packing: A on whole nodes, B on whole sockets, and the remaining sockets filled with C (two
devices of one socket) and D (one device) at device positions drawn with the seed. Every placed pod
holds ``gpu_indexes``; B, C and D sit on one socket, and with 8 CPUs per GPU each pod's CPUs come from
its own devices' domains. Mixing C and D inside sockets is what makes a topology-blind preemptor miss:
freeing 4 GPUs of one socket takes the right victims, not just enough of them.

Times: ``time_s`` is one day; HP pods started at some time that day, LP pods in its last 4 hours. C
pods carry ``checkpoint_interval_s`` 1800 and no ``checkpoint_s``: ``rules.last_checkpoint_s``
derives the last checkpoint from the start and the interval, so it stays right at any later decision
time. D pods never checkpoint (an eviction loses everything since the start).

``pending`` adds new single-pod jobs per workload (``{"B": 1}`` adds job ``B-new-0`` with one pending
4-GPU pod): the scale-ups the paper's hit rate counts. They draw nothing from the seed, so the placed
pods are the same with or without them.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from planner.cluster import Cluster, Job, JobNuma, Node, NumaDomain, Pod, SnapshotError
from planner.instances.asi import MAX_NODES, check_seed

GPU_MODEL = "RTX4090"
GPUS_PER_NODE = 8
SOCKETS = 2
GPUS_PER_SOCKET = GPUS_PER_NODE // SOCKETS
CPUS_PER_GPU = 8
NODE_CPUS = GPUS_PER_NODE * CPUS_PER_GPU
NODE_MEMORY_GIB = 512.0
MEMORY_GIB_PER_GPU = 32.0
TIME_S = 86_400.0
LP_AGE_S = 4 * 3600
"""LP pods started uniformly in the last ``LP_AGE_S`` seconds before ``time_s``."""
MAX_PENDING = 100_000


@dataclass(frozen=True)
class Workload:
    """One row of Table 3: priority, class, GPUs per instance and instances at 100 nodes."""

    priority_value: int
    priority: str
    gpus: int
    instances_at_100: int
    numa: str | None
    checkpoint_interval_s: float | None


WORKLOADS: dict[str, Workload] = {
    "A": Workload(1500, "HP", 8, 20, "best-effort", None),
    "B": Workload(1000, "HP", 4, 40, "guaranteed", None),
    "C": Workload(500, "LP", 2, 200, None, 1800.0),
    "D": Workload(200, "LP", 1, 80, None, None),
}


def flextopo_cluster(nodes: int = 100, seed: int = 0, pending: dict[str, int] | None = None) -> Cluster:
    """FlexTopo's saturated KWOK cluster of ``nodes`` RTX 4090 servers (Table 3 scaled to ``nodes``),
    plus ``pending[letter]`` pending single-pod jobs of each workload letter."""
    _check_arguments(nodes, pending)
    check_seed(seed)
    rng = np.random.default_rng(seed)
    counts = instance_counts(nodes)
    node_objects = _nodes(nodes)
    names = [n.name for n in node_objects]
    pods: list[Pod] = []
    jobs: list[Job] = []
    for letter, (node_index, devices) in _packing(nodes, counts, rng).items():
        work = WORKLOADS[letter]
        for i, (n, held) in enumerate(zip(node_index, devices)):
            job = f"{letter}-{i}"
            pods.append(_pod(letter, job, names[n], held, _started_s(work, rng)))
            jobs.append(_job(letter, job))
    for letter, count in sorted((pending or {}).items()):
        for i in range(count):
            job = f"{letter}-new-{i}"
            pods.append(_pod(letter, job, None, None, None))
            jobs.append(_job(letter, job))
    return Cluster(time_s=TIME_S, nodes=node_objects, pods=pods, jobs=jobs)


def instance_counts(nodes: int) -> dict[str, int]:
    """Instances per workload for ``nodes`` nodes: Table 3 scaled (half up), C and D adjusted so
    every GPU is taken (at 100 nodes exactly 20, 40, 200, 80)."""
    a = _scaled(WORKLOADS["A"].instances_at_100, nodes)
    b = _scaled(WORKLOADS["B"].instances_at_100, nodes)
    if 2 * a + b > SOCKETS * nodes:  # only for a handful of nodes
        b = max(0, SOCKETS * nodes - 2 * a)
    left_gpus = GPUS_PER_SOCKET * (SOCKETS * nodes - 2 * a - b)
    d = min(_scaled(WORKLOADS["D"].instances_at_100, nodes), left_gpus)
    c = (left_gpus - d) // 2
    return {"A": a, "B": b, "C": c, "D": left_gpus - 2 * c}


def _scaled(at_100: int, nodes: int) -> int:
    return (at_100 * nodes + 50) // 100


def _check_arguments(nodes: int, pending: dict[str, int] | None) -> None:
    problems = []
    if isinstance(nodes, bool) or not isinstance(nodes, numbers.Integral) or not 1 <= nodes <= MAX_NODES:
        problems.append(f"--nodes: must be a whole number from 1 to {MAX_NODES:,}, got {nodes!r}")
    if pending is not None and not isinstance(pending, dict):
        problems.append(f"--pending: must map workload letters to counts, got {pending!r}")
    for letter, count in (pending or {}).items() if isinstance(pending, dict) else ():
        if letter not in WORKLOADS:
            problems.append(f"--pending: unknown workload {letter!r}; choose {', '.join(WORKLOADS)}")
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or not 0 <= count <= MAX_PENDING:
            problems.append(f"--pending: {letter}: must be a whole number from 0 to {MAX_PENDING:,}, got {count!r}")
    if problems:
        raise SnapshotError(problems)


# ----------------------------------------------------------------------------------------------
# Nodes and packing
# ----------------------------------------------------------------------------------------------


def _nodes(count: int) -> list[Node]:
    """RTX 4090 servers: NUMA domain g holds GPU g and 8 CPUs, on socket g // 4."""
    numa = [NumaDomain(name=f"numa{g}", gpu_indexes=[g], cpus=float(CPUS_PER_GPU), socket=g // GPUS_PER_SOCKET) for g in range(GPUS_PER_NODE)]
    width = len(str(count - 1))
    return [
        Node(
            name=f"node-{i:0{width}d}",
            gpu_model=GPU_MODEL,
            gpus=GPUS_PER_NODE,
            cpus=float(NODE_CPUS),
            memory_gib=NODE_MEMORY_GIB,
            numa=[d.model_copy() for d in numa],
        )
        for i in range(count)
    ]


Layout = dict[str, tuple[list[int], list[list[int]]]]
"""Per workload letter: the node index and the devices of each instance."""


def _packing(nodes: int, counts: dict[str, int], rng: np.random.Generator) -> Layout:
    """Per workload, the node and the devices of each instance: A on whole nodes, B on whole sockets,
    C and D mixed at random positions inside the remaining sockets."""
    order = rng.permutation(nodes).tolist()
    a_nodes, rest = order[: counts["A"]], order[counts["A"] :]
    sockets = [(n, s) for n in rest for s in range(SOCKETS)]
    sockets = [sockets[k] for k in rng.permutation(len(sockets)).tolist()]
    b_sockets, cd_sockets = sockets[: counts["B"]], sockets[counts["B"] :]
    placed: Layout = {
        "A": (a_nodes, [list(range(GPUS_PER_NODE)) for _ in a_nodes]),
        "B": ([n for n, _ in b_sockets], [_socket_devices(s) for _, s in b_sockets]),
        "C": ([], []),
        "D": ([], []),
    }
    # Each C/D socket has two device pairs; C instances take ``counts["C"]`` of the pairs at random,
    # D instances the single devices left; the devices of each socket are shuffled first.
    c_pairs = np.zeros(2 * len(cd_sockets), dtype=bool)
    c_pairs[rng.choice(len(c_pairs), size=counts["C"], replace=False)] = True
    for k, (n, s) in enumerate(cd_sockets):
        devices = [_socket_devices(s)[j] for j in rng.permutation(GPUS_PER_SOCKET).tolist()]
        for half in range(2):
            pair = devices[2 * half : 2 * half + 2]
            if c_pairs[2 * k + half]:
                placed["C"][0].append(n)
                placed["C"][1].append(sorted(pair))
            else:
                for g in pair:
                    placed["D"][0].append(n)
                    placed["D"][1].append([g])
    return placed


def _socket_devices(socket: int) -> list[int]:
    return list(range(socket * GPUS_PER_SOCKET, (socket + 1) * GPUS_PER_SOCKET))


# ----------------------------------------------------------------------------------------------
# Pods and jobs
# ----------------------------------------------------------------------------------------------


def _started_s(work: Workload, rng: np.random.Generator) -> float:
    """HP pods started some time during the day, LP pods in its last ``LP_AGE_S`` seconds."""
    if work.priority == "HP":
        return float(rng.integers(0, int(TIME_S) - LP_AGE_S))
    return TIME_S - float(rng.integers(60, LP_AGE_S + 1))


def _pod(letter: str, job: str, node: str | None, devices: list[int] | None, started_s: float | None) -> Pod:
    work = WORKLOADS[letter]
    return Pod(
        name=f"{job}-0",
        job=job,
        node=node,
        gpus=float(work.gpus),
        cpus=float(work.gpus * CPUS_PER_GPU),
        memory_gib=work.gpus * MEMORY_GIB_PER_GPU,
        gpu_models=[GPU_MODEL],
        priority=work.priority,
        priority_value=work.priority_value,
        started_s=started_s,
        checkpoint_interval_s=work.checkpoint_interval_s,
        gpu_indexes=devices,
    )


def _job(letter: str, job: str) -> Job:
    mode = WORKLOADS[letter].numa
    return Job(name=job, numa=JobNuma(mode=mode) if mode else None)
