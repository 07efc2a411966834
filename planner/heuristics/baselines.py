"""What operators use today, as defrag baselines that IPC must beat (benchmarks, compare mode).

* ``random``: evict the movable pods of under-utilised nodes (emptiest first) and re-place each on a
  uniformly random feasible node, as plain Kubernetes eviction plus the default scheduler's randomness
  would; the pod may land on an empty or another under-utilised node.
* ``descheduler``: kube-descheduler's HighNodeUtilization plus a binpacking scheduler: nodes whose GPU
  allocation is below the threshold are drained one pod at a time (emptiest node first), each pod
  re-placed by the MostAllocated scorer; a pod that fits nowhere else is not evicted (NodeFit).
* ``repack``: best-fit-decreasing repack of all movable pods from scratch, ignoring migration cost:
  a reference for how many nodes could be empty, not a plan operators would run. The target is
  reached through ``waves.target_to_waves``; moves it cannot execute are dropped and reported. It
  honours ``same_asw`` (each pod is repacked under its own switch); it has no notion of a migration
  budget, so the engine refuses ``max_moves`` and ``max_moves_per_node`` for it.

``random`` and ``descheduler`` honour every limit (``limits.MoveBudget``) like IPC, and move one pod
at a time with ``ClusterState.fits`` (through the scheduler), so their moves form a sequentially
legal sequence for ``waves.sequence_to_waves``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner.heuristics.scheduler import pick_node
from planner.limits import MoveBudget
from planner.state import PENDING, ClusterState
from planner.waves import Step, target_to_waves

BASELINES = ("random", "descheduler", "repack")


@dataclass
class BaselineResult:
    sequence: list[Step] = field(default_factory=list)
    waves: list[list[Step]] | None = None
    """Set when the method builds waves itself (repack); otherwise waves come from the sequence."""
    dropped: int = 0
    routed: int = 0
    target_vacated: int = 0
    """repack: nodes the target itself empties (before dropping moves it cannot execute)."""
    drained_nodes: int = 0


def under_utilised(state: ClusterState, threshold: float) -> np.ndarray:
    """GPU nodes holding pods whose GPU allocation is below ``threshold``, emptiest first."""
    allocated = state.allocated_gpus()
    share = np.divide(allocated, state.cap_gpus, out=np.ones(len(allocated)), where=state.cap_gpus > 0)
    nodes = np.flatnonzero((state.pods_per_node > 0) & (share < threshold) & (state.cap_gpus > 0))
    return nodes[np.lexsort((nodes, share[nodes]))]


def evict_and_replace(state: ClusterState, policy: str, threshold: float, seed: int, budget: MoveBudget) -> BaselineResult:
    """Drain under-utilised nodes pod by pod, re-placing each pod with the scheduler ``policy``
    on a node the limits allow (``budget`` is spent by the moves made)."""
    rng = np.random.default_rng(seed)
    result = BaselineResult()
    for n in under_utilised(state, threshold).tolist():
        pods = sorted((p for p in state.node_pods[n] if not state.pod_locked[p]), key=lambda p: (-state.pod_gpus[p], p))
        for p in pods:
            among = np.flatnonzero(budget.destinations(n))
            if len(among) == 0:
                break
            destination = pick_node(state, p, policy, rng, among)
            if destination == PENDING:
                continue
            state.move(p, destination)
            budget.spend(n, destination)
            result.sequence.append((p, n, destination))
        result.drained_nodes += int(state.pods_per_node[n] == 0)
    return result


def repack(state: ClusterState, budget: MoveBudget) -> BaselineResult:
    """Best-fit-decreasing target for every movable pod (under its switch when ``budget.asw`` is set),
    reached by make-before-break waves within ``budget``."""
    target = best_fit_decreasing(state, budget.asw)
    busy = state.pods_per_node > 0
    stays = np.zeros(len(state.node_names), dtype=bool)
    stays[[int(state.pod_node[p]) for p in range(len(state.pod_names)) if state.pod_locked[p] and state.pod_node[p] != PENDING]] = True
    stays[list(target.values())] = True
    plan = target_to_waves(state, target, budget)
    budget.spend_all(plan.waves)
    return BaselineResult(waves=plan.waves, dropped=len(plan.dropped), routed=plan.routed, target_vacated=int((busy & ~stays).sum()))


def best_fit_decreasing(state: ClusterState, asw: np.ndarray | None = None) -> dict[int, int]:
    """Node of every movable placed pod after repacking them all, largest first, into the fewest nodes.

    Each pod goes to the feasible node holding pods that is left with the fewest free GPUs (then
    CPUs), preferring its current node on ties; a new (empty) node is opened only when no busy node
    fits, its own node first. A pod that fits nowhere keeps its node. With ``asw`` (a switch per
    node) a pod is repacked only onto nodes of its own switch.
    """
    scratch = state.clone()
    movable = [p for p in range(len(state.pod_names)) if state.pod_node[p] != PENDING and not state.pod_locked[p]]
    home = {p: int(state.pod_node[p]) for p in movable}
    for p in movable:
        scratch.unplace(p)
    order = sorted(movable, key=lambda p: (-state.pod_gpus[p], -state.pod_cpus[p], p))
    target = {}
    for p in order:
        allowed = scratch.feasible_nodes(p)
        if asw is not None:
            allowed &= asw == asw[home[p]]
        options = np.flatnonzero(allowed)
        if len(options) == 0:
            target[p] = home[p]
            continue
        busy = scratch.pods_per_node[options] > 0
        if busy.any():
            options = options[busy]
        elif home[p] in set(options.tolist()):
            options = np.array([home[p]])
        free_dev = scratch.free_devices()[options] - scratch.pod_whole[p]
        free_cpu = scratch.cap_cpus[options] - scratch.used_cpus[options] - scratch.pod_cpus[p]
        not_home = options != home[p]
        n = int(options[np.lexsort((options, not_home, free_cpu, free_dev))[0]])
        scratch.place(p, n)
        target[p] = n
    return target
