"""The answers of the GET routes that parse a stored snapshot: a stored plan's HTML page (``/v1/plans/{id}/view``,
``/v1/jobs/{id}/view``) and its rendered text (``/v1/plans/{id}?format=kubectl|podmigrationjob|table|wide``).

They run in a checker process within ``route_rules.RENDER`` (``BodyReader.run``), as a validation does: a
stored snapshot can be tens of MiB (parsing and checking it takes seconds of CPU that hold the interpreter
lock), and in the server's thread pool a page had no time limit and could not be stopped. Plain, picklable
functions: each raises ``Refused`` when the plan cannot be drawn or rendered.
"""

from __future__ import annotations

import json
from typing import Any

from planner.api.refusals import Refused
from planner.cluster import SnapshotError
from planner.kinds import KINDS
from planner.plans import parse_plan
from planner.render.formats import refusals, render_text
from planner.render.view import plan_view_html
from planner.snapshot import parse_cluster


def view_page(snapshot: bytes, body: dict[str, Any], kind: str, plan_id: str) -> str:
    """The HTML page of the stored plan ``body`` (of plan kind ``kind``) over its job's ``snapshot``; 409 when
    the plan cannot be drawn over it."""
    plan_kind = KINDS[kind]
    model = plan_kind.comparison_model if str(body.get("kind", "")).endswith("-compare") else plan_kind.plan_model
    try:
        document = model.model_validate(body)
        return plan_view_html(document, parse_cluster(snapshot.decode()), title=f"{body.get('kind', kind)} plan {plan_id}", plan_id=plan_id)
    except SnapshotError as err:
        raise Refused(409, f"plan '{plan_id}' cannot be drawn over its job's snapshot: {err.problems[0]}") from None


def rendered_text(snapshot: bytes, body: dict[str, Any], fmt: str, plan_id: str) -> str:
    """The stored plan ``body`` rendered in ``fmt`` (``render/formats.py``, as ``planner render`` does), over its
    job's ``snapshot`` when the format needs one (else empty); 422 naming why it cannot be."""
    try:
        plan = parse_plan(json.dumps(body), "plan")
    except SnapshotError as err:  # a comparison: two plans side by side
        raise Refused(422, f"cannot render plan '{plan_id}' as {fmt}", [*err.problems, f"format={fmt}: renders one plan; use format=json or yaml"]) from None
    cluster = parse_cluster(snapshot.decode()) if snapshot else None
    problems = refusals(plan, cluster, fmt, f"format={fmt}", snapshot="the stored snapshot")
    if problems:
        raise Refused(422, f"cannot render plan '{plan_id}' as {fmt}", problems)
    return render_text(plan, cluster, fmt)
