"""Did-you-mean suggestions and pending lists for names the input does not have."""

from __future__ import annotations

from planner.suggest import closest, listed, unknown_name


def test_the_closest_names_come_first_and_a_late_digit_typo_beats_an_early_one() -> None:
    known = [f"svc-{i:05d}-0" for i in range(400)]
    assert closest("svc-0000-0", known) == ["svc-00000-0", "svc-00001-0", "svc-00002-0"]
    assert closest("train", ["trainer", "train-1", "infer"], count=2) == ["train-1", "trainer"]
    assert closest("zzzz", known) == []


def test_lists_are_bounded_and_say_how_many_more() -> None:
    assert listed([]) == "none"
    assert listed(["a", "b"]) == "'a', 'b'"
    assert listed([str(i) for i in range(12)]) == "'0', '1', '2', '3', '4' (and 7 more)"


def test_the_message_names_the_unknown_name_the_suggestions_and_the_pending_work() -> None:
    assert unknown_name("job", "trian", ["train", "infer"], pending=["infer"]) == "unknown job 'trian'; did you mean 'train'?; pending jobs: 'infer'"
    assert unknown_name("node", "n-9", ["n-1"]) == "unknown node 'n-9'; did you mean 'n-1'?"
