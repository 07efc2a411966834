"""The exact spot schedule (ASI paper, Appendix A, as corrected in seed-specs B.3/B.4): a time-indexed
integer program over the whole horizon that decides when each job runs, on which nodes, and where spot
jobs are evicted, with the least lost GPU-time first and then the least spot completion time.

Semantics (those of ``planner.simulate.spot``): time is integer slots (slot t covers [t, t+1)). Job i
has w_i pods of g_i GPUs (G_i = w_i g_i), arrives at a_i and needs p_i slots of progress. A run that
starts at s pays the restart overhead o = r before progressing (its first run pays none), checkpoints
every kappa_i slots of its own progress (at s + o + kappa, s + o + 2 kappa, ...), and evicted at e keeps
floor(max(0, e - s - o) / kappa) kappa (nothing without checkpoints). HP jobs run once, from arrival.

Objective, minimised lexicographically (spot jobs only; all restart overhead counted):
  L1  lost GPU-slots     sum_i G_i (slots run - p_i)  = run but not kept by a checkpoint;
                         in simulator terms ``lost_gpu_s + overhead_gpu_s``;
  L2  completion slots   sum_i (finish_i - a_i).
With ``hp_delay=True`` HP jobs may start late, and L0 = sum of HP start delays comes first.

A dominance argument shrinks the model without changing its optimum. In any schedule, (i) an
evicted run can be cut back to its last checkpoint (same progress kept, fewer GPU-slots, capacity
freed), and (ii) an evicted run that keeps nothing can be removed (if it was the first, the next run
loses its overhead and ends earlier). Neither raises L1 or L2 or the number of runs. So some optimal
schedule evicts every run exactly at one of its checkpoints: runs after the first start at a
cumulative progress that is a multiple of kappa_i, jobs without checkpoints run once, and
L1 = sum_i G_i r (runs_i - 1). The tests check this against a brute force over *all* schedules.

Variables (job i, node j, slot t in [a_i, T)):
  v[i,t]     binary, i runs in t;          s[i,t]  binary, i has started by t (first start: s_t - s_{t-1});
  R[i,t]     binary, a restart (run >= 2) starts at t; h[i,t] = sum_{t-r < t' <= t} R[i,t'] (overhead);
  P[i,t]     integer, progress made before slot t;  m[i,t] integer, checkpoints of P at a restart;
  d[i,t]     binary, i has finished by t (t >= a_i + p_i);
  y[i,j,t]   integer, pods of i on j in t (HP jobs from arrival: one y[i,j] for their whole run).

Equations of the paper, and what replaces each (2a..2g):
  (2a) ratio objective -> the linear lexicographic L1, L2 above, as one weighted sum that is exact:
       with U2 = sum_i (T - a_i - p_i) >= L2 - sum p_i >= 0, minimising W1 L1 + (L2 - sum p_i) with
       W1 = U2 + 1 orders solutions exactly as (L1, L2) does (a unit of L1 outweighs every L2 range);
       likewise W0 = W1 U1 + U2 + 1 over L0 with U1 = sum_i G_i (T - a_i - p_i). Its second term is
       a constant once every job completes (B.3 point 2: sum_i G_i p_i / sum_j S_j T), and its first,
       sum x (E_i - 1) / sum x E_i, is bilinear (E_i times pod-slots, both decided): the Dinkelbach
       option is NOT implemented; the schedule that minimises L1 also minimises the restarts that
       ratio counts when all jobs have one shape.
  (2b) capacity: sum_i g_i y[i,j,t] <= S_j for every node and slot (same; only eligible pairs exist).
  (2c) gang: sum_j y[i,j,t] = w_i v[i,t]; no migration inside a run (B.3 point 5):
       |y[i,j,t] - y[i,j,t-1]| <= cap_ij (1 - v[i,t-1] + R[i,t]) and the same with v[i,t].
  (2d) HP runs once: R does not exist for HP jobs; they start at arrival and run p_i slots, y fixed.
  (2e) pods only while running (B.3 point 4): y is tied to v by (2c) in every slot, not only at t^e;
       runs are intervals: v_t - v_{t-1} <= (s_t - s_{t-1}) + R_t, a start is active, v_t <= s_t,
       1 + sum_t R[i,t] <= K_i, overhead h[i,t] <= v[i,t].
  (2f) progress to the last checkpoint (B.3 point 7): P_{t+1} = P_t + v_t - h_t, P_T = p_i (every job
       completes in the horizon), and at a restart P_t = kappa m_t < p_i (the previous run ended at a
       checkpoint; by the dominance above nothing else is needed).
  (2g) y integer >= 0 (same); the release a_i and completion d[i,t] (v + d <= 1, d monotone) added
       (B.3 point 6).

Nodes are not aggregated: packing pods on one node over time is not linear in counts per node class,
so an aggregated model is only a relaxation. Instead identical nodes (same GPUs and model) are ordered
by the pods of one single-run job (valid: permuting identical nodes maps schedules to schedules).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from planner.models.backends import solve
from planner.models.milp import SolveStatus
from planner.models.spot_instance import (  # noqa: F401 - re-exported: the model's public names
    DEFAULT_MAX_RUNS,
    MAX_MODEL_CELLS,
    MAX_SLOTS,
    Run,
    Schedule,
    ScheduleJob,
    ScheduleNode,
    SpotInstance,
    instance_problems,
    load_instance,
    parse_instance,
    schedule_from_dict,
    schedule_measures,
    size_problem,
    validate_schedule,
)
from planner.models.spot_schedule_model import _Model


@dataclass
class SpotScheduleResult:
    status: SolveStatus
    """optimal (lexicographically, proven) | feasible | infeasible (proven) | timeout | error"""
    solver: str
    wall_s: float
    schedule: Schedule | None
    lost_gpu_slots: int | None
    completion_slots: dict[str, int] | None
    """Spot jobs: finish - submit."""
    hp_delay_slots: int | None
    objective: dict[str, int | None]
    bound: dict[str, int | None]
    """Proven lower bound of each level, given only once the levels before it are proven."""
    gap: float | None
    """Relative gap of the first level not proven, on the values reported ((value - bound) / value);
    0 when optimal; None when no bound is known for it."""
    variables: int
    rows: int
    message: str = ""
    violations: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.schedule is not None:
            data["schedule"] = {name: [asdict(r) | {"nodes": list(r.nodes)} for r in runs] for name, runs in self.schedule.items()}
        return data


def solve_spot_schedule(
    inst: SpotInstance, solver: str = "cpsat", time_limit_s: float = 60.0, workers: int = 2, hp_delay: bool = False, force: bool = False, seed: int = 0
) -> SpotScheduleResult:
    """The lexicographically optimal schedule (or the best found in ``time_limit_s``), validated."""
    problem = size_problem(inst)
    if problem and not force:
        raise ValueError(problem)
    start = time.perf_counter()
    model = _Model(inst, hp_delay)
    milp = model.milp
    warm = greedy_schedule(inst)
    hint = model.encode(warm) if warm is not None else None
    left = max(0.05, time_limit_s - (time.perf_counter() - start))
    result = solve(milp, solver, left, workers, hint, seed=seed, wall_cap_s=left)
    levels = ("hp_delay_slots", "lost_gpu_slots", "completion_slots")
    if result.values is None:
        status: SolveStatus = result.status if result.status in ("infeasible", "error") else "timeout"
        return SpotScheduleResult(
            status,
            solver,
            wall_s=time.perf_counter() - start,
            schedule=None,
            lost_gpu_slots=None,
            completion_slots=None,
            hp_delay_slots=None,
            objective=dict.fromkeys(levels),
            bound=dict.fromkeys(levels),
            gap=None,
            variables=milp.num_vars,
            rows=milp.num_rows,
            message=result.message,
        )
    broken = milp.violated_rows(result.values)
    schedule = model.decode(result.values)
    found = model.level_values(result.values)
    bounds = model.level_bounds(result.bound, found)
    lost, completion, delay = schedule_measures(inst, schedule)
    objective = dict(found)
    sum_p = sum(j.work_slots for j in inst.jobs if j.priority == "LP")
    objective["completion_slots"] = found["completion_slots"] + sum_p
    violations = [f"model row broken by the solver's values: {name}" for name in broken[:5]]
    violations += validate_schedule(inst, schedule, hp_delay)
    if (lost, sum(completion.values()), delay) != (objective["lost_gpu_slots"], objective["completion_slots"], objective["hp_delay_slots"]):
        violations.append(f"the schedule measures lost {lost}, completion {sum(completion.values())}, HP delay {delay}; the model said {objective}")
    completion_bound = bounds["completion_slots"]
    if completion_bound is not None:
        bounds["completion_slots"] = completion_bound + sum_p
    gap: float | None = 0.0
    for name in levels:
        level_bound = bounds[name]
        if level_bound is None:
            gap = None
            break
        if level_bound < objective[name]:
            gap = (objective[name] - level_bound) / objective[name]
            break
    return SpotScheduleResult(
        "optimal" if gap == 0.0 else "feasible",
        solver,
        wall_s=time.perf_counter() - start,
        schedule=schedule,
        lost_gpu_slots=lost,
        completion_slots=completion,
        hp_delay_slots=delay,
        objective=dict[str, int | None](objective),
        bound=bounds,
        gap=gap,
        variables=milp.num_vars,
        rows=milp.num_rows,
        message=result.message,
        violations=violations,
    )


def greedy_schedule(inst: SpotInstance) -> Schedule | None:
    """A list schedule (the warm start): HP jobs at arrival, then spot jobs by arrival, each from the
    earliest slot where its gang fits (first-fit), run until done or until its nodes are taken, then
    cut back to its last checkpoint and resumed later (up to its runs); None when a job cannot finish
    in the horizon this way."""
    T, r = inst.horizon_slots, inst.restart_overhead_slots
    free = [[n.gpus] * T for n in inst.nodes]

    def place(job: ScheduleJob, start: int) -> list[int]:
        pods: list[int] = []
        for j, node in enumerate(inst.nodes):
            pods += [j] * min(free[j][start] // job.gpus_per_worker, inst.pods_fit(job, node), job.workers - len(pods))
        return pods if len(pods) == job.workers else []

    def lasts(job: ScheduleJob, pods: list[int], start: int, length: int) -> int:
        """The first slot from ``start`` (at most start + length) where the pods no longer fit."""
        need: defaultdict[int, int] = defaultdict(int)  # node index -> GPUs the pods take on it
        for j in pods:
            need[j] += job.gpus_per_worker
        t = start
        while t < min(T, start + length) and all(free[j][t] >= g for j, g in need.items()):
            t += 1
        return t

    schedule: Schedule = {}
    for job in sorted(inst.jobs, key=lambda x: (x.priority != "HP", x.submit_slot, x.name)):
        runs: list[Run] = []
        done, earliest = 0, job.submit_slot
        while done < job.work_slots:
            overhead = r if runs else 0
            left = job.work_slots - done
            last_run = len(runs) + 1 == job.runs_allowed or job.checkpoint_interval_slots is None
            chosen = None
            for start in [job.submit_slot] if job.priority == "HP" else range(earliest, T):
                pods = place(job, start)
                if not pods:
                    continue
                end = lasts(job, pods, start, overhead + left)
                if end == start + overhead + left:
                    chosen = (start, end, pods, left)
                    break
                kappa = job.checkpoint_interval_slots
                kept = 0 if last_run or kappa is None else max(0, end - start - overhead) // kappa * kappa
                if kept:
                    chosen = (start, start + overhead + kept, pods, kept)
                    break
            if chosen is None:
                return None
            start, end, pods, kept = chosen
            for j in pods:
                for t in range(start, end):
                    free[j][t] -= job.gpus_per_worker
            runs.append(Run(start, end, tuple(inst.nodes[j].name for j in pods), kept))
            done, earliest = done + kept, end
        schedule[job.name] = runs
    return schedule


# ------------------------------------------------------------------------------------------------
# The validator: an independent check of any schedule against the simulator's semantics
# ------------------------------------------------------------------------------------------------


def result_json(result: SpotScheduleResult) -> str:
    return json.dumps(result.to_dict(), indent=2) + "\n"


__all__ = [
    "MAX_MODEL_CELLS",
    "Run",
    "Schedule",
    "SpotInstance",
    "SpotScheduleResult",
    "greedy_schedule",
    "instance_problems",
    "load_instance",
    "parse_instance",
    "schedule_measures",
    "size_problem",
    "solve_spot_schedule",
    "validate_schedule",
]
