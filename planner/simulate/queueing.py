"""Queueing replays of gang jobs on a GPU cluster: Kant's policies and metrics (Kant, §3-5).

The cluster: ``nodes`` nodes of ``gpus_per_node`` GPUs in leaf groups (NodeNetGroups) of
``group_nodes`` nodes, split into GPU pools (node pools by GPU type: consecutive whole leaf groups;
one pool, ``default``, unless ``QueueCluster.pools`` says otherwise). A job asks for G GPUs of one pool:
one pod of G GPUs when G fits a node, else G / gpus_per_node whole-node pods; a job starts all its
pods at once or waits (gang).

Queues, one per tenant, each ordered by priority, then submission time, then size, smaller first
(Kant leaves the direction of the size tiebreak open). Jobs are offered across the queues in that
same order; a blocked head blocks only its own tenant's queue:

* ``strict-fifo``: only a tenant's head may start; a blocked head blocks the jobs behind it;
* ``best-effort``: any job that fits starts, in queue order (blocked jobs are skipped);
* ``backfill``: as best-effort, but once a tenant's blocked head has waited ``timeout_s`` the jobs of
  its queue that passed it while it waited (backfilled) are preempted, most recent first, until the
  head fits (none is, if all of them would not make room); a preempted job loses its progress and
  re-enters the queue at its original submission time (Kant's timeout preemption and requeue; no
  runtime estimates). A job started in order is never a victim.

Admission has two tiers, as in Kant: the quota, then room. ``quotas`` gives GPUs per (tenant, pool);
without it every job passes the first tier. ``isolated``: a tenant's running GPUs in a pool stay
within its quota. ``shared``: a tenant may also borrow the pool's unused quota (the pool's running
GPUs stay within the sum of its quotas); when a job within its own quota is blocked for room, the
jobs of tenants running above their quota in that pool are preempted (quota reclamation), most
recent first and only while their tenant is still above its quota, until it fits.

Placement of a job's pods in its pool: ``spread``, ``binpack``, ``e-binpack``, ``e-spread``
(``heuristics/queue_placement.py``).

Defrag when stuck (``stuck_after_s``): when a blocked head has waited that long for room (not for
quota), the planner's own make-room (``planner.engine.defrag.plan_defrag`` with ``make_room``, the
validated plan; ``simulate/queue_defrag.py`` builds the snapshot) is asked for at most
``make_room_moves`` migrations that let it start. Only pods smaller than a node move (gangs spanning
nodes and node-sized pods are locked). A moved job is set back ``migration_cost_s`` (its end moves
later by that: a checkpoint-restart), counted as migration GPU-hours. After a failed attempt the head
is tried again only ``stuck_after_s`` later.

Metrics (``queue_row``): GAR time-averaged and SOR (allocated GPU-hours over available: the same
number for a replay, as Kant's two definitions coincide when accrual starts at binding), per tenant
too, GFR (share of nodes partly allocated, time-averaged), JWTD (mean wait from submission to start,
per job-size bucket), JTTEd (nodes used over ceil(G / GPUs per node) and groups over the fewest
groups that hold those nodes), preemptions (backfill and quota reclamation), make-room calls, moves
and their cost.
"""

from __future__ import annotations

from planner.heuristics.queue_placement import PLACEMENTS
from planner.instances.queue_workload import QueueCluster, QueuedJob
from planner.simulate.queue_results import Outcome, QueueReplay
from planner.simulate.queue_sim import POLICIES, QUOTA_MODES, _Sim, place, pods_of


def replay(
    cluster: QueueCluster,
    jobs: list[QueuedJob],
    policy: str,
    placement: str,
    timeout_s: float = 3600.0,
    horizon_s: float | None = None,
    measure_from_s: float = 0.0,
    *,
    quotas: dict[tuple[str, str], int] | None = None,
    quota_mode: str = "shared",
    zone_nodes: int = 0,
    stuck_after_s: float | None = None,
    make_room_moves: int = 64,
    migration_cost_s: float = 300.0,
) -> QueueReplay:
    """Replay ``jobs`` (submission order need not be sorted) until every job ends or ``horizon_s``;
    allocation and fragmentation are integrated from ``measure_from_s`` on. Raises ``ValueError``
    naming the option or job that cannot be replayed."""
    return _Sim(
        cluster, jobs, policy, placement, timeout_s, horizon_s, measure_from_s, quotas, quota_mode, zone_nodes, stuck_after_s, make_room_moves, migration_cost_s
    ).run()


__all__ = ["PLACEMENTS", "POLICIES", "QUOTA_MODES", "Outcome", "QueueReplay", "place", "pods_of", "replay"]
