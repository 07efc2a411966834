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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from planner.cluster import Job, Node, NodeSelectorRequirement, Pod, Taint, Toleration

EPS = 1e-9
"""Tolerance for sums of floating-point requests (shares, CPUs, GiB)."""

PACKING_SEARCH_LIMIT = 5_000
"""Search nodes allowed, in all, when looking for a packing of shares on fewer devices than
first-fit-decreasing found. Most sets never search: first-fit-decreasing meets the lower bound.
Past the budget the best packing found is used: possibly a device more than optimal (a conservative
"does not fit"), never fewer. The budget bounds the work of one question, whatever its shares."""

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


# ----------------------------------------------------------------------------------------------
# GPUs: whole pods and packed shares
# ----------------------------------------------------------------------------------------------


def is_share(gpus: float) -> bool:
    """A request below one GPU is a share of one device."""
    return 0 < gpus < 1


def _first_fit_decreasing(shares: tuple[float, ...]) -> list[int]:
    """Device of each share (sorted decreasing) by first fit."""
    if len(shares) > 64:
        return _first_fit_decreasing_vectorised(shares)
    fills: list[float] = []
    devices = []
    for share in shares:
        for d, fill in enumerate(fills):
            if fill + share <= 1 + EPS:
                fills[d] = fill + share
                devices.append(d)
                break
        else:
            fills.append(share)
            devices.append(len(fills) - 1)
    return devices


def _first_fit_decreasing_vectorised(shares: tuple[float, ...]) -> list[int]:
    """First fit with one vector scan of the open devices per share (for many shares on one node)."""
    import numpy as np

    fills = np.zeros(len(shares))
    opened = 0
    devices = []
    for share in shares:
        fits = np.flatnonzero(fills[:opened] + share <= 1 + EPS)
        d = int(fits[0]) if len(fits) else opened
        opened += d == opened
        fills[d] += share
        devices.append(d)
    return devices


def _lower_bound(shares: tuple[float, ...]) -> int:
    """Fewest devices any packing of ``shares`` (sorted decreasing) needs: the best of

    * the volume bound ceil(sum);
    * cardinality bounds: more than 1/(q+1) of a device each, at most q fit one device;
    * Martello and Toth's L2: for each threshold t <= 1/2, shares above 1 - t need a device each,
      shares in (1/2, 1 - t] too, and the shares in [t, 1/2] must fit the room those leave or in
      further devices.

    O(n log n) with sorted arrays and prefix sums.
    """
    import numpy as np

    if not shares:
        return 0
    a = np.array(shares[::-1])  # ascending
    prefix = np.concatenate(([0.0], np.cumsum(a)))
    n = len(a)
    best = math.ceil(prefix[-1] - EPS)

    def above(x: np.ndarray | float) -> np.ndarray:  # index of the first share > x
        return np.searchsorted(a, np.asarray(x) + EPS, side="right")

    q = np.arange(1, n + 1)
    over = n - above(1 / (q + 1))  # shares above 1/(q+1): at most q share a device
    best = max(best, int(np.max(np.ceil(over / q))))
    thresholds = np.unique(np.concatenate(([0.0], a[a <= 0.5 + EPS])))
    half = above(0.5)  # shares above 1/2 start here
    top = above(1 - thresholds)  # shares above 1 - t start here
    low = np.searchsorted(a, thresholds - EPS, side="left")  # shares >= t start here
    j1 = n - top
    j2_count = top - half
    j2_sum = prefix[top] - prefix[half]
    j3_sum = prefix[half] - prefix[np.minimum(low, half)]
    room = j2_count - j2_sum
    l2 = j1 + j2_count + np.maximum(0, np.ceil(j3_sum - room - EPS))
    return max(best, int(np.max(l2)))


def _pack_into(shares: tuple[float, ...], devices: int, budget: list[int]) -> list[int] | None:
    """Depth-first search for a packing of ``shares`` (sorted decreasing) into ``devices`` devices,
    spending search nodes from ``budget`` (shared by the caller's searches); None if none is found."""
    fills = [0.0] * devices
    chosen = [0] * len(shares)
    suffix = [0.0] * (len(shares) + 1)
    for i in range(len(shares) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + shares[i]

    def place(i: int, placed: float) -> bool:
        if i == len(shares):
            return True
        budget[0] -= 1
        if budget[0] < 0:
            raise TimeoutError
        if suffix[i] > devices - placed + EPS:
            return False  # the rest cannot fit the room left, however it is split
        share = shares[i]
        tried: set[float] = set()
        for d in range(devices):
            fill = fills[d]
            if fill + share > 1 + EPS:
                continue
            key = round(fill, 9)
            if key in tried:
                continue  # a device filled like one tried already leads to the same packings
            tried.add(key)
            fills[d] = fill + share
            chosen[i] = d
            if place(i + 1, placed + share):
                return True
            fills[d] = fill
        return False

    try:
        return chosen if place(0, 0.0) else None
    except TimeoutError:
        return None


@lru_cache(maxsize=1 << 16)
def _pack_sorted(shares: tuple[float, ...]) -> tuple[int, ...]:
    """Device of each share (sorted decreasing) in a packing on the fewest devices found.

    First-fit-decreasing, then, while it uses more devices than the lower bound, a search for a
    packing on one device fewer, all searches drawing on one budget of ``PACKING_SEARCH_LIMIT``.
    """
    best = _first_fit_decreasing(shares)
    floor = _lower_bound(shares)
    budget = [PACKING_SEARCH_LIMIT]
    while shares and max(best) + 1 > floor and budget[0] > 0:
        fewer = _pack_into(shares, max(best), budget)
        if fewer is None:
            break
        best = fewer
    return tuple(best)


def assign_shares(shares: Sequence[float]) -> list[int]:
    """Device index (0, 1, ...) of each share, in input order, packed on the fewest devices."""
    order = sorted(range(len(shares)), key=lambda k: -shares[k])
    devices = _pack_sorted(tuple(shares[k] for k in order)) if shares else ()
    result = [0] * len(shares)
    for k, d in zip(order, devices):
        result[k] = d
    return result


def pack_shares(shares: Iterable[float]) -> tuple[float, ...]:
    """Fill level of each GPU device in a packing of the shares on the fewest devices (fullest first)."""
    ordered = tuple(sorted(shares, reverse=True))
    return _fills_sorted(ordered) if ordered else ()


@lru_cache(maxsize=1 << 16)
def _fills_sorted(ordered: tuple[float, ...]) -> tuple[float, ...]:
    devices = _pack_sorted(ordered)
    fills = [0.0] * (max(devices) + 1)
    for share, d in zip(ordered, devices):
        fills[d] += share
    return tuple(sorted(fills, reverse=True))


def gpu_devices_needed(gpu_requests: Iterable[float]) -> int:
    """Whole GPUs requested plus the devices needed to pack the shares."""
    whole = 0
    shares = []
    for g in gpu_requests:
        if is_share(g):
            shares.append(g)
        else:
            whole += int(g)
    return whole + len(pack_shares(shares))


def share_slots(devices: int, shares: Sequence[float], share: float) -> int:
    """How many more pods of ``share`` GPU (a share, below 1) fit beside the ``shares`` on ``devices``
    GPU devices (those no whole-GPU pod holds), by the rules' packing (``pack_shares``, what
    every fit check uses): shares of one device pack together, so two halves take one device."""
    if devices <= 0:
        return 0
    most = min(devices * math.floor(1 / share + EPS), math.floor((devices - sum(shares)) / share + 1e-9))
    k = max(most, 0)
    while k > 0 and len(pack_shares([*shares, *[share] * k])) > devices:
        k -= 1
    return k


def share_slots_per_node(devices: np.ndarray, shares_of: Mapping[int, Sequence[float]], share: float) -> np.ndarray:
    """``share_slots`` of every node: ``devices`` per node, ``shares_of`` the shares on each node that has any."""
    import numpy as np

    slots = np.maximum(devices, 0).astype(np.int64) * math.floor(1 / share + EPS)
    for n, shares in shares_of.items():
        if len(shares):
            slots[n] = share_slots(int(devices[n]), shares, share)
    return slots


# ----------------------------------------------------------------------------------------------
# Per-pod static rules
# ----------------------------------------------------------------------------------------------


def gpu_model_allowed(pod: Pod, node: Node) -> bool:
    return not pod.gpu_models or node.gpu_model in pod.gpu_models


def selector_matches(pod: Pod, node: Node) -> bool:
    labels = node.labels
    return all(labels.get(key) == value for key, value in pod.node_selector.items())


def requested(pod: Pod) -> dict[str, int]:
    """What ``pod`` charges a node that lists its ``resources``: its named requests and one pod slot."""
    from planner.cluster import POD_COUNT

    return {**pod.requests, POD_COUNT: 1}


def offered_amount(node: Node, name: str) -> int | None:
    """How much of resource ``name`` the node offers; None when it sets no limit (a node that does
    not list its resources, or lists them without a ``pods`` count)."""
    from planner.cluster import POD_COUNT

    if node.resources is None or (name == POD_COUNT and name not in node.resources):
        return None
    return node.resources.get(name, 0)


def unoffered_resources(pod: Pod, node: Node) -> list[str]:
    """The resources ``pod`` requests that ``node`` does not offer at all (none when the node does
    not list its resources)."""
    if node.resources is None:
        return []
    return sorted(name for name, amount in pod.requests.items() if amount > 0 and node.resources.get(name, 0) <= 0)


def conflict_groups(pod: Pod) -> list[str]:
    """The groups no two pods on one node may share: anti-affinity groups and host ports (a port
    and protocol; kube-scheduler's NodePorts, every host IP taken as overlapping)."""
    if not pod.host_ports:
        return pod.anti_affinity
    return [*pod.anti_affinity, *sorted({f"hostPort {h.protocol}/{h.port}" for h in pod.host_ports})]


def may_receive(node: Node) -> bool:
    """Whether pods may move onto the node (pods already there may stay on a cordoned node)."""
    return node.schedulable


BINDING_EFFECTS = ("NoSchedule", "NoExecute")
"""Taint effects that keep a pod off a node unless tolerated; PreferNoSchedule only steers scoring."""


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Kubernetes' toleration match: the effect is empty or equal, the key is empty (with Exists)
    or equal, and Exists matches any value while Equal needs the same value."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    return toleration.operator == "Exists" or toleration.value == taint.value


def untolerated_taints(pod: Pod, node: Node) -> list[Taint]:
    """The node's NoSchedule/NoExecute taints that none of the pod's tolerations match."""
    return [
        taint for taint in node.taints
        if taint.effect in BINDING_EFFECTS and not any(tolerates(t, taint) for t in pod.tolerations)
    ]


def requirement_matches(requirement: NodeSelectorRequirement, labels: dict[str, str]) -> bool:
    """One node-affinity expression against node labels (a missing label satisfies NotIn and
    DoesNotExist, as in Kubernetes)."""
    value = labels.get(requirement.key)
    if requirement.operator == "In":
        return value is not None and value in requirement.values
    if requirement.operator == "NotIn":
        return value is None or value not in requirement.values
    if requirement.operator == "Exists":
        return value is not None
    return value is None  # DoesNotExist


def node_affinity_matches(pod: Pod, node: Node) -> bool:
    """The pod's required node affinity holds on the node: some term has all its expressions true."""
    if pod.node_affinity is None:
        return True
    return any(all(requirement_matches(r, node.labels) for r in term) for term in pod.node_affinity)


def static_rule_breaks(pod: Pod, node: Node) -> list[RuleBreak]:
    """The per-pod static rules an arriving pod breaks on ``node``: schedulable, GPU model, selector,
    taints and node affinity. They depend on the pod and the node only, so the fast forms evaluate
    them once per (pod signature, node profile)."""
    breaks = []
    if not may_receive(node):
        breaks.append(RuleBreak(UNSCHEDULABLE, node.name, pod.name, f"node '{node.name}' is not schedulable"))
    if not gpu_model_allowed(pod, node):
        breaks.append(RuleBreak(GPU_MODEL, node.name, pod.name,
                                f"pod '{pod.name}' allows {pod.gpu_models}, node '{node.name}' has '{node.gpu_model}'"))
    if not selector_matches(pod, node):
        breaks.append(RuleBreak(NODE_SELECTOR, node.name, pod.name,
                                f"node '{node.name}' labels do not satisfy node_selector {pod.node_selector}"))
    untolerated = untolerated_taints(pod, node)
    if untolerated:
        shown = ", ".join(f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in untolerated)
        breaks.append(RuleBreak(TAINT, node.name, pod.name, f"pod '{pod.name}' does not tolerate taint {shown} of node '{node.name}'"))
    if not node_affinity_matches(pod, node):
        breaks.append(RuleBreak(NODE_AFFINITY, node.name, pod.name,
                                f"node '{node.name}' labels match no term of pod '{pod.name}''s required node_affinity"))
    missing = unoffered_resources(pod, node)
    if missing:
        breaks.append(RuleBreak(RESOURCE_NOT_OFFERED, node.name, pod.name,
                                f"pod '{pod.name}' requests {', '.join(missing)}, which node '{node.name}' does not offer"))
    return breaks


def tolerated(pod: Pod, node: Node) -> bool:
    """The pod tolerates every NoSchedule/NoExecute taint of the node."""
    return not untolerated_taints(pod, node)


def resources_offered(pod: Pod, node: Node) -> bool:
    """The node offers every resource the pod requests (a node that does not list its resources offers all)."""
    return not unoffered_resources(pod, node)


STATIC_CHECKS: tuple[Callable[[Pod, Node], bool], ...] = (
    gpu_model_allowed, selector_matches, tolerated, node_affinity_matches, resources_offered,
)
"""The per-pod rules of ``may_arrive`` beside ``may_receive``. Each reads one field of the pod
(``gpu_models``, ``node_selector``, ``tolerations``, ``node_affinity``, the names ``requests`` asks
for), so a fast form may evaluate each once per distinct value of its field (``state._eligibility``)."""


def may_arrive(pod: Pod, node: Node) -> bool:
    """Whether the per-pod static rules let ``pod`` arrive on ``node`` (resources aside)."""
    return may_receive(node) and all(check(pod, node) for check in STATIC_CHECKS)


# ----------------------------------------------------------------------------------------------
# Rules over the set of pods on a node
# ----------------------------------------------------------------------------------------------


def resource_shortfalls(node: Node, pods: Sequence[Pod]) -> list[str]:
    """Human-readable excesses of GPU devices, CPUs and memory; empty when the pods fit.

    A standby pod (an HP pod whose containers sleep, ASI's Standby) holds no resources: spot pods
    may run in what it lent. It keeps a reservation: the HP pods of the node, standby ones included,
    must fit the node too, so a standby pod can always come back by evicting spot pods.
    """
    running = [p for p in pods if not p.standby]
    problems = _shortfalls(node, running, "")
    if len(running) < len(pods):
        problems += _shortfalls(node, [p for p in pods if p.priority == "HP"], "HP reservations (standby included) ", named=False)
    return problems


def _shortfalls(node: Node, pods: Sequence[Pod], what: str, named: bool = True) -> list[str]:
    problems = []
    devices = gpu_devices_needed(p.gpus for p in pods)
    if devices > node.gpus:
        problems.append(f"{what}needs {devices} GPUs, node '{node.name}' has {node.gpus}")
    cpus = sum(p.cpus for p in pods)
    if cpus > node.cpus + EPS:
        problems.append(f"{what}needs {cpus:g} CPUs, node '{node.name}' has {node.cpus:g}")
    memory = sum(p.memory_gib for p in pods)
    if memory > node.memory_gib + EPS:
        problems.append(f"{what}needs {memory:g} GiB memory, node '{node.name}' has {node.memory_gib:g}")
    if named and node.resources is not None:
        totals: dict[str, int] = {}
        for pod in pods:
            for name, amount in requested(pod).items():
                totals[name] = totals.get(name, 0) + amount
        for name, total in sorted(totals.items()):
            offered = offered_amount(node, name)
            if offered is not None and total > offered:
                problems.append(f"{what}needs {total} {name}, node '{node.name}' offers {offered}")
    return problems


def anti_affinity_conflicts(pods: Sequence[Pod]) -> list[tuple[str, str, str]]:
    """(group, first pod, second pod) for every pair of different pods sharing a group."""
    first_in_group: dict[str, str] = {}
    conflicts = []
    for pod in pods:
        for group in conflict_groups(pod):
            other = first_in_group.get(group)
            if other is None:
                first_in_group[group] = pod.name
            elif other != pod.name:
                conflicts.append((group, other, pod.name))
    return conflicts


def pods_fit(node: Node, pods: Sequence[Pod], arriving: Sequence[Pod] = ()) -> bool:
    """True when ``pods`` (already there) plus ``arriving`` may all be on ``node`` at once."""
    return not node_rule_breaks(node, pods, arriving)


def node_rule_breaks(node: Node, residents: Sequence[Pod], arriving: Sequence[Pod] = ()) -> list[RuleBreak]:
    """Every node-level rule broken when ``residents`` and ``arriving`` pods share ``node``.

    Residents are pods already on the node (they may stay even if their static rules would not let
    them arrive, e.g. on a cordoned node, or under a taint added after they started, which
    Kubernetes does not evict for NoSchedule); arriving pods must satisfy every rule.
    """
    breaks = []
    everyone = [*residents, *arriving]
    for shortfall in resource_shortfalls(node, everyone):
        breaks.append(RuleBreak(OVER_CAPACITY, node.name, None, shortfall))
    for pod in arriving:
        breaks += static_rule_breaks(pod, node)
    for group, a, b in anti_affinity_conflicts(everyone):
        breaks.append(
            RuleBreak(ANTI_AFFINITY, node.name, b, f"pods '{a}' and '{b}' share group '{group}' on node '{node.name}'")
        )
    return breaks


# ----------------------------------------------------------------------------------------------
# Job topology
# ----------------------------------------------------------------------------------------------


def topology_domain(node: Node, level: str) -> str:
    """The switch a node hangs under at ``level``; a node without one is its own domain."""
    if level == "spine":
        if node.spine is not None:
            return f"spine:{node.spine}"
        return topology_domain(node, "asw")
    if node.asw is not None:
        return f"asw:{node.asw}"
    return f"node:{node.name}"


def gang_need(min_available: int | None, pending: int, running: int) -> int:
    """Pending pods of a job that must start together for it to run: all of them for a gang without
    ``min_available``; else what ``min_available`` still lacks beyond its running pods (running pods
    count towards the minimum; a job already at it needs none, and more of its pods may start)."""
    if min_available is None:
        return pending
    return max(0, min(pending, min_available - running))


def job_topology_ok(job: Job, nodes: Iterable[Node]) -> bool:
    """A ``required`` topology holds when every placed pod of the job is under one domain."""
    if job.topology is None or job.topology.mode != "required":
        return True
    return len({topology_domain(n, job.topology.level) for n in nodes}) <= 1


# ----------------------------------------------------------------------------------------------
# Devices: which GPUs of a node the pods say they hold (``gpu_indexes``)
# ----------------------------------------------------------------------------------------------

DEVICES = "devices"


def device_breaks(node: Node, pods: Sequence[Pod]) -> list[RuleBreak]:
    """Every problem with the devices ``pods`` (on ``node``, in order) say they hold: one index per
    whole GPU (one for a share), distinct and in range; a whole-GPU pod's devices its own; the shares
    on one device summing to at most 1. Pods without ``gpu_indexes`` and standby pods (which lent
    their devices) hold none. A conflict is blamed on the later pod."""
    breaks = []
    whole_holder: dict[int, str] = {}
    share_holders: dict[int, list[Pod]] = {}
    for pod in pods:
        if pod.gpu_indexes is None or pod.standby:
            continue
        wanted = 1 if is_share(pod.gpus) else int(pod.gpus)
        indexes = list(pod.gpu_indexes)
        if len(indexes) != wanted:
            breaks.append(RuleBreak(DEVICES, node.name, pod.name,
                                    f"lists {len(indexes)} devices, the pod requests {pod.gpus:g} GPUs (so {wanted})"))
        if len(set(indexes)) != len(indexes):
            breaks.append(RuleBreak(DEVICES, node.name, pod.name, "a device is listed twice"))
        outside = [g for g in indexes if not 0 <= g < node.gpus]
        if outside:
            breaks.append(RuleBreak(DEVICES, node.name, pod.name,
                                    f"{outside} outside 0..{node.gpus - 1} (node '{node.name}' has {node.gpus} GPUs)"))
        for g in sorted(set(indexes) - set(outside)):
            holder = whole_holder.get(g) or next((q.name for q in share_holders.get(g, ())), None)
            if holder is not None and (not is_share(pod.gpus) or g in whole_holder):
                breaks.append(RuleBreak(DEVICES, node.name, pod.name,
                                        f"GPU {g} of node '{node.name}' is already held by pod '{holder}'; a whole-GPU pod holds its devices alone"))
                continue
            if is_share(pod.gpus):
                shares = share_holders.setdefault(g, [])
                if math.fsum(q.gpus for q in shares) + pod.gpus > 1 + EPS:
                    breaks.append(RuleBreak(DEVICES, node.name, pod.name,
                                            f"the shares on GPU {g} of node '{node.name}' would sum past 1 (with pod '{shares[0].name}')"))
                    continue
                shares.append(pod)
            else:
                whole_holder[g] = pod.name
    return breaks


# ----------------------------------------------------------------------------------------------
# Priority: who may preempt whom
# ----------------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------------
# NUMA alignment (FlexTopo): sockets, domains and where a pod's CPUs come from
# ----------------------------------------------------------------------------------------------

ALIGN_NUMA = "numa"
ALIGN_SOCKET = "socket"
ALIGN_CROSS_SOCKET = "cross-socket"
"""Alignment tiers of a pod's devices, best first: all in one NUMA domain; in one socket; spanning sockets."""
NUMA_GUARANTEED = "numa_guaranteed"


def device_domains(node: Node) -> list[int]:
    """NUMA domain (index into ``node.numa``) of each GPU device; -1 where none is declared."""
    owner = [-1] * node.gpus
    for d, domain in enumerate(node.numa or ()):
        for g in domain.gpu_indexes:
            if 0 <= g < node.gpus:
                owner[g] = d
    return owner


def domain_socket(node: Node, d: int) -> int:
    """The socket of NUMA domain d (a domain without a socket is a socket of its own)."""
    socket = (node.numa or [])[d].socket
    return socket if socket is not None else -1 - d


def attributed_cpus(node: Node, pods: Iterable[Pod]) -> list[float]:
    """CPUs each NUMA domain gives the pods, by the attribution rule: a pod holding devices draws
    its CPUs evenly from its devices' domains (cpus x devices in the domain / devices); pods
    without devices draw from the node as a whole and from no domain."""
    owner = device_domains(node)
    used = [0.0] * len(node.numa or ())
    for pod in pods:
        if not pod.gpu_indexes or pod.standby:
            continue
        each = pod.cpus / len(pod.gpu_indexes)
        for g in pod.gpu_indexes:
            if 0 <= g < len(owner) and owner[g] >= 0:
                used[owner[g]] += each
    return used


def alignment_tier(node: Node, gpu_indexes: Sequence[int]) -> str:
    """How well ``gpu_indexes`` of ``node`` are aligned: one domain, one socket, or across sockets."""
    owner = device_domains(node)
    domains = {owner[g] for g in gpu_indexes}
    if -1 in domains:
        return ALIGN_CROSS_SOCKET
    if len(domains) <= 1:
        return ALIGN_NUMA
    return ALIGN_SOCKET if len({domain_socket(node, d) for d in domains}) == 1 else ALIGN_CROSS_SOCKET


def numa_guaranteed_breaks(node: Node, pod: Pod, gpu_indexes: Sequence[int] | None, others: Sequence[Pod]) -> list[str]:
    """Why ``pod`` on ``gpu_indexes`` of ``node`` is not NUMA-guaranteed next to ``others`` (the
    other pods on the node, with their devices): every device in one socket, and each of its
    devices' domains with room for the CPUs the pod draws from it (``attributed_cpus``)."""
    if not node.numa:
        return [f"node '{node.name}' declares no NUMA domains, so alignment cannot be guaranteed"]
    if pod.gpus >= 1 and not gpu_indexes:
        return [f"pod '{pod.name}' has no gpu_indexes on node '{node.name}'"]
    unknown = [p.name for p in others if p.gpus > 0 and p.gpu_indexes is None and not p.standby]
    if unknown:
        return [f"pods on node '{node.name}' without gpu_indexes ({', '.join(sorted(unknown)[:3])}) make its devices unknown"]
    indexes = list(gpu_indexes or ())
    owner = device_domains(node)
    problems = []
    outside = [g for g in indexes if owner[g] < 0]
    if outside:
        problems.append(f"GPUs {outside} of node '{node.name}' are in no NUMA domain")
    elif alignment_tier(node, indexes) == ALIGN_CROSS_SOCKET:
        problems.append(f"pod '{pod.name}' on GPUs {indexes} of node '{node.name}' spans sockets")
    if indexes and not outside:
        used = attributed_cpus(node, others)
        each = pod.cpus / len(indexes)
        need: dict[int, float] = {}
        for g in indexes:
            need[owner[g]] = need.get(owner[g], 0.0) + each
        for d, cpus in sorted(need.items()):
            domain = node.numa[d]  # type: ignore[index]
            if used[d] + cpus > domain.cpus + EPS:
                problems.append(
                    f"NUMA domain '{domain.name}' of node '{node.name}' has {domain.cpus - used[d]:g} CPUs free, "
                    f"pod '{pod.name}' draws {cpus:g} from it"
                )
    return problems
