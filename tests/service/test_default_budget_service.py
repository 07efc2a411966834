"""The default disruption budget over REST and from ``planner submit`` (issue 42, item 1): the service
runs the same options model, so a job without ``max_nodes_per_wave`` gets the 10% budget, the stored
plan equals the local one and its report says the limit was a default; bad values are 422 naming the
field. The engine-level tests are in ``tests/unit/test_default_budget.py``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from tests.support.harness import PLANNER, Server, wait_status


def test_over_rest_and_from_submit_the_same_default(tmp_path: Path) -> None:
    cluster = generate_asi(nodes=60, seed=4)
    local = plan_defrag(cluster, DefragOptions())
    snapshot = json.loads(cluster.model_dump_json(exclude_defaults=True))
    (tmp_path / "s.json").write_text(json.dumps(snapshot))
    server = Server(tmp_path / "planner.db", None, "--workers", "1").start()
    try:
        with server.client() as client:
            for bad in (0, -5, "150%", "abc"):
                refused = client.post("/v1/defrag", json={"snapshot": snapshot, "options": {"max_nodes_per_wave": bad}})
                assert refused.status_code == 422 and any("options.max_nodes_per_wave" in p for p in refused.json()["problems"]), refused.text
            plans = {}
            for name, options in (("default", {}), ("lifted", {"max_nodes_per_wave": "100%"})):
                accepted = client.post("/v1/defrag", json={"snapshot": snapshot, "options": options})
                assert accepted.status_code == 202, accepted.text
                job_id = accepted.json()["job_id"]
                assert wait_status(client, job_id, ("succeeded", "failed"))["status"] == "succeeded"
                plans[name] = client.get(f"/v1/jobs/{job_id}/plan").json()
        submitted = subprocess.run(
            [PLANNER, "submit", str(tmp_path / "s.json"), "--server", server.url, "--wait", "60"], capture_output=True, text=True, timeout=120
        )
    finally:
        server.stop()
    assert submitted.returncode == 0, submitted.stderr
    expected = [[m.model_dump(by_alias=True) for m in wave] for wave in local.waves]
    for plan in (plans["default"], json.loads(submitted.stdout)):
        assert plan["waves"] == expected
        assert plan["report"]["limits"]["max_nodes_per_wave"] == {"value": 6, "source": "default", "rule": "10% of 60 nodes in scope, rounded up"}
    assert plans["lifted"]["report"]["limits"]["max_nodes_per_wave"]["source"] == "given"
    assert len(plans["lifted"]["waves"]) < len(plans["default"]["waves"])
