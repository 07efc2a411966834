"""``GET /v1/plans/{id}/view`` and ``GET /v1/jobs/{id}/view`` on a real server: the token rules of the
JSON routes (the read token may view), 404 for what does not exist, and the page in headless Chromium
makes no request besides itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.browser import CHROMIUM, Browser, page_requests
from tests.support.harness import Server
from tests.support.view_page import budget_lines, chart_caption

TOKEN = "view-token-0123456789"
READER = "view-reader-0123456789"
REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = json.loads((REPO / "instances" / "asi-500.json").read_text())
NIGHTLY_POLICY = yaml.safe_load((REPO / "deploy" / "policies" / "defrag-policy.yaml").read_text())


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Server, str, str]:
    """The server, a finished defrag job's id and its plan's id."""
    srv = Server(tmp_path_factory.mktemp("view") / "planner.db", TOKEN, "--workers", "1", env={"PLANNER_API_READ_TOKEN": READER}).start()
    try:
        with srv.client() as client:
            done = client.post("/v1/defrag", params={"wait": 120}, json={"snapshot": SNAPSHOT})
            assert done.status_code == 200, done.text
            job_id = done.headers["x-job-id"]
            plan_id = client.get(f"/v1/jobs/{job_id}").json()["plan_id"]
        yield srv, job_id, plan_id
    finally:
        srv.stop()


def test_the_read_token_views_a_job_and_a_plan(served: tuple[Server, str, str]) -> None:
    srv, job_id, plan_id = served
    with srv.client(READER) as reader:
        plan = reader.get(f"/v1/plans/{plan_id}").json()["plan"]
        for path in (f"/v1/jobs/{job_id}/view", f"/v1/plans/{plan_id}/view"):
            page = reader.get(path)
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            assert f"<title>defrag plan {plan_id}</title>" in page.text
            assert "default-src 'none'" in page.text and " src=" not in page.text
            assert '"rows":[[1,' in page.text and page.text.count("[1,") >= len(plan["waves"][0])


def test_the_page_names_the_plan_and_draws_the_default_budget(served: tuple[Server, str, str]) -> None:
    srv, _, plan_id = served
    with srv.client(READER) as reader:
        page = reader.get(f"/v1/plans/{plan_id}/view").text
    assert f'data-id="plan id" title="the id the service stored the plan under (GET /v1/plans/{{id}})">plan id: <code>{plan_id}</code>' in page
    # no budget in the request: the default 10% of asi-500's 500 nodes
    assert budget_lines(page) == {"nodes_touched": (50, "budget: max nodes per wave = 50 (default)")}
    assert "max nodes per wave = 50, the default budget (none was given): 10% of 500 nodes in scope, rounded up" in chart_caption(page, "waves")


def test_a_plan_made_with_the_shipped_nightly_policy_is_drawn_with_its_budget(served: tuple[Server, str, str]) -> None:
    srv, _, _ = served
    fig15 = json.loads((REPO / "instances" / "fig15-ejection-chain.json").read_text())
    with srv.client() as client:
        done = client.post("/v1/defrag", params={"wait": 120}, json={"snapshot": fig15, "policy": NIGHTLY_POLICY, "options": {"time_limit_s": 30}})
        assert done.status_code == 200, done.text
        plan_id = client.get(f"/v1/jobs/{done.headers['x-job-id']}").json()["plan_id"]
        page = client.get(f"/v1/plans/{plan_id}/view")
    assert page.status_code == 200, page.text
    # 10% of fig15's 4 nodes is 1, and a move touches two nodes: 2
    assert budget_lines(page.text) == {"nodes_touched": (2, "budget: max nodes per wave = 2 (policy)")}
    words = chart_caption(page.text, "waves")
    assert "max nodes per wave = 2, set by the policy: 10% of 4 nodes in scope, rounded up, at least 2 (a move touches two nodes)" in words
    assert "max moves per namespace per wave = 20, set by the policy" in words


def test_views_keep_the_token_rules_and_404s(served: tuple[Server, str, str]) -> None:
    srv, job_id, plan_id = served
    with srv.client(None) as anonymous:
        assert anonymous.get(f"/v1/plans/{plan_id}/view").status_code == 401
        assert anonymous.get(f"/v1/jobs/{job_id}/view").status_code == 401
    with srv.client() as admin:
        missing = admin.get("/v1/plans/no-such-plan/view")
        assert missing.status_code == 404 and missing.json()["error"] == "no plan 'no-such-plan'"
        assert admin.get("/v1/jobs/no-such-job/view").json()["error"] == "no job 'no-such-job'"
        spec = admin.get("/openapi.json").json()["paths"]
        assert set(spec["/v1/plans/{plan_id}/view"]["get"]["responses"]["200"]["content"]) == {"text/html"}


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_served_page_draws_every_move_and_requests_nothing_else(served: tuple[Server, str, str]) -> None:
    srv, _, plan_id = served
    with srv.client() as admin:
        moves = sum(len(w) for w in admin.get(f"/v1/plans/{plan_id}").json()["plan"]["waves"])
    url = f"{srv.url}/v1/plans/{plan_id}/view"
    with Browser() as browser:
        browser.headers(Authorization=f"Bearer {READER}")
        loaded = browser.load(url)
        assert page_requests(loaded, url) == []
        assert browser.evaluate("document.querySelector('#moves .count').textContent") == f"{moves:,} of {moves:,} rows"
        assert browser.evaluate("document.getElementById('waves').data[0].y.reduce((a, b) => a + b, 0)") == moves
