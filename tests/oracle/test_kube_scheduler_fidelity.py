"""Every move the planner plans from Kubernetes objects must be one kube-scheduler admits.

The judge is ``tests/support/kube_scheduler.py``: an independent replay of kube-scheduler's Filter plugins on
the raw objects (never the planner's snapshot), replaying each plan make-before-break. Inputs: the
worked example ``instances/kubernetes/gpu-cluster.json``, the audit's 200-node cluster
(``tests/data/k8s-mixed-200.json.gz``) and small mixed clusters drawn by ``tests/support/kube_strategies.py``;
defrag methods: the IPC heuristic, exact (3 s), hybrid (3 s) and the baselines that move pods; and
the placements of ``allocate`` and ``preempt`` plans. Hypothesis draws the generator's arguments (``MixedSpec``: seed, nodes per family, fill) and
does not shrink (each example is a plan; the failure message names the spec to reproduce it).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from planner.adapters.kubernetes import import_kubernetes
from planner.adapters.kubernetes_config import load_config
from planner.engine import DefragOptions, plan_defrag
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.instances.kubernetes_mixed import generate_kubernetes_mixed
from planner.plans import plan_to_dict
from tests.support.kube_scheduler import KubeScheduler, replay_defrag, replay_placements
from tests.support.kube_strategies import MixedSpec, mixed_lists, mixed_specs
from tests.support.paths import INSTANCES

METHODS: dict[str, dict[str, Any]] = {
    "heuristic": {},
    "exact": {"time_limit_s": 3.0},
    "hybrid": {"time_limit_s": 3.0},
    "random": {},
    "descheduler": {},
    "repack": {},
}
EXAMPLE = INSTANCES / "kubernetes" / "gpu-cluster.json"
AUDIT = Path(__file__).resolve().parents[1] / "data" / "k8s-mixed-200.json.gz"
"""The audit's 200-node mixed cluster (a copy of ../shared/repros/k8s-mixed-200.json.gz)."""


def plan_from_objects(objects: dict[str, Any], method: str) -> dict[str, Any]:
    """The defrag plan ``planner defrag --from kubernetes --method METHOD`` makes (inline, 1 worker)."""
    cluster = import_kubernetes([(json.dumps(objects), "objects")], load_config(None)).cluster
    options = DefragOptions(method=method, executor="inline", workers=1, **METHODS[method])  # type: ignore[arg-type]
    return plan_to_dict(plan_defrag(cluster, options))


def assert_admitted(objects: dict[str, Any], plan: dict[str, Any], what: str) -> None:
    refusals = replay_defrag(objects, plan)
    moves = sum(len(w) for w in plan["waves"])
    refused = {(r.wave, r.pod) for r in refusals}
    reasons = Counter(f"{r.plugin}: {r.reason}" for r in refusals)
    assert not refusals, f"{what}: kube-scheduler refuses {len(refused)} of {moves} moves ({dict(reasons)}); first: " + "; ".join(
        f"wave {r.wave} {r.pod} {r.from_} -> {r.to}: {r.plugin} {r.reason}" for r in refusals[:5]
    )


@pytest.mark.parametrize("method", METHODS)
def test_example_cluster_moves_pass_kube_scheduler(method: str) -> None:
    objects = json.loads(EXAMPLE.read_text())
    assert_admitted(objects, plan_from_objects(objects, method), f"{EXAMPLE.name} --method {method}")


def test_audit_cluster_moves_pass_kube_scheduler() -> None:
    objects = json.loads(gzip.decompress(AUDIT.read_bytes()))
    assert_admitted(objects, plan_from_objects(objects, "heuristic"), f"{AUDIT.name} --method heuristic")


@pytest.mark.parametrize("source", [EXAMPLE, AUDIT], ids=["gpu-cluster", "k8s-mixed-200"])
def test_allocate_and_preempt_placements_pass_kube_scheduler(source: Path) -> None:
    """``planner allocate --method largest-first`` (every pending job) and ``planner preempt --job J``
    (default method spotgpu; each job with no pod running): the victims leave, then every placement
    must be admitted."""
    text = gzip.decompress(source.read_bytes()) if source.suffix == ".gz" else source.read_bytes()
    objects = json.loads(text)
    cluster = import_kubernetes([(json.dumps(objects), source.name)], load_config(None)).cluster
    plans = {"allocate": plan_to_dict(plan_allocate(cluster, AllocateOptions(method="largest-first")))}
    running = {pod.job for pod in cluster.pods if pod.node is not None}
    for job in sorted({pod.job for pod in cluster.pods if pod.node is None and pod.job} - running):
        plans[f"preempt --job {job}"] = plan_to_dict(plan_preempt(cluster, job, PreemptOptions()))
    refused = {what: [(r.pod, r.to, r.plugin, r.reason) for r in replay_placements(objects, plan)] for what, plan in plans.items()}
    assert not any(refused.values()), {what: r for what, r in refused.items() if r}


@pytest.mark.parametrize("method", METHODS)
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=mixed_specs())
def test_generated_mixed_cluster_moves_pass_kube_scheduler(method: str, spec: MixedSpec) -> None:
    objects = spec.objects()
    assert_admitted(objects, plan_from_objects(objects, method), f"{spec} --method {method}")


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(objects=mixed_lists())
def test_generated_residents_are_admitted_where_they_run(objects: dict[str, Any]) -> None:
    """The generator's own placement is one kube-scheduler admits (each pod on its node, the others
    there), except pods on cordoned nodes and static pods on tainted control-plane nodes (both
    were never scheduled there under today's rules)."""
    scheduler = KubeScheduler(objects)
    wrong = []
    for node, keys in list(scheduler.bound.items()):
        for key in list(keys):
            scheduler.unbind(key, node)
            refusals = [
                r
                for r in scheduler.filter(key, node)
                if not (
                    scheduler.nodes[node]["spec"].get("unschedulable")
                    and "unschedulable" in r.reason
                    or scheduler.pods[key]["metadata"]["ownerReferences"][0]["kind"] == "Node"
                    and r.plugin == "TaintToleration"
                )
            ]
            scheduler.bind(key, node)
            wrong += [(key, node, r) for r in refusals]
    assert not wrong, wrong[:5]


def test_generator_is_deterministic_and_sized() -> None:
    a, b = generate_kubernetes_mixed(60, seed=3), generate_kubernetes_mixed(60, seed=3)
    assert a == b
    assert a != generate_kubernetes_mixed(60, seed=4)
    kinds = Counter(item["kind"] for item in a["items"])
    assert kinds["Node"] == 60
    assert 8 * 60 <= kinds["Pod"] <= 14 * 60
    assert kinds["PodDisruptionBudget"] and kinds["PodGroup"] and kinds["Namespace"]
    resources = {r for item in a["items"] if item["kind"] == "Node" for r in item["status"]["allocatable"]}
    assert {"nvidia.com/gpu", "nvidia.com/gpu.shared", "rdma/rdma_shared_device_a", "nvidia.com/mig-1g.10gb"} <= resources
