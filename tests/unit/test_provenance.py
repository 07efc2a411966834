"""Every plan's report says what produced it: versions, the options as applied, the input's hash, the host."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json

from planner.engine import DefragOptions, plan_defrag
from planner.engine.allocate import AllocateOptions, plan_allocate
from planner.engine.preempt import PreemptOptions, plan_preempt
from planner.snapshot import parse_cluster
from tests.support.paths import FIG15
from tests.support.preempt_clusters import prefix_counterexample


def test_a_defrag_plan_carries_versions_options_with_defaults_and_the_input_hash() -> None:
    cluster = parse_cluster(FIG15.read_text())
    record = plan_defrag(cluster, DefragOptions(seed=3, workers=1)).report.provenance  # type: ignore[attr-defined]
    assert record["versions"]["ortools"] == importlib.metadata.version("ortools") == "9.15.6755"
    assert record["versions"]["highspy"] == "1.12.0"
    assert record["planner"]["version"] == importlib.metadata.version("gpu-fleet-planner")
    assert record["options"]["seed"] == 3 and record["options"]["partition_size"] == 500  # given, and a default filled in
    assert record["host_cores"] >= 1 and len(record["snapshot_sha256"]) == 64


def test_the_hash_is_of_the_content_not_the_spelling() -> None:
    raw = json.loads(FIG15.read_text())
    respelled = {key: raw[key] for key in reversed(list(raw))}  # keys in another order
    respelled["nodes"] = [{**{k: n[k] for k in reversed(list(n))}, "schedulable": True, "labels": {}} for n in raw["nodes"]]  # defaults spelled out
    changed = {**raw, "nodes": [{**raw["nodes"][0], "cpus": raw["nodes"][0]["cpus"] + 1}, *raw["nodes"][1:]]}
    hashes = [
        plan_defrag(parse_cluster(json.dumps(s, indent=indent)), DefragOptions(workers=1)).report.provenance["snapshot_sha256"]  # type: ignore[attr-defined]
        for s, indent in ((raw, None), (respelled, 4), (changed, None))
    ]
    assert hashes[0] == hashes[1] != hashes[2]
    assert hashes[0] != hashlib.sha256(FIG15.read_bytes()).hexdigest()  # canonical form, not the file's bytes


def test_comparisons_preempt_and_allocate_plans_are_stamped_too() -> None:
    cluster = parse_cluster(FIG15.read_text())
    compared = plan_defrag(cluster, DefragOptions(method="compare", workers=1, time_limit_s=10))
    assert compared.heuristic.report.provenance["options"]["method"] == "compare"  # type: ignore[union-attr]
    assert compared.exact.report.provenance["snapshot_sha256"] == compared.heuristic.report.provenance["snapshot_sha256"]  # type: ignore[union-attr]
    preempt = plan_preempt(prefix_counterexample(), "hp", PreemptOptions(method="spotgpu"))
    assert preempt.report.provenance["options"]["method"] == "spotgpu"  # type: ignore[union-attr]
    from planner.instances.asi import generate_asi

    pending = generate_asi(nodes=64, seed=1, allocation=0.5, pending_jobs=2)
    allocation = plan_allocate(pending, AllocateOptions(method="largest-first"))
    assert allocation.report.provenance["options"]["method"] == "largest-first"  # type: ignore[union-attr]
