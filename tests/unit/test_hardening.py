"""Hardening regressions (issue 9): each test pins one mechanism that failed under adversarial input."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner import metrics
from planner.cluster import Cluster
from planner.engine import DefragOptions, plan_defrag
from planner.snapshot import parse_cluster
from planner.state import ClusterState
from planner.validate.defrag import validate
from tests.support.clusters import make_cluster, node, pod

# ----------------------------------------------------------------------------------------------
# One way to compute metrics: no valid plan is thrown away over float rounding
# ----------------------------------------------------------------------------------------------


def _rounding_snapshot() -> Cluster:
    """GAR 0.0171875 sits on a 6-decimal rounding boundary; summed in two orders it rounded both ways."""
    return make_cluster(
        [node(f"n{i}", cpus=64, memory_gib=64) for i in range(8)],
        [pod("p0", "n4", gpus=0.3), pod("p1", "n7", gpus=0.1), pod("p2", "n3", gpus=0.7)],
    )


@pytest.mark.parametrize("method", ["heuristic", "random", "descheduler", "repack", "exact"])
def test_a_plan_is_not_rejected_over_the_order_gpu_shares_were_summed_in(method: str) -> None:
    cluster = _rounding_snapshot()
    extra = {"threshold": 1.0} if method in ("random", "descheduler") else {}
    plan = plan_defrag(cluster, DefragOptions(method=method, workers=1, **extra))
    assert validate(cluster, plan) == []
    assert plan.metrics.after["gar"] == metrics.summary(ClusterState(cluster))["gar"]  # moves never change GAR


def test_allocation_is_the_same_whatever_order_shares_arrive_and_leave_in() -> None:
    rng = random.Random(5)
    shares = [rng.choice([0.1, 0.3, 0.7, 1 / 3, 0.45, 0.15]) for _ in range(40)]
    cluster = make_cluster([node("a", gpus=64), node("b", gpus=64)], [pod(f"p{i}", "a", gpus=s) for i, s in enumerate(shares)])
    fresh = ClusterState(cluster)
    churned = ClusterState(cluster)
    order = list(range(len(shares)))
    rng.shuffle(order)
    for p in order:  # every share leaves for b and comes back, in a random order
        churned.move(p, 1)
    rng.shuffle(order)
    for p in order:
        churned.move(p, 0)
    assert churned.share_sum.tolist() == fresh.share_sum.tolist()
    assert metrics.summary(churned) == metrics.summary(fresh)


def test_metrics_do_not_depend_on_the_order_of_pods_in_the_snapshot() -> None:
    cluster = _rounding_snapshot()
    data = json.loads(cluster.model_dump_json())
    data["pods"].reverse()
    assert metrics.summary(parse_cluster(json.dumps(data))) == metrics.summary(cluster)


# ----------------------------------------------------------------------------------------------
# GPU-share packing: exact where it matters, bounded always
# ----------------------------------------------------------------------------------------------


def _fewest_devices_by_brute_force(shares: list[float]) -> int:
    """Try every assignment of shares to k devices, k = 1, 2, ... (tiny sets only)."""
    import itertools

    for k in range(1, len(shares) + 1):
        for assignment in itertools.product(range(k), repeat=len(shares)):
            fills = [0.0] * k
            for share, d in zip(shares, assignment):
                fills[d] += share
            if max(fills) <= 1 + 1e-9:
                return k
    return 0


SHARE_VALUES = [0.1, 0.2, 0.25, 0.3, 1 / 3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8, 0.15, 0.35]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(SHARE_VALUES) | st.floats(0.01, 0.99), min_size=1, max_size=7))
def test_share_packing_uses_the_fewest_devices(shares: list[float]) -> None:
    from planner import rules

    fewest = _fewest_devices_by_brute_force(shares)
    assert rules.gpu_devices_needed(shares) == fewest
    assert rules._lower_bound(tuple(sorted(shares, reverse=True))) <= fewest


def test_many_shares_between_a_third_and_a_half_pack_two_to_a_device_without_search() -> None:
    """60 shares in (1/3, 1/2) on one 64-GPU node took minutes (a full search per device count)."""
    from planner import rules

    rng = random.Random(3)
    shares = [rng.uniform(0.34, 0.47) for _ in range(60)]
    ordered = tuple(sorted(shares, reverse=True))
    assert rules._lower_bound(ordered) == 30  # at most two such shares share a device
    assert rules.gpu_devices_needed(shares) == 30
    cluster = make_cluster([node("big", gpus=64, cpus=512, memory_gib=4096)], [pod(f"s{i}", "big", gpus=s) for i, s in enumerate(shares)])
    assert metrics.summary(cluster)["allocated_gpus"] == round(math.fsum(shares), 6)


# ----------------------------------------------------------------------------------------------
# The command line: bad input is exit 2 naming the option, never exit 3 or a traceback
# ----------------------------------------------------------------------------------------------

SMALL = {
    "nodes": [{"name": "n0", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "a"}, {"name": "n1", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "b"}],
    "pods": [{"name": "x", "node": "n0", "gpus": 1, "cpus": 1}, {"name": "y", "node": "n1", "gpus": 2, "cpus": 1}],
}


@pytest.fixture
def small_snapshot(tmp_path) -> str:  # type: ignore[no-untyped-def]
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    return str(path)


BAD_INVOCATIONS = [
    (["defrag", "{snap}", "--out", "{tmp}"], "--out"),
    (["defrag", "{snap}", "--out", "{tmp}/missing/plan.json"], "--out"),
    (["defrag", "{snap}", "--out", "/dev/full"], "--out"),
    (["defrag", "{snap}", "--out", "/proc/version"], "--out"),
    (["defrag", "{snap}", "--seed", "-1"], "--seed"),
    (["defrag", "{snap}", "--max-moves-per-node", str(2**70)], "--max-moves-per-node"),
    (["defrag", "{snap}", "--max-moves", str(2**70)], "--max-moves"),
    (["defrag", "{snap}", "--method", "exact", "--time-limit", "inf"], "--time-limit"),
    (["defrag", "{snap}", "--method", "exact", "--time-limit", "nan"], "--time-limit"),
    (["defrag", "{snap}", "--threshold", "0.3"], "--threshold"),
    (["defrag", "{snap}", "--method", "repack", "--max-moves", "3"], "--max-moves"),
    (["defrag", "{snap}", "--solver", "cpsat"], "--solver"),
    (["generate", "asi", "--nodes", str(2**70), "--seed", "1"], "--nodes"),
    (["generate", "asi", "--nodes", "100000000", "--seed", "1"], "--nodes"),
    (["generate", "asi", "--nodes", "3", "--seed", "-5"], "--seed"),
    (["generate", "asi", "--nodes", "3", "--seed", "1", "--out", "{tmp}"], "--out"),
    (["report", "{snap}", "--shape", "4611686018427387904g1c"], "--shape"),
    (["report", "{snap}", "--shape", "1g1e400c"], "--shape"),
    (["submit", "{snap}", "--server", "not a url"], "--server"),
    (["submit", "{snap}", "--server", "ftp://127.0.0.1/"], "--server"),
    (["jobs", "--server", "http://[::1"], "--server"),
]


@pytest.mark.parametrize("argv,flag", BAD_INVOCATIONS, ids=[" ".join(a[2:]) or a[0] for a, _ in BAD_INVOCATIONS])
def test_bad_input_is_exit_two_naming_the_option(argv: list[str], flag: str, small_snapshot: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from planner.cli import app

    args = [a.replace("{snap}", small_snapshot).replace("{tmp}", str(tmp_path)) for a in argv]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert flag in result.output


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{snap}"],
        ["defrag", "{snap}"],
        ["defrag", "{snap}", "--format", "table"],
        ["report", "{snap}", "--json"],
        ["validate", "{snap}", "{plan}"],
        ["validate", "{snap}", "{plan}", "--max-moves", "0"],
        ["defrag", "--help"],
    ],
)
def test_a_full_standard_output_is_exit_two(argv: list[str], small_snapshot: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    plan = tmp_path / "plan.json"
    subprocess.run([sys.executable, "-m", "planner.cli", "defrag", small_snapshot, "--out", str(plan)], check=True, timeout=120)
    args = [a.replace("{snap}", small_snapshot).replace("{plan}", str(plan)) for a in argv]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "planner.cli", *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "standard output: cannot write" in done.stderr and "Traceback" not in done.stderr


def test_names_are_shown_as_written_never_as_markup(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from planner.cli import app

    data = {
        "nodes": [{"name": "[bold]x[/bold]", "gpus": 8, "cpus": 64, "memory_gib": 64, "asw": "[/]", "gpu_model": "[red]"}],
        "pods": [{"name": "p", "node": "[bold]x[/bold]", "gpus": 1, "cpus": 1}],
    }
    path = tmp_path / "markup.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["report", str(path)])
    assert result.exit_code == 0, result.output
    assert "[/]" in result.output and "[red]" in result.output


@pytest.mark.parametrize(
    "text,problem",
    [
        ('{"nodes":[{"name":"n0","gpus":8,"gpus":4,"cpus":8,"memory_gib":8}]}', "duplicate key 'gpus' in the object named 'n0'"),
        ('{"nodes":[{"name":"n0","gpus":8,"cpus":8,"memory_gib":8,"eviction_count":' + "9" * 400 + "}]}", "eviction_count"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
    ids=["duplicate-key", "huge-integer", "deep-nesting"],
)
def test_ambiguous_or_absurd_snapshots_are_refused(text: str, problem: str) -> None:
    from planner.cluster import SnapshotError

    with pytest.raises(SnapshotError) as refused:
        parse_cluster(text)
    assert problem in str(refused.value)
