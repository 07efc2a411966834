"""GPUs: whole pods and packed shares. Shares on one device sum to at most 1; how many devices a set of
shares needs is found by first-fit-decreasing, then (when above the lower bound) a bounded branch and
bound."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

import numpy as np

from planner.rules.base import EPS

PACKING_SEARCH_LIMIT = 5_000
"""Search nodes allowed, in all, when looking for a packing of shares on fewer devices than
first-fit-decreasing found. Most sets never search: first-fit-decreasing meets the lower bound.
Past the budget the best packing found is used: possibly a device more than optimal (a conservative
"does not fit"), never fewer. The budget bounds the work of one question, whatever its shares."""


def is_share(gpus: float) -> bool:
    """A request below one GPU is a share of one device."""
    return 0 < gpus < 1


def _first_fit_decreasing(shares: tuple[float, ...]) -> list[int]:
    """Device of each share (sorted decreasing) by first fit."""
    if len(shares) > 64:
        return _first_fit_decreasing_vectorised(shares)
    fills: list[float] = []
    devices = []
    for share in shares:
        for d, fill in enumerate(fills):
            if fill + share <= 1 + EPS:
                fills[d] = fill + share
                devices.append(d)
                break
        else:
            fills.append(share)
            devices.append(len(fills) - 1)
    return devices


def _first_fit_decreasing_vectorised(shares: tuple[float, ...]) -> list[int]:
    """First fit with one vector scan of the open devices per share (for many shares on one node)."""

    fills = np.zeros(len(shares))
    opened = 0
    devices = []
    for share in shares:
        fits = np.flatnonzero(fills[:opened] + share <= 1 + EPS)
        d = int(fits[0]) if len(fits) else opened
        opened += d == opened
        fills[d] += share
        devices.append(d)
    return devices


def _lower_bound(shares: tuple[float, ...]) -> int:
    """Fewest devices any packing of ``shares`` (sorted decreasing) needs: the best of

    * the volume bound ceil(sum);
    * cardinality bounds: more than 1/(q+1) of a device each, at most q fit one device;
    * Martello and Toth's L2: for each threshold t <= 1/2, shares above 1 - t need a device each,
      shares in (1/2, 1 - t] too, and the shares in [t, 1/2] must fit the room those leave or in
      further devices.

    O(n log n) with sorted arrays and prefix sums.
    """

    if not shares:
        return 0
    a = np.array(shares[::-1])  # ascending
    prefix = np.concatenate(([0.0], np.cumsum(a)))
    n = len(a)
    best: int = math.ceil(prefix[-1] - EPS)

    def above(x: np.ndarray | float) -> np.ndarray:  # index of the first share > x
        return np.searchsorted(a, np.asarray(x) + EPS, side="right")

    q = np.arange(1, n + 1)
    over = n - above(1 / (q + 1))  # shares above 1/(q+1): at most q share a device
    best = max(best, int(np.max(np.ceil(over / q))))
    thresholds = np.unique(np.concatenate(([0.0], a[a <= 0.5 + EPS])))
    half = above(0.5)  # shares above 1/2 start here
    top = above(1 - thresholds)  # shares above 1 - t start here
    low = np.searchsorted(a, thresholds - EPS, side="left")  # shares >= t start here
    j1 = n - top
    j2_count = top - half
    j2_sum = prefix[top] - prefix[half]
    j3_sum = prefix[half] - prefix[np.minimum(low, half)]
    room = j2_count - j2_sum
    l2 = j1 + j2_count + np.maximum(0, np.ceil(j3_sum - room - EPS))
    return max(best, int(np.max(l2)))


def _pack_into(shares: tuple[float, ...], devices: int, budget: list[int]) -> list[int] | None:
    """Depth-first search for a packing of ``shares`` (sorted decreasing) into ``devices`` devices,
    spending search nodes from ``budget`` (shared by the caller's searches); None if none is found."""
    fills = [0.0] * devices
    chosen = [0] * len(shares)
    suffix = [0.0] * (len(shares) + 1)
    for i in range(len(shares) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + shares[i]

    def place(i: int, placed: float) -> bool:
        if i == len(shares):
            return True
        budget[0] -= 1
        if budget[0] < 0:
            raise TimeoutError
        if suffix[i] > devices - placed + EPS:
            return False  # the rest cannot fit the room left, however it is split
        share = shares[i]
        tried: set[float] = set()
        for d in range(devices):
            fill = fills[d]
            if fill + share > 1 + EPS:
                continue
            key = round(fill, 9)
            if key in tried:
                continue  # a device filled like one tried already leads to the same packings
            tried.add(key)
            fills[d] = fill + share
            chosen[i] = d
            if place(i + 1, placed + share):
                return True
            fills[d] = fill
        return False

    try:
        return chosen if place(0, 0.0) else None
    except TimeoutError:
        return None


@lru_cache(maxsize=1 << 16)
def _pack_sorted(shares: tuple[float, ...]) -> tuple[int, ...]:
    """Device of each share (sorted decreasing) in a packing on the fewest devices found.

    First-fit-decreasing, then, while it uses more devices than the lower bound, a search for a
    packing on one device fewer, all searches drawing on one budget of ``PACKING_SEARCH_LIMIT``.
    """
    best = _first_fit_decreasing(shares)
    floor = _lower_bound(shares)
    budget = [PACKING_SEARCH_LIMIT]
    while shares and max(best) + 1 > floor and budget[0] > 0:
        fewer = _pack_into(shares, max(best), budget)
        if fewer is None:
            break
        best = fewer
    return tuple(best)


def assign_shares(shares: Sequence[float]) -> list[int]:
    """Device index (0, 1, ...) of each share, in input order, packed on the fewest devices."""
    order = sorted(range(len(shares)), key=lambda k: -shares[k])
    devices = _pack_sorted(tuple(shares[k] for k in order)) if shares else ()
    result = [0] * len(shares)
    for k, d in zip(order, devices):
        result[k] = d
    return result


def pack_shares(shares: Iterable[float]) -> tuple[float, ...]:
    """Fill level of each GPU device in a packing of the shares on the fewest devices (fullest first)."""
    ordered = tuple(sorted(shares, reverse=True))
    return _fills_sorted(ordered) if ordered else ()


@lru_cache(maxsize=1 << 16)
def _fills_sorted(ordered: tuple[float, ...]) -> tuple[float, ...]:
    devices = _pack_sorted(ordered)
    fills = [0.0] * (max(devices) + 1)
    for share, d in zip(ordered, devices):
        fills[d] += share
    return tuple(sorted(fills, reverse=True))


def gpu_devices_needed(gpu_requests: Iterable[float]) -> int:
    """Whole GPUs requested plus the devices needed to pack the shares."""
    whole = 0
    shares = []
    for g in gpu_requests:
        if is_share(g):
            shares.append(g)
        else:
            whole += int(g)
    return whole + len(pack_shares(shares))


def share_slots(devices: int, shares: Sequence[float], share: float) -> int:
    """How many more pods of ``share`` GPU (a share, below 1) fit beside the ``shares`` on ``devices``
    GPU devices (those no whole-GPU pod holds), by the rules' packing (``pack_shares``, what
    every fit check uses): shares of one device pack together, so two halves take one device."""
    if devices <= 0:
        return 0
    most = min(devices * math.floor(1 / share + EPS), math.floor((devices - sum(shares)) / share + 1e-9))
    k = max(most, 0)
    while k > 0 and len(pack_shares([*shares, *[share] * k])) > devices:
        k -= 1
    return k


def share_slots_per_node(devices: np.ndarray, shares_of: Mapping[int, Sequence[float]], share: float) -> np.ndarray:
    """``share_slots`` of every node: ``devices`` per node, ``shares_of`` the shares on each node that has any."""

    slots: np.ndarray = np.maximum(devices, 0).astype(np.int64) * math.floor(1 / share + EPS)
    for n, shares in shares_of.items():
        if len(shares):
            slots[n] = share_slots(int(devices[n]), shares, share)
    return slots
