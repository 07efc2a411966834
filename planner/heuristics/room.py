"""What room a pending job could have after any moves: the make-room heuristic's filters (issue 12).

A node's *optimistic* room counts every movable pod as gone (locked and standby pods stay); a
domain's room (for a job ``required`` under one switch or spine) is bounded further by the pods bound
to it, which no sequence of moves can take out. When no domain has the room, the job cannot start
whatever moves, and the reason says so without search. The exact model uses the same filters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner import rules
from planner.limits import MoveBudget
from planner.state import EPS, ClusterState

LEVEL_NAMES = {1: "asw", 2: "spine"}


@dataclass
class Request:
    """A named pending job (or a pending pod without a job): its pods (one shape) and its topology
    level (0 anywhere, 1 one access switch, 2 one spine)."""

    name: str
    pods: list[int]
    level: int = 0
    minimum: int | None = None
    """The job's ``min_available`` when below its pods: it starts with that many, the others where they fit."""

    @property
    def need(self) -> int:
        """Pods that must start together for the job to run."""
        return len(self.pods) if self.minimum is None else min(self.minimum, len(self.pods))


def optimistic_slots(state: ClusterState, p: int) -> np.ndarray:
    """Per node, pods shaped like p it could take if every movable pod left (an upper bound on
    ``node_slots`` after any moves): locked whole GPUs and locked shares (packed by the rules) stay;
    a share packs beside them and beside the job's other shares."""
    s = state
    stays = (s.pod_node >= 0) & s.pod_locked
    free, need = _free_after_moves(s, p)
    slots = np.full(len(s.node_names), len(s.pod_names), dtype=np.int64)
    for room, each in list(zip(free, need))[1:]:
        if each > 0:
            slots = np.minimum(slots, np.floor((room + 1e-9) / each).astype(np.int64))
    whole, locked_shares = _locked_gpus(s)
    if s.pod_share[p] > 0:
        slots = np.minimum(slots, rules.share_slots_per_node(s.cap_gpus - whole, locked_shares, float(s.pod_share[p])))
    elif s.pod_whole[p] > 0:
        slots = np.minimum(slots, np.floor(free[0] / int(s.pod_whole[p]) + 1e-9).astype(np.int64))
    eligible = s.eligible[s.pod_signature[p]].copy()
    if s.pod_groups[p]:
        slots = np.minimum(slots, 1)
        for q in np.flatnonzero(stays):
            if set(s.pod_groups[q]) & set(s.pod_groups[p]):
                eligible[s.pod_node[q]] = False
    slots[~eligible] = 0
    return np.maximum(slots, 0)


def _locked_gpus(state: ClusterState) -> tuple[np.ndarray, dict[int, list[float]]]:
    """Per node, the whole GPUs of the pods that stay whatever moves (locked, standby), and their shares."""
    s = state
    stays = (s.pod_node >= 0) & s.pod_locked
    whole = np.bincount(s.pod_node[stays], weights=s.pod_whole[stays], minlength=len(s.node_names))
    shares: dict[int, list[float]] = {}
    for q in np.flatnonzero(stays & (s.pod_share > 0)).tolist():
        shares.setdefault(int(s.pod_node[q]), []).append(float(s.pod_share[q]))
    return whole, shares


def _locked_share_slack(state: ClusterState) -> np.ndarray:
    """Per node, the GPU left on the devices its locked shares occupy (devices packed minus their sum)."""
    slack = np.zeros(len(state.node_names))
    for n, shares in _locked_gpus(state)[1].items():
        slack[n] = len(rules.pack_shares(shares)) - sum(shares)
    return slack


def _free_after_moves(state: ClusterState, p: int) -> tuple[list[np.ndarray], list[float]]:
    """Per node, free (GPUs, CPUs, memory) once every movable pod has left; and what one pod shaped
    like p needs of each. GPUs are counted in devices for a whole-GPU pod (locked shares packed by
    the rules take theirs) and in GPU for a share (what the locked pods leave of the devices)."""
    s = state
    n_nodes = len(s.node_names)
    stays = (s.pod_node >= 0) & s.pod_locked
    where = s.pod_node[stays]
    whole, locked_shares = _locked_gpus(s)
    cpus = np.bincount(where, weights=s.pod_cpus[stays], minlength=n_nodes)
    mem = np.bincount(where, weights=s.pod_mem[stays], minlength=n_nodes)
    if s.pod_share[p] > 0:
        share_sum = np.bincount(where, weights=s.pod_share[stays], minlength=n_nodes)
        gpus, gpu_need = s.cap_gpus - whole - share_sum, float(s.pod_share[p])
    else:
        devices = np.zeros(n_nodes)
        for n, shares in locked_shares.items():
            devices[n] = len(rules.pack_shares(shares))
        gpus, gpu_need = s.cap_gpus - whole - devices, float(s.pod_whole[p])
    return [gpus, s.cap_cpus - cpus, s.cap_mem - mem], [gpu_need, float(s.pod_cpus[p]), float(s.pod_mem[p])]


def domains_of(state: ClusterState, level: int) -> np.ndarray:
    """Each node's domain for a job of this topology level (one domain for level 0)."""
    if level == 1:
        return state.asw_domain
    if level == 2:
        return state.spine_domain
    return np.zeros(len(state.node_names), dtype=np.int64)


def bound_pods(state: ClusterState, level: int, budget: MoveBudget | None = None) -> np.ndarray:
    """Movable placed pods that cannot leave their domain at ``level`` by any sequence of moves:
    pods of jobs required under one switch (or spine) lying within it (make-before-break holds
    both copies, so a move to another domain breaks the job's topology), and every pod under
    ``same_asw``. A mask over pods."""
    s = state
    movable = (s.pod_node >= 0) & ~s.pod_locked
    if level == 0:
        return np.zeros(len(s.pod_names), dtype=bool)
    domains = domains_of(s, level)
    level_of = np.where(s.pod_job >= 0, s.job_level[np.maximum(s.pod_job, 0)], 0)
    bound = (level_of == level) if budget is None or budget.asw is None else np.ones(len(s.pod_names), dtype=bool)
    if level == 2:  # a pod held in its switch is held in its spine when the switch lies in one spine
        n_asw = int(s.asw_domain.max()) + 1
        lowest, highest = np.full(n_asw, len(domains)), np.full(n_asw, -1)
        np.minimum.at(lowest, s.asw_domain, domains)
        np.maximum.at(highest, s.asw_domain, domains)
        held_by_asw = (level_of == 1) | (budget is not None and budget.asw is not None)
        bound |= held_by_asw & (lowest == highest)[s.asw_domain[np.maximum(s.pod_node, 0)]]
    return bound & movable


def domain_room(state: ClusterState, request: Request, optimistic: np.ndarray, budget: MoveBudget | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per domain, an upper bound on the request's pods it could take after any moves, and the
    slots of its optimistic room lost to the pods bound to it (``bound_pods``), which stay on its
    nodes. Per resource, with e what one job pod needs and *spare* what the optimistic slots leave:

    * all bound pods together take spare first, then slots: at least ceil((held - spare) / e) lost;
    * a bound pod larger than every node's spare takes a slot wherever it goes, and a node given
      such pods of G in all loses at least max(1, ceil((G - spare) / e)) >= G / (e + spare) slots:
      at least ceil(sum of their sizes / (e + largest spare)) lost.
    """
    s = state
    domains = domains_of(s, request.level)
    size = int(domains.max()) + 1
    totals = np.bincount(domains, weights=optimistic, minlength=size)
    lost = np.zeros(size)
    bound = np.flatnonzero(bound_pods(s, request.level, budget))
    if len(bound):
        free, need = _free_after_moves(s, request.pods[0])
        usage = [s.pod_whole + s.pod_share, s.pod_cpus, s.pod_mem]
        where = domains[s.pod_node[bound]]
        for r, (room, each, used) in enumerate(zip(free, need, usage)):
            if each <= 0:
                continue
            spare = np.maximum(room - optimistic * each, 0)
            if r == 0 and s.pod_share[request.pods[0]] == 0:  # GPUs in devices: a bound share may fill what locked shares leave of theirs
                spare = spare + _locked_share_slack(s)
            largest = np.zeros(size)
            np.maximum.at(largest, domains, spare)
            held = np.bincount(where, weights=used[bound], minlength=size)
            lost = np.maximum(lost, np.ceil((held - np.bincount(domains, weights=spare, minlength=size)) / each - 1e-9))
            big = used[bound] > largest[where] + EPS
            held_big = np.bincount(where[big], weights=used[bound][big], minlength=size)
            lost = np.maximum(lost, np.ceil(held_big / (each + largest) - 1e-9))
    return np.maximum(totals - lost, 0), np.minimum(lost, totals)


def unplaceable_reason(state: ClusterState, request: Request, optimistic: np.ndarray, budget: MoveBudget | None = None) -> str | None:
    """Why the job cannot start even with every movable pod moved away (None when it might)."""
    k = request.need
    shape = _shape_text(state, request.pods[0])
    if request.level == 0:
        total = int(optimistic.sum())
        if total >= k:
            return None
        return f"{k} pod(s) of {shape} need room for {k}; even with every movable pod moved away the cluster has room for {total}"
    room, lost = domain_room(state, request, optimistic, budget)
    best = int(np.argmax(room))
    if room[best] >= k:
        return None
    domains = domains_of(state, request.level)
    level = LEVEL_NAMES[request.level]
    node = state.cluster.nodes[int(np.flatnonzero(domains == best)[0])] if state.cluster is not None else None
    name = f" ({rules.topology_domain(node, level)})" if node is not None else ""
    held = (
        "its pods could leave it, which under same_asw they cannot"
        if budget is not None and budget.asw is not None
        else f"its pods of jobs required under one {level} could leave it, which they cannot"
    )
    why = f" ({int(room[best] + lost[best])} if {held})" if lost[best] else ""
    return (
        f"the job requires one {level}; even with every movable pod moved away the roomiest {level}{name} "
        f"has room for {int(room[best])} of its {k} pod(s) of {shape}{why}"
    )


def _shape_text(state: ClusterState, p: int) -> str:
    return f"{state.pod_gpus[p]:g} GPU(s), {state.pod_cpus[p]:g} CPUs, {state.pod_mem[p]:g} GiB"
