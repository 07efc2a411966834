"""Spot simulation (issue 14): a deterministic event-driven replay of HP and spot jobs on a cluster,
every scheduling decision made by the planner's own preemption code (``gang.place_job`` with the
policy of ``plan_preempt``'s method), so the simulator judges exactly the code users run.

Events, in time order; ties: finishes, then standby windows opening, then closing, then arrivals, each
by job name, so a replay is a function of its input:

* a job arrives and queues;
* a run finishes;
* an HP job's standby window opens: if it runs, its pods go on standby on their nodes (they keep a
  reservation and lend their GPUs and CPUs to spot pods, ASI's Standby); if it does not run yet,
  the window is ignored;
* the window closes: each pod wakes on its node, evicting spot pods there at the least lost work
  (``plan_reactivate``'s decision).

After the events of an instant, pending jobs are offered HP first, then by submit time and name; a
job that cannot start stays pending while later ones may start (backfilling). A start may evict
victim jobs (whole gangs): each loses the run's work since its last checkpoint and queues again with
the rest of its work. Runs after the first pay ``restart_overhead_s`` before progressing; a run
checkpoints every ``checkpoint_interval_s`` of progress (at start + overhead + k x interval). So a
victim evicted at t after a run that began at s keeps k x interval of progress and loses
GPUs x (t - s - kept) GPU-seconds (its overhead included); the planner decides on the same cost
(``Window.lost_gpu_s`` gives it each pod's cost from its last checkpoint). HP jobs are never victims.

Speed: the state is one ``PreemptState`` over a window of the workload (running, pending and the next
``window_jobs`` arrivals), mutated decision by decision and rebuilt when the window runs out. A job
that failed to start proves that every pending job of the same shape fails too until capacity is
freed where such a pod fits (a spot job's pods are alike and start without preemption, so its
greedy placement fails only when the nodes together cannot hold them; an HP job's failure counts
only when the planner proves it), so those jobs are not offered again until then. A gang whose
pods fit on freed nodes stays stale while the nodes together leave room for fewer of its pods than
it has, counting GPUs alone (``Window.gpu_places_bound``, cached until the state changes; it also
settles most proofs before the exact count). ``reoffer_all=True`` offers every job every time: the
same replay, slower; tests compare.

``check=True`` (the tests) rebuilds every decision as a snapshot, asks ``plan_preempt`` (or
``plan_reactivate``) for its validated plan there and requires the same placements and victims, and
checks every node of every state reached with ``rules.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from planner.cluster import Node
from planner.instances.spot_workload import SimJob
from planner.simulate.spot_policies import MAX_SEED, POLICIES, make_policy, policy_problem
from planner.simulate.spot_replay import _Replayer
from planner.simulate.spot_results import Replay


def simulate(
    nodes: list[Node],
    jobs: list[SimJob],
    policy: str = "spotgpu",
    restart_overhead_s: float = 0.0,
    seed: int = 0,
    check: bool = False,
    reoffer_all: bool = False,
    window_jobs: int = 5000,
    progress: Callable[[float], None] | None = None,
) -> Replay:
    """Replay ``jobs`` on ``nodes`` with ``policy`` until every job finishes (or none can start any
    more). ``progress(now_s)`` is called as time advances (a progress bar)."""
    problem = policy_problem(policy)
    if problem:
        raise ValueError(problem)
    if not math.isfinite(restart_overhead_s) or restart_overhead_s < 0:
        raise ValueError(f"restart_overhead_s: must be at least 0, got {restart_overhead_s}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed: must be in [0, {MAX_SEED}], got {seed}")
    if window_jobs < 1:
        raise ValueError(f"window_jobs: must be at least 1, got {window_jobs}")
    names = [j.name for j in jobs]
    if len(set(names)) != len(names):
        raise ValueError("jobs: names must be unique")
    return _Replayer(nodes, jobs, policy, restart_overhead_s, seed, check, reoffer_all, window_jobs, progress).run()


__all__ = ["POLICIES", "make_policy", "policy_problem", "simulate"]
