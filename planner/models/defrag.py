"""Exact defragmentation: which node every movable pod should end on so that most nodes are empty.

Two formulations of the same problem, both built as a ``Milp`` (integer coefficients) and solved by
either back-end. Notation: P movable pods (placed, not locked), N nodes, E(p) the nodes ``rules``
allows for p (its own node always; others only if schedulable, of an allowed GPU model, matching its
selector, free of a locked pod sharing an anti-affinity group, and, for a pod of a job with a
``required`` topology, under the job's current switch: make-before-break never lets such a pod leave
it, since old and new copies would span two switches). For node n and resource r in {GPU, CPU,
memory}: capacity C_rn and usage L_rn of its locked pods.

Pod-level formulation (the ASI paper's ILP, with eligibility and a linear empty indicator):

    x[p,n] in {0,1}   p ends on n                         for n in E(p)
    e[n]   in {0,1}   n ends empty                        for n without locked pods
    (1)  sum_n x[p,n] = 1                                 every movable pod on exactly one node
    (2)  sum_p r_p x[p,n] + (C_rn - L_rn) e[n] <= C_rn - L_rn
                                                          capacity, and no pod on an empty node
    (3)  sum_p x[p,n] + M_n e[n] <= M_n                   the same for the pod count (M_n = |E^-1(n)|)
    (4)  sum_{p in g} x[p,n] <= 1                         anti-affinity group g on node n
    (5)  sum_p x[p,home(p)] >= |P| - B                    migration budget B
    GPU shares at device level, on nodes where shares may sit (devices d = 0..C_gpu-1):
    (6)  y[p,n,d] in {0,1}, sum_d y[p,n,d] = x[p,n]       each share on one device (locked: = 1)
    (7)  sum_p s_p y[p,n,d] <= 1000 u[n,d]                device d's shares (milli-GPUs) fit
    (8)  u[n,d] >= u[n,d+1]                               used devices first (symmetry)
         and the GPU row (2) counts sum_d u[n,d] devices besides the whole-GPU pods.

(2) links e to the capacity linearly (not only through enforcement literals), which keeps the LP
bound strong: the relaxation already knows that the pods' total demand needs enough non-empty nodes.

Class-aggregated formulation: movable pods with the same resources and the same rules (GPU model
set, selector, anti-affinity groups, topology domain) are interchangeable; z[k,n] counts the pods of
class k on n, c0[k,n] how many are there now, and m[k,n] >= c0[k,n] - z[k,n] the ones that leave.
Rows (1)-(8) are written with counts instead of binaries. It is far smaller when pods repeat (GPU pods
come in a few shapes) and is exact; counts are mapped back to concrete pods keeping pods in place
wherever the count allows. ``formulation="auto"`` uses it unless some (pod, node) pairs are
forbidden (a pod-specific rule) or it saves little.

Objective, weighted so that it is exactly lexicographic: maximise empty nodes, then fewest moves,
then fewest GPUs moved:

    maximise  W1 * sum_n e[n] - W2 * moves - gpus_moved,   W2 = G + 1,  W1 = W2 * |P| + G + 1

with G the most GPUs (in the model's GPU units) that could move. One more empty node is worth more
than any change in moves and GPUs moved (W1 > W2 * |P| + G), and one move fewer more than any change
in GPUs moved (W2 > G), so the weighted optimum is the lexicographic one. A bound U on the weighted
objective bounds the empty nodes by ceil(U / W1).

Units: all coefficients are integers (CP-SAT requires them). CPUs, memory and GPU shares are scaled
by ``models/units.py`` so that the model accepts exactly the placements ``rules`` accepts (or, for
values no practical unit represents, a superset: the bound stays valid and the executed plan is
checked by the rules). Capacity rows are divided by the greatest common divisor of their
coefficients, which keeps coefficients small without changing the integer solutions.

Limits (``limits.MoveBudget``): (5) bounds the moves by the moves left; per node, moves out plus
moves in are at most what the node may still take part in; under ``same_asw`` a pod's eligible nodes
are those under its switch. All three are relaxations of the same limits on a plan (a plan's moves
include every move of a pod that moves twice), so the model's bound is a bound for the plan.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from planner import rules
from planner.limits import MoveBudget
from planner.models.defrag_data import DefragData, _check_deadline
from planner.models.milp import Milp
from planner.state import PENDING, ClusterState

FORMULATIONS = ("auto", "pod", "class")


Unit = tuple[list[int], list[int]]
"""A pod (pod level) or a class of interchangeable pods (class level), with the nodes it may end on."""
HintPart = Callable[[dict[int, int], list[int]], None]
"""Fills in ``values`` the variables of one part of the model that realise ``target`` (pod -> node)."""


@dataclass
class DefragModel:
    """A built formulation: the Milp plus what is needed to read a solution and to write a hint."""

    milp: Milp
    formulation: str
    state: ClusterState
    movable: list[int]
    w1: int
    w2: int
    empty_vars: list[int]
    x: dict[tuple[int, int], int] = field(default_factory=dict)
    """pod level: (pod, node) -> variable."""
    classes: list[list[int]] = field(default_factory=list)
    """class level: the pods of each class."""
    z: dict[tuple[int, int], int] = field(default_factory=dict)
    """class level: (class, node) -> count variable."""
    hint_parts: list[HintPart] = field(default_factory=list)
    gpu_units: list[int] = field(default_factory=list)
    """GPUs of every pod in the objective's units (whole GPUs times the share unit, plus the share)."""
    gpu_max: int = 0
    """G: the most GPU units that could move (all movable pods')."""
    exact_units: bool = True
    """Every resource scaled exactly (``models/units.py``); otherwise the model is a relaxation."""
    exact_gpu_units: bool = True
    """GPU shares scaled exactly, so the objective's GPUs-moved tier is the plan's exactly."""
    usage: dict[int, dict[str, tuple[list[tuple[int, int]], int]]] = field(default_factory=dict)
    """Per node and resource (``gpu``: whole GPUs and used devices, ``cpu``, ``mem``, in ``data``'s units):
    the movable pods' usage terms and the room the locked pods leave (rows (2) before the gcd): for
    models built on this one (``models/room_exact.py``)."""
    data: DefragData | None = None
    leaving: dict[int, tuple[list[tuple[int, int]], int, list[tuple[int, int]]]] = field(default_factory=dict)
    """Per node n with movable pods on it now: (terms, constant, home) with sum(terms) + constant at least
    the number of them that leave n (equal at an optimum: the objective counts it as moves), and
    ``home`` their assignment variables on n with how many pods each stands for (1, or a class's pods on
    n): for models built on this one (``models/room_exact.py``)."""

    def empties(self, values: list[int]) -> int:
        return sum(values[v] for v in self.empty_vars)

    def empties_bound(self, bound: float | None) -> int | None:
        """Upper bound on empty nodes implied by a bound on the weighted objective."""
        if bound is None or not math.isfinite(bound):
            return None
        return max(0, min(len(self.empty_vars), math.ceil(bound / self.w1 - 1e-9)))

    def target(self, values: list[int]) -> dict[int, int]:
        """Node of every movable pod in a solution."""
        if self.formulation == "pod":
            return {p: n for (p, n), v in self.x.items() if values[v] > 0}
        target: dict[int, int] = {}
        state = self.state
        per_class: list[dict[int, int]] = [{} for _ in self.classes]  # one pass over z (per class it was quadratic)
        for (k, n), v in self.z.items():
            if values[v] > 0:
                per_class[k][n] = values[v]
        for k, pods in enumerate(self.classes):
            counts = per_class[k]
            by_home: dict[int, list[int]] = defaultdict(list)
            for p in pods:
                by_home[int(state.pod_node[p])].append(p)
            leaving: list[int] = []
            for n, here in sorted(by_home.items()):
                keep = min(len(here), counts.get(n, 0))
                for p in here[:keep]:
                    target[p] = n
                leaving.extend(here[keep:])
                counts[n] = counts.get(n, 0) - keep
            for n in sorted(counts):
                for _ in range(counts[n]):
                    target[leaving.pop(0)] = n
        return target

    def hint(self, target: dict[int, int]) -> list[int]:
        """A complete assignment of every variable that realises ``target`` (pod -> node)."""
        values = [0] * self.milp.num_vars
        for part in self.hint_parts:
            part(target, values)
        return values


def build_defrag_model(
    state: ClusterState,
    budget: MoveBudget | None = None,
    forbidden: set[tuple[int, int]] | frozenset[tuple[int, int]] = frozenset(),
    formulation: str = "auto",
    deadline: float | None = None,
) -> DefragModel:
    """The exact defragmentation model of ``state`` within ``budget`` (see the module docstring).

    ``forbidden`` (pod, node) pairs are excluded (a restriction: the model is then no longer a
    relaxation of the user's problem, and its bound says nothing about it). Past ``deadline``
    (``time.perf_counter()``) building stops with ``ModelTimeout``.
    """
    if formulation not in FORMULATIONS:
        raise ValueError(f"unknown formulation {formulation!r}; choose one of {', '.join(FORMULATIONS)}")
    budget = MoveBudget.of(state) if budget is None else budget
    movable = [p for p in range(len(state.pod_names)) if state.pod_node[p] != PENDING and not state.pod_locked[p]]
    data = DefragData(state, movable, forbidden, budget, deadline)
    if formulation == "auto":
        classes = data.classes()
        formulation = "class" if not forbidden and len(classes) <= 0.7 * max(1, len(movable)) else "pod"
    if formulation == "class" and forbidden:
        raise ValueError("the class-aggregated formulation cannot forbid single (pod, node) pairs; use 'pod'")
    return _Builder(data, budget, formulation, deadline).build()


def _capacity_row(milp: Milp, terms: list[tuple[int, int]], room: int, empty: int | None, name: str) -> None:
    """sum(coef * var) + room * e <= room, divided by the gcd of the pods' coefficients.

    Dividing by g and rounding the room down keeps exactly the same integer solutions: with e = 0
    the left side is a multiple of g, and with e = 1 every pod with a coefficient is kept off.
    """
    terms = [(v, c) for v, c in terms if c]
    g = math.gcd(*(c for _, c in terms)) if terms else 1
    if g > 1:
        terms = [(v, c // g) for v, c in terms]
        room //= g  # floor, also below zero
    if empty is not None and room > 0:
        terms.append((empty, room))
    if terms:
        milp.row(terms, None, room, name)


class _Builder:
    def __init__(self, data: DefragData, budget: MoveBudget, formulation: str, deadline: float | None):
        self.d = data
        self.budget = budget
        self.deadline = deadline
        self.formulation = formulation
        self.milp = Milp()

    def build(self) -> DefragModel:
        d, milp = self.d, self.milp
        s = d.state
        n_nodes = len(s.node_names)
        units = self._units()  # list of (pods, eligible nodes): a pod, or a class
        movable_count = len(d.movable)
        total_gpu = sum(d.gpu_units[p] for p in d.movable)
        w2 = total_gpu + 1
        w1 = w2 * movable_count + total_gpu + 1
        model = DefragModel(milp, self.formulation, s, d.movable, w1, w2, [])
        model.gpu_units, model.gpu_max = d.gpu_units, total_gpu
        model.exact_units, model.exact_gpu_units = d.exact_units, d.share_scale.exact
        model.data = d

        # assignment variables: x[p,n] (binary) or z[k,n] (count)
        on: dict[int, list[tuple[int, int]]] = defaultdict(list)  # node -> [(unit, var)]
        assign: dict[tuple[int, int], int] = {}
        for u, (pods, nodes) in enumerate(units):
            if u % 256 == 0:
                _check_deadline(self.deadline)
            for n in nodes:
                if self.formulation == "pod":
                    var = milp.var(f"x[{s.pod_names[pods[0]]},{s.node_names[n]}]")
                else:
                    at_home = sum(1 for p in pods if d.home[p] == n)
                    cap = len(pods) if s.eligible[s.pod_signature[pods[0]], n] else at_home  # cordoned: no arrivals
                    var = milp.var(f"z[{u},{s.node_names[n]}]", 0, cap)
                assign[u, n] = var
                on[n].append((u, var))
            # (1) every movable pod on exactly one node (a class: all its pods)
            milp.row([(assign[u, n], 1) for n in nodes], len(pods), len(pods), f"assign[{u}]")
        if self.formulation == "pod":
            model.x = {(units[u][0][0], n): v for (u, n), v in assign.items()}
        else:
            model.classes = [pods for pods, _ in units]
            model.z = dict(assign)

        # e[n]: node n ends empty (only nodes without locked pods can)
        empty: dict[int, int] = {}
        for n in range(n_nodes):
            if not d.has_locked[n]:
                empty[n] = milp.var(f"e[{s.node_names[n]}]")
        model.empty_vars = list(empty.values())

        share_nodes = self._share_nodes(units, on)
        for n in range(n_nodes):
            if n % 256 == 0:
                _check_deadline(self.deadline)
            here = on.get(n, [])
            e = empty.get(n)
            # (2) capacity per resource, linear in the empty indicator
            usage = model.usage[n] = {}
            for name, cap, locked, need in (
                ("cpu", d.cap_cpu[n], d.locked_cpu[n], d.cpu),
                ("mem", d.cap_mem[n], d.locked_mem[n], d.mem),
            ):
                usage[name] = ([(var, need[units[u][0][0]]) for u, var in here], cap - locked)
                _capacity_row(milp, usage[name][0], cap - locked, e, f"{name}[{s.node_names[n]}]")
            gpu_terms = [(var, int(s.pod_whole[units[u][0][0]])) for u, var in here if s.pod_whole[units[u][0][0]] > 0]
            if n in share_nodes:
                gpu_terms += self._devices(n, here, units, model)
            usage["gpu"] = (gpu_terms, d.cap_gpu[n] - d.locked_whole[n])
            _capacity_row(milp, gpu_terms, d.cap_gpu[n] - d.locked_whole[n], e, f"gpu[{s.node_names[n]}]")
            # (2') every named resource (Kubernetes' NodeResourcesFit), where it can bind
            for r, name in enumerate(s.res_names):
                room = int(s.cap_res[n, r] - d.locked_res[n, r])
                terms = [(var, int(s.pod_res[units[u][0][0], r])) for u, var in here]
                most = sum(c * (len(units[u][0]) if self.formulation == "class" else 1) for (u, _), (_, c) in zip(here, terms))
                if most > room:
                    _capacity_row(milp, terms, room, None, f"res[{name},{s.node_names[n]}]")
            # (3) pod count, so that e[n] = 1 leaves n without pods even for zero-request pods
            if e is not None and here:
                m = sum(len(units[u][0]) if self.formulation == "class" else 1 for u, _ in here)
                milp.row([(var, 1) for _, var in here] + [(e, m)], None, m, f"count[{s.node_names[n]}]")
            # (4) anti-affinity
            by_group: dict[int, list[int]] = defaultdict(list)
            for u, var in here:
                for g in s.pod_groups[units[u][0][0]]:
                    by_group[g].append(var)
            for g, members in by_group.items():
                if len(members) > 1 or self.formulation == "class":
                    milp.row([(v, 1) for v in members], None, 1, f"anti[{g},{s.node_names[n]}]")

        # moves: pod level 1 - x[p,home]; class level m[k,n] >= c0[k,n] - z[k,n]
        move_terms: list[tuple[int, int]] = []  # (var, +1 if the var counts a move, -1 if a stay)
        gpu_moved: list[tuple[int, int]] = []
        constant_moves = 0
        constant_gpu = 0
        if self.formulation == "pod":
            for u, (pods, _) in enumerate(units):
                p = pods[0]
                stay = assign[u, d.home[p]]
                terms, constant, home = model.leaving.setdefault(d.home[p], ([], 0, []))
                terms.append((stay, -1))
                home.append((stay, 1))
                model.leaving[d.home[p]] = (terms, constant + 1, home)
                move_terms.append((stay, -1))
                gpu_moved.append((stay, -d.gpu_units[p]))
                constant_moves += 1
                constant_gpu += d.gpu_units[p]
        moved_vars: dict[tuple[int, int], int] = {}
        if self.formulation == "class":
            for u, (pods, _) in enumerate(units):
                c0: dict[int, int] = defaultdict(int)
                for p in pods:
                    c0[d.home[p]] += 1
                for n, count in sorted(c0.items()):
                    m = milp.var(f"m[{u},{s.node_names[n]}]", 0, count)
                    moved_vars[u, n] = m
                    terms, constant, home = model.leaving.setdefault(n, ([], 0, []))
                    terms.append((m, 1))
                    home.append((assign[u, n], count))
                    milp.row([(m, 1), (assign[u, n], 1)], count, None, f"moved[{u},{s.node_names[n]}]")
                    move_terms.append((m, 1))
                    gpu_moved.append((m, d.gpu_units[pods[0]]))
            model.hint_parts.append(lambda target, values: self._hint_moves(target, values, units, moved_vars))
        if self.budget.bounded_nodes:
            self._per_node_budget(units, assign, moved_vars if self.formulation == "class" else None)
        # (5) migration budget
        if self.budget.bounded_moves:
            milp.row(move_terms, None, self.budget.moves_left - constant_moves, "budget")
        objective = [(e, w1) for e in model.empty_vars]
        objective += [(v, -w2 * sign) for v, sign in move_terms]
        objective += [(v, -c) for v, c in gpu_moved]
        milp.maximize(objective, offset=-(w2 * constant_moves + constant_gpu))
        model.hint_parts.insert(0, lambda target, values: self._hint_assign(target, values, units, assign, empty))
        return model

    # -- pieces ----------------------------------------------------------------------------------

    def _units(self) -> list[Unit]:
        """Pods (pod level) or classes of interchangeable pods, each with its eligible nodes."""
        d = self.d
        if self.formulation == "pod":
            return [([p], d.eligible[p]) for p in d.movable]
        units = []
        for pods in d.classes():
            nodes = sorted({n for p in pods for n in d.eligible[p]})
            units.append((pods, nodes))
        return units

    def _per_node_budget(self, units: list[Unit], assign: dict[tuple[int, int], int], moved_vars: dict[tuple[int, int], int] | None) -> None:
        """Moves out of n plus moves into n <= max_moves_per_node, for every node."""
        d, s = self.d, self.d.state
        terms: dict[int, list[tuple[int, int]]] = defaultdict(list)
        constant: dict[int, int] = defaultdict(int)
        for (u, n), var in assign.items():
            pods = units[u][0]
            here = sum(1 for p in pods if d.home[p] == n)
            if moved_vars is None:  # pod level: out = 1 - x[p,home]; in = x[p,n] for n != home
                if here:
                    terms[n].append((var, -1))
                    constant[n] += 1
                else:
                    terms[n].append((var, 1))
            else:  # class level: out = m[k,n]; in = z[k,n] - c0[k,n] + m[k,n]
                terms[n].append((var, 1))
                constant[n] -= here
                if (u, n) in moved_vars:
                    terms[n].append((moved_vars[u, n], 2))
        for n, row in terms.items():
            self.milp.row(row, None, int(self.budget.node_left[n]) - constant[n], f"node-moves[{s.node_names[n]}]")

    def _share_nodes(self, units: list[Unit], on: dict[int, list[tuple[int, int]]]) -> set[int]:
        s = self.d.state
        nodes = set(self.d.locked_shares)
        for n, here in on.items():
            if any(s.pod_share[units[u][0][0]] > 0 for u, _ in here):
                nodes.add(n)
        return nodes

    def _devices(self, n: int, here: list[tuple[int, int]], units: list[Unit], model: DefragModel) -> list[tuple[int, int]]:
        """(6)-(8): device-level packing of shares on node n; returns the GPU-row terms sum_d u[n,d]."""
        d, milp, s = self.d, self.milp, self.d.state
        name = s.node_names[n]
        devices = d.cap_gpu[n]
        used = [milp.var(f"u[{name},{k}]") for k in range(devices)]
        for k in range(devices - 1):
            milp.row([(used[k], 1), (used[k + 1], -1)], 0, None, f"sym[{name},{k}]")  # (8)
        fill: list[list[tuple[int, int]]] = [[] for _ in range(devices)]
        placements: list[tuple[int | None, int, list[int]]] = []  # (unit or None for locked pod, pod, device vars)
        for u, var in here:
            p = units[u][0][0]
            if s.pod_share[p] <= 0:
                continue
            upper = len(units[u][0]) if self.formulation == "class" else 1
            ys = [milp.var(f"y[{u},{name},{k}]", 0, upper) for k in range(devices)]
            milp.row([(y, 1) for y in ys] + [(var, -1)], 0, 0, f"share[{u},{name}]")  # (6)
            for k, y in enumerate(ys):
                fill[k].append((y, d.share[p]))
            placements.append((u, p, ys))
        for p in d.locked_shares.get(n, []):
            ys = [milp.var(f"y[{s.pod_names[p]},{name},{k}]") for k in range(devices)]
            milp.row([(y, 1) for y in ys], 1, 1, f"locked-share[{s.pod_names[p]}]")
            for k, y in enumerate(ys):
                fill[k].append((y, d.share[p]))
            placements.append((None, p, ys))
        for k in range(devices):
            if fill[k]:
                milp.row(fill[k] + [(used[k], -d.device)], None, 0, f"device[{name},{k}]")  # (7)
        model.hint_parts.append(lambda target, values: self._hint_devices(n, target, values, used, placements, units))
        return [(u, 1) for u in used]

    # -- hints -----------------------------------------------------------------------------------

    def _hint_assign(self, target: dict[int, int], values: list[int], units: list[Unit], assign: dict[tuple[int, int], int], empty: dict[int, int]) -> None:
        d = self.d
        busy = {int(d.state.pod_node[p]) for p in range(len(d.state.pod_names)) if d.state.pod_locked[p] and d.state.pod_node[p] >= 0}
        for u, (pods, _) in enumerate(units):
            for p in pods:
                n = target.get(p, d.home[p])
                busy.add(n)
                var = assign.get((u, n))
                if var is not None:
                    values[var] += 1
        for n, var in empty.items():
            values[var] = 0 if n in busy else 1

    def _hint_moves(self, target: dict[int, int], values: list[int], units: list[Unit], moved_vars: dict[tuple[int, int], int]) -> None:
        d = self.d
        for u, (pods, _) in enumerate(units):
            stay: dict[int, int] = defaultdict(int)
            c0: dict[int, int] = defaultdict(int)
            for p in pods:
                c0[d.home[p]] += 1
            for p in pods:
                stay[target.get(p, d.home[p])] += 1
            for n, count in c0.items():
                values[moved_vars[u, n]] = max(0, count - stay.get(n, 0))

    def _hint_devices(
        self, n: int, target: dict[int, int], values: list[int], used: list[int], placements: list[tuple[int | None, int, list[int]]], units: list[Unit]
    ) -> None:
        d = self.d
        sharing = []
        for u, p, ys in placements:
            pods = [p] if u is None else [q for q in units[u][0] if target.get(q, d.home[q]) == n]
            for q in pods:
                sharing.append((ys, float(d.state.pod_share[q])))
        devices = rules.assign_shares([share for _, share in sharing])
        for (ys, _), k in zip(sharing, devices):
            if k < len(ys):
                values[ys[k]] += 1
                values[used[k]] = 1
