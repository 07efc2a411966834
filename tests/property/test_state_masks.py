"""The capacity masks a state keeps per pod shape across moves (``state_build.capacity_entry``: only
the nodes changed since are recomputed) equal the masks computed afresh, through random changes."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import state_build
from planner.cluster import Cluster
from planner.state import PENDING, ClusterState
from tests.support.clusters import make_cluster, node, pod
from tests.support.strategies import clusters


def _assert_masks_fresh(state: ClusterState, pods: list[int]) -> None:
    for p in pods:
        fresh = state._capacity_mask(p, slice(None))
        cached = state._capacity_mask_cached(p)
        assert np.array_equal(cached, fresh), p
        assert state.room_anywhere(p) == bool(fresh.any()), p


def _change(state: ClusterState, rng: random.Random, n_nodes: int) -> None:
    """One random change: a move anywhere (rules or not: a required job may then span domains), an
    unplace, or a pending pod placed."""
    p = rng.randrange(len(state.pod_names))
    if state.pod_node[p] == PENDING or rng.random() < 0.8:
        state.move(p, rng.randrange(n_nodes))
    else:
        state.unplace(p)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(max_nodes=8, max_pods=16), st.integers(0, 2**32 - 1), st.booleans(), st.sampled_from(["scalar", "arrays", "mixed"]))
def test_cached_masks_equal_fresh_ones_through_random_changes(cluster: Cluster, seed: int, standby: bool, path: str) -> None:
    if not cluster.pods or not cluster.nodes:
        return
    # every way of updating a mask: node by node with the scalar rules, as arrays, or either by the count changed
    scalar_nodes, share = {"scalar": (10**6, 1), "arrays": (0, 1), "mixed": (2, 2)}[path]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state_build, "MASK_SCALAR_NODES", scalar_nodes)
        patch.setattr(state_build, "MASK_UPDATE_SHARE", share)
        _random_changes(cluster, seed, standby)


def _random_changes(cluster: Cluster, seed: int, standby: bool) -> None:
    rng = random.Random(seed)
    state = ClusterState(cluster)
    if standby:
        state.enable_standby()  # moves the version without a logged change: the cache must notice
    everyone = list(range(len(cluster.pods)))
    _assert_masks_fresh(state, everyone)
    twin = None
    for step in range(40):
        for _ in range(rng.choice([1, 1, 2, 5, 20])):  # sometimes more changes than the cache recomputes node by node
            _change(state, rng, len(cluster.nodes))
        _assert_masks_fresh(state, rng.sample(everyone, k=rng.randint(1, len(everyone))))
        if step == 10:
            twin = state.clone()  # shares nothing mutable: its masks follow its own changes
        if twin is not None:
            _change(twin, rng, len(cluster.nodes))
            _assert_masks_fresh(twin, everyone)
    _assert_masks_fresh(state, everyone)


def test_a_mask_returned_is_not_changed_by_later_moves_and_the_log_stays_bounded(monkeypatch) -> None:
    monkeypatch.setattr(state_build, "MASK_LOG_LIMIT", 8)
    cluster = make_cluster(
        [node("a", gpus=2), node("b", gpus=2), node("c", gpus=2)],
        [pod("x", "a", gpus=2), pod("y", "b", gpus=1), pod("z", None, gpus=2)],
    )
    state = ClusterState(cluster)
    before = state._capacity_mask_cached(2)
    assert before.tolist() == [False, False, True]
    kept = before.copy()
    state.move(0, 2)  # a is free now, c full
    after = state._capacity_mask_cached(2)
    assert after.tolist() == [True, False, False]
    assert np.array_equal(before, kept)  # the caller's mask is as it was
    for _ in range(10):  # past the log's limit the cache starts afresh, and still answers right
        state.move(1, 0)
        state.move(1, 1)
        assert len(state._mask_log) <= 8 + 4  # two moves since the last look: four changes (off, on)
        assert state._capacity_mask_cached(2).tolist() == [True, False, False]
    state.move(0, 0)
    assert state._capacity_mask_cached(2).tolist() == [False, False, True]
