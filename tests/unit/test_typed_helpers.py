"""The helpers the type checking brought in (issue 41, mypy) say what is missing instead of failing on a None."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from planner.cluster import Cluster
from planner.models.units import Scale
from planner.plans import SolveReport
from planner.state import ClusterState


def tiny_cluster() -> Cluster:
    return Cluster.model_validate(
        {
            "nodes": [{"name": "n0", "gpus": 2, "cpus": 8, "memory_gib": 32}, {"name": "n1", "gpus": 2, "cpus": 8, "memory_gib": 32}],
            "pods": [{"name": "p0", "node": "n0", "gpus": 1, "cpus": 2, "memory_gib": 4}],
        }
    )


def test_a_pickled_piece_of_a_state_names_its_missing_cluster() -> None:
    state = ClusterState(tiny_cluster())
    assert [n.name for n in state.require_cluster().nodes] == ["n0", "n1"]
    piece = pickle.loads(pickle.dumps(state.subset(np.arange(1))))
    assert piece.cluster is None and piece.pod_names == ["p0"]
    with pytest.raises(ValueError, match="pickled without its cluster"):
        piece.require_cluster()


def test_a_report_reads_the_extra_fields_a_planner_added() -> None:
    report = SolveReport(method="makeroom", status="heuristic", jobs_placed=2)
    assert report.extra("jobs_placed") == 2
    with pytest.raises(KeyError):
        report.extra("restricted")


def test_an_exact_scale_refuses_a_value_it_has_no_fraction_for() -> None:
    quarters = Scale(4, True)
    assert quarters.request(0.75) == 3
    assert quarters.capacity(2.0) == 8
    with pytest.raises(ValueError, match=r"1e-12 is not a fraction with a denominator up to 4294967296"):
        quarters.request(1e-12)
