"""The exact spot schedule's integer program (``planner.models.spot_schedule`` states it: variables,
rows 2a-2g as corrected, the lexicographic weights and the node symmetry): ``_Model`` builds it on a
``Milp``, encodes a schedule as a warm start, and decodes the solver's values and bounds per level."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

from planner.models.milp import Milp
from planner.models.spot_instance import Run, Schedule, SpotInstance


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
            level_bound = max(0, rest // weight)
            out[name] = level_bound
            if level_bound < found[name]:
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
            starts = [
                t
                for t in range(job.submit_slot, inst.horizon_slots)
                if values[self.v[i, t]] and (t == job.submit_slot or not values[self.v[i, t - 1]] or ((i, t) in self.R and values[self.R[i, t]]))
            ]
            runs: list[Run] = []
            done = 0
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
            held: defaultdict[int, int] = defaultdict(int)  # node index -> the symmetry job's pods on it
            for name in schedule[inst.jobs[self.symmetry_job].name][0].nodes:
                held[node_index[name]] += 1
            for nodes in self.classes:
                for j, k in zip(nodes, sorted(nodes, key=lambda x: -held[x])):
                    rename[inst.nodes[k].name] = inst.nodes[j].name
        schedule = {job: [Run(r.start_slot, r.end_slot, tuple(rename[n] for n in r.nodes), r.kept_slots) for r in runs] for job, runs in schedule.items()}
        r = inst.restart_overhead_slots
        for i, job in enumerate(inst.jobs):
            runs = schedule[job.name]
            counts: list[defaultdict[int, int]] = [defaultdict(int) for _ in runs]  # per run: node index -> pods
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
