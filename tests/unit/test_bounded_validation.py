"""Validation with a bounded number of errors (``planner/bounded_models.py``): a list stops at its first
bad item, the items after it are checked a chunk at a time until 1,000 errors are found, and the problems
come out in document order with a count that says "at least" when items were left unchecked. The request
parser of the service (``api/refusals.parse_model``) refuses the red team's 5 MiB body of bad items in
bounded memory."""

from __future__ import annotations

import json
import sys

import pytest

from planner.api.refusals import Refused, parse_model
from planner.api.schemas import DefragRequest, PreemptRequest
from planner.bounded_models import MAX_COLLECTED
from planner.cluster import SnapshotError
from planner.snapshot import parse_cluster
from tests.support.peak_memory import run_measured

NODE = {"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 256}


def problems(doc: dict) -> list[str]:
    with pytest.raises(SnapshotError) as refused:
        parse_cluster(json.dumps(doc))
    return refused.value.problems


def test_every_bad_item_of_a_list_is_named_in_document_order() -> None:
    nodes = [NODE, {"name": "n1", "gpus": "x", "cpus": 1, "memory_gib": 1}, NODE | {"name": "n2"}, None]
    pods = [
        {"name": "p0", "gpus": 1, "cpus": 1, "gpu_models": [1, "A100", 2]},
        {"name": "p1", "gpus": -1, "cpus": 1},
        {"name": "p2", "gpus": 1, "cpus": 1, "gpu_indexes": [0, "1", 2, 3.5]},  # a list in an item after the first bad one
    ]
    assert problems({"nodes": nodes, "pods": pods}) == [
        "nodes[1].gpus: must be a whole number, got 'x'",
        "nodes[3]: must be an object, got null",
        "pods[0].gpu_models[0]: must be a string, got 1",
        "pods[0].gpu_models[2]: must be a string, got 2",
        "pods[1].gpus: input should be greater than or equal to 0, got -1",
        "pods[2].gpu_indexes[1]: must be a whole number, got '1'",  # strict, as the pod's own fields are
        "pods[2].gpu_indexes[3]: must be a whole number, got 3.5",
    ]


def test_up_to_the_cap_the_rest_are_counted_exactly() -> None:
    listed = problems({"nodes": [NODE] + [None] * 500})
    assert listed[:2] == ["nodes[1]: must be an object, got null", "nodes[2]: must be an object, got null"]
    assert listed[20:] == ["... and 480 more like it"]


def test_past_the_cap_the_count_says_at_least() -> None:
    listed = problems({"nodes": [NODE] + [None] * 100_000})
    assert len(listed) == 21
    more = listed[-1]
    assert more.startswith("... and at least ") and more.endswith(" more like it"), more
    count = int(more.split()[4].replace(",", ""))
    assert MAX_COLLECTED - 20 <= count < 2 * MAX_COLLECTED


def test_a_valid_snapshot_reads_as_before() -> None:
    doc = {
        "nodes": [NODE | {"labels": {"a": "b"}, "numa": [{"name": "s0", "gpu_indexes": [0, 1]}]}],
        "pods": [{"name": "p", "node": "n0", "gpus": 2, "cpus": 1, "gpu_models": []}],
    }
    cluster = parse_cluster(json.dumps(doc))
    assert cluster.nodes[0].numa is not None and cluster.nodes[0].numa[0].gpu_indexes == [0, 1]
    assert cluster.pods[0].node == "n0"


def test_an_unknown_field_of_a_nested_object_gets_its_model_s_hint() -> None:
    assert problems({"nodes": [NODE | {"numa": [{"name": "s0", "gpu_indexs": [0]}]}]}) == [
        "nodes[0].numa[0].gpu_indexs: unknown field; did you mean 'gpu_indexes'?"
    ]


def test_a_request_with_bad_items_is_a_422_naming_them() -> None:
    body = json.dumps({"snapshot": {"nodes": [NODE, {"kind": 7}, {"kind": 7}]}, "job": "j"}).encode()
    with pytest.raises(Refused) as refused:
        parse_model(PreemptRequest, body)
    assert refused.value.status == 422
    assert refused.value.problems[:2] == ["snapshot.nodes[1].name: required field is missing", "snapshot.nodes[1].gpus: required field is missing"]
    assert "snapshot.nodes[2].name: required field is missing" in refused.value.problems


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        # options and plans are documents of any shape: the schema bounds none of their nesting, and pydantic's
        # own limit is about 255 levels
        ('"options": {"x": ' + "[" * 150 + "]" * 150 + "}", "body: options.x[0][0][0]"),
        ('"options": {"seed": 1' + "0" * 200 + "}", "body: line 1 column 49: a number of 201 digits; numbers may have at most 100"),
    ],
    ids=["nested-options", "long-integer"],
)
def test_a_request_body_is_bounded_as_a_whole(tail: str, expected: str) -> None:
    body = ('{"snapshot": {"nodes": []}, ' + tail + "}").encode()
    with pytest.raises(Refused) as refused:
        parse_model(DefragRequest, body)
    assert refused.value.status == 422
    assert refused.value.problems[0].startswith(expected), refused.value.problems
    if "[" in tail:
        assert refused.value.problems[0].endswith("nested more than 100 levels deep")


PARSE_BODY = """import sys
from planner.api.refusals import Refused
from planner.api.requests import Settings, accept_defrag, accept_preempt
item = sys.argv[2]
bad = ", ".join([item] * ((5 << 20) // (len(item) + 2)))
node = '{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 256}'
try:
    if sys.argv[1] == "snapshot":
        accept_preempt(('{"snapshot": {"nodes": [' + node + ", " + bad + ']}, "job": "j"}').encode(), Settings(db_url="sqlite://"))
    else:
        policy = '{"apiVersion": "planner.io/v1", "kind": "DefragPolicy", "spec": {"scope": {"namespaces": {"exclude": ["kube-system", ' + bad + "]}}}}"
        accept_defrag(('{"snapshot": {"nodes": [' + node + ']}, "policy": ' + policy + "}").encode(), Settings(db_url="sqlite://"))
except Refused as refused:
    sys.stderr.write(str(refused.status) + "\\n" + "\\n".join(refused.problems))
"""
MAX_PARSE_MIB = 400
"""The interpreter, pydantic and the planner take about 90 MiB, the duplicate-key parse of the body about as
much again; the 1,000 errors kept a few MiB. Before the bound these parses took 1.7 and 1.8 GiB."""


@pytest.mark.parametrize(
    ("where", "item", "first"),
    [
        # the red team's body: 403,298 items, each missing four fields and naming an unknown one
        ("snapshot", '{"kind": 7}', "snapshot.nodes[1].name: required field is missing"),
        # a policy's list of strings: 1,310,720 empty lists (pydantic built the policy's options in Python form)
        ("policy", "[]", "policy.spec.scope.namespaces.exclude[1]: must be a string, got []"),
    ],
)
def test_five_mebibytes_of_bad_items_in_a_body_are_refused_in_bounded_memory(where: str, item: str, first: str) -> None:
    code, err, seconds, peak_mib = run_measured(sys.executable, "-c", PARSE_BODY, where, item)
    assert code == 0, err[-2000:]
    assert peak_mib < MAX_PARSE_MIB, f"{peak_mib:.0f} MiB in {seconds:.1f} s"
    lines = err.splitlines()
    assert lines[:2] == ["422", first], lines[:3]
    assert lines[-1].startswith("... and at least "), lines[-1]
    assert len(lines) == 22
