"""``POST /v1/explain`` against the real service (uvicorn in a subprocess, a SQLite store): the same
answer as ``planner explain``, bad input refused with 4xx and the closest names, the token required."""

from __future__ import annotations

import pytest

from planner.api.requests import EXPLAIN_TIME_LIMIT_S
from planner.cluster import Cluster
from planner.engine.explain import ExplainOptions, explain_job
from planner.plans import DefragPlan, plan_to_dict
from tests.support.harness import Server

TOKEN = "test-token-explain-0123456789"
SNAPSHOT = {
    "nodes": [{"name": f"n{i}", "gpus": 8, "cpus": 96, "memory_gib": 512} for i in range(2)],
    "pods": [
        {"name": "a", "gpus": 4, "cpus": 1, "node": "n0"},
        {"name": "b", "gpus": 4, "cpus": 1, "node": "n1", "locked": True},
        {"name": "big-0", "job": "big", "gpus": 8, "cpus": 1, "node": None},
    ],
    "jobs": [{"name": "big"}],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("explain") / "planner.db", TOKEN, "--workers", "1").start()
    yield srv
    srv.stop()


def test_explain_a_job_as_the_command_line_does(server: Server) -> None:
    with server.client() as client:
        answer = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "big"})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["reason"]["code"] == "fragmentation" and body["remedy"]["code"] == "make_room" and body["remedy"]["numbers"]["moves"] == 1
        assert body == explain_job(Cluster.model_validate(SNAPSHOT), "big", ExplainOptions(time_limit_s=EXPLAIN_TIME_LIMIT_S))
        budget = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "big", "options": {"max_moves": 0}})
        assert budget.json()["remedy"]["code"] == "budget"


def test_the_remedy_runs_within_the_services_time_limit(server: Server) -> None:
    with server.client() as client:
        longer = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "big", "options": {"time_limit_s": 3600}})
        assert longer.status_code == 200 and longer.json()["time_limit_s"] == EXPLAIN_TIME_LIMIT_S  # a request asks less, not more
        cut = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "big", "options": {"time_limit_s": 1e-9}})
        assert cut.status_code == 200 and cut.json()["remedy"]["code"] == "time_limit" and cut.json()["remedy"]["skipped"] == ["make_room"]
        assert cut.json()["reason"]["code"] == "fragmentation"
        bad = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "big", "options": {"time_limit_s": 0}})
        assert bad.status_code == 422 and "time_limit_s" in bad.text


def test_explain_a_node_a_plan_left_busy(server: Server) -> None:
    plan = plan_to_dict(DefragPlan(waves=[], vacated_nodes=[]))
    with server.client() as client:
        answer = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "node": "n1", "plan": plan})
        assert answer.status_code == 200, answer.text
        assert answer.json()["pods"][0] == {"pod": "b", "job": None, "gpus": 4.0, "code": "locked", "proof": True, "detail": "locked: true in the snapshot"}


def test_bad_input_is_422_with_the_closest_names_and_the_token_is_required(server: Server) -> None:
    with server.client() as client:
        unknown = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "bgi"})
        assert unknown.status_code == 422
        problems = unknown.json()["problems"]
        assert "did you mean 'big'" in problems[0] and "pending jobs (and pending pods of no job): big" in problems[1]
        both = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "big", "pod": "big-0"})
        assert both.status_code == 422 and "exactly one of job, pod or node" in both.json()["problems"][0]
        alone = client.post("/v1/explain", json={"snapshot": SNAPSHOT, "node": "n0"})
        assert alone.status_code == 422 and "node and plan go together" in alone.json()["problems"][0]
    with server.client(token=None) as anonymous:
        assert anonymous.post("/v1/explain", json={"snapshot": SNAPSHOT, "job": "big"}).status_code == 401
