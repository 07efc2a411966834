"""Issue 59, items 2 and 3 (and the walk's render items): where ``planner render`` and the planning
commands write (``--out-dir``, ``--out``: only where asked, never through a symbolic link), the UIDs a
plan without them takes from the snapshot, and what the kubectl script says when a wave fails, times
out or (``DRY_RUN``) finds pods not as planned in several waves.

Every symbolic link here is a dangling one inside the test's directory pointing outside it (or a link
to a file outside), as someone who can write the output directory would plant it; the scripts run
with bash against the fake ``kubectl`` of ``tests/support/fake_kubectl.py``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.cli.outdir import write_wave_files
from planner.cluster import Cluster, SnapshotError
from planner.engine import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi
from planner.plans import DefragPlan, dump_plan
from planner.render.kubernetes import pod_migration_jobs
from planner.render.kubernetes_waves import kubectl_script
from tests.support.fake_kubectl import FAKE_KUBECTL, pod_state, run_script

runner = CliRunner()


def _cluster(uids: bool = True) -> Cluster:
    """A generated 40-node cluster; with ``uids``, every pod has a Kubernetes UID, as imported ones do."""
    cluster = generate_asi(nodes=40, seed=2)
    if not uids:
        return cluster
    return cluster.model_copy(update={"pods": [p.model_copy(update={"uid": f"uid-{p.name}"}) for p in cluster.pods]})


def _plan(cluster: Cluster) -> DefragPlan:
    plan = plan_defrag(cluster, DefragOptions(max_moves_per_wave=10, max_nodes_per_wave="100%"))
    assert len(plan.waves) >= 3, "the tests need several waves"
    return plan


def _files(tmp_path: Path, cluster: Cluster, plan: DefragPlan) -> tuple[Path, Path]:
    work = tmp_path / "work"
    work.mkdir()
    snapshot, plan_file = work / "snapshot.json", work / "plan.json"
    snapshot.write_text(cluster.model_dump_json())
    plan_file.write_text(dump_plan(plan))
    return snapshot, plan_file


# -- --out-dir: new files only, never through a link ---------------------------------------------


@pytest.mark.parametrize("entry", ["index.txt", "wave-1.yaml"])
def test_a_dangling_link_in_the_out_dir_is_refused_and_nothing_is_written_outside(tmp_path: Path, entry: str) -> None:
    cluster = _cluster()
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    out, outside = tmp_path / "waves", tmp_path / "outside" / "planted.yaml"
    out.mkdir()
    outside.parent.mkdir()
    (out / entry).symlink_to(outside)
    (out / "wave-9.yaml").write_text("stale: from another plan\n")
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "--out-dir", str(out), "--force"])
    assert done.exit_code == 2, done.output
    assert f"error: --out-dir: '{out / entry}' is a symbolic link (to '{outside}')" in done.output and "Traceback" not in done.output
    assert not outside.exists(), "nothing is written where the link points"
    assert (out / entry).is_symlink() and (out / "wave-9.yaml").exists(), "refused before anything was removed"


def test_an_entry_appearing_while_the_files_are_written_is_never_written_through(tmp_path: Path) -> None:
    """The race ``--force`` leaves open (a link planted after the planner's files were removed) ends
    in exit 2 naming the entry, not in a file written where the link points: every file is created new."""
    cluster = _cluster()
    plan = _plan(cluster)
    out, outside = tmp_path / "waves", tmp_path / "outside.yaml"
    out.mkdir()
    objects = pod_migration_jobs(plan, cluster)
    real_unlink = os.unlink

    def unlink_then_plant(name: str, *, dir_fd: int | None = None) -> None:
        real_unlink(name, dir_fd=dir_fd)
        if not (out / "wave-2.yaml").is_symlink():
            os.symlink(outside, out / "wave-2.yaml")  # someone else, between the removal and the writes

    (out / "wave-1.yaml").write_text("old\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "unlink", unlink_then_plant)
        with pytest.raises(SnapshotError) as refused:
            write_wave_files(objects, str(out), True)
    assert refused.value.problems == [
        f"--out-dir: '{out / 'wave-2.yaml'}' appeared while the files were written (another process writes the directory); nothing was written through it"
    ]
    assert not outside.exists()


def test_defrag_and_render_out_dir_write_new_files_with_the_same_content(tmp_path: Path) -> None:
    cluster = _cluster()
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    first, second = tmp_path / "a", tmp_path / "b"
    assert runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "--out-dir", str(first)]).exit_code == 0
    (second).mkdir()
    (second / "index.txt").write_text("old index\n")
    (second / "wave-1.yaml").write_text("old wave\n")
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "--out-dir", str(second), "--force"])
    assert done.exit_code == 0, done.output
    assert {p.name: p.read_text() for p in first.iterdir()} == {p.name: p.read_text() for p in second.iterdir()}


# -- --out: a file only at the path given ----------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["render", "{plan}", "--snapshot", "{snapshot}", "-o", "kubectl"],
        ["render", "{plan}"],
        ["defrag", "{snapshot}", "--executor", "inline", "-o", "json"],
        ["generate", "asi", "--nodes", "8", "--seed", "1"],
    ],
)
@pytest.mark.parametrize("target", ["dangling", "file"])
def test_out_through_a_symbolic_link_is_refused(tmp_path: Path, command: list[str], target: str) -> None:
    cluster = _cluster()
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    outside = tmp_path / "outside.txt"
    if target == "file":
        outside.write_text("the operator's file\n")
    link = tmp_path / "work" / "out.txt"
    link.symlink_to(outside)
    args = [a.format(plan=plan_file, snapshot=snapshot) for a in command]
    done = runner.invoke(app, [*args, "--out", str(link)])
    assert done.exit_code == 2, done.output
    assert f"error: --out: '{link}' is a symbolic link (to '{outside}')" in done.output and "Traceback" not in done.output
    if target == "file":
        assert outside.read_text() == "the operator's file\n", "the file the link points to is untouched"
    else:
        assert not outside.exists(), "no file is created where the link points"


def test_out_writes_a_regular_file_and_through_a_link_to_a_device(tmp_path: Path) -> None:
    cluster = _cluster()
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    out = tmp_path / "work" / "apply.sh"
    out.write_text("an older script\n")
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl", "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert done.stdout == "" and f"wrote the plan as kubectl to {out}" in done.stderr
    assert out.read_text().startswith("#!/usr/bin/env bash") and not out.is_symlink()
    null = tmp_path / "work" / "null"
    null.symlink_to(os.devnull)
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl", "--out", str(null)])
    assert done.exit_code == 0, done.output
    both = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "--out", str(out), "--out-dir", str(tmp_path / "w")])
    assert both.exit_code == 2 and "error: --out and --out-dir: give one" in both.output


# -- headers name the real file, or a neutral form --------------------------------------------------


def test_headers_name_the_file_given_with_out_or_a_neutral_form(tmp_path: Path) -> None:
    cluster = _cluster()
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    render = ["render", str(plan_file), "--snapshot", str(snapshot)]
    stream = runner.invoke(app, [*render, "-o", "podmigrationjob"]).stdout
    assert "#   kubectl apply -f FILE -l planner.io/wave=1\n" in stream and "plan.yaml" not in stream
    script = runner.invoke(app, [*render, "-o", "kubectl"]).stdout
    assert "# Usage: bash SCRIPT " in script and "plan.sh" not in script
    pmj = tmp_path / "work" / "night jobs.yaml"
    assert runner.invoke(app, [*render, "-o", "podmigrationjob", "--out", str(pmj)]).exit_code == 0
    assert f"#   kubectl apply -f '{pmj}' -l planner.io/wave=2\n" in pmj.read_text()
    apply = tmp_path / "work" / "apply-today.sh"
    assert runner.invoke(app, [*render, "-o", "kubectl", "--out", str(apply)]).exit_code == 0
    assert f"# Usage: bash {apply} " in apply.read_text() and f"#        DRY_RUN=1 bash {apply} " in apply.read_text()


def test_a_file_name_with_a_newline_does_not_end_the_header_comment(tmp_path: Path) -> None:
    cluster = _cluster()
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    hostile = tmp_path / "work" / "x\ntouch pwned\n.sh"
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl", "--out", str(hostile)])
    assert done.exit_code == 0, done.output
    script = hostile.read_text()
    assert "touch pwned" not in script and "# Usage: bash SCRIPT " in script
    ran, _ = run_script(tmp_path, script, cluster=cluster, DRY_RUN="1")
    assert ran.returncode == 0, ran.stderr
    assert not list(tmp_path.rglob("pwned"))


# -- a plan without UIDs against a snapshot with them --------------------------------------------


def test_a_plan_without_uids_takes_them_from_the_snapshot_and_the_script_refuses_a_replaced_pod(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = _plan(_cluster(uids=False))  # planned from a snapshot without UIDs: no move records one
    assert plan.moves() and all(m.uid is None for m in plan.moves())
    snapshot, plan_file = _files(tmp_path, cluster, plan)
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl"])
    assert done.exit_code == 0, done.output
    replaced = plan.waves[0][0]
    state = pod_state(cluster, **{replaced.pod: ("uid-new-0001", replaced.from_)})  # same name, same node, another UID
    ran, calls = run_script(tmp_path, done.stdout, pods=state)
    assert ran.returncode == 3, ran.stderr
    assert f"default/{replaced.pod}: replaced (UID now uid-new-0001, the plan's uid-{replaced.pod})" in ran.stderr
    assert not [c for c in calls if c.startswith("apply")], "nothing applied"
    moved = len({m.pod for m in plan.moves()})
    assert f"note: the plan records no UID for {moved} pod(s) it moves" in done.stderr and "taken from --snapshot" in done.stderr
    jobs = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "podmigrationjob"]).stdout
    assert f"planner.io/pod-uid: uid-{replaced.pod}" in jobs


def test_pods_without_a_uid_anywhere_are_named_in_a_warning_by_render_and_the_script(tmp_path: Path) -> None:
    cluster = _cluster(uids=False)
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "-o", "kubectl"])
    assert done.exit_code == 0, done.output
    assert "pod(s) the plan moves have no UID in the plan or --snapshot" in done.stderr
    assert "# warning: " in done.stdout and "cannot tell a replaced pod" in done.stdout
    ran, _ = run_script(tmp_path, done.stdout, cluster=cluster)
    assert ran.returncode == 0 and "cannot tell a replaced pod" in ran.stderr


# -- the script: failures, time-outs and dry runs ----------------------------------------------------


def test_a_failed_job_stops_the_script_naming_the_wave_the_job_its_pod_and_the_abort(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    failing = plan.waves[1][0].pod
    ran, calls = run_script(tmp_path, kubectl_script(plan, cluster), cluster=cluster, FAKE_FAIL=failing)
    assert ran.returncode == 1
    job = next(o["metadata"]["name"] for o in pod_migration_jobs(plan, cluster) if o["spec"]["podRef"]["name"] == failing)
    digest = job.split("-")[1]
    assert f"wave 2/{len(plan.waves)}: PodMigrationJobs failed; stopping before the next wave:" in ran.stderr
    assert f"  podmigrationjob/{job} (pod default/{failing}): Failed" in ran.stderr
    assert "waves 1 to 1 are done" in ran.stderr
    assert f"  kubectl delete podmigrationjobs -l planner.io/plan={digest}" in ran.stderr
    assert sum(c.startswith("apply") for c in calls) == 2


def test_a_wave_not_finished_in_time_names_each_unfinished_job_and_the_abort(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    slow = plan.waves[0][0].pod
    running = FAKE_KUBECTL.replace("echo -n Failed", "echo -n Running")
    ran, _ = run_script(tmp_path, kubectl_script(plan, cluster), fake_kubectl=running, cluster=cluster, FAKE_FAIL=slow, WAIT_TIMEOUT_S="0")
    assert ran.returncode == 1
    job = next(o["metadata"]["name"] for o in pod_migration_jobs(plan, cluster) if o["spec"]["podRef"]["name"] == slow)
    assert f"wave 1/{len(plan.waves)}: not finished after 0s (WAIT_TIMEOUT_S); stopping before the next wave:" in ran.stderr
    assert f"  podmigrationjob/{job} (pod default/{slow}): Running" in ran.stderr
    assert "kubectl delete podmigrationjobs -l planner.io/plan=" in ran.stderr


def test_a_dry_run_lists_every_stale_pod_of_every_wave_then_exits_3(tmp_path: Path) -> None:
    cluster = _cluster()
    plan = _plan(cluster)
    first, last = plan.waves[0][0], plan.waves[-1][0]
    assert first.pod != last.pod
    state = pod_state(cluster, **{first.pod: ("uid-new-1", first.from_)})
    state = "".join(line for line in state.splitlines(keepends=True) if line.split()[1] != last.pod)
    ran, calls = run_script(tmp_path, kubectl_script(plan, cluster), pods=state, DRY_RUN="1")
    assert ran.returncode == 3, ran.stderr
    assert f"wave 1/{len(plan.waves)}:\n  default/{first.pod}: replaced" in ran.stderr
    assert f"wave {len(plan.waves)}/{len(plan.waves)}:\n  default/{last.pod}: deleted" in ran.stderr
    assert [c for c in calls if c.startswith("apply")] == ["apply --dry-run=server -f -"] * (len(plan.waves) - 2), "the other waves validated"
    assert sum(c.startswith("get pods") for c in calls) == len(plan.waves), "every wave checked"
    real, real_calls = run_script(tmp_path, kubectl_script(plan, cluster), pods=state)
    assert real.returncode == 3 and not [c for c in real_calls if c.startswith("apply")], "a real run stops before the first stale wave"


# -- render -o html needs the snapshot ---------------------------------------------------------------


def test_render_html_without_the_snapshot_is_exit_2_naming_it(tmp_path: Path) -> None:
    cluster = _cluster()
    _, plan_file = _files(tmp_path, cluster, _plan(cluster))
    done = runner.invoke(app, ["render", str(plan_file), "-o", "html"])
    assert done.exit_code == 2, done.output
    assert "error: --snapshot: -o html needs the snapshot the plan was made from" in done.output and "Traceback" not in done.output


def test_an_out_dir_that_is_a_dangling_link_is_refused_naming_it(tmp_path: Path) -> None:
    cluster = _cluster()
    snapshot, plan_file = _files(tmp_path, cluster, _plan(cluster))
    link, outside = tmp_path / "waves", tmp_path / "elsewhere"
    link.symlink_to(outside)
    done = runner.invoke(app, ["render", str(plan_file), "--snapshot", str(snapshot), "--out-dir", str(link)])
    assert done.exit_code == 2, done.output
    assert f"error: --out-dir: '{link}' is a dangling symbolic link (to '{outside}'); give a directory" in done.output
    assert not outside.exists()
