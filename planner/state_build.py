"""Building a ``ClusterState``: the static arrays (eligibility per pod signature and node profile,
resources by name, topology domains, each pod's requests), and the sub-states and copies of a state.
``state.py`` keeps the hot methods; this module is run once per state or piece."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from planner import rules
from planner.cluster import Cluster, Node, Pod

PodScalars = tuple[int, float, float, float, tuple[int, ...], "np.ndarray | None", bool]
"""A pod's (whole GPUs, CPUs, memory GiB, GPU share, conflict groups, its required job's domain per node, HP)."""
Reserve = tuple[int, float, float, float]
"""What an HP pod holds awake, kept reserved on its node: (whole GPUs, CPUs, memory GiB, GPU share)."""
MaskEntry = tuple[np.ndarray, int, int, int, "frozenset[int] | None"]
"""A cached capacity mask (``capacity_entry``): the mask, how many nodes pass it, the state's
``version`` and log length it is for, and the domains of the shape's required job then."""
MASK_LOG_LIMIT = 1 << 16
"""Logged changes after which the capacity-mask cache starts afresh (bounds the log's memory)."""
MASK_UPDATE_SHARE = 8
"""A cached mask is updated node by node when at most 1/8 of the nodes changed, else recomputed."""
MASK_SCALAR_NODES = 16
"""Up to this many changed nodes are recomputed one at a time (numpy's cost per call exceeds the rules' scalar checks)."""


class StateArrays:
    """What ``set_pod_requests`` sets on a ``ClusterState`` (each pod's requests; a standby pod's are
    0), and the cluster the state was built from (None in a piece pickled for a worker)."""

    cluster: Cluster | None
    asw_domain: np.ndarray
    spine_domain: np.ndarray
    job_level: np.ndarray
    pod_groups: list[tuple[int, ...]]
    pod_job: np.ndarray
    pod_gpus: np.ndarray
    pod_standby: np.ndarray
    pod_hp: np.ndarray
    has_standby: bool
    pod_whole: np.ndarray
    pod_share: np.ndarray
    pod_cpus: np.ndarray
    pod_mem: np.ndarray
    res_names: list[str]
    cap_res: np.ndarray
    has_named: bool
    pod_res: np.ndarray
    _pod_named: list[tuple[tuple[int, int], ...]]
    _pod_locked_own: np.ndarray
    pod_locked: np.ndarray
    _awake: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # whole, share, CPUs, memory held awake
    _reserve: list[Reserve | None]
    _res_floor: list[int]
    _res_peak: list[int]

    def require_cluster(self) -> Cluster:
        """The snapshot this state was built from; a piece pickled for a worker has none (an error)."""
        if self.cluster is None:
            raise ValueError("this state is a piece pickled without its cluster: read the cluster from the state it came from")
        return self.cluster


class Counts(dict[int, int]):
    """How many per key, 0 when absent: what the state needs of a ``Counter`` (whose constructor is
    slow in Python; pieces of a 37,707-node state built hundreds of thousands of them)."""

    def __missing__(self, key: int) -> int:
        return 0


def set_pod_requests(state: StateArrays, pods: list[Pod]) -> None:
    """Each pod's requests as arrays on ``state`` (a standby pod holds nothing and keeps a reservation)."""
    nodes = state.require_cluster().nodes
    state.pod_gpus = np.array([p.gpus for p in pods], dtype=np.float64)
    # A standby pod holds no resources (it lent them) and never moves; it keeps a reservation
    # (rules.resource_shortfalls): the HP pods of its node, standby ones included, must fit.
    state.pod_standby = np.array([p.standby for p in pods], dtype=bool)
    state.pod_hp = np.array([p.priority == "HP" for p in pods], dtype=bool)
    state.has_standby = bool(state.pod_standby.any())
    holds = ~state.pod_standby
    is_share = (state.pod_gpus > 0) & (state.pod_gpus < 1)
    whole = np.where(is_share, 0, state.pod_gpus).astype(np.int64)
    share = np.where(is_share, state.pod_gpus, 0.0)
    cpus = np.array([p.cpus for p in pods], dtype=np.float64)
    mem = np.array([p.memory_gib for p in pods], dtype=np.float64)
    state.pod_whole = np.where(holds, whole, 0)
    state.pod_share = np.where(holds, share, 0.0)
    state.pod_cpus = np.where(holds, cpus, 0.0)
    state.pod_mem = np.where(holds, mem, 0.0)
    state.res_names, state.cap_res, pod_res = _named_resources(nodes, pods)
    state.has_named = bool(state.res_names)
    state.pod_res = np.where(holds[:, None], pod_res, 0)
    state._pod_named = _named_pairs(state.pod_res)
    state._pod_locked_own = np.array([p.locked for p in pods], dtype=bool)
    state.pod_locked = state._pod_locked_own | state.pod_standby
    state._awake = (whole, share, cpus, mem)  # what each pod holds awake (set_standby)
    state._reserve = (
        [
            (int(w), float(c), float(m), float(sh)) if hp else None
            for w, c, m, sh, hp in zip(whole.tolist(), cpus.tolist(), mem.tolist(), share.tolist(), state.pod_hp.tolist())
        ]
        if state.has_standby
        else []
    )


def pod_scalars(state: StateArrays) -> list[PodScalars]:
    """Per-pod Python scalars for the hot path (numpy element access is slow one at a time)."""
    domain_of_level = {1: state.asw_domain, 2: state.spine_domain}
    return [
        (whole, cpus, mem, share, groups, domain_of_level.get(int(state.job_level[j])) if j >= 0 else None, hp)
        for whole, cpus, mem, share, groups, j, hp in zip(
            state.pod_whole.tolist(),
            state.pod_cpus.tolist(),
            state.pod_mem.tolist(),
            state.pod_share.tolist(),
            state.pod_groups,
            state.pod_job.tolist(),
            state.pod_hp.tolist(),
        )
    ]


def subset_state(state: Any, nodes: np.ndarray) -> Any:  # a ClusterState (Any: state.py imports this module, not back)
    """An independent state over ``nodes`` (indexes of this state) and the pods placed on them.

    Rules that span nodes stay exact: anti-affinity is per node, and a required job's domain
    counts come from this whole state. ``node_ids``/``pod_ids`` map back to the cluster.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    node_list = nodes.tolist()  # Python ints: list lookups by numpy scalars cost several times more
    node_pods = state.node_pods
    pod_list = sorted([p for n in node_list for p in node_pods[n]])
    pods = np.array(pod_list, dtype=np.int64)
    sub = object.__new__(type(state))
    sub._bulk = False
    sub.version = 0
    sub._mask_cache, sub._mask_version = {}, -1
    sub.cluster = state.cluster
    sub.node_ids, sub.pod_ids = state.node_ids[nodes], state.pod_ids[pods]
    node_names, pod_names = state.node_names, state.pod_names
    sub.node_names = [node_names[n] for n in node_list]
    sub.node_index = dict(zip(sub.node_names, range(len(node_list))))
    sub.pod_names = [pod_names[p] for p in pod_list]
    sub.pod_index = dict(zip(sub.pod_names, range(len(pod_list))))
    for field in (
        "cap_gpus",
        "cap_cpus",
        "cap_mem",
        "schedulable",
        "node_model",
        "asw_domain",
        "spine_domain",
        "whole_used",
        "share_devices",
        "share_sum",
        "used_cpus",
        "used_mem",
        "pods_per_node",
        "hp_pods_per_node",
        "standby_on",
        "hp_whole",
        "hp_cpus",
        "hp_mem",
        "cap_res",
        "used_res",
    ):
        setattr(sub, field, getattr(state, field)[nodes].copy())
    sub.res_names, sub.has_named = state.res_names, state.has_named
    sub._res_floor = sub.cap_res.min(axis=0).tolist() if state.has_named and len(nodes) else [0] * len(state.res_names)
    sub._res_peak = sub.used_res.max(axis=0).tolist() if state.has_named and len(nodes) else [0] * len(state.res_names)
    sub._pod_named = [state._pod_named[p] for p in pod_list] if state.has_named else []
    for field in (
        "pod_gpus",
        "pod_whole",
        "pod_share",
        "pod_cpus",
        "pod_mem",
        "pod_locked",
        "pod_res",
        "pod_signature",
        "pod_job",
        "pod_standby",
        "pod_hp",
        "_pod_locked_own",
    ):
        setattr(sub, field, getattr(state, field)[pods].copy())
    whole, share, cpus, mem = state._awake
    sub._awake = (whole[pods], share[pods], cpus[pods], mem[pods])
    sub.has_standby = state.has_standby
    sub._reserve = [state._reserve[p] for p in pod_list] if state.has_standby else []
    sub.hp_shares = defaultdict(list, {k: list(state.hp_shares[n]) for k, n in enumerate(node_list) if state.hp_shares.get(n)})
    sub.eligible = state.eligible[:, nodes]
    pod_groups = state.pod_groups
    sub.pod_groups = [pod_groups[p] for p in pod_list]
    sub.group_names = []  # names are for reading the full state; a piece (sent to a worker) needs only the indexes
    sub.group_nodes = defaultdict(Counts)  # filled below from the piece's own pods (all pods of its nodes)
    sub.job_level = state.job_level
    sub.job_domains = defaultdict(Counts)
    for j in set(sub.pod_job.tolist()) - {-1}:
        if state.job_level[j] and j in state.job_domains:  # only required jobs keep domain counts
            sub.job_domains[j] = Counts(state.job_domains[j])
    sub.node_shares = defaultdict(list, {k: list(state.node_shares[n]) for k, n in enumerate(node_list) if state.node_shares.get(n)})
    sub.node_pods = [set() for _ in nodes]
    sub.node_stamp = [0] * len(nodes)
    position = np.empty(len(state.node_names), dtype=np.int64)  # a node's index in the piece
    position[nodes] = np.arange(len(nodes))
    sub.pod_node = position[state.pod_node[pods]]
    sub._pod_scalars = pod_scalars(sub)
    group_nodes, sub_node_pods = sub.group_nodes, sub.node_pods
    for k, (n, groups) in enumerate(zip(sub.pod_node.tolist(), sub.pod_groups)):
        sub_node_pods[n].add(k)
        for g in groups:
            group_nodes[g][n] += 1
    return sub


def place_all(state: Any, pods: np.ndarray, nodes: np.ndarray) -> None:  # a ClusterState (Any: as subset_state)
    """Place pod ``pods[i]`` on node ``nodes[i]``, in that order, on a state with nothing placed: what
    ``state.place`` does pod by pod, with the sums on arrays. ``np.add.at`` adds in index order, so
    every float sum is the one the pod-by-pod additions make; the shares are packed by the caller.
    A state with standby pods takes the pod-by-pod path (their reservations are kept per pod)."""
    if state.has_standby or len(pods) == 0:
        state._bulk = True
        for p, n in zip(pods.tolist(), nodes.tolist()):
            state.place(p, n)
        state._bulk = False
        return
    n_nodes = len(state.node_names)
    state.pod_node[pods] = nodes
    np.add.at(state.whole_used, nodes, state.pod_whole[pods])
    np.add.at(state.used_cpus, nodes, state.pod_cpus[pods])
    np.add.at(state.used_mem, nodes, state.pod_mem[pods])
    if state.has_named:
        np.add.at(state.used_res, nodes, state.pod_res[pods])
        state._res_peak = [max(0, int(v)) for v in state.used_res.max(axis=0).tolist()] if n_nodes else state._res_peak
    state.pods_per_node += np.bincount(nodes, minlength=n_nodes)
    hp = state.pod_hp[pods]
    state.hp_pods_per_node += np.bincount(nodes[hp], minlength=n_nodes)
    node_pods, node_stamp, node_shares, scalars = state.node_pods, state.node_stamp, state.node_shares, state._pod_scalars
    group_nodes, job_domains, pod_job = state.group_nodes, state.job_domains, state.pod_job
    version = state.version
    for p, n in zip(pods.tolist(), nodes.tolist()):
        version += 1
        node_pods[n].add(p)
        node_stamp[n] = version
        _, _, _, share, groups, domain, _ = scalars[p]
        if share:
            node_shares[n].append(share)
        for g in groups:
            group_nodes[g][n] += 1
        if domain is not None:
            job_domains[int(pod_job[p])][int(domain[n])] += 1
    state.version = version


def clone_state(state: Any) -> Any:  # a ClusterState (Any: as subset_state)
    """An independent copy (the pydantic cluster and static arrays are shared, not copied)."""
    twin = object.__new__(type(state))
    twin.__dict__.update(state.__dict__)
    twin._mask_cache, twin._mask_version = {}, -1
    for field in (
        "whole_used",
        "share_devices",
        "share_sum",
        "used_cpus",
        "used_mem",
        "pods_per_node",
        "hp_pods_per_node",
        "pod_node",
        "standby_on",
        "hp_whole",
        "hp_cpus",
        "hp_mem",
        "used_res",
    ):
        setattr(twin, field, getattr(state, field).copy())
    twin._res_peak = list(state._res_peak)
    twin.hp_shares = defaultdict(list, {n: list(s) for n, s in state.hp_shares.items() if s})
    twin.node_shares = defaultdict(list, {n: list(s) for n, s in state.node_shares.items() if s})
    twin.node_pods = [set(s) for s in state.node_pods]
    twin.node_stamp = list(state.node_stamp)
    twin.group_nodes = defaultdict(Counts, {g: Counts(c) for g, c in state.group_nodes.items()})
    twin.job_domains = defaultdict(Counts, {j: Counts(c) for j, c in state.job_domains.items()})
    return twin


def _domain_ids(nodes: list[Node], level: str) -> np.ndarray:
    ids: dict[str, int] = {}
    return np.array([ids.setdefault(rules.topology_domain(n, level), len(ids)) for n in nodes], dtype=np.int64)


def _eligibility(nodes: list[Node], pods: list[Pod]) -> tuple[np.ndarray, np.ndarray]:
    """Per pod a signature id; per signature a mask of nodes its static rules allow.

    ``rules.may_arrive`` is ``may_receive`` and the checks of ``rules.STATIC_CHECKS``, each reading
    one field of the pod (one part of the signature): each check runs once per distinct value of its
    part and node profile, and a signature's mask is the conjunction of its parts' rows."""
    signatures: dict[tuple[object, ...], int] = {}
    pod_signature = np.empty(len(pods), dtype=np.int64)
    representative: list[Pod] = []
    for p, pod in enumerate(pods):
        key = _pod_signature_key(pod)
        if key not in signatures:
            signatures[key] = len(signatures)
            representative.append(pod)
        pod_signature[p] = signatures[key]
    profiles: dict[tuple[object, ...], int] = {}
    node_profile = np.empty(len(nodes), dtype=np.int64)
    profile_node: list[Node] = []
    read = _labels_read(representative)
    for n, node in enumerate(nodes):
        key = _node_profile_key(node, read)
        if key not in profiles:
            profiles[key] = len(profiles)
            profile_node.append(node)
        node_profile[n] = profiles[key]
    by_profile = np.ones((len(representative), len(profile_node)), dtype=bool)
    by_profile &= np.array([rules.may_receive(node) for node in profile_node], dtype=bool)
    for part, check in enumerate(rules.STATIC_CHECKS):
        values: dict[object, int] = {}
        first: list[Pod] = []
        row = np.empty(len(representative), dtype=np.int64)
        for s, key in enumerate(signatures):
            if key[part] not in values:
                values[key[part]] = len(values)
                first.append(representative[s])
            row[s] = values[key[part]]
        if check is rules.selector_matches:
            allowed = _selectors_match(first, profile_node)
        else:
            allowed = np.array([[check(pod, node) for node in profile_node] for pod in first], dtype=bool).reshape(len(first), len(profile_node))
        by_profile &= allowed[row]
    return pod_signature, by_profile[:, node_profile]


def _selectors_match(pods: list[Pod], nodes: list[Node]) -> np.ndarray:
    """``rules.selector_matches`` of each pod on each node: a selector holds where every one of its
    (key, value) pairs is a label of the node, so each pair is looked up once, not once per pod."""
    pair_rows: dict[tuple[str, str], np.ndarray] = {}
    allowed = np.ones((len(pods), len(nodes)), dtype=bool)
    for k, pod in enumerate(pods):
        for pair in pod.node_selector.items():
            if pair not in pair_rows:
                key, value = pair
                pair_rows[pair] = np.array([node.labels.get(key) == value for node in nodes], dtype=bool)
            allowed[k] &= pair_rows[pair]
    return allowed


UNLISTED = np.iinfo(np.int64).max // 4
"""The capacity of a named resource on a node that does not list its resources: unlimited."""


def _named_resources(nodes: list[Node], pods: list[Pod]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The named resources some pod charges a node that lists its resources (``rules.requested``),
    with each node's allocatable (``UNLISTED`` where the node lists none) and each pod's request."""
    if all(node.resources is None for node in nodes):
        return [], np.zeros((len(nodes), 0), dtype=np.int64), np.zeros((len(pods), 0), dtype=np.int64)
    asked = [rules.requested(pod) for pod in pods]
    names = sorted({name for ask in asked for name, amount in ask.items() if amount > 0})
    column = {name: r for r, name in enumerate(names)}
    cap = np.array([[_unlisted_as_unlimited(rules.offered_amount(node, name)) for name in names] for node in nodes], dtype=np.int64).reshape(
        len(nodes), len(names)
    )
    req = np.zeros((len(pods), len(names)), dtype=np.int64)
    for p, ask in enumerate(asked):
        for name, amount in ask.items():
            if amount > 0:
                req[p, column[name]] = amount
    return names, cap, req


def _named_pairs(requests: np.ndarray) -> list[tuple[tuple[int, int], ...]]:
    """Each pod's named requests as (column, amount) pairs: the hot path reads a few elements, not rows."""
    pairs: list[list[tuple[int, int]]] = [[] for _ in range(requests.shape[0])]
    rows, columns = np.nonzero(requests)
    for p, r, amount in zip(rows.tolist(), columns.tolist(), requests[rows, columns].tolist()):
        pairs[p].append((r, amount))
    return [tuple(x) for x in pairs]


def _unlisted_as_unlimited(amount: int | None) -> int:
    return UNLISTED if amount is None else amount


def _pod_signature_key(pod: Pod) -> tuple[object, ...]:
    """What the static rules read of a pod, one part per check of ``rules.STATIC_CHECKS`` (in that
    order): pods with equal keys are eligible on the same nodes."""
    tolerations = tuple(sorted((t.key, t.operator, t.value, t.effect) for t in pod.tolerations))
    affinity = (
        None if pod.node_affinity is None else tuple(tuple(sorted((r.key, r.operator, tuple(sorted(r.values))) for r in term)) for term in pod.node_affinity)
    )
    requests = tuple(sorted(name for name, amount in pod.requests.items() if amount > 0))
    return (tuple(sorted(pod.gpu_models)), tuple(sorted(pod.node_selector.items())), tolerations, affinity, requests)


def _labels_read(pods: list[Pod]) -> frozenset[str]:
    """The node labels some pod's selector or required node affinity reads (a hostname label no
    pod selects on would otherwise make every node a profile of its own)."""
    keys = {key for pod in pods for key in pod.node_selector}
    keys.update(r.key for pod in pods if pod.node_affinity for term in pod.node_affinity for r in term)
    return frozenset(keys)


def _node_profile_key(node: Node, read: frozenset[str]) -> tuple[object, ...]:
    """What the static rules read of a node: nodes with equal keys admit the same pods."""
    taints = tuple(sorted((t.key, t.value, t.effect) for t in node.taints))
    offered = None if node.resources is None else tuple(sorted(name for name, amount in node.resources.items() if amount > 0))
    labels = tuple(sorted((k, v) for k, v in node.labels.items() if k in read))
    return (node.gpu_model, labels, node.schedulable, taints, offered)


def capacity_entry(state: Any, p: int) -> tuple[np.ndarray, bool]:  # a ClusterState (Any: as subset_state)
    """``state._capacity_mask(p)`` over every node and whether any node passes it, kept per shape
    (``_shape_key``) across changes: after moves only the nodes they changed are recomputed (the
    state's ``_mask_log`` holds each change's node while the cache holds masks), unless they are many,
    or the ``version`` moved by more than the log (a change not logged), or the domains of p's
    required job changed (the mask reads them for every node). A few nodes are recomputed one by one
    with the rules' scalar forms (``_capacity_node``), more as arrays. A mask returned is never
    changed afterwards: an update writes a copy. The same masks as a fresh computation
    (tests/property/test_state_masks.py)."""
    s = state
    if s._mask_version < 0 or len(s._mask_log) > MASK_LOG_LIMIT:
        s._mask_cache.clear()
        s._mask_log, s._mask_version = [], 0
    key = s._shape_key(p)
    entry: MaskEntry | None = s._mask_cache.get(key)
    j = int(s.pod_job[p])
    domains = frozenset(s.job_domains[j]) if j >= 0 and s.job_level[j] else None
    if entry is not None and entry[2] != s.version:
        mask, passing, version, logged, was = entry
        changed = s._mask_log[logged:]
        entry = None
        if s.version - version == len(changed) and len(changed) <= max(len(s.node_names) // MASK_UPDATE_SHARE, 1) and domains == was:
            nodes = sorted(set(changed))
            mask = mask.copy()
            if len(nodes) <= MASK_SCALAR_NODES and not s._pod_scalars[p][3]:
                for n in nodes:
                    now = _capacity_node(s, p, n)
                    if now != mask[n]:
                        passing += 1 if now else -1
                        mask[n] = now
            else:
                at = np.array(nodes, dtype=np.int64)
                new = s._capacity_mask(p, at)
                passing += int(new.sum()) - int(mask[at].sum())
                mask[at] = new
            entry = (mask, passing, s.version, len(s._mask_log), domains)
    if entry is None:
        mask = s._capacity_mask(p, slice(None))
        entry = (mask, int(mask.sum()), s.version, len(s._mask_log), domains)
    s._mask_cache[key] = entry
    return entry[0], entry[1] > 0


def _capacity_node(state: Any, p: int, n: int) -> bool:
    """``_capacity_mask(p)`` at node n for a pod without a GPU share: its static rules, resources
    (with the reservations) and job domain, as ``fits`` checks them (conflicts and p's own node
    left out, as the mask leaves them)."""
    return bool(state.eligible[state.pod_signature[p], n]) and state._resources_fit(p, n, ()) and state._topology_ok(p, n)
