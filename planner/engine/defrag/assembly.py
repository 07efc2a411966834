"""Finishing a defrag plan: waves moved once and shaped by the per-wave limits, the plan and its
metrics, the report (with the bounds, lost work and a reason when nothing moved), validated; an
invalid plan raises ``PlanBug``."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from planner import metrics
from planner.capacity import large_request_counts
from planner.cluster import Cluster
from planner.engine.common import PlanBug, lost_work
from planner.engine.defrag.methods import _moved_once
from planner.engine.defrag.options import DefragOptions
from planner.limits import namespace_limits, unavailable_limits
from planner.models.defrag_bound import EmptiesBound
from planner.plans import DefragPlan, Move, PlanMetrics, SolveReport, Unplaced
from planner.state import ClusterState
from planner.validate.defrag import validate
from planner.waves import Step, shape_waves


def _finish(
    cluster: Cluster,
    state: ClusterState,
    steps: list[list[Step]],
    before: dict[str, Any],
    options: DefragOptions,
    name: str,
    start: float,
    extra: dict[str, Any],
    solver_fields: dict[str, Any],
    pristine: ClusterState,
    made: Any = None,
    relaxed: EmptiesBound | None = None,
) -> DefragPlan:
    """The plan from waves (``state`` is already the end state), with metrics and report, validated;
    ``made`` (an ``engine.makeroom.MadeRoom``) adds a make-room plan's placements; ``relaxed``, the
    combinatorial bound on empty nodes (``defrag_bound.py``), is reported when no solver proved a
    smaller one."""
    scope = options.scope_nodes(cluster)
    limits = options.limits(scope)
    if limits.move_once:
        steps, state = _moved_once(pristine, state, steps, limits, extra, keep_prefix=made is None)
        if made is not None and extra.get("move_once_dropped"):
            _unplace_what_no_longer_fits(cluster, state, made)
    by_name = unavailable_limits(cluster, limits.max_unavailable_per_job)
    extra = {**extra, "limits": limits_report(cluster, options, scope)}
    job_limits = {state.pod_index[name]: limit for name, limit in by_name.items()}
    ns_limits = {state.pod_index[name]: limit for name, limit in namespace_limits(cluster, limits.max_moves_per_namespace).items()}
    nonempty = [wave for wave in steps if wave]
    steps = shape_waves(nonempty, limits, job_limits, ns_limits)
    if len(steps) != len(nonempty):
        extra = {**extra, "waves_before_wave_limits": len(nonempty)}
    plan = _assemble(cluster, state, steps, before)
    assert plan.metrics is not None  # _assemble measures every plan
    if made is not None:
        plan.placements, plan.unplaced = made.placements, made.unplaced
        plan.metrics.per_job = made.per_job
    moves = plan.moves()
    pods = {p.name: p for p in cluster.pods}
    extra = {**extra, **lost_work(cluster, [pods[name] for name in dict.fromkeys(m.pod for m in moves)])}
    objective = plan.metrics.after["empty_nodes"]
    if "claims" in solver_fields:  # proofs read against the plan returned, after every change made to it above
        proven, claimed = solver_fields["claims"](int(objective), steps)
        solver_fields = {**{k: v for k, v in solver_fields.items() if k != "claims"}, **proven}
        extra = {**extra, **claimed}
    bound = solver_fields.get("bound")
    if bound is not None:
        extra = {**extra, "bound_source": "solver"}
    if relaxed is not None:
        if relaxed.bound < objective:
            raise PlanBug(f"the relaxation bound {relaxed.bound} is below the {objective} empty nodes {name} reached")
        parts = {"bound": relaxed.bound, "capacity": relaxed.capacity_bound, "budget": relaxed.budget_bound, "binding": relaxed.binding}
        extra = {**extra, "relaxation_bound": {**parts, "method": relaxed.method, "class_lp": relaxed.class_lp}}
        if bound is None or relaxed.bound < bound:
            bound, extra = relaxed.bound, {**extra, "bound_source": "relaxation", "bound_method": relaxed.method}
        if relaxed.note:
            extra = {**extra, "bound_note": relaxed.note}
    if bound is not None and "bound_method" not in extra:
        extra = {**extra, "bound_method": "solver"}
    gap = None if bound is None else round((bound - objective) / max(bound, 1), 6)
    plan.report = SolveReport(
        method=name,
        solver=solver_fields.get("solver"),
        status=solver_fields.get("status", "heuristic"),
        objective=objective,
        bound=bound,
        gap=gap,
        wall_s=round(time.perf_counter() - start, 3),
        seed=options.seed,
        moves=len(moves),
        gpus_moved=round(sum(pods[m.pod].gpus for m in moves), 6),
        waves=len(plan.waves),
        vacated_nodes=len(plan.vacated_nodes),
        **extra,
        **({} if moves or "reason" in extra else {"reason": why_nothing_moved(state, options, extra, solver_fields.get("status"))}),
    )
    violations = validate(cluster, plan, limits)
    if violations:
        raise PlanBug(f"{name} produced an invalid plan: " + "; ".join(map(str, violations[:5])))
    plan.report.wall_s = round(time.perf_counter() - start, 3)
    return plan


def limits_report(cluster: Cluster, options: DefragOptions, scope: int) -> dict[str, dict[str, Any]]:
    """The limits in force (``DefragOptions.limits_in_force``) and, when jobs of the snapshot have
    their own disruption budgets (PodDisruptionBudgets), how many: those always cap a wave."""
    limits = options.limits_in_force(scope)
    budgets = sum(1 for job in cluster.jobs if job.disruption is not None)
    if budgets:
        limits["disruption_budgets"] = {
            "value": budgets,
            "source": "snapshot",
            "rule": f"{budgets:,} job(s) with disruption.max_unavailable (a PodDisruptionBudget)",
        }
    return limits


def _unplace_what_no_longer_fits(cluster: Cluster, state: ClusterState, made: Any) -> None:
    """After moves were dropped, a named job whose placements no longer all fit on the end state is
    reported unplaced (whole jobs, in the order placed; ``state`` is left as found)."""
    job_of = {pod.name: pod.job or pod.name for pod in cluster.pods}
    by_job: dict[str, list[Any]] = {}
    for placement in made.placements:
        by_job.setdefault(job_of[placement.pod], []).append(placement)
    kept, started = [], []
    for name, placements in by_job.items():
        done = []
        for placement in placements:
            q, n = state.pod_index[placement.pod], state.node_index[placement.node]
            if not state.fits(q, n):
                break
            state.place(q, n)
            done.append(q)
        if len(done) == len(placements):
            kept += placements
            started += done
            continue
        for q in done:
            state.unplace(q)
        reason = "move_once: a move it needed would move a pod twice and was dropped; plan again with move_once off"
        made.unplaced.append(Unplaced(job=name, reason=reason))
        made.per_job[name] = {"placed": False, "reason": reason}
    for q in started:
        state.unplace(q)
    made.placements = kept


def _assemble(cluster: Cluster, state: ClusterState, steps: list[list[Step]], before: dict[str, Any]) -> DefragPlan:
    """Plan from waves of index triples; ``state`` is already the end state."""
    nodes = [n.name for n in cluster.nodes]
    pods = [p.name for p in cluster.pods]
    uids: list[str | None] = [p.uid for p in cluster.pods]  # recorded on each pod's first move only
    waves = [[Move(pod=pods[p], **{"from": nodes[s]}, to=nodes[d], uid=_first(uids, p)) for p, s, d in wave] for wave in steps if wave]
    after = metrics.summary(state)
    if "large_requests" in before:  # the same shapes as before the plan
        after["large_requests"] = large_request_counts(state, [metrics.parse_shape(text) for text in before["large_requests"]])
    busy_before = np.zeros(len(nodes), dtype=bool)
    for p in cluster.pods:
        if p.node is not None:
            busy_before[state.node_index[p.node]] = True
    vacated = [nodes[n] for n in np.flatnonzero(busy_before & (state.pods_per_node == 0))]
    return DefragPlan(waves=waves, vacated_nodes=vacated, metrics=PlanMetrics(before=before, after=after))


def _first(uids: list[str | None], p: int) -> str | None:
    """The UID of pod ``p`` the first time it is asked for, then None (the pod is a new pod after its move)."""
    uid, uids[p] = uids[p], None
    return uid


def why_nothing_moved(state: ClusterState, options: DefragOptions, extra: dict[str, Any] | None = None, status: str | None = None) -> str:
    """A human reason for an empty plan (``extra``: the report so far; ``status``: the plan's)."""
    busy = state.pods_per_node > 0
    if not busy.any():
        return "the cluster has no running pods"
    locked_nodes = np.zeros(len(state.node_names), dtype=bool)
    locked_nodes[state.pod_node[state.pod_locked & (state.pod_node >= 0)]] = True
    if not (busy & ~locked_nodes).any():
        return "every node holding pods also holds a locked pod, so no node can be vacated"
    if options.max_moves == 0:
        return "the migration budget (max_moves) is 0"
    if options.max_moves_per_node == 0:
        return "the per-node migration budget (max_moves_per_node) is 0"
    if busy.sum() < 2:
        return "only one node holds pods"
    dropped = (extra or {}).get("move_once_dropped")
    if dropped:
        return (
            f"the {options.method} plan moved some pod twice; with every pod moved once (move_once) none of its "
            f"{dropped} move(s) could be made; plan again with move_once off to see it"
        )
    solved = options.method == "exact" or str((extra or {}).get("auto_choice", "")).startswith("exact")
    if solved and status == "optimal":
        return "the exact model proves that no plan empties more nodes than the snapshot has"
    if solved:
        dropped = (extra or {}).get("dropped_moves")
        why = f"; {dropped} move(s) of its end state could not be routed make-before-break within the limits" if dropped else ""
        return f"the exact method found no plan that empties more nodes (status {status}: not proven that none exists{why})"
    if options.method in ("heuristic", "hybrid", "auto"):
        return f"no candidate node could be vacated: some pod of each fits on no other busy node, even after ejection chains of depth {options.depth}"
    return f"{options.method} found no pod to move"
