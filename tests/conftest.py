"""Shared helpers: small hand-made clusters and paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.cluster import Cluster
from planner.snapshot import parse_cluster

REPO = Path(__file__).resolve().parents[1]
INSTANCES = REPO / "instances"
FIG15 = INSTANCES / "fig15-ejection-chain.json"


def node(name: str, **fields: Any) -> dict[str, Any]:
    """An 8-GPU node dict with 64 CPUs and 512 GiB unless told otherwise."""
    return {"name": name, "gpus": 8, "cpus": 64, "memory_gib": 512, **fields}


def pod(name: str, on: str | None, gpus: float = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "node": on, "gpus": gpus, "cpus": fields.pop("cpus", 1), **fields}


def make_cluster(nodes: list[dict], pods: list[dict] = (), jobs: list[dict] = (), **top: Any) -> Cluster:
    """A checked cluster from plain dicts (raises SnapshotError when inconsistent)."""
    return parse_cluster(json.dumps({"nodes": nodes, "pods": list(pods), "jobs": list(jobs), **top}))


@pytest.fixture
def fig15() -> Cluster:
    return parse_cluster(FIG15.read_text())


@pytest.fixture(scope="session")
def postgres():  # type: ignore[no-untyped-def]
    """One throwaway PostgreSQL server for the session (skipped, with the reason, when it cannot start)."""
    from tests.support.harness_postgres import ThrowawayPostgres, unavailable_reason

    reason = unavailable_reason()
    if reason:
        pytest.skip(f"PostgreSQL: {reason}")
    server = ThrowawayPostgres().start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind the store supports."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("postgres").create_database()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """As ``database_url``, one per test module (for a module's shared server)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('store') / 'store.db'}"
    return request.getfixturevalue("postgres").create_database()


# ----------------------------------------------------------------------------------------------
# Markers: the fast local loop is ``pytest -m "not slow and not service"`` (under 2 minutes)
# ----------------------------------------------------------------------------------------------

SERVICE_FILES = frozenset(
    {
        "test_service.py",
        "test_service_client.py",
        "test_service_security.py",
        "test_service_replicas.py",
        "test_service_docs.py",
        "test_service_schema.py",
        "test_service_preempt.py",
        "test_service_allocate.py",
        "test_service_explain.py",
        "test_store.py",
        "test_store_failures.py",
    }
)
"""Files that start the HTTP server in a subprocess or a database (SQLite files, a throwaway PostgreSQL)."""
SLOW_FILES = frozenset(
    {
        "test_ray_executor.py",
        "test_limits.py",
        "test_exact_oracle.py",
        "test_docs_commands.py",
        "test_simulate_placement.py",
        "test_allocate_joint.py",
        "test_kubernetes_roundtrip.py",
        "test_cli_simulate.py",
    }
)
"""Files that take 10 s or more on one core (measured with ``pytest -n 0 --durations=0``): a local Ray, the
brute-force oracles, every documented command, the simulators."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = item.path.name
        if name in SERVICE_FILES:
            item.add_marker(pytest.mark.service)
        if name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
