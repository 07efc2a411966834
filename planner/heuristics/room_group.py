"""The room heuristic's ejection chains (``switch_room.py``): IPC's ``EjectionGroup`` run on one trail
over a whole large cluster, shielded from the domains being cleared and protected.

Every question a chain step asks (which nodes may receive the pod, which fits it best, where an
ejection could make room) reads per-node quantities of all nodes. IPC recomputes them after every
move, which is cheap on its 500-node partitions; here the state has tens of thousands of nodes and a
move changes two. So the group keeps them (free devices, free CPUs and memory, the open nodes, the
movable pods' sums) and recomputes only the nodes its moves and undone moves touched (``_changed``).
The answers are IPC's, draw for draw: the same nodes in the same order and the same random
tie-breaks (tests/unit/test_room_group.py compares them with ``EjectionGroup``'s).
"""

from __future__ import annotations

import numpy as np

from planner.heuristics.ipc import EjectionGroup, GroupTask

FEW_NODES = 64
"""Up to this many nodes, the movable pods' sums test the nodes' pods one by one."""


class ShieldedGroup(EjectionGroup):
    """Ejection chains that never send a pod onto the ``shield`` nodes (a mask: the thousands of
    nodes of a large cluster's shielded switches, which a set of blocked nodes would walk at every
    step), with IPC's per-node quantities kept up to date on the nodes moves touch."""

    def __init__(self, task: GroupTask):
        super().__init__(task)
        s = self.state
        self._shield: np.ndarray | None = None
        self._unshielded: np.ndarray | None = None
        self.unbound = np.zeros(len(s.pod_names), dtype=bool)
        self._movable_gone: dict[float, tuple[int, int, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._changed: list[int] = []  # the nodes of every move and undone move, in order (the caches note how far they read)
        self._synced = 0  # the arrays below are up to date for ``_changed[:_synced]``
        self._free_dev = s.cap_gpus - s.whole_used - s.share_devices
        self._cpu_free = s.cap_cpus - s.used_cpus
        self._mem_free = s.cap_mem - s.used_mem
        with np.errstate(divide="ignore", invalid="ignore"):  # a node without CPUs: as IPC's own division
            self._cpu_share = self._cpu_free / s.cap_cpus  # the free fraction of the CPUs (``_best_fit``'s second key)

        self._open_for: tuple[int, bool] | None = None  # (vacated_count, into_empty) the open mask is for

    @property
    def shield(self) -> np.ndarray | None:
        return self._shield

    @shield.setter
    def shield(self, mask: np.ndarray | None) -> None:
        self._shield = mask
        self._unshielded = None if mask is None else ~mask

    def _sync(self) -> None:
        """Recount the kept per-node quantities on the nodes changed since the last look."""
        if self._synced == len(self._changed):
            return
        nodes = sorted(set(self._changed[self._synced :]))  # a list indexes as an array would
        self._synced = len(self._changed)
        s = self.state
        self._free_dev[nodes] = s.cap_gpus[nodes] - s.whole_used[nodes] - s.share_devices[nodes]
        self._cpu_free[nodes] = s.cap_cpus[nodes] - s.used_cpus[nodes]
        self._mem_free[nodes] = s.cap_mem[nodes] - s.used_mem[nodes]
        with np.errstate(divide="ignore", invalid="ignore"):
            self._cpu_share[nodes] = self._cpu_free[nodes] / s.cap_cpus[nodes]
        if self._open_for is not None:
            self._open[nodes] = self._open_at(nodes)

    def _open_at(self, nodes: list[int] | slice) -> np.ndarray:
        s = self.state
        return ((s.pods_per_node[nodes] > 0) | self.into_empty) & ~self.vacated[nodes] & (self.allowance[nodes] > 0)

    def _open_nodes(self) -> np.ndarray:
        """``EjectionGroup._open_nodes``, kept up to date node by node (moves change the allowance and
        the pods of their two nodes only)."""
        self._sync()
        key = (self.vacated_count, self.into_empty)
        if self._open_for != key:
            self._open = self._open_at(slice(None))
            self._open_for = key
        return self._open

    def _destinations(self, p: int, blocked: frozenset[int]) -> np.ndarray:
        ok = super()._destinations(p, blocked)
        if self._unshielded is not None:
            ok &= self._unshielded
        return ok

    def _movable_gone_sums(self, gpus: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node, the devices, CPUs and GiB of its movable pods of at most ``gpus`` GPUs not in the
        trail (``EjectionGroup._room_with_movable_gone``'s sums, pod by pod in index order), kept per
        threshold and recounted only on the nodes moves changed since: the room heuristic's chains
        run on one trail, so the parent's cache is invalid after every move and a recount over every
        pod of a large cluster at each chain step dominated its time. The movable pods' inputs change
        only with the usage of their node: a pod joins ``in_trail`` when it moves, and only pods of
        the trail are locked."""
        kept = self._movable_gone.get(gpus)
        if kept is None or kept[0] != self.trail_epoch:
            nodes = np.arange(len(self.state.node_names))
            kept = self._movable_gone[gpus] = (self.trail_epoch, len(self._changed), *self._movable_sums(nodes, gpus))
        elif kept[1] != len(self._changed):
            nodes = np.unique(np.array(self._changed[kept[1] :], dtype=np.int64))
            _, _, gpus_out, cpus_out, mem_out = kept
            gpus_out[nodes], cpus_out[nodes], mem_out[nodes] = self._movable_sums(nodes, gpus)
            kept = self._movable_gone[gpus] = (self.trail_epoch, len(self._changed), gpus_out, cpus_out, mem_out)
        return kept[2], kept[3], kept[4]

    def _room_with_movable_gone(self, gpus: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._sync()
        gpus_out, cpus_out, mem_out = self._movable_gone_sums(gpus)
        return gpus_out, self._cpu_free + cpus_out, self._mem_free + mem_out

    def _move(self, p: int, n: int) -> None:
        self._changed += (int(self.state.pod_node[p]), n)
        super()._move(p, n)

    def rollback(self, mark: int) -> None:
        for _, source, destination in self.trail[mark:]:
            self._changed += (source, destination)
        super().rollback(mark)

    def _movable_sums(self, nodes: np.ndarray, gpus: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per node of ``nodes``: the devices, CPUs and GiB of its movable pods of at most ``gpus`` GPUs not in the trail."""
        s = self.state
        if len(nodes) > FEW_NODES:
            movable = ~s.pod_locked & (s.pod_gpus <= gpus) & (s.pod_node >= 0)
            pods = np.array(sorted(q for n in nodes.tolist() for q in s.node_pods[n] if movable[q] and q not in self.in_trail), dtype=np.int64)
        else:  # the same test pod by pod: masks over every pod cost more than the few pods of a few nodes
            locked, pod_gpus = s.pod_locked, s.pod_gpus
            pods = np.array(
                sorted(q for n in nodes.tolist() for q in s.node_pods[n] if not locked[q] and pod_gpus[q] <= gpus and q not in self.in_trail), dtype=np.int64
            )
        where = np.searchsorted(nodes, s.pod_node[pods])
        size = len(nodes)
        return (
            np.bincount(where, weights=s.pod_whole[pods] + (s.pod_share[pods] > 0), minlength=size),
            np.bincount(where, weights=s.pod_cpus[pods], minlength=size),
            np.bincount(where, weights=s.pod_mem[pods], minlength=size),
        )

    def _best_fit(self, p: int, nodes: np.ndarray) -> int:
        """``EjectionGroup._best_fit``'s node (the first of its sort: fewest free GPUs, then fewest free
        CPUs, then the tie-break draw, which is drawn as there), found by three minima."""
        self._sync()
        free_dev = self._free_dev[nodes]
        tiebreak = self.rng.random(len(nodes))
        keep = np.flatnonzero(free_dev == free_dev.min())
        free_cpu = self._cpu_share[nodes[keep]]
        keep = keep[free_cpu == free_cpu.min()]
        return int(nodes[keep[np.argmin(tiebreak[keep])]])

    def _ejection_targets(self, p: int, allowed: np.ndarray) -> list[int]:
        """``EjectionGroup._ejection_targets`` (the same nodes in the same order, the same draws), on
        the allowed nodes only and with the kept per-node quantities; the first ``branching`` of its
        order found without sorting every candidate."""
        s = self.state
        self._sync()
        whole, _, _, share, *_ = s._pod_scalars[p]
        need = whole + (1 if share > 0 else 0)
        at = np.flatnonzero(allowed)
        gpus_out, cpus_out, mem_out = self._movable_gone_sums(float(s.pod_gpus[p]))
        deficit = np.maximum(need - self._free_dev[at], 0)
        ok = gpus_out[at] >= deficit
        ok &= self._cpu_free[at] + cpus_out[at] >= s.pod_cpus[p]
        ok &= self._mem_free[at] + mem_out[at] >= s.pod_mem[p]
        ok &= s.cap_gpus[at] >= need
        nodes = at[ok]
        if len(nodes) == 0:
            return []
        tiebreak = self.rng.random(len(nodes))
        first = first_ranked(deficit[ok], s.pods_per_node[nodes], tiebreak, self.options.branching)
        return nodes[first].tolist()


def first_ranked(primary: np.ndarray, secondary: np.ndarray, tiebreak: np.ndarray, b: int) -> np.ndarray:
    """The first ``b`` of ``np.lexsort((tiebreak, secondary, primary))`` (non-negative integer keys),
    in that order, without sorting the others: the b-th smallest key pair by a partition, then the
    few at or below it sorted. Ties in ``tiebreak`` at the cut fall back to the full sort (exactly
    the stable order)."""
    if len(primary) <= 4 * b:
        return np.lexsort((tiebreak, secondary, primary))[:b]
    key = primary.astype(np.int64) * (int(secondary.max()) + 1) + secondary
    kth = np.partition(key, b - 1)[b - 1]
    below = np.flatnonzero(key < kth)
    at = np.flatnonzero(key == kth)
    room = b - len(below)
    if len(at) > room:
        cut = np.partition(tiebreak[at], room - 1)[room - 1]
        at = at[tiebreak[at] <= cut]
        if len(at) != room:  # equal draws at the cut: the stable sort decides
            return np.lexsort((tiebreak, secondary, primary))[:b]
    pick = np.concatenate([below, at])
    return pick[np.lexsort((tiebreak[pick], key[pick]))]
