"""``solve_joint``: levels (a) and (b) of the joint topology model in one weighted solve, then the
entropy phase (c) (``entropy_phase.py``); the result and the claims it makes."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.models.topology.entropy_phase import _entropy_phase
from planner.models.topology.formulation import Pairs, _Model
from planner.models.topology.search import _solve
from planner.state import ClusterState


@dataclass
class JointResult:
    """Pods per (job, node), the solver's claims and sizes."""

    assignment: Pairs
    status: str
    gpus_bound: float | None
    switches_bound: float | None
    exact: bool
    fields: dict[str, Any] = field(default_factory=dict)


def solve_joint(
    state: ClusterState,
    jobs: dict[str, list[int]],
    levels: Mapping[str, tuple[str, bool]],
    minimum: dict[str, int],
    solver: str = "auto",
    time_limit_s: float = 10.0,
    workers: int = 8,
    hint: Pairs | None = None,
    optimise_entropy: bool = True,
    within: dict[str, int] | None = None,
) -> JointResult:
    """Place ``jobs`` (name -> pending pod indexes) jointly; ``levels``: name -> (level, required);
    ``within``: name -> the switch (asw or spine domain, at the job's level) a required job's running
    pods are under, which its other pods must join.
    ``hint``: a heuristic assignment to warm-start from (and to keep if the solver stops early).

    Levels (a) and (b) are one solve of W * GPUs - switches with W = (switch variables + 1): no
    switch saving can buy a GPU, so its optimum is the lexicographic one (HiGHS proved it in a
    fraction of the time two phases took; CP-SAT's deterministic search was slower still)."""
    deadline = time.perf_counter() + time_limit_s
    model = _Model(state, jobs, levels, minimum, within or {})
    m = model.m
    fields: dict[str, Any] = {
        "variables": m.num_vars,
        "rows": m.num_rows,
        "node_classes": len(model.classes),
        "shapes": len(model.shapes),
        "objective_levels": ["gpus", "switches", *(["entropy"] if optimise_entropy else [])],
        "proven_levels": [],
    }
    # plans differ in GPUs by multiples of ``unit`` (the gcd of fixed jobs' GPUs and elastic jobs' GPUs
    # per pod): it is enough that ``unit`` GPUs outweigh every switch, so W can be that much smaller.
    # Objectives 16 times smaller on the benchmark's batches: HiGHS's bound on batch 30 had sat within
    # rounding (V + 0.999999999) of a plan worth V + 1; with W / 16 it proves that batch in 0.5 s
    unit = math.gcd(*(model.gpus[j] * (len(model.jobs[j]) if model.minimum[j] == len(model.jobs[j]) else 1) for j in model.names)) or 1
    weight = len(model.u) // unit + 1
    m.maximize([(v, g * weight) for v, g in model.placed] + [(v, -1) for v in model.u.values()])
    start_hint = model.hint(hint) if hint else None
    first = _solve(m, solver, deadline - time.perf_counter(), workers, start_hint, fields, "gpus_switches_proof")
    fields.update(phase_gpus_switches=first.status, phase_gpus_switches_s=round(first.wall_s, 3), phase_gpus_switches_solver=first.solver)
    values = first.values
    if start_hint is not None and (values is None or m.value_of_objective(start_hint) > m.value_of_objective(values)):
        values = start_hint  # a solver that stopped early never loses the heuristic's plan
    if values is None:
        return JointResult({}, first.status, None, None, model.exact, fields)
    # the weighted bound B bounds GPUs by (B + switches) / W, a multiple of the unit; with the GPUs
    # proven, switches by W * GPUs - B
    gpus, gpus_bound, switches_bound = model.gpus_of(values), None, None
    if model.exact and first.bound is not None:
        gpus_bound = float(unit * math.floor((first.bound + len(model.u)) / (weight * unit) + 1e-9))
        if gpus >= gpus_bound:
            switches_bound = float(math.ceil(weight * gpus - first.bound - 1e-6))
    proven = first.status == "optimal" and first.objective is not None and m.value_of_objective(values) >= first.objective - 1e-6
    if proven and model.exact:
        fields["proven_levels"] = ["gpus", "switches"]
    if optimise_entropy and proven:
        held = [(model.placed, gpus, gpus, "(a) GPUs held")]
        values, entropy_proven = _entropy_phase(model, values, held, solver, deadline, workers, fields)
        if entropy_proven and model.exact:
            fields["proven_levels"].append("entropy")
    # optimal only for the whole objective asked: a skipped or unproven entropy level leaves it feasible
    status = "optimal" if fields["proven_levels"] == fields["objective_levels"] else "feasible"
    return JointResult(model.assignment(values), status, gpus_bound, switches_bound, model.exact, fields)
