"""Every route that reads a body is bounded as a whole by its rule (``planner/api/route_rules.py``), against
the real service in a subprocess: an explanation that would run for half a minute is answered at its
limit (its checker process killed) while reports, submissions and the health probe go on; requests with
long unknown names are answered at once; a body above a route's own limit is 413 before it is read."""

from __future__ import annotations

import http.client
import json
import threading
import time
from typing import Any

import httpx
import pytest

from planner.api.route_rules import CHECK, EXPLAIN
from planner.plans import DefragPlan, plan_to_dict
from tests.support.harness import Server
from tests.support.paths import FIG15, INSTANCES

TOKEN = "bounds-token-0123456789"
SLACK_S = 3.0
"""Over a route's limit a request may take this long (the issue's target is 2 s; a loaded machine adds some)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("bounds") / "planner.db", TOKEN, "--workers", "1").start()
    yield srv
    srv.stop()


def slow_explanation() -> dict[str, Any]:
    """510 KB: a node that 8,000 pods keep busy among 800 nodes, and an empty plan: 38 s to explain in one
    process on a quiet machine at 9aab340, well past the route's 15 s (2,000 pods took 34 s before this
    wave's speed-ups and 9.7 s after them, so a full run answered one of them 200 in time)."""
    nodes = [{"name": f"n{i}", "gpus": 8, "cpus": 96, "memory_gib": 512} for i in range(800)]
    pods = [{"name": f"p{j}", "gpus": 0, "cpus": 0.01, "node": "n0"} for j in range(8000)]
    return {"snapshot": {"nodes": nodes, "pods": pods}, "node": "n0", "plan": plan_to_dict(DefragPlan(waves=[], vacated_nodes=[]))}


def timed(server: Server, method: str, path: str, results: list, **kwargs: Any) -> None:
    """Send one request on a client of its own; append (path, status, body, seconds)."""
    start = time.monotonic()
    with server.client() as client:
        client.timeout = httpx.Timeout(300.0)
        response = client.request(method, path, **kwargs)
    results.append((path, response.status_code, response.text, time.monotonic() - start))


def test_slow_explanations_end_at_their_limit_and_others_go_on(server: Server) -> None:
    explanations: list = []
    senders = [threading.Thread(target=timed, args=(server, "POST", "/v1/explain", explanations), kwargs={"json": slow_explanation()}) for _ in range(12)]
    for sender in senders:
        sender.start()
    time.sleep(0.5)  # not a condition: only lets the explanations reach the server first, as in the report
    others: list = []
    report = {"snapshot": {"nodes": [{"name": f"node-with-a-long-name-{i:05d}", "gpus": 8, "cpus": 96, "memory_gib": 512} for i in range(1200)], "pods": []}}
    assert len(json.dumps(report)) > 64 << 10  # parsed where the slow ones were (a thread took only small bodies)
    side = [
        threading.Thread(target=timed, args=(server, "POST", "/v1/report", others), kwargs={"json": report}),
        threading.Thread(target=timed, args=(server, "POST", "/v1/defrag", others), kwargs={"json": {"snapshot": json.loads(FIG15.read_text())}}),
    ]
    for thread in side:
        thread.start()
    probes = []
    while any(s.is_alive() for s in senders):
        start = time.monotonic()
        assert httpx.get(f"{server.url}/healthz", timeout=30).status_code == 200
        probes.append(time.monotonic() - start)
        time.sleep(0.2)
    for thread in [*senders, *side]:
        thread.join(timeout=300)
    assert len(explanations) == 12
    for _, status, body, seconds in explanations:  # unbounded: 34 s each and more, one after another
        assert seconds <= EXPLAIN.time_s + SLACK_S, (status, seconds)
        assert status in (422, 503), body
        assert f"{EXPLAIN.time_s:g} s" in body
    statuses = {path: (status, seconds) for path, status, _, seconds in others}
    assert statuses["/v1/report"][0] == 200 and statuses["/v1/report"][1] < CHECK.time_s, statuses
    assert statuses["/v1/defrag"][0] == 202 and statuses["/v1/defrag"][1] < 30, statuses
    assert max(probes) < 2.0, sorted(probes)[-5:]
    with server.client() as client:  # the killed checkers were replaced: the service still answers
        answer = client.post(
            "/v1/explain", json={**slow_explanation(), "snapshot": {"nodes": [{"name": "n0", "gpus": 8, "cpus": 96, "memory_gib": 512}], "pods": []}}
        )
        assert answer.status_code == 200 and answer.json()["reason"]["code"] == "empty", answer.text


def test_long_unknown_names_are_answered_at_once(server: Server) -> None:
    snapshot = json.loads((INSTANCES / "asi-500.json").read_text())  # 1,145 jobs and 1,176 pods to compare with
    name = "job-0" * 5_200  # 26 KB: four at once took 25-28 s each, 45 KB bodies 6.6-10.7 s
    requests = [
        ("/v1/explain", {"snapshot": snapshot, "job": name}),
        ("/v1/explain", {"snapshot": snapshot, "pod": name + "x"}),
        ("/v1/preempt", {"snapshot": snapshot, "job": name}),
        ("/v1/allocate", {"snapshot": snapshot, "options": {"jobs": [name]}}),
        ("/v1/defrag", {"snapshot": snapshot, "options": {"make_room": [name]}}),
    ]
    results: list = []
    threads = [threading.Thread(target=timed, args=(server, "POST", path, results), kwargs={"json": body}) for path, body in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(results) == len(requests)
    for path, status, body, seconds in results:
        assert status == 422 and seconds < 10.0, (path, status, seconds)
        assert "did you mean" not in body, (path, body[:300])


def _declared_length(server: Server, path: str, length: int) -> tuple[int, dict]:
    """POST ``path`` declaring a body of ``length`` bytes and sending none: the answer comes from the headers."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.putrequest("POST", path)
        for header, value in (("Content-Type", "application/json"), ("Content-Length", str(length)), ("Authorization", f"Bearer {TOKEN}")):
            conn.putheader(header, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_body_above_a_routes_own_limit_is_413_before_it_is_read(server: Server) -> None:
    status, body = _declared_length(server, "/v1/explain", EXPLAIN.body_bytes + 1)
    assert status == 413 and body["error"] == f"request body above the limit of {EXPLAIN.body_bytes >> 20} MiB of /v1/explain", body
    status, body = _declared_length(server, "/v1/report", 64 * 2**20 + 1)
    assert status == 413 and body["error"] == "request body above the limit of 64 MiB", body


def test_every_body_route_has_a_rule() -> None:
    from planner.api.app import ROUTERS
    from planner.api.route_rules import ROUTE_RULES

    posted = {getattr(route, "path", "") for router in ROUTERS for route in router.routes if "POST" in getattr(route, "methods", set())}
    assert posted == set(ROUTE_RULES)
