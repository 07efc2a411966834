"""Exact joint allocation of a batch of pending jobs (an integer program, CP-SAT or HiGHS).

The objective lives at switch level (GPUs started, switches spanned, entropy over switches), so the
model decides pods per job *per switch* and proves, per switch, that the nodes can hold them:

* **shapes**: jobs whose pods ask the same (whole GPUs, CPUs, memory, eligibility, anti-affinity
  groups) are interchangeable on a node; the node-level packing is per shape, not per job;
* **node classes**: nodes under one switch with the same free GPUs, CPUs and memory and the same
  room for every shape are interchangeable; a class of ``count`` nodes is packed by choosing, per
  node, a *pattern*: a maximal vector of pods per shape that fits one node (resources and
  anti-affinity). ``w[c, p]`` counts the nodes of class c packed with pattern p. Patterns are
  downward closed (fewer pods always fit), so maximal ones suffice and the packing is exact. A class
  with more than ``PATTERN_LIMIT`` maximal patterns gets per-node variables instead (exact too).

Variables:
  x[j, d]  integer, pods of job j under access switch d;
  z[j]     binary, job j starts (all its pods, or at least ``min_available``);
  u[j, e]  binary, job j uses access switch e (every job: switches are counted at access level, as
           documented, a spine job's too);
  v[j, s]  binary, a ``required`` spine job uses spine s (its one-spine rule; spines are not counted);
  w[c, p]  integer, nodes of class c packed with pattern p; y[s, n] pods of shape s on node n
           for the per-node classes.
Constraints:
  (1) k_j z_j <= sum_d x[j, d] <= N_j z_j                        gang (k_j = min_available or N_j)
  (2) sum_{j of shape s} x[j, d] <= sum_{c in d, p} a[p, s] w[c, p] + sum_{n in d} y[s, n]
  (3) sum_p w[c, p] <= count_c; per-node rows for y: GPUs, CPUs, memory, anti-affinity groups
  (4) x[j, d] <= ub[j, d] u[j, e(d)];  sum_e u[j, e] <= 1 for a ``required`` asw job; for a
      ``required`` spine job x[j, d] <= ub[j, d] v[j, s(d)] and sum_s v[j, s] <= 1
Objective, lexicographic: (a) most GPUs of the jobs started; (b) fewest switches spanned, summed
  over jobs (one weighted solve for both, see ``solve_joint``); then, holding both, (c) least
  entropy (ASI Eq. 1, over access switches) summed over the jobs that may span switches, linear
  through one-hot count indicators b[j, d, k] (x[j, d] = sum_k k b[j, d, k]) with coefficients
  k/N ln(N/k) scaled to integers (``ENTROPY_SCALE``; the reported tolerance bounds the rounding).
  (c) runs when every job's pod count is fixed (no elastic gang) and the indicators (counted after
  the narrowing below) number at most ``ENTROPY_INDICATOR_LIMIT``. The result lists the levels
  asked (``objective_levels``) and the prefix of them proven (``proven_levels``); the status is
  ``optimal`` only when they agree, so a skipped or unproven entropy level leaves it ``feasible``
  with GPUs and switches still listed as proven. With GPUs and
  switches held, the *switch slack* (switches held less the least summed fewest switches of the
  started jobs, bounded by a subset-sum and a short solve) caps every job at its fewest plus the
  slack; at slack 0 a job that fits one access switch has entropy 0 (no indicators). A job on
  at least m switches holds at most N - m + 1 pods on any, and on a switch it uses at least N less
  what its other allowed switches can hold (``_count_ranges``): indicators exist only for those
  counts, and each is tied to the switch variable ("one count iff used"). Further rows, each valid
  for every plan, tighten the relaxation:
  * a job on at most one switch (``required``, or confined at slack 0) puts all its k pods on the
    switch it uses (``whole_under``: sum x >= k u);
  * *twins*, jobs no row tells apart, list their entropies in non-increasing name order;
  * *count pairing*: a job on at most two switches holds k < N pods on one exactly when it holds
    N - k on the other (sum_d b[j, d, k] = sum_d b[j, d, N - k]); a job that needs two switches and
    may use up to U = 2 + slack gets -e <= #k - #(N - k) <= U e, e = its switches - 2;
  * *count multisets*: where a job's partitions of N (between its fewest and U parts, within the
    count ranges) are few (``PARTITION_LIMIT`` per job, ``PARTITION_TOTAL`` in all), y[j, p] picks
    one, sum_p y[j, p] = z[j] and sum_d b[j, d, k] = sum_p (parts of p equal to k) y[j, p] (the
    convex hull of the job's count multisets).
  The phase runs HiGHS with its default feasibility tolerance and without presolve; its plan is
  checked against every row in exact integer arithmetic (``Milp.violated_rows``) and dropped, with
  the claim, when one slips. Before it, the model with each job's multisets cut to those its LP
  relaxation uses (and the start's) is solved (``_multiset_neighbourhood``) for a start; nothing is
  claimed of the cut model. ``benchmarks/topology_batch.py`` measures what each reduction proves.

Exact (accepts exactly what ``rules`` accepts) for jobs of whole-GPU pods; a job of GPU shares
makes it a relaxation (shares pack onto devices) and nothing is claimed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.heuristics.topology import entropy, largest_first, min_switches, node_slots
from planner.models.backends import solve
from planner.models.highs import lp_relaxation
from planner.models.milp import Milp, MilpResult
from planner.models.reduced_cost import (
    LagrangianBound,
    fix_by_reduced_cost,
    lagrangian_bound,
    proof_by_bound,
    solve_with_fixing,
)
from planner.rules import EPS
from planner.state import UNLISTED, ClusterState

PATTERN_LIMIT = 64
ENTROPY_SCALE = 1_000_000
ENTROPY_INDICATOR_LIMIT = 40_000
SLACK_SHARE = 0.15
"""Share of the entropy phase's time spent bounding the switch slack (at most 2 s)."""
PARTITION_LIMIT = 10_000
PARTITION_TOTAL = 40_000
"""Count multisets per job, and over all jobs, above which a job falls back on count pairing."""
LP_SHARE = 0.3
"""Share of a solve's time (of the entropy phase's time left) its LP relaxation may take."""
NEIGHBOURHOOD_SHARE = 0.5
"""Share of the entropy phase's time left, after its LP, that its multiset neighbourhood may take."""

Pairs = dict[str, list[tuple[int, int]]]  # job -> (pod, node)


@dataclass
class JointResult:
    """Pods per (job, node), the solver's claims and sizes."""

    assignment: Pairs
    status: str
    gpus_bound: float | None
    switches_bound: float | None
    exact: bool
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Shape:
    pod: int  # a representative pod
    gpus: int  # devices per pod (a share takes one)
    cpus: float
    memory: float
    groups: tuple[int, ...]
    slots: np.ndarray  # per node, pods of this shape it could take alone
    demand: int  # pods of this shape in the batch
    res: tuple[int, ...] = ()  # each named resource a pod requests (ClusterState.res_names)


@dataclass
class _Class:
    switch: int  # index into the (asw, spine) pairs
    nodes: list[int]
    patterns: list[tuple[int, ...]]  # per shape; empty when the class is per node
    w: list[int] = field(default_factory=list)
    y: dict[tuple[int, int], int] = field(default_factory=dict)  # (shape, node) -> var


class _Model:
    """The joint model's variables, built once; phases change only the objective and held rows."""

    def __init__(self, state: ClusterState, jobs: dict[str, list[int]], levels: dict[str, tuple[str, bool]], minimum: dict[str, int],
                 within: dict[str, int] | None = None) -> None:
        self.state, self.jobs, self.levels, self.minimum, self.within = state, jobs, levels, minimum, within or {}
        self.names = sorted(jobs)
        self.exact = not any(state.pod_share[jobs[j][0]] > 0 for j in self.names)
        self.shapes: list[_Shape] = []
        self.shape_of: dict[str, int] = {}
        keys: dict[tuple, int] = {}
        for j in self.names:
            p = jobs[j][0]
            key = (int(state.pod_whole[p]), bool(state.pod_share[p] > 0), float(state.pod_cpus[p]), float(state.pod_mem[p]),
                   int(state.pod_signature[p]), tuple(sorted(state.pod_groups[p])), tuple(state.pod_res[p].tolist()))
            if key not in keys:
                keys[key] = len(self.shapes)
                self.shapes.append(_Shape(p, key[0] + int(key[1]), key[2], key[3], key[5], node_slots(state, p), 0, key[6]))
            self.shape_of[j] = keys[key]
            self.shapes[keys[key]].demand += len(jobs[j])
        # switches: (asw, spine) pairs of the nodes some shape can use
        usable = np.zeros(len(state.node_names), dtype=bool)
        for s in self.shapes:
            usable |= s.slots > 0
        nodes = np.flatnonzero(usable)
        pairs = sorted({(int(state.asw_domain[n]), int(state.spine_domain[n])) for n in nodes.tolist()})
        self.switches = pairs
        switch_of = {pair: d for d, pair in enumerate(pairs)}
        free_gpu = state.cap_gpus - state.whole_used - state.share_devices
        free_cpu = state.cap_cpus - state.used_cpus
        free_mem = state.cap_mem - state.used_mem
        free_res = state.cap_res - state.used_res
        classes: dict[tuple, list[int]] = {}
        for n in nodes.tolist():
            room = tuple(int(min(s.slots[n], s.demand)) for s in self.shapes)
            key = (switch_of[int(state.asw_domain[n]), int(state.spine_domain[n])], int(free_gpu[n]), float(free_cpu[n]), float(free_mem[n]), room,
                   tuple(free_res[n].tolist()))
            classes.setdefault(key, []).append(n)
        self.classes: list[_Class] = []
        for key, members in classes.items():
            patterns = _patterns(self.shapes, key[4], (key[1], key[2], key[3], *key[5]))
            self.classes.append(_Class(key[0], members, patterns or []))
        self._build()

    def _build(self) -> None:
        m = Milp()
        self.m = m
        self.z = {j: m.var(f"z[{j}]") for j in self.names}
        self.x: dict[tuple[str, int], int] = {}
        self.ub: dict[tuple[str, int], int] = {}
        self.u: dict[tuple[str, int], int] = {}  # (job, access switch): counted in the objective
        self.v: dict[tuple[str, int], int] = {}  # (required spine job, spine): its one-spine rule
        self.switches_of: dict[str, list[int]] = {j: [] for j in self.names}  # x's switches, in order
        self.fewest: dict[str, int | None] = {}  # switches a started job needs at least (None: it cannot start)
        room = np.zeros((len(self.shapes), len(self.switches)), dtype=np.int64)
        for c in self.classes:
            for s in range(len(self.shapes)):
                room[s, c.switch] += int(min(self.shapes[s].slots[c.nodes[0]], self.shapes[s].demand)) * len(c.nodes)
        for j in self.names:
            s = self.shape_of[j]
            for d in np.flatnonzero(room[s] > 0).tolist():
                if j in self.within and self.switches[d][0 if self.levels[j][0] == "asw" else 1] != self.within[j]:
                    continue  # its running pods hold it to another switch
                bound = min(int(room[s, d]), len(self.jobs[j]))
                self.x[j, d] = m.var(f"x[{j},{d}]", 0, bound)
                self.ub[j, d] = bound
                self.switches_of[j].append(d)
                e = self.asw(d)
                if (j, e) not in self.u:
                    self.u[j, e] = m.var(f"u[{j},{e}]")
                m.row([(self.x[j, d], 1), (self.u[j, e], -bound)], None, 0, f"(4) {j} under {d}")
                if self.spine_required(j):
                    spine = self.switches[d][1]
                    if (j, spine) not in self.v:
                        self.v[j, spine] = m.var(f"v[{j},{spine}]")
                    m.row([(self.x[j, d], 1), (self.v[j, spine], -bound)], None, 0, f"(4) {j} under spine {spine} via {d}")
            terms = [(self.x[j, d], 1) for d in self.switches_of[j]]
            m.row([*terms, (self.z[j], -len(self.jobs[j]))], None, 0, f"(1) at most N [{j}]")
            m.row([*terms, (self.z[j], -self.minimum[j])], 0, None, f"(1) at least k [{j}]")
            own = [(v, 1) for v in self.switch_vars(j)]
            if self.levels[j][1]:
                m.row([(v, 1) for v in self.domain_vars(j)], None, 1, f"(4) one {self.levels[j][0]} [{j}]")
                self.whole_under(j, f"(4) all under its {self.levels[j][0]} [{j}]", spine=self.spine_required(j))
            # a cut: a started job spans at least the access switches it would need alone on the free room
            level_room: dict[int, int] = {}
            for d in self.switches_of[j]:
                e = self.asw(d)
                level_room[e] = level_room.get(e, 0) + self.ub[j, d]
            fewest = min_switches(list(level_room.values()), self.minimum[j])
            self.fewest[j] = fewest
            if fewest:
                m.row([*own, (self.z[j], -fewest)], 0, None, f"(5) fewest switches [{j}]")
            elif fewest is None:
                m.row([(self.z[j], 1)], None, 0, f"(5) cannot start [{j}]")
        supply: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (shape, switch) -> terms
        for k, c in enumerate(self.classes):
            if c.patterns:
                c.w = [m.var(f"w[{k},{i}]", 0, len(c.nodes)) for i in range(len(c.patterns))]
                if len(c.w) > 1:
                    m.row([(v, 1) for v in c.w], None, len(c.nodes), f"(3) nodes of class {k}")
                for i, pattern in enumerate(c.patterns):
                    for s, a in enumerate(pattern):
                        if a:
                            supply.setdefault((s, c.switch), []).append((c.w[i], a))
                continue
            for n in c.nodes:
                here = [s for s in range(len(self.shapes)) if self.shapes[s].slots[n] > 0]
                for s in here:
                    c.y[s, n] = m.var(f"y[{s},{n}]", 0, int(min(self.shapes[s].slots[n], self.shapes[s].demand)))
                    supply.setdefault((s, c.switch), []).append((c.y[s, n], 1))
                self._node_rows(c, n, here)
        for s in range(len(self.shapes)):
            for d in range(len(self.switches)):
                demand = [(self.x[j, d], 1) for j in self.names if self.shape_of[j] == s and (j, d) in self.x]
                if demand:
                    m.row([*demand, *[(v, -a) for v, a in supply.get((s, d), [])]], None, 0, f"(2) shape {s} under {d}")
        self.gpus = {j: self.shapes[self.shape_of[j]].gpus or 1 for j in self.names}
        # twins: jobs no row tells apart (same shape, pods, level, minimum, no running pods), in name order
        same: dict[tuple, list[str]] = {}
        for j in self.names:
            if j not in self.within:
                same.setdefault((self.shape_of[j], len(self.jobs[j]), self.levels[j], self.minimum[j]), []).append(j)
        self.twin_groups = [group for group in same.values() if len(group) > 1]
        self.twins = [(a, b) for group in self.twin_groups for a, b in zip(group, group[1:])]
        self.placed = [(v, self.gpus[j]) for (j, _), v in self.x.items()]

    def _node_rows(self, c: _Class, n: int, here: list[int]) -> None:
        """Exact per-node rows (GPUs, CPUs, memory in the smallest integer units that hold them)."""
        state, m = self.state, self.m
        free = (int(state.cap_gpus[n] - state.whole_used[n] - state.share_devices[n]), float(state.cap_cpus[n] - state.used_cpus[n]),
                float(state.cap_mem[n] - state.used_mem[n]))
        m.row([(c.y[s, n], self.shapes[s].gpus) for s in here], None, free[0], f"(3) GPUs of {n}")
        for r, name in ((1, "CPUs"), (2, "memory")):
            asks = [self.shapes[s].cpus if r == 1 else self.shapes[s].memory for s in here]
            scale = _integer_scale([*asks, free[r]])
            if scale is None:  # no exact unit up to 10^-6: requests rounded up, room down (safe, maybe not optimal)
                self.exact = False
                m.row([(c.y[s, n], math.ceil(a * 10**6)) for s, a in zip(here, asks)], None, math.floor(free[r] * 10**6), f"(3) {name} of {n}")
                continue
            m.row([(c.y[s, n], round(a * scale)) for s, a in zip(here, asks)], None, math.floor(free[r] * scale + EPS * scale), f"(3) {name} of {n}")
        for r, name in enumerate(state.res_names):  # every named resource (NodeResourcesFit)
            room = int(state.cap_res[n, r] - state.used_res[n, r])
            terms = [(c.y[s, n], self.shapes[s].res[r]) for s in here if self.shapes[s].res[r]]
            if terms and room < UNLISTED // 2:
                m.row(terms, None, room, f"(3) {name} of {n}")
        groups: dict[int, list[int]] = {}
        for s in here:
            for g in self.shapes[s].groups:
                groups.setdefault(g, []).append(s)
        for g, members in groups.items():
            if len(members) > 1:
                m.row([(c.y[s, n], 1) for s in members], None, 1, f"(3) group {g} on {n}")

    def whole_under(self, j: str, name: str, m: Milp | None = None, spine: bool = False) -> None:
        """Rows for a job on at most one access switch (``spine``: one spine): the one it uses holds at
        least its k pods (sum_{d under e} x[j, d] >= k_j u[j, e]). Implied for integers (one switch, k
        pods), they cut the relaxation's fractional split of one job over switches that cannot hold it."""
        m = m or self.m
        under: dict[int, list[int]] = {}
        for d in self.switches_of[j]:
            under.setdefault(self.switches[d][1] if spine else self.asw(d), []).append(self.x[j, d])
        chosen = self.v if spine else self.u
        for e, xs in under.items():
            m.row([(x, 1) for x in xs] + [(chosen[j, e], -self.minimum[j])], 0, None, f"{name} [{e}]")

    def switch_vars(self, j: str) -> list[int]:
        """Job j's access switch variables u[j, e], in creation order."""
        return [v for (jj, _), v in self.u.items() if jj == j]

    def domain_vars(self, j: str) -> list[int]:
        """The variables of job j's topology domains: u (access switches) or, for a spine job, v (spines)."""
        return [v for (jj, _), v in self.v.items() if jj == j] if self.spine_required(j) else self.switch_vars(j)

    def spine_required(self, j: str) -> bool:
        return self.levels[j] == ("spine", True)

    def asw(self, d: int) -> int:
        """The access switch of model switch d (an (asw, spine) pair)."""
        return self.switches[d][0]

    def hint(self, pairs: Pairs) -> list[int] | None:
        """The model's values for a node-level assignment (None when it does not map)."""
        values = [0] * self.m.num_vars
        used: dict[tuple[int, int], int] = {}  # (node, shape) -> pods
        node_switch = {n: c.switch for c in self.classes for n in c.nodes}
        for j, placed in pairs.items():
            if j not in self.z:
                continue
            values[self.z[j]] = 1
            for _, n in placed:
                d = node_switch.get(n)
                if d is None or (j, d) not in self.x:
                    return None
                values[self.x[j, d]] += 1
                values[self.u[j, self.asw(d)]] = 1
                if self.spine_required(j):
                    values[self.v[j, self.switches[d][1]]] = 1
                used[n, self.shape_of[j]] = used.get((n, self.shape_of[j]), 0) + 1
        for c in self.classes:
            for n in c.nodes:
                vector = tuple(used.get((n, s), 0) for s in range(len(self.shapes)))
                if c.patterns:
                    fit = next((i for i, p in enumerate(c.patterns) if all(a >= b for a, b in zip(p, vector))), None)
                    if fit is None:
                        if any(vector):
                            return None
                        continue
                    if any(vector):
                        values[c.w[fit]] += 1
                else:
                    for s, count in enumerate(vector):
                        if count:
                            if (s, n) not in c.y:
                                return None
                            values[c.y[s, n]] = count
        return values

    def assignment(self, values: list[int]) -> Pairs:
        """Pods on nodes: each class's nodes take their patterns, each job the slots of its shape."""
        slots: dict[tuple[int, int], list[int]] = {}  # (shape, switch) -> nodes, one entry per pod slot
        for c in self.classes:
            if c.patterns:
                queue = iter(c.nodes)
                for i, pattern in enumerate(c.patterns):
                    for _ in range(values[c.w[i]]):
                        n = next(queue)
                        for s, a in enumerate(pattern):
                            slots.setdefault((s, c.switch), []).extend([n] * a)
            else:
                for (s, n), v in c.y.items():
                    slots.setdefault((s, c.switch), []).extend([n] * values[v])
        taken: dict[tuple[int, int], int] = {}
        out: Pairs = {}
        for j in self.names:
            if not values[self.z[j]]:
                continue
            pods = iter(self.jobs[j])
            s = self.shape_of[j]
            out[j] = []
            for d in self.switches_of[j]:
                count = values[self.x[j, d]]
                if not count:
                    continue
                start = taken.get((s, d), 0)
                out[j].extend((next(pods), n) for n in slots[s, d][start:start + count])
                taken[s, d] = start + count
        return out

    def gpus_of(self, values: list[int]) -> int:
        return sum(values[v] * w for v, w in self.placed)

    def switches_used(self, values: list[int]) -> int:
        return sum(values[v] for v in self.u.values())


def _patterns(shapes: list[_Shape], room: tuple[int, ...], free: tuple[float, ...]) -> list[tuple[int, ...]] | None:
    """The maximal pod vectors (per shape) one node of this class holds; None past PATTERN_LIMIT."""
    eligible = [s for s, r in enumerate(room) if r > 0]
    out: list[tuple[int, ...]] = []
    vector = [0] * len(shapes)

    def more(s: int, used: tuple[float, ...], groups: set[int]) -> int:
        shape = shapes[s]
        if shape.groups and groups.intersection(shape.groups):
            return 0
        k = room[s] - vector[s]
        if shape.gpus:
            k = min(k, (free[0] - used[0]) // shape.gpus)
        if shape.cpus > 0:
            k = min(k, math.floor((free[1] - used[1] + EPS) / shape.cpus))
        if shape.memory > 0:
            k = min(k, math.floor((free[2] - used[2] + EPS) / shape.memory))
        for r, need in enumerate(shape.res):
            if need:
                k = min(k, (free[3 + r] - used[3 + r]) // need)
        if shape.groups:
            k = min(k, 1)
        return max(int(k), 0)

    def walk(i: int, used: tuple[float, ...], groups: set[int]) -> bool:
        if i == len(eligible):
            if any(more(s, used, groups) for s in eligible):
                return True  # not maximal
            out.append(tuple(vector))
            return len(out) <= PATTERN_LIMIT
        s = eligible[i]
        shape = shapes[s]
        for k in range(more(s, used, groups), -1, -1):
            vector[s] = k
            ok = walk(i + 1, (used[0] + k * shape.gpus, used[1] + k * shape.cpus, used[2] + k * shape.memory,
                              *(u + k * a for u, a in zip(used[3:], shape.res))),
                      groups | set(shape.groups) if k else groups)
            vector[s] = 0
            if not ok:
                return False
        return True

    return out if walk(0, (0, 0.0, 0.0, *(0 for _ in free[3:])), set()) and out else None


def _integer_scale(values: list[float]) -> int | None:
    """The smallest power of ten (up to 10^6) that makes every value an integer, None if none does."""
    for digits in range(7):
        scale = 10 ** digits
        if all(abs(v * scale - round(v * scale)) < 1e-9 * max(1.0, abs(v * scale)) for v in values):
            return scale
    return None


def solve_joint(
    state: ClusterState, jobs: dict[str, list[int]], levels: dict[str, tuple[str, bool]], minimum: dict[str, int],
    solver: str = "auto", time_limit_s: float = 10.0, workers: int = 8, hint: Pairs | None = None, optimise_entropy: bool = True,
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
    fields: dict[str, Any] = {"variables": m.num_vars, "rows": m.num_rows, "node_classes": len(model.classes),
                              "shapes": len(model.shapes), "objective_levels": ["gpus", "switches", *(["entropy"] if optimise_entropy else [])],
                              "proven_levels": []}
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
    proven = first.status == "optimal" and m.value_of_objective(values) >= first.objective - 1e-6
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


HIGHS_SHARE = 0.5
"""``auto``: HiGHS gets this share of a solve's time, CP-SAT the rest when HiGHS has not proven it."""


def _solve(m: Milp, solver: str, time_limit_s: float, workers: int, hint: list[int] | None, fields: dict[str, Any], name: str) -> MilpResult:
    """One solve. With ``auto`` or ``highs`` and a hint that passes every row, the LP relaxation
    comes first: its bound, computed exactly from its duals (``models/reduced_cost.py``), proves the
    hint optimal when it is below the hint's objective + 1. On the 50 contended batches of
    benchmarks/topology_batch.py it proves GPUs and switches for 47 of the best greedy starts (36 of
    the largest-first ones), in about 0.05 s where HiGHS's search took up to 4.8 s (it went on past
    a root bound below the plan + 1).
    Otherwise the search runs on the whole model: reduced-cost fixing against these hints fixed 1 to
    19 of 3,988 columns, and on the smaller model HiGHS stopped on batch 47 with its bound within
    rounding of the plan + 1 (not claimed), leaving CP-SAT 10 s. ``fields[name]``: "proven by the LP
    bound" when it was."""
    time_limit_s = max(0.5, time_limit_s)
    start = time.perf_counter()
    if solver != "cpsat" and hint is not None and not m.violated_rows(hint):
        relaxed = lp_relaxation(m, LP_SHARE * time_limit_s, workers)
        proven = proof_by_bound(m, lagrangian_bound(m, relaxed.row_duals), hint) if relaxed is not None else None
        if proven is not None:
            fields[name] = "proven by the LP bound"
            proven.wall_s = time.perf_counter() - start
            return proven
    return _search(m, solver, time_limit_s - (time.perf_counter() - start), workers, hint)


def _search(m: Milp, solver: str, time_limit_s: float, workers: int, hint: list[int] | None) -> MilpResult:
    """One solver search; ``auto`` runs HiGHS, then (not proven) CP-SAT's deterministic search from the same
    hint. CP-SAT took 10 s on contended batches HiGHS proved in 0.2 s. With W scaled by the GPUs' unit
    (``solve_joint``) HiGHS proved GPUs and switches on all 50 contended batches of
    benchmarks/topology_batch.py alone, in at most 4.8 s (2 s or less on 43); before, it stopped on one
    (batch 30) with a bound within rounding of a better plan, which CP-SAT then proved in 12 s. A
    proven result is deterministic either way (neither depends on the other's incumbent)."""
    time_limit_s = max(0.5, time_limit_s)
    if solver != "auto":
        return solve(m, solver, time_limit_s, workers, hint, deterministic=solver == "cpsat", wall_cap_s=time_limit_s)
    start = time.perf_counter()
    first = solve(m, "highs", HIGHS_SHARE * time_limit_s, workers, hint)
    if first.status in ("optimal", "infeasible"):
        return first
    left = max(0.5, time_limit_s - (time.perf_counter() - start))
    second = solve(m, "cpsat", left, workers, hint, deterministic=True, wall_cap_s=left)  # the caller's limit holds in wall time
    if second.status in ("optimal", "infeasible") or first.values is None:
        best = second
    elif second.values is None:
        best = first
    else:
        best = max((first, second), key=lambda r: r.objective if r.objective is not None else -math.inf)
    bounds = [r.bound for r in (first, second) if r.bound is not None]
    best.bound = min(bounds) if bounds else best.bound  # maximising: either proven bound holds
    if best.status == "optimal":
        best.bound = best.objective  # CP-SAT's proof (HiGHS's bound can sit within rounding below it)
    best.wall_s = time.perf_counter() - start
    return best


def _entropy_phase(model: _Model, values: list[int], held: list, solver: str, deadline: float, workers: int,  # type: ignore[type-arg]
                   fields: dict[str, Any]) -> tuple[list[int], bool]:
    """(c): least summed entropy with GPUs and switches held. Returns the values and whether proven."""
    spanning = [j for j in model.names if model.levels[j] != ("asw", True)]  # a required spine job may span access switches
    if any(model.minimum[j] != len(model.jobs[j]) for j in spanning):
        fields["entropy"] = ("not optimised: a job may start with fewer than all its pods (min_available), so its entropy is not "
                             "linear; without the entropy level (--no-entropy) GPUs and switches can be proven")
        return values, False
    if not spanning:
        return values, True
    src = model.m  # a full copy: this phase adds variables
    m = Milp(list(src.names), list(src.lower), list(src.upper), {}, 0, list(src.row_terms), list(src.row_lower), list(src.row_upper),
             list(src.row_names))
    for row_terms, lower, upper, name in held:
        m.row(row_terms, lower, upper, name)
    m.row([(v, 1) for v in model.u.values()], None, model.switches_used(values), "(b) switches held")
    slack = _switch_slack(model, model.gpus_of(values), model.switches_used(values))
    if slack:  # the capacity may leave less: the least summed fewest switches, solved on the phase's rows
        least = [(model.z[j], -model.fewest[j]) for j in model.names if model.fewest.get(j)]
        probe = Milp(list(m.names), list(m.lower), list(m.upper), {}, 0, list(m.row_terms), list(m.row_lower),
                     list(m.row_upper), list(m.row_names))
        probe.maximize(least)
        found = _solve(probe, solver, min(SLACK_SHARE * (deadline - time.perf_counter()), 2.0), workers, list(values), fields,
                       "entropy_switch_slack_proof")
        if found.bound is not None:  # maximising -sum: the bound caps it, so sum >= -bound
            slack = min(slack, model.switches_used(values) - math.ceil(-found.bound - 1e-6))
        fields["entropy_switch_slack_s"] = round(found.wall_s, 3)
    fields["entropy_switch_slack"] = slack
    confined = []
    if slack is not None:  # no job can use more than its fewest switches plus the slack
        for j in model.names:
            own_u = [(v, 1) for v in model.switch_vars(j)]
            if model.fewest.get(j) and own_u:
                m.row(own_u, None, model.fewest[j] + slack, f"(c) switches within the slack [{j}]")
        # a job held to one access switch has entropy 0: it needs no indicators
        confined = [j for j in spanning if model.fewest.get(j) == 1 and slack == 0]
    for j in confined:
        model.whole_under(j, f"(c) all under its switch [{j}]", m)
    spanning = [j for j in spanning if j not in confined]
    fields["entropy_jobs_confined"] = len(confined)
    counts, linked = _count_ranges(model, spanning, slack)
    indicators = sum(max(0, high - low + 1) for low, high in counts.values())
    if indicators > ENTROPY_INDICATOR_LIMIT:
        fields["entropy"] = f"not optimised: {indicators:,} count indicators (limit {ENTROPY_INDICATOR_LIMIT:,})"
        return values, False
    fields["entropy_counts_floored"] = sum(1 for low, high in counts.values() if low > 1 or low > high)
    values = _twins_sorted(model, values, spanning)
    base = m.num_vars
    terms: list[tuple[int, int]] = []
    entropy_of: dict[str, list[tuple[int, int]]] = {}
    indicator: dict[tuple[str, int, int], int] = {}
    for j in spanning:
        n_j, reach = len(model.jobs[j]), _most_terms(model, j)
        own: list[tuple[int, int]] = []
        for d in model.switches_of[j]:
            ones = []
            low, high = counts[j, d]
            for k in range(low, high + 1):
                b = m.var(f"b[{j},{d},{k}]")
                indicator[j, d, k] = b
                ones.append((b, k))
                coefficient = _entropy_units(k, n_j)
                if coefficient:
                    own.append((b, coefficient))
            if (j, d) in linked:
                m.row([(b, 1) for b, _ in ones] + [(linked[j, d], -1)], 0, 0, f"(c) one count iff used [{j},{d}]")
            else:
                m.row([(b, 1) for b, _ in ones], None, 1, f"(c) one count [{j},{d}]")
            m.row([(model.x[j, d], 1), *[(b, -k) for b, k in ones]], 0, 0, f"(c) count [{j},{d}]")
        terms.extend((b, -c) for b, c in own)
        entropy_of[j] = own
        # a cut: no job spreads less than it would alone on the free room (largest-first majorises
        # every split of it, and entropy is Schur-concave); rounding down keeps the cut valid
        alone = _least_entropy_alone(model, j)
        if alone > 0:
            m.row(own + [(model.z[j], -math.floor(alone * ENTROPY_SCALE - reach / 2 - 1))], 0, None, f"(c) least entropy alone [{j}]")
    # the multiset of a job's counts is one partition of N into between its fewest and U parts within
    # the count ranges, so #k over its switches = sum_p y_p * (parts of p equal to k) with one y chosen
    # per started job (the convex hull of the count multisets; it implies the pairings below)
    partitioned = _partition_rows(model, m, spanning, counts, linked, slack, indicator)
    fields["entropy_jobs_partitioned"] = len(partitioned)
    # where the partitions are too many: a job on at most two switches holds k < N pods on one iff
    # N - k on the other, so as many of its switches hold k as hold N - k (the relaxation otherwise
    # mixes counts no plan pairs up). One that needs two and may use up to U = 2 + slack: with e = its
    # switches - 2 (0 on two, >= 1 beyond), -e <= #k - #(N - k) <= U e, as at most one switch holds
    # N - k > N / 2 and at most U hold k.
    paired, loose = [], []
    for j in spanning:
        if j in partitioned or slack is None or not _counts_tied(model, j, linked):
            continue
        if (model.fewest.get(j) or 0) + slack <= 2:
            paired.append(j)
        elif model.fewest.get(j) == 2:
            loose.append(j)
    for j in paired + loose:
        n_j = len(model.jobs[j])
        own_u = [(v, 1) for v in model.switch_vars(j)]
        for k in range(1, (n_j + 1) // 2):
            small = [(indicator[j, d, k], 1) for d in model.switches_of[j] if (j, d, k) in indicator]
            large = [(indicator[j, d, n_j - k], -1) for d in model.switches_of[j] if (j, d, n_j - k) in indicator]
            if not (small or large):
                continue
            if j in paired:
                m.row(small + large, 0, 0, f"(c) counts paired [{j},{k}]")
                continue
            most = 2 + slack
            m.row(small + large + [(v, -most) for v, _ in own_u] + [(model.z[j], 2 * most)], None, 0, f"(c) counts paired beyond two [{j},{k}]")
            m.row(small + large + own_u + [(model.z[j], -2)], 0, None, f"(c) counts paired beyond two, below [{j},{k}]")
    fields["entropy_jobs_loosely_paired"] = len(loose)
    fields["entropy_jobs_paired"] = len(paired)
    # twins are interchangeable: some optimum lists their entropies in non-increasing name order
    ordered = [(a, b) for a, b in model.twins if a in entropy_of and b in entropy_of]
    for a, b in ordered:
        m.row([(v, c) for v, c in entropy_of[a]] + [(v, -c) for v, c in entropy_of[b]], 0, None, f"(c) twins in order [{a},{b}]")
    fields["entropy_twins_ordered"] = len(ordered)
    m.maximize(terms)
    hint = list(values) + [0] * (m.num_vars - base)
    for j in spanning:
        for d in model.switches_of[j]:
            b = indicator.get((j, d, values[model.x[j, d]]))
            if b is not None:
                hint[b] = 1
    for j, multisets in partitioned.items():
        held_counts = tuple(sorted((values[model.x[j, d]] for d in model.switches_of[j] if values[model.x[j, d]]), reverse=True))
        if held_counts in multisets:
            hint[multisets[held_counts]] = 1
    # ``auto`` gives this phase to HiGHS alone: on the 50 contended batches of benchmarks/topology_batch.py
    # every entropy result under auto came from HiGHS, and CP-SAT alone proved fewer in the same time
    left = max(0.5, deadline - time.perf_counter())
    if solver == "cpsat":
        third = _search(m, solver, left, workers, hint)
    else:
        lagrangian = None
        if partitioned and not m.violated_rows(hint):
            lp_start = time.perf_counter()
            relaxed = lp_relaxation(m, LP_SHARE * left, workers)
            fields["entropy_lp_s"] = round(time.perf_counter() - lp_start, 3)
            if relaxed is None:
                fields["entropy_neighbourhood"] = "LP relaxation not solved in time"
            else:
                lagrangian = lagrangian_bound(m, relaxed.row_duals)
                fields["entropy_lp_bound_nats"] = round(-lagrangian.bound / lagrangian.scale / ENTROPY_SCALE, 6)
                hint = _multiset_neighbourhood(m, hint, partitioned, relaxed.values, lagrangian, deadline, workers, fields)
            left = max(0.5, deadline - time.perf_counter())
        third = _solve_fixed(m, hint, lagrangian, left, workers, fields)
    fields.update(phase_entropy=third.status, phase_entropy_s=round(third.wall_s, 3), phase_entropy_solver=third.solver, entropy_variables=m.num_vars - base)
    if third.values is None or third.status not in ("optimal", "feasible"):
        return values, False
    broken = m.violated_rows(third.values)
    if broken:  # HiGHS's default tolerance let a row slip: neither the plan nor the proof is kept
        fields["phase_entropy"] = "rejected"
        fields["entropy"] = f"not optimised: the solver's plan breaks {len(broken)} row(s) in exact arithmetic, first {broken[0]!r}"
        return values, False
    # each coefficient is rounded by at most 1/2 unit and a plan has one count per (job, switch) it
    # uses: the plan's true entropy is within (its terms + any plan's terms) / 2 units of the optimum
    terms_in_plan = sum(1 for j in spanning for d in model.switches_of[j] if third.values[model.x[j, d]])
    most_terms = sum(_most_terms(model, j) for j in spanning)
    fields["entropy_bound_nats"] = round(-third.bound / ENTROPY_SCALE, 6) if third.bound is not None else None
    if third.bound is not None and third.objective is not None:
        fields["entropy_gap_nats"] = round((third.bound - third.objective) / ENTROPY_SCALE, 6)
    fields["entropy_tolerance_nats"] = round((terms_in_plan + most_terms) / (2 * ENTROPY_SCALE), 6)
    return third.values[:base], third.status == "optimal"


def _multiset_neighbourhood(m: Milp, hint: list[int], partitioned: dict[str, dict[tuple[int, ...], int]], relaxed: list[float],
                            lagrangian: LagrangianBound, deadline: float, workers: int, fields: dict[str, Any]) -> list[int]:
    """A better start for the entropy phase. ``hint`` passes every row; ``relaxed`` and
    ``lagrangian``: the model's LP solution and its exact bound. The neighbourhood is the model with
    the columns reduced-cost fixing fixes against ``hint`` removed and each job's count multisets cut
    to those the LP uses for that job or for any job with the same multisets (twins swap theirs: on
    contended batch 37 the optimum gives two twins each other's LP multiset) and the start's own,
    solved by HiGHS with presolve (which drops the counts no kept multiset has). Returns the better of
    its plan and ``hint`` (checked in exact arithmetic); nothing is claimed of it. Given the optimum as
    its start, HiGHS proved contended batches 31 and 44 in 2.6 and 1.4 s that took it 19 and 14 s from
    the phase-(b) plan: the search was for the plan."""
    start = time.perf_counter()
    bounds = fix_by_reduced_cost(m, lagrangian, hint)
    if bounds is None:
        fields["entropy_neighbourhood"] = "not needed: the LP bound proves the start optimal"
        return hint
    lower, upper = bounds
    used: dict[frozenset[tuple[int, ...]], set[tuple[int, ...]]] = {}
    for multisets in partitioned.values():
        used.setdefault(frozenset(multisets), set()).update(p for p, y in multisets.items() if relaxed[y] >= 1e-6)
    for multisets in partitioned.values():
        kept = used[frozenset(multisets)]
        for p, y in multisets.items():
            if p not in kept and not hint[y]:
                upper[y] = lower[y]
    cut = m.compacted(lower, upper)
    left = max(0.2, NEIGHBOURHOOD_SHARE * (deadline - time.perf_counter()))
    found = solve(cut.milp, "highs", left, workers, cut.restrict(hint), strict=False, wall_cap_s=left)
    fields["entropy_neighbourhood_s"] = round(time.perf_counter() - start, 3)
    fields["entropy_neighbourhood_multisets"] = sum(1 for multisets in partitioned.values() for y in multisets.values() if upper[y])
    plan = cut.expand(found.values) if found.values is not None else None
    if plan is None or m.violated_rows(plan) or m.value_of_objective(plan) <= m.value_of_objective(hint):
        fields["entropy_neighbourhood"] = "no better plan"
        return hint
    fields["entropy_neighbourhood"] = f"improved the start by {(m.value_of_objective(plan) - m.value_of_objective(hint)) / ENTROPY_SCALE:.6f} nats"
    return plan


def _solve_fixed(m: Milp, hint: list[int], lagrangian: LagrangianBound | None, left: float, workers: int, fields: dict[str, Any]) -> MilpResult:
    """The entropy phase's HiGHS solve (presolve off: 42 against 40 of the 50 contended batches
    proven, it took 4 s of some), after reduced-cost fixing against ``hint`` with the LP's exact
    bound when there is one (``models/reduced_cost.py``; ``hint`` then passes every row). On
    contended batch 31 that fixes 29,000 of 45,000 columns and the proof takes 0.7 s, not 3.4 s."""
    start = time.perf_counter()

    def highs(model: Milp, model_hint: list[int]) -> MilpResult:
        limit = max(0.2, left - (time.perf_counter() - start))
        return solve(model, "highs", limit, workers, model_hint, strict=False, wall_cap_s=limit, presolve=False)

    if lagrangian is None:
        return highs(m, hint)
    result, fields["entropy_columns_fixed"] = solve_with_fixing(m, hint, lagrangian, highs)
    return result


def _partition_rows(model: _Model, m: Milp, spanning: list[str], counts: dict[tuple[str, int], tuple[int, int]],
                    linked: dict[tuple[str, int], int], slack: int | None, indicator: dict[tuple[str, int, int], int]
                    ) -> dict[str, dict[tuple[int, ...], int]]:
    """Adds, for each job whose count multisets number at most PARTITION_LIMIT (and all of
    them at most PARTITION_TOTAL), one variable per multiset and the rows tying them to its count
    indicators; returns, per such job, its multisets (non-increasing) and their variables."""
    done: dict[str, dict[tuple[int, ...], int]] = {}
    total = 0
    for j in spanning:
        if not _counts_tied(model, j, linked):
            continue
        n_j = len(model.jobs[j])
        ranges = [counts[j, d] for d in model.switches_of[j] if counts[j, d][0] <= counts[j, d][1]]
        if not ranges:
            continue
        fewest = model.fewest.get(j) or 1
        most = len(ranges) if slack is None else min(len(ranges), fewest + slack)
        found = _partitions(n_j, min(lo for lo, _ in ranges), max(hi for _, hi in ranges), fewest, most,
                            min(PARTITION_LIMIT, PARTITION_TOTAL - total))
        if found is None:
            continue
        total += len(found)
        chosen = [m.var(f"y[{j},{'+'.join(map(str, p))}]") for p in found]
        done[j] = dict(zip(found, chosen))
        m.row([(y, 1) for y in chosen] + [(model.z[j], -1)], 0, 0, f"(c) one count multiset iff started [{j}]")
        uses_of: dict[int, list[tuple[int, int]]] = {}  # count k -> (y, -(parts of p equal to k))
        for y, p in zip(chosen, found):
            for k in sorted(set(p)):
                uses_of.setdefault(k, []).append((y, -p.count(k)))
        for k in range(1, n_j + 1):
            have = [(indicator[j, d, k], 1) for d in model.switches_of[j] if (j, d, k) in indicator]
            uses = uses_of.get(k, [])
            if have or uses:
                m.row(have + uses, 0, 0, f"(c) switches holding {k} [{j}]")
    return done


def _counts_tied(model: _Model, j: str, linked: dict[tuple[str, int], int]) -> bool:
    """Whether job j's count indicators give its pods per access switch, each tied to the switch
    variable (a job whose every access switch is one (asw, spine) pair): the condition under which
    its counts over the switches it uses are one multiset the multiset rows and pairings speak of."""
    return all((j, d) in linked for d in model.switches_of[j])


def _partitions(n: int, low: int, high: int, fewest: int, most: int, cap: int) -> list[tuple[int, ...]] | None:
    """The partitions of n into between ``fewest`` and ``most`` parts, each in [low, high], parts in
    non-increasing order; None when there are more than ``cap``."""
    out: list[tuple[int, ...]] = []
    def walk(left: int, top: int, parts: tuple[int, ...]) -> bool:
        if left == 0:
            if len(parts) >= fewest:
                out.append(parts)
            return len(out) <= cap
        room = most - len(parts)
        if room == 0 or left > room * top:
            return True
        for part in range(min(top, left), low - 1, -1):
            if not walk(left - part, part, parts + (part,)):
                return False
        return True
    return out if walk(n, high, ()) else None


def _entropy_units(k: int, n: int) -> int:
    """A job of n pods with k under one switch: its entropy term k/n ln(n/k) in 1/ENTROPY_SCALE nats."""
    return round(ENTROPY_SCALE * (k / n) * math.log(n / k)) if k else 0


def _most_terms(model: _Model, j: str) -> int:
    """The most nonzero entropy terms a plan of job j has (one per switch it uses)."""
    return min(len(model.jobs[j]), len(model.switches_of[j]))


def _twins_sorted(model: _Model, values: list[int], spanning: list[str]) -> list[int]:
    """The same plan with each twin group's placements permuted into non-increasing entropy."""
    out = list(values)
    for group in model.twin_groups:
        if group[0] not in spanning:
            continue
        def own(j: str) -> list[int]:
            return [model.z[j], *(model.x[j, d] for d in model.switches_of[j]), *model.switch_vars(j),
                    *(v for (jj, _), v in model.v.items() if jj == j)]
        def spread(j: str) -> int:  # the phase's own (rounded) entropy terms
            n_j = len(model.jobs[j])
            return sum(_entropy_units(values[model.x[j, d]], n_j) for d in model.switches_of[j])
        ranked = sorted(group, key=lambda j: -spread(j))  # stable: ties keep name order
        for j, source in zip(group, ranked):
            for target, var in zip(own(j), own(source)):
                out[target] = values[var]
    return out


def _count_ranges(model: _Model, spanning: list[str], slack: int | None) -> tuple[dict[tuple[str, int], tuple[int, int]], dict[tuple[str, int], int]]:
    """Per (job, switch), the pod counts the entropy phase needs indicators for (``low``..``high``;
    0 is always allowed), and the switch variable a count is tied to ("one count iff used").

    Valid for every plan of the phase, for a job j of N pods under switches whose free
    room for it is r_e, needing at least m of them alone and using at most U (its fewest plus the
    switch slack, else all it has):
    * it uses at least m switches with at least one pod on each, so at most N - m + 1 on any one;
    * on a switch it uses it holds at least N less the most the other U - 1 it may use hold
      (the largest U - 1 rooms among the others); when that exceeds the room the switch is unusable.
    The lower bound needs the count of the whole access switch, so it applies where the switch is one
    (asw, spine) pair of the model. "One count iff used": a plan with u = 1 and no pod there has the
    same entropy with u = 0 and still satisfies every row (the fewest-switches cut holds for any real
    placement), so tying u to the count loses no optimum; it lifts the relaxation's entropy on a used
    switch from the chord through 0 to the chord through the least count."""
    counts: dict[tuple[str, int], tuple[int, int]] = {}
    linked: dict[tuple[str, int], int] = {}
    for j in spanning:
        n_j = len(model.jobs[j])
        for d in model.switches_of[j]:
            counts[j, d] = (1, model.ub[j, d])
        per_asw: dict[int, list[int]] = {}
        for d in model.switches_of[j]:
            per_asw.setdefault(model.switches[d][0], []).append(d)
        room = {e: sum(model.ub[j, d] for d in ds) for e, ds in per_asw.items()}
        fewest = model.fewest.get(j) or 1
        most_used = len(room) if slack is None else min(len(room), fewest + slack)
        ranked = sorted(room.values(), reverse=True)
        for e, ds in per_asw.items():
            high = min(room[e], n_j - fewest + 1)
            if len(ds) != 1:
                for d in ds:
                    counts[j, d] = (1, min(model.ub[j, d], high))
                continue
            # the largest U - 1 rooms among the other switches: the top U less this one if it is among them
            top = ranked[:most_used]
            others = sum(top) - room[e] if room[e] >= top[-1] else sum(top[:-1])
            counts[j, ds[0]] = (max(1, n_j - others), high)
            linked[j, ds[0]] = model.u[j, e]
    return counts, linked


def _switch_slack(model: _Model, gpus: int, switches: int) -> int | None:
    """How many switches the plans of the entropy phase (``gpus`` started, at most ``switches``
    spanned) can use beyond the fewest each started job needs: ``switches`` less the least sum of
    fewest switches over the sets of jobs that start exactly ``gpus`` GPUs (a subset-sum over the
    jobs, capacity ignored, so the slack is never understated). None when a job's GPUs are not fixed
    (min_available) or no set adds up."""
    least: dict[int, int] = {0: 0}  # GPUs started -> least summed fewest switches
    for j in model.names:
        if model.minimum[j] != len(model.jobs[j]):
            return None
        fewest = model.fewest.get(j)
        if fewest is None:
            continue  # it cannot start
        g = model.gpus[j] * len(model.jobs[j])
        for total, f in list(least.items()):
            if total + g <= gpus and least.get(total + g, math.inf) > f + fewest:
                least[total + g] = f + fewest
    return switches - least[gpus] if gpus in least else None


def _least_entropy_alone(model: _Model, j: str) -> float:
    """Job j's least entropy over access switches with the whole free room to itself."""
    room: dict[int, int] = {}
    for d in model.switches_of[j]:
        asw = model.switches[d][0]
        room[asw] = room.get(asw, 0) + model.ub[j, d]
    plan = largest_first(list(room.values()), len(model.jobs[j]))
    return entropy([n for _, n in plan]) if plan else 0.0
