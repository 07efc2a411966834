"""Seeded HP/spot job workloads for the spot simulator (``planner.simulate.spot``).

``synthetic_jobs``: a small, hand-sized workload for tests and quick comparisons on a few 8-GPU nodes:
``count`` jobs arriving uniformly (10 s grid) over ``window_s`` seconds; 30% HP (no checkpoints),
70% spot (checkpoint every 120 or 300 s, or none, equally likely); 1 or 2 workers (2 in a third of
jobs) of 1, 2, 4 or 8 GPUs; work uniform in [100, 2000) s on a 10 s grid. Names are ``h<k>`` (HP) and
``s<k>`` (spot), k the arrival draw's index, four digits.
"""

from __future__ import annotations

import random

from planner.simulate.spot import SimJob


def synthetic_jobs(seed: int, count: int, window_s: int = 4000) -> list[SimJob]:
    rng = random.Random(seed)
    jobs = []
    for i in range(count):
        hp = rng.random() < 0.3
        jobs.append(SimJob(f"{'h' if hp else 's'}{i:04d}", "HP" if hp else "LP", submit_s=rng.randrange(0, window_s, 10),
                           work_s=rng.randrange(100, 2000, 10), workers=rng.choice([1, 1, 2]), gpus_per_worker=rng.choice([1, 2, 4, 8]),
                           checkpoint_interval_s=None if hp else rng.choice([None, 120, 300])))
    return jobs


__all__ = ["synthetic_jobs"]
