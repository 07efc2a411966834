"""Why a pending job (or a pending pod of no job) does not run, in numbers, and what would start it.

The constraints are checked in a fixed order on the snapshot as it is; the first that holds is the
reason (``codes.JOB_CODES``), and each is a fact about the snapshot (its numbers are sums over the
nodes, the per-node tests are ``rules``'):

1. capacity: the GPUs of the nodes it may use in all (``capacity_total``), the cluster's free GPUs;
2. its GPU models: the free GPUs on the models it allows;
3. its other static rules (selector, taints, node affinity, resources offered): the free GPUs they exclude, by rule;
4. one switch (or spine), for a ``required`` job: the free GPUs of the roomiest (the running pods' one, when some run);
5. fragmentation: the free GPUs it may use that its pods cannot (holes smaller than a pod, too few
   CPUs or memory beside them, anti-affinity), by cause, against the pods the nodes can take.

Then the remedy (``codes.REMEDY_CODES``): the make-room plan with the budgets given (its moves), else
the plan without them (the budgets stop it), else the heuristic's failure; or the proof that no moves
can do it (``heuristics.room.unplaceable_reason``, every movable pod counted as gone).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from planner import rules
from planner.cluster import Cluster, Pod
from planner.heuristics.room import Request, optimistic_slots, unplaceable_reason
from planner.state import ClusterState

RULE_CODES = {
    rules.NODE_SELECTOR: "node_selector",
    rules.TAINT: "taint",
    rules.NODE_AFFINITY: "node_affinity",
    rules.RESOURCE_NOT_OFFERED: "resource_not_offered",
    rules.GPU_MODEL: "gpu_model",
    rules.UNSCHEDULABLE: "unschedulable",
}
"""Reason codes of the static rules (``rules``' names, shortened where a UI shows them)."""


def gpus(value: float) -> float | int:
    """A GPU count as JSON: whole when it is whole."""
    return round(float(value)) if abs(value - round(value)) < 1e-9 else round(float(value), 6)


def node_slots_by_rules(node: Any, residents: list[Pod], arriving: list[Pod], upper: int) -> int:
    """How many of ``arriving`` (alike pods, in order) ``node`` takes beside ``residents``: the
    largest t <= upper with ``rules.pods_fit`` (fitting is monotone in t: a binary search)."""
    low, high = 0, min(upper, len(arriving))
    while low < high:
        mid = (low + high + 1) // 2
        if rules.pods_fit(node, residents, arriving[:mid]):
            low = mid
        else:
            high = mid - 1
    return low


class JobFacts:
    """The per-node facts the checks sum: free GPUs, static eligibility and its first broken rule,
    the pods each node takes now (by ``rules``), and the topology domain."""

    def __init__(self, cluster: Cluster, pending: list[Pod], need: int, level: str | None):
        self.cluster, self.pending, self.need, self.level = cluster, pending, need, level
        pod = pending[0]
        self.pod = pod
        state = ClusterState(cluster)
        self.state = state
        nodes = cluster.nodes
        self.gpus_each = float(pod.gpus)
        self.free_whole = (state.cap_gpus - state.whole_used - state.share_devices).astype(np.float64)
        self.fractional = (state.share_devices - state.share_sum).clip(min=0)
        self.free = self.free_whole + self.fractional
        self.schedulable = state.schedulable.copy()
        self.model_ok = np.array([rules.gpu_model_allowed(pod, n) for n in nodes], dtype=bool)
        first_break = []
        for n in nodes:
            breaks = rules.static_rule_breaks(pod, n)
            first_break.append(breaks[0].rule if breaks else "")
        self.first_break = first_break
        self.eligible = np.array([not b for b in first_break], dtype=bool)
        residents: dict[str, list[Pod]] = defaultdict(list)
        for p in cluster.pods:
            if p.node is not None:
                residents[p.node].append(p)
        self.residents = residents
        arriving = pending[:need]
        slots = np.zeros(len(nodes), dtype=np.int64)
        for i in np.flatnonzero(self.eligible).tolist():
            upper = need if pod.gpus < 1 else int(self.free_whole[i] // pod.gpus)
            if upper > 0:
                slots[i] = node_slots_by_rules(nodes[i], residents[nodes[i].name], arriving, upper)
        self.slots = slots
        self.domain = [rules.topology_domain(n, level) if level else "(cluster)" for n in nodes]
        where = {n.name: d for n, d in zip(nodes, self.domain, strict=True)}
        running = {where[p.node] for p in cluster.pods if p.job is not None and p.job == pod.job and p.node is not None}
        self.home: set[str] | None = running if level and running else None  # a required job's running pods hold it to their domain


def _sum(values: np.ndarray, mask: np.ndarray) -> float:
    return float(values[mask].sum())


def _by_domain(facts: JobFacts, values: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for i in np.flatnonzero(mask).tolist():
        out[facts.domain[i]] += float(values[i])
    return out


def fragmentation_causes(facts: JobFacts, mask: np.ndarray) -> dict[str, float | int]:
    """The free GPUs of the nodes in ``mask`` (eligible ones) its pods cannot use now, by cause:
    ``fractional`` (idle parts of devices GPU shares hold), ``hole_smaller_than_pod`` (fewer whole
    GPUs left on the node than a pod asks), ``insufficient_cpu``, ``insufficient_memory``,
    ``anti_affinity`` and ``other_resources`` (named resources, pod slots) when the node has the
    GPUs for one more pod but that rule stops it."""
    s, pod, g = facts.state, facts.pod, facts.gpus_each
    causes = dict.fromkeys(("fractional", "hole_smaller_than_pod", "insufficient_cpu", "insufficient_memory", "anti_affinity", "other_resources"), 0.0)
    for i in np.flatnonzero(mask).tolist():
        if g < 1:  # shares: what the pods do not take is in holes smaller than a share, or held by the other rules
            left = facts.free[i] - facts.slots[i] * g
            causes["hole_smaller_than_pod"] += max(0.0, left)
            continue
        causes["fractional"] += float(facts.fractional[i])
        left = float(facts.free_whole[i] - facts.slots[i] * g)
        if left < g:
            causes["hole_smaller_than_pod"] += left
            continue
        more = int(facts.slots[i]) + 1
        if pod.cpus > 0 and s.cap_cpus[i] - s.used_cpus[i] + rules.EPS < more * pod.cpus:
            causes["insufficient_cpu"] += left
        elif pod.memory_gib > 0 and s.cap_mem[i] - s.used_mem[i] + rules.EPS < more * pod.memory_gib:
            causes["insufficient_memory"] += left
        elif rules.conflict_groups(pod):
            causes["anti_affinity"] += left
        else:
            causes["other_resources"] += left
    return {k: gpus(v) for k, v in causes.items()}


def checks(facts: JobFacts) -> list[dict[str, Any]]:
    """The constraints in order, each with its numbers and whether it holds (stops the job now)."""
    need_gpus = facts.need * facts.gpus_each
    sched, model_ok, eligible = facts.schedulable, facts.model_ok, facts.eligible
    out: list[dict[str, Any]] = []
    allowed = sched & model_ok
    total = _sum(facts.state.cap_gpus.astype(np.float64), allowed)
    free_all = _sum(facts.free, sched)
    out.append(
        {
            "check": "capacity",
            "holds": need_gpus > total + rules.EPS or need_gpus > free_all + rules.EPS,
            "code": "capacity_total" if need_gpus > total + rules.EPS else "capacity",
            "numbers": {"requested_gpus": gpus(need_gpus), "gpus_of_allowed_models": gpus(total), "free_gpus_schedulable": gpus(free_all)},
        }
    )
    by_model: dict[str, float] = defaultdict(float)
    for i in np.flatnonzero(allowed).tolist():
        by_model[facts.cluster.nodes[i].gpu_model or "(unnamed)"] += float(facts.free[i])
    free_allowed = _sum(facts.free, allowed)
    out.append(
        {
            "check": "gpu_model",
            "holds": need_gpus > free_allowed + rules.EPS,
            "code": "gpu_model",
            "numbers": {
                "allowed_models": list(facts.pod.gpu_models) or "any",
                "free_gpus_on_allowed_models": gpus(free_allowed),
                "by_model": {k: gpus(v) for k, v in sorted(by_model.items())},
            },
        }
    )
    excluded: dict[str, float] = defaultdict(float)
    nodes_excluded: dict[str, int] = defaultdict(int)
    for i in np.flatnonzero(allowed & ~eligible).tolist():
        excluded[facts.first_break[i]] += float(facts.free[i])
        nodes_excluded[facts.first_break[i]] += 1
    free_eligible = _sum(facts.free, eligible)
    worst = max(sorted(excluded), key=lambda r: excluded[r]) if excluded else rules.TAINT
    out.append(
        {
            "check": "rules",
            "holds": need_gpus > free_eligible + rules.EPS,
            "code": RULE_CODES.get(worst, worst),
            "numbers": {
                "free_gpus_it_may_use": gpus(free_eligible),
                "free_gpus_excluded_by_rule": {RULE_CODES.get(r, r): gpus(v) for r, v in sorted(excluded.items())},
                "nodes_excluded_by_rule": {RULE_CODES.get(r, r): c for r, c in sorted(nodes_excluded.items())},
            },
        }
    )
    free_by_domain = _by_domain(facts, facts.free, eligible)
    slots_by_domain = _by_domain(facts, facts.slots.astype(np.float64), eligible)
    if facts.home is not None:  # its running pods hold it to their domain
        free_by_domain = {d: v for d, v in free_by_domain.items() if d in facts.home}
        slots_by_domain = {d: v for d, v in slots_by_domain.items() if d in facts.home}
    roomiest = max(sorted(free_by_domain), key=lambda d: free_by_domain[d]) if free_by_domain else None
    if facts.level:
        out.append(
            {
                "check": "switch",
                "holds": roomiest is None or need_gpus > free_by_domain[roomiest] + rules.EPS,
                "code": "switch",
                "numbers": {
                    "level": facts.level,
                    "domains": len(set(facts.domain)),
                    **({"running_pods_under": sorted(facts.home)} if facts.home is not None else {}),
                    "roomiest": roomiest,
                    "free_gpus_in_roomiest": gpus(free_by_domain.get(roomiest, 0.0) if roomiest else 0.0),
                },
            }
        )
    best = max(sorted(slots_by_domain), key=lambda d: (slots_by_domain[d], free_by_domain[d])) if slots_by_domain else None
    in_domain = eligible & np.array([d == best for d in facts.domain], dtype=bool)
    pods_fit_now = int(slots_by_domain.get(best, 0)) if best else 0
    out.append(
        {
            "check": "fragmentation",
            "holds": pods_fit_now < facts.need,
            "code": "fragmentation",
            "numbers": {
                "pods_needed": facts.need,
                "pods_that_fit_now": pods_fit_now,
                **({"domain": best} if facts.level else {}),
                "free_gpus": gpus(_sum(facts.free, in_domain)),
                "usable_gpus": gpus(_sum(facts.slots * facts.gpus_each, in_domain)),
                "stranded_by_cause": fragmentation_causes(facts, in_domain),
            },
        }
    )
    return out


def proof_after_any_moves(state: ClusterState, state_pods: list[int], need: int, level: str | None) -> str | None:
    """``heuristics.room``'s proof that no moves start the job: with every movable pod gone (locked
    and standby pods stay), no node set (under one switch, when required) has room; None when it might.
    ``state``: the snapshot's (``JobFacts.state``; read, not changed)."""
    request = Request("job", state_pods, {"asw": 1, "spine": 2}.get(level or "", 0), need if need < len(state_pods) else None)
    return unplaceable_reason(state, request, optimistic_slots(state, state_pods[0]))
