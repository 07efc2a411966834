"""Place a pending job pod by pod with a preemption policy (the heuristics' shared driver).

For each pod in order: a placement without preemption if the policy finds one, else a node and a
victim cover from the policy; the cover's units (whole gangs, on every node) are evicted before the
next pod is placed, so later pods may use what they freed and never pay for a victim twice. A job
whose topology is ``required`` is tried in every switch domain separately and the cheapest complete
placement wins. Pods beyond ``min_placed`` are placed only without preemption.

A policy that trims (``reprieve``) gets a last pass that returns every victim unit whose eviction
turned out not to be needed (a gang evicted for a later pod can free room an earlier pod's victims
were chosen for): the plan then has no surplus victims.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from planner import rules
from planner.heuristics.victims import Cover
from planner.preempt_state import Ask, Fit, PreemptState, UndoLog
from planner.state import PENDING


@dataclass
class Choice:
    """A decision: ``placements`` (pod, node, devices) and the evicted ``units``; ``reason`` when
    the job could not be placed."""

    placements: list[tuple[int, int, tuple[int, ...] | None]] = field(default_factory=list)
    units: list[int] = field(default_factory=list)
    cost: float = 0.0
    proven_covers: bool = True
    reason: str | None = None
    proven_infeasible: bool = False
    """The failure is a proof: the first pod fits nowhere even with every allowed victim gone."""
    searched: int = 0

    @property
    def key(self) -> tuple[float, int]:
        return (self.cost, len(self.units))


class Policy(Protocol):
    name: str
    reprieve: bool
    numa_aware: bool

    def place_free(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Fit] | None: ...

    def place_preempting(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Cover] | None: ...


def place_job(ps: PreemptState, ask: Ask, policy: Policy, explain: bool = True) -> Choice:
    """The policy's decision for ``ask`` on a copy of ``ps`` (``ps`` itself is not changed).
    ``explain=False`` skips naming the binding rule of a proven failure (a simulation's hot path)."""
    everywhere = np.ones(len(ps.cs.node_names), dtype=bool) if ask.nodes is None else ask.nodes
    if not ask.level:
        return _sequential(ps, ask, policy, everywhere, explain)
    domains = ps.cs.asw_domain if ask.level == 1 else ps.cs.spine_domain
    best: Choice | None = None
    reasons: list[Choice] = []
    for d in np.unique(domains[everywhere]).tolist():
        choice = _sequential(ps, ask, policy, everywhere & (domains == d), explain)
        if choice.reason is not None:
            reasons.append(choice)
        elif best is None or choice.key < best.key:
            best = choice
    if best is None:
        level = "asw" if ask.level == 1 else "spine"
        return Choice(
            reason=f"no single {level} can host job '{ask.job_name}' even with every allowed victim evicted"
            + (f" (e.g. {reasons[0].reason})" if reasons else ""),
            proven_infeasible=all(r.proven_infeasible for r in reasons),
        )
    return best


def _sequential(ps: PreemptState, ask: Ask, policy: Policy, allowed: np.ndarray, explain: bool = True) -> Choice:
    """Pod by pod on ``ps`` itself, every change undone before returning. A policy that
    ``retries`` tries other pod orders when the first fails (a gang of unlike pods can fail in one
    order and fit in another)."""
    orders = pod_orders(ps, ask, allowed) if getattr(policy, "retries", False) else [pod_order(ps, ask, allowed)]
    for order in orders:
        log: list = []
        try:
            choice = _sequential_logged(ps, ask, policy, allowed, log, order)
        finally:
            ps.undo(log)
        if choice.reason is None:
            break
    if choice.reason is not None:
        choice.proven_infeasible = hopeless(ps, ask, allowed)
        if choice.proven_infeasible and explain:
            choice.reason = binding_constraint(ps, ask, allowed)
        return choice
    if policy.reprieve and len(choice.units) > 1 and len(choice.placements) > 1:
        _reprieve(ps, ask, choice)
    choice.cost = float(sum(ask.unit_cost[u] for u in choice.units))
    return choice


def pod_order(ps: PreemptState, ask: Ask, allowed: np.ndarray) -> list[int]:
    """The job's pods, most constrained first: fewest nodes their static rules allow, then most GPUs."""
    if len(ask.pods) == 1:
        return list(ask.pods)
    cs = ps.cs
    by_signature: dict[int, int] = {}  # a job's pods mostly share one signature: count its nodes once
    for signature in cs.pod_signature[ask.pods].tolist():
        if signature not in by_signature:
            by_signature[signature] = int((cs.eligible[signature] & allowed).sum())
    eligible = {p: by_signature[int(cs.pod_signature[p])] for p in ask.pods}
    return sorted(ask.pods, key=lambda p: (eligible[p], -float(cs.pod_gpus[p]), p))


def pod_orders(ps: PreemptState, ask: Ask, allowed: np.ndarray) -> Iterator[list[int]]:
    """Distinct pod orders to try: most constrained first, then by CPUs, by memory, and reversed
    (each made only when the ones before it failed)."""
    first = pod_order(ps, ask, allowed)
    if len(first) == 1:
        yield first
        return
    cs = ps.cs
    makers = (
        lambda: first,
        lambda: sorted(first, key=lambda p: -float(cs.pod_cpus[p])),
        lambda: sorted(first, key=lambda p: -float(cs.pod_mem[p])),
        lambda: first[::-1],
    )
    tried: list[list[int]] = []
    for make in makers:
        order = make()
        if order not in tried:
            tried.append(order)
            yield order


def _sequential_logged(ps: PreemptState, ask: Ask, policy: Policy, allowed: np.ndarray, log: list, pods: list[int]) -> Choice:
    choice = Choice()
    victims = ask.victims.copy()
    last_failure = ""
    for k, p in enumerate(pods):
        placed = len(choice.placements)
        free = policy.place_free(ps, ask, p, allowed)
        if free is not None:
            last_failure = _start(ps, ask, p, free[0], policy, choice, log)
            if not last_failure:
                continue
        elif placed >= ask.min_placed:
            continue  # pods beyond the gang's minimum start only where nothing must be evicted
        elif not ask.preemptive:
            last_failure = (
                f"pod '{ps.cs.pod_names[p]}' fits on no node without preemption, and no running pod may be preempted "
                f"by job '{ask.job_name}' (victims are unlocked spot pods of priority below {ask.priority})"
            )
        else:
            step = policy.place_preempting(ps, _with_victims(ask, victims), p, allowed)
            if step is None:
                where = f" once {placed} pod(s) of the job are placed" if placed else ""
                last_failure = f"pod '{ps.cs.pod_names[p]}' fits on no node even with every allowed victim evicted{where}"
            else:
                n, cover = step
                choice.proven_covers &= cover.proven
                for u in cover.units:
                    for q in ps.placed_pods_of(u):
                        ps.evict_logged(q, log)
                        victims[q] = False
                    choice.units.append(u)
                last_failure = _start(ps, ask, p, n, policy, choice, log)
                if not last_failure:
                    continue
        if placed + (len(pods) - k - 1) < ask.min_placed:
            return Choice(reason=last_failure)  # too few pods left to reach the gang's minimum
    if len(choice.placements) < ask.min_placed:
        return Choice(reason=last_failure or "too few pods placed")
    return choice


def _start(ps: PreemptState, ask: Ask, p: int, n: int, policy: Policy, choice: Choice, log: list) -> str:
    """Start pod p on node n, on the devices the job's NUMA mode allows; "" when it started, else why not."""
    fit = ps.fit(p, n, (), ask.numa_mode)
    if fit is None:
        return _unaligned(ps, p, n, policy)
    ps.place_logged(p, n, fit.devices, log)
    choice.placements.append((p, n, fit.devices))
    return ""


def hopeless(ps: PreemptState, ask: Ask, allowed: np.ndarray) -> bool:
    """True when fewer than the gang's minimum of pods fit anywhere in ``allowed`` even with every
    allowed victim gone (each pod tested alone, so a True is a proof that nothing can be planned)."""
    cs = ps.cs
    possible = 0
    with_victims = None
    for p in ask.pods:
        nodes = np.flatnonzero(allowed & cs.eligible[cs.pod_signature[p]])
        if ask.numa_mode is None:
            # where the pod fits with nobody leaving, ``feasible_nodes`` (the rules' vector form) says
            # so at once; the node-by-node test is needed only where victims could leave
            if (cs.feasible_nodes(p) & allowed).any():
                possible += 1
                if possible >= ask.min_placed:
                    return False
                continue
            if with_victims is None:
                placed = cs.pod_node != PENDING
                with_victims = np.bincount(cs.pod_node[ask.victims & placed], minlength=len(cs.node_names)) > 0
            nodes = nodes[with_victims[nodes]]
        for n in nodes.tolist():
            leaving = [q for q in cs.node_pods[n] if ask.victims[q]]
            if ps.fit(p, n, leaving, ask.numa_mode, devices=False) is not None:
                possible += 1
                break
        if possible >= ask.min_placed:
            return False
    return True


def binding_constraint(ps: PreemptState, ask: Ask, allowed: np.ndarray) -> str:
    """Why the job cannot start even with every allowed victim gone: for a pod that fits nowhere,
    what stops it on how many nodes (the first rule that fails on each)."""
    cs = ps.cs
    for p in ask.pods:
        causes: dict[str, int] = {}
        for n in np.flatnonzero(allowed).tolist():
            leaving = [q for q in cs.node_pods[n] if ask.victims[q]]
            if ps.fit(p, n, leaving, ask.numa_mode, devices=False) is not None:
                causes = {}
                break
            cause = _first_broken(ps, p, n, leaving, ask)
            causes[cause] = causes.get(cause, 0) + 1
        if causes:
            parts = ", ".join(f"{cause} on {count} node(s)" for cause, count in sorted(causes.items(), key=lambda kv: -kv[1]))
            gang = f" (the gang needs {ask.min_placed} of {len(ask.pods)} pods)" if ask.min_placed < len(ask.pods) else ""
            return f"pod '{cs.pod_names[p]}' fits on no node even with every allowed victim evicted{gang}: {parts}"
    return f"job '{ask.job_name}' cannot start even with every allowed victim evicted"


def _first_broken(ps: PreemptState, p: int, n: int, leaving: list[int], ask: Ask) -> str:
    cs = ps.cs
    if not cs.eligible[cs.pod_signature[p], n]:
        return cs._static_rule(p, n).replace("_", " ")
    whole = int(cs.pod_whole[p]) + (1 if cs.pod_share[p] > 0 else 0)
    stay = [q for q in cs.node_pods[n] if q not in set(leaving)]
    if cs.cap_gpus[n] - sum(int(cs.pod_whole[q]) for q in stay) < whole:
        return f"too few GPUs left by pods that may not be evicted (needs {whole})"
    if cs.cap_cpus[n] - sum(float(cs.pod_cpus[q]) for q in stay) + rules.EPS < cs.pod_cpus[p]:
        return f"too few CPUs left by pods that may not be evicted (needs {float(cs.pod_cpus[p]):g})"
    if cs.cap_mem[n] - sum(float(cs.pod_mem[q]) for q in stay) + rules.EPS < cs.pod_mem[p]:
        return f"too little memory left by pods that may not be evicted (needs {float(cs.pod_mem[p]):g} GiB)"
    if not cs.fits_without(p, n, leaving):
        if cs.has_standby and cs.standby_on[n] and not cs._reservation_ok(p, n, leaving):
            return "standby reservations"
        if not cs._anti_affinity_ok(p, n, leaving):
            return "anti-affinity"
        if not cs._topology_ok(p, n):
            return "job topology"
        return "GPU devices (shared devices cannot be freed)"
    return "no NUMA-aligned devices (one socket, CPUs in the devices' domains)"


def _unaligned(ps: PreemptState, p: int, n: int, policy: Policy) -> str:
    """Why a NUMA-unaware policy's choice fails: its node has no aligned devices for the pod (the
    kubelet's topology manager would refuse the pod there)."""
    return (
        f"{policy.name} chose node '{ps.cs.node_names[n]}' for pod '{ps.cs.pod_names[p]}' without regard to NUMA, "
        "and no aligned devices are free there: the pod would be refused at admission"
    )


def _with_victims(ask: Ask, victims: np.ndarray) -> Ask:
    return replace(ask, victims=victims)


def _reprieve(ps0: PreemptState, ask: Ask, choice: Choice) -> None:
    """Return every unit (most expensive first) without which every placement still fits."""
    for u in sorted(choice.units, key=lambda v: -ask.unit_cost[v]):
        trial = [v for v in choice.units if v != u]
        placed = placement_fits(ps0, ask, choice.placements, trial)
        if placed is not None:
            choice.units = trial
            choice.placements = placed


def placement_fits(
    ps0: PreemptState, ask: Ask, placements: list[tuple[int, int, tuple[int, ...] | None]], units: list[int]
) -> list[tuple[int, int, tuple[int, ...] | None]] | None:
    """The placements (devices re-chosen where needed) if every pod still fits its node with only
    ``units`` evicted; None otherwise. ``ps0`` is left as it was."""
    ps = ps0
    log: UndoLog = []
    try:
        for u in units:
            for q in ps.placed_pods_of(u):
                ps.evict_logged(q, log)
        out = []
        for p, n, _ in placements:
            fit = ps.fit(p, n, (), ask.numa_mode)
            if fit is None:
                return None
            ps.place_logged(p, n, fit.devices, log)
            out.append((p, n, fit.devices))
        return out
    finally:
        ps.undo(log)


# ----------------------------------------------------------------------------------------------
# Shared pieces of the policies
# ----------------------------------------------------------------------------------------------


def name_rank(ps: PreemptState) -> np.ndarray:
    """Rank of each node's name in sorted order (the final, deterministic tie-break)."""
    cached = getattr(ps.cs, "_name_rank", None)
    if cached is None:
        cached = ps.cs._name_rank = sorted_rank(ps.cs.node_names)  # type: ignore[attr-defined]  # a cache the heuristic keeps on the state it reads (ClusterState does not declare it)
    return cached


def sorted_rank(names: list[str]) -> np.ndarray:
    """Each name's rank in sorted order."""
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def first_fitting(ps: PreemptState, ask: Ask, p: int, order: np.ndarray, numa_mode: str | None = "job") -> tuple[int, Fit] | None:
    """The first node of ``order`` where pod p fits without preemption (under the job's NUMA mode
    unless ``numa_mode`` says otherwise)."""
    mode = ask.numa_mode if numa_mode == "job" else numa_mode
    for n in order.tolist():
        fit = ps.fit(p, n, (), mode)
        if fit is not None:
            return n, fit
    return None


def lexsort_first(keys: tuple[np.ndarray, ...]) -> int:
    """``np.lexsort(keys)[0]`` (the last key is the primary one; full ties go to the lowest index)
    without sorting: keep the minima key by key."""
    primary = keys[-1]
    candidates = np.flatnonzero(primary == primary.min())
    for key in reversed(keys[:-1]):
        if len(candidates) == 1:
            break
        values = key[candidates]
        candidates = candidates[values == values.min()]
    return int(candidates[0])


def first_fitting_by_keys(
    ps: PreemptState, ask: Ask, p: int, nodes: np.ndarray, keys: tuple[np.ndarray, ...], numa_mode: str | None = "job"
) -> tuple[int, Fit] | None:
    """``first_fitting`` on ``nodes[np.lexsort(keys)]``, sorting only when the first node of that
    order does not fit (the usual placement sorts nothing)."""
    first = int(nodes[lexsort_first(keys)])
    fit = ps.fit(p, first, (), ask.numa_mode if numa_mode == "job" else numa_mode)
    if fit is not None:
        return first, fit
    return first_fitting(ps, ask, p, nodes[np.lexsort(keys)], numa_mode)


def preemptable_nodes(ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray, stay: StaySums | None = None) -> np.ndarray:
    """Nodes that might host pod p once every candidate victim there is gone: static rules, and
    capacity left by the pods that stay (a necessary condition; ``fit`` decides). ``stay``: the
    ask's ``stay_sums`` when the caller has them."""
    cs = ps.cs
    stay = stay_sums(ps, ask) if stay is None else stay
    need_gpus = cs.pod_whole[p] + (1 if cs.pod_share[p] > 0 else 0)
    return (
        allowed
        & stay.has_victim
        & cs.eligible[cs.pod_signature[p]]
        & (cs.cap_gpus - stay.whole >= need_gpus)
        & (cs.cap_cpus - stay.cpus + 1e-9 >= cs.pod_cpus[p])
        & (cs.cap_mem - stay.mem + 1e-9 >= cs.pod_mem[p])
    )


@dataclass
class StaySums:
    """Per node, what the pods that stay (placed, not candidate victims of an ask) hold: whole GPUs,
    CPUs, memory; whether some candidate victim runs there; the staying pods and their nodes."""

    pods: np.ndarray
    where: np.ndarray
    whole: np.ndarray
    cpus: np.ndarray
    mem: np.ndarray
    has_victim: np.ndarray


def stay_sums(ps: PreemptState, ask: Ask) -> StaySums:
    cs = ps.cs
    placed = cs.pod_node != PENDING
    pods = np.flatnonzero(placed & ~ask.victims)
    n_nodes = len(cs.node_names)
    where = cs.pod_node[pods]
    return StaySums(
        pods=pods,
        where=where,
        whole=np.bincount(where, weights=cs.pod_whole[pods], minlength=n_nodes),
        cpus=np.bincount(where, weights=cs.pod_cpus[pods], minlength=n_nodes),
        mem=np.bincount(where, weights=cs.pod_mem[pods], minlength=n_nodes),
        has_victim=np.bincount(cs.pod_node[ask.victims & placed], minlength=n_nodes) > 0,
    )


def apply_choice(ps: PreemptState, choice: Choice) -> None:
    """Carry a decision out on ``ps``: evict every pod of its units, start its placements."""
    for u in choice.units:
        for q in ps.placed_pods_of(u):
            ps.evict(q)
    for p, n, devices in choice.placements:
        ps.place(p, n, devices)
