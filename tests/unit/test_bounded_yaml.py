"""Issue 59, item 1: the one bounded reader (``planner/bounded_yaml.py``, ``bounded_json.py``,
``bounded_input.py``). Each limit refuses with a ``DocumentError`` naming the input, the field path and
YAML's line and column, quoting a value by a short prefix; the safe tags only; problem lists capped
with a count of the rest; values quoted without writing them out."""

from __future__ import annotations

import pickle
import time

import pytest
import yaml

from planner.bounded_input import MAX_LISTED, DocumentError, capped, prefixed, short_value
from planner.bounded_json import NotJson, parse_json
from planner.bounded_yaml import LIST_LIMITS, SMALL_LIMITS, YamlLimits, parse_yaml


def _refusal(text: str, limits: YamlLimits = LIST_LIMITS) -> str:
    with pytest.raises(DocumentError) as caught:
        parse_yaml(text, "in.yaml", limits)
    assert len(caught.value.problems) == 1
    return caught.value.problems[0]


def alias_bomb(levels: int = 9) -> str:
    """A 'billion laughs' policy: each anchor a list of nine aliases of the one before (9^levels values)."""
    items = ["&a0 [x, x, x, x, x, x, x, x, x]"] + [f"&a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "apiVersion: planner.io/v1\nkind: DefragPolicy\nspec: {budgets: {maxMoves: [" + ",".join(items) + "]}}\n"


def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_bound_at_once() -> None:
    text = alias_bomb()
    assert len(text) < 500
    started = time.monotonic()
    message = _refusal(text, SMALL_LIMITS)
    assert time.monotonic() - started < 2.0
    assert message.startswith("in.yaml: spec.budgets.maxMoves[") and "(YAML line 3 column" in message, message
    assert "aliases stand for more than 10,000 values" in message and len(message) < 300, message


def test_a_few_aliases_read_as_the_values_they_stand_for_shared() -> None:
    docs = parse_yaml("a: &x {b: [1, 2]}\nc: *x\n", "in.yaml")
    assert docs == [{"a": {"b": [1, 2]}, "c": {"b": [1, 2]}}]
    assert docs[0]["a"] is docs[0]["c"]  # shared, never copied


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!binary aGVsbG8=", "'!!binary'"),
        ("!!timestamp 2001-12-14", "'!!timestamp'"),
        ("!!set {a, b}", "'!!set'"),
        ("!!omap [a: 1, b: 2]", "'!!omap'"),
        ("!!pairs [a: 1]", "'!!pairs'"),
        ("!Custom {a: 1}", "'!Custom'"),
        ("!!python/object/apply:os.system [ls]", "'!!python/object/apply:os.system'"),
        ("!<tag:example.com,2000:x> 1", "'tag:example.com,2000:x'"),
    ],
)
def test_only_the_safe_tags_are_read_and_a_refusal_names_the_tag_and_where(value: str, tag: str) -> None:
    message = _refusal(f"spec:\n  method: {value}\n")
    assert message.startswith("in.yaml: spec.method (YAML line 2 column 11): tag ") and tag in message, message
    assert "is not supported" in message


def test_a_plain_date_is_refused_with_the_quotes_that_make_it_a_string() -> None:
    message = _refusal("metadata: {name: 2001-12-14}\n")
    assert message == (
        "in.yaml: metadata.name (YAML line 1 column 18): '2001-12-14' reads as YAML !!timestamp, which is not supported; "
        "quote it ('2001-12-14') to give a string"
    )
    assert parse_yaml("metadata: {name: '2001-12-14'}\n", "in.yaml") == [{"metadata": {"name": "2001-12-14"}}]


def test_the_safe_scalars_read_as_safe_load_reads_them() -> None:
    text = "a: [1, -0x1F, 0o17, 1_000, 1.5e3, .inf, true, off, ~, null, '1', text, 190:20:30]\n"
    assert parse_yaml(text, "in.yaml") == list(yaml.safe_load_all(text))


def test_an_integer_of_more_than_100_digits_is_refused_with_a_short_quote() -> None:
    assert parse_yaml("n: " + "9" * 100 + "\n", "in.yaml") == [{"n": int("9" * 100)}]
    message = _refusal("n: " + "9" * 5000 + "\n")
    assert message == "in.yaml: n (YAML line 1 column 4): cannot read '99999999999999999999'... as int: 5,000 digits; integers may have at most 100 digits"
    message = _refusal("n: " + ":".join(["1"] * 200) + "\n")  # a sexagesimal integer: quadratic to compute
    assert "as int: 399 characters; integers may have at most 100 digits" in message, message


def test_nesting_deeper_than_the_bound_is_refused_with_its_path_block_and_flow() -> None:
    block = "a:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(150)) + "  " * 151 + "b: 1\n"
    assert _refusal(block).endswith("(YAML line 101 column 201): nested more than 100 levels deep")
    message = _refusal("spec: " + "[" * 20_000 + "]" * 20_000 + "\n")
    assert message.startswith("in.yaml: not valid YAML: line 1 column") or "nested more than 100 levels deep" in message, message


@pytest.mark.parametrize(
    ("limits", "text", "expected"),
    [
        (YamlLimits(max_chars=100), "a: " + "b" * 100 + "\n", "in.yaml: YAML of 104 characters; at most 100 are read as YAML"),
        (YamlLimits(max_values=1000), "[" + "1, " * 1000 + "]", "in.yaml: [999] (YAML line 1 column 2999): more than 1,000 values in the stream"),
        (
            YamlLimits(max_scalar_chars=1000),
            "a: " + "b" * 1001 + "\n",
            "in.yaml: a (YAML line 1 column 4): a value of 1,001 characters ('bbbbbbbbbbbbbbbbbbbb'...)",
        ),
        (YamlLimits(max_alias_chars=1000), "a: &s " + "b" * 600 + "\nc: [*s, *s]\n", "in.yaml: c[1] (YAML line 2 column 9): aliases stand for more than"),
    ],
)
def test_each_size_bound_is_refused_naming_where(limits: YamlLimits, text: str, expected: str) -> None:
    assert _refusal(text, limits).startswith(expected)


def test_the_values_bound_counts_the_whole_stream_not_one_document() -> None:
    text = "".join(f"--- [{i}, {i}]\n" for i in range(400))
    assert len(parse_yaml(text, "in.yaml")) == 400
    assert "more than 1,000 values in the stream" in _refusal(text, YamlLimits(max_values=1000))


def test_a_long_key_given_twice_is_quoted_by_a_prefix() -> None:
    key = "k" * 1_000_000
    message = _refusal(f"? {key}\n: 1\n? {key}\n: 2\n")  # explicit keys: YAML's implicit ones end at 1,024 characters
    assert "is given twice" in message and len(message) < 300, message[:400]


def test_json_integers_have_the_yaml_readers_bound_and_a_position() -> None:
    assert parse_json('{"n": ' + "9" * 100 + "}", "in.json") == {"n": int("9" * 100)}
    assert parse_json('{"n": "' + "9" * 5000 + '"}', "in.json") == {"n": "9" * 5000}  # a string of digits is a string
    with pytest.raises(DocumentError) as caught:
        parse_json('{"a": "' + "9" * 200 + '",\n "n": -' + "9" * 101 + "}", "in.json")
    assert caught.value.problems == ["in.json: line 2 column 7: a number of 101 digits; numbers may have at most 100"]
    with pytest.raises(NotJson):
        parse_json("a: 1\n", "in.json")


def test_a_problem_list_shows_its_first_problems_and_counts_the_rest() -> None:
    alike = [f"pods[{i}].node: unknown node 'n-{i}'" for i in range(20_000)]
    started = time.monotonic()
    listed = DocumentError(alike).problems
    assert time.monotonic() - started < 2.0
    assert listed == [*alike[:MAX_LISTED], "... and 19,980 more like it"]
    mixed = alike[:30] + ["nodes[0].gpus: must be a whole number"]
    assert capped(mixed)[-1] == "... and 11 more problems"
    assert capped(alike[:21]) == alike[:21]  # one more line would only say "1 more"
    again = capped(prefixed("--policy p.yaml: ", listed) + ["another problem"])
    assert again[-1] == "... and 19,981 more problems" and again[0] == "--policy p.yaml: pods[0].node: unknown node 'n-0'"


def test_a_long_problem_keeps_its_start_and_its_end() -> None:
    problem = "spec." + "x" * 1_000_000 + ": unknown field; the fields here are a, b"
    (listed,) = capped([problem])
    assert len(listed) < 1300 and listed.startswith("spec.xxx") and listed.endswith("the fields here are a, b") and "...(998,846 characters)..." in listed


def test_a_quoted_value_is_short_and_never_written_out_whole() -> None:
    value: list[object] = ["lol"] * 9
    for _ in range(12):  # 9^13 values if written out
        value = [value] * 9
    started = time.monotonic()
    quoted = short_value(value)
    assert time.monotonic() - started < 0.5
    assert len(quoted) <= 60 and quoted.startswith('[[[[[[[[[[[[["lol", "lol"')
    assert short_value(10**5000) == "(an integer of about 5,000 digits)"
    assert short_value({"a": "b" * 10_000}).startswith('{"a": "bbbb') and len(short_value({"a": "b" * 10_000})) <= 60


def test_a_document_error_crosses_processes_with_its_problems() -> None:
    err = DocumentError([f"p{i}: bad" for i in range(100)])
    assert pickle.loads(pickle.dumps(err)).problems == err.problems


def test_the_clients_podmigrationjob_stream_is_read_by_the_bounded_reader() -> None:
    from planner.cluster import SnapshotError
    from planner.render.kubernetes_waves import objects_of_stream

    job = "apiVersion: scheduling.koordinator.sh/v1alpha1\nkind: PodMigrationJob\nmetadata: {name: m1, labels: {planner.io/wave: '1'}}\n"
    assert objects_of_stream("# header\n" + job) == [yaml.safe_load(job)]
    with pytest.raises(SnapshotError) as caught:
        objects_of_stream(job + "---\n" + alias_bomb().replace("DefragPolicy", "PodMigrationJob"), "GET /v1/plans/p1")
    assert caught.value.problems[0].startswith("GET /v1/plans/p1: spec.budgets.maxMoves[") and "aliases stand for more" in caught.value.problems[0]
    with pytest.raises(SnapshotError) as caught:
        objects_of_stream(job + "---\nkind: PodMigrationJob\nmetadata: {name: m2}\n", "GET /v1/plans/p1")
    assert caught.value.problems == ["GET /v1/plans/p1: document 2: not a PodMigrationJob labelled planner.io/wave"]
