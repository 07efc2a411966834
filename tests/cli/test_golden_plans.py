"""Golden plans: every kind of plan the ``planner`` command makes, on a fixed set of snapshots, is the
output recorded in ``tests/data/golden/``, byte for byte once the run-to-run noise is removed.

Recorded before issue 41 (the move into layers) so that a restructuring can show it changes no plan.
Each case runs ``planner ARGS`` in this process through the console script that ``pyproject.toml``
names, as a user's command does, so the test follows the command wherever its code moves. The inputs
are checked-in instances and snapshots made by ``planner generate`` with fixed seeds (recorded too:
the generators must not change either); a few hundred nodes at most (openb's 1,213), about 12 s on one core.

Canonical form: a JSON output is parsed, the keys in ``DURATIONS`` and, under ``provenance``, in
``MACHINE`` are removed, and it is written back with the indentation it had (so a change of layout
shows too); any other output (kubectl scripts, YAML) is kept as written. A canonical form over
``MAX_INLINE_BYTES`` is stored as its SHA-256 with a summary (``*.sha256.json``), smaller ones in
full so that a failure shows the diff.

Only deterministic runs are recorded: heuristics and baselines with their seed, the exact methods
with one solver thread (CP-SAT with ``--deterministic`` where the command has it) on instances they
solve to optimality in well under a second, and ``hybrid`` where its search ends by itself (every
neighbourhood solved to optimality, nothing new to draw) long before its time limit. Left out:
``hybrid`` on snapshots it improves until the time limit, and the exact methods on instances they do
not prove optimal quickly (asi-500, openb), whose plans depend on the machine's speed;
``simulate placement`` (5 s for its smallest useful run; ``generate openb`` reads the same trace);
``serve``/``submit`` and the API, shells around the same engine that have tests of their own.

Re-recording::

    PLANNER_GOLDEN_RECORD=1 python -m pytest -n 0 tests/cli/test_golden_plans.py

is only allowed when a change of plans is intended, and the commit message must say which plans
change and why. Files of cases that no longer exist are removed by the same run.
"""

from __future__ import annotations

import contextlib
import difflib
import gzip
import hashlib
import importlib
import io
import json
import os
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "data" / "golden"
RECORD = os.environ.get("PLANNER_GOLDEN_RECORD") == "1"
MAX_INLINE_BYTES = 50_000

DURATIONS = frozenset(
    {
        "wall_s",  # every plan's report, each solve and solver phase, spot-schedule, simulate runs
        "solve_wall_s",  # defrag exact: the solver's share
        "heuristic_wall_s",
        "exact_wall_s",  # compare: the gap section
        "solve_s",  # preempt exact
        "phase_gpus_switches_s",
        "phase_entropy_s",
        "entropy_lp_s",
        "entropy_neighbourhood_s",
        "entropy_switch_slack_s",  # allocate exact
        "make_room_wall_s",  # simulate queue
    }
)
"""Measured durations, removed wherever they occur: they differ on every run."""

MACHINE = frozenset({"planner", "versions", "host_cores", "cpu_count"})
"""Keys of a ``provenance`` object that describe the installation and the machine, not the plan: the
planner's version and git commit (a clone has one, a worktree none), Python's and the libraries'
versions, the cores. The options as applied and the snapshot's digest stay."""

# ----------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------

BUNDLED = {
    "fig15": "instances/fig15-ejection-chain.json",  # 4 nodes: the ASI paper's ejection chain
    "asi500": "instances/asi-500.json",  # 500 nodes, 1,176 pods
    "gpu-cluster": "instances/kubernetes/gpu-cluster.json",  # kubectl List: 16 nodes, MIG, time-slicing, PDBs
    "asi-rendered": "instances/kubernetes/asi-rendered.json",  # kubectl List of an ASI-like cluster
    "spot-schedule": "instances/spot-schedule/small.json",
    "makeroom-repro": "tests/data/repros/claims-makeroom-conditional-proof.json",  # 5 nodes, 2 pending gangs
    "standby": "tests/data/standby-reactivate.json",  # a standby pod whose lent GPUs spot pods hold
}
GZIPPED = {"mixed-200": "tests/data/k8s-mixed-200.json.gz"}  # kubectl List: 200 nodes, 2,667 objects

GENERATED = {
    "asi64": ("generate", "asi", "--nodes", "64", "--seed", "3", "--pending-jobs", "3"),
    "asi96-batch": ("generate", "asi", "--nodes", "96", "--seed", "5", "--large-jobs", "3"),
    "spot40": ("generate", "spot", "--nodes", "40", "--seed", "1", "--pending-jobs", "2"),
    "flextopo8": ("generate", "flextopo", "--nodes", "8", "--pending", "B=1"),
    "openb": ("generate", "openb", "--at", "11000000", "--no-departures"),  # 1,213 nodes, 2,682 pods
    "gpu-cluster-imported": ("import", "kubernetes", "{gpu-cluster}"),
}
"""Snapshots the cases read that ``planner`` itself makes (each is a golden case too)."""

# ----------------------------------------------------------------------------------------------
# Cases: name -> planner arguments ({input} is an input's path); the suffix of text outputs
# ----------------------------------------------------------------------------------------------

DEFRAG = ("defrag", "--executor", "inline", "-o", "json")
ONE_THREAD = ("--solver-workers", "1")
PREEMPT_EXACT = ("--method", "exact", "--solver", "cpsat", *ONE_THREAD)

CASES: dict[str, tuple[str, ...]] = {
    # defrag: every method on the Fig. 15 chain
    "defrag-ipc-fig15": (*DEFRAG, "{fig15}"),
    "defrag-ipc-trim-off-fig15": (*DEFRAG, "{fig15}", "--trim", "off"),
    "defrag-ipc-trim-exact-fig15": (*DEFRAG, "{fig15}", "--trim", "exact", *ONE_THREAD),
    "defrag-random-fig15": (*DEFRAG, "{fig15}", "--method", "random", "--seed", "7", "--threshold", "0.9"),
    "defrag-descheduler-fig15": (*DEFRAG, "{fig15}", "--method", "descheduler"),
    "defrag-repack-fig15": (*DEFRAG, "{fig15}", "--method", "repack"),
    "defrag-exact-highs-fig15": (*DEFRAG, "{fig15}", "--method", "exact", *ONE_THREAD),
    "defrag-exact-cpsat-fig15": (*DEFRAG, "{fig15}", "--method", "exact", "--solver", "cpsat", "--deterministic", *ONE_THREAD),
    "defrag-compare-fig15": (*DEFRAG, "{fig15}", "--method", "compare", *ONE_THREAD),
    "defrag-auto-fig15": (*DEFRAG, "{fig15}", "--method", "auto", *ONE_THREAD),
    "defrag-hybrid-fig15": (*DEFRAG, "{fig15}", "--method", "hybrid", *ONE_THREAD),
    # defrag: a 64-node ASI-like snapshot, every method, the exact model's variants, limits
    "defrag-ipc-asi64": (*DEFRAG, "{asi64}"),
    "defrag-random-asi64": (*DEFRAG, "{asi64}", "--method", "random", "--seed", "7", "--threshold", "0.6"),
    "defrag-descheduler-asi64": (*DEFRAG, "{asi64}", "--method", "descheduler", "--threshold", "0.6"),
    "defrag-repack-asi64": (*DEFRAG, "{asi64}", "--method", "repack"),
    "defrag-exact-highs-asi64": (*DEFRAG, "{asi64}", "--method", "exact", *ONE_THREAD),
    "defrag-exact-cpsat-asi64": (*DEFRAG, "{asi64}", "--method", "exact", "--solver", "cpsat", "--deterministic", *ONE_THREAD),
    "defrag-exact-class-weighted-asi64": (*DEFRAG, "{asi64}", "--method", "exact", "--formulation", "class", "--lexicographic", "weighted", *ONE_THREAD),
    "defrag-compare-asi64": (*DEFRAG, "{asi64}", "--method", "compare", *ONE_THREAD),
    "defrag-hybrid-asi64": (*DEFRAG, "{asi64}", "--method", "hybrid", *ONE_THREAD),
    "defrag-auto-asi64": (*DEFRAG, "{asi64}", "--method", "auto", *ONE_THREAD),
    "defrag-ipc-limits-asi64": (
        *DEFRAG,
        "{asi64}",
        "--max-moves",
        "12",
        "--max-moves-per-node",
        "3",
        "--same-asw",
        "--max-moves-per-wave",
        "4",
        "--max-unavailable-per-job",
        "1",
    ),
    "defrag-ipc-limit-costs-asi64": (*DEFRAG, "{asi64}", "--max-moves", "8", "--max-moves-per-wave", "3", "--limit-costs"),
    # defrag: 500 nodes; five partitions inline and on a process pool (the same waves), a baseline
    "defrag-ipc-asi500": (*DEFRAG, "{asi500}"),
    "defrag-ipc-partitions-asi500": (*DEFRAG, "{asi500}", "--partition-size", "100"),
    "defrag-ipc-process-asi500": ("defrag", "{asi500}", "--executor", "process", "--workers", "2", "--partition-size", "100", "-o", "json"),
    "defrag-descheduler-asi500": (*DEFRAG, "{asi500}", "--method", "descheduler"),
    # defrag: the openb trace replayed (the FGD paper's fill)
    "defrag-ipc-openb": (*DEFRAG, "{openb}"),
    # make-room: heuristic, exact and both, for one and two pending jobs
    "makeroom-ipc-asi64": (*DEFRAG, "{asi64}", "--make-room", "task-000005"),
    "makeroom-ipc-two-jobs-asi64": (*DEFRAG, "{asi64}", "--make-room", "task-000005,task-000125"),
    "makeroom-exact-asi64": (*DEFRAG, "{asi64}", "--make-room", "task-000005", "--method", "exact", *ONE_THREAD),
    "makeroom-compare-asi64": (*DEFRAG, "{asi64}", "--make-room", "task-000005,task-000125", "--method", "compare", *ONE_THREAD),
    "makeroom-ipc-repro": (*DEFRAG, "{makeroom-repro}", "--make-room", "J0,J1"),
    "makeroom-exact-repro": (*DEFRAG, "{makeroom-repro}", "--make-room", "J0,J1", "--method", "exact", *ONE_THREAD),
    # preempt: every method for an ASW-required HP job on 40 spot-trace nodes
    "preempt-spotgpu-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "-o", "json"),
    "preempt-spotgpu-paper-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "spotgpu-paper", "-o", "json"),
    "preempt-spotgpu-isolated-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "spotgpu-isolated", "-o", "json"),
    "preempt-flextopo-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "flextopo", "-o", "json"),
    "preempt-k8s-default-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "k8s-default", "-o", "json"),
    "preempt-volcano-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "volcano", "-o", "json"),
    "preempt-random-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "random", "--seed", "7", "-o", "json"),
    "preempt-exact-cpsat-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", *PREEMPT_EXACT, "-o", "json"),
    "preempt-exact-highs-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "exact", "--solver", "highs", *ONE_THREAD, "-o", "json"),
    "preempt-compare-spot40": ("preempt", "{spot40}", "--job", "hp-new-0", "--method", "compare", "--solver", "cpsat", *ONE_THREAD, "-o", "json"),
    "preempt-spotgpu-second-job-spot40": ("preempt", "{spot40}", "--job", "hp-new-1", "-o", "json"),
    # preempt: FlexTopo's NUMA cluster
    "preempt-flextopo-flextopo8": ("preempt", "{flextopo8}", "--job", "B-new-0", "--method", "flextopo", "-o", "json"),
    "preempt-spotgpu-flextopo8": ("preempt", "{flextopo8}", "--job", "B-new-0", "-o", "json"),
    "preempt-exact-flextopo8": ("preempt", "{flextopo8}", "--job", "B-new-0", *PREEMPT_EXACT, "-o", "json"),
    # preempt: wake a standby pod
    "preempt-spotgpu-reactivate-standby": ("preempt", "{standby}", "--reactivate", "s", "-o", "json"),
    "preempt-exact-reactivate-standby": ("preempt", "{standby}", "--reactivate", "s", *PREEMPT_EXACT, "-o", "json"),
    # allocate: a batch of three large jobs, every method; one job alone
    "allocate-auto-asi96": ("allocate", "{asi96-batch}", *ONE_THREAD, "-o", "json"),
    "allocate-largest-first-asi96": ("allocate", "{asi96-batch}", "--method", "largest-first", "-o", "json"),
    "allocate-greedy-asi96": ("allocate", "{asi96-batch}", "--method", "greedy", "-o", "json"),
    "allocate-alg2-asi96": ("allocate", "{asi96-batch}", "--method", "alg2", "-o", "json"),
    "allocate-kueue-bestfit-asi96": ("allocate", "{asi96-batch}", "--method", "kueue-bestfit", "-o", "json"),
    "allocate-kueue-leastfree-asi96": ("allocate", "{asi96-batch}", "--method", "kueue-leastfree", "-o", "json"),
    "allocate-slurm-asi96": ("allocate", "{asi96-batch}", "--method", "slurm", "-o", "json"),
    "allocate-random-asi96": ("allocate", "{asi96-batch}", "--method", "random", "--seed", "7", "-o", "json"),
    "allocate-exact-asi96": ("allocate", "{asi96-batch}", "--method", "exact", *ONE_THREAD, "-o", "json"),
    "allocate-exact-no-entropy-asi96": ("allocate", "{asi96-batch}", "--method", "exact", "--no-entropy", *ONE_THREAD, "-o", "json"),
    "allocate-compare-asi96": ("allocate", "{asi96-batch}", "--method", "compare", *ONE_THREAD, "-o", "json"),
    "allocate-auto-one-job-asi96": ("allocate", "{asi96-batch}", "--jobs", "batch-001", *ONE_THREAD, "-o", "json"),
    "allocate-alg2-one-job-asi96": ("allocate", "{asi96-batch}", "--jobs", "batch-001", "--method", "alg2", "-o", "json"),
    # kubernetes: imported on the fly, planned, rendered for kubectl and koordinator, exported back
    "defrag-ipc-gpu-cluster": (*DEFRAG, "{gpu-cluster}", "--from", "kubernetes"),
    "defrag-ipc-gpu-cluster-kubectl.sh": ("defrag", "{gpu-cluster}", "--from", "kubernetes", "--executor", "inline", "-o", "kubectl"),
    "defrag-ipc-gpu-cluster-podmigrationjob.yaml": ("defrag", "{gpu-cluster}", "--from", "kubernetes", "--executor", "inline", "-o", "podmigrationjob"),
    "allocate-auto-gpu-cluster": ("allocate", "{gpu-cluster}", "--from", "kubernetes", *ONE_THREAD, "-o", "json"),
    "preempt-spotgpu-infeasible-gpu-cluster": ("preempt", "{gpu-cluster}", "--from", "kubernetes", "--job", "research/Job/train-big", "-o", "json"),
    "defrag-ipc-asi-rendered": (*DEFRAG, "{asi-rendered}", "--from", "kubernetes"),
    "defrag-ipc-mixed-200": (*DEFRAG, "{mixed-200}", "--from", "kubernetes"),
    "export-kubernetes-gpu-cluster": ("export", "kubernetes", "{gpu-cluster-imported}"),
    "preempt-spotgpu-spot40-kubectl.sh": ("preempt", "{spot40}", "--job", "hp-new-0", "-o", "kubectl"),
    "allocate-largest-first-asi96-kubectl.sh": ("allocate", "{asi96-batch}", "--method", "largest-first", "-o", "kubectl"),
    # the exact HP/spot schedule, the fragmentation report
    "solve-spot-schedule-small": ("solve", "spot-schedule", "{spot-schedule}", "--workers", "1", "-o", "-"),
    "report-asi64": ("report", "{asi64}", "--json", "--shape", "8g64c", "--requests", "64g768c"),
    # simulations: each decision is a plan
    "simulate-spot-spot40": (
        "simulate",
        "spot",
        "--nodes",
        "40",
        "--days",
        "1",
        "--hp-load",
        "0.8",
        "--spot-load",
        "0.6",
        "--policy",
        "spotgpu",
        "--policy",
        "k8s-default",
        "--no-progress",
        "--out",
        "-",
    ),
    "simulate-queue-32": (
        "simulate",
        "queue",
        "--nodes",
        "32",
        "--days",
        "2",
        "--warmup-days",
        "0",
        "--seeds",
        "1",
        "--policy",
        "backfill",
        "--policy",
        "strict-fifo",
        "--stuck-after-s",
        "600",
        "--out",
        "-",
    ),
}


# ----------------------------------------------------------------------------------------------
# Running the command and the canonical form
# ----------------------------------------------------------------------------------------------


def _entry_point() -> Callable[[], Any]:
    """The function the ``planner`` command runs, as ``pyproject.toml`` names it."""
    target = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["planner"]
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def planner(args: tuple[str, ...]) -> str:
    """``planner ARGS`` run in this process as the console script runs it; its standard output."""
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with mock.patch.object(sys, "argv", ["planner", *args]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            _entry_point()()
        except SystemExit as done:
            code = done.code
    assert code in (0, None), f"planner {' '.join(args)}: exit {code}\n{err.getvalue()}"
    return out.getvalue()


def strip(data: Any, key: str | None = None) -> Any:
    """``data`` without the keys that vary from run to run (``DURATIONS``; ``MACHINE`` in provenance)."""
    if isinstance(data, dict):
        drop = DURATIONS | MACHINE if key == "provenance" else DURATIONS
        return {k: strip(v, k) for k, v in data.items() if k not in drop}
    if isinstance(data, list):
        return [strip(item) for item in data]
    return data


def canonical(output: str) -> str:
    """The output with the run-to-run noise removed: JSON stripped and written back in its own layout
    (the command writes ``json.dumps`` with indent 2, or compact); any other text as it is."""
    try:
        data = json.loads(output)
    except ValueError:
        return output
    for indent in (2, None, 1):
        for end in ("\n", ""):
            if json.dumps(data, indent=indent) + end == output:
                return json.dumps(strip(data), indent=indent) + end
    raise AssertionError(f"JSON output not in a json.dumps layout: {output[:200]!r}")


def summary(text: str) -> dict[str, Any]:
    """A few facts of a large output, to tell what changed when only its digest is stored: the top
    level's values and sizes, and the report's values."""
    try:
        data = json.loads(text)
    except ValueError:
        return {"lines": text.count("\n")}
    if not isinstance(data, dict):
        return {"items": len(data)} if isinstance(data, list) else {"value": data}
    facts: dict[str, Any] = {}
    for key, value in data.items():
        if key == "report" and isinstance(value, dict):
            facts[key] = {k: v for k, v in value.items() if not isinstance(v, (dict, list))}
        elif isinstance(value, (dict, list)):
            facts[key] = {"items": len(value)}
        else:
            facts[key] = value
    return facts


# ----------------------------------------------------------------------------------------------
# Stored form
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Golden:
    """Where a case is recorded: in full (``name`` + ``.json`` unless the name has its own suffix),
    or as a digest (``name.sha256.json``)."""

    name: str

    @property
    def full(self) -> Path:
        return GOLDEN / (self.name if "." in self.name else f"{self.name}.json")

    @property
    def digest(self) -> Path:
        return GOLDEN / f"{self.name}.sha256.json"

    def record(self, text: str) -> None:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        self.full.unlink(missing_ok=True)
        self.digest.unlink(missing_ok=True)
        if len(text.encode()) <= MAX_INLINE_BYTES:
            self.full.write_text(text, encoding="utf-8")
        else:
            self.digest.write_text(json.dumps(_digest_of(text), indent=1) + "\n", encoding="utf-8")

    def check(self, text: str, keep: Path) -> None:
        """Assert ``text`` is as recorded; a large mismatch is kept at ``keep`` for a look."""
        if self.full.exists():
            expected = self.full.read_text(encoding="utf-8")
            assert text == expected, f"{self.full.name} differs:\n{_diff(expected, text)}"
        else:
            assert self.digest.exists(), f"no golden file for {self.name}: record it (see the module docstring)"
            expected = json.loads(self.digest.read_text(encoding="utf-8"))
            actual = _digest_of(text)
            if actual != expected:
                keep.write_text(text, encoding="utf-8")
                assert actual == expected, (
                    f"{self.digest.name} differs (the output is at {keep}):\n{_diff(json.dumps(expected, indent=1), json.dumps(actual, indent=1))}"
                )


def _digest_of(text: str) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(text.encode()).hexdigest(), "bytes": len(text.encode()), "summary": summary(text)}


def _diff(expected: str, actual: str, lines: int = 80) -> str:
    """A unified diff, one JSON value per line when the texts are compact JSON."""

    def readable(text: str) -> list[str]:
        try:
            return json.dumps(json.loads(text), indent=1).splitlines() if "\n" not in text.strip() else text.splitlines()
        except ValueError:
            return text.splitlines()

    diff = list(difflib.unified_diff(readable(expected), readable(actual), "recorded", "now", lineterm="", n=2))
    return "\n".join(diff[:lines]) + (f"\n... {len(diff) - lines} more diff lines" if len(diff) > lines else "")


# ----------------------------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every input by name: the checked-in files, the gzipped List unpacked, the made snapshots."""
    where = tmp_path_factory.mktemp("golden-inputs")
    paths = {name: REPO / path for name, path in BUNDLED.items()}
    for name, path in GZIPPED.items():
        paths[name] = where / f"{name}.json"
        paths[name].write_bytes(gzip.decompress((REPO / path).read_bytes()))
    for name, args in GENERATED.items():
        paths[name] = where / f"{name}.json"
        paths[name].write_text(planner(_filled(args, paths)), encoding="utf-8")
    return paths


def _filled(args: tuple[str, ...], paths: dict[str, Path]) -> tuple[str, ...]:
    """``args`` with each ``{input}`` replaced by that input's path."""
    return tuple(str(paths[arg[1:-1]]) if arg.startswith("{") else arg for arg in args)


GOLDEN_CASES = {**{f"snapshot-{name}": None for name in GENERATED}, **CASES}


@pytest.mark.parametrize("name", list(GOLDEN_CASES))
def test_output_is_as_recorded(name: str, inputs: dict[str, Path], tmp_path: Path) -> None:
    args = GOLDEN_CASES[name]
    text = inputs[name.removeprefix("snapshot-")].read_text(encoding="utf-8") if args is None else planner(_filled(args, inputs))
    golden = Golden(name)
    if RECORD:
        golden.record(canonical(text))
    golden.check(canonical(text), tmp_path / name)


def test_every_golden_file_has_a_case() -> None:
    names = {Golden(name).full.name for name in GOLDEN_CASES} | {Golden(name).digest.name for name in GOLDEN_CASES}
    stale = sorted(path.name for path in GOLDEN.iterdir() if path.name not in names and path.name != "README.md")
    if RECORD:
        for name in stale:
            (GOLDEN / name).unlink()
        return
    assert not stale, f"golden files of no case (re-record to remove them): {stale}"
