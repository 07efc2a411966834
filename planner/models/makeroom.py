"""Exact make room (issue 12): the end state with the fewest moves that lets the named pending jobs start.

Over a *neighbourhood* (``Neighbourhood``): the movable pods M (placed, not locked, not standby,
whole GPUs), the nodes they may end on, and each job's candidate nodes C_j. Every other pod stays
where it is. For p in M, E(p) are the nodes ``rules`` allows (eligible signature, not standby,
free of a fixed pod of its anti-affinity groups, within its job's switch when that job's topology is
``required``, within the limits: ``MoveBudget.destinations``), its own node always included.

    x[p,n] in {0,1}      p ends on n                              n in E(p)
    y[j,n] in 0..k_j     pods of job j started on n               n in C_j
    z[j]   in {0,1}      job j starts (all its k_j pods: a gang; at least m_j with ``min_available`` m_j)
    u[j,d] in {0,1}      job j uses domain d (``required`` jobs: asw or spine)
    (1)  sum_n x[p,n] = 1
    (2)  sum_n y[j,n] = k_j z_j            (m_j z_j <= sum_n y[j,n] <= k_j z_j with min_available)
    (3)  y[j,n] <= k_j u[j,d(n)],  sum_d u[j,d] <= 1                one switch when required
    (4)  per node and resource r (GPUs, CPUs, memory in exact integer units, ``models/units.py``):
         F_rn + sum_p r_p x[p,n] + sum_j r_j y[j,n] <= C_rn       (F: the fixed pods' usage)
    (5)  sum_{p in g} x[p,n] + sum_{j in g} y[j,n] <= 1             anti-affinity group g on n
    (6)  sum_p x[p,home(p)] >= |M| - B                              migration budget
    (7)  moves out of n + moves into n <= B_n                       per-node budget

Objective, lexicographic, in two solves: (a) most jobs started; then, holding (a), (b) fewest moves
and (c) fewest GPUs moved as one weighted objective W2 * moves + GPUs with W2 = G + 1 (G: all of
M's GPUs), which is exactly lexicographic. Every plan within the limits ends in a state this model
accepts when the neighbourhood is the whole cluster, with at most the plan's moves and GPUs moved:
the model is then a relaxation and its proven optimum bounds every plan. On a restricted
neighbourhood it proves optimality within the neighbourhood only (``Solution.restricted``).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.heuristics.makeroom import (
    _candidates,
    _domains_cheapest_first,
)
from planner.heuristics.room import Request, domains_of, optimistic_slots
from planner.heuristics.topology import node_slots
from planner.limits import MoveBudget
from planner.models.backends import solve
from planner.models.milp import Milp, MilpResult, PhaseRecord
from planner.models.units import scale_for
from planner.state import ClusterState
from planner.state_build import UNLISTED

MAX_PAIRS = 150_000
"""Above this many (movable pod, node) pairs the neighbourhood is restricted. At 150,000 the whole of
a 200-node ASI-like cluster is modelled and proven optimal in 2.8 to 5.7 s (5 seeds, 64-GPU required
job, 100-move budget; at 40,000 every one of them was restricted)."""
RESTRICTED_NODES = 24
"""Restricted: candidate nodes per job (nearest to fitting, in the cheapest domains)."""
RESTRICTED_DESTINATIONS = 48
"""Restricted: other nodes the displaced pods may go to (most free GPUs first)."""
RESTRICTED_DOMAINS = 4
RESTRICTED_PER_POD = (8, 16)
"""Restricted, small jobs: at most this many candidate nodes, and other nodes, per pod the named jobs
start (a lone pending pod: 8 and 16; 3 pods or more: the limits above). On the openb probes (a pod of
5 to 7 GPUs) the plans found with 8 and 16 had as many moves as with 24 and 48, and the solve took a
fifth of the CPU time (``benchmarks/makeroom.py``)."""


BUSY_SAMPLE_S = 0.1
"""How long ``free_workers`` watches the machine's CPU counters (``/proc/stat``)."""


def busy_cores(sample_s: float = BUSY_SAMPLE_S) -> float | None:
    """Cores other work keeps busy, over ``sample_s`` while this process sleeps (``/proc/stat``: all
    cores but idle and I/O wait); None where that file cannot be read (then the 1-minute load
    average stands in, ``free_workers``)."""
    try:
        with open("/proc/stat") as f:
            before = [int(v) for v in f.readline().split()[1:]]
        time.sleep(sample_s)
        with open("/proc/stat") as f:
            after = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    delta = [b - a for a, b in zip(before, after)]
    total = sum(delta[:8])  # user nice system idle iowait irq softirq steal (guest time is in user)
    if total <= 0:
        return None
    return (total - delta[3] - delta[4]) / total * (os.cpu_count() or 1)


def free_workers(requested: int, deterministic: bool) -> int:
    """Solver workers for one solve: ``requested``, but at most one per core this process may use
    (``sched_getaffinity``) that other work does not keep busy (``busy_cores``, else the 1-minute
    load average), at least one. With ``deterministic`` exactly ``requested``: a deterministic search
    is reproducible for one worker count only. The claims never depend on the count (a proof holds
    whatever the workers); which of two equally good plans is returned may."""
    if deterministic or requested <= 1:
        return max(1, requested)
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count() or 1
    busy = busy_cores()
    if busy is None:
        busy = os.getloadavg()[0]
    return min(requested, max(1, min(usable, math.floor(usable - busy + 0.5))))


@dataclass
class Neighbourhood:
    """What the model decides over; ``restricted`` when it is not the whole problem."""

    movable: list[int]
    nodes: list[int]
    candidates: dict[str, list[int]]
    restricted: bool
    why: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "restricted": self.restricted,
            "movable_pods": len(self.movable),
            "nodes": len(self.nodes),
            "candidate_nodes": {j: len(c) for j, c in self.candidates.items()},
            **({"restriction": "; ".join(self.why)} if self.why else {}),
        }


@dataclass
class Solution:
    """The solved end state: moved pods' nodes, each started job's (pod, node) pairs, and the claims."""

    target: dict[int, int]
    placements: dict[str, list[tuple[int, int]]]
    status: str
    """The solver's status for the model: optimal (both levels proven), feasible, timeout, infeasible, error."""
    jobs_bound: int | None
    moves: int
    gpus_moved: float
    moves_bound: int | None
    neighbourhood: Neighbourhood
    records: list[PhaseRecord] = field(default_factory=list)
    variables: int = 0
    constraints: int = 0
    hinted: bool | None = None
    """Whether a known plan's end state was the solver's hint (None: no plan was given)."""
    workers: int = 0
    """The solver workers used (``free_workers``)."""


def neighbourhood(
    state: ClusterState,
    requests: list[Request],
    budget: MoveBudget,
    max_pairs: int = MAX_PAIRS,
    touched: set[int] | None = None,
    job_nodes: dict[str, set[int]] | None = None,
) -> Neighbourhood:
    """The whole cluster when its model is small enough, else the nodes nearest to fitting each job
    (in its cheapest domains when required), the pods on them, and the roomiest other nodes; plus,
    when restricted, the ``touched`` nodes (a known plan's sources and destinations) with their pods
    and each job's ``job_nodes`` (where that plan starts it) as its candidates."""
    s = state
    n_nodes = len(s.node_names)
    standby_nodes = s.standby_on > 0
    movable_all = np.flatnonzero((s.pod_node >= 0) & ~s.pod_locked & (s.pod_share == 0))
    why = []
    if ((s.pod_node >= 0) & ~s.pod_locked & (s.pod_share > 0)).any():
        why.append("pods holding GPU shares stay where they are")
    if standby_nodes.any():
        why.append("nodes with standby pods receive no pod")
    candidates: dict[str, list[int]] = {}
    optimistic = {}
    for r in requests:
        optimistic[r.name] = optimistic_slots(s, r.pods[0])
        candidates[r.name] = np.flatnonzero((optimistic[r.name] > 0) & ~standby_nodes).tolist()
    if len(movable_all) * n_nodes <= max_pairs:
        return Neighbourhood(movable_all.tolist(), list(range(n_nodes)), candidates, bool(why), why)
    full = {name: list(c) for name, c in candidates.items()}
    chosen: set[int] = set()
    pods_started = sum(r.need for r in requests)
    most_nodes = min(RESTRICTED_NODES, RESTRICTED_PER_POD[0] * pods_started)
    for r in requests:
        p, k = r.pods[0], r.need
        now, opt = node_slots(s, p), optimistic[r.name]
        domains = domains_of(s, r.level)
        picked: list[int] = []
        for d in _domains_cheapest_first(s, domains, now, opt, k)[:RESTRICTED_DOMAINS]:
            members = np.flatnonzero(domains == d)
            ranked = [n for n in _candidates(s, members, now, opt, k) if not standby_nodes[n]]
            ranked.sort(key=lambda n: (-int(now[n]), int(s.pods_per_node[n]), n))
            picked += ranked[: max(most_nodes // max(1, RESTRICTED_DOMAINS if r.level else 1), k)]
        candidates[r.name] = sorted(set(picked))
        chosen |= set(picked)
    free = s.cap_gpus - s.whole_used - s.share_devices
    others = [int(n) for n in np.lexsort((np.arange(n_nodes), -free)) if int(n) not in chosen and not standby_nodes[n] and free[n] > 0]
    nodes_set = chosen | set(others[: min(RESTRICTED_DESTINATIONS, RESTRICTED_PER_POD[1] * pods_started)])
    added = set(touched or ())
    cut = False
    for r in requests:
        extra = (set((job_nodes or {}).get(r.name, ())) | (added & set(full[r.name]))) - set(candidates[r.name])
        candidates[r.name] = sorted(set(candidates[r.name]) | extra)
        added |= extra
        cut |= len(candidates[r.name]) < len(full[r.name])
    added -= nodes_set
    nodes = sorted(nodes_set | added)
    inside = np.zeros(n_nodes, dtype=bool)
    inside[nodes] = True
    movable = movable_all[inside[s.pod_node[movable_all]]].tolist()  # a destination's pods may move too (chains)
    if len(nodes) < n_nodes or len(movable) < len(movable_all) or cut:
        why.insert(
            0,
            f"{len(chosen)} candidate nodes nearest to fitting and {len(nodes_set) - len(chosen)} other nodes with the most "
            f"free GPUs as destinations{f', {len(added)} more nodes the heuristic plan touches' if added else ''}, "
            f"the {len(movable)} movable pods on them; every other pod stays, and the jobs start only on their "
            f"candidate nodes (also those of the touched nodes that could hold them)",
        )
    return Neighbourhood(movable, nodes, candidates, bool(why), why)


class _Model:
    """The formulation of the module docstring over one neighbourhood."""

    def __init__(self, state: ClusterState, requests: list[Request], budget: MoveBudget, hood: Neighbourhood):
        s = self.s = state
        self.requests, self.hood, m = requests, hood, Milp()
        self.m = m
        node_set = set(hood.nodes)
        moving = set(hood.movable)
        job_pods = [r.pods[0] for r in requests]
        fixed = [q for q in np.flatnonzero(s.pod_node >= 0).tolist() if q not in moving]
        values = [*hood.movable, *job_pods, *fixed]
        cpu = scale_for(s.pod_cpus[values].tolist(), s.cap_cpus[hood.nodes].tolist())
        mem = scale_for(s.pod_mem[values].tolist(), s.cap_mem[hood.nodes].tolist())
        self.exact_units = cpu.exact and mem.exact
        # each distinct value scaled once (exact fractions are slow; pods share few values)
        cpu_units = {v: cpu.request(v) for v in set(s.pod_cpus[values].tolist())}
        mem_units = {v: mem.request(v) for v in set(s.pod_mem[values].tolist())}
        ask = {
            q: (
                int(s.pod_whole[q]) + (1 if s.pod_share[q] > 0 else 0),
                cpu_units[float(s.pod_cpus[q])],
                mem_units[float(s.pod_mem[q])],
                *s.pod_res[q].tolist(),
            )
            for q in values
        }
        # the fixed pods' usage (shares: the devices they fill) and their anti-affinity groups
        room = {
            n: [int(s.cap_gpus[n]) - int(s.share_devices[n]), cpu.capacity(float(s.cap_cpus[n])), mem.capacity(float(s.cap_mem[n])), *s.cap_res[n].tolist()]
            for n in hood.nodes
        }
        blocked: dict[int, set[int]] = {}
        for q in fixed:
            n = int(s.pod_node[q])
            if n in room:
                room[n][0] -= int(s.pod_whole[q])
                room[n][1] -= ask[q][1]
                room[n][2] -= ask[q][2]
                for column in range(3, len(room[n])):
                    room[n][column] -= ask[q][column]
                blocked.setdefault(n, set()).update(s.pod_groups[q])
        standby = s.standby_on > 0

        def allowed(q: int, n: int) -> bool:
            return (
                bool(s.eligible[s.pod_signature[q], n])
                and not standby[n]
                and not (blocked.get(n, set()) & set(s.pod_groups[q]))
                and all(a <= c for a, c in zip(ask[q], room[n]))
            )

        on: dict[int, list[tuple[int, int, int]]] = {n: [] for n in hood.nodes}  # node -> (var, pod, home?)
        self.x: dict[tuple[int, int], int] = {}
        self.home = {p: int(s.pod_node[p]) for p in hood.movable}
        for p in hood.movable:
            home = self.home[p]
            ok = budget.destinations(home)
            domain = s._pod_scalars[p][5]
            nodes = [n for n in hood.nodes if n == home or (ok[n] and (domain is None or domain[n] == domain[home]) and allowed(p, n))]
            for n in nodes:
                self.x[p, n] = v = m.var(f"x[{s.pod_names[p]},{s.node_names[n]}]")
                on[n].append((v, p, n == home))
            m.row([(self.x[p, n], 1) for n in nodes], 1, 1, f"(1) {s.pod_names[p]}")
        self.y: dict[tuple[str, int], int] = {}
        self.z: dict[str, int] = {}
        self.u: dict[tuple[str, int], int] = {}
        job_on: dict[int, list[tuple[int, int]]] = {n: [] for n in hood.nodes}  # node -> (var, representative pod)
        for r in requests:
            k, q = len(r.pods), r.pods[0]
            self.z[r.name] = z = m.var(f"z[{r.name}]")
            domains = domains_of(s, r.level)
            u: dict[int, int] = {}
            for n in hood.candidates[r.name]:
                if n not in node_set or not allowed(q, n):
                    continue
                self.y[r.name, n] = y = m.var(f"y[{r.name},{s.node_names[n]}]", 0, k)
                job_on[n].append((y, q))
                if r.level:
                    d = int(domains[n])
                    if d not in u:
                        u[d] = self.u[r.name, d] = m.var(f"u[{r.name},{d}]")
                    m.row([(y, 1), (u[d], -k)], None, 0, f"(3) {r.name} under {d}")
            ys = [(v, 1) for (j, _), v in self.y.items() if j == r.name]
            if r.need < k:  # min_available: at least that many start, at most all of them
                m.row([*ys, (z, -k)], None, 0, f"(2) at most {k} of {r.name}")
                m.row([*ys, (z, -r.need)], 0, None, f"(2) min_available {r.need} of {r.name}")
            else:
                m.row([*ys, (z, -k)], 0, 0, f"(2) gang {r.name}")
            if u:
                m.row([(v, 1) for v in u.values()], None, 1, f"(3) one domain {r.name}")
        for n in hood.nodes:
            for res in range(len(room[n])):
                terms = [(v, ask[p][res]) for v, p, _ in on[n]] + [(v, ask[q][res]) for v, q in job_on[n]]
                if any(c for _, c in terms) and (res < 3 or room[n][res] < UNLISTED // 2):
                    m.row(terms, None, room[n][res], f"(4) resource {res} of {s.node_names[n]}")
            groups: dict[int, list[int]] = {}
            for v, p, _ in on[n]:
                for g in s.pod_groups[p]:
                    groups.setdefault(g, []).append(v)
            for v, q in job_on[n]:
                for g in s.pod_groups[q]:
                    groups.setdefault(g, []).append(v)
            for g, vs in groups.items():
                if len(vs) > 1 or any(v in self.y.values() for v in vs):
                    m.row([(v, 1) for v in vs], None, 1, f"(5) group {g} on {s.node_names[n]}")
        stays = [(self.x[p, self.home[p]], 1) for p in hood.movable]
        if budget.bounded_moves:
            m.row(stays, len(stays) - budget.moves_left, None, "(6) migration budget")
        if budget.bounded_nodes:
            for n in hood.nodes:
                out = [(v, -1) for v, _, home in on[n] if home]
                into = [(v, 1) for v, _, home in on[n] if not home]
                m.row(out + into, None, int(budget.node_left[n]) - len(out), f"(7) moves touching {s.node_names[n]}")
        self.gpus = {p: int(s.pod_whole[p]) for p in hood.movable}
        self.w2 = sum(self.gpus.values()) + 1
        self.jobs = [(self.z[r.name], 1) for r in requests]
        # minimise W2 * moves + GPUs = W2 |M| + G - sum_p (W2 + g_p) x[p, home]: maximise the stays
        self.tail = [(self.x[p, self.home[p]], self.w2 + self.gpus[p]) for p in hood.movable]
        self.tail_offset = -(self.w2 * len(hood.movable) + sum(self.gpus.values()))
        m.maximize(self.jobs)

    def hint(self, end: np.ndarray, placements: dict[str, list[tuple[int, int]]]) -> list[int] | None:
        """The values of a known end state (``end``: each pod's node; ``placements``: the started jobs'
        pods), or None when it does not map onto this model's variables or breaks one of its rows."""
        values = [0] * self.m.num_vars
        for p in self.hood.movable:
            v = self.x.get((p, int(end[p])))
            if v is None:
                return None
            values[v] = 1
        for r in self.requests:
            pairs = placements.get(r.name)
            if not pairs:
                continue
            values[self.z[r.name]] = 1
            for _, n in pairs:
                v = self.y.get((r.name, n))
                if v is None:
                    return None
                values[v] += 1
            if r.level:
                domains = domains_of(self.s, r.level)
                for d in {int(domains[n]) for _, n in pairs}:
                    if (r.name, d) not in self.u:
                        return None
                    values[self.u[r.name, d]] = 1
        return None if self.m.violated_rows(values) else values

    def read(self, values: list[int]) -> tuple[dict[int, int], dict[str, list[tuple[int, int]]]]:
        target = {p: n for (p, n), v in self.x.items() if values[v] and n != self.home[p]}
        placements: dict[str, list[tuple[int, int]]] = {}
        for r in self.requests:
            if not values[self.z[r.name]]:
                continue
            pods = iter(r.pods)
            placements[r.name] = [(next(pods), n) for (j, n), v in sorted(self.y.items()) if j == r.name for _ in range(values[v])]
        return target, placements


def solve_make_room(
    state: ClusterState,
    requests: list[Request],
    budget: MoveBudget,
    solver: str = "cpsat",
    time_limit_s: float = 10.0,
    workers: int = 8,
    seed: int = 0,
    deterministic: bool = False,
    max_pairs: int | None = None,
    known: tuple[np.ndarray, dict[str, list[tuple[int, int]]]] | None = None,
) -> Solution:
    """Solve the make-room model (``state`` and ``budget`` unchanged): (a) most jobs, then (b, c).

    ``known``: a plan's end state (each pod's node) and its started jobs' (pod, node) pairs, from the
    heuristic: the nodes it touches join a restricted neighbourhood, and it is the solver's hint when
    it maps onto the model (``Solution.hinted``)."""
    deadline = time.perf_counter() + time_limit_s
    touched: set[int] | None = None
    job_nodes: dict[str, set[int]] | None = None
    if known is not None:
        end, started = known
        changed = np.flatnonzero(end != state.pod_node)
        touched = {int(n) for n in np.concatenate([state.pod_node[changed], end[changed]]).tolist() if n >= 0}
        job_nodes = {j: {n for _, n in pairs} for j, pairs in started.items()}
    hood = neighbourhood(state, requests, budget, MAX_PAIRS if max_pairs is None else max_pairs, touched, job_nodes)
    model = _Model(state, requests, budget, hood)
    workers = free_workers(workers, deterministic)

    def run(milp: Milp, hint: list[int] | None) -> MilpResult:
        return solve(milp, solver, max(0.2, deadline - time.perf_counter()), workers, hint, seed, deterministic)

    hint = None if known is None else model.hint(*known)
    if hint is not None and round(model.m.value_of_objective(hint)) == len(requests):  # (``hint`` breaks no row)
        # the hint starts every job: no plan starts more, so (a) is proven without a solve
        first = MilpResult(solver, "optimal", hint, float(len(requests)), float(len(requests)), 0.0, "the hint starts every named job")
    else:
        first = run(model.m, hint)
    records = [_record("jobs started", first)]
    solution = Solution({}, {}, first.status, None, 0, 0.0, None, hood, records, model.m.num_vars, model.m.num_rows)
    solution.hinted = None if known is None else hint is not None
    solution.workers = workers
    if first.status not in ("infeasible", "error") and first.bound is not None and math.isfinite(first.bound):
        solution.jobs_bound = min(len(requests), math.floor(first.bound + 1e-6))
    if first.values is None:
        return solution
    jobs = round(model.m.value_of_objective(first.values))
    held = [(model.jobs, jobs, None, "(a) held")]
    starts = [first.values]  # it starts ``jobs`` jobs, and breaks no row of the model
    if hint is not None and round(model.m.value_of_objective(hint)) == jobs:
        # no plan better than the known one makes more moves than it: a row that cuts no better plan
        stays = [(v, 1) for v, _ in model.tail]
        least = sum(hint[v] for v, _ in stays)
        held.append((stays, least, None, "(b) at most the known plan's moves"))
        starts = [v for v in (first.values, hint) if sum(v[x] for x, _ in stays) >= least]
    tail = model.m.with_objective(model.tail, model.tail_offset, held)
    start = max(starts, key=tail.value_of_objective)
    second = run(tail, start)
    records.append(_record("moves, GPUs moved", second))
    best = second if second.values is not None else first
    assert best.values is not None  # first found values (returned above otherwise)
    solution.target, solution.placements = model.read(best.values)
    solution.moves = len(solution.target)
    solution.gpus_moved = float(sum(model.gpus[p] for p in solution.target))
    both = first.status == "optimal" and second.status == "optimal"
    solution.status = "optimal" if both else ("feasible" if best.values is not None else first.status)
    if first.status == "optimal" and second.values is not None and second.bound is not None and math.isfinite(second.bound):
        # W2 * moves + GPUs >= -bound, and GPUs <= G < W2: moves >= ceil((-bound - G) / W2)
        solution.moves_bound = max(0, math.ceil((-second.bound - (model.w2 - 1) - 0.5) / model.w2))
    if not model.exact_units:
        solution.status = "feasible" if solution.status == "optimal" else solution.status
        hood.why.append("CPU or memory values have no exact integer unit: the model rounds and claims nothing")
    return solution


def _record(phase: str, result: MilpResult) -> PhaseRecord:
    return {"phase": phase, "status": result.status, "objective": result.objective, "bound": result.bound, "wall_s": round(result.wall_s, 3)}
