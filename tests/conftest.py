"""Fixtures every test directory shares (the fig15 cluster, databases) and the ``slow`` and ``service``
markers. Helpers live in ``tests/support/`` (a test imports them from there, never from this file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cluster import Cluster
from planner.snapshot import parse_cluster
from tests.support.paths import FIG15


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

SERVICE_DIRECTORY = Path(__file__).resolve().parent / "service"
"""Every file in ``tests/service/`` starts the HTTP server in a subprocess or a database (SQLite files, a
throwaway PostgreSQL)."""
CONTROLPLANE_DIRECTORY = Path(__file__).resolve().parent / "kube"
"""Every file in ``tests/kube/`` uses the throwaway Kubernetes control plane (built from ``controlplane/``,
started once per session): marked ``controlplane`` and ``slow`` (starting it takes seconds to minutes)."""
SLOW_FILES = frozenset(
    {
        "test_ray_executor.py",
        "test_limits.py",
        "test_exact_oracle.py",
        "test_room_exact.py",
        "test_room_levels.py",
        "test_room_tail_restriction.py",
        "test_docs_commands.py",
        "test_simulate_placement.py",
        "test_allocate_joint.py",
        "test_kubernetes_roundtrip.py",
        "test_cli_simulate.py",
        "test_view_browser.py",
        "test_defrag_bound_lp.py",
        "test_move_minimal.py",
        "test_room_objective.py",
        "test_golden_plans.py",
        "test_hardening.py",
        "test_hostile_inputs.py",
    }
)
"""Files that take 10 s or more on one core (measured with ``pytest -n 0 --durations=0``): a local Ray, the
brute-force oracles, every documented command, the simulators."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = item.path.name
        if item.path.resolve().is_relative_to(SERVICE_DIRECTORY):
            item.add_marker(pytest.mark.service)
        if item.path.resolve().is_relative_to(CONTROLPLANE_DIRECTORY):
            item.add_marker(pytest.mark.controlplane)
            item.add_marker(pytest.mark.slow)
        if name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
