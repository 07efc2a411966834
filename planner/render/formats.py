"""A plan in each output format, one function for every place that prints one: ``-o`` of the planning
commands, ``planner render``, ``planner plans get -o`` and ``GET /v1/plans/{id}?format=`` (so that a
stored plan rendered by the service or the client is byte for byte what the planning command printed).

``refusals`` says why a format cannot render a plan (the wrong kind of plan, names Kubernetes refuses,
a snapshot the plan does not belong to), each problem a line naming the field; ``render_text`` renders.
"""

from __future__ import annotations

import io
from typing import Any

from planner.cluster import Cluster
from planner.plans import AllocationPlan, DefragPlan, PreemptPlan, dump_plan, plan_to_dict
from planner.render.kubernetes import placement_script, script_name_problems, wide_table
from planner.render.kubernetes_waves import kubectl_script, podmigrationjob_yaml
from planner.render.plan import render_summary
from planner.textsafe import safe_console_class
from planner.validate.belongs import mismatch_message, snapshot_mismatches

FORMATS = ("json", "yaml", "table", "wide", "kubectl", "podmigrationjob")
TEXT = "text/plain; charset=utf-8"
CONTENT_TYPES = {
    "json": "application/json",
    "yaml": "application/yaml",
    "table": TEXT,
    "wide": TEXT,
    "kubectl": "text/x-shellscript; charset=utf-8",
    "podmigrationjob": "application/yaml",
}
NEEDS_SNAPSHOT = frozenset({"wide", "kubectl", "podmigrationjob"})
"""The formats that read the pods' namespaces, requests and tolerations from the snapshot."""


def refusals(plan: Any, cluster: Cluster | None, fmt: str, flag: str, snapshot: str | None = None) -> list[str]:
    """Why ``fmt`` cannot render ``plan`` (empty: it can). ``flag`` names the format as the caller's
    user wrote it (``-o kubectl``, ``format=kubectl``); ``snapshot``, when given, names a snapshot that
    came separately from the plan, which is then checked to be the plan's (``validate/belongs.py``)."""
    if fmt == "podmigrationjob" and not isinstance(plan, DefragPlan):
        return [f"{flag}: renders a defrag plan's moves (this is a {type(plan).__name__}); use kubectl, json, yaml, table or wide"]
    if fmt == "kubectl" and not isinstance(plan, (DefragPlan, PreemptPlan, AllocationPlan)):
        return [f"{flag}: renders one plan (this is a {type(plan).__name__}, two plans side by side); choose a method, or use json, yaml or table"]
    if cluster is None or fmt not in NEEDS_SNAPSHOT:
        return []
    if snapshot is not None:
        mismatches = snapshot_mismatches(plan, cluster)
        if mismatches:
            return mismatch_message(mismatches, snapshot)
    if fmt in ("kubectl", "podmigrationjob"):
        problems = script_name_problems(plan, cluster)
        if problems:
            fix = "rename them in the snapshot (or import it with planner import kubernetes, which keeps Kubernetes' names)"
            return [*problems, f"{flag}: refused; {fix}"]
    return []


def render_yaml(document: dict[str, Any]) -> str:
    """A plan document (``plan_to_dict``, or a stored plan's body) as YAML, keys in the plan's order."""
    import yaml  # deferred: PyYAML (~10 ms at start-up), only for YAML

    return str(yaml.safe_dump(document, sort_keys=False, width=10**6))


def table_text(plan: Any, width: int = 120, terminal: bool = False) -> str:
    """The summary table as text (``-o table``): names shown as written, control characters escaped."""
    buffer = io.StringIO()
    console = safe_console_class()(markup=False, highlight=False, emoji=False, file=buffer, width=width, force_terminal=terminal)
    render_summary(console, plan)
    return buffer.getvalue()


def render_text(plan: Any, cluster: Cluster | None, fmt: str, file_name: str | None = None) -> str:
    """``plan`` in format ``fmt`` (``refusals`` first: this assumes it can be rendered; ``cluster`` is
    needed for the formats in ``NEEDS_SNAPSHOT``). ``file_name``: the file the text goes to, when
    known (``--out``), which the kubectl script's and the PodMigrationJobs' headers name."""
    if fmt == "json":
        return dump_plan(plan) + "\n"
    if fmt == "yaml":
        return render_yaml(plan_to_dict(plan))
    if fmt == "table":
        return table_text(plan)
    assert cluster is not None, f"format {fmt} needs the snapshot"
    if fmt == "wide":
        return table_text(plan) + (wide_table(plan, cluster) if isinstance(plan, DefragPlan) else "")
    if fmt == "kubectl":
        return kubectl_script(plan, cluster, file_name) if isinstance(plan, DefragPlan) else placement_script(plan, cluster, file_name)
    if fmt == "podmigrationjob":
        return podmigrationjob_yaml(plan, cluster, file_name)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
