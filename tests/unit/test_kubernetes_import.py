"""``planner import kubernetes``: quantities, requests, the mapping of a small hand-written kubectl List,
a plan on the result that respects taints, and exit 2 on bad input."""

from __future__ import annotations

import copy
import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner import rules
from planner.adapters.kubernetes import import_kubernetes
from planner.adapters.kubernetes_config import DEFAULT_CONFIG, ImportConfig, load_config
from planner.adapters.kubernetes_objects import KubeError, parse_quantity, pdb_max_unavailable, pod_requests
from planner.cli import app
from planner.cluster import SnapshotError
from planner.engine import DefragOptions, plan_defrag
from planner.plans import parse_plan
from planner.snapshot import load_cluster

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "instances" / "kubernetes" / "gpu-cluster.json"
GIB = 2**30


# ----------------------------------------------------------------------------------------------
# Quantities and requests
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("64Gi", 64 * GIB),
        ("1.5", Fraction(3, 2)),
        ("1e3", 1000),
        ("100Ki", 102400),
        ("1E", 10**18),
        ("1E3", 1000),
        ("2.5e-3", Fraction(1, 400)),
        (".5", Fraction(1, 2)),
        ("3k", 3000),
        ("1M", 10**6),
        ("128974848", 128974848),
        ("129e6", 129_000_000),
        ("123Mi", 123 * 2**20),
        ("250u", Fraction(1, 4000)),
        ("+4", 4),
        (8, 8),
    ],
)
def test_quantities_parse_exactly(text: Any, value: Any) -> None:
    assert parse_quantity(text, "q") == value


@pytest.mark.parametrize("text", ["5x", "1KB", "Gi", "1.2.3", "1e", "", "1 Gi", "1e99"])
def test_bad_quantities_name_the_field(text: str) -> None:
    with pytest.raises(KubeError, match=r"^spec\.cpu: "):
        parse_quantity(text, "spec.cpu")


def container(cpu: str | None = None, memory: str | None = None, gpu: str | None = None, **extra: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    limits = {"nvidia.com/gpu": gpu} if gpu else {}
    return {"name": "c", "resources": {"requests": requests, "limits": limits}, **extra}


def test_requests_take_the_larger_of_init_peak_and_running_sum_plus_overhead() -> None:
    spec = {
        "containers": [container("1", "1Gi", gpu="2"), container("500m", "3Gi")],
        "initContainers": [container("4", "1Gi"), container("100m", "6Gi")],
        "overhead": {"cpu": "250m", "memory": "128Mi"},
    }
    requests = pod_requests(spec)
    assert requests["cpu"] == Fraction(4) + Fraction(1, 4)  # init 4 > 1.5 running
    assert requests["memory"] == 6 * GIB + 128 * 2**20  # init 6Gi > 4Gi running
    assert requests["nvidia.com/gpu"] == 2  # the limit stands in for a missing request


def test_sidecars_run_alongside_later_init_containers_and_the_app() -> None:
    spec = {
        "initContainers": [container("1", "1Gi", restartPolicy="Always"), container("2", "1Gi")],
        "containers": [container("1", "1Gi")],
    }
    requests = pod_requests(spec)
    assert requests["cpu"] == 3  # init peak: sidecar 1 + init 2; running: 1 + 1
    assert requests["memory"] == 2 * GIB


def test_import_gives_the_same_bytes_whatever_the_hash_seed(tmp_path: Path) -> None:
    """The requests of a pod with init containers came out in set order, which Python's hash seed
    changes from one process to the next: the same objects gave different snapshot bytes (and
    ``snapshot_sha256``) on each run."""
    import subprocess
    import sys

    resources = {
        "cpu": "1",
        "memory": "1Gi",
        "ephemeral-storage": "1Gi",
        "nvidia.com/gpu": "1",
        "example.com/a": "1",
        "example.com/b": "1",
        "example.com/c": "1",
    }
    items = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n0"},
            "status": {
                "allocatable": {
                    "cpu": "64",
                    "memory": "512Gi",
                    "pods": "110",
                    "ephemeral-storage": "1Ti",
                    "nvidia.com/gpu": "8",
                    **{f"example.com/{x}": "8" for x in "abc"},
                }
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p0", "namespace": "default"},
            "spec": {
                "nodeName": "n0",
                "containers": [{"name": "c", "resources": {"requests": resources}}],
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            },
            "status": {"phase": "Running"},
        },
    ]
    source = tmp_path / "list.json"
    source.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    outputs = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-m", "planner.cli", "import", "kubernetes", str(source)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert done.returncode == 0, done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1


def test_negative_request_is_refused() -> None:
    with pytest.raises(KubeError, match=r"spec\.containers\[0\]\.resources\.requests\.cpu: negative quantity"):
        pod_requests({"containers": [container("-1")]})


def test_disruption_budgets_resolve_against_the_selected_pods() -> None:
    assert pdb_max_unavailable({"maxUnavailable": 1}, 3) == 1
    assert pdb_max_unavailable({"maxUnavailable": "25%"}, 10) == 3  # rounded up
    assert pdb_max_unavailable({"minAvailable": "50%"}, 5) == 2  # 5 - ceil(2.5)
    assert pdb_max_unavailable({"minAvailable": 4}, 3) == 0
    assert pdb_max_unavailable({}, 3) == 2  # minAvailable 1


def test_the_printed_default_config_is_the_default() -> None:
    assert load_config(DEFAULT_CONFIG) == ImportConfig()
    result = runner.invoke(app, ["import", "kubernetes", "--print-config"])
    assert result.exit_code == 0 and result.stdout == DEFAULT_CONFIG


# ----------------------------------------------------------------------------------------------
# A small kubectl List, field by field
# ----------------------------------------------------------------------------------------------


def k_node(name: str, gpus: int = 8, labels: dict | None = None, taints: list | None = None, **spec: Any) -> dict[str, Any]:
    allocatable = {"cpu": "63500m", "memory": "500Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or [], **spec},
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def k_pod(
    name: str,
    node: str | None,
    namespace: str = "ml",
    owner: tuple[str, str] | None = ("Job", "train"),
    gpu: str | None = "1",
    cpu: str = "2",
    memory: str = "16Gi",
    labels: dict | None = None,
    annotations: dict | None = None,
    phase: str = "Running",
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}, "annotations": annotations or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": owner[0], "name": owner[1], "controller": True, "apiVersion": "v1", "uid": "u"}]
    body = {"containers": [container(cpu, memory, gpu)], **spec}
    if node:
        body["nodeName"] = node
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": body, "status": {"phase": phase}}


TAINT = {"key": "dedicated", "value": "infer", "effect": "NoSchedule"}
PRODUCT = "nvidia.com/gpu.product"


def small_list() -> dict[str, Any]:
    """Three GPU nodes (one tainted for inference), a DaemonSet pod, a StatefulSet with a PDB and
    hostname anti-affinity, an inference pod with node affinity and tolerations, a pending pod, a
    finished pod, and small training pods that a defrag would like to pack anywhere."""
    leaf = "network.topology.nvidia.com/leaf"
    nodes = [
        k_node("a100-0", labels={PRODUCT: "A100", leaf: "leaf-1", "network.topology.nvidia.com/spine": "sp"}),
        k_node("a100-1", labels={PRODUCT: "A100", leaf: "leaf-1", "network.topology.nvidia.com/spine": "sp"}),
        k_node("infer-0", gpus=4, labels={PRODUCT: "L40S", leaf: "leaf-2"}, taints=[TAINT, {"key": "soft", "effect": "PreferNoSchedule"}]),
    ]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]
        }
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": PRODUCT, "operator": "In", "values": ["L40S"]}]},
                    {"matchExpressions": [{"key": PRODUCT, "operator": "Exists"}, {"key": "spot", "operator": "DoesNotExist"}]},
                ]
            }
        }
    }
    pods = [
        k_pod("exporter-a100-0", "a100-0", namespace="mon", owner=("DaemonSet", "exporter"), gpu=None, cpu="500m", memory="512Mi"),
        k_pod("db-0", "a100-0", owner=("StatefulSet", "db"), gpu=None, labels={"app": "db"}, affinity=anti),
        k_pod("db-1", "a100-1", owner=("StatefulSet", "db"), gpu=None, labels={"app": "db"}, affinity=anti),
        k_pod(
            "serve-0",
            "infer-0",
            owner=("ReplicaSet", "serve-5c6d"),
            labels={"pod-template-hash": "5c6d"},
            tolerations=[
                {"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            affinity=affinity,
            priority=1000,
        ),
        k_pod("train-0", "a100-1", owner=("Job", "train-0"), gpu="1", priority=-10, priorityClassName="spot"),
        k_pod("train-1", "infer-0", owner=("Job", "train-1"), gpu="1", priority=-10, tolerations=[{"key": "dedicated", "operator": "Exists"}]),
        k_pod("train-2", "a100-0", owner=("Job", "train-2"), gpu="2"),
        k_pod("pending-0", None, owner=("Job", "big"), gpu="8", phase="Pending", priority=500),
        k_pod("done-0", "a100-0", owner=("Job", "done"), phase="Succeeded"),
    ]
    budget = {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": {"name": "db", "namespace": "ml"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": "50%"},
    }
    return {"apiVersion": "v1", "kind": "List", "items": [*nodes, *pods, budget]}


def imported(doc: dict[str, Any] | None = None, config: ImportConfig | None = None) -> Any:
    return import_kubernetes([(json.dumps(doc or small_list()), "cluster.json")], config)


def test_small_list_field_by_field() -> None:
    result = imported()
    cluster = result.cluster
    nodes = {n.name: n for n in cluster.nodes}
    pods = {p.name: p for p in cluster.pods}
    jobs = {j.name: j for j in cluster.jobs}
    a100 = nodes["a100-0"]
    # the DaemonSet pod's requests are reserved on its node: 63.5 - 0.5 CPUs, 500 - 0.5 GiB
    assert (a100.gpus, a100.cpus, a100.memory_gib, a100.gpu_model) == (8, 63.0, 499.5, "A100")
    assert (a100.asw, a100.spine) == ("leaf-1", "sp") and nodes["infer-0"].spine is None
    assert [(t.key, t.value, t.effect) for t in nodes["infer-0"].taints] == [("dedicated", "infer", "NoSchedule"), ("soft", "", "PreferNoSchedule")]
    assert nodes["a100-1"].cpus == 63.5
    assert "exporter-a100-0" not in pods and "done-0" not in pods
    assert result.summary.reserved == 1 and result.summary.skipped["Succeeded pods"] == 1
    db0 = pods["db-0"]
    assert (db0.namespace, db0.job, db0.node, db0.gpus, db0.cpus, db0.memory_gib) == ("ml", "ml/StatefulSet/db", "a100-0", 0, 2.0, 16.0)
    assert db0.anti_affinity == pods["db-1"].anti_affinity == ["anti:ml/app=db"]
    assert jobs["ml/StatefulSet/db"].disruption.max_unavailable == 1  # 2 pods, minAvailable 50%
    serve = pods["serve-0"]
    assert serve.job == "ml/Deployment/serve" and (serve.priority, serve.priority_value) == ("HP", 1000)
    assert [(t.key, t.operator, t.value, t.effect) for t in serve.tolerations] == [
        ("dedicated", "Equal", "infer", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
    ]
    assert [[(r.key, r.operator, r.values) for r in term] for term in serve.node_affinity] == [
        [(PRODUCT, "In", ["L40S"])],
        [(PRODUCT, "Exists", []), ("spot", "DoesNotExist", [])],
    ]
    assert (pods["train-0"].priority, pods["train-0"].priority_value) == ("LP", -10)
    assert pods["train-2"].priority_value is None and pods["train-2"].priority == "HP"
    pending = pods["pending-0"]
    assert pending.node is None and pending.gpus == 8 and not pending.locked
    assert not any(p.locked for p in cluster.pods)
    assert result.warnings == []


def test_descheduler_rules_lock_pods() -> None:
    doc = small_list()
    doc["items"] += [
        k_pod("bare", "a100-1", owner=None, gpu=None),
        k_pod("scratch", "a100-1", owner=("Job", "s"), gpu=None, volumes=[{"name": "tmp", "emptyDir": {}}]),
        k_pod("critical", "a100-1", owner=("Deployment", "c"), gpu=None, priority=2000000000),
        k_pod("pinned", "a100-1", owner=("Job", "p"), gpu=None, annotations={"planner.io/locked": "true"}),
        k_pod("evictable", "a100-1", owner=None, gpu=None, annotations={"descheduler.alpha.kubernetes.io/evict": ""}),
    ]
    pods = {p.name: p for p in imported(doc).cluster.pods}
    assert all(pods[name].locked for name in ("bare", "scratch", "critical", "pinned"))
    assert not pods["evictable"].locked
    allowed = imported(doc, ImportConfig(evict_local_storage=True)).cluster
    assert not next(p for p in allowed.pods if p.name == "scratch").locked
    as_locked = imported(doc, ImportConfig(node_bound_pods="locked")).cluster
    exporter = next(p for p in as_locked.pods if p.name == "exporter-a100-0")
    assert exporter.locked and exporter.job is None


def test_inexpressible_rules_lock_placed_pods_with_a_warning() -> None:
    doc = small_list()
    spread = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]
    doc["items"].append(k_pod("spread-0", "a100-1", owner=("Job", "sp"), gpu=None, topologySpreadConstraints=spread))
    result = imported(doc)
    assert next(p for p in result.cluster.pods if p.name == "spread-0").locked
    assert result.warnings == [
        ("Pod ml/spread-0: spec.topologySpreadConstraints[0]: a DoNotSchedule topology spread is not modelled; the pod is locked where it stands")
    ]


def test_gang_labels_and_kueue_topology_make_one_job() -> None:
    doc = small_list()
    for i in range(2):
        doc["items"].append(
            k_pod(
                f"js-{i}",
                None,
                owner=("Job", f"js-workers-{i}"),
                phase="Pending",
                labels={"jobset.sigs.k8s.io/jobset-name": "pretrain"},
                annotations={"kueue.x-k8s.io/podset-required-topology": "network.topology.nvidia.com/leaf"},
            )
        )
    cluster = imported(doc).cluster
    job = next(j for j in cluster.jobs if j.name == "ml/jobset.sigs.k8s.io/jobset-name=pretrain")
    assert (job.topology.level, job.topology.mode) == ("asw", "required")
    assert {p.name for p in cluster.pods if p.job == job.name} == {"js-0", "js-1"}


def test_budget_over_two_jobs_is_split_and_an_empty_one_warns() -> None:
    doc = small_list()
    doc["items"].append(
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "all-train", "namespace": "ml"},
            "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, "maxUnavailable": 3},
        }
    )
    doc["items"].append(
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "nothing", "namespace": "ml"},
            "spec": {"selector": {"matchLabels": {"app": "ghost"}}, "maxUnavailable": 1},
        }
    )
    result = imported(doc)
    jobs = {j.name: j for j in result.cluster.jobs}
    shares = {jobs[name].disruption.max_unavailable for name in ("ml/Job/train-0", "ml/Job/train-1", "ml/Job/train-2", "ml/Job/big")}
    assert shares == {0}  # 3 split over 4 jobs, rounded down
    assert any(w.startswith("PodDisruptionBudget ml/all-train: spec.selector: selects pods of 5 jobs") for w in result.warnings)
    assert "PodDisruptionBudget ml/nothing: spec.selector: selects no pod in the input; the budget constrains nothing" in result.warnings


def test_defrag_of_the_imported_list_respects_taints(tmp_path: Path) -> None:
    source = tmp_path / "cluster.json"
    source.write_text(json.dumps(small_list()))
    snapshot, plan_file = tmp_path / "snapshot.json", tmp_path / "plan.json"
    result = runner.invoke(app, ["import", "kubernetes", str(source), "--out", str(snapshot)])
    assert result.exit_code == 0, result.output
    assert "3 nodes; pods: 6 placed, 1 pending" in result.stdout
    # --allow-product-change: train-1 (L40S) may join the A100 pods, so only the taint keeps pods off infer-0
    result = runner.invoke(app, ["defrag", str(snapshot), "--out", str(plan_file), "-o", "json", "--allow-product-change"])
    assert result.exit_code == 0, result.output
    cluster = load_cluster(snapshot)
    plan = parse_plan(plan_file.read_text())
    assert {m.to for m in assert_moves_tolerated(cluster, plan)} == {"a100-0"}
    assert runner.invoke(app, ["validate", str(snapshot), str(plan_file)]).exit_code == 0
    # the taint is what keeps them off: without it the plan packs untolerating pods onto infer-0
    untainted = cluster.model_copy(update={"nodes": [n.model_copy(update={"taints": []}) for n in cluster.nodes]})
    assert "infer-0" in {m.to for m in plan_defrag(untainted, DefragOptions()).moves()}


def assert_moves_tolerated(cluster: Any, plan: Any) -> list[Any]:
    nodes = {n.name: n for n in cluster.nodes}
    pods = {p.name: p for p in cluster.pods}
    moves = plan.moves()
    for move in moves:
        assert not rules.untolerated_taints(pods[move.pod], nodes[move.to]), move
        assert rules.node_affinity_matches(pods[move.pod], nodes[move.to]), move
    return moves


def test_realistic_example_imports_and_plans_within_its_rules(tmp_path: Path) -> None:
    snapshot, plan_file = tmp_path / "snapshot.json", tmp_path / "plan.json"
    result = runner.invoke(app, ["import", "kubernetes", str(EXAMPLE), "--out", str(snapshot)])
    assert result.exit_code == 0, result.output
    assert "30 DaemonSet/mirror/static pod(s) reserved" in result.stdout
    cluster = load_cluster(snapshot)
    assert sum(1 for n in cluster.nodes if n.taints) == 4 and sum(1 for p in cluster.pods if p.locked) == 2
    nodes, pods, jobs = ({x.name: x for x in items} for items in (cluster.nodes, cluster.pods, cluster.jobs))
    # time-sliced L40S: 16 replicas of 4 GPUs; a notebook on one replica holds a quarter of a GPU
    assert nodes["l40s-ts-0"].gpus == 4 and [pods[f"notebook-{i}"].gpus for i in range(3)] == [0.25] * 3
    # MIG 1g.10gb slices of an A100: a model of their own, one device per slice
    mig = "NVIDIA-A100-SXM4-80GB-MIG-1g.10gb"
    assert (nodes["a100-mig-0"].gpu_model, nodes["a100-mig-0"].gpus) == (mig, 14)
    assert all(pods[f"embed-5c4b7-{i}"].gpu_models == [mig] for i in range(3)) and pods["embed-5c4b7-2"].node is None
    # a Volcano PodGroup's minMember; controllers' pods start one by one
    assert jobs["research/scheduling.k8s.io/group-name=sweep"].min_available == 2
    assert jobs["serving/Deployment/embed"].min_available == 1 and jobs["platform/StatefulSet/etcd"].min_available == 1
    result = runner.invoke(app, ["defrag", str(snapshot), "--out", str(plan_file), "-o", "json"])
    assert result.exit_code == 0, result.output
    moves = assert_moves_tolerated(cluster, parse_plan(plan_file.read_text()))
    assert moves  # the example is fragmented enough to move something
    assert runner.invoke(app, ["validate", str(snapshot), str(plan_file)]).exit_code == 0


def test_yaml_input_and_stdin_are_read() -> None:
    import yaml

    result = runner.invoke(app, ["import", "kubernetes", "-"], input=yaml.safe_dump(small_list()))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["nodes"][0]["name"] == "a100-0"


def test_single_objects_in_several_files_are_accepted(tmp_path: Path) -> None:
    files = []
    for i, item in enumerate(small_list()["items"]):
        files.append(tmp_path / f"{i}.json")
        files[-1].write_text(json.dumps(item))
    result = runner.invoke(app, ["import", "kubernetes", *map(str, files)])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["pods"]) == 7


# ----------------------------------------------------------------------------------------------
# Bad input: exit 2 naming the object and field, never a traceback
# ----------------------------------------------------------------------------------------------


def import_error(tmp_path: Path, text: str, *options: str) -> str:
    source = tmp_path / "in.json"
    source.write_text(text)
    result = runner.invoke(app, ["import", "kubernetes", str(source), *options])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.stderr.replace("\n", " ")


def with_item(change: Any) -> str:
    doc = small_list()
    change(doc["items"])
    return json.dumps(doc)


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    assert "neither JSON nor YAML" in import_error(tmp_path, "{ not json: [")
    assert "expected a Kubernetes List or object, got list" in import_error(tmp_path, "[1, 2]")
    assert "kind: missing" in import_error(tmp_path, '{"metadata": {}}')
    assert "no Node objects in the input" in import_error(tmp_path, '{"kind": "List", "items": []}')


def test_unknown_quantity_suffix_names_pod_and_field(tmp_path: Path) -> None:
    def bad(items: list) -> None:
        items[4]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "16GB"

    message = import_error(tmp_path, with_item(bad))
    assert "error: Pod ml/db-0: spec.containers[0].resources.requests.memory: '16GB': unknown quantity suffix 'GB'" in message


def test_negative_quantity_names_node_and_field(tmp_path: Path) -> None:
    def bad(items: list) -> None:
        items[0]["status"]["allocatable"]["cpu"] = "-4"

    assert "Node a100-0: status.allocatable.cpu: negative quantity '-4'" in import_error(tmp_path, with_item(bad))


def test_pod_on_unknown_node(tmp_path: Path) -> None:
    def bad(items: list) -> None:
        items[5]["spec"]["nodeName"] = "ghost"

    assert "Pod ml/db-1: spec.nodeName: unknown node 'ghost'" in import_error(tmp_path, with_item(bad))


def test_bad_budget_and_conflicting_duplicates(tmp_path: Path) -> None:
    def bad(items: list) -> None:
        items[-1]["spec"]["minAvailable"] = "half"

    assert "PodDisruptionBudget ml/db: spec.minAvailable: must be a whole number or a percentage" in import_error(tmp_path, with_item(bad))

    def twice(items: list) -> None:
        other = copy.deepcopy(items[5])
        other["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
        items.append(other)

    assert "Pod ml/db-1: given twice with different contents" in import_error(tmp_path, with_item(twice))


def test_malformed_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    good = json.dumps(small_list())
    config = tmp_path / "config.yaml"
    config.write_text("gpu_resource: [nvidia.com/gpu]\n")
    assert "gpu_resource: unknown field; did you mean 'gpu_resources'?" in import_error(tmp_path, good, "--config", str(config))
    config.write_text("priority: {lp_below: high}\n")
    assert "priority.lp_below: must be a whole number" in import_error(tmp_path, good, "--config", str(config))
    config.write_text("gpu_resources: [a\n")
    assert "not valid YAML" in import_error(tmp_path, good, "--config", str(config))
    assert "no such file" in import_error(tmp_path, good, "--config", str(tmp_path / "nope.yaml"))


def test_unknown_kinds_and_fields_warn_but_import(tmp_path: Path) -> None:
    doc = small_list()
    doc["items"].append({"kind": "Service", "metadata": {"name": "web", "namespace": "ml"}})
    doc["items"][5]["spec"]["tolerations"] = [{"key": "x", "operator": "Lt", "value": "3"}]
    source = tmp_path / "in.json"
    source.write_text(json.dumps(doc))
    result = runner.invoke(app, ["import", "kubernetes", str(source)])
    assert result.exit_code == 0, result.output
    assert "warning: Service ml/web: kind: 'Service' is not read by the importer" in result.stderr
    assert "warning: Pod ml/db-1: spec.tolerations[0]: toleration" in result.stderr


def test_snapshot_error_is_raised_by_the_library_too() -> None:
    with pytest.raises(SnapshotError, match="no Node objects"):
        import_kubernetes([('{"kind": "PodList", "items": []}', "x")])


def test_one_sided_anti_affinity_is_encoded_exactly() -> None:
    """web avoids db pods; db pods (no term of their own) may share a node with each other."""
    doc = small_list()
    avoid_db = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"tier": "cache"}}}]
        }
    }
    doc["items"] += [
        k_pod("web-0", None, owner=("Job", "web"), gpu=None, phase="Pending", affinity=avoid_db),
        k_pod("web-1", None, owner=("Job", "web"), gpu=None, phase="Pending", affinity=avoid_db),
        k_pod("cache-0", None, owner=("Job", "cache"), gpu=None, phase="Pending", labels={"tier": "cache"}),
        k_pod("cache-1", None, owner=("Job", "cache"), gpu=None, phase="Pending", labels={"tier": "cache"}),
    ]
    pods = {p.name: p for p in imported(doc).cluster.pods}

    def conflict(*names: str) -> bool:
        return bool(rules.anti_affinity_conflicts([pods[n] for n in names]))

    assert conflict("web-0", "cache-0") and conflict("web-1", "cache-1")
    assert not conflict("web-0", "web-1") and not conflict("cache-0", "cache-1")


def test_pending_pod_with_an_inexpressible_rule_warns() -> None:
    doc = small_list()
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu-count", "operator": "Gt", "values": ["4"]}]}]
            }
        }
    }
    doc["items"].append(k_pod("picky", None, owner=("Job", "picky"), phase="Pending", affinity=affinity))
    result = imported(doc)
    picky = next(p for p in result.cluster.pods if p.name == "picky")
    assert picky.node_affinity is None and not picky.locked
    assert result.warnings == [
        (
            "Pod ml/picky: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator: operator 'Gt' is not modelled; left out: "
            "a plan may place the pod where Kubernetes would not"
        )
    ]


def _anti_pod(name: str, namespace: str, node: str, ns_selector: dict | None = None) -> dict:
    term: dict = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
    if ns_selector is not None:
        term["namespaceSelector"] = ns_selector
    owner = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": f"db-{namespace}", "uid": "u", "controller": True}]
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "db"}, "ownerReferences": owner},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        },
        "status": {"phase": "Running"},
    }


def test_a_namespace_selector_in_anti_affinity_is_resolved_with_namespace_objects() -> None:
    """prod-a's db selects the db pods of namespaces labelled tier=prod (prod-a, prod-b), not dev's."""
    nodes = [{"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "8", "memory": "8Gi"}}} for i in range(3)]
    pods = [_anti_pod("a", "prod-a", "n0", {"matchLabels": {"tier": "prod"}}), _anti_pod("b", "prod-b", "n1"), _anti_pod("d", "dev", "n2")]
    spaces = [{"kind": "Namespace", "metadata": {"name": n, "labels": {"tier": t}}} for n, t in (("prod-a", "prod"), ("prod-b", "prod"), ("dev", "dev"))]
    found = import_kubernetes([(json.dumps({"kind": "List", "items": [*nodes, *pods, *spaces]}), "in.json")])
    by_name = {p.name: p for p in found.cluster.pods}
    assert rules.anti_affinity_conflicts([by_name["a"], by_name["b"]])  # a's term selects b (tier=prod)
    assert not rules.anti_affinity_conflicts([by_name["a"], by_name["d"]])  # dev is not selected
    assert found.warnings == []
    # without Namespace objects the term binds every namespace (never fewer pods than Kubernetes), with a warning
    bare = import_kubernetes([(json.dumps({"kind": "List", "items": [*nodes, *pods]}), "in.json")])
    by_name = {p.name: p for p in bare.cluster.pods}
    assert rules.anti_affinity_conflicts([by_name["a"], by_name["d"]])
    assert len(bare.warnings) == 1 and "no Namespace objects in the input" in bare.warnings[0]
