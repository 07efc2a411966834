"""``planner apply`` reached the two other ways issue 61 asks for, on the real control plane:

* ``POST /v1/plans/{id}/apply`` on the service (in a subprocess, as the service tests run it) for a plan the
  service made and stored: admin token only, a dry run answered at once, a bad option 422 naming it, an
  unknown plan 404, then the run in the background followed to its end by ``GET /v1/plans/{id}/apply``;
* the nightly CronJob's apply step (deploy/kubernetes/nightly.yaml) with the ApplyPolicy its ConfigMap holds
  (deploy/kubernetes/defrag-policy.yaml): ``apply: false`` changes nothing, ``apply: true`` carries the plan
  out with the policy's options; run under a pseudo-terminal it draws a bar per wave instead of log lines."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.apply_run import PdbWatcher, planner, planner_leftovers, ready_by_app, seeded_cluster
from tests.support.harness import Server
from tests.support.paths import REPO

TOKEN = "apply-admin-token-0123456789"
READ_TOKEN = "apply-read-token-0123456789"
CONFIG_MAP = REPO / "deploy" / "kubernetes" / "defrag-policy.yaml"
NIGHTLY = REPO / "deploy" / "kubernetes" / "nightly.yaml"


def _nightly_apply_step() -> list[str]:
    """The CronJob's apply command, as its script writes it (after ``&&``), split into arguments."""
    cron = next(d for d in yaml.safe_load_all(NIGHTLY.read_text()) if d and d["kind"] == "CronJob")
    script = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"][0]
    return script.split("&&")[1].split()


def _policy_file(tmp: Path, **changes: Any) -> Path:
    text = yaml.safe_load(CONFIG_MAP.read_text())["data"]["apply-policy.yaml"]
    policy = yaml.safe_load(text)
    policy["spec"].update(changes)
    path = tmp / "apply-policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def test_the_service_applies_a_stored_plan(controlplane_bin: Path, tmp_path: Path) -> None:
    with seeded_cluster(9, tmp_path, controlplane_bin) as cluster:
        core = cluster.core()
        # the nightly step with apply: false keeps the plan and changes nothing
        step = _nightly_apply_step()
        assert step[:2] == ["planner", "apply"] and "--policy" in step
        kept = planner(["apply", str(cluster.plan_path), "--policy", str(_policy_file(tmp_path, apply=False)), "--kubeconfig", cluster.kubeconfig], cluster.env)
        assert kept.returncode == 0 and "apply: false" in kept.stderr, kept.stderr
        assert planner_leftovers(core) == {"tainted": [], "labelled": [], "configmaps": []}
        env = {"PLANNER_APPLY_KUBECONFIG": cluster.kubeconfig, "PLANNER_API_READ_TOKEN": READ_TOKEN}
        server = Server(tmp_path / "planner.db", TOKEN, env=env).start()
        try:
            submitted = planner(
                [
                    "submit",
                    "defrag",
                    str(cluster.list_path),
                    "--from",
                    "kubernetes",
                    "--server",
                    server.url,
                    "--wait",
                    "300",
                    "--out",
                    str(tmp_path / "p.json"),
                ],
                {**cluster.env, "PLANNER_API_TOKEN": TOKEN},
            )
            assert submitted.returncode == 0, submitted.stderr
            with server.client() as client:
                plan_id = client.get("/v1/plans", params={"kind": "defrag"}).json()["plans"][0]["plan_id"]
                path = f"/v1/plans/{plan_id}/apply"
                with server.client(READ_TOKEN) as reader:
                    assert reader.post(path, json={}).status_code == 403
                assert client.post(f"/v1/plans/{'0' * 32}/apply", json={}).status_code == 404
                bad = client.post(path, json={"on_drift": "sideways"})
                assert bad.status_code == 422 and "on_drift" in bad.text
                dry = client.post(path, json={"dry_run": True})
                assert dry.status_code == 200 and dry.json()["dry_run"] is True, dry.text
                assert planner_leftovers(core) == {"tainted": [], "labelled": [], "configmaps": []}
                before = ready_by_app(core)
                watcher = PdbWatcher(core).start()
                try:
                    started = client.post(path, json={"on_drift": "replan"})
                    assert started.status_code == 202 and started.json()["status_url"] == path, started.text
                    again = client.post(path, json={})
                    deadline = time.monotonic() + 300
                    status = client.get(path).json()
                    while status["status"] == "running" and time.monotonic() < deadline:
                        time.sleep(0.5)
                        status = client.get(path).json()
                finally:
                    watcher.stop()
            assert again.status_code == 409 or status["status"] == "done"
            assert status["status"] == "done", status
            report = status["report"]
            assert report["nodes_vacated"] == report["nodes_vacated_planned"] > 0 and report["moves_done"] == report["moves_planned"]
            assert any(line["event"] == "wave-done" for line in status["log"])
            assert watcher.violations == [] and ready_by_app(core) == before
            assert planner_leftovers(core)["tainted"] == []
        finally:
            server.stop()


def test_the_nightly_apply_step_with_its_policy_draws_a_bar_per_wave_on_a_terminal(controlplane_bin: Path, tmp_path: Path) -> None:
    with seeded_cluster(10, tmp_path, controlplane_bin) as cluster:
        step = _nightly_apply_step()
        args = [
            "apply",
            str(cluster.plan_path),
            "--policy",
            str(_policy_file(tmp_path)),
            "--kubeconfig",
            cluster.kubeconfig,
            "--json",
            str(tmp_path / "r.json"),
        ]
        assert {a for a in step if a.startswith("--")} <= {a for a in args if a.startswith("--")} | {"--kubeconfig"}
        leader, follower = pty.openpty()
        env = {**cluster.env, "TERM": "xterm", "COLUMNS": "120"}
        process = subprocess.Popen([sys.executable, "-m", "planner", *args], stdout=subprocess.PIPE, stderr=follower, env=env)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        process.wait(timeout=300)
        os.close(leader)
        assert process.returncode == 0, seen[-3000:]
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["on_drift"] == "replan" and report["steer"] == "fit"
        assert report["nodes_vacated"] == report["nodes_vacated_planned"] and report["moves_done"] == report["moves_planned"]
        text = seen.decode(errors="replace")
        waves = len(cluster.plan()["waves"])
        assert f"wave {waves}" in text and "moves" in text, text[-3000:]
        assert "apply event=evicted" not in text  # bars, not log lines, on a terminal
        piped = planner(["apply", str(cluster.plan_path), "--kubeconfig", cluster.kubeconfig], cluster.env)
        assert piped.returncode == 2 and "--resume" in piped.stderr  # the run is recorded done


@pytest.mark.parametrize(
    ("changes", "needle"),
    [({"onDrift": "sideways"}, 'spec.onDrift: "sideways" is not one of stop, replan'), ({"retries": 3}, "spec.retries: unknown field")],
)
def test_a_bad_apply_policy_is_exit_2_naming_the_field(changes: dict[str, Any], needle: str, tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "kind": "defrag", "waves": [[{"pod": "p", "from": "a", "to": "b"}]], "vacated_nodes": ["a"]}))
    done = planner(
        ["apply", str(plan), "--policy", str(_policy_file(tmp_path, **changes)), "--kubeconfig", str(tmp_path / "none")],
        {**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 2 and needle in done.stderr, done.stderr
