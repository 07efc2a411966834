"""The entropy phase's counts: the pod counts per (job, switch) it needs indicators for
(``_count_ranges``), the count multisets of a job (``_partitions``, ``_partition_rows``), the switch
slack, the twins' order and the entropy terms in integer units."""

from __future__ import annotations

import math

from planner.heuristics.topology import entropy, largest_first
from planner.models.milp import Milp
from planner.models.topology.formulation import _Model

ENTROPY_SCALE = 1_000_000
PARTITION_LIMIT = 10_000
PARTITION_TOTAL = 40_000
"""Count multisets per job, and over all jobs, above which a job falls back on count pairing."""


def _partition_rows(
    model: _Model,
    m: Milp,
    spanning: list[str],
    counts: dict[tuple[str, int], tuple[int, int]],
    linked: dict[tuple[str, int], int],
    slack: int | None,
    indicator: dict[tuple[str, int, int], int],
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
        found = _partitions(n_j, min(lo for lo, _ in ranges), max(hi for _, hi in ranges), fewest, most, min(PARTITION_LIMIT, PARTITION_TOTAL - total))
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
            return [model.z[j], *(model.x[j, d] for d in model.switches_of[j]), *model.switch_vars(j), *(v for (jj, _), v in model.v.items() if jj == j)]

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
