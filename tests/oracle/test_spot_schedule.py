"""The exact spot schedule (planner/models/spot_schedule.py) against a brute force written here, on
tiny instances, with both solvers; hand-made timelines; the validator; bad input on the CLI."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.cluster import SnapshotError
from planner.models.spot_schedule import (
    MAX_MODEL_CELLS,
    Run,
    SpotInstance,
    parse_instance,
    schedule_measures,
    solve_spot_schedule,
    validate_schedule,
)

runner = CliRunner()
SOLVERS = ("cpsat", "highs")


def instance(nodes: list[tuple[str, int]], jobs: list[dict], horizon: int, overhead: int = 0) -> SpotInstance:
    data = {"horizon_slots": horizon, "restart_overhead_slots": overhead, "nodes": [{"name": n, "gpus": g} for n, g in nodes], "jobs": jobs}
    return parse_instance(json.dumps(data))


def job(name: str, priority: str, submit: int, work: int, workers: int = 1, gpus: int = 1, every: int | None = None, runs: int | None = None) -> dict:
    data = {"name": name, "priority": priority, "submit_slot": submit, "work_slots": work, "workers": workers, "gpus_per_worker": gpus}
    if every is not None:
        data["checkpoint_interval_slots"] = every
    if runs is not None:
        data["max_runs"] = runs
    return data


# ------------------------------------------------------------------------------------------------
# The brute force: every schedule of every job (any eviction time, any nodes), combined
# ------------------------------------------------------------------------------------------------


def _spreads(inst: SpotInstance, j: dict) -> list[tuple[int, ...]]:
    """Pods per node of one run: every vector summing to the gang, within what each node holds."""
    room = [min(j["workers"], n.gpus // j["gpus_per_worker"]) for n in inst.nodes]
    return [c for c in itertools.product(*(range(k + 1) for k in room)) if sum(c) == j["workers"]]


def _job_schedules(inst: SpotInstance, j: dict) -> list[tuple[int, int, list[tuple[int, int, tuple[int, ...]]]]]:
    """(lost GPU-slots, completion slots, runs) of every way to run job ``j`` in the horizon, where a
    run is (start, end, pods per node): runs after the first pay the overhead, an evicted run keeps
    the whole checkpoint intervals of its progress, the last one runs to completion."""
    T, r = inst.horizon_slots, inst.restart_overhead_slots
    a, p, every = j["submit_slot"], j["work_slots"], j.get("checkpoint_interval_slots")
    hp = j["priority"] == "HP"
    most = 1 if hp else j.get("max_runs") or 3
    spreads = _spreads(inst, j)
    out = []

    def runs_from(earliest: int, done: int, k: int, so_far: list[tuple[int, int]]) -> None:
        overhead = r if k else 0
        starts = [a] if hp else range(earliest, T)
        for s in starts:
            finish = s + overhead + (p - done)
            if finish <= T:
                out.append(so_far + [(s, finish)])
            if k + 1 < most:
                for e in range(s + 1, min(T, finish)):  # evicted before finishing
                    kept = (max(0, e - s - overhead) // every) * every if every else 0
                    runs_from(e, done + kept, k + 1, so_far + [(s, e)])

    runs_from(a, 0, 0, [])
    gpus = j["workers"] * j["gpus_per_worker"]
    result = []
    for times in out:
        lost = gpus * (sum(e - s for s, e in times) - p) if not hp else 0
        completion = times[-1][1] - a if not hp else 0
        for nodes in itertools.product(spreads, repeat=len(times)):
            result.append((lost, completion, [(s, e, c) for (s, e), c in zip(times, nodes)]))
    result.sort(key=lambda x: (x[0], x[1]))
    return result


def brute_force(inst: SpotInstance) -> tuple[int, int] | None:
    """The least (lost GPU-slots, spot completion slots) over all feasible schedules, or None."""
    jobs = [j.model_dump() for j in inst.jobs]
    options = [_job_schedules(inst, j) for j in jobs]
    if any(not o for o in options):
        return None
    least_rest = [(sum(o[0][0] for o in options[k:]), sum(min(x[1] for x in o) for o in options[k:])) for k in range(len(options))]
    least_rest.append((0, 0))
    T = inst.horizon_slots
    free = [[n.gpus] * T for n in inst.nodes]
    best: list[tuple[int, int] | None] = [None]

    def place(runs: list, g: int, sign: int) -> bool:
        ok = True
        for s, e, counts in runs:
            for node, c in enumerate(counts):
                for t in range(s, e):
                    free[node][t] -= sign * c * g
                    ok &= free[node][t] >= 0
        return ok

    def search(k: int, lost: int, completion: int) -> None:
        if best[0] is not None and (lost + least_rest[k][0], completion + least_rest[k][1]) >= best[0]:
            return
        if k == len(options):
            best[0] = (lost, completion)
            return
        g = jobs[k]["gpus_per_worker"]
        for l, c, runs in options[k]:
            if place(runs, g, +1):
                search(k + 1, lost + l, completion + c)
            place(runs, g, -1)

    search(0, 0, 0)
    return best[0]


def random_tiny(seed: int) -> SpotInstance:
    """1-2 nodes, at most 8 slots, 1-3 jobs: a spot job on the whole cluster, often an HP job that
    arrives while it runs, sometimes a small spot job; the horizon is tight, so waiting for the HP
    job is often too late and the spot job must yield at a checkpoint and restart (or cannot finish)."""
    rng = random.Random(seed)
    while True:
        size, count = rng.choice([2, 4]), rng.choice([1, 2])
        nodes = [(f"n{k}", size) for k in range(count)]
        r = rng.choice([0, 1, 1, 2])
        work, hp_work = rng.randint(r + 2, 5), rng.randint(1, 2)
        jobs = [job("s0", "LP", 0, work, count, size, rng.choice([None, 1, 1, 2, 3]), rng.choice([2, 3]))]
        if rng.random() < 0.8:
            jobs.append(job("hp", "HP", rng.randint(min(r + 1, work - 1), work - 1), hp_work, rng.choice([1, count]), size))
        if rng.random() < 0.6:
            jobs.append(job("s1", "LP", rng.randint(0, 2), rng.randint(1, 2), 1, size // 2, rng.choice([None, 1, 2]), rng.choice([1, 2, 3])))
        horizon = min(8, max(work + hp_work + r + rng.randint(0, 2), max(j["submit_slot"] + j["work_slots"] for j in jobs)))
        try:
            return instance(nodes, jobs, horizon, r)
        except SnapshotError:
            continue


TINY_SEEDS = range(40)


def test_tiny_family_has_restarts_losses_and_infeasible_cases() -> None:
    """The family the oracle test runs on is not trivial: some optima lose GPU-time to restarts,
    some instances cannot complete."""
    optima = [brute_force(random_tiny(seed)) for seed in TINY_SEEDS]
    assert sum(o is None for o in optima) >= 10
    assert sum(o is not None and o[0] > 0 for o in optima) >= 3


@pytest.mark.parametrize("seed", TINY_SEEDS)
def test_optimum_equals_brute_force_on_tiny_instances(seed: int) -> None:
    inst = random_tiny(seed)
    expected = brute_force(inst)
    for solver in SOLVERS:
        result = solve_spot_schedule(inst, solver, time_limit_s=10, workers=2)
        if expected is None:
            assert result.status == "infeasible", (solver, result.status)
            continue
        assert result.status == "optimal", (solver, result.status, result.message)
        assert (result.lost_gpu_slots, sum(result.completion_slots.values())) == expected, solver
        assert result.objective["lost_gpu_slots"] == result.bound["lost_gpu_slots"] == expected[0]
        assert result.violations == []


def test_brute_force_sees_infeasible_and_lossy_schedules() -> None:
    """The oracle itself: it enumerates evictions between checkpoints (and finds none optimal) and
    reports an instance that cannot complete as None."""
    inst = instance([("n0", 2)], [job("hp", "HP", 1, 3, gpus=2), job("s", "LP", 0, 3, gpus=2, every=2, runs=2)], 6)
    lossy = [x for x in _job_schedules(inst, inst.jobs[1].model_dump()) if x[0] > 0]
    assert lossy and brute_force(inst) is None  # 1 slot before the HP job keeps nothing; 3 after it end at 7


# ------------------------------------------------------------------------------------------------
# Hand-made timelines
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
def test_checkpoint_just_before_eviction_loses_nothing(solver: str) -> None:
    # the spot job fills the node; the HP job takes it over slots 2-3; a checkpoint every 2 slots; waiting ends at 8 > 6
    inst = instance([("n0", 4)], [job("spot", "LP", 0, 4, gpus=4, every=2, runs=2), job("hp", "HP", 2, 2, gpus=4)], 6)
    result = solve_spot_schedule(inst, solver, 10, 2)
    assert result.status == "optimal" and result.lost_gpu_slots == 0
    assert result.schedule["spot"] == [Run(0, 2, ("n0",), 2), Run(4, 6, ("n0",), 2)]
    # evicted one slot after a checkpoint instead: that slot is lost
    late = {"spot": [Run(0, 3, ("n0",), 2), Run(5, 7, ("n0",), 2)], "hp": [Run(3, 5, ("n0",), 2)]}
    assert schedule_measures(inst, late)[0] == 4
    assert any("not on arrival" in p for p in validate_schedule(inst, late))


@pytest.mark.parametrize("solver", SOLVERS)
def test_restart_overhead_is_lost_and_checkpoints_count_after_it(solver: str) -> None:
    # overhead 1: the second run spends slot 4 restarting; waiting for the HP job would end at 8 > 7
    inst = instance([("n0", 4)], [job("spot", "LP", 0, 4, gpus=4, every=2, runs=2), job("hp", "HP", 2, 2, gpus=4)], 7, overhead=1)
    result = solve_spot_schedule(inst, solver, 10, 2)
    assert result.status == "optimal"
    assert result.schedule["spot"] == [Run(0, 2, ("n0",), 2), Run(4, 7, ("n0",), 2)]
    assert result.lost_gpu_slots == 4 and result.completion_slots == {"spot": 7}


@pytest.mark.parametrize("solver", SOLVERS)
def test_hp_starts_on_arrival_even_when_waiting_would_help_spot(solver: str) -> None:
    inst = instance([("n0", 2)], [job("spot", "LP", 0, 3, gpus=2), job("hp", "HP", 1, 2, gpus=2)], 6)
    result = solve_spot_schedule(inst, solver, 10, 2)
    assert result.schedule["hp"] == [Run(1, 3, ("n0",), 2)]
    assert result.schedule["spot"] == [Run(3, 6, ("n0",), 3)]  # no checkpoints: it waits
    # allowed to delay the HP job, the model still prefers none (delay comes first)
    delayed = solve_spot_schedule(inst, solver, 10, 2, hp_delay=True)
    assert delayed.status == "optimal" and delayed.hp_delay_slots == 0
    late = {"spot": [Run(0, 3, ("n0",), 3)], "hp": [Run(3, 5, ("n0",), 2)]}
    assert validate_schedule(inst, late) == ["hp: HP job starts at 3, not on arrival 1"]
    assert validate_schedule(inst, late, hp_delay=True) == []


@pytest.mark.parametrize("solver", SOLVERS)
def test_spot_job_is_not_preempted_when_the_hp_job_fits_elsewhere(solver: str) -> None:
    inst = instance([("n0", 4), ("n1", 4)], [job("spot", "LP", 0, 6, gpus=4, every=1, runs=3), job("hp", "HP", 2, 3, gpus=4)], 8, overhead=1)
    result = solve_spot_schedule(inst, solver, 10, 2)
    assert result.status == "optimal" and result.lost_gpu_slots == 0
    assert len(result.schedule["spot"]) == 1 and result.completion_slots == {"spot": 6}
    assert set(result.schedule["spot"][0].nodes) != set(result.schedule["hp"][0].nodes)


def test_gangs_never_split_across_time() -> None:
    inst = instance([("n0", 2), ("n1", 2)], [job("g", "LP", 0, 3, workers=2, gpus=2), job("hp", "HP", 0, 1, gpus=2)], 5)
    result = solve_spot_schedule(inst, "cpsat", 10, 2)
    assert result.schedule["g"] == [Run(1, 4, ("n0", "n1"), 3)]  # both pods together, after the HP job


def test_validator_names_each_broken_rule() -> None:
    inst = instance([("n0", 2)], [job("a", "LP", 1, 2, gpus=2, every=1), job("b", "LP", 0, 2, gpus=2)], 6)
    bad = {"a": [Run(0, 1, ("n0",), 1), Run(1, 3, ("n0", "n0"), 1)], "b": [Run(1, 3, ("n0",), 2)]}
    problems = validate_schedule(inst, bad)
    assert "a: starts at 0 before its arrival 1" in problems
    assert "a run 1: 2 pods, the gang has 1" in problems
    assert any(p.startswith("node 'n0' at slot 1: 6 GPUs used") for p in problems)
    assert any(p.startswith("a run 1: the last run makes 2 slots") for p in problems)


# ------------------------------------------------------------------------------------------------
# Bad input, size, the CLI
# ------------------------------------------------------------------------------------------------


def _write(tmp_path, data: dict) -> str:  # type: ignore[no-untyped-def]
    path = tmp_path / "instance.json"
    path.write_text(json.dumps(data))
    return str(path)


GOOD = {
    "horizon_slots": 6,
    "restart_overhead_slots": 1,
    "nodes": [{"name": "n0", "gpus": 4}],
    "jobs": [job("s", "LP", 0, 3, gpus=2, every=1), job("h", "HP", 1, 2, gpus=2)],
}


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d["jobs"][0].update(work_slots=0), "jobs[0].work_slots"),
        (lambda d: d["jobs"][1].update(submit_slot=-1), "jobs[1].submit_slot"),
        (lambda d: d["jobs"][0].update(checkpoint_interval_slots=0), "jobs[0].checkpoint_interval_slots"),
        (lambda d: d["jobs"][0].update(colour="red"), "jobs[0].colour: unknown field"),
        (lambda d: d.update(horizon_slots=0), "horizon_slots"),
        (lambda d: d["jobs"][0].update(gpus_per_worker=8), "jobs[0].workers"),
        (lambda d: d["jobs"][1].update(name="s"), "jobs[1].name: duplicate name 's'"),
        (lambda d: d["nodes"].append({"name": "n0", "gpus": 2}), "nodes[1].name: duplicate name 'n0'"),
        (lambda d: d["jobs"][0].update(submit_slot=5), "jobs[0].work_slots"),
        (lambda d: d["jobs"][1].update(max_runs=2), "jobs[1].max_runs"),
    ],
)
def test_bad_input_exits_2_naming_the_field(tmp_path, change, field) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(GOOD))
    change(data)
    result = runner.invoke(app, ["solve", "spot-schedule", _write(tmp_path, data)])
    assert result.exit_code == 2, result.output
    assert field in result.output
    assert "Traceback" not in result.output


def test_cli_writes_the_validated_schedule(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out.json"
    result = runner.invoke(
        app, ["solve", "spot-schedule", _write(tmp_path, GOOD), "--solver", "highs", "--time-limit-s", "10", "--workers", "1", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["status"] == "optimal" and data["violations"] == [] and data["solver"] == "highs"
    assert data["schedule"]["h"] == [{"start_slot": 1, "end_slot": 3, "nodes": ["n0"], "kept_slots": 2}]
    assert data["lost_gpu_slots"] == 0 and data["completion_slots"] == {"s": 3}


def test_too_large_is_refused_with_the_limit_unless_forced(tmp_path) -> None:  # type: ignore[no-untyped-def]
    slots = MAX_MODEL_CELLS // 2 + 1  # 1 node x 2 jobs: just over the limit; HP jobs only, a small model
    data = {"horizon_slots": slots, "nodes": [{"name": "n0", "gpus": 2}], "jobs": [job("h1", "HP", 0, 3), job("h2", "HP", slots - 3, 3)]}
    path = _write(tmp_path, data)
    refused = runner.invoke(app, ["solve", "spot-schedule", path])
    assert refused.exit_code == 2
    assert f"{MAX_MODEL_CELLS:,}" in refused.output and "--force" in refused.output and f"{2 * slots:,}" in refused.output
    forced = runner.invoke(app, ["solve", "spot-schedule", path, "--force", "--time-limit-s", "10", "-o", "-"])
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.output)["status"] == "optimal"
    with pytest.raises(ValueError, match="limit"):
        solve_spot_schedule(parse_instance(json.dumps(data)))


def test_bundled_example_solves_to_its_worked_optimum() -> None:
    from pathlib import Path

    from planner.models.spot_schedule import load_instance

    inst = load_instance(Path(__file__).resolve().parents[2] / "instances" / "spot-schedule" / "small.json")
    result = solve_spot_schedule(inst, "cpsat", 10, 2)
    # the 16-GPU spot job yields both nodes' worth to the HP job at slot 4 (checkpoint at 4): one restart
    assert result.status == "optimal" and result.lost_gpu_slots == 16 and sum(result.completion_slots.values()) == 18
    assert math.isclose(result.gap, 0.0)
