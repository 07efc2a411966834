"""Schemathesis against the service's own OpenAPI schema: no input may cause a 5xx or a response that
breaks the schema. Bounded examples so CI stays fast.

``positive_data_acceptance`` is left out: a snapshot can satisfy the JSON schema and still be
inconsistent (a pod on an unknown node, a node over capacity), and the service rightly answers 422
with the field path; cross-field rules cannot be written in JSON Schema.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import positive_data_acceptance

from tests.support.harness import Server

TOKEN = "schema-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES_PER_OPERATION = 15


@pytest.fixture(scope="module")
def api_schema():  # type: ignore[no-untyped-def]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(dir=os.environ.get("PLANNER_TEST_TMP")) as tmp:
        srv = Server(Path(tmp) / "s.db", TOKEN, "--workers", "1", "--max-job-s", "30").start()
        try:
            yield schemathesis.openapi.from_url(f"{srv.url}/openapi.json", headers=AUTH)
        finally:
            srv.stop()


def test_every_operation_conforms_to_the_schema(api_schema) -> None:  # type: ignore[no-untyped-def]
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert {"/v1/defrag", "/v1/jobs/{job_id}", "/v1/plans", "/v1/validate", "/v1/report", "/metrics"} <= {op.path for op in operations}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def conforms(case) -> None:  # type: ignore[no-untyped-def]
            if case.query and "wait" in case.query:
                case.query["wait"] = 0  # generated jobs run in the background; do not block on them
            case.call_and_validate(headers=AUTH, excluded_checks=[positive_data_acceptance])

        conforms()
