"""A fast mutable view of a cluster for hot loops: numpy arrays and small indexes.

``ClusterState`` holds per-node usage and per-pod requests as arrays and answers "may pod p have a
copy on node n now?" incrementally (``fits``) and for all nodes at once (``feasible_nodes``). These
are the fast forms of the rules in ``rules``; the static rules (schedulable, GPU model, selector,
taints and tolerations, required node affinity) and topology domains are derived from ``rules``
itself (``rules.may_arrive``), and tests compare both forms on random data.

The check is make-before-break: the pod's current copy (if any) stays where it is while the new copy
is tested, so a single move checked here is legal as one wave.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import cast

import numpy as np

from planner import rules
from planner.cluster import Cluster
from planner.state_build import (
    Counts,
    MaskEntry,
    PodScalars,
    StateArrays,
    _domain_ids,
    _eligibility,
    capacity_entry,
    clone_state,
    place_all,
    pod_scalars,
    set_pod_requests,
    subset_state,
)

EPS = rules.EPS
PENDING = -1


class ClusterState(StateArrays):
    """Array state of a cluster. Indexes follow ``cluster.nodes`` and ``cluster.pods``."""

    def __init__(self, cluster: Cluster):
        self.cluster: Cluster | None = cluster
        nodes, pods = cluster.nodes, cluster.pods
        self.node_ids = np.arange(len(nodes), dtype=np.int64)  # index into cluster.nodes
        self.pod_ids = np.arange(len(pods), dtype=np.int64)  # index into cluster.pods
        self.node_names = [n.name for n in nodes]
        self.node_index = {name: i for i, name in enumerate(self.node_names)}
        self.pod_names = [p.name for p in pods]
        self.pod_index = {name: i for i, name in enumerate(self.pod_names)}

        self.cap_gpus = np.array([n.gpus for n in nodes], dtype=np.int64)
        self.cap_cpus = np.array([n.cpus for n in nodes], dtype=np.float64)
        self.cap_mem = np.array([n.memory_gib for n in nodes], dtype=np.float64)
        self.schedulable = np.array([n.schedulable for n in nodes], dtype=bool)
        models: dict[str, int] = {}
        self.node_model = np.array([models.setdefault(n.gpu_model, len(models)) for n in nodes], dtype=np.int64)
        self.asw_domain = _domain_ids(nodes, "asw")
        self.spine_domain = _domain_ids(nodes, "spine")

        set_pod_requests(self, pods)

        # Static rules (rules.may_arrive) per distinct pod signature and node profile.
        self.pod_signature, self.eligible = _eligibility(nodes, pods)

        groups: dict[str, int] = {}
        self.pod_groups: list[tuple[int, ...]] = [tuple(groups.setdefault(g, len(groups)) for g in rules.conflict_groups(p)) for p in pods]
        self.group_names = list(groups)
        self.group_nodes: dict[int, Counts] = defaultdict(Counts)

        job_index = cluster.job_index()
        self.pod_job = np.array([job_index[p.job] if p.job is not None else -1 for p in pods], dtype=np.int64)
        self.job_level = np.zeros(len(cluster.jobs), dtype=np.int8)  # 0 free, 1 asw, 2 spine (int8: every piece carries it)
        for j, job in enumerate(cluster.jobs):
            if job.topology is not None and job.topology.mode == "required":
                self.job_level[j] = 1 if job.topology.level == "asw" else 2
        self.job_domains: dict[int, Counts] = defaultdict(Counts)

        n_nodes = len(nodes)
        self.whole_used = np.zeros(n_nodes, dtype=np.int64)
        self.share_devices = np.zeros(n_nodes, dtype=np.int64)
        self.share_sum = np.zeros(n_nodes, dtype=np.float64)
        self.used_cpus = np.zeros(n_nodes, dtype=np.float64)
        self.used_mem = np.zeros(n_nodes, dtype=np.float64)
        self.used_res = np.zeros(self.cap_res.shape, dtype=np.int64)
        # A column can bind only where usage comes near the node's allocatable: the least allocatable
        # of each column and the most any node has used of it so far (never lowered) let the checks skip
        # columns such as the pod count or ephemeral storage that are far from binding anywhere.
        self._res_floor = self.cap_res.min(axis=0).tolist() if self.has_named and len(nodes) else [0] * len(self.res_names)
        self._res_peak = [0] * len(self.res_names)
        self.node_shares: dict[int, list[float]] = defaultdict(list)
        self.node_pods: list[set[int]] = [set() for _ in range(n_nodes)]
        self.node_stamp = [0] * n_nodes  # per node, the ``version`` of its last change (callers cache per node)
        self.standby_on = np.zeros(n_nodes, dtype=np.int64)
        self.hp_whole = np.zeros(n_nodes, dtype=np.int64)
        self.hp_cpus = np.zeros(n_nodes, dtype=np.float64)
        self.hp_mem = np.zeros(n_nodes, dtype=np.float64)
        self.hp_shares: dict[int, list[float]] = defaultdict(list)
        self.pods_per_node = np.zeros(n_nodes, dtype=np.int64)
        self.hp_pods_per_node = np.zeros(n_nodes, dtype=np.int64)  # placed HP pods, standby ones included
        self.pod_node = np.full(len(pods), PENDING, dtype=np.int64)
        self.version = 0  # counts changes to the per-node usage (callers cache what they derive from it)
        self._mask_cache: dict[tuple[object, ...], MaskEntry] = {}
        self._mask_version = -1  # -1: the cache and its log start afresh (as a clone, subset or unpickled copy)
        self._mask_log: list[int] = []  # each change's node while the cache holds masks (``capacity_entry``)
        self._pod_scalars: list[PodScalars] = pod_scalars(self)
        self._bulk = False
        node_index = self.node_index
        placed = [(p, node_index[pod.node]) for p, pod in enumerate(pods) if pod.node is not None]
        place_all(self, np.array([p for p, _ in placed], dtype=np.int64), np.array([n for _, n in placed], dtype=np.int64))
        for n, shares in self.node_shares.items():
            self._settle_shares(n, shares)

    # ------------------------------------------------------------------------------------------
    # Derived quantities
    # ------------------------------------------------------------------------------------------

    def free_devices(self) -> np.ndarray:
        """GPU devices per node with nothing on them."""
        return self.cap_gpus - self.whole_used - self.share_devices

    def allocated_gpus(self) -> np.ndarray:
        """GPUs allocated per node: whole GPUs plus the sum of shares."""
        return self.whole_used + self.share_sum

    def pod_count(self) -> np.ndarray:
        """Pods (copies, during a wave) per node."""
        return self.pods_per_node.copy()

    def domain_of(self, job: int) -> np.ndarray:
        return self.asw_domain if self.job_level[job] == 1 else self.spine_domain

    # ------------------------------------------------------------------------------------------
    # Mutations
    # ------------------------------------------------------------------------------------------

    def place(self, p: int, n: int) -> None:
        """Put a copy of pod p on node n (no check; call ``fits`` first)."""
        self.pod_node[p] = n
        self._add(p, n, +1)

    def unplace(self, p: int) -> None:
        """Remove pod p from its node (it becomes pending in this view)."""
        n = int(self.pod_node[p])
        if n != PENDING:
            self._add(p, n, -1)
            self.pod_node[p] = PENDING

    def move(self, p: int, n: int) -> None:
        """Pod p ends on node n (the end state of a migration)."""
        self.unplace(p)
        self.place(p, n)

    def add_copy(self, p: int, n: int) -> None:
        """Start pod p's new copy on node n while its old copy still holds its node (make-before-break)."""
        self._add(p, n, +1)

    def finish_move(self, p: int, n: int) -> None:
        """Release pod p's old copy; its copy on n (from ``add_copy``) is now the pod."""
        self._add(p, int(self.pod_node[p]), -1)
        self.pod_node[p] = n

    def _add(self, p: int, n: int, sign: int) -> None:
        self.version += 1
        if self._mask_cache:
            self._mask_log.append(n)
        whole, cpus, mem, share, groups, domain, hp = self._pod_scalars[p]
        if whole:
            self.whole_used[n] += sign * whole
        if cpus:
            self.used_cpus[n] += sign * cpus
        if mem:
            self.used_mem[n] += sign * mem
        if self.has_named:
            used, peak = self.used_res, self._res_peak
            for r, amount in self._pod_named[p]:
                used[n, r] += sign * amount
                if sign > 0 and used[n, r] > peak[r]:
                    peak[r] = int(used[n, r])
        if share:
            shares = self.node_shares[n]
            if sign > 0:
                shares.append(share)
            else:
                shares.remove(share)
            if not self._bulk:
                self._settle_shares(n, shares)
        if self.has_standby:
            self._reserve_add(p, n, sign)
        if sign > 0:
            self.node_pods[n].add(p)
        else:
            self.node_pods[n].discard(p)
        self.node_stamp[n] = self.version
        self.pods_per_node[n] += sign
        if hp:
            self.hp_pods_per_node[n] += sign
        for g in groups:
            counts = self.group_nodes[g]
            counts[n] += sign
            if counts[n] == 0:
                del counts[n]
        if domain is not None:
            domains = self.job_domains[int(self.pod_job[p])]
            d = int(domain[n])
            domains[d] += sign
            if domains[d] == 0:
                del domains[d]

    def _reserve_add(self, p: int, n: int, sign: int) -> None:
        """Keep the HP reservations of node n (standby pods included) up to date."""
        if self.pod_standby[p]:
            self.standby_on[n] += sign
        reserve = self._reserve[p]
        if reserve is None:
            return
        whole, cpus, mem, share = reserve
        self.hp_whole[n] += sign * whole
        self.hp_cpus[n] += sign * cpus
        self.hp_mem[n] += sign * mem
        if share:
            if sign > 0:
                self.hp_shares[n].append(share)
            else:
                self.hp_shares[n].remove(share)

    def _reservations_ok(self, p: int, nodes: np.ndarray) -> np.ndarray:
        """``_reservation_ok`` with nobody leaving, for each of ``nodes`` at once: whole GPUs, CPUs
        and memory as arrays; nodes whose HP pods hold GPU shares (or any node, when p holds a
        share) pack their shares one node at a time."""
        if (reserve := self._reserve[p]) is None:  # nothing reserved (callers check first): as ``_reservation_ok``
            return np.ones(len(nodes), dtype=bool)
        whole, cpus, mem, share = reserve
        ok: np.ndarray = (
            (self.hp_cpus[nodes] + cpus <= self.cap_cpus[nodes] + EPS)
            & (self.hp_mem[nodes] + mem <= self.cap_mem[nodes] + EPS)
            & (self.hp_whole[nodes] + whole <= self.cap_gpus[nodes])
        )
        if share or any(self.hp_shares.values()):
            for k, n in enumerate(nodes.tolist()):
                if share or self.hp_shares.get(n):
                    ok[k] = self._reservation_ok(p, n, ())
        return ok

    def _reservation_ok(self, p: int, n: int, leaving: tuple[int, ...] | list[int]) -> bool:
        """With pod p on node n and ``leaving`` gone, do the node's HP pods (standby included) fit?"""
        reserve = self._reserve[p]
        if reserve is None:
            return True
        whole, cpus, mem, share = reserve
        used_whole, used_cpus, used_mem = int(self.hp_whole[n]) + whole, float(self.hp_cpus[n]) + cpus, float(self.hp_mem[n]) + mem
        shares = list(self.hp_shares.get(n, ()))
        for q in leaving:
            other = self._reserve[q]
            if other is not None:
                used_whole -= other[0]
                used_cpus -= other[1]
                used_mem -= other[2]
                if other[3]:
                    shares.remove(other[3])
        if share:
            shares.append(share)
        fits = used_cpus <= self.cap_cpus[n] + EPS and used_mem <= self.cap_mem[n] + EPS and used_whole + len(rules.pack_shares(shares)) <= self.cap_gpus[n]
        return bool(fits)

    def _settle_shares(self, n: int, shares: list[float]) -> None:
        """Share sum and devices of node n from the shares now there.

        The sum is exact (``math.fsum``): independent of the order shares came and went in, so every
        path to the same placement reports the same allocation (plan metrics compare equal).
        """
        self.share_sum[n] = math.fsum(shares)
        self.share_devices[n] = len(rules.pack_shares(shares))

    def enable_standby(self) -> None:
        """Track HP reservations from now on, so pods may go on standby and wake (``set_standby``)."""
        if self.has_standby:
            return
        whole, share, cpus, mem = self._awake
        self.has_standby = True
        self.version += 1
        self._reserve = [
            (int(w), float(c), float(m), float(sh)) if hp else None
            for w, c, m, sh, hp in zip(whole.tolist(), cpus.tolist(), mem.tolist(), share.tolist(), self.pod_hp.tolist())
        ]
        for n, pods in enumerate(self.node_pods):
            for p in pods:
                self._reserve_add(p, n, +1)

    def set_standby(self, p: int, on: bool) -> None:
        """Pending HP pod p becomes a standby pod (it will hold no resources and keep its reservation)
        or an awake one (it holds its request again). Call ``enable_standby`` first; place p after.
        The per-pod arrays change in place, so clones made earlier see it: for a simulation's own state."""
        if not self.has_standby or self.pod_node[p] != PENDING or not self.pod_hp[p]:
            raise ValueError(f"set_standby: pod {p} must be a pending HP pod of a state with standby enabled")
        whole, share, cpus, mem = (float(a[p]) for a in self._awake)
        self.pod_standby[p] = on
        self.pod_whole[p] = 0 if on else int(whole)
        self.pod_share[p] = 0.0 if on else share
        self.pod_cpus[p] = 0.0 if on else cpus
        self.pod_mem[p] = 0.0 if on else mem
        self.pod_locked[p] = bool(self._pod_locked_own[p]) or on
        _, _, _, _, groups, domain, hp = self._pod_scalars[p]
        self._pod_scalars[p] = (int(self.pod_whole[p]), float(self.pod_cpus[p]), float(self.pod_mem[p]), float(self.pod_share[p]), groups, domain, hp)

    # ------------------------------------------------------------------------------------------
    # Rule checks (fast forms of rules/)
    # ------------------------------------------------------------------------------------------

    def fits(self, p: int, n: int) -> bool:
        """May pod p get a copy on node n now, its current copy (if any) staying where it is?"""
        return self.fits_without(p, n, ())

    def fits_without(self, p: int, n: int, leaving: tuple[int, ...] | list[int]) -> bool:
        """``fits(p, n)`` once the pods ``leaving`` (all on node n) have gone: the test of an ejection."""
        return (
            bool(self.eligible[self.pod_signature[p], n])
            and self._resources_fit(p, n, leaving)
            and self._anti_affinity_ok(p, n, leaving)
            and self._topology_ok(p, n)
        )

    def broken_rules(self, p: int, n: int) -> list[str]:
        """Names of the rules (``rules`` constants) a copy of p on node n would break."""
        broken = []
        if not self.eligible[self.pod_signature[p], n]:
            broken.append(self._static_rule(p, n))
        if not self._resources_fit(p, n, ()):
            broken.append(rules.OVER_CAPACITY)
        if not self._anti_affinity_ok(p, n, ()):
            broken.append(rules.ANTI_AFFINITY)
        if not self._topology_ok(p, n):
            broken.append(rules.JOB_TOPOLOGY)
        return broken

    def _resources_fit(self, p: int, n: int, leaving: tuple[int, ...] | list[int]) -> bool:
        whole, cpus, mem, share, *_ = self._pod_scalars[p]
        used_whole = int(self.whole_used[n])
        used_cpus = float(self.used_cpus[n])
        used_mem = float(self.used_mem[n])
        shares_left = None
        for q in leaving:
            q_whole, q_cpus, q_mem, q_share, *_ = self._pod_scalars[q]
            used_whole -= q_whole
            used_cpus -= q_cpus
            used_mem -= q_mem
            if q_share:
                if shares_left is None:
                    shares_left = list(self.node_shares[n])
                shares_left.remove(q_share)
        if used_cpus + cpus > self.cap_cpus[n] + EPS or used_mem + mem > self.cap_mem[n] + EPS:
            return False
        if self.has_named:  # only the resources p asks for can go over (the others only shrink)
            used, cap_res, peak, floor = self.used_res, self.cap_res, self._res_peak, self._res_floor
            for r, amount in self._pod_named[p]:
                if peak[r] + amount <= floor[r]:
                    continue  # no node is near its allocatable of r
                total = int(used[n, r]) + amount
                for q in leaving:  # the pairs, not pod_res: numpy scalar reads cost more than the loop
                    for column, q_amount in self._pod_named[q]:
                        if column == r:
                            total -= q_amount
                if total > cap_res[n, r]:
                    return False
        if self.has_standby and (self.standby_on[n] > 0 or self.pod_standby[p]) and not self._reservation_ok(p, n, leaving):
            return False
        cap = int(self.cap_gpus[n])
        if shares_left is not None:
            devices = len(rules.pack_shares([*shares_left, share] if share else shares_left))
            return used_whole + whole + devices <= cap
        devices = int(self.share_devices[n])
        if share and cap - used_whole - devices < 1:
            return used_whole + len(rules.pack_shares([*self.node_shares.get(n, ()), share])) <= cap
        return used_whole + devices + whole + (1 if share else 0) <= cap

    def _anti_affinity_ok(self, p: int, n: int, leaving: tuple[int, ...] | list[int]) -> bool:
        groups = self._pod_scalars[p][4]
        for g in groups:
            others = self.group_nodes[g].get(n, 0) - (1 if self.pod_node[p] == n else 0)
            others -= sum(1 for q in leaving if g in self._pod_scalars[q][4])
            if others > 0:
                return False
        return True

    def _topology_ok(self, p: int, n: int) -> bool:
        domain = self._pod_scalars[p][5]
        if domain is None:
            return True
        d = int(domain[n])
        return all(other == d for other in self.job_domains[int(self.pod_job[p])])

    def _static_rule(self, p: int, n: int) -> str:
        if not self.schedulable[n]:
            return rules.UNSCHEDULABLE
        if self.cluster is None:  # a pickled subset: the explanation cannot be finer
            return rules.GPU_MODEL
        pod, node = self.cluster.pods[self.pod_ids[p]], self.cluster.nodes[self.node_ids[n]]
        breaks = rules.static_rule_breaks(pod, node)
        return breaks[0].rule if breaks else rules.NODE_SELECTOR

    def feasible_nodes(self, p: int, among: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask of nodes (or of the node indexes ``among``) that may receive a copy of p.

        The pod's current node is excluded: staying is not a move.
        """
        if among is None:
            mask = self._capacity_mask_cached(p).copy()
        else:
            mask = self._capacity_mask(p, among)
        excluded = [int(n) for g in self.pod_groups[p] for n in self.group_nodes[g] if n != self.pod_node[p]]
        if self.pod_node[p] != PENDING:
            excluded.append(int(self.pod_node[p]))
        if excluded:
            if among is None:
                mask[excluded] = False
            else:
                mask &= ~np.isin(among, excluded)
        return mask

    def _capacity_mask_cached(self, p: int) -> np.ndarray:
        """``_capacity_mask(p)`` over every node, shared (read-only) by the pods of p's shape until
        the usage changes (``version``): a failed ejection chain asks it of the same few shapes many
        times over between two moves."""
        return self._capacity_entry(p)[0]

    def room_anywhere(self, p: int) -> bool:
        """Whether some node passes ``_capacity_mask(p)``; when none does, ``feasible_nodes(p)`` is
        empty whatever else is excluded (cached as the mask is)."""
        return self._capacity_entry(p)[1]

    def _capacity_entry(self, p: int) -> tuple[np.ndarray, bool]:
        return capacity_entry(self, p)  # kept per shape; a change recomputes only its nodes

    def _shape_key(self, p: int) -> tuple[object, ...]:
        """Everything of pod p that ``_capacity_mask`` reads: pods with equal keys get equal masks."""
        whole, cpus, mem, share, _, _, _ = self._pod_scalars[p]
        j = int(self.pod_job[p])
        key = (int(self.pod_signature[p]), whole, cpus, mem, share, self._pod_named[p] if self.has_named else (), j if j >= 0 and self.job_level[j] else -1)
        return (*key, self._reserve[p], bool(self.pod_standby[p])) if self.has_standby else key

    def _capacity_mask(self, p: int, idx: slice | np.ndarray) -> np.ndarray:
        """Nodes (of ``idx``) where a copy of p passes the static rules, fits the resources and the
        reservations and keeps its job's required domain; conflicts and p's own node are not looked at."""
        mask = self.eligible[self.pod_signature[p], idx].copy()
        mask &= self.used_cpus[idx] + self.pod_cpus[p] <= self.cap_cpus[idx] + EPS
        mask &= self.used_mem[idx] + self.pod_mem[p] <= self.cap_mem[idx] + EPS
        for r, amount in self._pod_named[p] if self.has_named else ():  # the columns p asks for (the others only shrink)
            if self._res_peak[r] + amount > self._res_floor[r]:
                mask &= self.used_res[idx, r] + amount <= self.cap_res[idx, r]
        free = self.cap_gpus[idx] - self.whole_used[idx] - self.share_devices[idx]
        share = float(self.pod_share[p])
        if share > 0:
            # shares need room on a device: none without at least that much idle GPU capacity
            tight = mask & (free < 1) & (self.cap_gpus[idx] - self.whole_used[idx] - self.share_sum[idx] >= share - EPS)
            mask &= free >= 1
            nodes = np.arange(len(self.node_names))[idx]
            for k in np.flatnonzero(tight):
                mask[k] = self._resources_fit(p, int(nodes[k]), ())
        else:
            mask &= free >= self.pod_whole[p]
        if self.has_standby and self._reserve[p] is not None:
            nodes = np.arange(len(self.node_names))[idx]
            reserved = self.standby_on[idx] > 0 if not self.pod_standby[p] else np.ones(len(nodes), dtype=bool)
            check = np.flatnonzero(mask & reserved)
            if len(check):
                mask[check] = self._reservations_ok(p, nodes[check])
        j = int(self.pod_job[p])
        if j >= 0 and self.job_level[j] and self.job_domains[j]:
            domains = list(self.job_domains[j])
            mask &= (self.domain_of(j)[idx] == domains[0]) if len(domains) == 1 else False
        return mask

    # ------------------------------------------------------------------------------------------
    # Sub-states for independent partitions
    # ------------------------------------------------------------------------------------------

    def subset(self, nodes: np.ndarray) -> ClusterState:
        """An independent state over ``nodes`` (indexes of this state) and the pods placed on them.

        Rules that span nodes stay exact: anti-affinity is per node, and a required job's domain
        counts come from this whole state. ``node_ids``/``pod_ids`` map back to the cluster.
        """
        return cast(ClusterState, subset_state(self, nodes))

    def clone(self) -> ClusterState:
        """An independent copy (the pydantic cluster and static arrays are shared, not copied)."""
        return cast(ClusterState, clone_state(self))

    def __getstate__(self) -> dict[str, object]:
        """Pickle without the pydantic cluster (partitions travel to worker processes as arrays)."""
        return {**self.__dict__, "cluster": None, "_mask_cache": {}, "_mask_version": -1}
