"""Issue 42, item 3: a stored plan rendered by a real service (``GET /v1/plans/{id}?format=``) and by the
client (``planner plans get -o``, ``--out-dir``) is byte for byte what the planning command printed
locally right after planning, and what ``planner render`` prints; refusals are 422 naming the field."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess

import pytest

from planner.adapters.kubernetes import import_kubernetes
from planner.snapshot import cluster_to_dict
from tests.support.harness import PLANNER, Server
from tests.support.paths import REPO

TOKEN = "render-token-0123456789"
ENV = {**os.environ, "PLANNER_API_TOKEN": TOKEN}
JOB_ID = re.compile(r"\b[0-9a-f]{32}\b")
GPU_CLUSTER = REPO / "instances" / "kubernetes" / "gpu-cluster.json"


def planner(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PLANNER, *args], capture_output=True, text=True, env=ENV, timeout=120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("render") / "planner.db", TOKEN, "--workers", "1").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def stored(server: Server, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """An imported cluster (pods with UIDs) planned locally (-o kubectl, -o podmigrationjob, --out-dir)
    and submitted to the service: the local outputs, the files and the stored plan's id."""
    tmp = tmp_path_factory.mktemp("stored")
    snapshot = tmp / "snapshot.json"
    snapshot.write_text(json.dumps(cluster_to_dict(import_kubernetes([(GPU_CLUSTER.read_text(), "gpu-cluster.json")]).cluster)))
    local = {fmt: planner("defrag", str(snapshot), "-o", fmt) for fmt in ("kubectl", "podmigrationjob")}
    for fmt, done in local.items():
        assert done.returncode == 0, (fmt, done.stderr)
    assert planner("defrag", str(snapshot), "--out-dir", str(tmp / "local-waves")).returncode == 0
    done = planner("submit", str(snapshot), "--server", server.url, "--wait", "60", "--out", str(tmp / "plan.json"))
    assert done.returncode == 0, done.stderr
    job_id = JOB_ID.search(done.stderr).group(0)  # type: ignore[union-attr]
    with server.client() as client:
        plan_id = client.get(f"/v1/jobs/{job_id}").json()["plan_id"]
    assert '"uid"' in (tmp / "plan.json").read_text(), "the imported pods' UIDs are in the plan"
    return {"tmp": tmp, "snapshot": snapshot, "plan_id": plan_id, "job_id": job_id, **{fmt: done.stdout for fmt, done in local.items()}}


@pytest.mark.parametrize(("fmt", "media"), [("kubectl", "text/x-shellscript; charset=utf-8"), ("podmigrationjob", "application/yaml")])
def test_rest_client_and_render_give_the_local_output_byte_for_byte(server: Server, stored: dict, fmt: str, media: str) -> None:
    with server.client() as client:
        response = client.get(f"/v1/plans/{stored['plan_id']}", params={"format": fmt})
    assert response.status_code == 200 and response.headers["content-type"] == media
    assert response.text == stored[fmt]
    fetched = planner("plans", "get", stored["plan_id"], "-o", fmt, "--server", server.url)
    assert fetched.returncode == 0 and fetched.stdout == stored[fmt], fetched.stderr
    by_job = planner("plans", "get", "--job", stored["job_id"], "-o", fmt, "--server", server.url)
    assert by_job.returncode == 0 and by_job.stdout == stored[fmt], by_job.stderr
    rendered = planner("render", str(stored["tmp"] / "plan.json"), "--snapshot", str(stored["snapshot"]), "-o", fmt)
    assert rendered.returncode == 0 and rendered.stdout == stored[fmt], rendered.stderr


def test_the_client_writes_the_same_wave_files_as_the_local_command(server: Server, stored: dict) -> None:
    out = stored["tmp"] / "fetched-waves"
    done = planner("plans", "get", stored["plan_id"], "--out-dir", str(out), "--server", server.url)
    assert done.returncode == 0, done.stderr
    local = stored["tmp"] / "local-waves"
    names = sorted(p.name for p in local.iterdir())
    assert names == sorted(p.name for p in out.iterdir()) and "index.txt" in names and "wave-1.yaml" in names
    assert all((out / n).read_bytes() == (local / n).read_bytes() for n in names)
    again = planner("plans", "get", stored["plan_id"], "--out-dir", str(out), "--server", server.url)
    assert again.returncode == 2 and "exists and is not empty" in again.stderr and "--force" in again.stderr
    assert planner("plans", "get", stored["plan_id"], "--out-dir", str(out), "--force", "--server", server.url).returncode == 0


def test_yaml_and_table_over_rest(server: Server, stored: dict) -> None:
    with server.client() as client:
        as_yaml = client.get(f"/v1/plans/{stored['plan_id']}", params={"format": "yaml"})
        table = client.get(f"/v1/plans/{stored['plan_id']}", params={"format": "table"})
        bad = client.get(f"/v1/plans/{stored['plan_id']}", params={"format": "html"})
    assert as_yaml.status_code == 200 and as_yaml.headers["content-type"] == "application/yaml"
    import yaml

    assert yaml.safe_load(as_yaml.text)["waves"] == json.loads((stored["tmp"] / "plan.json").read_text())["waves"]
    assert table.status_code == 200 and table.headers["content-type"] == "text/plain; charset=utf-8" and "moves" in table.text.lower()
    assert bad.status_code == 422 and "format" in bad.text


def test_a_stored_plan_that_does_not_match_its_snapshot_is_422_naming_the_pod(server: Server, stored: dict) -> None:
    with sqlite3.connect(server.db) as db:
        (body,) = db.execute("SELECT body FROM plans WHERE id = ?", (stored["plan_id"],)).fetchone()
        plan = json.loads(body)
        move = plan["waves"][0][0]
        plan["waves"][0][0] = {**move, "uid": "uid-replaced"}
        db.execute(
            "INSERT INTO plans (id, job_id, kind, created_at, method, status, objective, body) SELECT ?, job_id, kind, created_at, method, status, objective, ? FROM plans WHERE id = ?",
            ("f" * 32, json.dumps(plan), stored["plan_id"]),
        )
    with server.client() as client:
        response = client.get(f"/v1/plans/{'f' * 32}", params={"format": "kubectl"})
    assert response.status_code == 422, response.text
    problems = response.json()["problems"]
    assert (
        problems[0]
        == f"waves[0][0].uid: the plan's pod '{move['pod']}' has UID 'uid-replaced'; the snapshot's has UID '{move['uid']}' (another pod of that name)"
    )
    assert "the stored snapshot: the plan does not belong to this snapshot" in problems[1]
    refused = planner("plans", "get", "f" * 32, "-o", "kubectl", "--server", server.url)
    assert refused.returncode == 2 and "waves[0][0].uid" in refused.stderr


def test_a_stored_comparison_renders_as_yaml_and_is_422_for_a_script(server: Server, stored: dict) -> None:
    done = planner("submit", str(stored["snapshot"]), "--method", "compare", "--time-limit", "5", "--server", server.url, "--wait", "120")
    assert done.returncode == 0, done.stderr
    job_id = JOB_ID.search(done.stderr).group(0)  # type: ignore[union-attr]
    with server.client() as client:
        plan_id = client.get(f"/v1/jobs/{job_id}").json()["plan_id"]
        as_yaml = client.get(f"/v1/plans/{plan_id}", params={"format": "yaml"})
        script = client.get(f"/v1/plans/{plan_id}", params={"format": "kubectl"})
    assert as_yaml.status_code == 200 and as_yaml.text.startswith("version: 1\nkind: defrag-compare\n")
    assert script.status_code == 422 and "format=kubectl: renders one plan" in script.text
