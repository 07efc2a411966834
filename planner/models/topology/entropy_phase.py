"""Level (c) of the joint topology model: least summed entropy with GPUs and switches held
(``_entropy_phase``; the formulation of its rows is in the package docstring)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from planner.models.highs import lp_relaxation
from planner.models.milp import Milp, Row
from planner.models.reduced_cost import lagrangian_bound
from planner.models.topology.counts import (
    ENTROPY_SCALE,
    _count_ranges,
    _counts_tied,
    _entropy_units,
    _least_entropy_alone,
    _most_terms,
    _partition_rows,
    _switch_slack,
    _twins_sorted,
)
from planner.models.topology.formulation import _Model
from planner.models.topology.neighbourhood import _multiset_neighbourhood, _solve_fixed
from planner.models.topology.search import LP_SHARE, _search, _solve

ENTROPY_INDICATOR_LIMIT = 40_000
SLACK_SHARE = 0.15
"""Share of the entropy phase's time spent bounding the switch slack (at most 2 s)."""


def _entropy_phase(
    model: _Model,
    values: list[int],
    held: Sequence[Row],
    solver: str,
    deadline: float,
    workers: int,
    fields: dict[str, Any],
) -> tuple[list[int], bool]:
    """(c): least summed entropy with GPUs and switches held. Returns the values and whether proven."""
    spanning = [j for j in model.names if model.levels[j] != ("asw", True)]  # a required spine job may span access switches
    if any(model.minimum[j] != len(model.jobs[j]) for j in spanning):
        fields["entropy"] = (
            "not optimised: a job may start with fewer than all its pods (min_available), so its entropy is not "
            "linear; without the entropy level (--no-entropy) GPUs and switches can be proven"
        )
        return values, False
    if not spanning:
        return values, True
    src = model.m  # a full copy: this phase adds variables
    m = Milp(list(src.names), list(src.lower), list(src.upper), {}, 0, list(src.row_terms), list(src.row_lower), list(src.row_upper), list(src.row_names))
    for row_terms, lower, upper, name in held:
        m.row(row_terms, lower, upper, name)
    m.row([(v, 1) for v in model.u.values()], None, model.switches_used(values), "(b) switches held")
    slack = _switch_slack(model, model.gpus_of(values), model.switches_used(values))
    if slack:  # the capacity may leave less: the least summed fewest switches, solved on the phase's rows
        least = [(model.z[j], -fewest) for j in model.names if (fewest := model.fewest.get(j))]
        probe = Milp(list(m.names), list(m.lower), list(m.upper), {}, 0, list(m.row_terms), list(m.row_lower), list(m.row_upper), list(m.row_names))
        probe.maximize(least)
        found = _solve(probe, solver, min(SLACK_SHARE * (deadline - time.perf_counter()), 2.0), workers, list(values), fields, "entropy_switch_slack_proof")
        if found.bound is not None:  # maximising -sum: the bound caps it, so sum >= -bound
            slack = min(slack, model.switches_used(values) - math.ceil(-found.bound - 1e-6))
        fields["entropy_switch_slack_s"] = round(found.wall_s, 3)
    fields["entropy_switch_slack"] = slack
    confined = []
    if slack is not None:  # no job can use more than its fewest switches plus the slack
        for j in model.names:
            own_u = [(v, 1) for v in model.switch_vars(j)]
            fewest = model.fewest.get(j)
            if fewest and own_u:
                m.row(own_u, None, fewest + slack, f"(c) switches within the slack [{j}]")
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
        assert slack is not None  # only jobs with a slack are paired (above)
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
    for first, second in ordered:
        m.row([(v, c) for v, c in entropy_of[first]] + [(v, -c) for v, c in entropy_of[second]], 0, None, f"(c) twins in order [{first},{second}]")
    fields["entropy_twins_ordered"] = len(ordered)
    m.maximize(terms)
    hint = list(values) + [0] * (m.num_vars - base)
    for j in spanning:
        for d in model.switches_of[j]:
            flag = indicator.get((j, d, values[model.x[j, d]]))
            if flag is not None:
                hint[flag] = 1
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
