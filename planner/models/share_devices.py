"""How many GPU devices a set of GPU shares needs, at least (issue 45): the bin-packing lower bounds
the at-scale bounds on empty nodes count shares with.

The rules put GPU shares (requests below one GPU) on devices that no whole-GPU pod holds, the
shares of one device summing to at most 1 + ``rules.EPS`` (``rules.pack_shares``). Counted as
fractions of a GPU, a set of shares can look smaller than the devices it takes: four 0.81 shares
sum to 3.24 GPUs and take four devices. ``devices_at_least`` is the largest of

* the volume bound, the sum rounded up;
* Martello and Toth's L2: for a threshold a up to half a device, the shares above C - a take a
  device each, those in (C/2, C - a] too (no two of them pair), and the shares in [a, C/2] fill the
  room the latter leave before they need devices of their own;
* the configuration LP (Gilmore and Gomory): any weights y >= 0 with ``sum_i a_i y_i <= 1`` for every
  way a of filling one device give ``sum_i y_i`` over the shares as a lower bound (weak duality).
  The weights come from column generation with HiGHS; the bound is then recomputed in integers:
  weights rounded to multiples of 2**-30, the largest device filling found by an exact search on
  sizes rounded down to multiples of 2**-40 (more fillings than the rules allow, never fewer), and
  the bound ``ceil(sum y / largest)``. No solver tolerance enters it.

Every comparison uses the capacity C = 1 + ``rules.EPS`` widened by ``SLACK`` (a float sum the rules
accept may exceed 1 + EPS by a rounding error): a larger device only lowers the bounds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

import numpy as np

from planner import rules
from planner.models.lp_certificate import _Lp

SHARE_CAPACITY = 1.0 + rules.EPS
"""A device's room for shares, as the rules' packing reads it."""
SLACK = 1e-7
"""Added to ``SHARE_CAPACITY`` in every comparison here: rounding in the rules' float sums."""
CAPACITY = SHARE_CAPACITY + SLACK
ROUNDING = 1e-9
"""Taken off a float quotient before rounding it up to whole devices."""
WEIGHT_SCALE = 1 << 30
SIZE_SCALE = 1 << 40
SEARCH_NODES = 300_000
"""Search nodes the exact device-filling searches of one configuration LP may spend in all (about
half a second); a search cut by it proves nothing, and the bound of the rounds before it stands.
A count of work, not a wall time: the bound is the same on every machine."""
MAX_ROUNDS = 100
"""Column-generation rounds of one configuration LP, at most (each adds one filling)."""
MAX_SIZES = 64
"""Distinct share sizes beyond which the configuration LP is not built (volume and L2 stand)."""


def devices_at_least(shares: Iterable[float]) -> int:
    """The largest of the volume, L2 and configuration-LP bounds on the devices ``shares`` need."""
    values = sorted((float(s) for s in shares if s > 0), reverse=True)
    if not values:
        return 0
    sizes, counts = np.unique(np.asarray(values), return_counts=True)
    return _devices_at_least(tuple(sizes.tolist()), tuple(counts.tolist()))


@lru_cache(maxsize=1024)
def _devices_at_least(sizes: tuple[float, ...], counts: tuple[int, ...]) -> int:
    values = np.repeat(np.asarray(sizes), counts)
    best = max(volume_bound(values), l2_bound(values))
    # the LP is not built when first-fit-decreasing already meets the bound (the LP never exceeds a packing)
    if len(sizes) <= MAX_SIZES and best < _first_fit_devices(values):
        best = max(best, configuration_bound(list(sizes), list(counts), best))
    return best


def _first_fit_devices(values: np.ndarray) -> int:
    """Devices first-fit-decreasing packs ``values`` on (within ``SHARE_CAPACITY``): at least the fewest."""
    fills = np.zeros(len(values))
    opened = 0
    for share in np.sort(values)[::-1].tolist():
        fits = np.flatnonzero(fills[:opened] + share <= SHARE_CAPACITY)
        d = int(fits[0]) if len(fits) else opened
        opened += d == opened
        fills[d] += share
    return opened


def volume_bound(values: np.ndarray) -> int:
    """ceil(sum / C): every device holds at most C."""
    return max(0, math.ceil(float(np.sum(values)) / CAPACITY - ROUNDING)) if len(values) else 0


def l2_bound(values: np.ndarray) -> int:
    """Martello and Toth's L2 (the module docstring), over a = 0 and every share up to C/2."""
    if not len(values):
        return 0
    a = np.sort(np.asarray(values, dtype=np.float64))  # ascending
    prefix = np.concatenate(([0.0], np.cumsum(a)))
    n = len(a)
    alphas = np.unique(np.concatenate(([0.0], a[a <= CAPACITY / 2])))
    half = np.searchsorted(a, CAPACITY / 2, side="right")  # shares above C/2 start here (J1 and J2)
    top = np.maximum(np.searchsorted(a, CAPACITY - alphas, side="right"), half)  # shares above C - a (J1)
    low = np.searchsorted(a, alphas, side="left")  # shares >= a start here
    j1 = n - top
    j2_count = top - half
    j2_room = j2_count * CAPACITY - (prefix[top] - prefix[half])
    j3_sum = prefix[half] - prefix[np.minimum(low, half)]
    extra = np.maximum(0, np.ceil((j3_sum - j2_room) / CAPACITY - ROUNDING))
    return int(np.max(j1 + j2_count + extra))


def configuration_bound(sizes: list[float], counts: list[int], known: int = 0) -> int:
    """The configuration LP's bound on the devices ``counts[i]`` shares of ``sizes[i]`` need, proven in
    integers (the module docstring); 0 when no filling search finishes within ``SEARCH_NODES``.
    Column generation stops once the restricted LP's value (at least the LP's) cannot pass ``known``."""
    import highspy  # deferred: HiGHS, only when shares are bounded

    from planner.models.highs import _highs  # one HiGHS thread pool per process: the helper keeps it consistent

    order = np.argsort(sizes)[::-1]
    sizes = [sizes[i] for i in order]
    counts = [counts[i] for i in order]
    width = [max(1, math.floor(s * SIZE_SCALE)) for s in sizes]  # rounded down: more fillings fit, never fewer
    room = math.ceil(CAPACITY * SIZE_SCALE)
    most = [min(c, room // w) for c, w in zip(counts, width)]
    fillings = [[most[i] if j == i else 0 for j in range(len(sizes))] for i in range(len(sizes))]
    best = 0
    budget = [SEARCH_NODES]
    for _ in range(MAX_ROUNDS):
        y, ceiling = _dual_weights(highspy, _highs, fillings, counts)
        if math.ceil(ceiling - 1e-6) <= max(best, known):
            return best  # no round can prove more than the restricted LP's value
        weight = [max(0, round(v * WEIGHT_SCALE)) for v in y]
        found = _heaviest_filling(weight, width, most, room, budget)
        if found is None:
            return best
        value, filling = found
        if value > 0:
            best = max(best, -(-sum(c * w for c, w in zip(counts, weight)) // value))  # ceil, in integers
        if value <= WEIGHT_SCALE + WEIGHT_SCALE // 10**6 or filling in fillings:
            return best
        fillings.append(filling)
    return best


def _dual_weights(highspy: Any, make: Callable[[Any, int], Any], fillings: list[list[int]], counts: list[int]) -> tuple[list[float], float]:
    """max counts . y over y >= 0 with filling . y <= 1 for every filling: HiGHS's solution and value."""
    h = make(highspy, 1)
    n = len(counts)
    h.addVars(n, np.zeros(n), np.full(n, highspy.kHighsInf))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), -np.asarray(counts, dtype=np.float64))
    for f in fillings:
        idx = np.flatnonzero(f).astype(np.int32)
        h.addRow(-highspy.kHighsInf, 1.0, len(idx), idx, np.asarray(f, dtype=np.float64)[idx])
    h.run()
    return [float(v) for v in h.getSolution().col_value], -float(h.getInfo().objective_function_value)


def _heaviest_filling(weight: list[int], width: list[int], most: list[int], room: int, budget: list[int]) -> tuple[int, list[int]] | None:
    """The largest ``sum weight[i] k[i]`` over fillings k (``k[i] <= most[i]``, ``sum width[i] k[i] <=
    room``) and one filling reaching it, by depth-first branch and bound in integers; None when the
    search nodes left in ``budget`` (spent here) run out. Items of weight 0 are left out (they add nothing)."""
    items = [i for i in range(len(weight)) if weight[i] > 0 and most[i] > 0]
    items.sort(key=lambda i: weight[i] / width[i], reverse=True)  # best ratio first: the bound below is then tight early
    best_value = 0
    best = [0] * len(weight)
    chosen = [0] * len(weight)

    def bound(k: int, left: int) -> int:
        """At least what items k.. add within ``left``: ``left`` filled at the best remaining ratio."""
        if k == len(items):
            return 0
        i = items[k]
        return -(-left * weight[i] // width[i])

    def search(k: int, left: int, value: int) -> None:
        nonlocal best_value, best
        budget[0] -= 1
        if budget[0] < 0:
            raise TimeoutError
        if value > best_value:
            best_value, best = value, list(chosen)
        if k == len(items) or value + bound(k, left) <= best_value:
            return
        i = items[k]
        for c in range(min(most[i], left // width[i]), -1, -1):
            chosen[i] = c
            search(k + 1, left - c * width[i], value + c * weight[i])
        chosen[i] = 0

    try:
        search(0, room, 0)
    except TimeoutError:
        return None
    return best_value, best


def devices_per_label(shares: np.ndarray, labels: np.ndarray, count: int) -> np.ndarray:
    """Per label 0 .. count-1, ``devices_at_least`` of the ``shares`` with that label (labels < 0 and
    shares of 0 are left out)."""
    out = np.zeros(count, dtype=np.int64)
    keep = (labels >= 0) & (shares > 0)
    for label in np.unique(labels[keep]).tolist():
        out[label] = devices_at_least(shares[keep & (labels == label)].tolist())
    return out


HALF_TOLERANCE = 1e-6
"""Shares within this of 1/3, 1/2 or 2/3 count on the lower side in ``_dual_values``."""


def _dual_values(share: float) -> tuple[float, float, float]:
    """Values of one share under three functions whose sum over any device's shares is at most 1:
    u (1 above 1/2, 1/2 at 1/2), v (1 above 2/3, 1/2 above 1/3) and the share over ``CAPACITY``."""
    tol = HALF_TOLERANCE
    u = 1.0 if share > 0.5 + tol else 0.5 if abs(share - 0.5) <= tol else 0.0
    v = 1.0 if share > 2 / 3 + tol else 0.5 if share > 1 / 3 + tol else 0.0
    return u, v, share / CAPACITY


def add_device_rows(
    lp: _Lp,
    on_group: dict[int, list[tuple[int, int]]],
    share: np.ndarray,
    whole: np.ndarray,
    count: np.ndarray,
    cover: dict[int, int],
    gpus: np.ndarray,
    nodes: np.ndarray,
    locked_room: np.ndarray,
    locked_shares: dict[int, list[float]],
) -> int:
    """Device rows of the class LP (``defrag_bound_lp``), returns how many components got a count row.

    ``on_group``: node group -> (pod class, variable) pairs of the pods ending there; per class its
    ``share``, ``whole`` GPUs and pod ``count``; per group its GPUs per node (``gpus``), ``nodes``,
    and either a ``cover`` variable (unlocked: its non-empty nodes) or ``locked_room`` (locked: the
    devices its locked whole-GPU pods leave), and the shares of its locked pods. For each group g
    with share classes, s_g >= 0 counts the devices holding shares on g's nodes:

    * whole GPUs ending on g + s_g <= GPUs per node x non-empty nodes (unlocked) or the locked room;
    * s_g >= the sum of each of ``_dual_values`` over the shares ending on g and g's locked shares;
    * per component (groups joined by a share class using both), sum s_g >= ``devices_at_least`` of
      the component's movable shares and the locked shares of its groups: they all end there.
    """
    groups = {g: [(q, v) for q, v in members if share[q] > 0] for g, members in on_group.items()}
    groups = {g: m for g, m in groups.items() if m}
    parent = {g: g for g in groups}

    def find(g: int) -> int:
        while parent[g] != g:
            parent[g] = parent[parent[g]]
            g = parent[g]
        return g

    seen: dict[int, int] = {}
    devices: dict[int, int] = {}
    for g in sorted(groups):
        members = groups[g]
        for q, _ in members:
            if q in seen:
                parent[find(g)] = find(seen[q])
            else:
                seen[q] = g
        locked = g not in cover
        devices[g] = s = lp.var(float(locked_room[g]) if locked else float(gpus[g] * nodes[g]))
        wholes = [(v, float(whole[q])) for q, v in on_group[g] if whole[q] > 0]
        if locked:
            lp.row([*wholes, (s, 1.0)], None, float(locked_room[g]))
        else:
            lp.row([*wholes, (s, 1.0), (cover[g], -float(gpus[g]))], None, 0.0)
        values = [_dual_values(float(share[q])) for q, _ in members]
        held = [_dual_values(x) for x in locked_shares.get(g, [])]
        for f in range(3):
            terms = [(v, -value[f]) for (_, v), value in zip(members, values) if value[f] > 0]
            if terms:
                lp.row([(s, 1.0), *terms], float(sum(h[f] for h in held)), None)
    components: dict[int, list[int]] = {}
    for g in sorted(groups):
        components.setdefault(find(g), []).append(g)
    for comp in components.values():
        classes = sorted({q for g in comp for q, _ in groups[g]})
        shares = [x for q in classes for x in [float(share[q])] * int(count[q])]
        shares += [x for g in comp for x in locked_shares.get(g, [])]
        need = devices_at_least(shares)
        if need > 0:
            lp.row([(devices[g], 1.0) for g in comp], float(need), None)
    return len(components)
