"""Where a plan came from, stamped on every plan's report as ``report.provenance``.

A plan found in a store a month later, or cited in a paper, should say what produced it:

* ``planner``: the package version and, when it runs from a git checkout, the commit (read from
  ``.git`` directly, no subprocess), with ``+dirty`` never claimed (that would need a scan);
* ``versions``: Python and the libraries whose behaviour the plan depends on (the solvers, numpy,
  pydantic);
* ``options``: the options as applied, every default filled in (``model_dump`` of the options model);
* ``snapshot_sha256``: the SHA-256 of the canonical input snapshot: the snapshot as parsed,
  serialised in schema field order with defaults left out, so two files that differ only in key
  order, whitespace or spelled-out defaults hash the same (0.23 s at 37,707 nodes);
* ``host_cores``: the cores this process may use, and ``cpu_count``: the machine's.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import platform
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from planner.cluster import Cluster
from planner.runtime.tasks import default_workers

PlanT = TypeVar("PlanT", bound=BaseModel)

_LIBRARIES = ("ortools", "highspy", "numpy", "pydantic")
PACKAGE = "gpu-fleet-planner"
"""The distribution name in ``pyproject.toml`` (the import package is ``planner``)."""


def snapshot_sha256(cluster: Cluster) -> str:
    """SHA-256 of the canonical form of ``cluster`` (see the module docstring)."""
    return hashlib.sha256(cluster.model_dump_json(exclude_defaults=True).encode()).hexdigest()


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def planner_version() -> str | None:
    """The installed package's version (``importlib.metadata``), or None when the planner runs from a
    source tree that was never installed."""
    return _version(PACKAGE)


def _git_commit() -> str | None:
    """The commit of the checkout the planner runs from, if it runs from one."""
    git = Path(__file__).resolve().parents[1] / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head.removeprefix("ref: ")
        if (git / ref).is_file():
            return (git / ref).read_text().strip()
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        return None
    return None


@functools.cache
def _static() -> dict[str, Any]:
    return {
        "planner": {"version": planner_version(), "commit": _git_commit()},
        "versions": {"python": platform.python_version(), **{name: _version(name) for name in _LIBRARIES}},
        "host_cores": default_workers(),
        "cpu_count": os.cpu_count(),
    }


def provenance(cluster: Cluster, options: BaseModel, sha256: str | None = None) -> dict[str, Any]:
    """The ``report.provenance`` of a plan made from ``cluster`` with ``options`` (``sha256``: the
    cluster's ``snapshot_sha256`` when the caller has it already)."""
    static = _static()
    return {
        "planner": dict(static["planner"]),
        "versions": dict(static["versions"]),
        "options": options.model_dump(mode="json"),
        "snapshot_sha256": snapshot_sha256(cluster) if sha256 is None else sha256,
        "host_cores": static["host_cores"],
        "cpu_count": static["cpu_count"],
    }


def stamp(plan: PlanT, cluster: Cluster, options: BaseModel, sha256: str | None = None) -> PlanT:
    """``plan`` with ``provenance`` on its report, or on each report of a comparison's plans."""
    record = provenance(cluster, options, sha256)
    for report in _reports(plan):
        report.provenance = record
    return plan


def stamp_option_sources(plan: Any, sources: dict[str, str]) -> Any:
    """``plan`` with ``report.provenance.option_sources``: where each option's value came from
    (``given``: a flag or the request's options; ``policy``; ``server-policy``; ``default``)."""
    for report in _reports(plan):
        report.provenance = {**(getattr(report, "provenance", None) or {}), "option_sources": dict(sources)}
    return plan


def _reports(plan: Any) -> list[Any]:
    """The report of ``plan``, or each report of a comparison's plans."""
    if getattr(plan, "report", None) is not None:
        return [plan.report]
    return [getattr(plan, name).report for name in type(plan).model_fields if getattr(getattr(plan, name), "report", None) is not None]
