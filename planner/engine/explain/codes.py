"""The reason codes of ``planner explain``: stable strings a UI or an alert may key on, each with the
sentence that defines it (docs/explain.md lists the same). ``proof`` says whether the code, when
given, is a fact computed from the snapshot alone (True) or the planner's heuristic finding (False)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Code:
    code: str
    proof: bool
    meaning: str


JOB_CODES = (
    Code("fits_now", True, "the job's pods fit the free room now, with no move (a scheduler would start it)"),
    Code(
        "already_running",
        True,
        "the job has as many running pods as it needs (min_available); its pending pods start one by one (--pod P explains one)",
    ),
    Code(
        "capacity_total",
        True,
        "the nodes it may use (schedulable, its GPU models) have fewer GPUs in all than it asks: no move or eviction starts it",
    ),
    Code("capacity", True, "the cluster's schedulable nodes have fewer free GPUs than it asks: moves cannot start it, only pods ending or preempted"),
    Code("gpu_model", True, "enough free GPUs in the cluster, but not on the GPU models the job allows"),
    Code("node_selector", True, "enough free GPUs on its models, but on nodes its node_selector excludes"),
    Code("taint", True, "enough free GPUs on its models, but on nodes with taints it does not tolerate"),
    Code("node_affinity", True, "enough free GPUs on its models, but on nodes its required node affinity excludes"),
    Code("resource_not_offered", True, "enough free GPUs on its models, but on nodes that do not offer a resource it requests"),
    Code("switch", True, "a job required under one switch (or spine): enough free GPUs in all, but no one switch has them"),
    Code(
        "fragmentation",
        True,
        "enough free GPUs (under one switch, when required) but in holes smaller than its pods, or beside too few CPUs, memory, "
        "or where its anti-affinity forbids: by cause",
    ),
)
"""Why a pending job does not run now, checked in this order; the first that holds is the reason."""

REMEDY_CODES = (
    Code("none_needed", True, "it fits now, or its job already runs: no move is needed"),
    Code("make_room", False, "the make-room heuristic starts it with the moves given (a plan exists: it is validated; fewer moves may exist)"),
    Code(
        "budget",
        False,
        "the make-room heuristic starts it only without the move budgets given (that plan's size is reported, with "
        "disruption_budgets_lifted when the snapshot's disruption budgets had to be lifted too): the budgets stop it",
    ),
    Code(
        "disruption",
        False,
        "the make-room heuristic starts it within the move budgets given only with the snapshot's disruption budgets "
        "(jobs' max_unavailable) lifted: they stop it (the plan's size without them is reported)",
    ),
    Code("no_plan_found", False, "the make-room heuristic found no plan, with or without the budgets: not a proof that none exists"),
    Code(
        "time_limit",
        False,
        "the time limit (time_limit_s) passed before the make-room plans named in skipped were tried: no finding either way (the reason above is complete)",
    ),
    Code("no_room_after_any_moves", True, "even with every movable pod gone (locked and standby pods stay), no node set has room for it"),
    Code("capacity", True, "moves cannot free GPUs: the cluster has fewer free GPUs than it asks"),
)
"""What it would take to start the job with migrations (``remedy.code``)."""

NODE_CODES = (
    Code("vacated", True, "the plan empties the node"),
    Code("empty", True, "the node holds no pod before the plan"),
    Code("locked", True, "the pod is locked (or a standby pod): no plan moves it"),
    Code("limits", True, "the plan's own options kept it: a namespace filter, the product or pool policy, or a spent budget (named)"),
    Code("no_eligible_destination", True, "no other node passes its static rules (GPU model, selector, taints, affinity, schedulable)"),
    Code(
        "topology",
        False,
        "it belongs to a job required under one switch: the nodes its rules allow with room are under other switches "
        "(with its job's other pods where the plan leaves them)",
    ),
    Code("anti_affinity", False, "every other node its rules allow holds a pod of its anti-affinity group (or host port) after the plan"),
    Code("no_destination_with_room", False, "no other node its rules allow has room for it after the plan; another plan might have made room"),
    Code(
        "heuristic_choice",
        False,
        "some node has room for it after the plan (named): the heuristic kept it because the node's other pods could not all leave, or chose other nodes",
    ),
)
"""Why a pod stays on a node a plan left busy (the first that holds)."""

ALL_CODES = {c.code: c for group in (JOB_CODES, REMEDY_CODES, NODE_CODES) for c in group}
