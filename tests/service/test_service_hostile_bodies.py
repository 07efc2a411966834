"""Issue 59, items 1 and 2 over HTTP: a request body's problems are listed up to twenty and counted,
so 200,000 unknown fields (options, a policy document, the request itself) get a small 422 in little
time, not a 23.7 MB one; a policy document nested deeper than the readers' bound is a 422 naming it."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.harness import Server
from tests.support.paths import FIG15

TOKEN = "hostile-bodies-token-0123456789"
SNAPSHOT = json.loads(FIG15.read_text())
FIELDS = {f"field{i}": 1 for i in range(200_000)}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    srv = Server(tmp_path_factory.mktemp("hostile") / "planner.db", TOKEN, "--workers", "1").start()
    yield srv
    srv.stop()


@pytest.mark.parametrize(
    ("body", "first", "last"),
    [
        ({"snapshot": SNAPSHOT, "options": FIELDS}, "options.field0: unknown field", "... and 199,980 more like it"),
        (
            {"snapshot": SNAPSHOT, "policy": {"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": FIELDS}},
            "policy.spec.field0: unknown field",
            "... and 199,980 more like it",
        ),
        ({"snapshot": SNAPSHOT, **FIELDS}, "field0: unknown field", "... and 199,980 more like it"),
    ],
    ids=["options", "policy", "request"],
)
def test_200000_unknown_fields_get_a_small_422(server: Server, body: dict, first: str, last: str) -> None:
    raw = json.dumps(body).encode()
    assert len(raw) > 2_500_000
    started = time.monotonic()
    with server.client() as client:
        response = client.post("/v1/defrag", content=raw, headers={"Content-Type": "application/json"})
    elapsed = time.monotonic() - started
    assert response.status_code == 422, response.text[:500]
    assert len(response.content) < 20_000, f"{len(response.content):,} bytes"
    problems = response.json()["problems"]
    assert len(problems) == 21 and problems[0].startswith(first) and problems[-1] == last, problems
    assert elapsed < 30, f"took {elapsed:.1f} s"


def test_a_policy_document_nested_past_the_bound_is_a_422_naming_it(server: Server) -> None:
    deep: object = 1
    for _ in range(150):
        deep = {"a": deep}
    policy = {"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": {"objective": {"weights": deep}}}
    with server.client() as client:
        response = client.post("/v1/defrag", json={"snapshot": SNAPSHOT, "policy": policy})
    assert response.status_code == 422, response.text[:500]
    assert any("nested more than 100 levels deep" in problem for problem in response.json()["problems"]), response.text[:1000]
