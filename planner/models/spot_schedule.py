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

import itertools
import json
import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from planner.models.backends import solve
from planner.models.milp import Milp
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

# ------------------------------------------------------------------------------------------------
# Schedules and results
# ------------------------------------------------------------------------------------------------




@dataclass
class SpotScheduleResult:
    status: str
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


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------


class _Model:
    def __init__(self, inst: SpotInstance, hp_delay: bool):
        self.inst, self.hp_delay = inst, hp_delay
        T, r = inst.horizon_slots, inst.restart_overhead_slots
        m = self.milp = Milp()
        self.fixed = [i for i, job in enumerate(inst.jobs) if job.priority == "HP" and not hp_delay]
        self.flex = [i for i in range(len(inst.jobs)) if i not in self.fixed]
        self.cap = {(i, j): inst.pods_fit(job, node) for i, job in enumerate(inst.jobs) for j, node in enumerate(inst.nodes)}
        self.eligible = {i: [j for j in range(len(inst.nodes)) if self.cap[i, j]] for i in range(len(inst.jobs))}
        self.v: dict[tuple[int, int], int] = {}
        self.s: dict[tuple[int, int], int] = {}
        self.R: dict[tuple[int, int], int] = {}
        self.d: dict[tuple[int, int], int] = {}
        self.y: dict[tuple[int, int, int], int] = {}
        self.y_fixed: dict[tuple[int, int], int] = {}
        self.P: dict[tuple[int, int], int] = {}
        self.m: dict[tuple[int, int], int] = {}
        on_node: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)  # (j, t) -> (var, GPUs)

        # HP jobs from arrival: one y per node for the whole run, (2d)
        for i in self.fixed:
            job = inst.jobs[i]
            for j in self.eligible[i]:
                self.y_fixed[i, j] = m.var(f"y[{job.name},{j}]", 0, self.cap[i, j])
                for t in range(job.submit_slot, job.submit_slot + job.work_slots):
                    on_node[j, t].append((self.y_fixed[i, j], job.gpus_per_worker))
            m.row([(self.y_fixed[i, j], 1) for j in self.eligible[i]], job.workers, job.workers, f"(2c) gang {job.name}")

        for i in self.flex:
            job = inst.jobs[i]
            a, p, w, n = job.submit_slot, job.work_slots, job.workers, job.name
            slots = range(a, T)
            restarts = job.priority == "LP" and job.checkpoint_interval_slots is not None and job.runs_allowed > 1
            for t in slots:
                self.v[i, t] = m.var(f"v[{n},{t}]")
                self.s[i, t] = m.var(f"s[{n},{t}]")
                if restarts and a < t <= T - r - 1:
                    self.R[i, t] = m.var(f"R[{n},{t}]")
                for j in self.eligible[i]:
                    self.y[i, j, t] = m.var(f"y[{n},{j},{t}]", 0, self.cap[i, j])
                    on_node[j, t].append((self.y[i, j, t], job.gpus_per_worker))
            m.row([(self.s[i, T - 1], 1)], 1, 1, f"(2e) {n} starts")
            for t in slots:
                v, s, R = self.v[i, t], self.s[i, t], self.R.get((i, t))
                s_before = [(self.s[i, t - 1], -1)] if t > a else []
                v_before = [(self.v[i, t - 1], -1)] if t > a else []
                R_t = [(R, 1)] if R is not None else []
                # (2c) gang
                m.row([(self.y[i, j, t], 1) for j in self.eligible[i]] + [(v, -w)], 0, 0, f"(2c) gang {n} {t}")
                # (2e) runs are intervals, each begun by the first start or a restart
                if t > a:
                    m.row([(s, 1), (self.s[i, t - 1], -1)], 0, None, f"(2e) started {n} {t}")
                m.row([(v, 1), *v_before, (s, -1), *[(x, -c) for x, c in s_before], *[(x, -c) for x, c in R_t]], None, 0, f"(2e) run {n} {t}")
                m.row([(s, 1), *s_before, *R_t, (v, -1)], None, 0, f"(2e) start active {n} {t}")
                m.row([(v, 1), (s, -1)], None, 0, f"(2e) not before the first start {n} {t}")
                # (2c) no migration inside a run
                if t > a:
                    for j in self.eligible[i]:
                        cap = self.cap[i, j]
                        y_t, y_b = self.y[i, j, t], self.y[i, j, t - 1]
                        m.row([(y_t, 1), (y_b, -1), (self.v[i, t - 1], cap), *[(x, -cap) for x, _ in R_t]], None, cap, f"(2c) stay {n} {j} {t}")
                        m.row([(y_b, 1), (y_t, -1), (v, cap), *[(x, -cap) for x, _ in R_t]], None, cap, f"(2c) stay' {n} {j} {t}")
            if restarts:
                self._progress(i)
            else:
                m.row([(self.v[i, t], 1) for t in slots], p, p, f"(2f) {n} runs p")
            # (2g') completion: d[i,t] = finished by t
            for t in range(a + p, T):
                self.d[i, t] = m.var(f"d[{n},{t}]")
                m.row([(self.v[i, t], 1), (self.d[i, t], 1)], None, 1, f"done {n} {t}")
                if t > a + p:
                    m.row([(self.d[i, t - 1], 1), (self.d[i, t], -1)], None, 0, f"done stays {n} {t}")
        # (2b) capacity
        for (j, t), terms in sorted(on_node.items()):
            if sum(c * self.milp.upper[x] for x, c in terms) > inst.nodes[j].gpus:
                m.row(terms, None, inst.nodes[j].gpus, f"(2b) GPUs of {inst.nodes[j].name} at {t}")
        self._symmetry()
        self._objective()

    def _progress(self, i: int) -> None:
        """(2f): progress P, overhead h of restarts, and a restart only at a checkpoint of progress."""
        inst, m = self.inst, self.milp
        job = inst.jobs[i]
        a, p, n, T, r = job.submit_slot, job.work_slots, job.name, inst.horizon_slots, inst.restart_overhead_slots
        kappa = job.checkpoint_interval_slots
        assert kappa is not None
        R = {t: v for (ii, t), v in self.R.items() if ii == i}
        m.row([(v, 1) for v in R.values()], None, job.runs_allowed - 1, f"(2e) runs of {n}")
        P = {t: m.var(f"P[{n},{t}]", 0, p if t > a else 0) for t in range(a, T + 1)}
        self.P.update({(i, t): x for t, x in P.items()})
        for t in range(a, T):
            h = [(R[u], 1) for u in range(t - r + 1, t + 1) if u in R]
            if h:
                m.row([*h, (self.v[i, t], -1)], None, 0, f"(2f) overhead active {n} {t}")
            m.row([(P[t + 1], 1), (P[t], -1), (self.v[i, t], -1), *h], 0, 0, f"(2f) progress {n} {t}")
        m.row([(P[T], 1)], p, p, f"(2f) {n} completes")
        for t, restart in R.items():
            m.row([(P[t], 1), (restart, p)], None, 2 * p - 1, f"(2f) restart before the end {n} {t}")
            if kappa > 1:
                mt = self.m[i, t] = m.var(f"m[{n},{t}]", 0, p // kappa)
                m.row([(P[t], 1), (mt, -kappa)], 0, None, f"(2f) checkpoints {n} {t}")
                m.row([(P[t], 1), (mt, -kappa), (restart, p)], None, p, f"(2f) restart at a checkpoint {n} {t}")

    def _symmetry(self) -> None:
        """Identical nodes ordered by the pods one single-run job puts there (the first by arrival)."""
        inst, m = self.inst, self.milp
        restarting = {i for i, _ in self.R}
        single = [i for i in range(len(inst.jobs)) if i not in restarting]
        self.classes: list[list[int]] = []
        if not single:
            return
        i = self.symmetry_job = min(single, key=lambda k: (inst.jobs[k].submit_slot, inst.jobs[k].name))
        classes: dict[tuple[int, str], list[int]] = defaultdict(list)
        for j in self.eligible[i]:
            classes[inst.nodes[j].gpus, inst.nodes[j].gpu_model].append(j)
        self.classes = [nodes for nodes in classes.values() if len(nodes) > 1]
        for nodes in self.classes:
            for j, k in itertools.pairwise(nodes):
                if i in self.fixed:
                    m.row([(self.y_fixed[i, j], 1), (self.y_fixed[i, k], -1)], 0, None, f"symmetry {j} {k}")
                else:
                    slots = range(inst.jobs[i].submit_slot, inst.horizon_slots)
                    m.row([(self.y[i, j, t], 1) for t in slots] + [(self.y[i, k, t], -1) for t in slots], 0, None, f"symmetry {j} {k}")

    def _objective(self) -> None:
        inst, T = self.inst, self.inst.horizon_slots
        lp = [i for i in self.flex if inst.jobs[i].priority == "LP"]
        hp = [i for i in self.flex if inst.jobs[i].priority == "HP"]
        span = {i: T - inst.jobs[i].submit_slot - inst.jobs[i].work_slots for i in self.flex}
        self.u2 = sum(span[i] for i in lp)
        self.u1 = sum(inst.jobs[i].gpus * span[i] for i in lp)
        self.w1 = self.u2 + 1
        self.w0 = self.w1 * self.u1 + self.u2 + 1
        self.levels: dict[str, list[tuple[int, int]]] = {"hp_delay_slots": [], "lost_gpu_slots": [], "completion_slots": []}
        self.offsets = {"hp_delay_slots": 0, "lost_gpu_slots": 0, "completion_slots": 0}
        for i in lp:
            job = inst.jobs[i]
            self.levels["lost_gpu_slots"] += [(self.v[i, t], job.gpus) for t in range(job.submit_slot, T)]
            self.offsets["lost_gpu_slots"] -= job.gpus * job.work_slots
        for name, jobs in (("completion_slots", lp), ("hp_delay_slots", hp)):
            for i in jobs:  # slots past a_i + p_i before finishing
                self.levels[name] += [(self.d[i, t], -1) for t in range(inst.jobs[i].submit_slot + inst.jobs[i].work_slots, T)]
                self.offsets[name] += span[i]
        weights = {"hp_delay_slots": self.w0, "lost_gpu_slots": self.w1, "completion_slots": 1}
        terms = [(x, -weights[name] * c) for name, ts in self.levels.items() for x, c in ts]
        self.milp.maximize(terms, -sum(weights[name] * self.offsets[name] for name in weights))
        self.weights = weights

    def level_values(self, values: list[int]) -> dict[str, int]:
        return {name: self.offsets[name] + sum(c * values[x] for x, c in ts) for name, ts in self.levels.items()}

    def level_bounds(self, solver_bound: float | None, found: dict[str, int]) -> dict[str, int | None]:
        """Lower bounds per level from the solver's bound on the weighted objective (each level only
        once every level before it is proven: then the rest of the bound belongs to it)."""
        out: dict[str, int | None] = {name: None for name in found}
        if solver_bound is None or not math.isfinite(solver_bound):
            return out
        rest = math.ceil(-solver_bound - 1e-6)  # the weighted minimum is at least this integer
        for name in ("hp_delay_slots", "lost_gpu_slots", "completion_slots"):
            weight = self.weights[name]
            out[name] = max(0, rest // weight)
            if out[name] < found[name]:
                break
            rest -= weight * found[name]
        return out

    def decode(self, values: list[int]) -> Schedule:
        inst, r = self.inst, self.inst.restart_overhead_slots
        schedule: Schedule = {}
        for i, job in enumerate(inst.jobs):
            if i in self.fixed:
                nodes = self._pods({j: values[self.y_fixed[i, j]] for j in self.eligible[i]})
                schedule[job.name] = [Run(job.submit_slot, job.submit_slot + job.work_slots, nodes, job.work_slots)]
                continue
            starts = [t for t in range(job.submit_slot, inst.horizon_slots) if values[self.v[i, t]] and (
                t == job.submit_slot or not values[self.v[i, t - 1]] or ((i, t) in self.R and values[self.R[i, t]]))]
            runs, done = [], 0
            for k, start in enumerate(starts):
                end = start
                while end < inst.horizon_slots and values[self.v[i, end]] and (end == start or not ((i, end) in self.R and values[self.R[i, end]])):
                    end += 1
                progress = max(0, end - start - (r if k else 0))
                kappa = job.checkpoint_interval_slots
                kept = min(progress, job.work_slots - done) if k == len(starts) - 1 else (progress // kappa * kappa if kappa else 0)
                done += kept
                runs.append(Run(start, end, self._pods({j: values[self.y[i, j, start]] for j in self.eligible[i]}), kept))
            schedule[job.name] = runs
        return schedule

    def encode(self, schedule: Schedule) -> list[int] | None:
        """The variables' values of a schedule (a warm start), or None if the model cannot express it
        (a restart where none is allowed, an eviction between checkpoints)."""
        inst, values = self.inst, [0] * self.milp.num_vars
        node_index = {n.name: j for j, n in enumerate(inst.nodes)}
        # relabel identical nodes so that the symmetry job's pods are in non-increasing order
        rename = {n.name: n.name for n in inst.nodes}
        if self.classes:
            held = defaultdict(int)
            for name in schedule[inst.jobs[self.symmetry_job].name][0].nodes:
                held[node_index[name]] += 1
            for nodes in self.classes:
                for j, k in zip(nodes, sorted(nodes, key=lambda x: -held[x])):
                    rename[inst.nodes[k].name] = inst.nodes[j].name
        schedule = {job: [Run(r.start_slot, r.end_slot, tuple(rename[n] for n in r.nodes), r.kept_slots) for r in runs]
                    for job, runs in schedule.items()}
        r = inst.restart_overhead_slots
        for i, job in enumerate(inst.jobs):
            runs = schedule[job.name]
            counts = [defaultdict(int) for _ in runs]
            for k, run in enumerate(runs):
                for name in run.nodes:
                    counts[k][node_index[name]] += 1
            if i in self.fixed:
                for j, c in counts[0].items():
                    values[self.y_fixed[i, j]] = c
                continue
            progress = 0
            for k, run in enumerate(runs):
                if k and (i, run.start_slot) not in self.R:
                    return None
                if k:
                    values[self.R[i, run.start_slot]] = 1
                for t in range(run.start_slot, run.end_slot):
                    values[self.v[i, t]] = 1
                    for j, c in counts[k].items():
                        values[self.y[i, j, t]] = c
            first = runs[0].start_slot
            for t in range(job.submit_slot, inst.horizon_slots):
                values[self.s[i, t]] = int(t >= first)
                if (i, t) in self.d:
                    values[self.d[i, t]] = int(t >= runs[-1].end_slot)
            overhead = {t for run in runs[1:] for t in range(run.start_slot, run.start_slot + r)}
            for t in range(job.submit_slot, inst.horizon_slots + 1):
                if (i, t) in self.P:
                    values[self.P[i, t]] = progress
                if (i, t) in self.m:
                    values[self.m[i, t]] = progress // (job.checkpoint_interval_slots or 1)
                if t < inst.horizon_slots:
                    progress += values[self.v[i, t]] - (t in overhead)
        return None if self.milp.violated_rows(values) else values

    def _pods(self, counts: dict[int, int]) -> tuple[str, ...]:
        return tuple(self.inst.nodes[j].name for j in sorted(counts) for _ in range(counts[j]))


def solve_spot_schedule(inst: SpotInstance, solver: str = "cpsat", time_limit_s: float = 60.0, workers: int = 2,
                        hp_delay: bool = False, force: bool = False, seed: int = 0) -> SpotScheduleResult:
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
    empty = {"hp_delay_slots": None, "lost_gpu_slots": None, "completion_slots": None}
    common = {"solver": solver, "variables": milp.num_vars, "rows": milp.num_rows, "message": result.message}
    if result.values is None:
        status = result.status if result.status in ("infeasible", "error") else "timeout"
        return SpotScheduleResult(status, wall_s=time.perf_counter() - start, schedule=None, lost_gpu_slots=None, completion_slots=None,
                                  hp_delay_slots=None, objective=dict(empty), bound=dict(empty), gap=None, **common)
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
        violations.append(f"the schedule measures lost {lost}, completion {sum(completion.values())}, HP delay {delay}; "
                          f"the model said {objective}")
    if bounds["completion_slots"] is not None:
        bounds["completion_slots"] += sum_p
    gap: float | None = 0.0
    for name in ("hp_delay_slots", "lost_gpu_slots", "completion_slots"):
        if bounds[name] is None:
            gap = None
            break
        if bounds[name] < objective[name]:
            gap = (objective[name] - bounds[name]) / objective[name]
            break
    status = "optimal" if gap == 0.0 else "feasible"
    return SpotScheduleResult(status, wall_s=time.perf_counter() - start, schedule=schedule, lost_gpu_slots=lost, completion_slots=completion,
                              hp_delay_slots=delay, objective=objective, bound=bounds, gap=gap, violations=violations, **common)


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
        need = defaultdict(int)
        for j in pods:
            need[j] += job.gpus_per_worker
        t = start
        while t < min(T, start + length) and all(free[j][t] >= g for j, g in need.items()):
            t += 1
        return t

    schedule: Schedule = {}
    for job in sorted(inst.jobs, key=lambda x: (x.priority != "HP", x.submit_slot, x.name)):
        runs, done, earliest = [], 0, job.submit_slot
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


__all__ = ["MAX_MODEL_CELLS", "Run", "Schedule", "SpotInstance", "SpotScheduleResult", "greedy_schedule", "instance_problems", "load_instance",
           "parse_instance", "schedule_measures", "size_problem", "solve_spot_schedule", "validate_schedule"]
