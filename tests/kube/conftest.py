"""The session's throwaway control plane, on the bundled gpu-cluster List."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.kube.controlplane import Running, start, stop
from tests.support.controlplane import controlplane_binary
from tests.support.paths import INSTANCES

GPU_CLUSTER = INSTANCES / "kubernetes" / "gpu-cluster.json"


@pytest.fixture(scope="session")
def controlplane_bin() -> Path:
    return controlplane_binary()


@pytest.fixture(scope="session")
def controlplane(controlplane_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """One control plane for the session, loaded with instances/kubernetes/gpu-cluster.json."""
    state_dir = tmp_path_factory.mktemp("controlplane") / "state"
    running = start(str(GPU_CLUSTER), state_dir, timeout_s=600, binary=controlplane_bin)
    yield running
    stop(state_dir)
