"""Exact objective room (issue 44): the exact defrag model with the Fig. 14 count as its objective.

The model is ``models/defrag.py``'s, built by ``build_defrag_model`` with its rows unchanged (assignment,
capacity, anti-affinity, device packing of GPU shares, eligibility from the rules, the move budgets):
only the objective changes, and per room shape R (G GPUs, c CPUs and m GiB for the whole request, at
level L: access switch or spine) these variables and rows are added, for every GPU node n and every
group g (GPU model and domain at L, ``switch_room.domain_groups``):

    s[R,n] in [0, s*(n)]     GPU slots of R on n after the moves (0 if n is unschedulable; s*(n):
                             ``switch_room.optimistic_node_slots``, implied by the rows, tighter for the LP)
    (R1)  s[R,n] + whole GPUs on n + devices used on n <= C_gpu n - locked whole GPUs   (n's GPU row's terms)
    (R2)  s[R,n] * c/G <= free CPUs of n,   (R3)  s[R,n] * m/G <= free memory of n   (model units)
    r[R,g] integer >= 0
    (R4)  G * r[R,g] <= sum over n in g of s[R,n]
    count(R) = sum over g of r[R,g]

which is ``capacity.gpu_slots`` and ``switch_room.room_count``: per node min(free devices, free CPUs
over c/G, free memory over m/G), floored per group over G, summed. Shapes with the same c/G, m/G and
level (the default 256g3072c, 128g1536c and 64g768c) have the same rows, so they share one set of slot
variables, and the joint levels of ``models/room_cuts.py`` tie their counts per group.

Why the bound holds for every plan: the end state of any plan within the limits is a solution of the
defrag model (its docstring), with the devices of the rules' share packing or fewer; its real slots
satisfy (R1)-(R3) (units round capacities up, never requests: ``models/units.py``; c/G and m/G are
read as fractions no larger than the floats), so count(R) in the model is at least the plan's count.

Leave cuts (``models/room_cuts.py``): per shape and group, rows linking r[R,g] to the number of pods
that must leave the group's nodes for it (the convex hull of a greedy lower bound), valid for every
solution. Without them the relaxation of the moves phase spreads fractional rooms over the groups' free
slots and bounds the moves by about 0; with them its bound is the moves of a cheapest room, and HiGHS
proves the moves phase on 200-node snapshots (``benchmarks/results/room_exact.md``).

Lexicographic solve, one phase per shape (largest first) then the tail: phase k maximises count(R_k) with
count(R_j) >= reached_j held for j < k; then, with every count held, the fewest moves and the fewest GPUs
moved (``models/room_tail.py``). Phase k's bound bounds count(R_k) over every plan whose earlier counts
reach the earlier phases' values: it is the maximum of the lexicographic problem only when every earlier
phase proved its optimum (``RoomProof``).

Phase k's objective also weighs the later counts, far below its own (``phase_weights``): count(R_k)
counts LEAD times more than all of them together, so its solution is a good start for the later phases
(with count(R_k) alone, the 500-node phases started from solutions with no room of the next shape and
did not find one in time), and the solver stops at an absolute gap that still proves count(R_k)
(``phase_gap``). The bound on count(R_k) is the weighted bound divided by its weight, floored; a weighted
bound also bounds each later count over the plans reaching the held counts (``implied_bound``), and a
phase whose start reaches a bound it is given (``switch_room.room_bound``) or implied is not solved.
The weights live in ``models/room_phases.py``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from planner.heuristics.room_capacity import Components, capacity_components
from planner.heuristics.room_trim import trim_room_end_state
from planner.heuristics.switch_room import RoomShape, domain_groups, optimistic_node_slots
from planner.limits import MoveBudget
from planner.models.backends import solve
from planner.models.defrag import DefragModel, build_defrag_model
from planner.models.defrag_data import ModelTimeout
from planner.models.defrag_exact import MAX_RESOLVES
from planner.models.milp import Milp, MilpResult, PhaseRecord
from planner.models.room_cuts import SlotRow, add_capacity_rows, add_leave_cuts, add_level_rows
from planner.models.room_execute import execute
from planner.models.room_levels import JointLevels, LevelGroup, level_limits
from planner.models.room_phases import implied_bound, phase_gap, phase_weights
from planner.models.room_pieces import Piece, PieceProof, combine, independent_pieces, piece_proof
from planner.models.room_tail import kept_start, solve_tail, tail_objective
from planner.state import ClusterState
from planner.waves import Step

COUNT_SHARE = 0.8
"""The share of the time limit the count phases may use (the moves phase gets the rest)."""


@dataclass(frozen=True)
class RoomSolveOptions:
    """How to solve: back-end, time (the whole lexicographic solve and its re-solves), threads, formulation, seed."""

    solver: str = "cpsat"
    time_limit_s: float = 60.0
    solver_workers: int = 8
    formulation: str = "auto"
    seed: int = 0
    deterministic: bool = False


@dataclass
class RoomModel:
    """The defrag model with the count variables of each shape."""

    base: DefragModel
    rooms: list[RoomShape]
    counts: list[list[int]] = field(default_factory=list)
    """Per shape, the r variables (their sum is the count)."""
    slots: list[tuple[int, list[SlotRow]]] = field(default_factory=list)
    """Every slot variable with its rows (for hints)."""
    groups: list[tuple[int, list[int], int]] = field(default_factory=list)
    """Every r variable with its slot variables and G (for hints)."""
    levels: list[tuple[int, list[int]]] = field(default_factory=list)
    """Per group of shapes sharing slot rows: the smallest shape's r variable and its level binaries."""
    joint: JointLevels | None = None
    """The joint levels when they tie every shape in every group (``models/room_levels.py``)."""

    def count(self, values: list[int], k: int) -> int:
        return sum(values[v] for v in self.counts[k])

    def hint(self, target: dict[int, int]) -> list[int]:
        """Values realising ``target`` (pod -> node) with the most slots and rooms its end state allows."""
        values = self.base.hint(target)
        for s, rows in self.slots:
            most = self.base.milp.upper[s]
            for terms, coef, rhs in rows:
                most = min(most, (rhs - sum(c * values[v] for v, c in terms)) // coef)
            values[s] = max(0, most)
        for r, members, size in self.groups:
            values[r] = sum(values[s] for s in members) // size
        for r, ys in self.levels:
            for j, y in enumerate(ys):
                values[y] = int(values[r] == j)
        return values

    def trimmed(self, values: list[int]) -> list[int] | None:
        """The solution ``values`` with its moved pods sent home where every room count holds
        (``heuristics/room_trim.py``): the same counts in the real state, fewer moves; None when
        no pod went home, or (a guard) the result is not a solution of the model."""
        state = self.base.state
        end = state.clone()
        target = self.base.target(values)
        for p, n in target.items():
            if n != int(state.pod_node[p]):
                end.move(p, n)
        if trim_room_end_state(state, end, self.rooms) == 0:
            return None
        trimmed = self.hint({p: int(end.pod_node[p]) for p in target})
        if self.base.milp.violated_rows(trimmed) or any(self.count(trimmed, k) < self.count(values, k) for k in range(len(self.counts))):
            return None
        return trimmed


SlotKey = tuple[int, tuple[tuple[str, Fraction], ...], bytes]
"""What makes two shapes' slot rows the same: level, CPUs and memory per GPU slot, each node's most slots."""


def _per_slot(total: float, gpus: int) -> Fraction:
    """``total / gpus`` as a fraction no larger than the float division (a relaxation of the rule)."""
    q = Fraction(total).limit_denominator(1 << 20) / gpus
    if float(q) > total / gpus:  # x * 2**20 is exact in binary floating point: its floor is below x
        q = Fraction(math.floor(total / gpus * (1 << 20)), 1 << 20)
    return max(q, Fraction(0))


def build_room_model(
    state: ClusterState,
    rooms: list[RoomShape],
    budget: MoveBudget,
    forbidden: set[tuple[int, int]] | frozenset[tuple[int, int]] = frozenset(),
    formulation: str = "auto",
    deadline: float | None = None,
    cuts: bool = True,
) -> RoomModel:
    """The room model of ``state`` within ``budget`` (see the module docstring)."""
    base = build_defrag_model(state, budget, forbidden, formulation, deadline)
    data = base.data
    assert data is not None  # build_defrag_model keeps its data
    milp = base.milp
    model = RoomModel(base, rooms)
    gpu_nodes = np.flatnonzero(state.cap_gpus > 0).tolist()
    shared: dict[SlotKey, tuple[dict[int, int], dict[int, list[SlotRow]]]] = {}  # slot variables and rows per node
    families: dict[SlotKey, list[tuple[int, dict[int, int]]]] = {}  # per key, (G, r variable per group) of each shape
    components: dict[int, Components] = {}  # per level, the capacity components of its groups

    def components_at(level: int) -> Components:
        if level not in components:
            components[level] = capacity_components(state, domain_groups(state, level))
        return components[level]

    for k, room in enumerate(rooms):
        per_slot = [
            (name, _per_slot(total, room.shape.gpus), unit)
            for name, total, unit in (("cpu", room.shape.cpus, data.cpu_scale.unit), ("mem", room.shape.memory_gib, data.mem_scale.unit))
        ]
        optimistic = optimistic_node_slots(state, room.shape)  # implied by the rows: tighter for the relaxation
        key: SlotKey = (room.level, tuple((name, q) for name, q, _ in per_slot), optimistic.tobytes())
        if key in shared:  # the same rows per node as an earlier shape's: its slot variables serve
            slot_of, rows_of = shared[key]
        else:
            slot_of, rows_of = shared.setdefault(key, ({}, {}))
            for n in gpu_nodes:
                most = min(int(state.cap_gpus[n]), int(optimistic[n])) if state.schedulable[n] else 0
                s = slot_of[n] = milp.var(f"s[{k},{state.node_names[n]}]", 0, most)
                usage = base.usage[n]
                gpu_terms, gpu_room = usage["gpu"]
                rows: list[SlotRow] = [(gpu_terms, 1, gpu_room)]  # (R1)
                for name, q, unit in per_slot:  # (R2), (R3): s * q * unit <= room - terms, times q's denominator
                    if q > 0:
                        terms, room_units = usage[name]
                        rows.append(([(v, c * q.denominator) for v, c in terms], q.numerator * unit, room_units * q.denominator))
                for terms, coef, rhs in rows:
                    milp.row([*terms, (s, coef)], None, rhs, f"slots[{k},{state.node_names[n]}]")
                model.slots.append((s, rows))
                rows_of[n] = rows
        groups = domain_groups(state, room.level)
        counts = []
        r_of: dict[int, int] = {}
        for g in range(int(groups.max(initial=-1)) + 1):
            members = [slot_of[n] for n in np.flatnonzero(groups == g).tolist()]
            most = sum(milp.upper[s] for s in members) // room.shape.gpus
            if most == 0:
                continue
            r = r_of[g] = milp.var(f"r[{k},{g}]", 0, most)
            milp.row([(r, room.shape.gpus), *((s, -1) for s in members)], None, 0, f"room[{k},{g}]")  # (R4)
            if cuts:
                nodes = [(n, slot_of[n], rows_of[n]) for n in np.flatnonzero(groups == g).tolist()]
                add_leave_cuts(milp, base, r, room.shape.gpus, nodes, f"leave[{k},{g}]")
            model.groups.append((r, members, room.shape.gpus))
            counts.append(r)
        if cuts:
            add_capacity_rows(milp, components_at(room.level), r_of, room.shape.gpus, f"capacity[{k}]")
        model.counts.append(counts)
        families.setdefault(key, []).append((room.shape.gpus, r_of))
    if cuts:
        for key, family in families.items():
            slot_of, rows_of = shared[key]
            levels = add_level_rows(milp, base, family, domain_groups(state, key[0]), slot_of, rows_of)
            model.levels.extend((r, ys) for _, r, ys, _ in levels)
            if len(families) == 1 and levels:  # one family holds every shape, in shape order
                by_group = {g: (r, points) for g, r, _, points in levels}
                groups_with_rooms = {g for _, r_of in family for g in r_of}
                if groups_with_rooms <= set(by_group):  # every group's rooms tied to its level
                    unit = min(size for size, _ in family)
                    tied = [LevelGroup(g, r, points) for g, (r, points) in sorted(by_group.items())]
                    model.joint = JointLevels(unit, [size for size, _ in family], tied, level_limits(components_at(key[0]), tied, unit))
    return model


@dataclass
class RoomProof:
    """What the first, unrestricted solve proves about every plan within the limits."""

    bounds: list[int | None]
    """Per shape, phase k's bound: the most requests of shape k of any plan whose earlier counts reach
    the values phase k held (None: not proven, or a phase did not run)."""
    reached: list[int | None]
    """Per shape, the count phase k held for the later phases."""
    tail_lower: float | None
    """The least W2 * moves + GPU units of any plan with every count at ``reached`` (None: unproven)."""
    w2: int
    gpu_max: int
    gpu_units: list[int]
    exact_gpu_units: bool

    def lexicographic_bounds(self, counts: list[int], known: list[int]) -> list[int]:
        """Per shape k, a proven bound on its count over the plans whose earlier counts are at their
        maxima, for a plan reaching ``counts`` (real, after it) with ``known`` valid bounds on each
        count (``switch_room.room_bound``). Phase k's bound joins in while every earlier count of the plan
        is at its bound (so it is that shape's maximum) and at least the value its phase held (so the
        plans with that maximum are among those phase k ranged over); from the first that is not, only
        ``known`` remains."""
        out: list[int] = []
        chained = True
        for k, (bound, reached) in enumerate(zip(self.bounds, self.reached)):
            best = known[k] if not chained or bound is None else min(known[k], bound)
            out.append(best)
            chained = chained and counts[k] == best and reached is not None and counts[k] >= reached
        return out

    def covers(self, counts: list[int], known: list[int]) -> bool:
        """Every count of the plan is its shape's proven maximum, and the moves phase ranged over the
        plans reaching them: its bound then bounds their moves."""
        bounds = self.lexicographic_bounds(counts, known)
        reached = all(r is not None and count >= r for count, r in zip(counts, self.reached))
        return counts == bounds and reached and self.tail_lower is not None

    def optimal(self, counts: list[int], known: list[int], waves: list[list[Step]]) -> bool:
        """The plan (its real counts, its waves) is proven lexicographically optimal: every count at its
        proven maximum, then moves and GPUs moved at the proven least."""
        if not self.covers(counts, known) or self.tail_lower is None or not self.exact_gpu_units:
            return False
        moves = sum(len(w) for w in waves)
        units = sum(self.gpu_units[p] for w in waves for p, _, _ in w)
        return self.w2 * moves + units <= self.tail_lower + 0.5

    def moves_bound(self, counts: list[int], known: list[int]) -> int | None:
        """Fewest moves of any plan reaching ``counts`` when they are the proven maxima (W2 * moves + GPU
        units >= the tail bound, with at most ``gpu_max`` GPU units moved)."""
        if not self.covers(counts, known) or self.tail_lower is None:
            return None
        return max(0, math.ceil((self.tail_lower - self.gpu_max - 0.5) / self.w2))


class RoomPhaseRecord(PhaseRecord, total=False):
    """A phase of the room model: with the count of its shape in its solution (None for the moves phase);
    a count phase's ``objective`` and ``bound`` are its count and the count's proven bound, and the
    solver's own values of the weighted objective (``phase_weights``) are ``weighted_*``."""

    count: int | None
    weighted_objective: float | None
    weighted_bound: float | None
    level_vectors: int
    """A tail phase solved over level vectors (``models/room_levels.py``) after the whole model: how many."""


@dataclass
class RoomOutcome:
    """The best executed plan of the attempts (None: no solve found a solution), and the proof."""

    waves: list[list[Step]] | None
    proof: RoomProof
    solver_status: str
    message: str
    formulation: str = ""
    variables: int = 0
    constraints: int = 0
    exact_units: bool = True
    routed_moves: int = 0
    dropped_moves: int = 0
    history: list[dict[str, object]] = field(default_factory=list)


def _ceil_bound(bound: float | None, most: int) -> int | None:
    if bound is None or not math.isfinite(bound):
        return None
    return max(0, min(most, math.ceil(bound - 1e-6)))


def solve_phases(
    model: RoomModel,
    options: RoomSolveOptions,
    deadline: float,
    hint: list[int] | None,
    upper: list[int] | None = None,
    piece: Piece | None = None,
) -> tuple[MilpResult | None, RoomProof, list[RoomPhaseRecord]]:
    """The lexicographic solve: the last result with values, the proof, one record per phase. ``upper``:
    a known bound on each count (``switch_room.room_bound``); a phase whose start reaches it is not solved.
    A model that falls apart into pieces is solved piece by piece (``models/room_pieces.py``), each by
    this function with its ``piece`` (the others fixed at the hint, then at the pieces solved)."""
    base = model.base
    if piece is None and hint is not None and not base.milp.violated_rows(hint):
        pieces = independent_pieces(base.milp, model.counts)
        if pieces:
            return _solve_by_pieces(model, options, deadline, hint, pieces)
    proof = RoomProof([None] * len(model.rooms), [None] * len(model.rooms), None, base.w2, base.gpu_max, base.gpu_units, base.exact_gpu_units)
    held: list[tuple[list[tuple[int, int]], int | None, int | None, str]] = []
    records: list[RoomPhaseRecord] = []
    best: MilpResult | None = None
    count_deadline = time.perf_counter() + COUNT_SHARE * (deadline - time.perf_counter())

    def plain(milp: Milp, seconds: float, start: list[int] | None, abs_gap: float = 0.0) -> MilpResult:
        return solve(milp, options.solver, max(seconds, 0.5), options.solver_workers, start, options.seed, options.deterministic, abs_gap=abs_gap)

    run = plain if piece is None else piece.solving(plain)

    known = [] if hint is None else [hint]  # solutions so far (the warm start first): each phase starts from the best that holds

    def start_of(k: int) -> list[int] | None:
        """The known solution that keeps the counts held and has the most of shape k (then of the later ones)."""
        holding = [v for v in known if all(model.count(v, j) >= (proof.reached[j] or 0) for j in range(k))]
        if not holding:
            return None
        return max(holding, key=lambda v: [model.count(v, j) for j in range(k, len(model.counts))])

    most = [sum(base.milp.upper[r] for r in counts) for counts in model.counts]
    weighted: list[tuple[int, list[int]]] = []  # per solved phase: its integer bound and its weight per shape
    for k, counts in enumerate(model.counts):
        weights = phase_weights(most, k)
        terms = [(r, weights[j]) for j in range(k, len(model.counts)) for r in model.counts[j]]
        phases_left = len(model.counts) - k
        milp, start = base.milp.with_objective(terms, 0, held), start_of(k)
        known_bound = min([most[k], *([upper[k]] if upper is not None else []), *(implied_bound(b, w, proof.reached, k) for b, w in weighted)])
        if start is not None and model.count(start, k) >= known_bound and not milp.violated_rows(start):
            value = float(milp.value_of_objective(start))
            result = MilpResult(options.solver, "optimal", start, value, None, 0.0, "the start reaches a proven bound on the count: not solved")
        else:
            result = run(milp, (count_deadline - time.perf_counter()) / phases_left, start, phase_gap(weights, k))
            result = kept_start(milp, start, result)
        count = None if result.values is None else model.count(result.values, k)
        if result.status not in ("infeasible", "error"):
            integral = _ceil_bound(result.bound, sum(weights[j] * most[j] for j in range(k, len(most))))
            if integral is not None:
                weighted.append((integral, weights))
            proof.bounds[k] = min([known_bound, *([] if integral is None else [integral // weights[k]])])
        records.append(
            {
                "phase": f"count {model.rooms[k]}",
                "status": "optimal" if count is not None and count == proof.bounds[k] else result.status,
                "objective": count,
                "bound": proof.bounds[k],
                "wall_s": round(result.wall_s, 3),
                "count": count,
                "weighted_objective": result.objective,
                "weighted_bound": result.bound,
            }
        )
        if result.values is None or count is None:
            return best, proof, records
        best = result
        known.append(result.values)
        trimmed = model.trimmed(result.values)
        if trimmed is not None:
            known.append(trimmed if piece is None else piece.project(trimmed))
        proof.reached[k] = count
        held.append(([(r, 1) for r in counts], count, None, f"hold[{k}]"))
    holding = [v for v in known if all(model.count(v, j) >= (proof.reached[j] or 0) for j in range(len(model.counts)))]
    return solve_tail(model, run, deadline, held, records, proof, holding, best, piece)


def _solve_by_pieces(
    model: RoomModel, options: RoomSolveOptions, deadline: float, hint: list[int], pieces: list[list[int]]
) -> tuple[MilpResult | None, RoomProof, list[RoomPhaseRecord]]:
    """``solve_phases`` piece by piece, smallest first, each given the time left in proportion to its
    columns (a piece proven early leaves its time to the next); the pieces' proofs combined."""
    base = model.base
    tail = tail_objective(base)
    current, best = hint, None
    parts: list[PieceProof] = []
    records: list[RoomPhaseRecord] = []
    for i, columns in enumerate(pieces):
        now = time.perf_counter()
        share = len(columns) / sum(len(c) for c in pieces[i:])
        piece = Piece(model, columns, current)
        result, proof, piece_records = solve_phases(model, options, now + share * (deadline - now), current, None, piece)
        parts.append(piece_proof(piece, proof, tail))
        records += [{**record, "phase": f"piece {i + 1} of {len(pieces)} ({len(columns)} columns): {record['phase']}"} for record in piece_records]
        if result is not None and result.values is not None:
            current, best = result.values, result
    empty = RoomProof([None] * len(model.rooms), [None] * len(model.rooms), None, base.w2, base.gpu_max, base.gpu_units, base.exact_gpu_units)
    proof = combine(empty, parts, tail)
    if best is None:
        return None, proof, records
    return replace(best, values=current, objective=None, bound=None, message=f"solved in {len(pieces)} independent pieces"), proof, records


def solve_room(
    state: ClusterState,
    rooms: list[RoomShape],
    options: RoomSolveOptions,
    budget: MoveBudget,
    hint_target: dict[int, int] | None,
    score: Callable[[list[list[Step]]], tuple[float, ...]],
    upper: list[int] | None = None,
) -> RoomOutcome:
    """Solve the room model of ``state`` (not changed) and execute its end state as make-before-break
    waves; a move the router cannot make within the limits is forbidden and the model solved again
    (pod level, a restriction: its bounds are not reported), up to ``MAX_RESOLVES`` times. ``score``
    (waves -> comparable key, larger better) picks the best executed plan."""
    deadline = time.perf_counter() + options.time_limit_s
    forbidden: set[tuple[int, int]] = set()
    outcome: RoomOutcome | None = None
    best_key: tuple[float, ...] | None = None
    for attempt in range(MAX_RESOLVES + 1):
        if attempt > 0 and deadline - time.perf_counter() <= 0.5:
            break
        try:
            model = build_room_model(state, rooms, budget, forbidden, "pod" if forbidden else options.formulation, deadline)
        except ModelTimeout as err:
            if outcome is None:
                empty = RoomProof([None] * len(rooms), [None] * len(rooms), None, 1, 0, [0] * len(state.pod_names), False)
                outcome = RoomOutcome(None, empty, "timeout", str(err))
            outcome.history.append({"attempt": attempt, "status": "timeout", "message": str(err)})
            break
        hint = model.hint(hint_target) if hint_target is not None else None
        result, proof, phases = solve_phases(model, options, deadline, hint, upper)
        record: dict[str, object] = {"attempt": attempt, "formulation": model.base.formulation, "forbidden_pairs": len(forbidden), "phases": phases}
        if outcome is None:  # the unrestricted model: its proof is the one reported
            outcome = RoomOutcome(
                None,
                proof,
                phases[0]["status"],
                "" if result is None else result.message,
                model.base.formulation,
                model.base.milp.num_vars,
                model.base.milp.num_rows,
                model.base.exact_units,
            )
            record["bounds"] = list(proof.bounds)
        outcome.history.append(record)
        if result is None or result.values is None:
            break
        executed = execute(state, model.base.target(result.values), rooms, budget)
        key = score(executed.waves)
        record["moves"], record["routed"], record["dropped"] = sum(len(w) for w in executed.waves), executed.routed, len(executed.dropped)
        if best_key is None or key > best_key:
            best_key = key
            outcome.waves, outcome.routed_moves, outcome.dropped_moves = executed.waves, executed.routed, len(executed.dropped)
        if not executed.dropped:
            break
        forbidden |= {(p, n) for p, _, n in executed.dropped}
    assert outcome is not None
    return outcome
