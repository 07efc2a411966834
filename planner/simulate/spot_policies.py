"""The spot simulator's policies (``planner.simulate.spot``): ``plan_preempt``'s method names, alone or
paired with a placement of ``heuristics.placement.PLACEMENTS``, checked and built into policy objects."""

from __future__ import annotations

from typing import TypeGuard

from planner.engine.preempt import HEURISTICS, PreemptHeuristic, PreemptOptions, policy_of
from planner.heuristics.gang import Policy
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


def _is_heuristic(method: str) -> TypeGuard[PreemptHeuristic]:
    return method in HEURISTICS


def policy_method(policy: str) -> PreemptHeuristic:
    """The ``plan_preempt`` method of a simulator policy name; a ValueError naming the choices when
    it names none (``policy_problem``)."""
    method = policy.rpartition("+")[2]
    if not _is_heuristic(method):
        raise ValueError(policy_problem(policy))
    return method


def preempt_options(method: PreemptHeuristic, seed: int, now_s: float | None = None) -> PreemptOptions:
    """``plan_preempt``'s options for ``method`` at ``now_s`` (None: the snapshot's time); the seed only
    for ``random`` (the other methods refuse a seed)."""
    if method == "random":
        return PreemptOptions(method=method, now_s=now_s, seed=seed)
    return PreemptOptions(method=method, now_s=now_s)


def make_policy(policy: str, seed: int = 0) -> Policy:
    """The policy object of a simulator policy name (checked by ``policy_problem``)."""
    placement = policy.rpartition("+")[0]
    method = policy_method(policy)
    chosen = policy_of(method, preempt_options(method, seed))
    return Combined(placement, chosen, seed) if placement else chosen


__all__ = ["MAX_SEED", "POLICIES", "make_policy", "policy_method", "policy_problem", "preempt_options"]
