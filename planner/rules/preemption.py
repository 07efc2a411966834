"""Who may preempt whom (priorities and the victim refusals) and the cost of evicting a spot pod (lost
work since its last checkpoint)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.cluster import (
        Pod,
    )

HP_PRIORITY = 1000
LP_PRIORITY = 0
"""The priority of a pod without ``priority_value``, by class."""

# Why a pod may not be a victim (the validator's violation kinds)
VICTIM_HP = "victim_hp"
VICTIM_LOCKED = "victim_locked"
VICTIM_STANDBY = "victim_standby"
VICTIM_PRIORITY = "victim_priority_not_lower"


def priority_of(pod: Pod) -> int:
    """The pod's Kubernetes priority: ``priority_value``, else 1000 for HP and 0 for LP."""
    if pod.priority_value is not None:
        return pod.priority_value
    return HP_PRIORITY if pod.priority == "HP" else LP_PRIORITY


def victim_refusal(pod: Pod, preemptor_priority: int) -> tuple[str, str] | None:
    """(kind, reason) why ``pod`` may not be evicted for a preemptor of ``preemptor_priority``; None
    when it may: only spot (LP) pods, never locked or standby ones, of strictly lower priority."""
    if pod.priority == "HP":
        return VICTIM_HP, f"pod '{pod.name}' is HP and is never preempted"
    if pod.locked:
        return VICTIM_LOCKED, f"pod '{pod.name}' is locked"
    if pod.standby:
        return VICTIM_STANDBY, f"pod '{pod.name}' is a standby reservation"
    if priority_of(pod) >= preemptor_priority:
        return VICTIM_PRIORITY, f"pod '{pod.name}' has priority {priority_of(pod)}, not below the preemptor's {preemptor_priority}"
    return None


# ----------------------------------------------------------------------------------------------
# Lost work: the cost of evicting a spot pod
# ----------------------------------------------------------------------------------------------


def last_checkpoint_s(pod: Pod, now_s: float) -> float:
    """When the pod's work was last saved: ``checkpoint_s``; else the last multiple of
    ``checkpoint_interval_s`` since ``started_s``; else ``started_s`` (restart from scratch); a pod
    with no start time is taken to have run since time 0."""
    if pod.checkpoint_s is not None:
        return pod.checkpoint_s
    started = pod.started_s if pod.started_s is not None else 0.0
    if pod.checkpoint_interval_s is not None and now_s > started:
        return started + math.floor((now_s - started) / pod.checkpoint_interval_s) * pod.checkpoint_interval_s
    return started


def lost_gpu_s(pod: Pod, now_s: float) -> float:
    """GPU-seconds of work lost if the pod is evicted at ``now_s``: GPUs x (now - last checkpoint)
    (ASI paper, Sec. 4.2: C_t = G_t (tau_now - tau_ck))."""
    return pod.gpus * max(0.0, now_s - last_checkpoint_s(pod, now_s))
