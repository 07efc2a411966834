"""The spot simulation core (issue 14): hand-made timelines whose outcomes are worked out here,
determinism by seed, conservation of GPU time, HP never preempted nor delayed by spot work, and bad
input named."""

from __future__ import annotations

import pytest

from planner.cluster import Node
from planner.instances.spot_workload import SimJob, synthetic_jobs
from planner.simulate.spot import POLICIES, simulate


def two_nodes() -> list[Node]:
    return [Node(name=f"n{i}", gpus=8, cpus=64, memory_gib=256) for i in range(2)]


def test_the_victim_with_less_lost_work_is_evicted_and_resumes_from_its_checkpoint() -> None:
    """At t=650 an HP job needs a full node. s1 (started 0, checkpoints every 300 s) would lose
    650 - 600 = 50 s x 8 GPUs = 400 GPU-s; s2 (started 10, every 100 s) 650 - 610 = 40 s x 8 = 320.
    SpotGPU evicts s2; it keeps 600 s of its 1,000, waits for s1 to finish at 1,000 and ends at 1,400."""
    jobs = [
        SimJob("s1", "LP", 0, 1000, gpus_per_worker=8, checkpoint_interval_s=300),
        SimJob("s2", "LP", 10, 1000, gpus_per_worker=8, checkpoint_interval_s=100),
        SimJob("h", "HP", 650, 500, gpus_per_worker=8),
    ]
    out = simulate(two_nodes(), jobs, "spotgpu", check=True).outcomes
    assert (out["s2"].evictions, out["s2"].lost_gpu_s, out["s2"].finish_s) == (1, 320.0, 1400.0)
    assert (out["s1"].evictions, out["s1"].finish_s) == (0, 1000.0)
    assert (out["h"].first_start_s, out["h"].finish_s) == (650, 1150.0)


def test_a_checkpoint_just_before_the_preemption_loses_nothing() -> None:
    """s2 started at 10 with checkpoints every 64 s has one at 10 + 10 x 64 = 650, the HP arrival."""
    jobs = [
        SimJob("s1", "LP", 0, 1000, gpus_per_worker=8, checkpoint_interval_s=300),
        SimJob("s2", "LP", 10, 1000, gpus_per_worker=8, checkpoint_interval_s=64),
        SimJob("h", "HP", 650, 500, gpus_per_worker=8),
    ]
    out = simulate(two_nodes(), jobs, "spotgpu").outcomes
    assert (out["s2"].evictions, out["s2"].lost_gpu_s) == (1, 0.0)
    assert out["s2"].finish_s == 1000 + (1000 - 640)  # restarts when s1 ends, 640 s of work kept


def test_a_restart_overhead_is_paid_before_progress() -> None:
    jobs = [SimJob("s", "LP", 0, 1000, gpus_per_worker=8, checkpoint_interval_s=100), SimJob("h", "HP", 250, 100, gpus_per_worker=8, workers=2)]
    out = simulate(two_nodes(), jobs, "spotgpu", restart_overhead_s=30).outcomes
    # s keeps 200 s, loses 50 s x 8; restarts at 350 (h ends), pays 30 s, runs its last 800 s
    assert (out["s"].lost_gpu_s, out["s"].finish_s) == (400.0, 350 + 30 + 800)


def workload(seed: int, count: int = 40) -> list[SimJob]:
    return synthetic_jobs(seed, count)


def cluster(n: int = 4) -> list[Node]:
    return [Node(name=f"n{i}", gpus=8, cpus=96, memory_gib=512, asw=f"s{i // 2}") for i in range(n)]


@pytest.mark.parametrize("policy", POLICIES)
def test_whole_replays_keep_every_rule_conserve_gpu_time_and_never_preempt_hp(policy: str) -> None:
    jobs = workload(3)
    replay = simulate(cluster(), jobs, policy, seed=1, check=True)
    out = replay.outcomes
    assert all(o.finish_s is not None for o in out.values())  # every job fits the cluster alone, so all finish
    assert all(o.evictions == 0 for o in out.values() if o.priority == "HP")
    spec = {j.name: j for j in jobs}
    # GPU time held = useful work + work lost to preemption (no restart overhead here)
    held = sum(o.gpu_s_run for o in out.values())
    useful = sum(j.workers * j.gpus_per_worker * j.work_s for j in jobs)
    assert held == pytest.approx(useful + replay.lost_gpu_s)
    for o in out.values():
        assert o.finish_s >= o.submit_s + spec[o.name].work_s


def test_the_same_seed_gives_the_same_replay_and_another_may_not() -> None:
    jobs = workload(5)
    a, b = (simulate(cluster(), jobs, "random", seed=7) for _ in range(2))
    assert a.outcomes == b.outcomes
    others = [simulate(cluster(), jobs, "random", seed=s).outcomes for s in range(8, 12)]
    assert any(o != a.outcomes for o in others)


@pytest.mark.parametrize("policy", ["spotgpu", "k8s-default", "random"])
def test_skipping_jobs_proven_unable_to_start_changes_nothing(policy: str) -> None:
    jobs = workload(2, 60)
    fast, full = (simulate(cluster(), jobs, policy, reoffer_all=every) for every in (False, True))
    assert fast.outcomes == full.outcomes and fast.decisions < full.decisions


def test_spotgpu_never_delays_hp_against_an_hp_only_replay() -> None:
    jobs = workload(11)
    mixed = simulate(cluster(), jobs, "spotgpu").outcomes
    alone = simulate(cluster(), [j for j in jobs if j.priority == "HP"], "spotgpu").outcomes
    assert {n: o.first_start_s for n, o in alone.items()} == {n: mixed[n].first_start_s for n in alone}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: simulate(two_nodes(), [], "lifo"), "policy: unknown 'lifo'"),
        (lambda: SimJob("x", "LP", 0, 0), r"jobs\[x\]\.work_s: must be above 0"),
        (lambda: SimJob("x", "LP", -5, 10), r"jobs\[x\]\.submit_s: must be at least 0"),
        (lambda: SimJob("x", "LP", 0, 10, checkpoint_interval_s=0), r"jobs\[x\]\.checkpoint_interval_s: must be above 0"),
        (lambda: simulate(two_nodes(), [SimJob("x", "LP", 0, 1), SimJob("x", "LP", 0, 1)]), "jobs: names must be unique"),
    ],
)
def test_bad_input_is_named(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()


def one_node() -> list[Node]:
    return [Node(name="n0", gpus=8, cpus=64, memory_gib=256)]


def test_a_standby_window_lends_gpus_to_spot_and_the_wake_evicts_at_checkpoint_cost() -> None:
    """h holds the node's 8 GPUs from 0 to 2,000 and sleeps in [100, 500). s (8 GPUs, checkpoints
    every 100 s) arrives at 150, runs on the lent GPUs, and is evicted at 500 when h wakes: it keeps
    300 s (checkpoints at 250, 350, 450), loses 50 s x 8 = 400 GPU-s, and restarts at 2,000 for its
    last 700 s. Lent: 8 x 400 GPU-s, of which s used 8 x 350: 87.5% harvested."""
    jobs = [
        SimJob("h", "HP", 0, 2000, gpus_per_worker=8, standby_windows_s=((100, 500),)),
        SimJob("s", "LP", 150, 1000, gpus_per_worker=8, checkpoint_interval_s=100),
    ]
    replay = simulate(one_node(), jobs, "spotgpu", check=True)
    out = replay.outcomes
    assert (out["h"].first_start_s, out["h"].finish_s, out["h"].evictions) == (0, 2000, 0)
    assert (out["s"].first_start_s, out["s"].evictions, out["s"].lost_gpu_s, out["s"].finish_s) == (150, 1, 400.0, 2700.0)
    assert replay.standby_harvested == pytest.approx(350 / 400)
    # with spot, the node is held all along; without, h alone holds it 1,600 of 2,700 s
    assert replay.allocation_mean(2700) == pytest.approx((8 * 1600 + 8 * 350 + 8 * 700) / (8 * 2700))
    assert replay.allocation_mean(2700, spot=False) == pytest.approx(1600 / 2700)


def test_a_standby_window_of_a_job_not_yet_running_is_ignored() -> None:
    jobs = [SimJob("h", "HP", 200, 1000, gpus_per_worker=8, standby_windows_s=((100, 500),)), SimJob("s", "LP", 250, 100, gpus_per_worker=8)]
    replay = simulate(one_node(), jobs, "spotgpu", check=True)
    assert replay.outcomes["s"].first_start_s == 1200  # waits for h: no lent GPUs
    assert replay.standby_harvested is None


def test_a_restarted_run_checkpoints_every_interval_of_progress_after_its_overhead() -> None:
    """s (checkpoints every 100 s) is evicted at 250 (keeps 200, loses 50 s x 8) and again at 600:
    its second run began at 350, progressed from 380 (30 s overhead), checkpointed at 480 and 580,
    so it keeps 200 more and loses 600 - 350 - 200 = 50 s x 8. Its third run starts at 700, pays
    30 s and runs the last 600 s."""
    jobs = [
        SimJob("s", "LP", 0, 1000, gpus_per_worker=8, checkpoint_interval_s=100),
        SimJob("h1", "HP", 250, 100, gpus_per_worker=8),
        SimJob("h2", "HP", 600, 100, gpus_per_worker=8),
    ]
    out = simulate(one_node(), jobs, "spotgpu", restart_overhead_s=30, check=True).outcomes
    assert (out["s"].evictions, out["s"].lost_gpu_s, out["s"].finish_s) == (2, 800.0, 700 + 30 + 600)
    assert out["s"].overhead_gpu_s == 30 * 8  # the third run's overhead; the second's was lost with it


@pytest.mark.parametrize("policy", ["spotgpu", "volcano"])
def test_gpu_time_held_is_work_plus_lost_plus_overhead(policy: str) -> None:
    jobs = workload(4, 60)
    replay = simulate(cluster(), jobs, policy, restart_overhead_s=45)
    out = replay.outcomes
    held = sum(o.gpu_s_run for o in out.values())
    useful = sum(j.workers * j.gpus_per_worker * j.work_s for j in jobs)
    assert held == pytest.approx(useful + replay.lost_gpu_s + sum(o.overhead_gpu_s for o in out.values()))
    assert replay.integral(replay.series_hp_gpus) + replay.integral(replay.series_spot_gpus) == pytest.approx(held)


@pytest.mark.parametrize("policy", ["spotgpu", "random"])
def test_a_small_window_rebuilt_often_gives_the_same_replay(policy: str) -> None:
    jobs = list(workload(6, 50))
    jobs[3] = SimJob(jobs[3].name, "HP", jobs[3].submit_s, 3000, gpus_per_worker=4, standby_windows_s=((jobs[3].submit_s + 50, jobs[3].submit_s + 900),))
    big = simulate(cluster(), jobs, policy, seed=3, restart_overhead_s=20)
    small = simulate(cluster(), jobs, policy, seed=3, restart_overhead_s=20, window_jobs=1, check=True)
    assert small.windows > 10 and big.windows == 1
    assert small.outcomes == big.outcomes and small.series_spot_gpus == big.series_spot_gpus


@pytest.mark.parametrize(("seed", "n_nodes"), [(0, 4), (2, 4), (11, 6), (7, 6)])
def test_spotgpu_isolated_starts_every_hp_job_when_an_hp_only_replay_does(seed: int, n_nodes: int) -> None:
    """HP placement on the HP view makes spot work invisible to HP jobs: the same start times as a
    replay of the HP jobs alone under the same policy, although HP pods take other nodes of the
    same kind where the HP view cannot tell them apart (the cheaper evictions)."""
    jobs = workload(seed, 80)
    hp = [j for j in jobs if j.priority == "HP"]
    alone = simulate(cluster(n_nodes), hp, "spotgpu-isolated").outcomes
    mixed = simulate(cluster(n_nodes), jobs, "spotgpu-isolated", check=True).outcomes
    assert {n: o.first_start_s for n, o in alone.items()} == {n: mixed[n].first_start_s for n in alone}
    assert sum(alone[n].first_nodes != mixed[n].first_nodes for n in alone) >= 3  # the freedom is used
    assert sum(o.evictions for o in mixed.values()) > 0


def test_spotgpu_changes_hp_start_times_and_can_delay_them() -> None:
    """The defect the isolated variant corrects: non-preemptive-first puts HP pods in the room spot
    pods leave, so later HP jobs meet a different HP layout; on this workload 720 s later in total."""
    jobs = workload(2, 80)
    alone = simulate(cluster(), [j for j in jobs if j.priority == "HP"], "spotgpu").outcomes
    mixed = simulate(cluster(), jobs, "spotgpu").outcomes
    assert sum(mixed[n].first_start_s - o.first_start_s for n, o in alone.items()) == 720


def test_placement_pairs_least_allocated_spreads_and_spotgpu_packs() -> None:
    """Three 1-GPU spot jobs of 8 CPUs: Kubernetes' LeastAllocated puts each on the node with the
    most CPU and memory left (n0, n1, then n0 by name); SpotGPU packs them on n0."""
    jobs = [SimJob(f"s{k}", "LP", k, 100, cpus_per_worker=8) for k in range(3)]
    spread = simulate(two_nodes(), jobs, "least-allocated+k8s-default", check=True)
    packed = simulate(two_nodes(), jobs, "spotgpu+spotgpu", check=True)
    assert [spread.outcomes[f"s{k}"].first_nodes for k in range(3)] == [("n0",), ("n1",), ("n0",)]
    assert [packed.outcomes[f"s{k}"].first_nodes for k in range(3)] == [("n0",)] * 3
    assert simulate(two_nodes(), jobs, "spotgpu").outcomes == packed.outcomes


@pytest.mark.parametrize("policy", ["least-allocated+random", "random+spotgpu", "least-allocated+volcano"])
def test_placement_pairs_keep_every_rule_in_whole_replays(policy: str) -> None:
    jobs = workload(8, 50)
    replay = simulate(cluster(), jobs, policy, seed=2, check=True)
    assert all(o.finish_s is not None for o in replay.outcomes.values())
    assert all(o.evictions == 0 for o in replay.outcomes.values() if o.priority == "HP")
    assert replay.outcomes == simulate(cluster(), jobs, policy, seed=2).outcomes


def test_an_unknown_placement_is_named() -> None:
    with pytest.raises(ValueError, match="placement of spotgpu, least-allocated, random"):
        simulate(two_nodes(), [], "bestfit+spotgpu")


def test_two_days_of_the_spot_2026_workload_under_check_with_standby_and_small_windows() -> None:
    """The generator's workload on 24 real nodes, every HP service on standby at night and spot demand
    high: every decision (wakes included) is the planner's validated plan, every state keeps the rules,
    spot pods use lent GPUs, and wakes evict them."""
    from planner.instances.spot_workload import spot2026_cluster, spot2026_jobs

    nodes = spot2026_cluster(24, seed=1)
    jobs = spot2026_jobs(nodes, 2, seed=1, standby_share=1.0, spot_load=1.0)
    replay = simulate(nodes, jobs, "spotgpu", restart_overhead_s=30, check=True, window_jobs=50)
    assert replay.windows > 5 and replay.standby_harvested is not None and replay.standby_harvested > 0.1
    assert sum(o.evictions for o in replay.outcomes.values()) > 0
    assert all(o.finish_s is not None for o in replay.outcomes.values())
