"""Instance generators: ASI-like synthetic clusters and the openb-2023 trace adapter."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from planner import metrics
from planner.cluster import Cluster, SnapshotError
from planner.instances import asi_fabric
from planner.instances.asi import generate_asi
from planner.instances.asi_fabric import asw_sizes
from planner.instances.openb import ENV_DIR, generate_openb, resolve_data_dir
from planner.snapshot import dump_cluster, parse_cluster


def round_trip(cluster: Cluster) -> Cluster:
    """The snapshot as a reader sees it: dumped, parsed and fully checked."""
    return parse_cluster(dump_cluster(cluster))


def gar(cluster: Cluster) -> float:
    return sum(p.gpus for p in cluster.pods if p.node) / sum(n.gpus for n in cluster.nodes)


@pytest.fixture(scope="module")
def asi_small() -> Cluster:
    return generate_asi(160, seed=7)


# ----------------------------------------------------------------------------------------------
# ASI-like generator
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheduler", ["spread", "random", "binpack"])
def test_asi_snapshot_is_valid_and_deterministic(scheduler):
    first = dump_cluster(generate_asi(120, seed=3, scheduler=scheduler))
    assert parse_cluster(first)
    assert dump_cluster(generate_asi(120, seed=3, scheduler=scheduler)) == first
    assert dump_cluster(generate_asi(120, seed=4, scheduler=scheduler)) != first


@pytest.mark.parametrize("allocation", [0.3, 0.7, 0.85])
def test_asi_hits_the_target_allocation(allocation):
    cluster = round_trip(generate_asi(150, seed=11, allocation=allocation))
    assert gar(cluster) == pytest.approx(allocation, abs=0.01)
    assert metrics.summary(cluster)["gar"] == pytest.approx(allocation, abs=0.01)


def test_asi_locks_the_requested_share_of_placed_pods(asi_small):
    placed = [p for p in asi_small.pods if p.node]
    assert sum(p.locked for p in placed) / len(placed) == pytest.approx(0.4, abs=0.02)
    none_locked = generate_asi(100, seed=1, locked=0.0)
    assert not any(p.locked for p in none_locked.pods)


def test_asi_switches_hold_32_to_64_nodes_of_one_model_under_one_spine(asi_small):
    by_asw = defaultdict(list)
    for n in asi_small.nodes:
        by_asw[n.asw].append(n)
    assert len(by_asw) >= 3
    for members in by_asw.values():
        assert 32 <= len(members) <= 64
        assert len({n.gpu_model for n in members}) == 1
        assert len({n.spine for n in members}) == 1
        assert len({(n.cpus, n.memory_gib) for n in members}) == 1
    assert all(n.gpus == 8 and 128 <= n.cpus <= 192 for n in asi_small.nodes)


@pytest.mark.parametrize("nodes", [1, 31, 32, 64, 65, 100, 127, 128, 1000, 37707])
def test_asw_sizes_partition_the_nodes(nodes):
    sizes = asw_sizes(nodes, np.random.default_rng(nodes))
    assert sizes.sum() == nodes
    if nodes >= 32:
        assert sizes.min() >= 32 and sizes.max() <= 64


def test_asi_training_gangs_sit_under_one_switch(asi_small):
    node = {n.name: n for n in asi_small.nodes}
    gangs = defaultdict(list)
    for p in asi_small.pods:
        gangs[p.job].append(p)
    required = [j for j in asi_small.jobs if j.topology is not None]
    assert required, "expected multi-node training jobs"
    for job in required:
        assert job.topology.level == "asw" and job.topology.mode == "required"
        pods = gangs[job.name]
        assert 2 <= len(pods) <= 8 and all(p.gpus == 8 for p in pods)
        assert len({node[p.node].asw for p in pods}) == 1


def test_asi_every_pod_names_a_declared_job_and_jobs_have_pods(asi_small):
    declared = {j.name for j in asi_small.jobs}
    used = {p.job for p in asi_small.pods}
    assert used == declared


def test_asi_cpu_per_gpu_never_exceeds_any_allowed_node_shape(asi_small):
    eight = [p for p in asi_small.pods if p.gpus == 8]
    assert eight
    for p in eight:
        allowed = [n for n in asi_small.nodes if not p.gpu_models or n.gpu_model in p.gpu_models]
        assert allowed
        assert all(p.cpus <= n.cpus and p.memory_gib <= n.memory_gib for n in allowed)


def test_asi_workload_mixes_sizes_priorities_pins_and_replicas(asi_small):
    pods = asi_small.pods
    assert {p.gpus for p in pods} == {1, 2, 4, 8}
    assert {p.priority for p in pods} == {"HP", "LP"}
    pinned = sum(bool(p.gpu_models) for p in pods) / len(pods)
    assert 0.7 <= pinned < 1
    groups = Counter(g for p in pods for g in p.anti_affinity)
    assert max(groups.values()) >= 2  # replicas of one service share a group


def test_asi_times_are_plausible(asi_small):
    assert asi_small.time_s > 3600
    started = [p.started_s for p in asi_small.pods]
    assert all(s is not None and 0 <= s <= asi_small.time_s for s in started)
    checkpoints = [p for p in asi_small.pods if p.checkpoint_s is not None]
    assert checkpoints and all(p.started_s <= p.checkpoint_s <= asi_small.time_s for p in checkpoints)


def test_asi_keeps_pending_jobs_when_asked():
    cluster = round_trip(generate_asi(100, seed=5, allocation=0.93, scheduler="spread", pending_jobs=2))
    pending_jobs = {p.job for p in cluster.pods if p.node is None}
    assert len(pending_jobs) == 2
    assert metrics.summary(cluster)["pending_pods"] == sum(p.node is None for p in cluster.pods)


def test_asi_large_clusters_are_filled_in_blocks_with_unique_names(monkeypatch):
    monkeypatch.setattr(asi_fabric, "BLOCK_NODES", 100)
    cluster = round_trip(generate_asi(420, seed=2))
    assert len(asi_fabric.fill_blocks(asi_fabric.build_fabric(420, np.random.default_rng(2)))) >= 2
    assert gar(cluster) == pytest.approx(0.7, abs=0.01)
    used_nodes = {p.node for p in cluster.pods}
    assert {n.name for n in cluster.nodes[:100]} & used_nodes
    assert {n.name for n in cluster.nodes[-100:]} & used_nodes


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"nodes": 0}, "--nodes"),
        ({"allocation": 1.5}, "--allocation"),
        ({"locked": -0.1}, "--locked"),
        ({"scheduler": "first-fit"}, "--scheduler"),
    ],
)
def test_asi_bad_arguments_name_the_argument(arguments, named):
    with pytest.raises(SnapshotError, match=named):
        generate_asi(**{"nodes": 40, "seed": 0, **arguments})


# ----------------------------------------------------------------------------------------------
# openb adapter on a tiny hand-written trace
# ----------------------------------------------------------------------------------------------

NODES_CSV = "sn,cpu_milli,memory_mib,gpu,model\nnode-a,16000,65536,2,T4\nnode-b,8000,32768,1,V100M16\n"
TIMED_CSV = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "whole,4000,8192,2,1000,,LS,Running,0,100,0\n"
    "share,2000,2048,1,300,T4|V100M16,BE,Running,10,300,10\n"
    "waiter,4000,4096,2,1000,T4,LS,Running,20,500,\n"
    "gone,1000,1024,0,0,,LS,Succeeded,5,50,5\n"
    "never,1000,1024,0,0,,LS,Failed,60,60,\n"
)
UNTIMED_CSV = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nu-0,1000,1024,1,500\nu-1,1000,1024,2,1000\nu-2,1000,1024,8,1000\n"


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    (tmp_path / "openb_node_list_gpu_node.csv").write_text(NODES_CSV)
    (tmp_path / "openb_node_list_all_node.csv").write_text(NODES_CSV + "cpu-1,32000,65536,0,\n")
    (tmp_path / "openb_pod_list_default.csv").write_text(TIMED_CSV)
    (tmp_path / "openb_pod_list_multigpu20.csv").write_text(UNTIMED_CSV)
    return tmp_path


def test_openb_converts_units_models_and_priority(trace_dir):
    cluster = round_trip(generate_openb(at_s=30, data_dir=trace_dir))
    node = {n.name: n for n in cluster.nodes}
    assert (node["node-a"].cpus, node["node-a"].memory_gib, node["node-a"].gpus, node["node-a"].gpu_model) == (16, 64, 2, "T4")
    assert node["node-a"].asw is None and node["node-a"].spine is None
    pods = {p.name: p for p in cluster.pods}
    share = pods["share"]
    assert share.gpus == pytest.approx(0.3) and share.cpus == 2 and share.memory_gib == 2
    assert share.gpu_models == ["T4", "V100M16"] and share.priority == "LP"
    assert pods["whole"].gpus == 2 and pods["whole"].priority == "HP" and pods["whole"].job is None


def test_openb_replays_lifetimes_and_the_pending_queue(trace_dir):
    # At 30 s 'whole' holds node-a's two GPUs, so 'waiter' (2 GPUs, T4 only) waits.
    early = round_trip(generate_openb(at_s=30, data_dir=trace_dir))
    pods = {p.name: p for p in early.pods}
    assert set(pods) == {"whole", "share", "waiter", "gone"}
    assert pods["waiter"].node is None and pods["whole"].node == "node-a"
    assert metrics.summary(early)["pending_pods"] == 1
    # 'whole' leaves at 100 s and the waiter is placed then; 'gone' left at 50 s; 'never' never lived.
    later = round_trip(generate_openb(at_s=100, data_dir=trace_dir))
    pods = {p.name: p for p in later.pods}
    assert set(pods) == {"share", "waiter"}
    assert pods["waiter"].node == "node-a" and pods["waiter"].started_s == 100
    assert later.time_s == 100 and metrics.summary(later)["pending_pods"] == 0


def test_openb_without_departures_keeps_every_created_pod(trace_dir):
    cluster = round_trip(generate_openb(at_s=1000, data_dir=trace_dir, departures=False))
    assert {p.name for p in cluster.pods} == {"whole", "share", "waiter", "gone", "never"}


def test_openb_untimed_lists_arrive_in_order_and_never_leave(trace_dir):
    cluster = round_trip(generate_openb(pods="multigpu20", data_dir=trace_dir, nodes="all", scheduler="binpack"))
    pods = {p.name: p for p in cluster.pods}
    assert pods["u-0"].gpus == 0.5 and pods["u-0"].node == "node-b"  # binpack: the fuller node
    assert pods["u-1"].node == "node-a"
    assert pods["u-2"].node is None  # 8 GPUs fit nowhere: pending
    assert cluster.time_s == 0 and len(cluster.nodes) == 3


def test_openb_reads_the_directory_from_the_environment(trace_dir, monkeypatch):
    monkeypatch.setenv(ENV_DIR, str(trace_dir))
    assert resolve_data_dir() == trace_dir
    assert len(generate_openb(at_s=30).pods) == 4


@pytest.mark.parametrize(
    ("arguments", "named", "hint"),
    [
        ({"pods": "nope", "at_s": 1}, "--pods", "available: default, multigpu20"),
        ({"pods": "multigpu20", "at_s": 5}, "--at", "leave --at out"),
        ({"at_s": None}, "--at", "is timed"),
        ({"at_s": -1}, "--at", "from 0 to"),
        ({"at_s": float("nan")}, "--at", "from 0 to"),
        ({"at_s": 1, "nodes": "cpu"}, "--nodes", "gpu, all"),
        ({"at_s": 1, "scheduler": "fifo"}, "--scheduler", "spread"),
    ],
)
def test_openb_bad_arguments_name_the_argument_and_the_fix(trace_dir, arguments, named, hint):
    with pytest.raises(SnapshotError) as err:
        generate_openb(data_dir=trace_dir, **arguments)
    message = str(err.value)
    assert message.startswith(named) and hint in message


def test_openb_missing_data_directory_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_DIR, raising=False)
    with pytest.raises(SnapshotError, match="--data-dir: no openb-2023 trace directory"):
        generate_openb(at_s=0, data_dir=tmp_path / "missing")
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "also-missing"))
    with pytest.raises(SnapshotError, match=ENV_DIR):
        generate_openb(at_s=0)


# ----------------------------------------------------------------------------------------------
# openb adapter on the real trace (planner/data/openb-2023)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("at_s", [9_000_000, 10_500_000])
def test_openb_default_at_a_few_times_is_valid(at_s):
    cluster = round_trip(generate_openb(at_s=at_s))
    assert len(cluster.nodes) == 1213 and cluster.time_s == at_s
    assert cluster.pods and any(0 < p.gpus < 1 for p in cluster.pods)
    summary = metrics.summary(cluster)
    assert summary["pending_pods"] == sum(p.node is None for p in cluster.pods)


def test_openb_default_is_deterministic_for_a_seed():
    one = dump_cluster(generate_openb(at_s=10_000_000, scheduler="random", seed=1))
    assert dump_cluster(generate_openb(at_s=10_000_000, scheduler="random", seed=1)) == one
    assert dump_cluster(generate_openb(at_s=10_000_000, scheduler="random", seed=2)) != one


def test_openb_fgd_style_fill_has_fractional_and_pending_pods():
    cluster = round_trip(generate_openb(pods="gpuspec33", at_s=11_000_000, departures=False, scheduler="binpack"))
    summary = metrics.summary(cluster)
    assert summary["gar"] > 0.2
    assert any(0 < p.gpus < 1 for p in cluster.pods) and any(p.gpu_models for p in cluster.pods)
    assert summary["pending_pods"] == sum(p.node is None for p in cluster.pods)
