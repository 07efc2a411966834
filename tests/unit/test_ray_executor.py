"""The Ray executor on a real local Ray (2 CPUs): the same plans as inline and the process pool,
hybrid neighbourhoods as Ray tasks, the service's jobs on it, and bad Ray settings as exit 2."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.snapshot import cluster_to_dict
from planner.validate.defrag import validate
from tests.support.harness import Server, free_port, wait_status

ray = pytest.importorskip("ray", reason="the extra 'ray' is not installed")


@pytest.fixture(scope="module")
def local_ray():
    from planner.runtime.ray_executor import connect

    env = os.environ.pop("RAY_ADDRESS", None)
    module = connect(2)
    yield module
    module.shutdown()
    if env is not None:
        os.environ["RAY_ADDRESS"] = env


@pytest.fixture(scope="module")
def asi() -> Cluster:
    from planner.instances.asi import generate_asi

    return generate_asi(nodes=240, seed=3, allocation=0.65)


def moves(plan) -> list[list[tuple[str, str, str]]]:  # type: ignore[no-untyped-def]
    return [[(m.pod, m.from_, m.to) for m in wave] for wave in plan.waves]


def test_same_seed_same_plan_on_every_executor(local_ray, asi: Cluster) -> None:
    plans = {kind: plan_defrag(asi, DefragOptions(executor=kind, workers=2, partition_size=40, seed=5)) for kind in ("inline", "process", "ray")}
    assert moves(plans["ray"]) == moves(plans["process"]) == moves(plans["inline"])
    assert plans["ray"].vacated_nodes and validate(asi, plans["ray"]) == []
    assert {kind: plan.report.model_extra["executor"] for kind, plan in plans.items()} == {k: k for k in plans}
    assert plans["ray"].report.model_extra["partitions"] >= 6  # 240 nodes in pieces of 40: real fan-out
    other = plan_defrag(asi, DefragOptions(executor="ray", workers=2, partition_size=40, seed=6))
    assert moves(other) != moves(plans["ray"])


def test_hybrid_neighbourhoods_run_as_ray_tasks(local_ray, asi: Cluster) -> None:
    plan = plan_defrag(asi, DefragOptions(method="hybrid", executor="ray", time_limit_s=6.0, seed=1))
    extra = plan.report.model_extra
    assert validate(asi, plan) == []
    assert extra["executor"] == "ray" and extra["lns_neighbourhoods"] >= 2
    assert plan.report.objective >= extra["ipc_objective"]
    assert plan.report.bound is not None and plan.report.objective <= plan.report.bound


# ----------------------------------------------------------------------------------------------
# Bad Ray settings: exit 2 naming the option or variable, quickly, never a hang or a traceback
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def snapshot_file(tmp_path_factory: pytest.TempPathFactory, asi: Cluster) -> str:
    path = tmp_path_factory.mktemp("ray") / "asi.json"
    path.write_text(json.dumps(cluster_to_dict(asi)))
    return str(path)


def planner(*args: str, env: dict[str, str] | None = None, timeout: float = 90.0) -> tuple[subprocess.CompletedProcess, float]:
    clean = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True, timeout=timeout, env={**clean, **(env or {})})
    return done, time.monotonic() - start


def test_ray_not_installed_names_the_extra(snapshot_file: str, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")  # as if the extra were absent
    done, _ = planner("defrag", snapshot_file, "--executor", "ray", env={"PYTHONPATH": f"{shadow.parent}{os.pathsep}{Path.cwd()}"})
    assert done.returncode == 2, done.stderr
    assert "--executor ray: Ray is not installed" in done.stderr and "gpu-fleet-planner[ray]" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("address", "named"),
    [("127.0.0.1:1", "no Ray cluster answers there"), ("not an address", "give the head node as host:port")],
)
def test_a_bad_ray_address_is_exit_2(snapshot_file: str, address: str, named: str) -> None:
    done, seconds = planner("defrag", snapshot_file, "--executor", "ray", env={"RAY_ADDRESS": address})
    assert done.returncode == 2, done.stderr
    assert f"RAY_ADDRESS={address!r}" in done.stderr and named in done.stderr and "Traceback" not in done.stderr
    assert seconds < 15


def test_an_address_where_something_else_listens_fails_within_the_connection_timeout(snapshot_file: str) -> None:
    timeout_s = 6.0  # PLANNER_RAY_CONNECT_TIMEOUT_S (default 20 s), shortened to keep the suite fast
    http_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    try:
        address = f"127.0.0.1:{http_server.server_address[1]}"
        done, seconds = planner("defrag", snapshot_file, "--executor", "ray", env={"RAY_ADDRESS": address, "PLANNER_RAY_CONNECT_TIMEOUT_S": f"{timeout_s:g}"})
    finally:
        http_server.shutdown()
    assert done.returncode == 2, done.stderr
    assert f"RAY_ADDRESS={address!r}: no Ray cluster answers there" in done.stderr and "Traceback" not in done.stderr
    assert seconds < timeout_s + 15  # bounded: Ray's own client would wait minutes, then abort


@pytest.mark.parametrize("value", ["soon", "0", "-3", "nan"])
def test_a_bad_connect_timeout_is_exit_2_naming_the_variable(snapshot_file: str, value: str) -> None:
    done, _ = planner("defrag", snapshot_file, "--executor", "ray", env={"RAY_ADDRESS": "127.0.0.1:1", "PLANNER_RAY_CONNECT_TIMEOUT_S": value})
    assert done.returncode == 2, done.stderr
    assert f"PLANNER_RAY_CONNECT_TIMEOUT_S={value!r}" in done.stderr and "above 0" in done.stderr and "Traceback" not in done.stderr


def test_serve_with_an_unreachable_ray_is_exit_2(tmp_path: Path) -> None:
    done, seconds = planner("serve", "--port", str(free_port()), "--db", str(tmp_path / "p.db"), "--executor", "ray", env={"RAY_ADDRESS": "127.0.0.1:1"})
    assert done.returncode == 2 and "RAY_ADDRESS='127.0.0.1:1'" in done.stderr and "Traceback" not in done.stderr
    assert seconds < 15


def test_the_service_runs_job_pieces_on_its_ray(tmp_path: Path, asi: Cluster) -> None:
    expected = plan_defrag(asi, DefragOptions(executor="inline", seed=2, partition_size=40))
    server = Server(tmp_path / "planner.db", None, "--workers", "1", "--executor", "ray").start(timeout_s=120)
    try:
        with server.client() as client:
            job = client.post("/v1/defrag", json={"snapshot": cluster_to_dict(asi), "options": {"seed": 2, "partition_size": 40}}).json()
            status = wait_status(client, job["job_id"], ("succeeded", "failed"), timeout_s=120)
            assert status["status"] == "succeeded", status
            plan = client.get(f"/v1/jobs/{job['job_id']}/plan").json()
    finally:
        server.stop()
    assert plan["report"]["executor"] == "ray"
    assert [[(m["pod"], m["from"], m["to"]) for m in wave] for wave in plan["waves"]] == moves(expected)
    assert "pieces on Ray at" in server.log.read_text()


def test_placement_replays_fan_out_over_ray_with_the_same_rows(tmp_path: Path) -> None:
    rows = {}
    for kind, extra in (("ray", ["--executor", "ray", "--workers", "2"]), ("inline", ["--workers", "1"])):
        out = tmp_path / f"{kind}.json"
        done, _ = planner(
            "simulate",
            "placement",
            "--policy",
            "fgd",
            "--policy",
            "bestfit",
            "--seeds",
            "2",
            "--load",
            "0.3",
            "--step",
            "10",
            "--out",
            str(out),
            "--no-progress",
            *extra,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        rows[kind] = [{k: v for k, v in row.items() if k != "wall_s"} for row in json.loads(out.read_text())["runs"]]
    assert rows["ray"] == rows["inline"] and len(rows["ray"]) == 2 * 2 * 3  # everything but the replays' wall time


def test_placement_with_an_unknown_executor_is_exit_2() -> None:
    done, _ = planner("simulate", "placement", "--executor", "spark", "--seeds", "1", "--no-progress")
    assert done.returncode == 2 and "--executor: process or ray, got 'spark'" in done.stderr
