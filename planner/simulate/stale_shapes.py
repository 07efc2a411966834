"""The spot simulator's stale job shapes: shapes proven unable to start until capacity comes free
where one of their pods fits. Each shape keeps a slot in arrays of its pod's needs, so the test of
every stale shape against the nodes an event freed is a few array operations, not a rebuild of
arrays from the shapes each time (the simulator runs it after every event that frees capacity).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

import numpy as np

from planner.state import ClusterState

K = TypeVar("K", bound=Hashable)


class StaleShapes(Generic[K]):
    """Shape keys with, per key, the needs of one pod of that shape (in a window's ``ClusterState``)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self._slot: dict[K, int] = {}
        self._keys: list[K | None] = []  # None in a free slot
        self._free: list[int] = []
        self._on = np.zeros(0, dtype=bool)
        self._signature = np.zeros(0, dtype=np.int64)
        self._hp = np.zeros(0, dtype=bool)
        self._needs = np.zeros((3, 0))  # whole GPUs, CPUs, memory
        self._pod: list[int] = []

    def __contains__(self, key: object) -> bool:
        return key in self._slot

    def __len__(self) -> int:
        return len(self._slot)

    def add(self, key: K, cs: ClusterState, pod: int) -> None:
        """``key`` is stale; ``pod`` (of ``cs``) is one of its pods."""
        slot = self._slot.get(key)
        if slot is None:
            if not self._free:
                self._grow()
            slot = self._slot[key] = self._free.pop()
            self._keys[slot] = key
        self._pod[slot] = pod
        self._on[slot] = True
        self._signature[slot] = cs.pod_signature[pod]
        self._hp[slot] = cs.pod_hp[pod]
        self._needs[:, slot] = (cs.pod_whole[pod], cs.pod_cpus[pod], cs.pod_mem[pod])

    def remove(self, key: K) -> None:
        slot = self._slot.pop(key)
        self._on[slot] = False
        self._keys[slot] = None
        self._free.append(slot)

    def fitting(
        self, cs: ClusterState, nodes: np.ndarray, room_hp: tuple[np.ndarray, ...], room_all: tuple[np.ndarray, ...]
    ) -> list[tuple[K, int, np.ndarray]]:
        """The stale keys one of whose pods fits on some node of ``nodes``, with their pod and the mask of those
        nodes: static rules, and whole GPUs, CPUs and memory within the room (per node of ``nodes``)
        the pods that would stay leave: ``room_hp`` for an HP pod, ``room_all`` for a spot pod."""
        slots = np.flatnonzero(self._on)
        fits = cs.eligible[:, nodes][self._signature[slots]]
        hp = self._hp[slots][:, None]
        needs = self._needs[:, slots]
        for need, hp_room, all_room in zip(needs, room_hp, room_all):
            fits &= need[:, None] <= np.where(hp, hp_room[None, :], all_room[None, :])
        # a slot that is on holds its key: the ``is not None`` only tells mypy so, it drops nothing
        return [(key, self._pod[slots[k]], fits[k]) for k in np.flatnonzero(fits.any(axis=1)).tolist() if (key := self._keys[slots[k]]) is not None]

    def _grow(self) -> None:
        old = len(self._keys)
        new = max(64, 2 * old)
        self._keys += [None] * (new - old)
        self._pod += [-1] * (new - old)
        self._free += range(new - 1, old - 1, -1)  # the lowest slot is taken first
        self._on = np.concatenate((self._on, np.zeros(new - old, dtype=bool)))
        self._signature = np.concatenate((self._signature, np.zeros(new - old, dtype=np.int64)))
        self._hp = np.concatenate((self._hp, np.zeros(new - old, dtype=bool)))
        self._needs = np.concatenate((self._needs, np.zeros((3, new - old))), axis=1)


__all__ = ["StaleShapes"]
