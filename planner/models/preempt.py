"""Exact model of one preemption decision: place the job, evict the cheapest victim gangs.

Variables (binary):
  x[p, n]       pod p of the job starts on node n (candidate nodes: those where p fits once every
                allowed victim there is gone);
  y[p, n, S]    ... on device set S of n (NUMA-guaranteed jobs on nodes with NUMA domains: S within
                one socket);
  e[u]          victim gang u is evicted (all its pods, on every node);
  z[d]          the job's switch domain is d (required topology).
Constraints:
  (1) sum_n x[p, n] = 1 for the pods that must start; at least ``min_available`` start otherwise;
  (2) GPUs of n:  sum_p G_p x[p, n] <= free_n + sum_u e_u G_un   (whole devices);
  (3) CPUs, memory of n likewise (integer units that accept exactly what rules/ accepts);
  (4) a device holds one pod: sum_{p, S containing g} y[p, n, S] <= e_u for the gang u holding g
      (<= 1 when g is free); NUMA domain CPUs: sum y * (CPUs p draws from d) <= free_d + sum_u e_u C_ud;
  (5) anti-affinity: x[p, n] <= e_u for each gang u with a pod on n sharing a group with p; pods of
      the job sharing a group: sum_p x[p, n] <= 1;
  (6) required topology: x[p, n] <= z[dom(n)], sum_d z[d] <= 1.
Objective: least lost work sum_u C_u e_u, then fewest victim gangs (weighted so the first dominates).

The model is exact when no candidate node has a share of a GPU among its possible victims and the
job's pods take whole GPUs (freeing part of a shared device is not linear: then the model may be
stricter than the rules, and no bound is claimed). The decision is decoded with the rules' fast form
(``PreemptState.fit``) and validated by the caller like any other plan.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from typing import Any

import numpy as np

from planner import rules
from planner.heuristics.gang import Choice, binding_constraint, place_job, placement_fits
from planner.heuristics.spotgpu import SpotGpu
from planner.models.backends import solve
from planner.models.milp import Milp
from planner.models.units import scale_for
from planner.preempt_state import Ask, PreemptState
from planner.state import PENDING
from planner.state_build import UNLISTED


def solve_preempt(
    ps: PreemptState, ask: Ask, solver: str, time_limit_s: float, workers: int, starts: dict[str, Choice] | None = None
) -> tuple[Choice, dict[str, Any]]:
    """The exact decision and the solver fields of its report (status, bound, solver, ...).
    ``starts``: heuristic decisions by name (default: SpotGPU's); the cheapest starts the solver, and
    the result is never worse than it."""
    starts = starts or {"spotgpu": place_job(ps, ask, SpotGpu())}
    found = {name: c for name, c in starts.items() if c.reason is None}
    start_name = min(found, key=lambda name: found[name].key) if found else next(iter(starts))
    warm = starts[start_name]
    built = _Model(ps, ask)
    fields: dict[str, Any] = {
        "solver": solver,
        "model_exact": built.exact,
        "variables": built.milp.num_vars,
        "rows": built.milp.num_rows,
        "start": start_name if warm.reason is None else None,
    }
    if not built.candidates_exist:  # by the rules themselves: a proof whatever the model's units
        return Choice(reason=built.no_candidate_reason, proven_infeasible=True), {**fields, "status": "infeasible"}
    result = solve(built.milp, solver, time_limit_s, workers, built.hint(warm), deterministic=solver == "cpsat")
    fields["solver_status"] = result.status
    fields["solve_s"] = round(result.wall_s, 6)
    if result.status == "infeasible":
        if built.exact:
            reason = "no placement of the job exists even with every allowed victim evicted (proven by the solver)"
            return Choice(reason=reason, proven_infeasible=True), {**fields, "status": "infeasible"}
        return warm, {**fields, "status": "feasible" if warm.reason is None else "timeout"}
    bound = built.cost_bound(result.bound) if built.exact and result.bound is not None else None
    choice = built.decode(result.values) if result.values is not None else None
    if choice is None or (warm.reason is None and warm.key < choice.key):
        choice = warm  # the heuristic's plan is at least as good (or the model's could not be decoded)
    if choice.reason is not None:
        return choice, {**fields, "status": "timeout"}
    cost = float(sum(ask.unit_cost[u] for u in choice.units))
    proven = bound is not None and cost <= bound + len(choice.units) * built.cost_resolution
    status = "optimal" if proven and result.status == "optimal" else "feasible"
    if bound is not None:
        bound = min(bound, cost)
    fields["cost_resolution_gpu_s"] = built.cost_resolution
    return choice, {**fields, "status": status, "bound": None if bound is None else round(bound, 6)}


class _Model:
    def __init__(self, ps: PreemptState, ask: Ask):
        self.ps, self.ask = ps, ask
        cs = ps.cs
        self.milp = Milp()
        self.exact = True
        nodes_all = len(cs.node_names)
        # candidate nodes of each pod: it fits once every allowed victim there is gone
        self.x: dict[tuple[int, int], int] = {}
        self.y: dict[tuple[int, int, tuple[int, ...]], int] = {}
        victims_on: dict[int, list[int]] = defaultdict(list)
        for q in np.flatnonzero(ask.victims & (cs.pod_node != PENDING)).tolist():
            victims_on[int(cs.pod_node[q])].append(q)
        self.victims_on = victims_on
        guaranteed = ask.numa_mode == "guaranteed"
        if any(cs.pod_share[p] > 0 for p in ask.pods):
            self.exact = False
        cand: dict[int, list[int]] = {}
        allowed = range(nodes_all) if ask.nodes is None else np.flatnonzero(ask.nodes).tolist()
        for p in ask.pods:
            cand[p] = [n for n in allowed if ps.fit(p, n, tuple(victims_on.get(n, ())), ask.numa_mode) is not None]
        missing = [p for p in ask.pods if not cand[p]]
        self.candidates_exist = len(ask.pods) - len(missing) >= ask.min_placed
        if not self.candidates_exist:
            everywhere = np.ones(nodes_all, dtype=bool) if ask.nodes is None else ask.nodes
            self.no_candidate_reason = binding_constraint(ps, ask, everywhere)
            return
        nodes = sorted({n for ns in cand.values() for n in ns})
        for n in nodes:
            if any(cs.pod_share[q] > 0 for q in victims_on.get(n, ())):
                self.exact = False
        m = self.milp
        # e[u]
        self.e: dict[int, int] = {}
        for n in nodes:
            for q in victims_on.get(n, ()):
                u = int(ps.unit[q])
                if u not in self.e:
                    self.e[u] = m.var(f"e[{u}]")
        for p in ask.pods:
            for n in cand[p]:
                self.x[p, n] = m.var(f"x[{p},{n}]")
                if guaranteed and ps.numa[n] is not None and cs.pod_whole[p] > 0:
                    options = []
                    for S in self._device_sets(p, n):
                        self.y[p, n, S] = m.var(f"y[{p},{n},{S}]")
                        options.append((self.y[p, n, S], -1))
                    m.row([(self.x[p, n], 1), *options], 0, 0, f"(4) x = sum of y [{p},{n}]")
        # (1) placement
        every = ask.min_placed >= len(ask.pods)
        for p in ask.pods:
            terms = [(self.x[p, n], 1) for n in cand[p]]
            m.row(terms, 1 if every else 0, 1, f"(1) place {p}")
        if not every:  # any min_available of the pods; more may start (they cost nothing by themselves)
            m.row([(v, 1) for v in self.x.values()], ask.min_placed, None, "(1) min_available")
        self._capacity_rows(nodes)
        self._reservation_rows(nodes)
        self._device_rows(nodes)
        self._anti_affinity_rows(nodes, cand)
        self._topology_rows()
        self._objective()

    # -------------------------------------------------------------------------------------------

    def _units_here(self, n: int) -> dict[int, list[int]]:
        here: dict[int, list[int]] = defaultdict(list)
        for q in self.victims_on.get(n, ()):
            here[int(self.ps.unit[q])].append(q)
        return here

    def _capacity_rows(self, nodes: list[int]) -> None:
        cs, ask, m = self.ps.cs, self.ask, self.milp
        cpu_scale = scale_for([*cs.pod_cpus.tolist()], cs.cap_cpus.tolist())
        mem_scale = scale_for([*cs.pod_mem.tolist()], cs.cap_mem.tolist())
        self.exact &= cpu_scale.exact and mem_scale.exact
        for n in nodes:
            here = self._units_here(n)
            pods_x = [(p, self.x[p, n]) for p in ask.pods if (p, n) in self.x]
            free_gpus = int(cs.cap_gpus[n] - cs.whole_used[n] - cs.share_devices[n])
            m.row(
                [(v, int(cs.pod_whole[p]) + (1 if cs.pod_share[p] > 0 else 0)) for p, v in pods_x]
                + [(self.e[u], -int(sum(cs.pod_whole[q] for q in qs))) for u, qs in here.items()],
                None,
                free_gpus,
                f"(2) GPUs of {n}",
            )
            for name, scale, cap, req in (("CPUs", cpu_scale, cs.cap_cpus, cs.pod_cpus), ("memory", mem_scale, cs.cap_mem, cs.pod_mem)):
                used = sum(scale.request(float(req[q])) for q in cs.node_pods[n])
                m.row(
                    [(v, scale.request(float(req[p]))) for p, v in pods_x]
                    + [(self.e[u], -sum(scale.request(float(req[q])) for q in qs)) for u, qs in here.items()],
                    None,
                    scale.capacity(float(cap[n])) - used,
                    f"(3) {name} of {n}",
                )
            for r, name in enumerate(cs.res_names):  # (3') every named resource (NodeResourcesFit)
                if cs.cap_res[n, r] >= UNLISTED // 2 or not any(cs.pod_res[p, r] for p, _ in pods_x):
                    continue
                m.row(
                    [(v, int(cs.pod_res[p, r])) for p, v in pods_x] + [(self.e[u], -int(sum(cs.pod_res[q, r] for q in qs))) for u, qs in here.items()],
                    None,
                    int(cs.cap_res[n, r] - cs.used_res[n, r]),
                    f"(3) {name} of {n}",
                )

    def _reservation_rows(self, nodes: list[int]) -> None:
        """(7) on a node holding standby reservations, the HP pods (standby included) must fit:
        the job's HP pods with the reservations already there (evicting spot pods changes nothing)."""
        cs, ask, m = self.ps.cs, self.ask, self.milp
        if not cs.has_standby:
            return
        for n in nodes:
            if cs.standby_on[n] == 0:
                continue
            pods_x = [(p, self.x[p, n], reserve) for p in ask.pods if (p, n) in self.x and (reserve := cs._reserve[p]) is not None]
            if not pods_x:
                continue
            if any(reserve[3] for _, _, reserve in pods_x) or cs.hp_shares.get(n):
                self.exact = False  # shares in a reservation: packing is not linear
            room = int(cs.cap_gpus[n] - cs.hp_whole[n] - len(rules.pack_shares(cs.hp_shares.get(n, ()))))
            m.row([(v, reserve[0] + (1 if reserve[3] else 0)) for _, v, reserve in pods_x], None, room, f"(7) HP GPUs of {n}")
            for k, name, cap, used in ((1, "CPUs", cs.cap_cpus, cs.hp_cpus), (2, "memory", cs.cap_mem, cs.hp_mem)):
                values = [reserve[k] for _, _, reserve in pods_x]
                scale = scale_for(values, [float(cap[n]), float(used[n])])
                self.exact &= scale.exact
                m.row(
                    [(v, scale.request(reserve[k])) for _, v, reserve in pods_x],
                    None,
                    scale.capacity(float(cap[n])) - scale.request(float(used[n])),
                    f"(7) HP {name} of {n}",
                )

    def _device_sets(self, p: int, n: int) -> list[tuple[int, ...]]:
        """Device sets within one socket, over devices free or held by allowed victims, whose
        domains have the CPUs the pod draws (counting every allowed victim gone)."""
        ps = self.ps
        numa = ps.numa[n]
        assert numa is not None
        k = int(ps.cs.pod_whole[p])
        usable = ps.free_devices(n, tuple(self.victims_on.get(n, ())))
        room = ps.domain_free_cpus(n, tuple(self.victims_on.get(n, ())))
        each = float(ps.cs.pod_cpus[p]) / k
        sets = []
        by_socket: dict[int, list[int]] = defaultdict(list)
        for g in usable:
            if numa.device_domain[g] >= 0:
                by_socket[numa.domain_socket[numa.device_domain[g]]].append(g)
        for devices in by_socket.values():
            for S in itertools.combinations(devices, k):
                need: dict[int, float] = defaultdict(float)
                for g in S:
                    need[numa.device_domain[g]] += each
                if all(cpus <= room[d] + 1e-9 for d, cpus in need.items()):
                    sets.append(S)
        return sets

    def _device_rows(self, nodes: list[int]) -> None:
        if not self.y:
            return
        ps, m = self.ps, self.milp
        for n in nodes:
            numa = ps.numa[n]
            on_n = [(p, S, v) for (p, nn, S), v in self.y.items() if nn == n]
            if not on_n or numa is None:
                continue
            holder: dict[int, int] = {}
            for q in ps.cs.node_pods[n]:
                if ps.cs.pod_standby[q]:
                    continue  # it lent its devices
                for g in ps.devices[q] or ():
                    holder[g] = q
            for g in range(int(ps.cs.cap_gpus[n])):
                terms = [(v, 1) for p, S, v in on_n if g in S]
                if not terms:
                    continue
                held_by = holder.get(g)
                if held_by is None:
                    m.row(terms, None, 1, f"(4) device {g} of {n}")
                else:
                    m.row(terms + [(self.e[int(ps.unit[held_by])], -1)], None, 0, f"(4) device {g} of {n} held by {held_by}")
            # domain CPUs, in units exact for the fractions CPUs/devices
            values = []
            for p, S, _ in on_n:
                values.append(float(ps.cs.pod_cpus[p]) / len(S))
            for q in ps.cs.node_pods[n]:
                q_devices = ps.devices[q]
                if q_devices and not ps.cs.pod_standby[q]:
                    values.append(float(ps.cs.pod_cpus[q]) / len(q_devices))
            scale = scale_for(values, list(numa.domain_cpus))
            self.exact &= scale.exact
            used = [0] * len(numa.domain_cpus)
            freed: dict[tuple[int, int], int] = defaultdict(int)
            victims = set(self.victims_on.get(n, ()))
            for q in ps.cs.node_pods[n]:
                if ps.cs.pod_standby[q]:
                    continue
                q_devices = ps.devices[q] or ()
                for g in q_devices:
                    d = numa.device_domain[g]
                    if d >= 0:
                        amount = scale.request(float(ps.cs.pod_cpus[q]) / len(q_devices))
                        used[d] += amount
                        if q in victims:
                            freed[int(ps.unit[q]), d] += amount
            for d, cap in enumerate(numa.domain_cpus):
                terms = []
                for p, S, v in on_n:
                    share = sum(1 for g in S if numa.device_domain[g] == d)
                    if share:
                        terms.append((v, share * scale.request(float(ps.cs.pod_cpus[p]) / len(S))))
                if terms:
                    terms += [(self.e[u], -amount) for (u, dd), amount in freed.items() if dd == d]
                    m.row(terms, None, scale.capacity(cap) - used[d], f"(4) CPUs of domain {d} of {n}")

    def _anti_affinity_rows(self, nodes: list[int], cand: dict[int, list[int]]) -> None:
        cs, m, ask = self.ps.cs, self.milp, self.ask
        victims = {q for n in nodes for q in self.victims_on.get(n, ())}
        for p in ask.pods:
            groups = set(cs.pod_groups[p])
            if not groups:
                continue
            for n in cand[p]:
                for q in cs.node_pods[n]:
                    if groups & set(cs.pod_groups[q]) and q in victims:
                        m.row([(self.x[p, n], 1), (self.e[int(self.ps.unit[q])], -1)], None, 0, f"(5) {p} next to {q}")
        by_group: dict[tuple[int, int], list[int]] = defaultdict(list)
        for (p, n), v in self.x.items():
            for g in cs.pod_groups[p]:
                by_group[g, n].append(v)
        for (g, n), vs in by_group.items():
            if len(vs) > 1:
                m.row([(v, 1) for v in vs], None, 1, f"(5) group {g} on {n}")

    def _topology_rows(self) -> None:
        if not self.ask.level:
            return
        cs, m = self.ps.cs, self.milp
        domains = cs.asw_domain if self.ask.level == 1 else cs.spine_domain
        z: dict[int, int] = {}
        for (p, n), v in self.x.items():
            d = int(domains[n])
            if d not in z:
                z[d] = m.var(f"z[{d}]")
            m.row([(v, 1), (z[d], -1)], None, 0, f"(6) {p} on {n} under {d}")
        m.row([(v, 1) for v in z.values()], None, 1, "(6) one domain")

    def _objective(self) -> None:
        """Least lost work, then fewest victim gangs: maximise -(floor(C_u U) W + 1) e_u with W above
        the number of gangs. U (units per GPU-second) is the exact scale of the costs when one is
        small enough, else a power of two with every sum below 2**50; costs are rounded down, so the
        bound stays a bound, and a plan is called optimal when its true cost is within one unit per
        victim of it (``cost_resolution``)."""
        costs = [float(self.ask.unit_cost[u]) for u in self.e]
        self.weight = len(self.e) + 1
        total = max(1.0, math.fsum(costs)) * self.weight
        scale = scale_for(costs, [])
        if scale.exact and scale.unit * total <= 2**50:
            unit, self.cost_resolution = float(scale.unit), 0.0
        else:
            unit = float(2 ** min(20, math.floor(math.log2(2**50 / total))))
            self.cost_resolution = 1.0 / unit
        self.cost_unit = unit
        self.milp.maximize([(v, -(math.floor(float(self.ask.unit_cost[u]) * unit) * self.weight + 1)) for u, v in self.e.items()])

    def cost_bound(self, solver_bound: float) -> float:
        """A lower bound on lost work from the solver's bound on the weighted objective."""
        weighted = -solver_bound  # the model maximises the negated cost
        return max(0.0, math.floor((weighted + 1e-6) / self.weight) / self.cost_unit)

    # -------------------------------------------------------------------------------------------

    def hint(self, warm: Choice) -> list[int] | None:
        if warm.reason is not None:
            return None
        values = [0] * self.milp.num_vars
        for u in warm.units:
            if u not in self.e:
                return None
            values[self.e[u]] = 1
        for p, n, devices in warm.placements:
            if (p, n) not in self.x:
                return None
            values[self.x[p, n]] = 1
            if self.y and (p, n, tuple(devices or ())) in self.y:
                values[self.y[p, n, tuple(devices or ())]] = 1
        for name, j in ((n, j) for j, n in enumerate(self.milp.names) if n.startswith("z[")):
            d = int(name[2:-1])
            domains = self.ps.cs.asw_domain if self.ask.level == 1 else self.ps.cs.spine_domain
            values[j] = int(any(int(domains[n]) == d for _, n, _ in warm.placements))
        return values

    def decode(self, values: list[int]) -> Choice | None:
        """The decision of a solution, its devices re-derived with the rules' fast form."""
        units = sorted(u for u, v in self.e.items() if values[v])
        placements: list[tuple[int, int, tuple[int, ...] | None]] = []
        for p in self.ask.pods:
            for (pp, n), v in self.x.items():
                if pp == p and values[v]:
                    devices = next((S for (p3, n3, S), w in self.y.items() if p3 == p and n3 == n and values[w]), None)
                    placements.append((p, n, devices))
        placed = placement_fits(self.ps, self.ask, placements, units)
        if placed is None:
            return None
        return Choice(placements=placed, units=units, cost=float(sum(self.ask.unit_cost[u] for u in units)))
