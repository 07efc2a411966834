"""Plans an operator can apply: koordinator PodMigrationJobs and a wave-by-wave kubectl script.

The PodMigrationJobs are checked against a subset of koordinator's published CRD
(``tests/support/pod_migration_job_schema.py``). The kubectl script runs against a fake ``kubectl`` on
PATH that records every call in order (``tests/support/fake_kubectl.py``).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import Cluster, Node, Pod
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.plans import DefragPlan, parse_plan
from planner.render.kubernetes import pod_migration_jobs
from planner.render.kubernetes_waves import kubectl_script, podmigrationjob_yaml
from tests.support.fake_kubectl import run_script
from tests.support.pod_migration_job_schema import check_pod_migration_job

runner = CliRunner()


def _plan() -> tuple[Cluster, DefragPlan]:
    cluster = generate_asi(nodes=40, seed=2)
    plan = plan_defrag(cluster, DefragOptions())
    assert len(plan.waves) >= 2, "the test needs a plan of several waves"
    return cluster, plan


def test_pod_migration_jobs_follow_the_crd_and_pin_each_move_to_its_node() -> None:
    cluster, plan = _plan()
    objects = pod_migration_jobs(plan, cluster)
    moves = [(w, m) for w, wave in enumerate(plan.waves, start=1) for m in wave]
    assert len(objects) == len(moves)
    pods = {p.name: p for p in cluster.pods}
    for obj, (w, move) in zip(objects, moves):
        check_pod_migration_job(obj)
        assert obj["spec"]["mode"] == "ReservationFirst"
        assert obj["spec"]["podRef"]["name"] == move.pod and obj["metadata"]["labels"]["planner.io/wave"] == str(w)
        template = obj["spec"]["reservationOptions"]["template"]["spec"]["template"]["spec"]
        (term,) = template["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert term["matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "In", "values": [move.to]}]
        requests = template["containers"][0]["resources"]["requests"]
        assert requests["nvidia.com/gpu"] == str(int(pods[move.pod].gpus))
    assert len({o["metadata"]["name"] for o in objects}) == len(objects), "object names collide"
    assert list(yaml.safe_load_all(podmigrationjob_yaml(plan, cluster))) == objects


def test_a_long_pod_name_still_gives_a_valid_object_name() -> None:
    nodes = [Node(name="n0", gpus=4, cpus=8, memory_gib=32), Node(name="n1", gpus=4, cpus=8, memory_gib=32)]
    long = "x" * 250 + "_UPPER"
    cluster = Cluster(nodes=nodes, pods=[Pod(name=long, gpus=1, cpus=1, memory_gib=1.5, node="n0"), Pod(name="b", gpus=2, cpus=1, memory_gib=1, node="n1")])
    plan = plan_defrag(cluster, DefragOptions())
    (obj,) = pod_migration_jobs(plan, cluster)
    check_pod_migration_job(obj)
    assert obj["spec"]["podRef"]["name"] == long


def test_the_kubectl_script_parses_and_runs_wave_by_wave(tmp_path: Path) -> None:
    cluster, plan = _plan()
    script = kubectl_script(plan, cluster)
    assert subprocess.run(["bash", "-n", "-c", script], capture_output=True).returncode == 0
    done, calls = run_script(tmp_path, script, cluster=cluster)
    assert done.returncode == 0, done.stderr
    objects = pod_migration_jobs(plan, cluster)
    expected: list[str] = []
    for w, wave in enumerate(plan.waves, start=1):
        members = [o["metadata"]["name"] for o in objects if o["metadata"]["labels"]["planner.io/wave"] == str(w)]
        names = " ".join(m.pod for m in wave)  # one namespace: one check per wave, the pods in the wave's order
        expected += [f"get pods {names} -n default --ignore-not-found --no-headers -o custom-columns=NAME:.metadata.name,UID:.metadata.uid,NODE:.spec.nodeName"]
        expected += ["apply -f -", *[f"  applied {n}" for n in members]]
        expected += [f"get podmigrationjob/{n} -o jsonpath={{.status.phase}}" for n in members]
    assert calls == expected


def test_dry_run_validates_on_the_server_and_waits_for_nothing(tmp_path: Path) -> None:
    cluster, plan = _plan()
    done, calls = run_script(tmp_path, kubectl_script(plan, cluster), cluster=cluster, DRY_RUN="1")
    assert done.returncode == 0, done.stderr
    applies = [c for c in calls if c.startswith("apply")]
    assert applies == ["apply --dry-run=server -f -"] * len(plan.waves)
    assert not [c for c in calls if c.startswith("get podmigrationjob")]
    assert sum(c.startswith("get pods") for c in calls) == len(plan.waves), "the pods are checked before each wave even in a dry run"


def test_a_failed_migration_stops_the_script_before_the_next_wave(tmp_path: Path) -> None:
    cluster, plan = _plan()
    first = plan.waves[0][0].pod
    done, calls = run_script(tmp_path, kubectl_script(plan, cluster), cluster=cluster, FAKE_FAIL=first)
    assert done.returncode != 0 and "PodMigrationJobs failed; stopping before the next wave" in done.stderr
    assert sum(c.startswith("apply") for c in calls) == 1


def _timeless(plan: dict) -> dict:
    """A plan document without its wall time (two runs of the same plan differ only there)."""
    return {**plan, "report": {k: v for k, v in plan["report"].items() if k != "wall_s"}}


def test_output_formats_on_the_command_line(tmp_path: Path) -> None:
    cluster, _ = _plan()
    path = tmp_path / "s.json"
    path.write_text(cluster.model_dump_json())
    as_json = runner.invoke(app, ["defrag", str(path), "-o", "json"])
    as_yaml = runner.invoke(app, ["defrag", str(path), "-o", "yaml"])
    assert as_json.exit_code == 0 and as_yaml.exit_code == 0
    assert _timeless(yaml.safe_load(as_yaml.stdout)) == _timeless(json.loads(as_json.stdout))
    plan = parse_plan(as_json.stdout)
    wide = runner.invoke(app, ["defrag", str(path), "-o", "wide"])
    for wave in plan.waves:
        for move in wave:
            assert re.search(rf"default/{re.escape(move.pod)}\s+{move.from_}\s+{move.to}\b", wide.stdout), move
    older = runner.invoke(app, ["defrag", str(path), "--format", "json"])  # the older flag
    assert _timeless(json.loads(older.stdout)) == _timeless(json.loads(as_json.stdout))
    script = runner.invoke(app, ["defrag", str(path), "-o", "kubectl"])
    assert script.exit_code == 0 and script.stdout.startswith("#!/usr/bin/env bash")


FAKE_KUBECTL_RAW = r"""#!/usr/bin/env bash
# records each call and the body it is given
echo "$*" >> "$FAKE_LOG"
if [[ "$1" == "create" ]]; then cat >> "$FAKE_LOG"; echo >> "$FAKE_LOG"; fi
exit 0
"""


@pytest.mark.parametrize("command", ["allocate", "preempt"])
def test_preempt_and_allocate_plans_become_evictions_then_bindings(tmp_path: Path, command: str) -> None:
    from planner.cluster import Job

    cluster = generate_asi(nodes=20, seed=1, pending_jobs=1)
    if command == "allocate":  # a small pending job that fits without preemption
        small = [Pod(name=f"small-{i}", job="small", namespace="team-a", gpus=1, cpus=1, memory_gib=1) for i in range(2)]
        cluster = cluster.model_copy(update={"pods": [*cluster.pods, *small], "jobs": [*cluster.jobs, Job(name="small")]})
    path = tmp_path / "s.json"
    path.write_text(cluster.model_dump_json())
    pending = next(p.job for p in cluster.pods if p.node is None)
    args = ["allocate", str(path), "--jobs", "small"] if command == "allocate" else ["preempt", str(path), "--job", pending]
    plan = json.loads(runner.invoke(app, [*args, "-o", "json"]).stdout)
    script = runner.invoke(app, [*args, "-o", "kubectl"])
    assert script.exit_code == 0, script.output
    assert subprocess.run(["bash", "-n", "-c", script.stdout], capture_output=True).returncode == 0
    done, calls = run_script(tmp_path, script.stdout, FAKE_KUBECTL_RAW)
    assert done.returncode == 0, done.stderr
    evictions = [c for c in calls if c.startswith("create --raw") and c.split()[2].endswith("/eviction")]
    bindings = [c for c in calls if c.startswith("create --raw") and c.split()[2].endswith("/binding")]
    victims = plan.get("victims", [])
    assert [c.split("/pods/")[1].split("/")[0] for c in evictions] == [v["pod"] for v in victims]
    assert [c.split("/pods/")[1].split("/")[0] for c in bindings] == [p["pod"] for p in plan["placements"]]
    assert plan["placements"], "the plan must start the job"
    bodies = [json.loads(line) for line in calls if line.startswith("{")]
    targets = [b["target"]["name"] for b in bodies if b["kind"] == "Binding"]
    assert targets == [p["node"] for p in plan["placements"]]
    header = [line for line in script.stdout.splitlines() if line.startswith("#")]
    if victims:
        assert f"{len(victims)} eviction(s), then {len(plan['placements'])} binding(s)" in header[1]
    else:  # the header speaks of evictions only when there are some
        assert f"{len(plan['placements'])} binding(s) and no eviction" in header[1]
        assert not any("Eviction API" in line for line in header), header
    if victims:  # every eviction, then a wait for each victim, before the first binding
        first_binding = calls.index(bindings[0])
        assert all(calls.index(e) < first_binding for e in evictions)
        assert sum(c.startswith("wait --for=delete") for c in calls[:first_binding]) == len(victims)
    dry, dry_calls = run_script(tmp_path, script.stdout, FAKE_KUBECTL_RAW, DRY_RUN="1")
    assert dry.returncode == 0
    assert all(c.split()[2].endswith("?dryRun=All") for c in dry_calls if c.startswith("create"))
    assert not [c for c in dry_calls if c.startswith("wait")]


def test_kubectl_output_is_refused_for_two_plans_side_by_side(tmp_path: Path) -> None:
    cluster = generate_asi(nodes=20, seed=1, pending_jobs=1)
    path = tmp_path / "s.json"
    path.write_text(cluster.model_dump_json())
    bad = runner.invoke(app, ["allocate", str(path), "--method", "compare", "--time-limit", "5", "-o", "kubectl"])
    assert bad.exit_code == 2 and "-o kubectl: renders one plan" in bad.output, bad.output
    pmj = runner.invoke(app, ["allocate", str(path), "-o", "podmigrationjob"])
    assert pmj.exit_code == 2 and "-o podmigrationjob: renders a defrag plan's moves" in pmj.output


def test_namespaced_pods_keep_their_kubernetes_name_and_tolerations() -> None:
    from planner.cluster import Taint, Toleration

    nodes = [
        Node(name="n0", gpus=4, cpus=8, memory_gib=32),
        Node(name="n1", gpus=4, cpus=8, memory_gib=32, taints=[Taint(key="gpu", value="a100", effect="NoSchedule")]),
    ]
    mover = Pod(
        name="team-a/x",
        namespace="team-a",
        gpus=1,
        cpus=1,
        memory_gib=1,
        node="n0",
        tolerations=[Toleration(key="gpu", operator="Equal", value="a100", effect="NoSchedule")],
    )
    cluster = Cluster(nodes=nodes, pods=[mover, Pod(name="y", gpus=2, cpus=1, memory_gib=1, node="n1")])
    plan = plan_defrag(cluster, DefragOptions())
    (obj,) = pod_migration_jobs(plan, cluster)
    check_pod_migration_job(obj)
    assert obj["spec"]["podRef"] == {"kind": "Pod", "apiVersion": "v1", "namespace": "team-a", "name": "x"}
    template = obj["spec"]["reservationOptions"]["template"]["spec"]["template"]["spec"]
    assert template["tolerations"] == [{"key": "gpu", "operator": "Equal", "value": "a100", "effect": "NoSchedule"}]


def test_reservations_ask_for_the_pods_resources_by_name() -> None:
    """Issue 40: a MIG pod's reservation asks for its slices, a time-sliced one for its replicas under
    the resource it requests, an RDMA pod for its device; never nvidia.com/gpu where the pod asks none."""
    nodes = [
        Node(
            name=f"mig-{i}", gpu_model="A100-MIG-1g.10gb", gpus=7, cpus=32, memory_gib=128, resources={"nvidia.com/mig-1g.10gb": 7, "rdma/hca": 4, "pods": 110}
        )
        for i in range(2)
    ]
    pods = [
        Pod(name="a", gpus=2, cpus=1, memory_gib=1, node="mig-0", gpu_models=["A100-MIG-1g.10gb"], requests={"nvidia.com/mig-1g.10gb": 2, "rdma/hca": 1}),
        Pod(name="b", gpus=1, cpus=1, memory_gib=1, node="mig-1", gpu_models=["A100-MIG-1g.10gb"], requests={"nvidia.com/mig-1g.10gb": 1}),
    ]
    cluster = Cluster(nodes=nodes, pods=pods)
    plan = plan_defrag(cluster, DefragOptions())
    (obj,) = pod_migration_jobs(plan, cluster)
    requests = obj["spec"]["reservationOptions"]["template"]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
    moved = {p.name: p for p in pods}[obj["spec"]["podRef"]["name"]]
    assert {k: v for k, v in requests.items() if k not in ("cpu", "memory")} == {k: str(v) for k, v in moved.requests.items()}
    assert "nvidia.com/gpu" not in requests
