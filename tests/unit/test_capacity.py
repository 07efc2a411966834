"""Large-job capacity (ASI Fig. 14) on hand-made clusters."""

from __future__ import annotations

from planner.capacity import large_job_capacity
from planner.cluster import Cluster
from planner.metrics import parse_shape


def cluster(free: dict[tuple[str, str], list[int]], cpus: int = 128) -> Cluster:
    """Nodes of 8 GPUs; ``free[(asw, model)]`` lists each node's free GPUs (the rest is used)."""
    nodes, pods = [], []
    for (asw, model), per_node in free.items():
        for k, idle in enumerate(per_node):
            name = f"{asw}-{k}"
            nodes.append({"name": name, "gpus": 8, "cpus": cpus, "memory_gib": 1024, "asw": asw, "gpu_model": model})
            if idle < 8:
                pods.append({"name": f"p-{name}", "node": name, "gpus": 8 - idle, "cpus": 1})
    return Cluster.model_validate({"nodes": nodes, "pods": pods})


def test_within_switch_capacity_is_what_asw_local_requests_get():
    # A100: switch a has 12 free GPUs, switch b 12: across 24 -> 1 request of 16; within: none
    c = cluster({("a", "A100"): [8, 4], ("b", "A100"): [4, 8], ("c", "H800"): [8, 8]})
    (result,) = large_job_capacity(c, [parse_shape("16g192c")])
    assert result["per_model"]["A100"] == {"usable_gpus": 24, "across_asw": 1, "within_asw": 0}
    assert result["per_model"]["H800"] == {"usable_gpus": 16, "across_asw": 1, "within_asw": 1}
    assert result["heterogeneous_across_asw"] == 2


def test_cpus_per_gpu_limit_the_slots():
    # 12 CPUs per GPU on idle 48-CPU nodes: 4 GPU slots per node, not 8; with a 1-CPU pod there, 3
    c = cluster({("a", "A100"): [8, 7]}, cpus=48)
    (result,) = large_job_capacity(c, [parse_shape("6g72c")])
    assert result["per_model"]["A100"]["usable_gpus"] == 4 + 3 and result["per_model"]["A100"]["within_asw"] == 1


def test_report_shows_the_capacity_before_and_after_an_allocation(tmp_path):
    import json
    import subprocess
    import sys

    from tests.support.allocate_clusters import switches_cluster

    snapshot = tmp_path / "s.json"
    snapshot.write_text(switches_cluster({"a": 12, "b": 4, "c": 1, "d": 1, "e": 1, "f": 1}, 128).model_dump_json(exclude_defaults=True))
    plan = tmp_path / "p.json"

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True, timeout=120)

    assert run("allocate", str(snapshot), "--out", str(plan)).returncode == 0
    done = run("report", str(snapshot), "--json", "--requests", "32g384c", "--plan", str(plan))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    before, after = result["large_jobs"][0]["per_model"]["(unnamed)"], result["large_jobs_after_plan"][0]["per_model"]["(unnamed)"]
    assert before == {"usable_gpus": 160, "across_asw": 5, "within_asw": 4}  # a holds 3, b 1
    assert after == {"usable_gpus": 32, "across_asw": 1, "within_asw": 0}  # c-f: one node each
    refused = run("report", str(snapshot), "--plan", str(plan))
    assert refused.returncode == 2 and "--plan: give --requests too" in refused.stderr
