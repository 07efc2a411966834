"""``planner simulate spot`` run as users run it (a subprocess): tidy rows, a plot, and bad input
refused with exit 2 naming the option."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PLANNER = [sys.executable, "-m", "planner.cli"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PLANNER, "simulate", "spot", *args], capture_output=True, text=True, timeout=300)


def test_rows_per_policy_and_seed_and_a_plot(tmp_path: Path) -> None:
    out, plot = tmp_path / "runs.json", tmp_path / "runs.png"
    done = run(
        "--nodes",
        "60",
        "--days",
        "0.25",
        "--warmup-days",
        "0.05",
        "--policy",
        "spotgpu",
        "--policy",
        "least-allocated+random",
        "--seed",
        "0",
        "--seed",
        "3",
        "--restart-overhead-s",
        "30",
        "--out",
        str(out),
        "--plot",
        str(plot),
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["runs"]
    assert [(r["policy"], r["seed"]) for r in rows] == [("spotgpu", 0), ("least-allocated+random", 0), ("spotgpu", 3), ("least-allocated+random", 3)]
    for row in rows:
        assert row["nodes"] == 60 and row["jobs"] > 40 and row["warmup_days"] == 0.05 and row["unfinished"] == 0
        assert row["lp_jct_mean_s"] > 0 and 0 < row["gar_mean"] <= 1 and row["gar_hp_only_mean"] <= row["gar_mean"] + 1e-9
        assert row["hp_delay_hp_only_mean_s"] is not None and row["lp_gpu_hours_lost"] >= 0
    assert rows[0]["hp_delay_hp_only_mean_s"] == rows[1]["hp_delay_hp_only_mean_s"]  # one workload per seed, shared
    assert rows[0]["lp_jct_mean_s"] != rows[2]["lp_jct_mean_s"]  # another seed, another workload
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "spot simulation" in done.stdout and "least-allocated+random" in done.stdout


def test_json_to_stdout_with_out_dash(tmp_path: Path) -> None:
    done = run("--nodes", "20", "--days", "0.05", "--policy", "volcano", "--no-hp-only", "--out", "-", "--no-progress")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["runs"]
    assert len(rows) == 1 and rows[0]["policy"] == "volcano" and "hp_delay_growth" not in rows[0]


def test_warm_start_begins_with_the_cluster_busy() -> None:
    """--warm-start adds the jobs a stationary past leaves running: same arrivals after time 0, more
    jobs in all, and the allocation averaged over the first hours is higher than from an empty cluster."""
    common = ["--nodes", "40", "--days", "0.1", "--policy", "spotgpu", "--no-hp-only", "--out", "-", "--no-progress"]
    cold, warm = run(*common), run(*common, "--warm-start")
    assert cold.returncode == 0 and warm.returncode == 0, cold.stderr + warm.stderr
    cold_row, warm_row = json.loads(cold.stdout)["runs"][0], json.loads(warm.stdout)["runs"][0]
    assert cold_row["warm_start"] is False and warm_row["warm_start"] is True
    assert warm_row["jobs"] > cold_row["jobs"]
    assert warm_row["gar_mean"] > cold_row["gar_mean"] + 0.1


def test_the_offered_loads_set_the_workload() -> None:
    """--spot-load 0 replays HP jobs only (no spot row data); doubling --spot-load with --hp-load 0
    doubles the spot jobs within sampling noise; the loads are in every row."""
    common = ["--nodes", "40", "--days", "0.2", "--policy", "spotgpu", "--no-hp-only", "--out", "-", "--no-progress"]
    rows = {}
    for hp, spot in (("0.65", "0"), ("0", "0.3"), ("0", "0.6")):
        done = run(*common, "--hp-load", hp, "--spot-load", spot)
        assert done.returncode == 0, done.stderr
        rows[(hp, spot)] = json.loads(done.stdout)["runs"][0]
    none, some, more = rows[("0.65", "0")], rows[("0", "0.3")], rows[("0", "0.6")]
    assert (none["hp_load"], none["spot_load"], none["lp_jobs"], none["lp_jct_mean_s"]) == (0.65, 0.0, 0, None)
    assert none["jobs"] > 0 and some["jobs"] == some["lp_jobs"] > 0
    assert 1.6 < more["lp_jobs"] / some["lp_jobs"] < 2.4


def test_the_asi_ablation_preset_is_its_options_spelled_out_and_explicit_options_win() -> None:
    """--preset asi-ablation runs what its options spelled out run (warm start, 60 s restart overhead,
    the loads), every setting's source is in the output, and an option given explicitly overrides the
    preset's value (here --nodes, --days and --warmup-days, to keep the replay small; --cold-start)."""
    small = ["--nodes", "20", "--days", "0.2", "--warmup-days", "0.05", "--policy", "spotgpu", "--no-hp-only", "--out", "-", "--no-progress"]
    preset, spelled = (
        run("--preset", "asi-ablation", *small),
        run(*small, "--warm-start", "--restart-overhead-s", "60", "--hp-load", "0.65", "--spot-load", "0.35"),
    )
    cold = run("--preset", "asi-ablation", "--cold-start", *small)
    assert preset.returncode == spelled.returncode == cold.returncode == 0, preset.stderr + spelled.stderr + cold.stderr
    by_preset, by_options, by_cold = (json.loads(done.stdout) for done in (preset, spelled, cold))
    (row,), (same,) = by_preset["runs"], by_options["runs"]
    assert row["warm_start"] is True and row["restart_overhead_s"] == 60 and (row["hp_load"], row["spot_load"]) == (0.65, 0.35)
    assert {k: v for k, v in row.items() if k not in ("wall_s", "preset")} == {k: v for k, v in same.items() if k not in ("wall_s", "preset")}
    assert row["preset"] == by_preset["preset"] == "asi-ablation" and same["preset"] is None
    settings = by_preset["settings"]
    assert settings["warm_start"] == {"value": True, "source": "preset asi-ablation"}
    assert settings["restart_overhead_s"] == {"value": 60.0, "source": "preset asi-ablation"}
    assert settings["nodes"] == {"value": "20", "source": "option"} and settings["days"] == {"value": 0.2, "source": "option"}
    assert by_options["settings"]["warm_start"]["source"] == "option" and by_options["settings"]["restart_overhead_s"]["source"] == "option"
    assert by_cold["settings"]["warm_start"] == {"value": False, "source": "option"} and by_cold["runs"][0]["warm_start"] is False
    assert by_cold["runs"][0]["restart_overhead_s"] == 60 and by_cold["runs"][0]["jobs"] < row["jobs"]  # no warm-start jobs


def test_without_a_preset_the_defaults_are_named_as_such() -> None:
    done = run("--nodes", "10", "--days", "0.05", "--policy", "volcano", "--no-hp-only", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "warm_start False (default)" in done.stdout and "restart_overhead_s 0.0 (default)" in done.stdout and "nodes 10 (option)" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "lifo"], "--policy: unknown 'lifo'"),
        (["--policy", "bestfit+spotgpu"], "--policy: unknown 'bestfit+spotgpu'"),
        (["--days", "0"], "--days: must be above 0"),
        (["--days", "-1"], "--days: must be above 0"),
        (["--nodes", "many"], "--nodes: 'spot-2026' or a number of nodes"),
        (["--nodes", "999999"], "nodes: must be a whole number from 1 to"),
        (["--jobs", "0"], "--jobs: must be from 1 to 250,000, got 0"),
        (["--jobs", "1000000"], "--jobs: must be from 1 to 250,000, got 1,000,000"),
        (["--days", "1", "--warmup-days", "1"], "--warmup-days: must be at least 0 and below --days (1)"),
        (["--restart-overhead-s", "-5"], "--restart-overhead-s: must be at least 0"),
        (["--plot", "out.svg"], "--plot: a .png file"),
        (["--preset", "asi"], "--preset: one of asi-ablation, got 'asi'"),
        (["--spot-load", "-0.1"], "--spot-load: must be between 0 and 10, got -0.1"),
        (["--hp-load", "11"], "--hp-load: must be between 0 and 10, got 11"),
        (["--hp-load", "nan"], "--hp-load: must be between 0 and 10, got nan"),
        (["--hp-load", "0", "--spot-load", "0"], "--hp-load, --spot-load: at least one must be above 0"),
    ],
)
def test_bad_options_exit_2_naming_the_option(args: list[str], message: str) -> None:
    done = run(*args, "--no-progress")
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_node_list_missing_a_column_exits_2_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "nodes.csv"
    bad.write_text("gpu_model,gpu_capacity_num,node_name\nA10,1,n1\n")
    done = run("--node-list", str(bad), "--nodes", "1", "--no-progress")
    assert done.returncode == 2 and "missing column(s) cpu_num" in done.stderr and "Traceback" not in done.stderr
