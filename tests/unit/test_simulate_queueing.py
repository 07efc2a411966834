"""Kant's queueing replays (``simulate/queueing.py``): a worked example computed by hand for each
policy, capacity recomputed from the outcomes, FIFO order, E-Binpack's groups, the workload's shape."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from planner.instances.queue_workload import QueueCluster, QueuedJob, kant_jobs
from planner.simulate.queue_metrics import queue_row
from planner.simulate.queueing import place, replay

TINY = QueueCluster(nodes=2, gpus_per_node=8, group_nodes=1)
JOBS = [QueuedJob("A", 0, 16, 10), QueuedJob("B", 1, 8, 5), QueuedJob("C", 2, 16, 10), QueuedJob("D", 3, 4, 10)]


def starts(policy: str, timeout_s: float = 2.0) -> tuple[dict[str, tuple[float | None, float | None]], int]:
    run = replay(TINY, JOBS, policy, "binpack", timeout_s=timeout_s)
    return {j.name: (o.start_s, o.end_s) for j, o in zip(run.jobs, run.outcomes)}, run.preemptions


def test_the_worked_example_by_hand():
    # strict FIFO: B heads the queue while A runs; C waits for B, D for C (head-of-line blocking)
    assert starts("strict-fifo") == ({"A": (0, 10), "B": (10, 15), "C": (15, 25), "D": (25, 35)}, 0)
    # best effort: D passes the blocked C when A ends, and C waits for D too
    assert starts("best-effort") == ({"A": (0, 10), "B": (10, 15), "C": (20, 30), "D": (10, 20)}, 0)
    # backfill, timeout 2 s: C is the blocked head from 10; at 12 preempting D would not make room (B
    # holds a node), at 15 (B ends) it does: D is preempted, C starts, D waits for C (B, started in
    # order, is never a victim)
    assert starts("backfill") == ({"A": (0, 10), "B": (10, 15), "C": (15, 25), "D": (25, 35)}, 1)
    run = replay(TINY, JOBS, "backfill", "binpack", timeout_s=2.0)
    assert queue_row(run)["lost_gpu_hours"] == pytest.approx(4 * 5 / 3600)  # D ran 10..15 on 4 GPUs
    # a timeout longer than any wait: backfill is best effort
    assert starts("backfill", timeout_s=100)[0] == starts("best-effort")[0]


@pytest.mark.parametrize("policy", ["strict-fifo", "best-effort"])
@pytest.mark.parametrize("placement", ["spread", "binpack", "e-binpack"])
def test_capacity_holds_and_allocation_integrates_the_outcomes(policy, placement):
    cluster = QueueCluster(nodes=40, gpus_per_node=8, group_nodes=8)
    jobs = kant_jobs(cluster, 48, 0.95, seed=1)
    run = replay(cluster, jobs, policy, placement, horizon_s=48 * 3600)
    assert max(g for _, g in run.series) <= cluster.gpus
    for t, gpus in run.series[:: max(1, len(run.series) // 200)]:  # allocated GPUs recomputed from the outcomes
        want = sum(j.gpus for j, o in zip(jobs, run.outcomes) if o.start_s is not None and o.start_s <= t and (o.end_s is None or o.end_s > t))
        assert gpus == want, t
    busy = sum(
        j.gpus * (min(o.end_s if o.end_s is not None else run.horizon_s, run.horizon_s) - o.start_s)
        for j, o in zip(jobs, run.outcomes)
        if o.start_s is not None
    )
    assert queue_row(run)["sor"] == pytest.approx(busy / (cluster.gpus * run.horizon_s))
    if policy == "strict-fifo":  # nobody passes an earlier job
        started = sorted((j.submit_s, o.start_s) for j, o in zip(jobs, run.outcomes) if o.start_s is not None)
        assert all(a[1] <= b[1] for a, b in itertools.pairwise(started))


def test_backfill_preempts_only_jobs_started_while_the_head_waited_and_loses_their_work():
    cluster = QueueCluster(nodes=40, gpus_per_node=8, group_nodes=8)
    jobs = kant_jobs(cluster, 72, 0.95, seed=2)
    run = replay(cluster, jobs, "backfill", "binpack", timeout_s=1800, horizon_s=72 * 3600)
    row = queue_row(run)
    assert run.preemptions > 0 and row["lost_gpu_hours"] > 0
    assert sum(o.preempted for o in run.outcomes) == run.preemptions
    assert max(g for _, g in run.series) <= cluster.gpus


def test_e_binpack_keeps_a_multi_node_job_in_one_group_and_small_jobs_together():
    cluster = QueueCluster(nodes=4, gpus_per_node=8, group_nodes=2)
    free = np.array([6, 8, 8, 8])  # a small job on node 0
    big = QueuedJob("big", 0, 16, 1)
    assert place(free, big, cluster, "binpack") == [1, 2]  # the lowest idle nodes: two groups
    assert place(free, big, cluster, "e-binpack") == [2, 3]  # one group
    small = QueuedJob("small", 0, 2, 1)
    assert place(np.array([8, 8, 8, 7]), small, cluster, "e-binpack") == [3]  # the group already holding small jobs
    assert place(np.array([8, 8, 8, 7]), small, cluster, "spread") == [0]


def test_the_generated_workload_has_kants_shape():
    cluster = QueueCluster()
    jobs = kant_jobs(cluster, 24 * 30, 0.9, seed=0)
    gpus = np.array([j.gpus for j in jobs])
    work = np.array([j.gpus * j.duration_s for j in jobs])
    assert (gpus < 8).mean() > 0.9  # Kant §2: over 90% of jobs use fewer than 8 GPUs
    assert work[gpus < 8].sum() / work.sum() < 0.1  # ... and under 10% of GPU-time
    assert work[gpus >= 256].sum() / work.sum() > 0.5  # jobs of 256 GPUs or more: over half
    offered = work.sum() / (cluster.gpus * 24 * 30 * 3600)
    assert 0.8 < offered < 1.0


def test_bad_input_is_refused_naming_it():
    with pytest.raises(ValueError, match="queue policy"):
        replay(TINY, JOBS, "lifo", "binpack")
    with pytest.raises(ValueError, match="placement"):
        replay(TINY, JOBS, "best-effort", "tetris")
    with pytest.raises(ValueError, match="multiple of 8"):
        replay(TINY, [QueuedJob("odd", 0, 12, 1)], "best-effort", "binpack")
    with pytest.raises(ValueError, match="more than the cluster"):
        replay(TINY, [QueuedJob("huge", 0, 32, 1)], "best-effort", "binpack")


def test_cli_rows_and_bad_input(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "q.json"
    cmd = [sys.executable, "-m", "planner.cli", "simulate", "queue"]
    done = subprocess.run(
        [
            *cmd,
            "--days",
            "2",
            "--warmup-days",
            "0.5",
            "--nodes",
            "40",
            "--group-nodes",
            "8",
            "--seeds",
            "2",
            "--placement",
            "spread",
            "--placement",
            "e-binpack",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["runs"]
    assert [(r["seed"], r["policy"], r["placement"]) for r in rows] == [
        (s, p, q) for s in (0, 1) for p in ("strict-fifo", "best-effort", "backfill") for q in ("spread", "e-binpack")
    ]
    for r in rows:
        assert 0 < r["gar"] <= 1 and 0 <= r["gfr"] <= 1 and r["jobs"] > 50 and set(r["jwtd_s"]) <= {str(1 << k) for k in range(12)}
    bad = subprocess.run([*cmd, "--policy", "lifo", "--placement", "tetris", "--warmup-days", "9"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--policy" in bad.stderr and "--placement" in bad.stderr and "--warmup-days" in bad.stderr
    assert "Traceback" not in bad.stderr


def outcomes(run):
    return {j.name: (o.start_s, o.end_s) for j, o in zip(run.jobs, run.outcomes)}


def test_a_blocked_head_blocks_only_its_own_tenants_queue():
    jobs = [QueuedJob("A", 0, 8, 10, tenant="a"), QueuedJob("B", 1, 16, 5, tenant="a"), QueuedJob("C", 2, 8, 4, tenant="b")]
    one_queue = [QueuedJob(j.name, j.submit_s, j.gpus, j.duration_s) for j in jobs]
    assert outcomes(replay(TINY, one_queue, "strict-fifo", "binpack")) == {"A": (0, 10), "B": (10, 15), "C": (15, 19)}
    # C heads tenant b's queue: B (tenant a) does not block it
    run = replay(TINY, jobs, "strict-fifo", "binpack")
    assert outcomes(run) == {"A": (0, 10), "B": (10, 15), "C": (2, 6)}
    assert queue_row(run)["sor_by_tenant"] == pytest.approx({"a": (8 * 10 + 16 * 5) / (16 * 15), "b": 8 * 4 / (16 * 15)})


def test_isolated_quotas_hold_and_shared_quotas_lend_then_reclaim():
    jobs = [QueuedJob("A", 0, 8, 10, tenant="a"), QueuedJob("A2", 1, 8, 10, tenant="a"), QueuedJob("B", 2, 8, 5, tenant="b")]
    quotas = {("a", "default"): 8, ("b", "default"): 8}
    isolated = replay(TINY, jobs, "best-effort", "binpack", quotas=quotas, quota_mode="isolated")
    assert outcomes(isolated) == {"A": (0, 10), "A2": (10, 20), "B": (2, 7)}  # A2 waits for a's own quota, not for room
    # shared: A2 borrows b's idle quota at 1; B (within b's quota) reclaims it at 2: A2 is preempted
    # (8 GPUs x 1 s lost) and borrows again when B ends
    shared = replay(TINY, jobs, "best-effort", "binpack", quotas=quotas, quota_mode="shared")
    assert outcomes(shared) == {"A": (0, 10), "A2": (7, 17), "B": (2, 7)}
    row = queue_row(shared)
    assert (row["reclaims"], row["preemptions"], row["lost_gpu_hours"]) == (1, 0, pytest.approx(8 / 3600))
    without = replay(TINY, jobs, "best-effort", "binpack")  # no quotas: B waits for room
    assert outcomes(without) == {"A": (0, 10), "A2": (1, 11), "B": (10, 15)}


def test_pools_and_quotas_are_checked_naming_what_is_wrong():
    two = QueueCluster(nodes=4, gpus_per_node=8, group_nodes=2, pools=(("v100", 2), ("a100", 2)))
    with pytest.raises(ValueError, match="unknown pool 'h100'"):
        replay(two, [QueuedJob("x", 0, 8, 1, pool="h100")], "best-effort", "binpack")
    with pytest.raises(ValueError, match="more than pool 'v100' can hold"):
        replay(two, [QueuedJob("x", 0, 24, 1, pool="v100")], "best-effort", "binpack")
    with pytest.raises(ValueError, match="whole leaf groups"):
        replay(QueueCluster(nodes=4, gpus_per_node=8, group_nodes=2, pools=(("v100", 1), ("a100", 3))), [], "best-effort", "binpack")
    with pytest.raises(ValueError, match="pools hold 2 nodes"):
        replay(QueueCluster(nodes=4, gpus_per_node=8, group_nodes=2, pools=(("v100", 2),)), [], "best-effort", "binpack")
    with pytest.raises(ValueError, match="could never start"):
        replay(two, [QueuedJob("x", 0, 16, 1, tenant="a", pool="v100")], "best-effort", "binpack", quotas={("a", "v100"): 8}, quota_mode="isolated")
    with pytest.raises(ValueError, match="quota mode"):
        replay(two, [], "best-effort", "binpack", quotas={}, quota_mode="loose")
    with pytest.raises(ValueError, match="zone_nodes"):
        replay(two, [], "best-effort", "binpack", zone_nodes=2)
    # a job runs only in its pool
    run = replay(two, [QueuedJob("x", 0, 16, 5, pool="a100"), QueuedJob("y", 0, 8, 5, pool="v100")], "best-effort", "binpack")
    assert [o.start_s for o in run.outcomes] == [0, 0]


def test_e_spread_spreads_inference_in_its_zone_and_keeps_training_out():
    cluster = QueueCluster(nodes=4, gpus_per_node=8, group_nodes=1)
    serve, train = QueuedJob("s", 0, 2, 1, kind="inference"), QueuedJob("t", 0, 2, 1)
    assert place(np.array([8, 6, 8, 8]), serve, cluster, "e-spread", zone_nodes=2) == [0]  # most free GPUs in the zone
    assert place(np.array([6, 8, 8, 8]), serve, cluster, "e-spread", zone_nodes=2) == [1]
    assert place(np.array([8, 6, 8, 8]), train, cluster, "e-spread", zone_nodes=2) == [2]  # never in the zone
    assert place(np.array([1, 1, 8, 6]), serve, cluster, "e-spread", zone_nodes=2) == [3]  # the zone is full: E-Binpack in the rest
    assert place(np.array([8, 8, 1, 1]), train, cluster, "e-spread", zone_nodes=2) is None


def test_defrag_when_stuck_migrates_with_the_planners_make_room_and_pays_for_it():
    jobs = [QueuedJob("P", 0, 4, 100), QueuedJob("Q", 1, 4, 100), QueuedJob("H", 2, 8, 10)]  # spread: P and Q on different nodes
    assert outcomes(replay(TINY, jobs, "strict-fifo", "spread")) == {"P": (0, 100), "Q": (1, 101), "H": (100, 110)}
    run = replay(TINY, jobs, "strict-fifo", "spread", stuck_after_s=5, migration_cost_s=30)
    got = outcomes(run)
    assert got["H"] == (7, 17)  # stuck from 2; at 7 one move empties a node and H starts
    moved = [name for name in ("P", "Q") if got[name][1] == {"P": 100, "Q": 101}[name] + 30]
    assert len(moved) == 1 and got[({"P", "Q"} - set(moved)).pop()][1] == {"P": 100, "Q": 101}[({"P", "Q"} - set(moved)).pop()]
    row = queue_row(run)
    assert (row["make_room_calls"], row["make_room_starts"], row["moves"]) == (1, 1, 1)
    assert row["migration_gpu_hours"] == pytest.approx(4 * 30 / 3600)
    assert run.outcomes[2].started_by_make_room and sum(o.migrated for o in run.outcomes) == 1
    # no room to make (every other pod is node-sized, so locked): H waits, and is tried every 5 s, not at every event
    locked = [QueuedJob("W", 0, 8, 100), QueuedJob("H", 2, 16, 10)]
    run = replay(TINY, locked, "strict-fifo", "spread", stuck_after_s=5)
    assert outcomes(run)["H"] == (100, 110) and queue_row(run)["make_room_calls"] == len(range(7, 100, 5))


@pytest.mark.parametrize("placement", ["spread", "e-binpack"])
def test_make_room_replays_keep_capacity_and_allocation_consistent(placement):
    cluster = QueueCluster(nodes=32, gpus_per_node=8, group_nodes=8)
    jobs = kant_jobs(cluster, 36, 0.95, seed=2)
    run = replay(cluster, jobs, "strict-fifo", placement, horizon_s=36 * 3600, stuck_after_s=1800, make_room_moves=16)
    assert run.make_room_starts > 0 and run.moves > 0
    assert max(g for _, g in run.series) <= cluster.gpus
    for t, gpus in run.series[:: max(1, len(run.series) // 200)]:
        want = sum(j.gpus for j, o in zip(jobs, run.outcomes) if o.start_s is not None and o.start_s <= t and (o.end_s is None or o.end_s > t))
        assert gpus == want, t


def test_cli_tenants_pools_quotas_zone_and_make_room(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "q.json"
    cmd = [
        sys.executable,
        "-m",
        "planner.cli",
        "simulate",
        "queue",
        "--days",
        "2",
        "--warmup-days",
        "0.5",
        "--nodes",
        "64",
        "--group-nodes",
        "8",
        "--seeds",
        "1",
        "--policy",
        "strict-fifo",
    ]
    done = subprocess.run(
        [
            *cmd,
            "--placement",
            "e-spread",
            "--pool",
            "a100=32",
            "--pool",
            "v100=32",
            "--tenant",
            "x=2",
            "--tenant",
            "y=1",
            "--quota",
            "x:a100=160",
            "--quota",
            "y:a100=96",
            "--quota",
            "inference=64",
            "--quota",
            "x:v100=128",
            "--quota",
            "y:v100=128",
            "--inference-load",
            "0.2",
            "--zone-nodes",
            "8",
            "--stuck-after-s",
            "1800",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(out.read_text())["runs"]
    assert set(row["sor_by_tenant"]) == {"x", "y", "inference"} and sum(row["sor_by_tenant"].values()) == pytest.approx(row["sor"])
    assert set(row["jwtd_by_kind_s"]) == {"training", "inference"} and row["make_room_calls"] > 0 and row["stuck_after_s"] == 1800
    bad = subprocess.run(
        [*cmd, "--pool", "a=3", "--tenant", "x=-1", "--quota", "x:a=z", "--quota-mode", "loose", "--zone-nodes", "8", "--stuck-after-s", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    for option in ("--pool", "--tenant", "--quota:", "--quota-mode", "--zone-nodes", "--stuck-after-s"):
        assert option in bad.stderr, option
    never = subprocess.run([*cmd, "--quota", "x=8", "--quota-mode", "isolated", "--tenant", "x=1"], capture_output=True, text=True, timeout=60)
    assert never.returncode == 2 and "could never start" in never.stderr and "Traceback" not in never.stderr
