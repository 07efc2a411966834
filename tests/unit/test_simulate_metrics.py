"""Metrics of a spot replay (``planner.simulate.metrics.replay_row``) on timelines worked out by hand."""

from __future__ import annotations

import pytest

from planner.cluster import Node
from planner.instances.spot_workload import SimJob
from planner.simulate.metrics import replay_row
from planner.simulate.spot import simulate


def one_node() -> list[Node]:
    return [Node(name="n0", gpus=8, cpus=64, memory_gib=256)]


def test_a_standby_timeline_row() -> None:
    """h (HP, 8 GPUs, 0-2,000) sleeps in [100, 500); s (spot, 8 GPUs, 1,000 s of work, checkpoints
    every 100 s) arrives at 150, is evicted at 500 keeping 300 s and losing 400 GPU-s, and finishes
    at 2,700. Over [0, 2,700] the node is held 1,600 + 350 + 700 s by h and s: GAR 2,650 / 2,700."""
    jobs = [
        SimJob("h", "HP", 0, 2000, gpus_per_worker=8, standby_windows_s=((100, 500),)),
        SimJob("s", "LP", 150, 1000, gpus_per_worker=8, checkpoint_interval_s=100),
    ]
    replay = simulate(one_node(), jobs, "spotgpu")
    alone = simulate(one_node(), jobs[:1], "spotgpu")
    row = replay_row(replay, 2700, alone)
    assert row["lp_jct_mean_s"] == row["lp_jct_p50_s"] == row["lp_jct_p90_s"] == 2550
    assert row["lp_gpu_hours_lost"] == pytest.approx(400 / 3600, abs=1e-6)
    assert (row["lp_evictions_per_job"], row["lp_evicted_twice_share"], row["unfinished"]) == (1.0, 0.0, 0)
    assert (row["hp_delay_mean_s"], row["hp_delay_hp_only_mean_s"], row["hp_delay_growth"]) == (0.0, 0.0, 0.0)
    assert row["gar_mean"] == row["sor"] == pytest.approx(2650 / 2700, abs=1e-6)
    assert row["gar_hp_mean"] == row["gar_hp_only_mean"] == pytest.approx(1600 / 2700, abs=1e-6)
    assert row["standby_harvested"] == pytest.approx(0.875)


def test_percentiles_and_delay_growth() -> None:
    """Five 1-GPU spot jobs of 100, 200, ..., 500 s on a free node: completion times 100..500, mean
    300, p50 300, p90 460 (linear interpolation). Two HP jobs of 8 GPUs arriving together: one
    waits 1,000 s, in both replays (growth 0)."""
    jobs = [SimJob(f"s{k}", "LP", 0, 100 * k, gpus_per_worker=1) for k in range(1, 6)]
    row = replay_row(simulate([Node(name="n0", gpus=8, cpus=64, memory_gib=256)], jobs), 1000)
    assert (row["lp_jct_mean_s"], row["lp_jct_p50_s"], row["lp_jct_p90_s"], row["lp_start_delay_mean_s"]) == (300, 300, 460, 0)
    assert row["standby_harvested"] is None and row["hp_delay_mean_s"] is None
    hp = [SimJob("a", "HP", 0, 1000, gpus_per_worker=8), SimJob("b", "HP", 0, 1000, gpus_per_worker=8)]
    both = simulate(one_node(), hp)
    row = replay_row(both, 2000, both)
    assert (row["hp_delay_mean_s"], row["hp_delay_p90_s"], row["hp_delay_growth"]) == (500, 900, 0.0)
    assert row["lp_start_delay_mean_s"] is None


def test_spot_start_delay_is_the_queueing_part_of_completion_time() -> None:
    """Two 8-GPU spot jobs of 1,000 s arrive together on one node: the second starts at 1,000
    (name order), so start delays 0 and 1,000 (mean 500) and completion times 1,000 and 2,000."""
    jobs = [SimJob(k, "LP", 0, 1000, gpus_per_worker=8) for k in ("a", "b")]
    row = replay_row(simulate(one_node(), jobs), 2000)
    assert (row["lp_start_delay_mean_s"], row["lp_jct_mean_s"]) == (500, 1500)


def test_added_hp_delay_and_the_hp_jobs_spot_work_delayed() -> None:
    """Two 8-GPU nodes. Spot s (4 GPUs) starts on n0 at 0; HP hA (4 GPUs, 10-1,010) joins it there
    (least idle). HP hB (4 GPUs) at 15 fits as things are only on n1, so spotgpu puts it there
    without evicting; HP hC (8 GPUs) at 20 then finds no node clear of HP pods and waits until hA
    ends at 1,010, where it evicts s. Alone, hA and hB share n0 and hC starts at once on n1. So the
    HP delays are 0, 0, 990 (mean 330) against 0, 0, 0: 330 s added, 1 of 3 HP jobs started later,
    and no ratio. spotgpu-isolated puts hB on n0 (evicting s), as alone: nothing added."""
    nodes = [Node(name=f"n{k}", gpus=8, cpus=64, memory_gib=256) for k in range(2)]
    jobs = [
        SimJob("s", "LP", 0, 10_000, gpus_per_worker=4),
        SimJob("hA", "HP", 10, 1000, gpus_per_worker=4),
        SimJob("hB", "HP", 15, 1000, gpus_per_worker=4),
        SimJob("hC", "HP", 20, 100, gpus_per_worker=8),
    ]
    alone = simulate(nodes, [j for j in jobs if j.priority == "HP"], "spotgpu")
    row = replay_row(simulate(nodes, jobs, "spotgpu"), 20_000, alone)
    assert (row["hp_delay_mean_s"], row["hp_delay_hp_only_mean_s"], row["hp_delay_growth"]) == (330, 0, None)
    assert (row["hp_delay_added_mean_s"], row["hp_started_later_share"]) == (330, pytest.approx(1 / 3, abs=1e-6))
    isolated = replay_row(simulate(nodes, jobs, "spotgpu-isolated"), 20_000, alone)
    assert (isolated["hp_delay_growth"], isolated["hp_delay_added_mean_s"], isolated["hp_started_later_share"]) == (0.0, 0.0, 0.0)
