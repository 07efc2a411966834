"""Snapshot -> Kubernetes objects -> ``planner import kubernetes`` -> the same snapshot (issue 13, item 4).

The round trip holds field by field, modulo the normalisations the exporter documents
(``planner/adapters/kubernetes_export.py``), which ``expected()`` below applies to the original:

* jobs are renamed as the importer names controllers (``KubeExport.job_names``), come back in the
  order of their first pod, and jobs without pods are not carried; a budget above its job's pod
  count is clipped to it; ``min_available`` of 1 on a one-pod job or at least the job's pods comes back
  as none (the same meaning); job ``numa`` is not carried;
* anti-affinity groups are renamed after their label selectors: compared as the partition of pods
  into groups;
* ``gpu_models`` comes back as a required node-affinity expression on ``nvidia.com/gpu.product``
  (In the models, or DoesNotExist for ''), ANDed into every term;
* node labels gain ``kubernetes.io/hostname`` and the labels carrying ``gpu_model``, ``asw`` and ``spine``;
* a pod without a namespace is in ``default``; an LP pod without ``priority_value`` gets -1 (the
  default ``priority.lp_below`` less one); a pending pod's lock is not carried;
* checkpoint and start times, ``gpu_indexes``, node ``numa`` / ``power`` / ``eviction_count`` and
  ``time_s`` are not carried.

GPU shares travel as ``koordinator.sh/gpu-core`` (a share that is not a whole percent is refused);
standby pods are refused (the importer reads no standby reservation).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from planner import rules
from planner.adapters.kubernetes import import_kubernetes
from planner.adapters.kubernetes_config import ImportConfig, PriorityConfig
from planner.adapters.kubernetes_export import DaemonSet, KubeExport, export_kubernetes
from planner.adapters.kubernetes_quantities import exact
from planner.cli import app
from planner.cluster import Cluster, Disruption, Job, Node, Pod, SnapshotError, Taint, Toleration
from planner.instances.asi import generate_asi
from planner.plans import parse_plan
from planner.snapshot import load_cluster
from tests.support import strategies
from tests.support.fake_kubectl import run_script

PRODUCT = "nvidia.com/gpu.product"
LEAF, SPINE = "network.topology.nvidia.com/leaf", "network.topology.nvidia.com/spine"
EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "asi-rendered.json"
runner = CliRunner()


def round_trip(cluster: Cluster, config: ImportConfig | None = None, **options: Any) -> tuple[KubeExport, Cluster]:
    exported = export_kubernetes(cluster, config, **options)
    imported = import_kubernetes([(exported.json(), "exported.json")], config)
    # the one warning a round trip may give: a pending pod asking for a resource no node offers (a GPU
    # where no node has GPUs, a named resource no node lists): it can start nowhere
    back = imported.cluster
    # and a budget's note that the job's pending pods spend it (the disruption controller's count,
    # which the exported budget is written for: the job's max_unavailable comes back as it was)
    offered = {k for n in back.nodes for k, v in (n.resources or {}).items() if v > 0}
    unplaceable = [f"Pod {p.namespace or 'default'}/{p.name}" for p in back.pods if p.node is None and {k for k, v in p.requests.items() if v > 0} - offered]
    spent = [w for w in imported.warnings if w.startswith("PodDisruptionBudget ") and "which spends its budget" in w]
    warnings = [w for w in imported.warnings if w not in spent]
    assert [w.split(": ")[0] for w in warnings] == unplaceable
    assert all(w.endswith(": no node offers it; the pod cannot be placed") for w in warnings)
    return exported, imported.cluster


# ----------------------------------------------------------------------------------------------
# The comparison, field by field
# ----------------------------------------------------------------------------------------------


def asks_mig(pod: Pod) -> bool:
    """A pod allowed MIG models only (in these tests, all of one profile's): it asks for slices."""
    return bool(pod.gpu_models) and all("-MIG-" in m for m in pod.gpu_models)


def expected_affinity(pod: Pod) -> list[list[tuple[str, str, list[str]]]] | None:
    terms = [[(r.key, r.operator, list(r.values)) for r in term] for term in pod.node_affinity or [[]]]
    if pod.gpu_models and not asks_mig(pod):
        models = sorted(m for m in set(pod.gpu_models) if m)
        alternatives = ([[(PRODUCT, "In", models)]] if models else []) + ([[(PRODUCT, "DoesNotExist", [])]] if "" in pod.gpu_models else [])
        terms = [term + extra for term in terms for extra in alternatives]
    return None if terms == [[]] else terms


def affinity_of(pod: Pod) -> list[list[tuple[str, str, list[str]]]] | None:
    return None if pod.node_affinity is None else [[(r.key, r.operator, list(r.values)) for r in term] for term in pod.node_affinity]


def node_view(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "gpus": node.gpus,
        "cpus": node.cpus,
        "memory_gib": node.memory_gib,
        "gpu_model": node.gpu_model,
        "asw": node.asw,
        "spine": node.spine,
        "schedulable": node.schedulable,
        "taints": node.taints,
        "labels": node.labels,
    }


def expected_node(node: Node) -> dict[str, Any]:
    labels = {**node.labels, "kubernetes.io/hostname": node.name}
    mig = node.gpu_model.startswith(f"{node.labels.get(PRODUCT)}-MIG-")  # the product label names the whole GPU
    for key, value in ((PRODUCT, None if mig else node.gpu_model), (LEAF, node.asw), (SPINE, node.spine)):
        if value:
            labels[key] = value
    return {**node_view(node), "labels": labels}


def pod_view(pod: Pod, job: str | None) -> dict[str, Any]:
    return {
        "name": pod.name,
        "namespace": pod.namespace,
        "node": pod.node,
        "job": job,
        "gpus": pod.gpus,
        "cpus": pod.cpus,
        "memory_gib": pod.memory_gib,
        "priority": pod.priority,
        "priority_value": pod.priority_value,
        "locked": pod.locked,
        "node_selector": pod.node_selector,
        "tolerations": pod.tolerations,
        "standby": pod.standby,
    }


def expected_pod(pod: Pod, job_names: dict[str, str]) -> dict[str, Any]:
    value = -1 if pod.priority == "LP" and pod.priority_value is None else pod.priority_value
    return {
        **pod_view(pod, job_names.get(pod.job) if pod.job else None),
        "namespace": pod.namespace or "default",
        "priority_value": value,
        "locked": pod.locked and pod.node is not None,
    }


def groups_of(cluster: Cluster) -> set[frozenset[str]]:
    members: dict[str, set[str]] = defaultdict(set)
    for pod in cluster.pods:
        for group in pod.anti_affinity:
            members[group].add(pod.name)
    return {frozenset(m) for m in members.values()}


def jobs_view(jobs: list[Job], sizes: dict[str, int], running: dict[str, int], names: dict[str, str] | None = None) -> dict[str, Any]:
    """Each job's topology, budget and minimum; a budget is clipped to the job's running pods (the
    disruption controller allows no more disruptions than it has healthy pods)."""
    out = {}
    for job in jobs:
        if not sizes.get(job.name):
            continue
        budget = None if job.disruption is None else min(job.disruption.max_unavailable, running.get(job.name, 0))
        least = job.min_available if job.min_available is not None and job.min_available < sizes[job.name] else None
        out[names[job.name] if names else job.name] = (job.topology, budget, least)
    return out


def assert_same_snapshot(original: Cluster, exported: KubeExport, back: Cluster) -> None:
    """``back`` is ``original`` up to the documented normalisations (module docstring)."""
    assert [node_view(n) for n in back.nodes] == [expected_node(n) for n in original.nodes]
    assert all(n.numa is None and n.power is None and n.eviction_count == 0 for n in back.nodes)
    assert [pod_view(p, p.job) for p in back.pods] == [expected_pod(p, exported.job_names) for p in original.pods]
    assert [affinity_of(p) for p in back.pods] == [expected_affinity(p) for p in original.pods]
    assert [p.gpu_models for p in back.pods] == [p.gpu_models if asks_mig(p) else [] for p in original.pods]
    assert all(p.checkpoint_s is None and p.started_s is None and p.gpu_indexes is None for p in back.pods)
    # resources by name, host ports: what the original lists comes back as it was
    for a, b in zip(original.nodes, back.nodes):
        assert a.resources is None or {k: (b.resources or {}).get(k, 0) for k in a.resources} == a.resources, a.name
    assert [{k: b.requests.get(k) for k in a.requests} for a, b in zip(original.pods, back.pods)] == [a.requests for a in original.pods]
    assert [b.host_ports for b in back.pods] == [a.host_ports for a in original.pods]
    assert groups_of(back) == groups_of(original)
    sizes = defaultdict(int)
    for pod in original.pods:
        if pod.job:
            sizes[pod.job] += 1
    back_sizes = {job: sum(1 for p in back.pods if p.job == job) for job in {p.job for p in back.pods}}
    running = {job: sum(1 for p in original.pods if p.job == job and p.node is not None) for job in sizes}
    back_running = {job: sum(1 for p in back.pods if p.job == job and p.node is not None) for job in back_sizes}
    assert jobs_view(back.jobs, back_sizes, back_running) == jobs_view(original.jobs, sizes, running, exported.job_names)
    # the rules agree on every pod and node: where it may arrive and whom it may not meet
    # (a resource a node does not offer is a static rule on the way back, capacity 0 before: compare both together)
    for a, b in zip(original.pods, back.pods):
        assert [rules.may_arrive(a, n) and rules.pods_fit(n, [], [a]) for n in original.nodes] == [
            rules.may_arrive(b, n) and rules.pods_fit(n, [], [b]) for n in back.nodes
        ], a.name
    pairs = list(zip(original.pods, back.pods))
    for i, (a1, b1) in enumerate(pairs):
        for a2, b2 in pairs[i + 1 :]:
            assert bool(rules.anti_affinity_conflicts([a1, a2])) == bool(rules.anti_affinity_conflicts([b1, b2]))


# ----------------------------------------------------------------------------------------------
# Generated clusters carrying every field the objects carry
# ----------------------------------------------------------------------------------------------

TAINTS = [
    Taint(key="dedicated", value="infer", effect="NoSchedule"),
    Taint(key="gpu", effect="NoExecute"),
    Taint(key="soft", value="x", effect="PreferNoSchedule"),
]
TOLERATIONS = [Toleration(key="dedicated", value="infer", effect="NoSchedule"), Toleration(key="gpu", operator="Exists"), Toleration(operator="Exists")]
AFFINITIES = [
    None,
    [[{"key": "pool", "operator": "In", "values": ["train", "infer"]}]],
    [[{"key": "zone", "operator": "Exists"}], [{"key": "pool", "operator": "NotIn", "values": ["infer"]}, {"key": "spot", "operator": "DoesNotExist"}]],
]


@st.composite
def k8s_clusters(draw: Any) -> Cluster:
    """A consistent cluster using every field Kubernetes objects carry (pods placed only where the rules allow)."""
    nodes = [
        Node(
            name=f"n-{i}",
            gpus=draw(st.sampled_from([0, 1, 2, 4, 8])),
            cpus=draw(st.sampled_from([4.0, 63.5, 12.3, 96.0, 0.25])),
            memory_gib=draw(st.sampled_from([0.0, 16.0, 0.1, 511.75, 1024.0])),
            gpu_model=draw(st.sampled_from(["A100", "H800", ""])),
            asw=draw(st.sampled_from(["leaf-0", "leaf-1", None])),
            spine=draw(st.sampled_from(["sp-0", None])),
            labels=draw(st.sampled_from([{}, {"pool": "train"}, {"pool": "infer", "zone": "z1"}])),
            schedulable=draw(st.booleans() | st.just(True)),
            taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=repr)),
        )
        for i in range(draw(st.integers(1, 6)))
    ]
    namespaces = [None, "default", "ml", "serving"]
    jobs, job_ns = [], {}
    for j in range(draw(st.integers(0, 4))):
        budget = draw(st.sampled_from([None, 0, 1, 2, 5]))
        jobs.append(
            Job(
                name=f"job-{j}",
                topology=draw(st.sampled_from([None, {"level": "asw", "mode": "required"}, {"level": "spine", "mode": "preferred"}])),
                disruption=None if budget is None else {"max_unavailable": budget},
                min_available=draw(st.sampled_from([None, None, 1, 2, 3])),
            )
        )
        job_ns[f"job-{j}"] = draw(st.sampled_from(namespaces))
    by_job = {j.name: j for j in jobs}
    pods: list[Pod] = []
    residents: dict[str, list[Pod]] = {n.name: [] for n in nodes}
    job_nodes: dict[str, list[Node]] = defaultdict(list)
    for i in range(draw(st.integers(0, 14))):
        job = draw(st.sampled_from([None, *by_job]))
        priority = draw(st.sampled_from(["HP", "LP"]))
        values = [None, 0, 1000, 2_000_000_500] if priority == "HP" else [None, -1, -100]
        pod = Pod(
            name=f"p-{i}",
            job=job,
            namespace=job_ns[job] if job else draw(st.sampled_from(namespaces)),
            gpus=draw(st.sampled_from([0, 1, 1, 2, 4, 0.25, 0.5, 0.07])),
            cpus=draw(st.sampled_from([0.0, 0.5, 1.0, 2.25, 0.001, 0.3])),
            memory_gib=draw(st.sampled_from([0.0, 0.5, 4.0, 0.3, 32.0])),
            gpu_models=draw(st.sampled_from([[], ["A100"], ["A100", "H800"], ["", "A100"], [""]])),
            priority=priority,
            priority_value=draw(st.sampled_from(values)),
            locked=draw(st.booleans()),
            node_selector=draw(st.sampled_from([{}, {}, {"pool": "train"}])),
            anti_affinity=draw(st.sampled_from([[], [], ["svc-a"], ["svc-a", "svc-b"], ["anti:ml/app=db"]])),
            tolerations=draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2, unique_by=repr)),
            node_affinity=draw(st.sampled_from(AFFINITIES)),
        )
        target = draw(st.sampled_from([None, *nodes]))
        if (
            target is not None
            and rules.pods_fit(target, residents[target.name], [pod])
            and (job is None or rules.job_topology_ok(by_job[job], [*job_nodes[job], target]))
        ):
            pod = pod.model_copy(update={"node": target.name})
            residents[target.name].append(pod)
            if job:
                job_nodes[job].append(target)
        pods.append(pod)
    return Cluster(nodes=nodes, pods=pods, jobs=jobs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k8s_clusters())
def test_export_then_import_gives_the_same_snapshot(cluster: Cluster) -> None:
    exported, back = round_trip(cluster)
    assert_same_snapshot(cluster, exported, back)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(k8s_clusters())
def test_daemonsets_and_an_lp_class_config_round_trip_too(cluster: Cluster) -> None:
    """DaemonSet pods are added to the List and taken off again; with an LP priority class the LP
    pods without a value keep none (the comparison then expects None, not -1)."""
    config = ImportConfig(priority=PriorityConfig(lp_below=0, lp_classes=["spot"]))
    daemons = [DaemonSet("node-exporter", "monitoring", 0.1, 0.125), DaemonSet("nvidia-device-plugin", "gpu-operator", 0.05, 0.0625, True)]
    exported, back = round_trip(cluster, config, daemonsets=daemons)
    lp_free = [p for p in cluster.pods if p.priority == "LP" and p.priority_value is None]
    assert all(next(b for b in back.pods if b.name == p.name).priority_value is None for p in lp_free)
    relabelled = cluster.model_copy(update={"pods": [p.model_copy(update={"priority_value": -1}) if p in lp_free else p for p in cluster.pods]})
    back = back.model_copy(
        update={"pods": [p.model_copy(update={"priority_value": -1}) if p.priority == "LP" and p.priority_value is None else p for p in back.pods]}
    )
    assert_same_snapshot(relabelled, exported, back)
    pods = [i for i in exported.document["items"] if i["kind"] == "Pod" and i["metadata"]["namespace"] == "monitoring"]
    assert len(pods) == len(cluster.nodes)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.clusters())
def test_the_shared_strategy_round_trips_or_is_refused_by_name(cluster: Cluster) -> None:
    """tests/support/strategies.py draws shares and standby pods: refused, naming the field; else the round trip holds."""
    unsupported = [f"pods[{i}]." for i, p in enumerate(cluster.pods) if p.standby or (exact(p.gpus) * 100).denominator != 1]
    if any(p.requests for p in cluster.pods):  # a Kubernetes node states its allocatable of every resource
        unsupported += [f"nodes[{i}].resources" for i, n in enumerate(cluster.nodes) if n.resources is None]
    if unsupported:
        with pytest.raises(SnapshotError) as err:
            export_kubernetes(cluster)
        assert any(p.startswith(unsupported[0]) for p in err.value.problems), err.value.problems
        return
    exported, back = round_trip(cluster)
    assert_same_snapshot(cluster, exported, back)
    if any(p.checkpoint_s is not None for p in cluster.pods):
        assert any(d.startswith("pods[*].checkpoint_s: not carried") for d in exported.dropped)


@pytest.mark.parametrize(("nodes", "seed"), [(20, 0), (40, 3), (80, 7)])
def test_generated_asi_clusters_round_trip(nodes: int, seed: int) -> None:
    cluster = generate_asi(nodes=nodes, seed=seed)
    exported, back = round_trip(cluster, daemonsets=[DaemonSet("node-exporter", "monitoring", 0.1, 0.125)])
    assert_same_snapshot(cluster, exported, back)
    assert sum(p.locked for p in back.pods) == sum(p.locked for p in cluster.pods if p.node) > 0


def test_the_comparison_can_fail() -> None:
    """A dropped toleration, a lost budget or a moved pod is caught."""
    cluster = generate_asi(nodes=20, seed=0)
    cluster = cluster.model_copy(update={"jobs": [j.model_copy(update={"disruption": Disruption(max_unavailable=1)}) for j in cluster.jobs]})
    exported, back = round_trip(cluster)
    assert_same_snapshot(cluster, exported, back)
    placed = next(i for i, p in enumerate(back.pods) if p.node)
    other = next(n.name for n in back.nodes if n.name != back.pods[placed].node)
    broken = [
        back.model_copy(update={"pods": [p.model_copy(update={"node": other}) if i == placed else p for i, p in enumerate(back.pods)]}),
        back.model_copy(update={"jobs": [j.model_copy(update={"disruption": None}) for j in back.jobs]}),
        back.model_copy(update={"nodes": [back.nodes[0].model_copy(update={"cpus": back.nodes[0].cpus + 0.001}), *back.nodes[1:]]}),
    ]
    for wrong in broken:
        with pytest.raises(AssertionError):
            assert_same_snapshot(cluster, exported, wrong)


def test_an_imported_snapshot_exports_to_the_same_jobs_and_names() -> None:
    """Job names the importer wrote map back to their controllers and gangs (idempotent round trip)."""
    source = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "gpu-cluster.json"
    first = import_kubernetes([(source.read_text(), "gpu-cluster.json")]).cluster
    exported, back = round_trip(first)
    assert exported.job_names == {j.name: j.name for j in first.jobs if any(p.job == j.name for p in first.pods)}
    assert_same_snapshot(first, exported, back)


def test_export_command_writes_a_list_import_reads_back(tmp_path: Path) -> None:
    """``planner export kubernetes`` (planner/cli/export.py): dropped fields as warnings, a share finer than 1% exits 2."""
    source = Path(__file__).resolve().parents[2] / "instances" / "asi-500.json"
    listed, snapshot = tmp_path / "list.json", tmp_path / "snapshot.json"
    result = runner.invoke(app, ["export", "kubernetes", str(source), "--out", str(listed)])
    assert result.exit_code == 0, result.output
    assert "warning: pods[*].checkpoint_s: not carried" in result.stderr
    assert runner.invoke(app, ["import", "kubernetes", str(listed), "--out", str(snapshot)]).exit_code == 0
    original = load_cluster(source)
    assert_same_snapshot(original, export_kubernetes(original), load_cluster(snapshot))
    shares = tmp_path / "shares.json"
    shares.write_text(two_nodes(gpus=0.125).model_dump_json())
    result = runner.invoke(app, ["export", "kubernetes", str(shares)])
    assert result.exit_code == 2 and "pods[0].gpus: a share of 0.125 GPU" in result.stderr and "Traceback" not in result.output


# ----------------------------------------------------------------------------------------------
# What Kubernetes cannot carry: refused by name
# ----------------------------------------------------------------------------------------------


def two_nodes(**pod: Any) -> Cluster:
    nodes = [Node(name="a", gpus=8, cpus=64, memory_gib=256), Node(name="b", gpus=8, cpus=64, memory_gib=256)]
    return Cluster(nodes=nodes, pods=[Pod(**{"name": "p", "gpus": 1, "cpus": 1, "node": "a", **pod})], jobs=[])


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        (two_nodes(gpus=0.125), "pods[0].gpus: a share of 0.125 GPU is not a whole number of koordinator.sh/gpu-core (100 per GPU)"),
        (two_nodes(standby=True), "pods[0].standby: a standby pod"),
        (two_nodes(name="Pod_1"), "pods[0].name: 'Pod_1' is not a Kubernetes object name"),
        (two_nodes(priority="LP", priority_value=5), "pods[0].priority_value: an LP pod of priority 5 reads back as HP"),
        (
            Cluster(nodes=[Node(name="a", gpus=1, cpus=1, memory_gib=1, gpu_model="A100", labels={PRODUCT: "H800"})]),
            "nodes[0].labels.nvidia.com/gpu.product: 'H800' contradicts the node's own field ('A100')",
        ),
        (
            Cluster(nodes=[Node(name="a", gpus=1, cpus=1, memory_gib=1, labels={"fabric.topograph.run/tier-0": "x"})]),
            "nodes[0].labels.fabric.topograph.run/tier-0: the importer reads this label as the node's asw, which is null",
        ),
    ],
)
def test_what_kubernetes_cannot_carry_is_refused_by_name(cluster: Cluster, message: str) -> None:
    with pytest.raises(SnapshotError) as err:
        export_kubernetes(cluster)
    assert any(p.startswith(message) for p in err.value.problems), err.value.problems


def test_a_job_over_two_namespaces_is_refused() -> None:
    nodes = [Node(name="a", gpus=8, cpus=64, memory_gib=256)]
    pods = [Pod(name="p", job="j", namespace="x", gpus=1, cpus=1), Pod(name="q", job="j", namespace="y", gpus=1, cpus=1)]
    with pytest.raises(SnapshotError, match=r"jobs\[0\]: job 'j' has pods in namespaces x, y"):
        export_kubernetes(Cluster(nodes=nodes, pods=pods, jobs=[Job(name="j")]))


# ----------------------------------------------------------------------------------------------
# The rendered example: import it, plan, and run the kubectl script
# ----------------------------------------------------------------------------------------------


def test_the_rendered_example_is_current() -> None:
    spec = importlib.util.spec_from_file_location("render_asi", EXAMPLE.with_name("render_asi.py"))
    render_asi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render_asi)
    assert json.loads(EXAMPLE.read_text()) == render_asi.build()


def test_the_rendered_example_imports_and_its_kubectl_plan_runs_in_wave_order(tmp_path: Path) -> None:
    items = json.loads(EXAMPLE.read_text())["items"]
    kinds = {(i["kind"], (i["metadata"].get("ownerReferences") or [{}])[0].get("kind")) for i in items}
    assert {("Pod", "DaemonSet"), ("Pod", "StatefulSet"), ("PodDisruptionBudget", None)} <= kinds
    assert any("jobset.sigs.k8s.io/jobset-name" in (i["metadata"].get("labels") or {}) for i in items)
    assert any(i["kind"] == "Node" and i["spec"].get("taints") for i in items)
    snapshot, plan_file, script = tmp_path / "snapshot.json", tmp_path / "plan.json", tmp_path / "plan.sh"
    result = runner.invoke(app, ["import", "kubernetes", str(EXAMPLE), "--out", str(snapshot)])
    assert result.exit_code == 0 and "warning" not in result.stderr, result.output
    cluster = load_cluster(snapshot)
    assert any(j.disruption for j in cluster.jobs) and any(j.topology for j in cluster.jobs)
    result = runner.invoke(app, ["defrag", str(snapshot), "--out", str(plan_file), "-o", "kubectl"])
    assert result.exit_code == 0, result.output
    script.write_text(result.stdout)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    plan = parse_plan(plan_file.read_text())
    assert plan.moves(), "the example is fragmented enough to move something"
    assert runner.invoke(app, ["validate", str(snapshot), str(plan_file)]).exit_code == 0
    done, calls = run_script(tmp_path, script.read_text(), cluster=cluster)
    assert done.returncode == 0, done.stderr
    applied = [line.split()[-1] for line in calls if line.startswith("  applied ")]
    waves = [int(name.split("-w", 1)[1].split("-", 1)[0]) for name in applied]
    assert len(applied) == len(plan.moves()) and waves == sorted(waves)


# ----------------------------------------------------------------------------------------------
# The importer's label index (found by benchmarks/kubernetes.py: anti-affinity groups were matched
# against every pod, 100 s of a 10,000-node import)
# ----------------------------------------------------------------------------------------------

SELECTORS = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "matchLabels": st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["a", "b"]), max_size=2),
            "matchExpressions": st.lists(
                st.fixed_dictionaries(
                    {
                        "key": st.sampled_from(["app", "tier", "x"]),
                        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
                        "values": st.lists(st.sampled_from(["a", "b"]), max_size=2),
                    }
                ),
                max_size=2,
            ),
        },
    ),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["ml", "web"]), st.dictionaries(st.sampled_from(["app", "tier", "x"]), st.sampled_from(["a", "b"]))), max_size=12),
    SELECTORS,
    st.sampled_from([None, ["ml"], ["ml", "web"], ["other"]]),
)
def test_the_label_index_selects_what_a_scan_selects(pods: list, selector: Any, namespaces: Any) -> None:
    from planner.adapters.kubernetes_objects import selector_matches
    from planner.adapters.kubernetes_pod_steps import LabelIndex

    fields = [{"namespace": ns, "_labels": labels} for ns, labels in pods]
    scan = [i for i, f in enumerate(fields) if (namespaces is None or f["namespace"] in namespaces) and selector_matches(selector, f["_labels"])]
    assert LabelIndex(fields).matching(selector, namespaces) == scan
