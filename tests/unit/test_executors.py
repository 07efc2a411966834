"""The local executors: inline, a pool forked per call for lazy tasks, a fork-server pool otherwise;
the same results in task order on each, and the same IPC plan."""

from __future__ import annotations

import os
import threading
from typing import Self

import pytest

from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.runtime.executors import _may_fork, executor
from planner.runtime.tasks import Lazy, run_inline


def _square_with_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _identity(x: int) -> int:
    return x


class _Thread:
    """Another Python thread running for the duration (as a progress bar's or a web server's would)."""

    def __enter__(self) -> Self:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.stop.wait, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def test_lazy_tasks_run_in_forked_workers_in_task_order() -> None:
    assert _may_fork(), "the test process must run no other thread"
    tasks = [Lazy(_identity, k) for k in range(7)]
    with executor(2) as run:
        results = run(_square_with_pid, tasks)
    assert [r for r, _ in results] == [k * k for k in range(7)]
    assert os.getpid() not in {pid for _, pid in results}  # built and run in the workers


def test_with_another_thread_running_lazy_tasks_go_to_the_fork_server_pool() -> None:
    with _Thread():
        assert not _may_fork()
        with executor(2) as run:
            results = run(_square_with_pid, [Lazy(_identity, k) for k in range(5)])
    assert [r for r, _ in results] == [k * k for k in range(5)]
    assert os.getpid() not in {pid for _, pid in results}


def test_inline_builds_lazy_tasks_here() -> None:
    assert run_inline(_square_with_pid, [Lazy(_identity, 3), 4]) == [(9, os.getpid()), (16, os.getpid())]


@pytest.fixture(scope="module")
def asi() -> Cluster:
    from planner.instances.asi import generate_asi

    return generate_asi(nodes=300, seed=7, allocation=0.7)


def test_ipc_plan_is_the_same_on_the_forked_pool_the_fork_server_pool_and_inline(asi: Cluster) -> None:
    options = {"partition_size": 50, "seed": 3}
    inline = plan_defrag(asi, DefragOptions(executor="inline", **options))
    forked = plan_defrag(asi, DefragOptions(workers=2, **options))
    with _Thread():
        served = plan_defrag(asi, DefragOptions(workers=2, **options))
    inline_moves, forked_moves, served_moves = ([[(m.pod, m.from_, m.to) for m in wave] for wave in plan.waves] for plan in (inline, forked, served))
    assert inline.vacated_nodes and inline.report.model_extra["partitions"] >= 6
    assert inline_moves == forked_moves == served_moves
    assert inline.vacated_nodes == forked.vacated_nodes == served.vacated_nodes


def _reject(problem: str) -> None:
    from planner.cluster import SnapshotError

    raise SnapshotError([problem, "nodes[0].gpus: must be >= 0; fix the node list"])


def test_a_snapshot_error_raised_in_a_worker_arrives_with_its_problems() -> None:
    """Pickled by its problem list: the default pickling rebuilt its message from the joined one,
    one character per line."""
    from planner.cluster import SnapshotError

    with executor(2) as run, pytest.raises(SnapshotError) as caught:
        run(_reject, ["--trace: unknown pod list 'x'", "--trace: unknown pod list 'y'"])
    assert caught.value.problems[0].startswith("--trace: unknown pod list '")
    assert caught.value.problems[1] == "nodes[0].gpus: must be >= 0; fix the node list"
    assert len(caught.value.problems) == 2
    assert str(caught.value) == "\n".join(caught.value.problems)


def test_in_background_forks_and_returns_the_same_result_as_inline() -> None:
    import os

    from planner.runtime.executors import forks_background, in_background

    def where() -> tuple[int, int]:
        return os.getpid(), sum(range(1000))

    assert forks_background(2, "process") and not forks_background(2, "inline") and not forks_background(1, "process")
    with in_background(where, 2, "process") as forked:
        pid, value = forked()
    with in_background(where, 2, "inline") as inline:
        here, same = inline()
    assert pid != os.getpid() and here == os.getpid() and value == same == 499500


def test_in_background_raises_the_call_s_error() -> None:
    from planner.runtime.executors import in_background

    def fails() -> None:
        raise ValueError("from the background")

    with pytest.raises(ValueError, match="from the background"), in_background(fails, 2, "process") as result:
        result()
