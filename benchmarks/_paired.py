"""Paired comparisons over seeds with a seeded percentile bootstrap (benchmarks/spot.py, issue 45 item 4).

A seed gives every policy the same cluster and jobs, so a policy's value on seed s is compared with the
baseline's on the same seed. Two summaries of "policy against baseline":

* the mean of the per-seed ratios, mean_s(a_s / b_s) - 1;
* the ratio of the means, mean_s(a_s) / mean_s(b_s) - 1 (what a reader of the two means computes).

Their 95% intervals come from one bootstrap over seeds: ``resamples`` draws of n seeds with
replacement (numpy's default generator seeded with ``seed``, so the interval is a function of the
values), both statistics computed on each draw, and the 2.5 and 97.5 percentiles taken. With 20 seeds a
percentile bootstrap is somewhat narrow (it ignores that n is small); the per-seed range is shown too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 10_000
BOOTSTRAP_SEED = 0


@dataclass(frozen=True)
class Paired:
    seeds: int
    mean_ratio: float  # mean of the per-seed ratios - 1
    mean_ratio_ci: tuple[float, float]
    ratio_of_means: float
    ratio_of_means_ci: tuple[float, float]
    low: float  # per-seed range
    high: float


def paired(values: list[float], baseline: list[float], resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Paired:
    """``values`` against ``baseline``, seed by seed (same order, same length, baseline above 0)."""
    a = np.asarray(values, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"paired: need the same seeds on both sides, got {a.size} and {b.size}")
    per = a / b - 1
    draws = np.random.default_rng(seed).integers(0, a.size, size=(resamples, a.size))
    boot_per = per[draws].mean(axis=1)
    boot_means = a[draws].mean(axis=1) / b[draws].mean(axis=1) - 1
    return Paired(
        seeds=int(a.size),
        mean_ratio=float(per.mean()),
        mean_ratio_ci=(float(np.percentile(boot_per, 2.5)), float(np.percentile(boot_per, 97.5))),
        ratio_of_means=float(a.mean() / b.mean() - 1),
        ratio_of_means_ci=(float(np.percentile(boot_means, 2.5)), float(np.percentile(boot_means, 97.5))),
        low=float(per.min()),
        high=float(per.max()),
    )


def mean_interval(values: list[float], resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """The mean of ``values`` and its 95% percentile-bootstrap interval (seeded as ``paired``)."""
    a = np.asarray(values, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, a.size, size=(resamples, a.size))
    boot = a[draws].mean(axis=1)
    return float(a.mean()), float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))


def verdict(ci: tuple[float, float], claim: float) -> str:
    """What a 95% interval of a change (negative: a cut) says about "the cut is at least ``-claim``"."""
    low, high = ci
    if high <= claim:
        return f"holds: the whole interval is at or below {claim:+.0%}"
    if low > claim:
        return f"does not hold: the whole interval is above {claim:+.0%}" + (" (a cut, but smaller)" if high < 0 else "")
    return f"not established: {claim:+.0%} lies inside the interval"


def fmt_ci(value: float, ci: tuple[float, float]) -> str:
    return f"{value:+.1%} [{ci[0]:+.1%}, {ci[1]:+.1%}]"
