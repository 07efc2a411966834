"""The planner's progress callback reports every phase of a heuristic plan, so a progress bar (CLI)
or a job's fraction (service) does not sit on the last IPC round while the plan is trimmed, shaped
into waves and validated."""

from __future__ import annotations

from planner.engine.defrag import DefragOptions, plan_defrag
from planner.instances.asi import generate_asi


def test_rounds_then_trim_then_finish() -> None:
    seen: list[tuple[str, int]] = []
    plan_defrag(generate_asi(nodes=120, seed=3), DefragOptions(), lambda what, done, total: seen.append((what, done)))
    phases = [what for what, _ in seen]
    assert phases[-2:] == ["trim", "finish"], seen
    rounds = [done for what, done in seen if what == "round"]
    assert rounds and rounds == list(range(1, len(rounds) + 1)) and set(phases) == {"round", "trim", "finish"}


def test_without_trim_the_rounds_end_with_finish() -> None:
    seen: list[str] = []
    plan_defrag(generate_asi(nodes=120, seed=3), DefragOptions(trim="off"), lambda what, done, total: seen.append(what))
    assert seen[-1] == "finish" and "trim" not in seen
