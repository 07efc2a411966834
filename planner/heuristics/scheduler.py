"""The baseline scheduler: what a default Kubernetes cluster does with one pod, or one gang.

Filter, then score, as the kube-scheduler framework does: the feasible nodes come from
``ClusterState.feasible_nodes`` (the rules of ``rules``, never re-implemented here), a score from
``scoring.py`` ranks them, and ties are broken uniformly by the caller's seeded ``numpy`` generator, so
a run is deterministic for a given seed. Policies:

* ``spread``: LeastAllocated, Kubernetes' default;
* ``binpack``: MostAllocated;
* ``random``: uniform among the feasible nodes.

Every feasible node is scored: the filter is one vectorised pass over all nodes, so sampling a share
of them (kube-scheduler's ``percentageOfNodesToScore``) would save little and would make the baseline
weaker than it is. There is no preemption: a pod that does not fit is simply not placed.

A gang (the pods of one job) is placed all-or-nothing. A job with a ``required`` asw/spine topology
is placed inside one domain: candidate domains are ordered by the policy (most free room first for
spread, least for binpack, random for random) and tried until the whole gang fits; a ``preferred``
topology tries the same and falls back to no constraint. Any partial placement is rolled back.
"""

from __future__ import annotations

import numpy as np

from planner.heuristics.scoring import SCORES, gpus_allocated
from planner.state import PENDING, ClusterState

POLICIES = ("spread", "binpack", "random")
TIE = 1e-12


def check_policy(policy: str) -> None:
    """Raise ValueError for an unknown policy name."""
    if policy not in POLICIES:
        raise ValueError(f"unknown scheduling policy {policy!r}; choose one of {', '.join(POLICIES)}")


def pick_node(state: ClusterState, p: int, policy: str, rng: np.random.Generator, among: np.ndarray | None = None) -> int:
    """The node the policy would choose for pod p (among ``among`` if given), or -1; places nothing.

    For a placed pod this is where a copy could go (never its current node), as ``feasible_nodes`` says.
    """
    check_policy(policy)
    allocated = gpus_allocated(state)
    mask = state.feasible_nodes(p, among)
    candidates = np.flatnonzero(mask) if among is None else np.asarray(among)[mask]
    if len(candidates) == 0:
        return -1
    if policy != "random":
        scores = SCORES[policy](state, p, candidates, allocated)
        candidates = candidates[scores >= scores.max() - TIE]
    if len(candidates) == 1:
        return int(candidates[0])
    return int(candidates[rng.integers(len(candidates))])


def schedule_pod(state: ClusterState, p: int, policy: str, rng: np.random.Generator, among: np.ndarray | None = None) -> int:
    """Place pending pod p on the node the policy picks; return that node, or -1 when none is feasible."""
    if state.pod_node[p] != PENDING:
        raise ValueError(f"pod '{state.pod_names[p]}' is already placed; unplace it first")
    n = pick_node(state, p, policy, rng, among)
    if n >= 0:
        state.place(p, n)
    return n


def schedule_gang(state: ClusterState, pods: list[int], policy: str, rng: np.random.Generator) -> list[int] | None:
    """Place all of ``pods`` (pending pods of one job) or none; return their nodes in order, or None."""
    check_policy(policy)
    if not pods:
        return []
    level, required = _topology(state, pods[0])
    if level is None:
        return _place_all(state, pods, policy, rng, None)
    domain = state.asw_domain if level == "asw" else state.spine_domain
    for d in _candidate_domains(state, pods, domain, policy, rng):
        placed = _place_all(state, pods, policy, rng, np.flatnonzero(domain == d))
        if placed is not None:
            return placed
    return None if required else _place_all(state, pods, policy, rng, None)


def _topology(state: ClusterState, p: int) -> tuple[str | None, bool]:
    """(level, required) of pod p's job topology; (None, False) for none."""
    j = int(state.pod_job[p])
    if j < 0:
        return None, False
    if state.job_level[j]:
        return ("asw" if state.job_level[j] == 1 else "spine"), True
    topology = state.cluster.jobs[j].topology if state.cluster is not None else None
    if topology is None:
        return None, False  # (a state without its cluster cannot see a preferred topology)
    return topology.level, topology.mode == "required"


def _place_all(state: ClusterState, pods: list[int], policy: str, rng: np.random.Generator, among: np.ndarray | None) -> list[int] | None:
    """Schedule pods one by one (largest first); undo them all on the first failure."""
    order = sorted(range(len(pods)), key=lambda k: -state.pod_gpus[pods[k]])
    nodes = [-1] * len(pods)
    for k in order:
        n = schedule_pod(state, pods[k], policy, rng, among)
        if n < 0:
            for done in order:
                if nodes[done] >= 0:
                    state.unplace(pods[done])
            return None
        nodes[k] = n
    return nodes


def _candidate_domains(state: ClusterState, pods: list[int], domain: np.ndarray, policy: str, rng: np.random.Generator) -> np.ndarray:
    """Domains that may hold the gang, in the order the policy tries them.

    A domain qualifies when the first pod has a feasible node there and it has room (a necessary
    bound, not a rule: the placement itself still goes through ``feasible_nodes``) for every gang pod
    identical to the first.
    """
    p0 = pods[0]
    n_domains = int(domain.max()) + 1 if len(domain) else 0
    feasible = np.bincount(domain[state.feasible_nodes(p0)], minlength=n_domains) > 0
    twins = sum(1 for q in pods if _same_shape(state, p0, q))
    room = np.bincount(domain, weights=_copies_that_fit(state, p0), minlength=n_domains)
    candidates = np.flatnonzero(feasible & (room >= twins))
    if len(candidates) <= 1 or policy == "random":
        return rng.permutation(candidates) if len(candidates) > 1 else candidates
    free = np.bincount(domain, weights=state.free_devices().astype(np.float64), minlength=n_domains)[candidates]
    key = -free if policy == "spread" else free
    return candidates[np.lexsort((rng.random(len(candidates)), key))]


def _same_shape(state: ClusterState, p: int, q: int) -> bool:
    return bool(
        state.pod_signature[p] == state.pod_signature[q]
        and state.pod_gpus[p] == state.pod_gpus[q]
        and state.pod_cpus[p] == state.pod_cpus[q]
        and state.pod_mem[p] == state.pod_mem[q]
        and state.pod_groups[p] == state.pod_groups[q]
    )


def _copies_that_fit(state: ClusterState, p: int) -> np.ndarray:
    """Upper bound on how many copies of pod p each node could take now (0 where p is not allowed)."""
    eps = 1e-9
    bound = np.where(state.eligible[state.pod_signature[p]], np.inf, 0.0)
    whole = float(state.pod_whole[p])
    if whole > 0:
        bound = np.minimum(bound, np.floor(state.free_devices() / whole))
    for used, cap, need in (
        (state.used_cpus, state.cap_cpus, state.pod_cpus[p]),
        (state.used_mem, state.cap_mem, state.pod_mem[p]),
    ):
        if need > 0:
            bound = np.minimum(bound, np.floor((cap - used + eps) / need))
    if state.pod_groups[p]:
        bound = np.minimum(bound, 1.0)
    return np.where(np.isfinite(bound), bound, float(len(state.pod_names)))
