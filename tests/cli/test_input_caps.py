"""Issue 59, item 1's rest: a file larger than a command reads is refused before it is read (a sparse
1.2 GB file, exit 2 naming the limit), an import's warnings and ``planner validate``'s violations are
listed up to twenty with a line counting the rest (a List warned once per object, a plan for another
snapshot printed one violation per move)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from planner.bounded_input import MAX_LISTED
from planner.snapshot import MAX_INPUT_BYTES
from tests.support.paths import REPO
from tests.support.planner_command import planner

EXAMPLE = REPO / "instances" / "kubernetes" / "gpu-cluster.json"


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk, and reading it would take a GiB of memory
    done = planner("report", str(huge))
    assert done.returncode == 2, done.stderr
    assert f"is larger than {MAX_INPUT_BYTES:,} bytes" in done.stderr and "huge.json" in done.stderr


def test_import_warnings_are_capped_with_a_count_of_the_rest(tmp_path: Path) -> None:
    listing = json.loads(EXAMPLE.read_text())
    nodes = [item for item in listing["items"] if item["kind"] == "Node"]
    for node in nodes:
        node["status"].pop("allocatable", None)  # one warning per node: capacity taken instead
    extra = []
    for i in range(60):
        copy = json.loads(json.dumps(nodes[0]))
        copy["metadata"]["name"] = f"spare-{i}"
        copy["metadata"].pop("uid", None)
        extra.append(copy)
    listing["items"].extend(extra)
    path = tmp_path / "list.json"
    path.write_text(json.dumps(listing))
    done = planner("import", "kubernetes", str(path), "--out", str(tmp_path / "snap.json"))
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "status.allocatable" in line]
    assert len(warned) == MAX_LISTED
    total = len(nodes) + len(extra)
    assert re.search(rf"warning: \.\.\. and {total - MAX_LISTED:,} more like it", done.stderr), done.stderr
    assert f"{total} warning(s)" in done.stdout + done.stderr  # the summary still counts every one


def test_validate_lists_twenty_violations_and_counts_the_rest(tmp_path: Path) -> None:
    one, other, plan = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "plan.json"
    assert planner("generate", "asi", "--nodes", "100", "--seed", "4", "--allocation", "0.8", "--out", str(one)).returncode == 0
    assert planner("generate", "asi", "--nodes", "100", "--seed", "5", "--allocation", "0.8", "--out", str(other)).returncode == 0
    assert planner("defrag", str(one), "--out", str(plan), "-o", "json").returncode == 0
    done = planner("validate", str(other), str(plan))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == MAX_LISTED + 1 and re.fullmatch(r"\.\.\. and [0-9,]+ more (like it|problems)", lines[-1]), lines[-3:]
    counted = int(re.search(r"([0-9]+) violation\(s\)", done.stderr).group(1))  # type: ignore[union-attr]
    assert counted == MAX_LISTED + int(re.search(r"and ([0-9,]+) more", lines[-1]).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert os.path.getsize(plan) > 0


def test_a_one_mebibyte_name_is_quoted_by_its_start_and_length(tmp_path: Path) -> None:
    """The red team's long-message cases: a kubectl script or PodMigrationJobs refuse a name Kubernetes
    refuses, and the message quoted all of a 1 MiB name (a 1 MiB message)."""
    snapshot = json.loads((REPO / "instances" / "fig15-ejection-chain.json").read_text())
    snapshot["pods"][0]["name"] = "job-" + "a" * (1 << 20)
    path = tmp_path / "long.json"
    path.write_text(json.dumps(snapshot))
    for output in ("kubectl", "podmigrationjob"):
        done = planner("defrag", str(path), "-o", output)
        assert done.returncode == 2, done.stderr[-2000:]
        assert len(done.stderr) < 4_096, len(done.stderr)
        assert "pods[0].name" in done.stderr and f"({(1 << 20) + 4:,} characters)" in done.stderr
