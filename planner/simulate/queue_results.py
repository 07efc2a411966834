"""What a queueing replay returns (``planner.simulate.queueing``): each job's ``Outcome`` and the
``QueueReplay`` with the integrals ``queue_metrics`` turns into Kant's measures."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.instances.queue_workload import QueueCluster, QueuedJob


@dataclass
class Outcome:
    """One job's replay: final start, end, nodes and groups spanned, preemptions, migrations."""

    start_s: float | None = None
    end_s: float | None = None
    nodes: int = 0
    groups: int = 0
    preempted: int = 0
    lost_gpu_s: float = 0.0  # GPU-seconds of runs preempted before they ended
    migrated: int = 0  # times make-room moved one of its pods
    started_by_make_room: bool = False


@dataclass
class QueueReplay:
    cluster: QueueCluster
    jobs: list[QueuedJob]
    outcomes: list[Outcome]
    horizon_s: float
    allocated_gpu_s: float  # integral of allocated GPUs over [measure_from_s, horizon]
    fragmented_node_s: float  # integral of partly allocated nodes over [measure_from_s, horizon]
    measure_from_s: float
    preemptions: int
    series: list[tuple[float, int]] = field(default_factory=list)  # (time, allocated GPUs) after each event
    tenant_gpu_s: dict[str, float] = field(default_factory=dict)  # per tenant, over [measure_from_s, horizon]
    reclaims: int = 0  # jobs preempted to give a tenant its quota back
    make_room_calls: int = 0
    make_room_starts: int = 0
    moves: int = 0
    migration_gpu_s: float = 0.0
    make_room_wall_s: float = 0.0


__all__ = ["Outcome", "QueueReplay"]
