"""The GET routes that parse a stored snapshot (a plan's HTML page, a plan rendered over its job's snapshot) are
held to a rule as the POST routes are (``route_rules.RENDER``): the work runs in a killable checker process and
the request ends by the rule's time. The app is built in this process (the store, the real checker processes,
a plan computed by ``planner defrag`` and stored as a job's), and the rule is shortened to nothing: before the
rule, these routes built their answer in the server's thread pool with no time limit and answered 200."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import httpx
import pytest

with warnings.catch_warnings():  # Starlette asks for httpx2 in place of httpx; this environment has httpx
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from planner.api import route_rules
from planner.api.app import create_app
from planner.api.requests import Settings
from planner.api.routes import jobs, views
from tests.support.paths import FIG15
from tests.support.planner_here import planner


@pytest.fixture
def app_and_plan(tmp_path: Path):
    """The app (no token) and the id of a stored defrag plan over Fig. 15."""
    made = planner("defrag", str(FIG15), "-o", "json")
    assert made.returncode == 0, made.stderr
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'planner.db'}"))
    store = app.state.service.store
    text = FIG15.read_text()
    job, _ = store.create_job("defrag", {}, text, hashlib.sha256(text.encode()).hexdigest())
    claimed = store.claim_next()
    assert claimed is not None and claimed.id == job.id
    plan = store.succeed(job.id, json.loads(made.stdout), {"kind": "defrag"})
    assert plan is not None
    yield app, job.id, plan.id
    app.state.service.bodies.close()
    store.close()


def test_a_view_within_its_rule_is_drawn(app_and_plan) -> None:
    app, job_id, plan_id = app_and_plan
    client = TestClient(app)
    client.timeout = httpx.Timeout(300.0)
    for path in (f"/v1/plans/{plan_id}/view", f"/v1/jobs/{job_id}/view"):
        page = client.get(path)
        assert page.status_code == 200 and f"plan {plan_id}</title>" in page.text, page.text[:500]
    table = client.get(f"/v1/plans/{plan_id}", params={"format": "wide"})
    assert table.status_code == 200 and "Job-1-0" in table.text, table.text[:500]


@pytest.mark.parametrize("path", ["/v1/plans/{plan}/view", "/v1/jobs/{job}/view", "/v1/plans/{plan}?format=wide"])
def test_a_view_past_its_rule_is_answered_at_once(app_and_plan, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app, job_id, plan_id = app_and_plan
    no_time = route_rules.RouteRule(body_bytes=0, time_s=route_rules.ANSWER_S, at_once=1)  # its work must end now
    monkeypatch.setattr(route_rules, "RENDER", no_time, raising=False)
    monkeypatch.setattr(views, "RENDER", no_time, raising=False)
    monkeypatch.setattr(jobs, "RENDER", no_time, raising=False)
    client = TestClient(app)
    response = client.get(path.format(plan=plan_id, job=job_id))
    assert response.status_code in (422, 503), response.text[:500]
    assert "retry later" in response.text or "time limit" in response.text, response.text[:500]
