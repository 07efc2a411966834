"""``planner verify PLAN --from LIST`` end to end, each on its own throwaway control plane (a plan changes the
cluster it is replayed on): the planner's defrag, make-room and allocate plans of the bundled gpu-cluster List, a
preemption plan that evicts two pods to start the pending 8-GPU job, and the defrag plan of a generated mixed
fleet, all accepted by Kubernetes (0 refused); a List the API server rejects is exit 2 quoting it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
from tests.support.paths import INSTANCES
from tests.support.verify_run import plan_of, planner, verified

GPU_CLUSTER = INSTANCES / "kubernetes" / "gpu-cluster.json"
PREEMPT = {
    "version": 1,
    "kind": "preempt",
    "job": "research/Job/train-big",
    "now_s": 0.0,
    "placements": [{"pod": "train-big-0", "node": "h100-5"}],
    "victims": [
        {"pod": "finetune-1", "node": "h100-5", "job": "research/Job/finetune", "lost_gpu_s": 0.0},
        {"pod": "llm-serve-7d9f8-2", "node": "h100-5", "job": "serving/Deployment/llm-serve", "lost_gpu_s": 0.0},
    ],
}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("defrag",), {"moves": 6, "evictions": 6, "placements": 0}),
        (("defrag", "--make-room", "research/Job/train-big"), {"moves": 2, "evictions": 2, "placements": 1}),
        (("allocate",), {"moves": 0, "evictions": 0, "placements": 2}),
    ],
    ids=["defrag", "make-room", "allocate"],
)
def test_the_planners_plans_of_the_example_are_accepted(controlplane_bin: Path, tmp_path: Path, args: tuple[str, ...], expected: dict[str, int]) -> None:
    plan = plan_of(controlplane_bin, tmp_path, GPU_CLUSTER, *args)
    result = verified(controlplane_bin, plan, GPU_CLUSTER)
    assert result["checked"] == expected == result["accepted"]


def test_a_preemption_that_frees_a_node_for_the_8_gpu_job_is_accepted(controlplane_bin: Path, tmp_path: Path) -> None:
    plan = tmp_path / "preempt.json"
    plan.write_text(json.dumps(PREEMPT))
    result = verified(controlplane_bin, plan, GPU_CLUSTER)
    assert result["checked"] == {"moves": 0, "evictions": 2, "placements": 1} == result["accepted"]


def test_a_generated_mixed_fleet_loads_and_its_defrag_plan_is_accepted(controlplane_bin: Path, tmp_path: Path) -> None:
    """The generator's objects are ones the API server accepts (it refused static pods without an image and
    matchFields metadata.name NotIn with two values), and Kubernetes admits every move of the defrag plan."""
    source = tmp_path / "mixed.json"
    source.write_text(json.dumps(generate_kubernetes_mixed(60, 0)))
    plan = plan_of(controlplane_bin, tmp_path, source, "defrag")
    moves = sum(len(w) for w in json.loads(plan.read_text())["waves"])
    result = verified(controlplane_bin, plan, source)
    assert moves > 0 and result["checked"]["moves"] == moves == result["accepted"]["evictions"]


def test_a_list_the_api_server_rejects_is_exit_2_quoting_it(controlplane_bin: Path, tmp_path: Path) -> None:
    items = json.loads(GPU_CLUSTER.read_text())["items"]
    bad = json.loads(json.dumps(next(i for i in items if i["kind"] == "Pod" and i["metadata"]["name"] == "finetune-0")))
    bad["metadata"]["name"] = "bad-pod"
    bad["spec"]["containers"][0]["image"] = ""
    listed = tmp_path / "bad.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [*items, bad]}))
    plan = tmp_path / "preempt.json"
    plan.write_text(json.dumps(PREEMPT))
    done = planner(controlplane_bin, "verify", str(plan), "--from", str(listed))
    assert done.returncode == 2, done.stderr
    assert "Pod research/bad-pod" in done.stderr and "spec.containers[0].image: Required value" in done.stderr
    assert "Traceback" not in done.stderr
