"""Non-preemptive placement rules, and a policy that pairs one with any preemption policy.

The simulator replays placement x preemption (issue 14): where a job goes when it fits without
evictions, and whom it evicts when it does not. Placements:

* ``spotgpu``: SpotGPU's ranking (least idle GPUs, co-location, eviction history, name;
  ``spotgpu.placement_order``);
* ``least-allocated``: Kubernetes' default scoring (NodeResourcesFit, strategy LeastAllocated, its
  default resources CPU and memory with weight 1 each): the node with the largest mean share of
  CPU and memory left free once the pod is there; ties by name. GPUs are not scored, as in the
  default configuration (operators may add ``nvidia.com/gpu``; not modelled);
* ``random``: a uniformly random node where the pod fits (seeded).

``Combined(placement, preemption)`` places without eviction by the placement and hands the rest to
the preemption policy (any of ``plan_preempt``'s heuristics). Named ``<placement>+<preemption>``.
"""

from __future__ import annotations

import numpy as np

from planner.heuristics import gang
from planner.heuristics.spotgpu import placement_keys
from planner.preempt_state import Ask, Fit, PreemptState

PLACEMENTS = ("spotgpu", "least-allocated", "random")


def least_allocated_order(ps: PreemptState, p: int, nodes: np.ndarray) -> np.ndarray:
    cs = ps.cs
    with np.errstate(divide="ignore", invalid="ignore"):
        cpu = np.where(cs.cap_cpus[nodes] > 0, (cs.cap_cpus[nodes] - cs.used_cpus[nodes] - cs.pod_cpus[p]) / cs.cap_cpus[nodes], 0.0)
        mem = np.where(cs.cap_mem[nodes] > 0, (cs.cap_mem[nodes] - cs.used_mem[nodes] - cs.pod_mem[p]) / cs.cap_mem[nodes], 0.0)
    return nodes[np.lexsort((gang.name_rank(ps)[nodes], -(cpu + mem) / 2))]


class Combined:
    """``placement`` without preemption, then ``preemption``'s covers."""

    numa_aware = False

    def __init__(self, placement: str, preemption, seed: int = 0):
        if placement not in PLACEMENTS:
            raise ValueError(f"placement: unknown '{placement}'; choose one of {', '.join(PLACEMENTS)}")
        self.placement = placement
        self.preemption = preemption
        self.name = f"{placement}+{preemption.name}"
        self.reprieve = preemption.reprieve
        self.retries = getattr(preemption, "retries", False)
        self.rng = np.random.default_rng(seed)

    def place_free(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray) -> tuple[int, Fit] | None:
        nodes = np.flatnonzero(ps.cs.feasible_nodes(p) & allowed)
        if not len(nodes):
            return None
        if self.placement == "spotgpu":
            return gang.first_fitting_by_keys(ps, ask, p, nodes, placement_keys(ps, ask, p, nodes), numa_mode=None)
        if self.placement == "least-allocated":
            order = least_allocated_order(ps, p, nodes)
        else:
            order = nodes[np.argsort(gang.name_rank(ps)[nodes], kind="stable")]
            self.rng.shuffle(order)
        return gang.first_fitting(ps, ask, p, order, numa_mode=None)

    def place_preempting(self, ps: PreemptState, ask: Ask, p: int, allowed: np.ndarray):
        return self.preemption.place_preempting(ps, ask, p, allowed)


__all__ = ["PLACEMENTS", "Combined", "least_allocated_order"]
