"""Preemption over HTTP: POST /v1/preempt through the job machinery, stored, listed and validated."""

from __future__ import annotations

import json

import pytest

from planner.plans import parse_plan
from planner.snapshot import parse_cluster
from planner.validate.preempt import validate_preempt
from tests.support.harness import Server, wait_status
from tests.support.preempt_clusters import numa_node_cluster, prefix_counterexample


def snapshot_of(cluster) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(cluster.model_dump_json(exclude_defaults=True))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("preempt") / "planner.db", None, "--workers", "1").start()
    yield srv
    srv.stop()


def test_preempt_job_is_planned_stored_and_valid(server: Server) -> None:
    snapshot = snapshot_of(numa_node_cluster())
    with server.client() as client:
        accepted = client.post("/v1/preempt", json={"snapshot": snapshot, "job": "B", "options": {"method": "exact", "time_limit_s": 5}})
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["job_id"]
        assert wait_status(client, job_id, ("succeeded", "failed"))["status"] == "succeeded"
        text = client.get(f"/v1/jobs/{job_id}/plan").text
        plan = parse_plan(text)
        assert plan.kind == "preempt" and plan.report.status == "optimal" and plan.metrics["lost_gpu_s"] == 6.0
        assert validate_preempt(parse_cluster(json.dumps(snapshot)), plan) == []
        stored = [p for p in client.get("/v1/plans", params={"kind": "preempt"}).json()["plans"] if p["job_id"] == job_id]
        assert len(stored) == 1 and stored[0]["objective"] == 6.0 and stored[0]["method"] == "exact"
        checked = client.post("/v1/validate", json={"snapshot": snapshot, "plan": json.loads(text)})
        assert checked.status_code == 200 and checked.json() == {"valid": True, "violations": []}
        broken = json.loads(text)
        broken["victims"] = broken["victims"][:1]
        checked = client.post("/v1/validate", json={"snapshot": snapshot, "plan": broken}).json()
        assert checked["valid"] is False and {v["kind"] for v in checked["violations"]} >= {"over_capacity"}


def test_wait_returns_the_plan_and_the_same_request_is_the_same_job(server: Server) -> None:
    body = {"snapshot": snapshot_of(prefix_counterexample()), "job": "hp", "options": {"method": "spotgpu-paper"}}
    with server.client() as client:
        first = client.post("/v1/preempt", params={"wait": 30}, json=body, headers={"Idempotency-Key": "k1"})
        assert first.status_code == 200, first.text
        assert sorted(v["pod"] for v in first.json()["victims"]) == ["a", "b", "c"]
        again = client.post("/v1/preempt", json=body, headers={"Idempotency-Key": "k1"})
        assert again.json()["job_id"] == first.headers["X-Job-Id"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda b: b.update(job="nope"), "job: unknown job 'nope'"),
        (lambda b: b["options"].update(now_s=1), "options.now_s: 1 is before"),
        (lambda b: b["options"].update(alpha=0.2), "options.alpha"),
        (lambda b: b["options"].update(method="exact", time_limit_s=-1), "options.time_limit_s"),
        (lambda b: b["snapshot"]["pods"][0].update(gpu_indexes=[0, 1]), "snapshot.pods[0].gpu_indexes"),
        (lambda b: b.pop("job"), "job: give job (a pending job to start) or reactivate"),
        (lambda b: b.update(reactivate="a"), "job: give job (a pending job to start) or reactivate"),
        (lambda b: (b.pop("job"), b.update(reactivate="a")), "reactivate: pod 'a' is not on standby"),
    ],
)
def test_bad_preempt_requests_get_422_naming_the_field(server: Server, change, named) -> None:  # type: ignore[no-untyped-def]
    body = {"snapshot": snapshot_of(prefix_counterexample()), "job": "hp", "options": {}}
    change(body)
    with server.client() as client:
        response = client.post("/v1/preempt", json=body)
    assert response.status_code == 422, response.text
    assert any(named in problem for problem in response.json()["problems"]), response.json()


def test_reactivation_over_http(server: Server) -> None:
    from tests.support.preempt_clusters import standby_cluster

    body = {"snapshot": snapshot_of(standby_cluster(4)), "reactivate": "s", "options": {"method": "exact", "time_limit_s": 5}}
    with server.client() as client:
        response = client.post("/v1/preempt", params={"wait": 30}, json=body)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["reactivate"] == "s" and [v["pod"] for v in plan["victims"]] == ["x"] and plan["report"]["status"] == "optimal"
