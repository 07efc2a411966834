"""The room heuristic's ejection group keeps IPC's per-node quantities up to date node by node
(``heuristics/room_group.py``): after random moves and undone moves its answers equal
``EjectionGroup``'s, computed afresh, draw for draw."""

from __future__ import annotations

import random

import numpy as np
import pytest

from planner.heuristics.ipc import EjectionGroup, GroupTask, IpcOptions
from planner.heuristics.room_group import ShieldedGroup, first_ranked
from planner.instances.asi import generate_asi
from planner.limits import MoveBudget, MoveLimits
from planner.state import ClusterState


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_first_ranked_is_the_head_of_the_full_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for size in (1, 3, 17, 200, 3000):
        for spread in (1, 3, 50):
            primary, secondary = rng.integers(0, spread, size), rng.integers(0, spread, size)
            tiebreak = rng.random(size)
            if size > 10:
                tiebreak[: size // 4] = tiebreak[0]  # equal draws too: the stable order decides
            for b in (1, 4, 9):
                expected = np.lexsort((tiebreak, secondary, primary))[:b]
                assert first_ranked(primary, secondary, tiebreak, b).tolist() == expected.tolist()


@pytest.mark.parametrize("seed", [0, 1])
def test_kept_quantities_answer_as_ipc_after_random_moves(seed: int) -> None:
    cluster = generate_asi(nodes=120, seed=seed, allocation=0.7)
    state = ClusterState(cluster)
    budget = MoveBudget.of(state, MoveLimits(max_moves_per_node=2))  # nodes run out of allowance: the open nodes change
    group = ShieldedGroup(GroupTask(state, IpcOptions(seed=seed), (seed, 0, 0), budget))
    group.into_empty = True
    rng = random.Random(seed)
    placed = [p for p in range(len(state.pod_names)) if state.pod_node[p] >= 0 and not state.pod_locked[p]]
    shield = np.zeros(len(state.node_names), dtype=bool)
    shield[: len(shield) // 3] = True
    for step in range(60):
        mark = len(group.trail)
        for _ in range(rng.randint(1, 4)):
            p = rng.choice(placed)
            options = np.flatnonzero(state.feasible_nodes(p))
            if len(options):
                group._move(p, int(rng.choice(options.tolist())))
        if rng.random() < 0.3:
            group.rollback(mark)
        group.shield = shield if step % 2 else None
        fresh = EjectionGroup(GroupTask(state, IpcOptions(seed=seed), (seed, 0, 0), budget))
        fresh.into_empty, fresh.allowance, fresh.in_trail, fresh.trail_epoch = True, group.allowance.copy(), set(group.in_trail), group.trail_epoch
        p = rng.choice(placed)
        allowed = group._destinations(p, frozenset())
        expected_allowed = fresh._destinations(p, frozenset()) & (~shield if step % 2 else True)
        assert np.array_equal(allowed, expected_allowed)
        for gpus in (1.0, 8.0):
            ours, theirs = group._room_with_movable_gone(gpus), fresh._room_with_movable_gone(gpus)
            for a, b in zip(ours, theirs):
                assert np.array_equal(a, b)
        state_rng = group.rng.bit_generator.state
        fresh.rng.bit_generator.state = state_rng
        assert group._ejection_targets(p, allowed) == fresh._ejection_targets(p, allowed)
        direct = np.flatnonzero(allowed & state.feasible_nodes(p))
        if len(direct):
            assert group._best_fit(p, direct) == fresh._best_fit(p, direct)
        assert group.rng.bit_generator.state == fresh.rng.bit_generator.state  # the same draws were made
