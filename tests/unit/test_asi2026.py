"""The ASI 2026 trace adapter (``planner import asi2026``) on small hand-written Parquet slices."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from planner.adapters.asi2026 import POD_TABLE, SERVER_TABLE, import_asi2026
from planner.cli import app
from planner.cluster import SnapshotError
from planner.snapshot import dump_cluster, load_cluster, parse_cluster

runner = CliRunner()

# The published schemas (docs/schema.md of cluster-trace-gpu-v2026); day and hour are partition strings.
SERVER_SCHEMA = pa.schema(
    [
        ("server_id", pa.string()),
        ("cluster_id", pa.string()),
        ("asw_id", pa.string()),
        ("gpu_spec_public", pa.string()),
        ("gpu_count", pa.float64()),
        ("cpu_capacity_cores", pa.float64()),
        ("day", pa.string()),
        ("hour", pa.string()),
    ]
)
POD_SCHEMA = pa.schema(
    [
        ("pod_id", pa.string()),
        ("workload_id", pa.string()),
        ("server_id", pa.string()),
        ("cluster_id", pa.string()),
        ("state_public", pa.string()),
        ("gpu_spec_public", pa.string()),
        ("server_gpu_count", pa.float64()),
        ("server_cpu_capacity_cores", pa.float64()),
        ("priority_class", pa.string()),
        ("job_type_public", pa.string()),
        ("model_type_public", pa.string()),
        ("is_genai_request", pa.bool_()),
        ("gpu_request", pa.float64()),
        ("gpu_mem_request", pa.float64()),
        ("cpu_request_cores", pa.float64()),
        ("used_gpu_hours", pa.float64()),
        ("avg_gpu_sm_util", pa.float64()),
        ("avg_gpu_mem_gib", pa.float64()),
        ("avg_cpu_request_util", pa.float64()),
        ("avg_memory_util", pa.float64()),
        ("ready_status", pa.bool_()),
        ("schedule_delay_sec", pa.int64()),
        ("ready_delay_sec", pa.int64()),
        ("day", pa.string()),
        ("hour", pa.string()),
    ]
)


def server(
    server_id: str, asw: str | None = "asw-a", cluster: str = "c1", spec: str = "A100", gpus: float = 8.0, cpus: float = 128.0, day: str = "0", hour: str = "07"
) -> dict[str, Any]:
    return {
        "server_id": server_id,
        "cluster_id": cluster,
        "asw_id": asw,
        "gpu_spec_public": spec,
        "gpu_count": gpus,
        "cpu_capacity_cores": cpus,
        "day": day,
        "hour": hour,
    }


def pod(
    pod_id: str,
    on: str | None,
    state: str = "Running",
    priority: str = "HP",
    gpus: float = 1.0,
    cpus: float = 8.0,
    workload: str | None = None,
    cluster: str = "c1",
    spec: str = "A100",
    day: str = "0",
    hour: str = "07",
) -> dict[str, Any]:
    return {
        "pod_id": pod_id,
        "workload_id": workload,
        "server_id": on,
        "cluster_id": cluster,
        "state_public": state,
        "gpu_spec_public": spec,
        "server_gpu_count": 8.0,
        "server_cpu_capacity_cores": 128.0,
        "priority_class": priority,
        "job_type_public": "training",
        "model_type_public": "genai",
        "is_genai_request": True,
        "gpu_request": gpus,
        "gpu_mem_request": 80.0 * gpus,
        "cpu_request_cores": cpus,
        "used_gpu_hours": gpus,
        "avg_gpu_sm_util": 0.5,
        "avg_gpu_mem_gib": 10.0,
        "avg_cpu_request_util": 0.3,
        "avg_memory_util": 0.2,
        "ready_status": True,
        "schedule_delay_sec": 3,
        "ready_delay_sec": 20,
        "day": day,
        "hour": hour,
    }


def write_table(root: Path, table: str, schema: pa.Schema, rows: list[dict[str, Any]], layout: str) -> None:
    """``hive``: table/day=D/hour=H/part-000.parquet without day and hour columns (as published);
    ``plain-dir``: table/part-000.parquet with them; ``plain-file``: table.parquet with them."""
    if layout == "hive":
        slices: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            slices[row["day"], row["hour"]].append(row)
        inner = pa.schema([f for f in schema if f.name not in ("day", "hour")])
        for (day, hour), part in slices.items():
            folder = root / table / f"day={day}" / f"hour={hour}"
            folder.mkdir(parents=True)
            pq.write_table(pa.Table.from_pylist(part, schema=inner), folder / "part-000.parquet")
    elif layout == "plain-dir":
        (root / table).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), root / table / "part-000.parquet")
    else:
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), root / f"{table}.parquet")


def write_trace(root: Path, servers: list[dict[str, Any]], pods: list[dict[str, Any]], layout: str = "hive", pod_schema: pa.Schema = POD_SCHEMA) -> Path:
    write_table(root, SERVER_TABLE, SERVER_SCHEMA, servers, "plain-dir" if layout == "plain" else layout)
    write_table(root, POD_TABLE, pod_schema, pods, "plain-file" if layout == "plain" else layout)
    return root


# Day 0, hour 7: four servers in two clusters; every pod state and priority class; other slices around it.
SERVERS = [
    server("s-1"),
    server("s-2"),
    server("s-3", asw="asw-b", cpus=96.0),
    server("s-4", asw=None, cluster="c2", spec="H20", cpus=192.0),
    server("s-5", hour="08"),
    server("s-6", day="1"),
]
PODS = [
    pod("train-0", "s-1", gpus=4.0, cpus=32.0, workload="w-train"),
    pod("train-1", "s-2", gpus=4.0, cpus=32.0, workload="w-train"),
    pod("train-2", None, state="Pending", gpus=8.0, cpus=64.0, workload="w-train"),
    pod("share", "s-1", priority="LP", gpus=0.5, cpus=4.0),
    pod("sleeper", "s-3", state="Standby", gpus=8.0, cpus=64.0, workload="w-svc"),
    pod("spot", "s-3", priority="LP", gpus=8.0, cpus=24.0, workload="w-spot"),
    pod("other", "s-4", priority="Other", gpus=1.0, cpus=8.0, cluster="c2", spec="H20"),
    pod("cpu-only", "s-4", priority="LP", gpus=0.0, cpus=16.0, cluster="c2", spec="H20"),
    pod("done", "s-1", state="Succeeded", workload="w-done"),
    pod("done-elsewhere", "s-99", state="Succeeded"),
    pod("failed", "s-2", state="Failed"),
    pod("unknown", "s-2", state="Unknown"),
    pod("lp-standby", "s-2", state="Standby", priority="LP"),
    pod("next-hour", "s-5", hour="08"),
]


@pytest.fixture(params=["hive", "plain"])
def trace(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return write_trace(tmp_path, SERVERS, PODS, request.param)


def test_servers_become_nodes_of_the_slice_only(trace: Path) -> None:
    cluster = import_asi2026(trace, 0, 7).cluster
    nodes = {n.name: n for n in cluster.nodes}
    assert sorted(nodes) == ["s-1", "s-2", "s-3", "s-4"]  # s-5 (hour 8) and s-6 (day 1) are other slices
    assert [(n.asw, n.spine, n.gpu_model, n.gpus, n.cpus) for n in cluster.nodes] == [
        ("asw-a", "c1", "A100", 8, 128),
        ("asw-a", "c1", "A100", 8, 128),
        ("asw-b", "c1", "A100", 8, 96),
        (None, "c2", "H20", 8, 192),
    ]
    assert all(n.memory_gib == 0 for n in cluster.nodes)  # the trace has no memory: not a resource here
    assert nodes["s-4"].labels == {"cluster_id": "c2"}
    assert cluster.time_s == 7 * 3600


def test_pods_are_placed_pending_or_skipped_by_state(trace: Path) -> None:
    imported = import_asi2026(trace, 0, 7)
    pods = {p.name: p for p in imported.cluster.pods}
    assert {name: p.node for name, p in pods.items()} == {
        "train-0": "s-1",
        "train-1": "s-2",
        "train-2": None,
        "share": "s-1",
        "sleeper": "s-3",
        "spot": "s-3",
        "other": "s-4",
        "cpu-only": "s-4",
    }
    assert [name for name, p in pods.items() if p.standby] == ["sleeper"]
    s = imported.summary
    assert (s.nodes, s.switches, s.nodes_without_switch, s.clusters) == (4, 2, 1, 2)
    assert (s.placed_pods, s.standby_pods, s.pending_pods, s.jobs) == (7, 1, 1, 3)
    assert s.skipped == {"Succeeded": 2, "Failed": 1, "Unknown": 1, "Standby LP": 1}


def test_requests_priorities_jobs_and_pins_map_to_the_snapshot(trace: Path) -> None:
    cluster = import_asi2026(trace, 0, 7).cluster
    pods = {p.name: p for p in cluster.pods}
    assert (pods["train-0"].gpus, pods["train-0"].cpus, pods["train-0"].memory_gib) == (4, 32, 0)
    assert pods["share"].gpus == 0.5 and pods["cpu-only"].gpus == 0
    assert {name: p.priority for name, p in pods.items()} == {
        "train-0": "HP",
        "train-1": "HP",
        "train-2": "HP",
        "share": "LP",
        "sleeper": "HP",
        "spot": "LP",
        "other": "HP",
        "cpu-only": "LP",
    }
    assert sorted(j.name for j in cluster.jobs) == ["w-spot", "w-svc", "w-train"]  # w-done's pod finished
    assert all(j.topology is None for j in cluster.jobs)
    assert [p.name for p in cluster.pods if p.job == "w-train"] == ["train-0", "train-1", "train-2"]
    assert pods["share"].job is None and pods["other"].job is None
    assert pods["train-2"].gpu_models == ["A100"] and pods["cpu-only"].gpu_models == []
    assert pods["other"].node_selector == {"cluster_id": "c2"}  # never moved to another cluster


def test_imported_snapshot_passes_validation_and_round_trips(trace: Path) -> None:
    cluster = import_asi2026(trace, 0, 7).cluster
    assert parse_cluster(dump_cluster(cluster)) == cluster


def test_hour_partitions_are_read_as_numbers(tmp_path: Path) -> None:
    write_trace(tmp_path, [server("s-1", hour="7")], [pod("p", "s-1", hour="7")], "hive")
    assert [p.node for p in import_asi2026(tmp_path, 0, 7).cluster.pods] == ["s-1"]


# ----------------------------------------------------------------------------------------------
# The command line
# ----------------------------------------------------------------------------------------------


def test_cli_writes_the_snapshot_and_prints_a_summary(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    result = runner.invoke(app, ["import", "asi2026", str(trace), "--day", "0", "--hour", "7", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "4 nodes under 2 access switches (1 without one) in 2 cluster(s)" in result.stdout
    assert "7 placed (1 on standby), 1 pending, in 3 job(s)" in result.stdout
    assert "1 Succeeded" not in result.stdout and "2 Succeeded, 1 Failed, 1 Unknown, 1 Standby LP" in result.stdout
    assert len(load_cluster(out).pods) == 8


def test_cli_without_out_writes_json_to_stdout_and_the_summary_to_stderr(trace: Path) -> None:
    result = runner.invoke(app, ["import", "asi2026", str(trace), "--day", "0", "--hour", "07"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["nodes"]) == 4
    assert "4 nodes under 2 access switches" in result.stderr


def test_report_counts_large_requests_on_an_imported_slice(tmp_path: Path) -> None:
    """Three switches of 16 A100 servers: asw-a empty (8 slots a server: 128), asw-b with a 1-GPU HP pod
    on each server (7 slots: 112), asw-c of 96-CPU servers each running a 48-CPU LP pod (48 / 12 = 4
    slots: 64). 128g1536c: within a switch only asw-a holds one; across switches 304 // 128 = 2."""
    servers, pods = [], []
    for k in range(16):
        servers += [server(f"a-{k}"), server(f"b-{k}", asw="asw-b"), server(f"c-{k}", asw="asw-c", cpus=96.0)]
        pods += [pod(f"hp-{k}", f"b-{k}", gpus=1.0, cpus=12.0), pod(f"cpu-{k}", f"c-{k}", priority="LP", gpus=0.0, cpus=48.0)]
    write_trace(tmp_path, servers, pods)
    snapshot = tmp_path / "snap.json"
    imported = runner.invoke(app, ["import", "asi2026", str(tmp_path), "--day", "0", "--hour", "7", "--out", str(snapshot)])
    assert imported.exit_code == 0, imported.output
    result = runner.invoke(app, ["report", str(snapshot), "--requests", "128g1536c", "--json"])
    assert result.exit_code == 0, result.output
    [large] = json.loads(result.stdout)["large_jobs"]
    assert large["per_model"] == {"A100": {"usable_gpus": 304, "across_asw": 2, "within_asw": 1}}
    assert large["heterogeneous_across_asw"] == 2


# ----------------------------------------------------------------------------------------------
# Bad input: exit 2 naming the table, the column or row, and the fix
# ----------------------------------------------------------------------------------------------


def import_error(root: Path, *options: str) -> str:
    result = runner.invoke(app, ["import", "asi2026", str(root), *(options or ("--day", "0", "--hour", "7"))])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.stderr.replace("\n", " ")


def test_missing_directory_exits_2(tmp_path: Path) -> None:
    assert "DIR: no such directory" in import_error(tmp_path / "nope")
    assert "is not a directory" in import_error(write_trace(tmp_path, SERVERS, PODS) / POD_TABLE / "day=0" / "hour=07" / "part-000.parquet")


def test_missing_table_exits_2_naming_the_expected_layouts(tmp_path: Path) -> None:
    write_table(tmp_path, SERVER_TABLE, SERVER_SCHEMA, SERVERS, "hive")
    assert f"no table {POD_TABLE}" in import_error(tmp_path)


@pytest.mark.parametrize(
    ("layout", "options", "expected"),
    [
        ("hive", ("--day", "5", "--hour", "7"), "no partition day=5"),
        ("hive", ("--day", "0", "--hour", "9"), "no partition hour=9"),
        ("plain", ("--day", "5", "--hour", "7"), "no rows with day=5"),
        ("plain", ("--day", "1", "--hour", "9"), "no rows with hour=9"),
        ("hive", ("--day", "0", "--hour", "24"), "--hour"),
    ],
)
def test_a_slice_the_trace_does_not_hold_exits_2(tmp_path: Path, layout: str, options: tuple[str, ...], expected: str) -> None:
    write_trace(tmp_path, SERVERS, PODS, layout)
    message = import_error(tmp_path, *options)
    assert expected in message
    if "day=5" in expected:
        assert "days present: 0, 1" in message


@pytest.mark.parametrize("layout", ["hive", "plain"])
def test_missing_column_exits_2_naming_table_and_column(tmp_path: Path, layout: str) -> None:
    schema = pa.schema([f for f in POD_SCHEMA if f.name != "cpu_request_cores"])
    write_trace(tmp_path, SERVERS, [{k: v for k, v in p.items() if k != "cpu_request_cores"} for p in PODS], layout, schema)
    message = import_error(tmp_path)
    assert f"{POD_TABLE}: missing column(s) cpu_request_cores" in message


@pytest.mark.parametrize(
    ("bad_pod", "expected"),
    [
        (pod("lost", "s-99"), ("row 0 (pod 'lost'): server 's-99' is not in asi_opensource_server_hourly day=0 hour=7; read both tables from the same slice")),
        (pod("neg", "s-1", gpus=-1.0), "(pod 'neg'): gpu_request must be a number >= 0"),
        (pod("negcpu", None, state="Pending", cpus=-2.0), "(pod 'negcpu'): cpu_request_cores must be a number >= 0"),
        (pod("odd", "s-1", gpus=1.5), "gpu_request 1.5 is neither whole GPUs nor a share"),
        (pod("weird", "s-1", state="Evicted"), "state_public 'Evicted' is not one of"),
        (pod("prio", "s-1", priority="BE"), "priority_class 'BE' is not one of HP, LP, Other"),
    ],
)
def test_bad_pod_rows_exit_2_naming_the_row_and_column(tmp_path: Path, bad_pod: dict[str, Any], expected: str) -> None:
    write_trace(tmp_path, SERVERS, [bad_pod])
    message = import_error(tmp_path)
    assert f"{POD_TABLE} day=0 hour=7" in message and expected in message and "Traceback" not in message


def test_bad_server_rows_exit_2(tmp_path: Path) -> None:
    servers = [server("s-1", cpus=0.0), server("s-2", gpus=-8.0), server("s-3"), server("s-3")]
    write_trace(tmp_path, servers, [pod("p", None, state="Pending")])
    message = import_error(tmp_path)
    assert "row 0 (server 's-1'): cpu_capacity_cores must be a number above 0" in message
    assert "row 1 (server 's-2'): gpu_count must be a number >= 0" in message
    assert "row 3 (server 's-3'): the server is listed again (first in row 2)" in message


def test_a_pod_listed_twice_in_one_hour_exits_2(tmp_path: Path) -> None:
    write_trace(tmp_path, [server("s-1")], [pod("p", "s-1"), pod("p", "s-1")])
    assert "row 1 (pod 'p'): the pod is listed again (first in row 0); one row per pod and hour" in import_error(tmp_path)


def test_a_server_over_capacity_in_the_trace_is_named(tmp_path: Path) -> None:
    write_trace(tmp_path, [server("s-1")], [pod("a", "s-1", gpus=8.0), pod("b", "s-1", gpus=8.0)])
    with pytest.raises(SnapshotError, match="over capacity in the snapshot itself: needs 16 GPUs, node 's-1' has 8"):
        import_asi2026(tmp_path, 0, 7)


def test_an_empty_partition_exits_2(tmp_path: Path) -> None:
    write_trace(tmp_path, SERVERS, PODS)
    (tmp_path / POD_TABLE / "day=0" / "hour=07" / "part-000.parquet").unlink()
    assert f"{POD_TABLE}: no Parquet files in" in import_error(tmp_path)
