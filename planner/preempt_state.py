"""Array state for preemption decisions: who may be evicted, at what cost, and which devices are free.

``PreemptState`` wraps a ``ClusterState`` (capacity, anti-affinity and topology in their fast forms)
and adds what preemption needs: each pod's priority, whether it may ever be a victim, its gang
("unit": a victim's whole gang is evicted with it; pods of a job with ``min_available`` 1 are units of their own), the devices it holds (``gpu_indexes``) and each
node's NUMA domains. ``fit`` answers "may pod p start on node n once the pods ``leaving`` are gone,
and on which devices?", the one feasibility oracle of the preemption heuristics; it is the fast form
of ``rules.node_rule_breaks`` plus ``rules.numa_guaranteed_breaks``, and the validator re-checks
every plan with the rules themselves.

Built once per cluster, a state answers many decisions (``lost_gpu_s`` at any ``now``) and can be
mutated (``evict``, ``place``) by a simulation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner import rules
from planner.cluster import Cluster, Node
from planner.state import PENDING, ClusterState

NUMA_MODES = ("guaranteed", "best-effort")


@dataclass(frozen=True)
class NodeNuma:
    """A node's NUMA layout: the domain of each device (-1: none), each domain's socket and CPUs."""

    device_domain: tuple[int, ...]
    domain_socket: tuple[int, ...]
    domain_cpus: tuple[float, ...]

    @staticmethod
    def of(node: Node) -> NodeNuma | None:
        if not node.numa:
            return None
        return NodeNuma(
            tuple(rules.device_domains(node)),
            tuple(rules.domain_socket(node, d) for d in range(len(node.numa))),
            tuple(domain.cpus for domain in node.numa),
        )

    def tier(self, devices: tuple[int, ...]) -> str:
        domains = {self.device_domain[g] for g in devices}
        if -1 in domains:
            return rules.ALIGN_CROSS_SOCKET
        if len(domains) <= 1:
            return rules.ALIGN_NUMA
        return rules.ALIGN_SOCKET if len({self.domain_socket[d] for d in domains}) == 1 else rules.ALIGN_CROSS_SOCKET


@dataclass(frozen=True)
class Fit:
    """Pod p may start on node n: on ``devices`` (None when the node's devices are not tracked),
    with alignment ``tier`` (None without NUMA domains)."""

    devices: tuple[int, ...] | None
    tier: str | None


NO_DEVICES = Fit(None, None)
TIER_RANK = {rules.ALIGN_NUMA: 0, rules.ALIGN_SOCKET: 1, rules.ALIGN_CROSS_SOCKET: 2, None: 2}


UndoLog = list[tuple[str, int, int, tuple[int, ...] | None]]
"""What ``evict_logged`` and ``place_logged`` did, for ``undo``: (action, pod, node, devices)."""


class PreemptState:
    """Preemption view of a cluster; indexes follow ``cluster.nodes`` and ``cluster.pods``."""

    def __init__(self, cluster: Cluster, state: ClusterState | None = None):
        self.cluster = cluster
        self.cs = state if state is not None else ClusterState(cluster)
        pods = cluster.pods
        self.priority = np.array([rules.priority_of(p) for p in pods], dtype=np.int64)
        self.is_hp = np.array([p.priority == "HP" for p in pods], dtype=bool)
        self.may_be_victim = np.array([p.priority == "LP" and not p.locked and not p.standby for p in pods], dtype=bool)
        self._victim_kinds: dict[int, tuple[np.ndarray, bool]] = {}
        nan = math.nan
        self.started_s = np.array([nan if p.started_s is None else p.started_s for p in pods], dtype=np.float64)
        self.checkpoint_s = np.array([nan if p.checkpoint_s is None else p.checkpoint_s for p in pods], dtype=np.float64)
        self.interval_s = np.array([nan if p.checkpoint_interval_s is None else p.checkpoint_interval_s for p in pods], dtype=np.float64)
        n_jobs = len(cluster.jobs)
        job = self.cs.pod_job
        # a victim unit: a gang's pods together; a pod of no job, or of a job whose pods start one by
        # one (min_available 1: a Deployment's replicas), alone. A gang of min_available k > 1 is
        # evicted whole (losing pods below k kills it; evicting fewer is not modelled)
        alone = np.array([j.min_available == 1 for j in cluster.jobs] + [True], dtype=bool)[job]
        self.unit = np.where(alone, n_jobs + np.arange(len(pods)), job)
        self.n_units = n_jobs + len(pods)
        self.unit_pods: dict[int, list[int]] = {}
        for p, u in enumerate(self.unit.tolist()):
            self.unit_pods.setdefault(u, []).append(p)
        self.devices: list[tuple[int, ...] | None] = [tuple(p.gpu_indexes) if p.gpu_indexes is not None else None for p in pods]
        self.numa = [NodeNuma.of(node) for node in cluster.nodes]

    # ------------------------------------------------------------------------------------------
    # Cost and eligibility
    # ------------------------------------------------------------------------------------------

    def lost_gpu_s(self, now_s: float) -> np.ndarray:
        """Lost work of every pod if evicted at ``now_s`` (the array form of ``rules.lost_gpu_s``)."""
        started = np.nan_to_num(self.started_s, nan=0.0)
        periodic = ~np.isnan(self.interval_s) & (now_s > started)
        interval = np.where(periodic, self.interval_s, 1.0)
        from_interval = started + np.floor((now_s - started) / interval) * interval
        last = np.where(~np.isnan(self.checkpoint_s), self.checkpoint_s, np.where(periodic, from_interval, started))
        return self.cs.pod_gpus * np.maximum(0.0, now_s - last)

    def victim_mask(self, priority: int) -> np.ndarray:
        """Placed pods that may be evicted for a preemptor of ``priority``, whole gangs only: a unit
        is a candidate when every placed pod of it may be evicted."""
        placed = self.cs.pod_node != PENDING
        ok, mixed = self._victim_kind(priority)
        if not mixed:  # no unit mixes pods that may and may not be evicted: none is ever blocked
            return placed & ok
        blocked = np.bincount(self.unit[placed & ~ok], minlength=self.n_units) > 0
        return placed & ok & ~blocked[self.unit]

    def _victim_kind(self, priority: int) -> tuple[np.ndarray, bool]:
        """Pods that may be evicted for a preemptor of ``priority`` (placed or not), and whether
        some unit has both such pods and others; cached (a pod's rules do not change)."""
        cached = self._victim_kinds.get(priority)
        if cached is None:
            ok = self.may_be_victim & (self.priority < priority)
            mixed = bool(((np.bincount(self.unit[ok], minlength=self.n_units) > 0) & (np.bincount(self.unit[~ok], minlength=self.n_units) > 0)).any())
            cached = self._victim_kinds[priority] = (ok, mixed)
        return cached

    def unit_costs(self, cost: np.ndarray, placed: np.ndarray | None = None) -> np.ndarray:
        """Cost of every unit (indexed by unit id): the sum over its placed pods (a gang missing a
        member is dead, so all its work since the last checkpoint is lost); ``placed``: the placed
        pods' mask, when not now's."""
        placed = self.cs.pod_node != PENDING if placed is None else placed
        return np.bincount(self.unit[placed], weights=cost[placed], minlength=self.n_units)

    def placed_pods_of(self, unit: int) -> list[int]:
        return [p for p in self.unit_pods[unit] if self.cs.pod_node[p] != PENDING]

    # ------------------------------------------------------------------------------------------
    # Devices
    # ------------------------------------------------------------------------------------------

    def devices_tracked(self, n: int) -> bool:
        """Whether every GPU pod on node n says which devices it holds."""
        standby = self.cs.pod_standby
        return all(self.devices[q] is not None for q in self.cs.node_pods[n] if self.cs.pod_gpus[q] > 0 and not standby[q])

    def free_devices(self, n: int, leaving: tuple[int, ...] | list[int] = ()) -> list[int]:
        """Devices of node n no pod holds once ``leaving`` are gone (a share holds its device)."""
        held: set[int] = set()
        gone = set(leaving)
        for q in self.cs.node_pods[n]:
            q_devices = self.devices[q]
            if q not in gone and q_devices is not None and not self.cs.pod_standby[q]:
                held.update(q_devices)
        return [g for g in range(int(self.cs.cap_gpus[n])) if g not in held]

    def domain_free_cpus(self, n: int, leaving: tuple[int, ...] | list[int] = ()) -> list[float]:
        """CPUs left in each NUMA domain of node n by the attribution rule (``rules.attributed_cpus``)."""
        numa = self.numa[n]
        assert numa is not None
        free = list(numa.domain_cpus)
        gone = set(leaving)
        for q in self.cs.node_pods[n]:
            devices = self.devices[q]
            if q in gone or not devices or self.cs.pod_standby[q]:
                continue  # a standby pod sleeps: it draws no CPUs
            each = float(self.cs.pod_cpus[q]) / len(devices)
            for g in devices:
                d = numa.device_domain[g]
                if d >= 0:
                    free[d] -= each
        return free

    # ------------------------------------------------------------------------------------------
    # The oracle
    # ------------------------------------------------------------------------------------------

    def fitter(self, p: int, n: int, numa_mode: str | None = None, devices: bool = True) -> Callable[[tuple[int, ...]], Fit | None]:
        """``lambda leaving: self.fit(p, n, leaving, numa_mode, devices)`` for a search that asks it of
        many ``leaving`` sets on one node: the rules' check alone (no NUMA mode, no devices) reads what
        does not depend on ``leaving`` once (``leaving_check``). The same answers."""
        if numa_mode is None and not devices:
            check = leaving_check(self.cs, p, n)
            return lambda leaving: NO_DEVICES if check(leaving) else None
        return lambda leaving: self.fit(p, n, leaving, numa_mode, devices)

    def fit(self, p: int, n: int, leaving: tuple[int, ...] | list[int] = (), numa_mode: str | None = None, devices: bool = True) -> Fit | None:
        """Whether pod p may start on node n once ``leaving`` (pods on n) are gone, and where.

        ``numa_mode`` ``guaranteed`` needs an aligned device set (one socket, CPUs from the devices'
        domains); ``best-effort`` prefers one. Devices are chosen where the node tracks them; with
        ``devices=False`` and no NUMA mode only the rules are checked (a search's inner test). When
        the tracked devices are scattered so that none is whole though the count fits (shares
        spread over devices), the pod gets no device indexes, which the rules allow.
        """
        if not self.cs.fits_without(p, n, leaving):
            return None
        whole = int(self.cs.pod_whole[p])
        numa = self.numa[n]
        if numa_mode == "guaranteed":
            if numa is None or not self.devices_tracked(n):
                return None
            return self._aligned(p, n, leaving, whole, numa)
        if not devices and numa_mode is None:
            return NO_DEVICES
        if not whole or not self.devices_tracked(n):
            return NO_DEVICES
        free = self.free_devices(n, leaving)
        if len(free) < whole:
            return NO_DEVICES
        if numa is not None and numa_mode == "best-effort":
            aligned = self._aligned(p, n, leaving, whole, numa)
            if aligned is not None:
                return aligned
        chosen = tuple(free[:whole])
        return Fit(chosen, numa.tier(chosen) if numa is not None else None)

    def _aligned(self, p: int, n: int, leaving: tuple[int, ...] | list[int], whole: int, numa: NodeNuma) -> Fit | None:
        """The best aligned device set: one NUMA domain if possible, else one socket; lowest indexes."""
        if not whole:
            return Fit(None, None)  # a pod without whole GPUs draws its CPUs from the node
        free = self.free_devices(n, leaving)
        room = self.domain_free_cpus(n, leaving)
        each = float(self.cs.pod_cpus[p]) / whole
        by_socket: dict[int, list[int]] = {}
        for g in free:
            d = numa.device_domain[g]
            if d >= 0:
                by_socket.setdefault(numa.domain_socket[d], []).append(g)
        best: tuple[tuple, tuple[int, ...]] | None = None
        for socket in sorted(by_socket):
            devices = by_socket[socket]
            if len(devices) < whole:
                continue
            for chosen in itertools.combinations(devices, whole):
                need: dict[int, float] = {}
                for g in chosen:
                    d = numa.device_domain[g]
                    need[d] = need.get(d, 0.0) + each
                if any(room[d] + rules.EPS < cpus for d, cpus in need.items()):
                    continue
                key = (len(need), chosen)
                if best is None or key < best[0]:
                    best = (key, chosen)
                if len(need) == 1:
                    break
        if best is None:
            return None
        return Fit(best[1], numa.tier(best[1]))

    # ------------------------------------------------------------------------------------------
    # Mutations (a simulation applies decisions)
    # ------------------------------------------------------------------------------------------

    def evict(self, p: int) -> None:
        """Pod p is evicted: it becomes pending and holds no devices."""
        self.cs.unplace(p)
        self.devices[p] = None

    def place(self, p: int, n: int, devices: tuple[int, ...] | None) -> None:
        self.cs.place(p, n)
        self.devices[p] = devices

    def evict_logged(self, p: int, log: UndoLog) -> None:
        """``evict`` and note how to undo it in ``log``."""
        log.append(("evicted", p, int(self.cs.pod_node[p]), self.devices[p]))
        self.evict(p)

    def place_logged(self, p: int, n: int, devices: tuple[int, ...] | None, log: UndoLog) -> None:
        log.append(("placed", p, n, self.devices[p]))
        self.place(p, n, devices)

    def undo(self, log: UndoLog) -> None:
        """Reverse every change noted in ``log`` (latest first); the log is emptied."""
        while log:
            what, p, n, devices = log.pop()
            if what == "evicted":
                self.place(p, n, devices)
            else:
                self.cs.unplace(p)
                self.devices[p] = devices

    def clone(self) -> PreemptState:
        twin = object.__new__(PreemptState)
        twin.__dict__.update(self.__dict__)
        twin.cs = self.cs.clone()
        twin.devices = list(self.devices)
        return twin


@dataclass
class Ask:
    """One preemption decision as the heuristics and the exact model see it.

    Place ``pods`` (indexes, pending, of job ``job``), at least ``min_placed`` of them, for a
    preemptor of ``priority``; evict only ``victims`` (a mask: placed pods that may be evicted, whole
    gangs), each unit (gang) costing ``unit_cost`` GPU-seconds at ``now_s``. ``preemptive`` is False
    when no pod may be evicted for this job: victims are spot pods of strictly lower priority, so a
    spot job at the default spot priority is placed strictly without preemption (SpotGPU's rule),
    while one with a ``priority_value`` may preempt lower ones (Kubernetes' rule, FlexTopo's C over D).
    """

    job: int
    job_name: str
    pods: list[int]
    min_placed: int
    priority: int
    preemptive: bool
    numa_mode: str | None
    now_s: float
    pod_cost: np.ndarray
    victims: np.ndarray
    unit_cost: np.ndarray  # by unit id
    level: int  # required topology: 0 none, 1 asw, 2 spine
    nodes: np.ndarray | None = None
    """Nodes the job may use (None: all); a reactivation may use only its pod's node."""

    @staticmethod
    def of(ps: PreemptState, job: int, now_s: float, cost_of: Callable[[np.ndarray], np.ndarray] | None = None, pods: list[int] | None = None) -> Ask:
        """The decision for job index ``job`` at ``now_s`` (the request was checked by the caller).
        ``cost_of``: each pod's lost work if evicted now, from the mask of placed pods, when the
        caller knows it better than ``ps.lost_gpu_s``; the costs are then computed on first use
        (a placement that evicts nobody never reads them), for the pods placed when asked.
        ``pods``: the job's pod indexes in ascending order, when the caller keeps them (else found
        by a scan of every pod)."""
        cluster = ps.cluster
        name = cluster.jobs[job].name
        pods = [int(p) for p in np.flatnonzero(ps.cs.pod_job == job)] if pods is None else list(pods)
        priority = int(ps.priority[pods].min()) if pods else rules.HP_PRIORITY
        spec = cluster.jobs[job]
        victims = ps.victim_mask(priority)
        fields: dict[str, Any] = {
            "job": job,
            "job_name": name,
            "pods": pods,
            "min_placed": spec.min_available if spec.min_available is not None else len(pods),
            "priority": priority,
            "preemptive": bool(victims.any()),
            "numa_mode": spec.numa.mode if spec.numa is not None else None,
            "now_s": now_s,
            "victims": victims,
            "level": int(ps.cs.job_level[job]),
        }
        if cost_of is not None:
            placed = ps.cs.pod_node != PENDING

            def costs() -> tuple[np.ndarray, np.ndarray]:
                cost = cost_of(placed)
                return cost, ps.unit_costs(cost, placed)

            return LazyCostAsk(costs=costs, **fields)
        cost = ps.lost_gpu_s(now_s)
        return Ask(pod_cost=cost, unit_cost=ps.unit_costs(cost), **fields)


def _lazy_cost(index: int) -> property:
    """A ``LazyCostAsk`` field read from its ``(pod_cost, unit_cost)`` pair, computed on first read."""

    def get(self: LazyCostAsk) -> np.ndarray:
        if self._costs is not None:
            self._values, self._costs = list(self._costs()), None
        return self._values[index]  # type: ignore[return-value]  # None only before costs() ran, filled just above

    def set(self: LazyCostAsk, value: np.ndarray | None) -> None:
        if value is not None:  # a given value (dataclasses.replace passes both)
            get(self)
            self._values[index] = value

    return property(get, set)


class LazyCostAsk(Ask):
    """An ``Ask`` whose ``pod_cost`` and ``unit_cost`` come from ``costs()`` when first read.
    ``dataclasses.replace`` reads them, so a copy holds them as plain values."""

    pod_cost = _lazy_cost(0)
    unit_cost = _lazy_cost(1)

    def __init__(self, costs: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None, **fields: Any):
        self._costs = costs
        self._values: list[np.ndarray | None] = [None, None]
        super().__init__(**{"pod_cost": None, "unit_cost": None, **fields})


def leaving_check(cs: ClusterState, p: int, n: int) -> Callable[[tuple[int, ...]], bool]:
    """``lambda leaving: cs.fits_without(p, n, leaving)``, what does not depend on ``leaving`` read once:
    the static rules and the job's topology (whole answers), the node's usage and capacity. A victim
    search asks it of hundreds of sets per node (issue 62: 60% of a decision went to the general check's
    numpy reads and unpacking). A pod with anti-affinity groups, named resources or standby
    reservations on the cluster gets the general check. The sums are taken pod by pod in the order
    of ``leaving``, as ``ClusterState._resources_fit`` takes them, so every float comparison is its."""
    if not (cs.eligible[cs.pod_signature[p], n] and cs._topology_ok(p, n)):
        return lambda leaving: False
    scalars = cs._pod_scalars
    whole, cpus, mem, share, groups, _, _ = scalars[p]
    if cs.has_named or cs.has_standby or groups:
        return lambda leaving: cs._resources_fit(p, n, leaving) and cs._anti_affinity_ok(p, n, leaving)
    used_whole, used_cpus, used_mem = int(cs.whole_used[n]), float(cs.used_cpus[n]), float(cs.used_mem[n])
    cpu_limit, mem_limit = float(cs.cap_cpus[n] + rules.EPS), float(cs.cap_mem[n] + rules.EPS)
    cap, devices = int(cs.cap_gpus[n]), int(cs.share_devices[n])
    node_shares = list(cs.node_shares.get(n, ()))
    now = cs._resources_fit(p, n, ())

    def check(leaving: tuple[int, ...]) -> bool:
        if not leaving:
            return now
        left_whole, left_cpus, left_mem = used_whole, used_cpus, used_mem
        shares_left = None
        for q in leaving:
            q_whole, q_cpus, q_mem, q_share = scalars[q][:4]
            left_whole -= q_whole
            left_cpus -= q_cpus
            left_mem -= q_mem
            if q_share:
                if shares_left is None:
                    shares_left = list(node_shares)
                shares_left.remove(q_share)
        if left_cpus + cpus > cpu_limit or left_mem + mem > mem_limit:
            return False
        if shares_left is not None:
            return left_whole + whole + len(rules.pack_shares([*shares_left, share] if share else shares_left)) <= cap
        if share and cap - left_whole - devices < 1:
            return left_whole + len(rules.pack_shares([*node_shares, share])) <= cap
        return left_whole + devices + whole + (1 if share else 0) <= cap

    return check
