"""A defrag plan made by a real service over HTTP (``POST /v1/defrag``), after checking that bad
options are refused with a 422 naming them."""

from __future__ import annotations

import json
from pathlib import Path

from planner.cluster import Cluster
from planner.plans import DefragPlan, parse_plan
from tests.support.harness import Server, wait_status


def plan_over_http(tmp_path: Path, c: Cluster, options: dict, refused: list[tuple[dict, str]]) -> DefragPlan:
    """Start a server, check each (options, problem) in ``refused`` gets a 422 naming it, then plan
    with ``options`` and return the stored plan."""
    snapshot = json.loads(c.model_dump_json(exclude_defaults=True))
    server = Server(tmp_path / "planner.db", None, "--workers", "1").start()
    try:
        with server.client() as client:
            for bad_options, problem in refused:
                bad = client.post("/v1/defrag", json={"snapshot": snapshot, "options": bad_options})
                assert bad.status_code == 422 and any(problem in p for p in bad.json()["problems"]), bad.text
            accepted = client.post("/v1/defrag", json={"snapshot": snapshot, "options": options})
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["job_id"]
            assert wait_status(client, job_id, ("succeeded", "failed"))["status"] == "succeeded"
            plan = parse_plan(client.get(f"/v1/jobs/{job_id}/plan").text)
    finally:
        server.stop()
    assert isinstance(plan, DefragPlan)
    return plan
