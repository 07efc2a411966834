"""Instance generators for preemption: FlexTopo's KWOK cluster (Table 3) and HP/spot clusters on the
spot-GPU trace's real node list."""

from __future__ import annotations

import csv
from collections import Counter, defaultdict

import pytest

from planner import rules
from planner.cluster import Cluster, SnapshotError
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.instances.flextopo import flextopo_cluster
from planner.instances.spot import DEFAULT_NODE_LIST, NodeListMissing, spot_cluster
from planner.snapshot import consistency_problems, dump_cluster, parse_cluster


def round_trip(cluster: Cluster) -> Cluster:
    """The snapshot as a reader sees it: dumped, parsed and fully checked."""
    return parse_cluster(dump_cluster(cluster))


def placed(cluster: Cluster) -> list:
    return [p for p in cluster.pods if p.node is not None]


def workload(pod) -> str:  # type: ignore[no-untyped-def]
    return pod.job.split("-")[0]


@pytest.fixture(scope="module")
def table3() -> Cluster:
    return round_trip(flextopo_cluster(100, seed=0, pending={"B": 1, "C": 2}))


@pytest.fixture(scope="module")
def spot200() -> Cluster:
    return round_trip(spot_cluster(200, seed=0, pending_jobs=4))


@pytest.fixture(scope="module")
def node_rows() -> dict[str, dict[str, str]]:
    with DEFAULT_NODE_LIST.open(newline="") as handle:
        return {row["node_name"]: row for row in csv.DictReader(handle)}


# ----------------------------------------------------------------------------------------------
# FlexTopo (Table 3)
# ----------------------------------------------------------------------------------------------


def test_flextopo_is_a_function_of_the_seed():
    first = dump_cluster(flextopo_cluster(40, seed=5, pending={"B": 1}))
    assert dump_cluster(flextopo_cluster(40, seed=5, pending={"B": 1})) == first
    assert dump_cluster(flextopo_cluster(40, seed=6, pending={"B": 1})) != first


def test_flextopo_at_100_nodes_has_table_3_counts_and_uses_all_800_gpus(table3):
    pods = placed(table3)
    assert Counter(workload(p) for p in pods) == {"A": 20, "B": 40, "C": 200, "D": 80}
    assert sum(p.gpus for p in pods) == 800 == sum(n.gpus for n in table3.nodes)
    assert sum(p.cpus for p in pods) == 6400 == sum(n.cpus for n in table3.nodes)
    shape = {workload(p): (p.priority_value, p.priority, p.gpus, p.cpus) for p in pods}
    assert shape == {"A": (1500, "HP", 8, 64), "B": (1000, "HP", 4, 32), "C": (500, "LP", 2, 16), "D": (200, "LP", 1, 8)}
    assert {n.gpu_model for n in table3.nodes} == {"RTX4090"}
    assert set(Counter(p.job for p in table3.pods).values()) == {1}  # one pod per job


@pytest.mark.parametrize("nodes", [1, 3, 7, 37, 250])
def test_flextopo_scales_table_3_and_stays_saturated(nodes):
    cluster = flextopo_cluster(nodes, seed=1)
    assert not consistency_problems(cluster)
    assert sum(p.gpus for p in cluster.pods) == 8 * nodes
    counts = Counter(workload(p) for p in cluster.pods)
    for letter, at_100 in (("A", 20), ("B", 40), ("C", 200), ("D", 80)):
        assert abs(counts[letter] - at_100 * nodes / 100) <= 2


def test_flextopo_nodes_are_two_socket_eight_numa_rtx4090_servers(table3):
    for node in table3.nodes:
        assert (node.gpus, node.cpus, node.memory_gib) == (8, 64, 512)
        assert [(d.gpu_indexes, d.cpus, d.socket) for d in node.numa] == [([g], 8, g // 4) for g in range(8)]


def test_flextopo_every_placed_pod_is_aligned(table3):
    nodes = {n.name: n for n in table3.nodes}
    by_node = table3.pods_by_node()
    for pod in placed(table3):
        node = nodes[pod.node]
        assert len(pod.gpu_indexes) == pod.gpus
        if workload(pod) == "A":
            assert pod.gpu_indexes == list(range(8)) and by_node[pod.node] == [pod]
            continue
        assert rules.alignment_tier(node, pod.gpu_indexes) != rules.ALIGN_CROSS_SOCKET
        others = [q for q in by_node[pod.node] if q is not pod]
        assert rules.numa_guaranteed_breaks(node, pod, pod.gpu_indexes, others) == []
    for node in table3.nodes:  # every domain's 8 CPUs go to the pod on its GPU
        assert rules.attributed_cpus(node, by_node[node.name]) == [8.0] * 8


def test_flextopo_b_fills_sockets_and_c_and_d_mix_at_random_positions(table3):
    assert {tuple(p.gpu_indexes) for p in placed(table3) if workload(p) == "B"} == {(0, 1, 2, 3), (4, 5, 6, 7)}
    sockets: dict[tuple[str, int], set[str]] = defaultdict(set)
    for pod in placed(table3):
        if workload(pod) in "CD":
            sockets[(pod.node, pod.gpu_indexes[0] // 4)].add(workload(pod))
    assert sum(kinds == {"C", "D"} for kinds in sockets.values()) >= 10
    c_pairs = Counter(tuple(g % 4 for g in p.gpu_indexes) for p in placed(table3) if workload(p) == "C")
    assert len(c_pairs) == 6  # every pair of a socket's four devices occurs


def test_flextopo_jobs_carry_numa_qos_and_lp_pods_have_lost_work(table3):
    modes = {workload(p): table3.jobs[table3.job_index()[p.job]].numa for p in table3.pods}
    assert modes["B"].mode == "guaranteed" and modes["A"].mode == "best-effort"
    assert modes["C"] is None and modes["D"] is None
    for pod in placed(table3):
        assert pod.started_s <= table3.time_s
        if pod.priority == "LP":
            assert table3.time_s - pod.started_s <= 4 * 3600
            assert rules.lost_gpu_s(pod, table3.time_s) > 0
            assert pod.checkpoint_interval_s == (1800 if workload(pod) == "C" else None)


def test_flextopo_pending_adds_pending_single_pod_jobs_and_leaves_the_rest(table3):
    pending = [p for p in table3.pods if p.node is None]
    assert [(p.job, p.gpus, p.priority, p.priority_value) for p in pending] == [
        ("B-new-0", 4, "HP", 1000),
        ("C-new-0", 2, "LP", 500),
        ("C-new-1", 2, "LP", 500),
    ]
    assert table3.jobs[table3.job_index()["B-new-0"]].numa.mode == "guaranteed"
    without = flextopo_cluster(100, seed=0)
    assert [p for p in table3.pods if p.node is not None] == without.pods


def test_flextopo_pending_b_is_placed_aligned_by_preemption(table3):
    plan = plan_preempt(table3, "B-new-0", PreemptOptions(method="spotgpu"))
    assert plan.victims and len(plan.placements) == 1
    node = next(n for n in table3.nodes if n.name == plan.placements[0].node)
    assert rules.alignment_tier(node, plan.placements[0].gpu_indexes) == rules.ALIGN_SOCKET


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [({"nodes": 0}, "--nodes"), ({"pending": {"E": 1}}, "unknown workload"), ({"pending": {"B": -1}}, "--pending"), ({"seed": -1}, "--seed")],
)
def test_flextopo_bad_arguments_are_named(kwargs, word):
    with pytest.raises(SnapshotError, match=word):
        flextopo_cluster(**kwargs)


# ----------------------------------------------------------------------------------------------
# Spot clusters on the spot-GPU trace's node list
# ----------------------------------------------------------------------------------------------


def test_spot_is_a_function_of_the_seed():
    first = dump_cluster(spot_cluster(120, seed=2, pending_jobs=2))
    assert dump_cluster(spot_cluster(120, seed=2, pending_jobs=2)) == first
    assert dump_cluster(spot_cluster(120, seed=3, pending_jobs=2)) != first


def test_spot_nodes_are_rows_of_the_node_list(spot200, node_rows):
    names = [n.name.removeprefix("node-") for n in spot200.nodes]
    assert len(set(names)) == 200 and set(names) <= set(node_rows)
    for node, name in zip(spot200.nodes, names):
        row = node_rows[name]
        csv_shape = (row["gpu_model"], int(row["gpu_capacity_num"]), int(row["cpu_num"]))
        assert (node.gpu_model, node.gpus, node.cpus) == csv_shape
        assert node.memory_gib == 8 * node.cpus
    assert len({n.gpu_model for n in spot200.nodes}) >= 4  # a sample, not one model


def test_spot_switches_are_homogeneous_with_at_most_16_nodes(spot200):
    by_asw = defaultdict(list)
    for node in spot200.nodes:
        by_asw[node.asw].append(node)
    assert all(len(members) <= 16 for members in by_asw.values())
    assert all(len({(n.gpu_model, n.gpus, n.cpus, n.spine) for n in members}) == 1 for members in by_asw.values())


@pytest.mark.parametrize(("hp_share", "lp_fill"), [(0.6, 0.9), (0.3, 0.5)])
def test_spot_hp_share_and_lp_fill_are_about_as_asked(hp_share, lp_fill):
    cluster = spot_cluster(200, seed=4, hp_share=hp_share, lp_fill=lp_fill)
    gpus = sum(n.gpus for n in cluster.nodes)
    hp = sum(p.gpus for p in placed(cluster) if p.priority == "HP")
    lp = sum(p.gpus for p in placed(cluster) if p.priority == "LP")
    assert hp / gpus == pytest.approx(hp_share, abs=0.03)
    assert lp / (gpus - hp) == pytest.approx(lp_fill, abs=0.05)


def test_spot_pods_fit_their_model_family(spot200):
    nodes = {n.name: n for n in spot200.nodes}
    for pod in placed(spot200):
        assert nodes[pod.node].gpu_model in pod.gpu_models
    pinned = {tuple(p.gpu_models) for p in spot200.pods}
    assert all(len(models) == 1 or set(models) <= {"A100-SXM4-80GB", "A800-SXM4-80GB"} for models in pinned if models)


def test_spot_has_lp_gangs_across_nodes_locked_pods_and_mixed_checkpoints(spot200):
    lp_jobs = defaultdict(list)
    for pod in placed(spot200):
        if pod.priority == "LP":
            lp_jobs[pod.job].append(pod.node)
    gangs = [nodes for nodes in lp_jobs.values() if len(nodes) > 1]
    assert gangs and all(2 <= len(nodes) <= 4 and len(set(nodes)) == len(nodes) for nodes in gangs)
    assert any(p.locked for p in placed(spot200) if p.priority == "LP")
    assert any(p.locked for p in placed(spot200) if p.priority == "HP")
    lp = [p for p in placed(spot200) if p.priority == "LP"]
    assert {p.checkpoint_interval_s for p in lp} == {600, 1800, 3600, None}
    for pod in lp:
        assert pod.started_s <= spot200.time_s
        if pod.checkpoint_s is not None:
            assert pod.started_s <= pod.checkpoint_s <= spot200.time_s
    ages = sorted(spot200.time_s - rules.last_checkpoint_s(p, spot200.time_s) for p in lp)
    assert ages[0] < 600 and ages[-1] > 3600


def test_spot_pending_jobs_are_pending_hp_jobs_that_need_preemption(spot200):
    pending = defaultdict(list)
    for pod in spot200.pods:
        if pod.job.startswith("hp-new-"):
            pending[pod.job].append(pod)
    assert sorted(pending) == [f"hp-new-{k}" for k in range(4)]
    for job, pods in pending.items():
        assert 1 <= len(pods) <= 8
        assert all(p.node is None and p.priority == "HP" and p.gpus in (1, 2, 4, 8) for p in pods)
        plan = plan_preempt(spot200, job, PreemptOptions(method="spotgpu"))
        assert plan.report.status == "heuristic" and plan.victims, job


def test_spot_reads_the_node_list_given(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text("gpu_model,gpu_capacity_num,cpu_num,node_name\nH800,8,192,a\nA10,1,128,b\n")
    cluster = spot_cluster(2, seed=0, pending_jobs=0, node_list=path)
    assert sorted((n.name, n.gpu_model, n.gpus) for n in cluster.nodes) == [("node-a", "H800", 8), ("node-b", "A10", 1)]
    with pytest.raises(SnapshotError, match="--nodes"):
        spot_cluster(3, node_list=path)
    path.write_text("gpu_model,cpu_num,node_name\nH800,192,a\n")
    with pytest.raises(SnapshotError, match="missing column.*gpu_capacity_num"):
        spot_cluster(1, node_list=path)


def test_spot_missing_node_list_is_a_clear_error(tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(NodeListMissing, match="nope.csv") as caught:
        spot_cluster(node_list=missing)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, FileNotFoundError)


def test_generate_commands_are_installed(tmp_path):
    """`planner generate flextopo` and `generate spot` through the command line (guards the wiring)."""
    import json
    import subprocess
    import sys

    out = tmp_path / "ft.json"
    done = subprocess.run(
        [sys.executable, "-m", "planner.cli", "generate", "flextopo", "--nodes", "4", "--pending", "B=1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert any(job["name"] == "B-new-0" for job in json.loads(out.read_text())["jobs"])
    node_list = tmp_path / "nodes.csv"
    node_list.write_text("gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,8,96,x1\n")
    done = subprocess.run(
        [sys.executable, "-m", "planner.cli", "generate", "spot", "--nodes", "-1", "--node-list", str(node_list)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "--nodes" in done.stderr, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "planner.cli", "generate", "spot", "--node-list", str(tmp_path / "none.csv")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "none.csv" in done.stderr, done.stderr
    from planner.cli.generate import generate_app

    assert {c.name for c in generate_app.registered_commands} >= {"asi", "openb", "flextopo", "spot"}
