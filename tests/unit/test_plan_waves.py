"""Issue 42, items 2 and 3: PodMigrationJobs in wave order, the stale-plan guard of the kubectl script,
and a plan rendered from anywhere (``planner render``), refused against a snapshot it does not belong to.

The kubectl script runs with bash against the fake ``kubectl`` of ``tests/support/fake_kubectl.py``
(a real executable on PATH that records its calls and answers ``get pods`` from a state file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from planner.adapters.kubernetes import import_kubernetes
from planner.cli import app
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.plans import DefragPlan, dump_plan, parse_plan
from planner.render.kubernetes import pod_migration_jobs
from planner.render.kubernetes_waves import kubectl_script, objects_of_stream, podmigrationjob_yaml, wave_files
from planner.validate.belongs import snapshot_mismatches
from tests.support.fake_kubectl import pod_state, run_script
from tests.support.paths import REPO
from tests.support.pod_migration_job_schema import check_pod_migration_job

runner = CliRunner()
GPU_CLUSTER = REPO / "instances" / "kubernetes" / "gpu-cluster.json"


def _cluster() -> Cluster:
    """A generated cluster whose pods have Kubernetes UIDs, as imported ones do."""
    cluster = generate_asi(nodes=40, seed=2)
    return cluster.model_copy(update={"pods": [p.model_copy(update={"uid": f"uid-{p.name}"}) for p in cluster.pods]})


def _plan(cluster: Cluster) -> DefragPlan:
    plan = plan_defrag(cluster, DefragOptions(max_moves_per_wave=10, max_nodes_per_wave="100%"))  # waves of 10 moves, not the default budget's
    assert len(plan.waves) >= 3 and len(plan.waves[1]) >= 2, "the tests need waves of several moves"
    return plan


def _paths(tmp_path: Path, cluster: Cluster, plan: DefragPlan) -> tuple[Path, Path]:
    snapshot, plan_file = tmp_path / "snapshot.json", tmp_path / "plan.json"
    snapshot.write_text(cluster.model_dump_json())
    plan_file.write_text(dump_plan(plan))
    return snapshot, plan_file


# -- the plan records what the snapshot said ---------------------------------------------------


def test_the_importer_keeps_each_pods_uid_and_the_plan_records_it_with_the_source_node() -> None:
    cluster = import_kubernetes([(GPU_CLUSTER.read_text(), "gpu-cluster.json")]).cluster
    uids = {i["metadata"]["name"]: i["metadata"]["uid"] for i in json.loads(GPU_CLUSTER.read_text())["items"] if i["kind"] == "Pod"}
    assert all(pod.uid == uids[pod.name] for pod in cluster.pods)
    plan = plan_defrag(cluster, DefragOptions())
    pods = {p.name: p for p in cluster.pods}
    assert plan.moves() and all(m.uid == uids[m.pod] and m.from_ == pods[m.pod].node for m in plan.moves())
    written = json.loads(dump_plan(plan))["waves"][0][0]
    assert written["uid"] == uids[written["pod"]]


def test_a_pod_moved_twice_carries_its_uid_on_its_first_move_only() -> None:
    cluster = _cluster()
    plan = plan_defrag(cluster, DefragOptions(move_once=False, trim="off"))
    seen: set[str] = set()
    for move in plan.moves():
        assert move.uid == (None if move.pod in seen else f"uid-{move.pod}")
        seen.add(move.pod)


def test_a_snapshot_without_uids_writes_no_uid_field() -> None:
    plan = plan_defrag(generate_asi(nodes=40, seed=2), DefragOptions())
    assert '"uid"' not in dump_plan(plan)


# -- the kubectl script's stale-plan guard -----------------------------------------------------


def test_the_script_stops_before_wave_2_naming_a_replaced_and_a_moved_pod_after_wave_1_completed(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    replaced, moved = plan.waves[1][0], plan.waves[1][1]
    elsewhere = next(n.name for n in cluster.nodes if n.name not in (moved.from_, moved.to))
    state = pod_state(cluster, **{replaced.pod: ("uid-new-0001", replaced.from_), moved.pod: (moved.uid, elsewhere)})
    done, calls = run_script(tmp_path, kubectl_script(plan, cluster), pods=state)
    assert done.returncode == 3, done.stderr
    first = [o["metadata"]["name"] for o in pod_migration_jobs(plan, cluster) if o["metadata"]["labels"]["planner.io/wave"] == "1"]
    assert [c for c in calls if c.startswith("apply")] == ["apply -f -"], "wave 1 applied, wave 2 not"
    assert sorted(c.split()[-1] for c in calls if c.startswith("  applied ")) == sorted(first)
    waited = [c.split()[1].removeprefix("podmigrationjob/") for c in calls if c.startswith("get podmigrationjob/")]
    assert sorted(waited) == sorted(first), "wave 1 was waited for until every job succeeded"
    assert calls[-1].startswith("get pods "), "the last call is wave 2's check"
    stderr = done.stderr
    assert f"wave 2/{len(plan.waves)} not applied" in stderr
    assert f"default/{replaced.pod}: replaced (UID now uid-new-0001, the plan's uid-{replaced.pod})" in stderr
    assert f"default/{moved.pod}: moved (now on {elsewhere}, the plan moves it from {moved.from_})" in stderr
    assert stderr.count("default/") == 2, "only the two pods that changed are named"
    assert "waves 1 to 1 are done" in stderr
    assert f"kubectl delete podmigrationjobs -l planner.io/plan={first[0].split('-')[1]}" in stderr


def test_a_deleted_pod_stops_the_first_wave_before_anything_is_applied(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    gone = plan.waves[0][0]
    state = "".join(line for line in pod_state(cluster).splitlines(keepends=True) if line.split()[1] != gone.pod)
    done, calls = run_script(tmp_path, kubectl_script(plan, cluster), pods=state)
    assert done.returncode == 3 and f"default/{gone.pod}: deleted (the plan moves it from {gone.from_})" in done.stderr
    assert "nothing was applied" in done.stderr and not [c for c in calls if c.startswith("apply")]


def test_without_uids_the_script_checks_the_node_only(tmp_path: Path) -> None:
    cluster = generate_asi(nodes=40, seed=2)
    plan = plan_defrag(cluster, DefragOptions(max_moves_per_wave=10, max_nodes_per_wave="100%"))  # waves of 10 moves, not the default budget's
    done, _ = run_script(tmp_path, kubectl_script(plan, cluster), cluster=cluster)  # the fake gives every pod some UID
    assert done.returncode == 0, done.stderr
    move = plan.waves[0][0]
    elsewhere = next(n.name for n in cluster.nodes if n.name != move.from_)
    done, _ = run_script(tmp_path, kubectl_script(plan, cluster), pods=pod_state(cluster, **{move.pod: ("any", elsewhere)}))
    assert done.returncode == 3 and f"default/{move.pod}: moved (now on {elsewhere}" in done.stderr


# -- PodMigrationJobs: one stream with its header, or one file per wave -------------------------


def test_the_stream_says_how_to_apply_it_wave_by_wave_and_labels_every_object() -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    text = podmigrationjob_yaml(plan, cluster)
    header = text[: text.index("\napiVersion")]
    assert all(line.startswith("#") for line in header.splitlines())
    objects = objects_of_stream(text)
    assert objects == pod_migration_jobs(plan, cluster)
    digest = objects[0]["metadata"]["labels"]["planner.io/plan"]
    for w in range(1, len(plan.waves) + 1):
        assert f"#   kubectl apply -f FILE -l planner.io/wave={w}\n" in header
        assert f"planner.io/plan={digest},planner.io/wave={w} --for=jsonpath='{{.status.phase}}'=Succeeded" in header
    assert f"kubectl delete podmigrationjobs -l planner.io/plan={digest}" in header
    for obj in objects:
        check_pod_migration_job(obj)
        assert obj["metadata"]["labels"]["planner.io/plan"] == digest
        assert obj["metadata"]["annotations"]["planner.io/pod-uid"] == f"uid-{obj['spec']['podRef']['name']}"


def test_one_file_per_wave_with_an_index(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = plan_defrag(cluster, DefragOptions(max_moves_per_wave=3))
    assert len(plan.waves) >= 10, "the names are zero-padded from ten waves on"
    snapshot, _ = _paths(tmp_path, cluster, plan)
    out = tmp_path / "waves"
    done = runner.invoke(app, ["defrag", str(snapshot), "--max-moves-per-wave", "3", "-o", "podmigrationjob", "--out-dir", str(out)])
    assert done.exit_code == 0, done.output
    names = sorted(p.name for p in out.iterdir())
    waves = [f"wave-{w:02d}.yaml" for w in range(1, len(plan.waves) + 1)]
    assert names == sorted([*waves, "index.txt"])
    objects = pod_migration_jobs(plan, cluster)
    for w, name in enumerate(waves, start=1):
        docs = list(yaml.safe_load_all((out / name).read_text()))
        assert docs == [o for o in objects if o["metadata"]["labels"]["planner.io/wave"] == str(w)]
    index = (out / "index.txt").read_text()
    assert [line.split()[0] for line in index.splitlines() if line.startswith("  wave-")] == waves
    assert index.index("kubectl apply -f wave-01.yaml") < index.index("planner.io/wave=1 --for") < index.index("kubectl apply -f wave-02.yaml")
    assert wave_files(objects) == {name: (out / name).read_text() for name in names}


def test_a_non_empty_out_dir_is_refused_unless_forced(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    snapshot, plan_file = _paths(tmp_path, cluster, plan)
    out = tmp_path / "waves"
    out.mkdir()
    (out / "wave-9.yaml").write_text("stale: from another plan\n")
    (out / "notes.md").write_text("mine\n")
    for command in (["defrag", str(snapshot)], ["render", str(plan_file), "--snapshot", str(snapshot)]):
        done = runner.invoke(app, [*command, "-o", "podmigrationjob", "--out-dir", str(out)])
        assert done.exit_code == 2, done.output
        assert f"error: --out-dir: '{out}' exists and is not empty (notes.md, wave-9.yaml)" in done.output and "Traceback" not in done.output
    assert (out / "wave-9.yaml").exists()
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "--out-dir", str(out), "--force"])
    assert done.exit_code == 0, done.output
    assert not (out / "wave-9.yaml").exists(), "a wave file of another plan is removed"
    assert (out / "notes.md").read_text() == "mine\n", "files the planner did not write are left alone"
    assert sorted(p.name for p in out.iterdir()) == sorted([*(f"wave-{w}.yaml" for w in range(1, len(plan.waves) + 1)), "index.txt", "notes.md"])
    wrong = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl", "--out-dir", str(tmp_path / "x")])
    assert wrong.exit_code == 2 and "--out-dir: writes PodMigrationJobs one file per wave; use it with -o podmigrationjob, not -o kubectl" in wrong.output


# -- planner render ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["kubectl", "podmigrationjob", "wide", "yaml", "json"])
def test_render_prints_what_the_planning_command_printed(tmp_path: Path, fmt: str) -> None:
    cluster = _cluster()
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(cluster.model_dump_json())
    plan_file = tmp_path / "plan.json"
    planned = runner.invoke(app, ["defrag", str(snapshot), "--executor", "inline", "--out", str(plan_file), "-o", fmt])
    assert planned.exit_code == 0, planned.output
    rendered = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", fmt])
    assert rendered.exit_code == 0, rendered.output
    assert rendered.stdout == planned.stdout and "warning" not in rendered.stderr


def _mismatch(cluster: Cluster, plan: DefragPlan, change: str) -> tuple[Cluster, str]:
    move = plan.waves[1][0]
    i = next(i for i, p in enumerate(cluster.pods) if p.name == move.pod)
    pods = list(cluster.pods)
    path = "waves[1][0]"
    if change == "uid":
        pods[i] = pods[i].model_copy(update={"uid": "uid-other"})
        expected = f"{path}.uid: the plan's pod '{move.pod}' has UID 'uid-{move.pod}'; the snapshot's has UID 'uid-other' (another pod of that name)"
    elif change == "node":
        other = next(n.name for n in cluster.nodes if n.name not in (move.from_, pods[i].node))
        pods[i] = pods[i].model_copy(update={"node": other})
        expected = f"{path}.from: the plan moves pod '{move.pod}' from node '{move.from_}'; in the snapshot it is on node '{other}'"
    else:
        del pods[i]
        expected = f"{path}.pod: pod '{move.pod}' is not in the snapshot"
    return cluster.model_copy(update={"pods": pods}), expected


@pytest.mark.parametrize("change", ["uid", "node", "pod"])
def test_a_plan_rendered_against_another_snapshot_is_exit_2_naming_the_first_mismatch(tmp_path: Path, change: str) -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    other, expected = _mismatch(cluster, plan, change)
    assert snapshot_mismatches(plan, cluster) == []
    assert snapshot_mismatches(plan, other)[0] == expected
    snapshot, plan_file = _paths(tmp_path, other, plan)
    for fmt in ("kubectl", "podmigrationjob", "wide"):
        done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", fmt])
        assert done.exit_code == 2, done.output
        assert done.output.startswith(f"error: {expected}") and "--snapshot: the plan does not belong to this snapshot" in done.output
        assert "Traceback" not in done.output


def test_render_needs_the_snapshot_for_the_formats_that_read_it(tmp_path: Path) -> None:
    cluster = _cluster()
    _, plan_file = _paths(tmp_path, cluster, _plan(cluster))
    done = runner.invoke(app, ["render", str(plan_file), "-o", "kubectl"])
    assert done.exit_code == 2 and "error: --snapshot: -o kubectl needs the snapshot the plan was made from" in done.output
    table = runner.invoke(app, ["render", str(plan_file), "-o", "table"])
    assert table.exit_code == 0 and "moves" in table.stdout.lower()
    assert parse_plan(runner.invoke(app, ["render", str(plan_file), "-o", "json"]).stdout) == parse_plan(plan_file.read_text())


@pytest.mark.parametrize(
    ("generate", "command"),
    [
        (["generate", "spot", "--nodes", "40", "--seed", "1", "--pending-jobs", "2"], ["preempt", "--job", "hp-new-0"]),
        (["generate", "asi", "--nodes", "96", "--seed", "5", "--large-jobs", "3"], ["allocate", "--method", "largest-first"]),
    ],
)
def test_render_gives_the_eviction_and_binding_script_of_preempt_and_allocate_plans(tmp_path: Path, generate: list[str], command: list[str]) -> None:
    snapshot, plan_file = tmp_path / "s.json", tmp_path / "p.json"
    assert runner.invoke(app, [*generate, "--out", str(snapshot)]).exit_code == 0
    planned = runner.invoke(app, [command[0], str(snapshot), *command[1:], "--out", str(plan_file), "-o", "kubectl"])
    assert planned.exit_code == 0 and planned.stdout.startswith("#!/usr/bin/env bash"), planned.output
    rendered = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl"])
    assert rendered.exit_code == 0 and rendered.stdout == planned.stdout, rendered.output
    refused = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "podmigrationjob"])
    assert refused.exit_code == 2 and "-o podmigrationjob: renders a defrag plan's moves" in refused.output


def test_a_later_snapshot_with_the_plans_pods_unchanged_renders_with_a_warning(tmp_path: Path) -> None:
    cluster = _cluster()
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(cluster.model_dump_json())
    plan_file = tmp_path / "plan.json"
    planned = runner.invoke(app, ["defrag", str(snapshot), "--executor", "inline", "--out", str(plan_file), "-o", "kubectl"])
    assert planned.exit_code == 0, planned.output
    later = cluster.model_copy(update={"time_s": cluster.time_s + 60})
    snapshot.write_text(later.model_dump_json())
    rendered = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl"])
    assert rendered.exit_code == 0 and rendered.stdout == planned.stdout
    assert "warning: --snapshot is not the snapshot the plan was made from (report.provenance.snapshot_sha256 differs)" in rendered.stderr
