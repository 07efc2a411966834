"""THE feasibility rules: the single definition of what a legal placement is.

A set of pods fits a node when
  * GPUs: the whole-GPU pods' GPUs plus the number of GPU devices needed to pack the fractional pods
    (each device holds shares summing to at most 1.0) is at most the node's ``gpus``;
  * CPUs and memory: the sums are within the node's capacity;
  * GPU model: every pod's ``gpu_models`` (when not empty) contains the node's ``gpu_model``;
  * selector: every pod's ``node_selector`` is a subset of the node's ``labels``;
  * taints: an arriving pod tolerates every ``NoSchedule`` and ``NoExecute`` taint of the node
    (``PreferNoSchedule`` is a scheduler preference and never decides feasibility);
  * node affinity: an arriving pod's required ``node_affinity`` (terms ORed, expressions ANDed) matches
    the node's labels;
  * anti-affinity: no two different pods on the node share an ``anti_affinity`` group, nor bind the
    same host port (``host_ports``: a port and protocol);
  * resources by name (Kubernetes' NodeResourcesFit): on a node that lists its ``resources``, every
    resource a pod ``requests`` (and one ``pods`` slot per pod) is offered, and the sums stay within
    them, in the units Kubernetes charges (a time-sliced GPU replica is a slot of the resource it is
    requested by, a MIG slice a slot of its profile: no conversion between names);
  * schedulable: a node with ``schedulable: false`` receives no pod (pods already there may stay);
and a job whose topology is ``required`` at level ``asw`` (``spine``) has all its placed pods under one
asw (spine). A node without an ``asw`` (``spine``) is a domain of its own.

Heuristics, exact models and the plan validator all call these functions (or the array forms in
``state.py``, which tests keep equal to these), so they can never disagree about legality.

The rules are written in the modules of this package, one idea each: ``base`` (names, tolerance),
``shares`` (GPU share packing), ``static`` (per-pod rules), ``node`` (the pods on a node, job
topology, devices), ``dra`` (DRA claims on a node's devices), ``preemption`` (priority, lost work) and ``numa``; callers use ``rules.X``.
"""

from planner.rules.base import (
    ANTI_AFFINITY,
    EPS,
    GPU_MODEL,
    JOB_TOPOLOGY,
    NODE_AFFINITY,
    NODE_SELECTOR,
    OVER_CAPACITY,
    RESOURCE_NOT_OFFERED,
    TAINT,
    UNSCHEDULABLE,
    RuleBreak,
)
from planner.rules.dra import DRA_DEVICES, DRA_PREFIX, allocation, device_id, dra_breaks
from planner.rules.node import (
    DEVICES,
    anti_affinity_conflicts,
    device_breaks,
    gang_need,
    job_topology_ok,
    node_rule_breaks,
    pods_fit,
    resource_shortfalls,
    topology_domain,
)
from planner.rules.numa import (
    ALIGN_CROSS_SOCKET,
    ALIGN_NUMA,
    ALIGN_SOCKET,
    NUMA_GUARANTEED,
    alignment_tier,
    attributed_cpus,
    device_domains,
    domain_socket,
    numa_guaranteed_breaks,
)
from planner.rules.preemption import (
    HP_PRIORITY,
    LP_PRIORITY,
    VICTIM_HP,
    VICTIM_LOCKED,
    VICTIM_PRIORITY,
    VICTIM_STANDBY,
    last_checkpoint_s,
    lost_gpu_s,
    priority_of,
    victim_refusal,
)
from planner.rules.shares import (
    PACKING_SEARCH_LIMIT,
    _first_fit_decreasing,
    _lower_bound,
    assign_shares,
    gpu_devices_needed,
    is_share,
    pack_shares,
    share_slots,
    share_slots_per_node,
)
from planner.rules.static import (
    BINDING_EFFECTS,
    STATIC_CHECKS,
    conflict_groups,
    gpu_model_allowed,
    may_arrive,
    may_receive,
    node_affinity_matches,
    offered_amount,
    requested,
    requirement_matches,
    resources_offered,
    selector_matches,
    static_rule_breaks,
    tolerated,
    tolerates,
    unoffered_resources,
    untolerated_taints,
)

__all__ = [
    "ALIGN_CROSS_SOCKET",
    "ALIGN_NUMA",
    "ALIGN_SOCKET",
    "ANTI_AFFINITY",
    "BINDING_EFFECTS",
    "DEVICES",
    "DRA_DEVICES",
    "DRA_PREFIX",
    "EPS",
    "GPU_MODEL",
    "HP_PRIORITY",
    "JOB_TOPOLOGY",
    "LP_PRIORITY",
    "NODE_AFFINITY",
    "NODE_SELECTOR",
    "NUMA_GUARANTEED",
    "OVER_CAPACITY",
    "PACKING_SEARCH_LIMIT",
    "RESOURCE_NOT_OFFERED",
    "STATIC_CHECKS",
    "TAINT",
    "UNSCHEDULABLE",
    "VICTIM_HP",
    "VICTIM_LOCKED",
    "VICTIM_PRIORITY",
    "VICTIM_STANDBY",
    "RuleBreak",
    "_first_fit_decreasing",
    "_lower_bound",
    "alignment_tier",
    "allocation",
    "anti_affinity_conflicts",
    "assign_shares",
    "attributed_cpus",
    "conflict_groups",
    "device_breaks",
    "device_domains",
    "device_id",
    "domain_socket",
    "dra_breaks",
    "gang_need",
    "gpu_devices_needed",
    "gpu_model_allowed",
    "is_share",
    "job_topology_ok",
    "last_checkpoint_s",
    "lost_gpu_s",
    "may_arrive",
    "may_receive",
    "node_affinity_matches",
    "node_rule_breaks",
    "numa_guaranteed_breaks",
    "offered_amount",
    "pack_shares",
    "pods_fit",
    "priority_of",
    "requested",
    "requirement_matches",
    "resource_shortfalls",
    "resources_offered",
    "selector_matches",
    "share_slots",
    "share_slots_per_node",
    "static_rule_breaks",
    "tolerated",
    "tolerates",
    "topology_domain",
    "unoffered_resources",
    "untolerated_taints",
    "victim_refusal",
]
