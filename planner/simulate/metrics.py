"""Metrics of a spot replay (issue 14, item 3), one tidy row per (policy, seed).

* ``lp_jct_*``: spot job completion time (finish - submit) over the spot jobs that finished: mean,
  p50, p90 (``numpy.percentile``, linear interpolation); ``lp_start_delay_mean_s``: first start -
  submit over the spot jobs that started (the queueing part of the completion time);
* ``lp_gpu_hours_lost``: GPU-hours of evicted runs not kept by a checkpoint (restart overhead of
  those runs included); ``lp_restart_overhead_gpu_hours``: overhead paid by runs that were not evicted;
* ``lp_evictions_per_job`` and ``lp_evicted_twice_share`` (evicted more than once), over spot jobs;
* ``hp_delay_mean_s``/``hp_delay_p90_s``: HP start - submit; against ``hp_only``, a replay of the HP
  jobs alone, ``hp_delay_hp_only_mean_s`` and ``hp_delay_growth`` (mixed mean / HP-only mean - 1;
  0.0 when both are 0; None when only the HP-only mean is 0: a ratio cannot say it),
  ``hp_delay_added_mean_s`` (mixed mean - HP-only mean) and ``hp_started_later_share`` (the HP jobs
  that started in both replays and started later with spot jobs than without, over those jobs): when
  HP jobs alone hardly ever wait, the ratio is large for a few seconds, and these two say how much;
* ``gar_mean``: GPUs held (awake HP and spot) over all GPUs, averaged over [0, ``horizon_s``] (Kant's
  GAR averaged; the ASI paper's allocation ratio, Fig. 9); ``gar_hp_mean`` the HP part of it;
  ``gar_hp_only_mean`` the same average in the HP-only replay (the paper's "HP alone");
* ``sor``: GPU-hours held / GPU-hours available over [0, ``horizon_s``] (Kant's SOR; over a fixed
  horizon it equals ``gar_mean``, reported under both names as the issue asks);
* ``standby_harvested``: share of standby GPU-time spot pods used (ASI Fig. 16: 90%);
* ``unfinished``: jobs still pending when the replay ended (none could start any more).

Jobs count when submitted in [``from_s``, ``horizon_s``) and time averages run over that span:
``from_s`` leaves out a warm-up, as the cluster starts empty.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.simulate.spot_results import Replay


def replay_row(replay: Replay, horizon_s: float, hp_only: Replay | None = None, from_s: float = 0.0) -> dict[str, Any]:
    """The row of ``replay``: jobs submitted in [``from_s``, ``horizon_s``), time averages over
    that span (``from_s`` > 0 leaves a warm-up out: the cluster starts empty)."""
    counted = {n for n, o in replay.outcomes.items() if from_s <= o.submit_s < horizon_s}
    spot = [o for n, o in replay.outcomes.items() if n in counted and o.priority == "LP"]
    jct = np.array([o.finish_s - o.submit_s for o in spot if o.finish_s is not None], dtype=np.float64)
    hp_delay = _delays(replay, counted)
    row: dict[str, Any] = {
        "policy": replay.policy,
        "jobs": len(replay.outcomes),
        "lp_jobs": len(spot),
        "lp_jct_mean_s": _stat(jct, np.mean),
        "lp_jct_p50_s": _stat(jct, lambda a: np.percentile(a, 50)),
        "lp_jct_p90_s": _stat(jct, lambda a: np.percentile(a, 90)),
        "lp_start_delay_mean_s": _stat(_delays(replay, counted, "LP"), np.mean),
        "lp_gpu_hours_lost": round(replay.lost_gpu_s / 3600, 6),
        "lp_restart_overhead_gpu_hours": round(sum(o.overhead_gpu_s for o in spot) / 3600, 6),
        "lp_evictions_per_job": round(sum(o.evictions for o in spot) / len(spot), 6) if spot else None,
        "lp_evicted_twice_share": round(sum(o.evictions > 1 for o in spot) / len(spot), 6) if spot else None,
        "hp_delay_mean_s": _stat(hp_delay, np.mean),
        "hp_delay_p90_s": _stat(hp_delay, lambda a: np.percentile(a, 90)),
        "gar_mean": round(replay.allocation_mean(horizon_s, from_s=from_s), 6),
        "gar_hp_mean": round(replay.allocation_mean(horizon_s, spot=False, from_s=from_s), 6),
        "sor": round(replay.allocation_mean(horizon_s, from_s=from_s), 6),
        "standby_harvested": None if replay.standby_harvested is None else round(replay.standby_harvested, 6),
        "unfinished": sum(replay.outcomes[n].finish_s is None for n in counted),
        "decisions": replay.decisions,
    }
    if hp_only is not None:
        alone = _delays(hp_only, counted)
        mean_alone = _stat(alone, np.mean)
        row["hp_delay_hp_only_mean_s"] = mean_alone
        row["gar_hp_only_mean"] = round(hp_only.allocation_mean(horizon_s, spot=False, from_s=from_s), 6)
        mixed = row["hp_delay_mean_s"]
        if mean_alone is None or mixed is None:
            row["hp_delay_growth"] = None
        elif mean_alone == 0:
            row["hp_delay_growth"] = 0.0 if mixed == 0 else None
        else:
            row["hp_delay_growth"] = round(mixed / mean_alone - 1, 6)
        row["hp_delay_added_mean_s"] = None if mean_alone is None or mixed is None else round(mixed - mean_alone, 6)
        both = [
            (o.first_start_s, alone_s)
            for n, o in replay.outcomes.items()
            if n in counted
            and o.priority == "HP"
            and o.first_start_s is not None
            and n in hp_only.outcomes
            and (alone_s := hp_only.outcomes[n].first_start_s) is not None
        ]
        row["hp_started_later_share"] = round(sum(mixed_s > alone_s for mixed_s, alone_s in both) / len(both), 6) if both else None
    return row


def _delays(replay: Replay, counted: set[str], priority: str = "HP") -> np.ndarray:
    """Start delays (first start - submit) of the ``priority`` jobs of ``counted`` that started."""
    return np.array(
        [o.first_start_s - o.submit_s for n, o in replay.outcomes.items() if n in counted and o.priority == priority and o.first_start_s is not None],
        dtype=np.float64,
    )


def _stat(values: np.ndarray, fn) -> float | None:
    return None if not len(values) else round(float(fn(values)), 6)


__all__ = ["replay_row"]
