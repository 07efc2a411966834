"""The spot simulator's policies (``planner.simulate.spot``): ``plan_preempt``'s method names, alone or
paired with a placement of ``heuristics.placement.PLACEMENTS``, checked and built into policy objects."""

from __future__ import annotations

from planner.engine.preempt import PreemptOptions, policy_of
from planner.heuristics.placement import PLACEMENTS, Combined

POLICIES = ("spotgpu", "spotgpu-paper", "spotgpu-isolated", "flextopo", "k8s-default", "volcano", "random")
"""Policies by ``plan_preempt``'s method name; ``<placement>+<policy>`` pairs any placement of
``heuristics.placement.PLACEMENTS`` with one (``least-allocated+random``: Kubernetes' default
placement, random victims)."""
MAX_SEED = 2**31 - 1


def policy_problem(policy: str) -> str | None:
    """Why ``policy`` names no simulator policy (None when it does)."""
    placement, _, method = policy.rpartition("+")
    if method not in POLICIES or (placement and placement not in PLACEMENTS):
        return f"policy: unknown '{policy}'; choose one of {', '.join(POLICIES)}, or <placement>+<policy> with a placement of {', '.join(PLACEMENTS)}"
    return None


def make_policy(policy: str, seed: int = 0):  # type: ignore[no-untyped-def]
    """The policy object of a simulator policy name (checked by ``policy_problem``)."""
    placement, _, method = policy.rpartition("+")
    options = PreemptOptions(method=method, **({"seed": seed} if method == "random" else {}))
    chosen = policy_of(method, options)
    return Combined(placement, chosen, seed) if placement else chosen


__all__ = ["MAX_SEED", "POLICIES", "make_policy", "policy_problem"]
