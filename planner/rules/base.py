"""What every rule shares: the tolerance on sums, the rule names and one broken rule (``RuleBreak``)."""

from __future__ import annotations

from dataclasses import dataclass

EPS = 1e-9
"""Tolerance for sums of floating-point requests (shares, CPUs, GiB)."""

# Rule names, shared by the validator's violations and the fast forms' explanations.
OVER_CAPACITY = "over_capacity"
GPU_MODEL = "gpu_model"
NODE_SELECTOR = "node_selector"
TAINT = "taint_not_tolerated"
NODE_AFFINITY = "node_affinity"
ANTI_AFFINITY = "anti_affinity"
UNSCHEDULABLE = "unschedulable_destination"
JOB_TOPOLOGY = "job_topology"
RESOURCE_NOT_OFFERED = "resource_not_offered"


@dataclass(frozen=True)
class RuleBreak:
    """One broken rule on one node: which rule, which pod (if one pod is to blame) and why."""

    rule: str
    node: str
    pod: str | None
    detail: str
