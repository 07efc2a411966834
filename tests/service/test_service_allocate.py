"""Allocation over HTTP: POST /v1/allocate through the job machinery, stored, listed and validated."""

from __future__ import annotations

import json

import pytest

from planner.plans import parse_plan
from planner.snapshot import parse_cluster
from planner.validate.allocate import validate_allocate
from tests.support.allocate_clusters import switches_cluster
from tests.support.harness import Server, wait_status


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("allocate") / "planner.db", None, "--workers", "1").start()
    yield srv
    srv.stop()


def test_allocate_job_is_planned_stored_and_valid(server: Server) -> None:
    snapshot = json.loads(switches_cluster({"a": 12, "b": 4, "c": 1, "d": 1, "e": 1, "f": 1}, 128).model_dump_json(exclude_defaults=True))
    with server.client() as client:
        accepted = client.post("/v1/allocate", json={"snapshot": snapshot, "options": {"method": "alg2"}})
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        assert wait_status(client, job_id, ("succeeded", "failed"))["status"] == "succeeded"
        text = client.get(f"/v1/jobs/{job_id}/plan").text
        plan = parse_plan(text)
        assert plan.kind == "allocate" and plan.metrics["per_job"]["j"]["asws"] == 5
        assert validate_allocate(parse_cluster(json.dumps(snapshot)), plan) == []
        listed = [p for p in client.get("/v1/plans", params={"kind": "allocate"}).json()["plans"] if p["job_id"] == job_id]
        assert len(listed) == 1 and listed[0]["objective"] == 128
        checked = client.post("/v1/validate", json={"snapshot": snapshot, "plan": json.loads(text)})
        assert checked.status_code == 200 and checked.json()["valid"] is True


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"jobs": ["nope"]}, "options.jobs: unknown job 'nope'"),
        ({"method": "best"}, "options.method"),
        ({"method": "largest-first", "time_limit_s": 5}, "options.time_limit_s: method 'largest-first' does not use it"),
        ({"method": "slurm", "seed": 3}, "options.seed: method 'slurm' does not use it"),
        ({"method": "largest-first", "cpus": 500}, "snapshot.pods[0]: "),
    ],
)
def test_bad_allocate_requests_get_422(server: Server, options: dict, named: str) -> None:
    snapshot = json.loads(switches_cluster({"a": 1}, 2).model_dump_json(exclude_defaults=True))
    if "cpus" in options:  # a pod no node could hold
        snapshot["pods"][0]["cpus"] = options.pop("cpus")
    with server.client() as client:
        response = client.post("/v1/allocate", json={"snapshot": snapshot, "options": options})
    assert response.status_code == 422, response.text
    assert any(named in p for p in response.json()["problems"]), response.json()
