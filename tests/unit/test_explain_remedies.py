"""``planner explain`` says no more than it found (issue 59): a remedy holds within the budgets it does
not name as lifted (``--max-moves 0`` is never answered with a plan of moves), and a pending pod of a job
already at its ``min_available`` gets the checks of that pod, never ``already_running``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.cluster import Cluster
from planner.engine.explain import ExplainOptions, explain_job, explain_pod
from tests.support.paths import REPO
from tests.support.planner_here import planner


def cluster(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> Cluster:
    nodes = [{"cpus": 64, "memory_gib": 512, "asw": "s0", **n} for n in nodes]
    pods = [{"cpus": 1, **p} for p in pods]
    return Cluster.model_validate({"nodes": nodes, "pods": pods, "jobs": jobs})


def held() -> Cluster:
    """Two 8-GPU nodes half held by jobs w and v, each with a disruption budget of 0; job big asks 8 GPUs:
    one move starts it, and only with a disruption budget lifted."""
    return cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [
            {"name": "w-0", "job": "w", "gpus": 4, "node": "n0"},
            {"name": "v-0", "job": "v", "gpus": 4, "node": "n1"},
            {"name": "big-0", "job": "big", "gpus": 8},
        ],
        [{"name": "w", "disruption": {"max_unavailable": 0}}, {"name": "v", "disruption": {"max_unavailable": 0}}, {"name": "big"}],
    )


def test_no_moves_allowed_is_answered_budget_not_a_plan_of_moves() -> None:
    remedy = explain_job(held(), "big", ExplainOptions(max_moves=0))["remedy"]
    assert remedy["code"] == "budget" and remedy["budgets"] == {"max_moves": 0}
    assert remedy["disruption_budgets_lifted"] is True and remedy["jobs_with_budgets"] == 2
    assert remedy["numbers"]["moves"] == 1  # the plan without the budgets, as the code says


def test_the_disruption_remedy_keeps_the_move_budgets() -> None:
    remedy = explain_job(held(), "big", ExplainOptions(max_moves=1))["remedy"]
    assert remedy["code"] == "disruption" and remedy["budgets"] == {"max_moves": 1}
    assert remedy["numbers"]["moves"] <= 1 and "disruption_budgets_lifted" not in remedy
    assert explain_job(held(), "big")["remedy"]["code"] == "disruption"


@pytest.mark.parametrize("max_moves", [0, 1, 2, 3])
def test_a_plan_offered_within_the_budgets_keeps_them(max_moves: int) -> None:
    # four 2-GPU pods over n0 and n1 (two jobs with a budget of 1 each), a pending 8-GPU job: two moves empty a node
    c = cluster(
        [{"name": f"n{i}", "gpus": 8} for i in range(3)],
        [
            *({"name": f"a-{i}", "job": "a", "gpus": 2, "node": f"n{i % 2}"} for i in range(2)),
            *({"name": f"b-{i}", "job": "b", "gpus": 2, "node": f"n{i % 2}"} for i in range(2)),
            {"name": "x-0", "job": "x", "gpus": 8, "node": "n2"},
            *({"name": f"j-{i}", "job": "j", "gpus": 8} for i in range(1)),
        ],
        [{"name": "a", "disruption": {"max_unavailable": 1}}, {"name": "b", "disruption": {"max_unavailable": 0}}, {"name": "x"}, {"name": "j"}],
    )
    remedy = explain_job(c, "j", ExplainOptions(max_moves=max_moves))["remedy"]
    if remedy["code"] in ("make_room", "disruption"):
        assert remedy["numbers"]["moves"] <= max_moves, remedy
    else:
        assert remedy["code"] in ("budget", "no_plan_found"), remedy


def test_explain_on_the_command_line_with_no_moves(tmp_path: Path) -> None:
    path = tmp_path / "held.json"
    path.write_text(held().model_dump_json())
    done = planner("explain", str(path), "--job", "big", "--max-moves", "0", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["remedy"]["code"] == "budget"


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gpu-cluster") / "snapshot.json"
    done = planner("import", "kubernetes", str(REPO / "instances" / "kubernetes" / "gpu-cluster.json"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize(
    ("pod", "job", "node"),
    [("embed-5c4b7-2", "serving/Deployment/embed", "a100-mig-0"), ("sweep-worker-2", "research/scheduling.k8s.io/group-name=sweep", None)],
)
def test_a_pending_pod_of_a_running_job_gets_the_real_checks(gpu_cluster: Path, pod: str, job: str, node: str | None) -> None:
    done = planner("explain", str(gpu_cluster), "--pod", pod, "-o", "json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pod"] == pod and out["job"] == job and out["starts_alone"] is True and out["pods_needed"] == 1
    assert out["reason"]["code"] == "fits_now" and out["remedy"]["code"] == "none_needed"
    assert [c["check"] for c in out["checks"]] == ["capacity", "gpu_model", "rules", "fragmentation"]
    assert out["checks"][-1]["numbers"]["pods_that_fit_now"] >= 1
    # allocate agrees: it starts the pod without a move (on the one MIG node, for the MIG slice)
    placed = planner("allocate", str(gpu_cluster), "--jobs", job, "--method", "largest-first", "-o", "json")
    assert placed.returncode == 0, placed.stderr
    where = {p["pod"]: p["node"] for p in json.loads(placed.stdout)["placements"]}
    assert pod in where and (node is None or where[pod] == node)
    # the job itself is running: already_running, pointing at --pod
    whole = planner("explain", str(gpu_cluster), "--job", job, "-o", "json")
    assert json.loads(whole.stdout)["reason"]["code"] == "already_running"
    assert "--pod" in json.loads(whole.stdout)["reason"]["detail"]


def running_job_with_a_pending_replica(topology: dict[str, Any] | None = None) -> Cluster:
    """Deployment-like job d (min_available 1): d-0 runs, d-1 (8 GPUs) waits; n1 holds a 4-GPU pod that
    one move takes to n0 (or d-0 to n1)."""
    return cluster(
        [{"name": "n0", "gpus": 8}, {"name": "n1", "gpus": 8}],
        [{"name": "d-0", "job": "d", "gpus": 4, "node": "n0"}, {"name": "x", "gpus": 4, "node": "n1"}, {"name": "d-1", "job": "d", "gpus": 8}],
        [{"name": "d", "min_available": 1, **({"topology": topology} if topology else {})}],
    )


def test_a_pending_replica_that_needs_a_move_gets_a_plan_for_itself() -> None:
    out = explain_pod(running_job_with_a_pending_replica(), "d-1")
    assert out["reason"]["code"] == "fragmentation" and out["checks"]
    assert out["remedy"]["code"] == "make_room" and out["remedy"]["numbers"]["moves"] == 1
    assert out["remedy"]["numbers"]["nodes"] in (["n0"], ["n1"])  # either 4-GPU pod moves beside the other


def test_a_pending_replica_of_a_job_under_a_required_switch_is_not_offered_a_plan() -> None:
    out = explain_pod(running_job_with_a_pending_replica({"level": "asw", "mode": "required"}), "d-1")
    assert out["reason"]["code"] == "fragmentation" and out["checks"]
    assert out["remedy"]["code"] == "no_plan_found" and "required asw" in out["remedy"]["detail"]
