"""The joint topology model's formulation (``_Model``): shapes, node classes and their maximal
patterns, the variables x, z, u, v, w, y and rows (1) to (5) of the package docstring; the phases
change only its objective and held rows."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.heuristics.topology import min_switches, node_slots
from planner.models.milp import Milp
from planner.rules import EPS
from planner.state import ClusterState
from planner.state_build import UNLISTED

PATTERN_LIMIT = 64

Pairs = dict[str, list[tuple[int, int]]]  # job -> (pod, node)


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

    def __init__(
        self,
        state: ClusterState,
        jobs: dict[str, list[int]],
        levels: Mapping[str, tuple[str, bool]],
        minimum: dict[str, int],
        within: dict[str, int] | None = None,
    ) -> None:
        self.state, self.jobs, self.levels, self.minimum, self.within = state, jobs, levels, minimum, within or {}
        self.names = sorted(jobs)
        self.exact = not any(state.pod_share[jobs[j][0]] > 0 for j in self.names)
        self.shapes: list[_Shape] = []
        self.shape_of: dict[str, int] = {}
        keys: dict[tuple[Any, ...], int] = {}
        for j in self.names:
            p = jobs[j][0]
            key: tuple[Any, ...] = (
                int(state.pod_whole[p]),
                bool(state.pod_share[p] > 0),
                float(state.pod_cpus[p]),
                float(state.pod_mem[p]),
                int(state.pod_signature[p]),
                tuple(sorted(state.pod_groups[p])),
                tuple(state.pod_res[p].tolist()),
            )
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
        classes: dict[tuple[Any, ...], list[int]] = {}
        for n in nodes.tolist():
            room = tuple(int(min(s.slots[n], s.demand)) for s in self.shapes)
            key = (
                switch_of[int(state.asw_domain[n]), int(state.spine_domain[n])],
                int(free_gpu[n]),
                float(free_cpu[n]),
                float(free_mem[n]),
                room,
                tuple(free_res[n].tolist()),
            )
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
        same: dict[tuple[Any, ...], list[str]] = {}
        for j in self.names:
            if j not in self.within:
                same.setdefault((self.shape_of[j], len(self.jobs[j]), self.levels[j], self.minimum[j]), []).append(j)
        self.twin_groups = [group for group in same.values() if len(group) > 1]
        self.twins = [(a, b) for group in self.twin_groups for a, b in itertools.pairwise(group)]
        self.placed = [(v, self.gpus[j]) for (j, _), v in self.x.items()]

    def _node_rows(self, c: _Class, n: int, here: list[int]) -> None:
        """Exact per-node rows (GPUs, CPUs, memory in the smallest integer units that hold them)."""
        state, m = self.state, self.m
        free = (
            int(state.cap_gpus[n] - state.whole_used[n] - state.share_devices[n]),
            float(state.cap_cpus[n] - state.used_cpus[n]),
            float(state.cap_mem[n] - state.used_mem[n]),
        )
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
                out[j].extend((next(pods), n) for n in slots[s, d][start : start + count])
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
        k: float = room[s] - vector[s]
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
            ok = walk(
                i + 1,
                (used[0] + k * shape.gpus, used[1] + k * shape.cpus, used[2] + k * shape.memory, *(u + k * a for u, a in zip(used[3:], shape.res))),
                groups | set(shape.groups) if k else groups,
            )
            vector[s] = 0
            if not ok:
                return False
        return True

    return out if walk(0, (0, 0.0, 0.0, *(0 for _ in free[3:])), set()) and out else None


def _integer_scale(values: list[float]) -> int | None:
    """The smallest power of ten (up to 10^6) that makes every value an integer, None if none does."""
    for digits in range(7):
        scale: int = 10**digits
        if all(abs(v * scale - round(v * scale)) < 1e-9 * max(1.0, abs(v * scale)) for v in values):
            return scale
    return None
