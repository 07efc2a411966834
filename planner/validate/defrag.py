"""The defrag plan validator: replay a plan wave by wave on a copy of the cluster and check every rule at every step.

Semantics are make-before-break: during wave w each moving pod has two copies, the old one on its
source and the new one on its destination. So every destination must fit its current pods plus every
pod arriving in that wave, and anti-affinity and job topology must hold with both copies present.
Sources are released after the wave. ``validate`` returns typed violations; an empty list means the
plan is executable as written. Given the ``MoveLimits`` a plan was asked for, it also checks them
(``limit_violations``): the plan's moves, the moves touching each node, and moves across switches.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from planner import rules
from planner.cluster import Cluster, Pod
from planner.limits import MoveLimits, namespace_limits, unavailable_limits
from planner.metrics import summary
from planner.plans import AllocationPlan, DefragPlan
from planner.validate.allocate import validate_allocate
from planner.validate.violation import Violation

# Violation kinds beyond the rule names of rules.py
UNKNOWN_POD = "unknown_pod"
UNKNOWN_NODE = "unknown_node"
LOCKED_POD_MOVED = "locked_pod_moved"
PENDING_POD_MOVED = "pending_pod_moved"
WRONG_SOURCE = "wrong_source"
SAME_SOURCE_AND_DESTINATION = "same_source_and_destination"
MOVED_TWICE_IN_WAVE = "moved_twice_in_wave"
VACATED_NODES_MISMATCH = "vacated_nodes_mismatch"
METRICS_MISMATCH = "metrics_mismatch"
ROUNDING_TOLERANCE = 1.5e-6
"""Claimed and replayed metrics agree when within one unit of their 6-decimal rounding."""
# Violations of the limits a plan was asked for
MAX_MOVES = "max_moves"
MAX_MOVES_PER_NODE = "max_moves_per_node"
MAX_MOVES_PER_WAVE = "max_moves_per_wave"
MAX_NODES_PER_WAVE = "max_nodes_per_wave"
MAX_MOVES_PER_NODE_PER_WAVE = "max_moves_per_node_per_wave"
MAX_MOVES_PER_NAMESPACE = "max_moves_per_namespace"
MAX_UNAVAILABLE = "max_unavailable"
OUT_OF_SCOPE = "namespace_out_of_scope"
MOVED_TWICE = "moved_twice"
CROSS_ASW = "same_asw"


def validate(cluster: Cluster, plan: DefragPlan, limits: MoveLimits | None = None) -> list[Violation]:
    """All violations of ``plan`` on ``cluster`` (empty when the plan is executable and, given
    ``limits``, within them)."""
    violations, end_state = _replay(cluster, plan)
    violations += _end_state_violations(cluster, plan, end_state)
    violations += placement_violations(end_state, plan)
    if limits is not None:
        violations += limit_violations(cluster, plan, limits)
    return violations


def limit_violations(cluster: Cluster, plan: DefragPlan, limits: MoveLimits) -> list[Violation]:
    """Where ``plan`` exceeds ``max_moves`` or ``max_moves_per_node``, or moves a pod across switches."""
    violations = []
    moves = plan.moves()
    if limits.max_moves is not None and len(moves) > limits.max_moves:
        violations.append(Violation(MAX_MOVES, f"the plan has {len(moves)} moves; max_moves is {limits.max_moves}"))
    if limits.max_moves_per_node is not None:
        touches: dict[str, int] = defaultdict(int)
        for move in moves:
            touches[move.from_] += 1
            touches[move.to] += 1
        for name, count in sorted(touches.items()):
            if count > limits.max_moves_per_node:
                violations.append(
                    Violation(
                        MAX_MOVES_PER_NODE,
                        f"{count} moves touch node '{name}'; max_moves_per_node is {limits.max_moves_per_node}",
                        node=name,
                    )
                )
    violations += _wave_limit_violations(plan, limits, unavailable_limits(cluster, limits.max_unavailable_per_job))
    violations += _group_violations(
        plan, namespace_limits(cluster, limits.max_moves_per_namespace), MAX_MOVES_PER_NAMESPACE, "namespace", "max_moves_per_namespace is {}"
    )
    pods = {p.name: p for p in cluster.pods}
    seen: set[str] = set()
    for w, wave in enumerate(plan.waves):
        for i, move in enumerate(wave):
            if limits.move_once and move.pod in seen:
                violations.append(Violation(MOVED_TWICE, f"pod '{move.pod}' moves again; move_once allows one move per pod", w, i, move.pod))
            seen.add(move.pod)
            if move.pod in pods and not limits.may_move(pods[move.pod]):
                namespace = pods[move.pod].namespace or "default"
                violations.append(
                    Violation(OUT_OF_SCOPE, f"pod '{move.pod}' of namespace '{namespace}' moves; the plan's namespace scope holds it", w, i, move.pod)
                )
    if limits.same_asw:
        nodes = {n.name: n for n in cluster.nodes}
        for w, wave in enumerate(plan.waves):
            for i, move in enumerate(wave):
                if move.from_ not in nodes or move.to not in nodes:
                    continue  # reported as unknown_node by the replay
                a, b = (rules.topology_domain(nodes[name], "asw") for name in (move.from_, move.to))
                if a != b:
                    violations.append(Violation(CROSS_ASW, f"pod '{move.pod}' moves from {a} to {b} under same_asw", w, i, move.pod, move.to))
    return violations


def _wave_limit_violations(plan: DefragPlan, limits: MoveLimits, job_limits: dict[str, tuple[str, int]]) -> list[Violation]:
    """Waves with more moves, more nodes touched, more moves touching one node, or more pods of one
    job than allowed."""
    violations = _group_violations(plan, job_limits, MAX_UNAVAILABLE, "job", "its disruption budget allows {}")
    for w, wave in enumerate(plan.waves):
        touches: dict[str, int] = defaultdict(int)
        for move in wave:
            touches[move.from_] += 1
            touches[move.to] += 1
        if limits.max_moves_per_wave is not None and len(wave) > limits.max_moves_per_wave:
            violations.append(Violation(MAX_MOVES_PER_WAVE, f"wave {w} has {len(wave)} moves; max_moves_per_wave is {limits.max_moves_per_wave}", w))
        if limits.max_nodes_per_wave is not None and len(touches) > limits.max_nodes_per_wave:
            violations.append(Violation(MAX_NODES_PER_WAVE, f"wave {w} touches {len(touches)} nodes; max_nodes_per_wave is {limits.max_nodes_per_wave}", w))
        if limits.max_moves_per_node_per_wave is not None:
            for name, count in sorted(touches.items()):
                if count > limits.max_moves_per_node_per_wave:
                    violations.append(
                        Violation(
                            MAX_MOVES_PER_NODE_PER_WAVE,
                            f"{count} moves of wave {w} touch node '{name}'; max_moves_per_node_per_wave is {limits.max_moves_per_node_per_wave}",
                            w,
                            node=name,
                        )
                    )
    return violations


def _group_violations(plan: DefragPlan, limit_of: dict[str, tuple[str, int]], kind: str, what: str, allows: str) -> list[Violation]:
    """Waves moving more pods of one group (a job, a namespace) than its limit; ``limit_of``: per pod,
    (its group, the group's limit)."""
    violations = []
    limits = dict(limit_of.values())
    for w, wave in enumerate(plan.waves):
        per_group = Counter(limit_of[move.pod][0] for move in wave if move.pod in limit_of)
        for group, count in sorted(per_group.items()):
            if count > limits[group]:
                violations.append(Violation(kind, f"{count} pods of {what} '{group}' move in wave {w}; {allows.format(limits[group])}", w))
    return violations


UNPLACED_WRONG = "unplaced_mismatch"


def placement_violations(end_state: Cluster, plan: DefragPlan) -> list[Violation]:
    """A make-room plan's ``placements`` checked on the state after its last wave with the allocation
    validator (the same node rules, gangs whole, ``required`` jobs under one switch; a pending pod of
    no job is a gang of one); ``unplaced`` may name only pending jobs or lone pods it does not place."""
    if not plan.placements and not plan.unplaced:
        return []
    violations = validate_allocate(end_state, AllocationPlan(placements=plan.placements), lone_pods=True)
    placed = {p.pod for p in plan.placements}
    pending_jobs = {p.job for p in end_state.pods if p.node is None and p.job is not None}
    lone = {p.name for p in end_state.pods if p.node is None and p.job is None}
    placed_jobs = {p.job for p in end_state.pods if p.name in placed and p.job is not None}
    for k, item in enumerate(plan.unplaced):
        if item.job not in pending_jobs and item.job not in lone:
            violations.append(Violation(UNPLACED_WRONG, f"unplaced[{k}]: '{item.job}' is neither a pending job nor a pending pod without a job"))
        elif item.job in placed_jobs or item.job in placed:
            violations.append(Violation(UNPLACED_WRONG, f"unplaced[{k}]: '{item.job}' is placed by this plan"))
    return violations


def apply_plan(cluster: Cluster, plan: DefragPlan) -> Cluster:
    """The cluster after every move of the plan (moves are applied even where they break rules)."""
    _, end_state = _replay(cluster, plan)
    return end_state


def vacated_nodes(before: Cluster, after: Cluster) -> list[str]:
    """Nodes that hold pods in ``before`` and none in ``after``, in node order."""
    busy_before = {p.node for p in before.pods if p.node is not None}
    busy_after = {p.node for p in after.pods if p.node is not None}
    return [n.name for n in before.nodes if n.name in busy_before and n.name not in busy_after]


def _replay(cluster: Cluster, plan: DefragPlan) -> tuple[list[Violation], Cluster]:
    nodes = {n.name: n for n in cluster.nodes}
    pods = {p.name: p for p in cluster.pods}
    location: dict[str, str | None] = {p.name: p.node for p in cluster.pods}
    residents: dict[str, set[str]] = defaultdict(set)
    for pod in cluster.pods:
        if pod.node is not None:
            residents[pod.node].add(pod.name)
    jobs = {j.name: j for j in cluster.jobs}
    job_pods: dict[str, list[str]] = defaultdict(list)
    for pod in cluster.pods:
        if pod.job is not None:
            job_pods[pod.job].append(pod.name)

    violations: list[Violation] = []
    for w, wave in enumerate(plan.waves):
        moving: dict[str, str] = {}  # pod -> destination, for the moves that can be replayed
        for i, move in enumerate(wave):
            problem = _move_problem(move.pod, move.from_, move.to, pods, nodes, location, moving)
            if problem is not None:
                kind, message = problem
                violations.append(Violation(kind, message, w, i, move.pod, move.to))
                if kind not in (LOCKED_POD_MOVED,):
                    continue
            moving[move.pod] = move.to

        arrivals: dict[str, list[Pod]] = defaultdict(list)
        for pod_name, destination in moving.items():
            arrivals[destination].append(pods[pod_name])
        for node_name, arriving in arrivals.items():
            node = nodes[node_name]
            arriving_names = {p.name for p in arriving}
            here = [pods[name] for name in sorted(residents[node_name])]
            for brk in rules.node_rule_breaks(node, here, arriving):
                if brk.rule == rules.ANTI_AFFINITY and brk.pod not in arriving_names:
                    continue  # a conflict among residents alone was reported when it arose
                violations.append(Violation(brk.rule, f"during wave {w}: {brk.detail}", w, None, brk.pod, node_name))

        touched_jobs = sorted({owner for name in moving if (owner := pods[name].job) is not None and owner in jobs})
        for job_name in touched_jobs:
            job = jobs[job_name]
            copies = [where for name in job_pods[job_name] if (where := location[name]) is not None]
            copies += [moving[name] for name in job_pods[job_name] if name in moving]
            if not rules.job_topology_ok(job, [nodes[n] for n in copies]):
                level = job.topology.level if job.topology else ""
                spanned = sorted({rules.topology_domain(nodes[n], level) for n in copies})
                violations.append(
                    Violation(
                        rules.JOB_TOPOLOGY,
                        f"during wave {w}: job '{job_name}' requires one {level} but its pods (old and new copies) span {', '.join(spanned)}",
                        w,
                    )
                )

        for pod_name, destination in moving.items():
            source = location[pod_name]
            if source is not None:  # a moving pod is placed (residents is a defaultdict: None would find nothing)
                residents[source].discard(pod_name)
            residents[destination].add(pod_name)
            location[pod_name] = destination

    # pods that end where they started are shared with ``cluster`` (neither is mutated), the others copied
    end_state = cluster.model_copy(
        update={"pods": [p if location[p.name] == p.node else p.model_copy(update={"node": location[p.name]}) for p in cluster.pods]}
    )
    return violations, end_state


def _move_problem(
    pod_name: str,
    source: str,
    destination: str,
    pods: dict[str, Pod],
    nodes: dict[str, Any],
    location: dict[str, str | None],
    moving: dict[str, str],
) -> tuple[str, str] | None:
    """Why one move cannot be replayed as written (None when it can)."""
    if pod_name not in pods:
        return UNKNOWN_POD, f"unknown pod '{pod_name}'"
    if pod_name in moving:
        return MOVED_TWICE_IN_WAVE, f"pod '{pod_name}' is moved twice in one wave"
    for field, name in (("from", source), ("to", destination)):
        if name not in nodes:
            return UNKNOWN_NODE, f"'{field}' names unknown node '{name}'"
    current = location[pod_name]
    if current is None:
        return PENDING_POD_MOVED, f"pod '{pod_name}' is pending; only running pods migrate"
    if source != current:
        return WRONG_SOURCE, f"pod '{pod_name}' is on node '{current}' at this wave, not on '{source}'"
    if destination == source:
        return SAME_SOURCE_AND_DESTINATION, f"pod '{pod_name}' is moved from '{source}' to itself"
    if pods[pod_name].locked:
        return LOCKED_POD_MOVED, f"pod '{pod_name}' is locked and may not move"
    return None


def _end_state_violations(cluster: Cluster, plan: DefragPlan, end_state: Cluster) -> list[Violation]:
    violations = []
    actual = vacated_nodes(cluster, end_state)
    claimed = set(plan.vacated_nodes)
    missing = [n for n in actual if n not in claimed]
    extra = sorted(claimed - set(actual))
    if missing or extra or len(plan.vacated_nodes) != len(claimed):
        parts = []
        if missing:
            parts.append(f"not listed but vacated: {', '.join(missing)}")
        if extra:
            parts.append(f"listed but not vacated: {', '.join(extra)}")
        if len(plan.vacated_nodes) != len(claimed):
            parts.append("a node is listed twice")
        violations.append(Violation(VACATED_NODES_MISMATCH, "vacated_nodes disagrees with the replay: " + "; ".join(parts)))
    if plan.metrics is not None and plan.metrics.after:
        for key, claimed_value, actual_value in _differences(plan.metrics.after, summary(end_state)):
            violations.append(Violation(METRICS_MISMATCH, f"metrics.after.{key} is {claimed_value!r}, the replay gives {actual_value!r}"))
    return violations


def _differences(claimed: dict[str, Any], actual: dict[str, Any], prefix: str = "") -> list[tuple[str, Any, Any]]:
    """Keys of ``claimed`` whose values disagree with ``actual`` (keys ``actual`` lacks are not checked)."""
    out = []
    for key, value in claimed.items():
        if key not in actual:
            continue
        truth = actual[key]
        if isinstance(value, dict) and isinstance(truth, dict):
            out += _differences(value, truth, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and isinstance(truth, (int, float)) and not isinstance(value, bool):
            # metrics are rounded to 6 decimals: equal quantities may round one unit apart, never more
            if not math.isclose(value, truth, rel_tol=1e-9, abs_tol=ROUNDING_TOLERANCE):
                out.append((prefix + key, value, truth))
        elif value != truth:
            out.append((prefix + key, value, truth))
    return out
