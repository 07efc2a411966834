"""The HP/spot workload generator on the spot-2026 node list (``planner.instances.spot_workload``):
determinism, the properties its docstring promises, measured on generated workloads, and bad input."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from planner.cluster import SnapshotError
from planner.instances.spot import family_of, read_node_list
from planner.instances.spot_workload import spot2026_cluster, spot2026_jobs


@pytest.fixture(scope="module")
def week() -> tuple[list, list]:
    nodes = spot2026_cluster()
    return nodes, spot2026_jobs(nodes, 7, seed=0)


def test_the_whole_list_and_a_week_of_jobs(week) -> None:  # type: ignore[no-untyped-def]
    nodes, jobs = week
    assert len(nodes) == len(read_node_list()) == 4278
    assert len(jobs) >= 50_000 and len({j.name for j in jobs}) == len(jobs)
    gpus, horizon = sum(n.gpus for n in nodes), 7 * 86400
    offered = {p: sum(j.workers * j.gpus_per_worker * j.work_s for j in jobs if j.priority == p) / (gpus * horizon) for p in ("HP", "LP")}
    assert offered["HP"] == pytest.approx(0.65, abs=0.05) and offered["LP"] == pytest.approx(0.35, abs=0.05)
    assert all(0 <= j.submit_s < horizon and 60 <= j.work_s <= 3 * 86400 for j in jobs)


def test_every_job_fits_a_node_of_its_family(week) -> None:  # type: ignore[no-untyped-def]
    nodes, jobs = week
    shapes = {(n.gpu_model, n.gpus, n.cpus, n.memory_gib) for n in nodes}
    for job in jobs:
        assert len({family_of(m) for m in job.gpu_models}) == 1
        assert any(
            model in job.gpu_models and job.gpus_per_worker <= gpus and job.cpus_per_worker <= cpus and job.memory_gib_per_worker <= mem
            for model, gpus, cpus, mem in shapes
        ), job


def test_no_pod_size_is_offered_more_than_the_nodes_that_hold_it(week) -> None:  # type: ignore[no-untyped-def]
    # GPU-series-1 has 1-, 4- and 8-GPU nodes: pods of 2 GPUs or more fit only the larger ones, so the
    # GPU-time they ask may not exceed the offered load on those nodes' GPUs (per family, per size;
    # 15% over for the heavy-tailed durations' noise: the split gives at most 1.05, without it 2.05)
    nodes, jobs = week
    horizon = 7 * 86400
    families = {family_of(n.gpu_model) for n in nodes}
    checked = 0
    for family in sorted(families):
        members = [n for n in nodes if family_of(n.gpu_model) == family]
        ours = [j for j in jobs if family_of(j.gpu_models[0]) == family]
        for size in sorted({j.gpus_per_worker for j in ours}):
            holding = sum(n.gpus for n in members if n.gpus >= size)
            asked = sum(j.workers * j.gpus_per_worker * j.work_s for j in ours if j.gpus_per_worker >= size)
            assert asked / (holding * horizon) < 1.15, (family, size, asked / (holding * horizon))
            checked += 1
    mixed = sorted({n.gpus for n in nodes if n.gpu_model == "GPU-series-1"})
    assert mixed == [1, 4, 8] and checked > len(families)
    names = {j.name.rsplit("-", 1)[0] for j in jobs if "GPU-series-1" in j.gpu_models}
    assert names == {f"{p}-GPU-series-1.{g}gpu" for p in ("hp", "spot") for g in (1, 4, 8)}


def test_checkpoints_on_spot_jobs_and_standby_on_long_hp_services_peaking_at_midnight(week) -> None:  # type: ignore[no-untyped-def]
    _, jobs = week
    assert all(j.checkpoint_interval_s is None for j in jobs if j.priority == "HP")
    intervals = Counter(j.checkpoint_interval_s for j in jobs if j.priority == "LP")
    assert set(intervals) == {600.0, 1800.0, 3600.0, None} and min(intervals.values()) > 0.2 * sum(intervals.values())
    sleepers = [j for j in jobs if j.standby_windows_s]
    assert sleepers and all(j.priority == "HP" and j.work_s >= 12 * 3600 for j in sleepers)
    by_hour = np.zeros(24)
    for job in sleepers:
        for start, end in job.standby_windows_s:
            assert job.submit_s <= start < end <= job.submit_s + job.work_s
            t = start
            while t < end:
                step = min(end, (t // 3600 + 1) * 3600)
                by_hour[int(t // 3600) % 24] += job.workers * job.gpus_per_worker * (step - t)
                t = step
    share = by_hour / by_hour.sum()
    assert share[[22, 23, 0, 1]].sum() > 0.5 and share[6:22].sum() < 0.01 and int(np.argmax(share)) in (23, 0, 1)


def test_arrivals_follow_the_day(week) -> None:  # type: ignore[no-untyped-def]
    _, jobs = week
    hours = np.bincount((np.array([j.submit_s for j in jobs]) // 3600 % 24).astype(int), minlength=24)
    assert hours[13:16].mean() > 2 * hours[1:4].mean()  # 1 + 0.5 cos: 1.5 at 14:00 against 0.5 at 02:00


def _held_share_by_day(nodes: list, jobs: list, days: int, priority: str) -> np.ndarray:
    """Mean share of the GPUs the jobs of one priority would hold each day if each started on arrival."""
    jobs = [j for j in jobs if j.priority == priority]
    start = np.array([j.submit_s for j in jobs])
    gpus = np.array([j.workers * j.gpus_per_worker for j in jobs], dtype=float)
    times, steps = np.concatenate([start, start + np.array([j.work_s for j in jobs])]), np.concatenate([gpus, -gpus])
    order = np.argsort(times, kind="stable")
    grid = np.arange(0, days * 86400, 300.0)
    at = np.searchsorted(times[order], grid, side="right")
    held = np.where(at > 0, np.cumsum(steps[order])[np.maximum(at - 1, 0)], 0.0) / sum(n.gpus for n in nodes)
    return held.reshape(days, -1).mean(axis=1)


def test_a_cold_start_climbs_for_days_and_a_warm_start_holds_the_loads_from_day_one(week) -> None:  # type: ignore[no-untyped-def]
    nodes, _ = week
    cold, warm = spot2026_jobs(nodes, 3, seed=2), spot2026_jobs(nodes, 3, seed=2, warm_start=True)
    climbing = _held_share_by_day(nodes, cold, 3, "HP")
    assert 0.15 < climbing[0] < 0.3 and climbing[0] < climbing[1] < climbing[2] < 0.65
    assert _held_share_by_day(nodes, warm, 3, "HP") == pytest.approx([0.65] * 3, abs=0.06)
    assert _held_share_by_day(nodes, warm, 3, "LP") == pytest.approx([0.35] * 3, abs=0.06)
    past = [j for j in warm if "-w" in j.name]
    assert [j for j in warm if "-w" not in j.name] == cold  # the jobs after time 0 do not change
    assert 2_000 < len(past) < 5_000 and len({j.name for j in warm}) == len(warm)
    assert all(j.submit_s == 0 and 0 < j.work_s <= 3 * 86400 for j in past)
    assert any(j.standby_windows_s for j in past) and all(not j.standby_windows_s for j in past if j.priority == "LP")


def test_a_small_sample_gets_gangs_its_nodes_can_hold() -> None:
    nodes = spot2026_cluster(24, seed=1)
    for job in spot2026_jobs(nodes, 2, seed=1):
        holds = sum(min(n.gpus // job.gpus_per_worker, int(n.cpus // job.cpus_per_worker)) for n in nodes if n.gpu_model in job.gpu_models)
        assert holds >= job.workers, job


def test_the_same_seed_gives_the_same_workload_and_another_differs() -> None:
    nodes = spot2026_cluster(60, seed=4)
    assert nodes == spot2026_cluster(60, seed=4) and nodes != spot2026_cluster(60, seed=5)
    a, b, c = spot2026_jobs(nodes, 0.5, seed=1), spot2026_jobs(nodes, 0.5, seed=1), spot2026_jobs(nodes, 0.5, seed=2)
    assert a == b and a != c
    assert len(spot2026_jobs(nodes, 0.5, jobs=321, seed=1)) == pytest.approx(321, abs=5)


def test_a_sample_keeps_the_shape_mix() -> None:
    nodes = spot2026_cluster(100, seed=0)
    shapes = Counter((n.gpu_model, n.gpus) for n in nodes)
    assert len(nodes) == 100 and shapes[("A10", 1)] == 58 and shapes[("A100-SXM4-80GB", 8)] == 10 and shapes[("H800", 8)] == 5


def test_a_node_list_without_a_column_or_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "nodes.csv"
    bad.write_text("gpu_model,gpu_capacity_num,node_name\nA10,1,n1\n")
    with pytest.raises(SnapshotError, match="missing column.*cpu_num"):
        spot2026_cluster(node_list=bad)
    with pytest.raises(SnapshotError, match="no such file"):
        spot2026_cluster(node_list=tmp_path / "absent.csv")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda n: spot2026_jobs(n, 0), "days: must be above 0"),
        (lambda n: spot2026_jobs(n, 1, jobs=0), "jobs: must be a whole number of at least 1"),
        (lambda n: spot2026_jobs(n, 1, hp_load=-1), "hp_load: must be between 0 and 10"),
        (lambda n: spot2026_jobs(n, 1, standby_share=2), "standby_share: must be between 0 and 1"),
        (lambda n: spot2026_jobs(n, 1, hp_load=0, spot_load=0), r"hp_load \+ spot_load: must be above 0"),
        (lambda n: spot2026_jobs([], 1), "nodes: at least one node"),
        (lambda n: spot2026_jobs(n, 1, seed=-1), "seed: must be a whole number of at least 0"),
        (lambda n: spot2026_jobs(n, 1, warm_start="yes"), "warm_start: must be True or False"),
        (lambda n: spot2026_cluster(0), "nodes: must be a whole number from 1 to 4,278"),
    ],
)
def test_bad_arguments_are_named(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call(spot2026_cluster(20))
