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


def _exhaustive(name: str, known: list[str], count: int = 3) -> list[str]:
    """The definition without bounds: every known name scored by difflib's ratio (0.6 or more), then prefix, then name."""
    import difflib
    import os

    scored = []
    for other in set(known):
        matcher = difflib.SequenceMatcher(None, other, name, autojunk=False)
        if matcher.ratio() >= 0.6:
            scored.append((-matcher.ratio(), -len(os.path.commonprefix([name, other])), other))
    return [other for _, _, other in sorted(scored)[:count]]


def test_the_bounded_search_finds_what_the_exhaustive_one_finds_on_names_of_a_cluster() -> None:
    import random

    rng = random.Random(7)
    known = [f"{rng.choice(['train', 'infer', 'svc', 'embed'])}-{rng.randrange(10**6):x}-{i}" for i in range(800)]
    for _ in range(60):
        typo = list(rng.choice(known))
        typo[rng.randrange(len(typo))] = rng.choice("abcdef0123456789-")
        name = "".join(typo)
        assert closest(name, known) == _exhaustive(name, known), name


def test_a_name_much_longer_than_every_known_name_gets_no_suggestion_and_costs_nothing() -> None:
    import time

    known = [f"job-{i:05d}-abcdef" for i in range(300)]
    assert closest("job-00001-abcdef-x", known)[0] == "job-00001-abcdef"  # a typo a few characters longer is still one
    assert closest("train-00000", ["train"]) == []  # difflib alone says 0.63: a name longer than any known one is not its typo
    for name in ("job-0" * 5_200, "job-00001-abcdef" * 1_600, "x" * (1 << 20)):  # 26 KB, 26 KB, 1 MiB (8 s and more before the bounds)
        start = time.perf_counter()
        assert closest(name, known) == [] and "did you mean" not in unknown_name("job", name, known)
        assert time.perf_counter() - start < 2.0


def test_many_long_known_names_are_searched_within_a_bound() -> None:
    import random
    import time

    rng = random.Random(3)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"
    known = ["".join(rng.choices(alphabet, k=250)) for _ in range(40_000)] + ["a" * 250 + str(i) for i in range(2_000)]
    for name in ("".join(rng.choices(alphabet, k=253)), "a" * 253, known[17][:-1] + "!"):
        start = time.perf_counter()
        closest(name, known)
        assert time.perf_counter() - start < 5.0  # about 0.3 s on a quiet machine; unbounded, minutes
    assert closest(known[17][:-1] + "!", known)[0] == known[17]


def test_a_long_unknown_name_is_quoted_by_a_prefix_with_its_length() -> None:
    message = unknown_name("job", "x" * 45_000, ["train"], pending=["train"])
    assert len(message) < 300 and "(45,000 characters)" in message and "pending jobs: 'train'" in message
