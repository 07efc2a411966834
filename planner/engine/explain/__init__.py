"""``planner explain``: why a pending job (or pod) waits, and why a plan left a node busy.

``explain_job`` and ``explain_pod`` check the constraints in order (``job.py``) and compute the
cheapest remedy the planner can (a make-room plan, validated like every plan); ``explain_node``
(``node.py``) names, for each pod a plan left on a node, the rule that kept it. Every reason is a
stable code (``codes.py``) with its numbers and whether it is a proof from the snapshot alone or the
heuristic's finding. An unknown name is a ``SnapshotError`` with the closest names and the pending jobs.

``ExplainOptions.time_limit_s`` bounds the remedy: the reason is always computed (a few passes over
the snapshot), and each make-room plan is started only while time is left; the steps the limit cut
are named in the remedy (code ``time_limit``). The service sets it (``api.requests.EXPLAIN_TIME_LIMIT_S``).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from planner.cluster import Cluster, Pod, SnapshotError
from planner.engine.common import MAX_COUNT, MAX_SEED, MAX_TIME_LIMIT_S, PlanOptionError, refuse_unholdable
from planner.engine.defrag import DefragOptions, plan_defrag
from planner.engine.explain.codes import ALL_CODES
from planner.engine.explain.job import JobFacts, checks, gpus, proof_after_any_moves
from planner.engine.explain.node import explain_node_left_busy
from planner.plans import DefragPlan
from planner.rules import gang_need
from planner.suggest import closest

__all__ = ["ALL_CODES", "ExplainOptions", "explain_job", "explain_node", "explain_pod", "pending_jobs"]

LISTED = 20
"""Pending jobs listed beside an unknown name, at most."""


class ExplainOptions(BaseModel):
    """The move budgets the remedy (a make-room plan) is computed within, its seed and time limit."""

    model_config = ConfigDict(extra="forbid", strict=True)
    max_moves: int | None = Field(None, ge=0, le=MAX_COUNT, description="Migration budget of the remedy's plan.")
    max_moves_per_node: int | None = Field(None, ge=0, le=MAX_COUNT, description="Moves touching any one node.")
    same_asw: bool = Field(False, description="Pods move only within their access switch.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Random seed of the make-room heuristic.")
    time_limit_s: float | None = Field(
        None,
        gt=0,
        le=MAX_TIME_LIMIT_S,
        description="Seconds for the remedy: a make-room plan is started only before they pass; the steps left are named (remedy time_limit).",
    )

    def budgets(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if k not in ("seed", "time_limit_s") and v is not None and v is not False}  # max_moves 0 is a budget


def pending_jobs(cluster: Cluster) -> list[str]:
    """Jobs with a pending pod, then pending pods of no job, in snapshot order."""
    jobs = dict.fromkeys(p.job for p in cluster.pods if p.node is None and p.job is not None)
    lone = [p.name for p in cluster.pods if p.node is None and p.job is None]
    return [*(j for j in jobs if j is not None), *lone]


def unknown(cluster: Cluster, what: str, name: str, known: list[str]) -> SnapshotError:
    """An unknown name: the closest known ones (``suggest.closest``) and the pending jobs."""
    close = closest(name, known)
    problems = [f"--{what}: no {what} named '{name}' in the snapshot" + (f"; did you mean {', '.join(repr(c) for c in close)}?" if close else "")]
    pending = pending_jobs(cluster)
    shown = ", ".join(pending[:LISTED]) + (f" and {len(pending) - LISTED:,} more" if len(pending) > LISTED else "")
    problems.append(f"pending jobs (and pending pods of no job): {shown}" if pending else "the snapshot has no pending job or pod")
    return SnapshotError(problems)


def explain_pod(cluster: Cluster, name: str, options: ExplainOptions | None = None) -> dict[str, Any]:
    """A pending pod: its job's explanation (or its own, when it has no job)."""
    pods = {p.name: p for p in cluster.pods}
    if name not in pods:
        raise unknown(cluster, "pod", name, list(pods))
    pod = pods[name]
    if pod.node is not None:
        raise SnapshotError([f"--pod: pod '{name}' runs on node '{pod.node}'; explain a pending pod, or the node with --node {pod.node} --plan PLAN"])
    if pod.job is None:
        return _explain(cluster, name, [pod], None, 1, options or ExplainOptions(), time.perf_counter())
    found = explain_job(cluster, pod.job, options)
    if found["pods_needed"] > 0:
        return {"pod": name, **found}
    return {"pod": name, **_explain_pod_of_running_job(cluster, pod, options or ExplainOptions())}


def _explain_pod_of_running_job(cluster: Cluster, pod: Pod, options: ExplainOptions) -> dict[str, Any]:
    """A pending pod of a job already at its ``min_available`` (a Deployment's pending replica, say):
    it starts on its own, so it gets the checks of one pod of its shape (under its job's domain when
    the job requires one). Its remedy is make-room's plan for the pod alone: a copy of the snapshot in
    which it belongs to no job (its own rules all stay with it); not for a pod whose job requires a
    switch (make-room would not keep it there), nor one named like a job."""
    start = time.perf_counter()
    job = next((j for j in cluster.jobs if j.name == pod.job), None)
    level = job.topology.level if job and job.topology and job.topology.mode == "required" else None
    members = [p for p in cluster.pods if p.job == pod.job]
    running = sum(1 for p in members if p.node is not None)
    target: tuple[Cluster, str] | str
    if level is not None:
        target = f"make room does not start a pod of a job that runs under a required {level} on its own"
    elif any(j.name == pod.name for j in cluster.jobs):
        target = f"make room reads '{pod.name}' as the job of that name"
    else:
        alone = [p.model_copy(update={"job": None}) if p is pod else p for p in cluster.pods]
        target = (cluster.model_copy(update={"pods": alone}), pod.name)
    found = _explain(cluster, pod.job or pod.name, [pod], level, 1, options, start, running, remedy_on=target)
    return {**found, "pending_pods": len(members) - running, "starts_alone": True}


def explain_job(cluster: Cluster, name: str, options: ExplainOptions | None = None) -> dict[str, Any]:
    """Why job ``name`` waits: the constraints in order with their numbers, the reason and the remedy."""
    start = time.perf_counter()
    jobs = {j.name: j for j in cluster.jobs}
    members = [p for p in cluster.pods if p.job == name]
    if name not in jobs and not members:
        raise unknown(cluster, "job", name, sorted({*jobs, *(p.job for p in cluster.pods if p.job)}))
    pending = [p for p in members if p.node is None]
    running = len(members) - len(pending)
    job = jobs.get(name)
    if not pending:
        raise SnapshotError(
            [f"--job: job '{name}' has no pending pod ({running} running); explain a pending job: {', '.join(pending_jobs(cluster)[:LISTED]) or 'none'}"]
        )
    need = gang_need(job.min_available if job else None, len(pending), running)
    level = job.topology.level if job and job.topology and job.topology.mode == "required" else None
    return _explain(cluster, name, pending, level, need, options or ExplainOptions(), start, running)


def _explain(
    cluster: Cluster,
    name: str,
    pending: list[Pod],
    level: str | None,
    need: int,
    options: ExplainOptions,
    start: float,
    running: int = 0,
    remedy_on: tuple[Cluster, str] | str | None = None,
) -> dict[str, Any]:
    """The head, the checks, the reason and the remedy; ``remedy_on``: the snapshot and name make-room
    is asked for (default ``cluster`` and ``name``), or why make-room cannot be asked."""
    head: dict[str, Any] = {
        "job": name,
        "pending_pods": len(pending),
        "running_pods": running,
        "pods_needed": need,
        "pod_shape": {"gpus": gpus(pending[0].gpus), "cpus": pending[0].cpus, "memory_gib": pending[0].memory_gib},
        "topology": level and f"required {level}",
        "time_limit_s": options.time_limit_s,
    }
    if need == 0:
        detail = f"its {len(pending)} pending pod(s) start one by one; explain one with --pod {pending[0].name}"
        return {**head, "reason": _reason("already_running", {}, detail=detail), "checks": [], "remedy": _reason("none_needed", {"moves": 0})}
    facts = JobFacts(cluster, pending, need, level)
    steps = checks(facts)
    binding = next((c for c in steps if c["holds"]), None)
    reason = _reason(binding["code"], binding["numbers"]) if binding else _reason("fits_now", steps[-1]["numbers"])
    clock = _Clock(start, options.time_limit_s)
    target = (cluster, name) if remedy_on is None else remedy_on
    return {**head, "reason": reason, "checks": steps, "remedy": _remedy(facts, target, binding, options, clock)}


def _reason(code: str, numbers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    meaning = ALL_CODES[code]
    return {"code": code, "proof": meaning.proof, "meaning": meaning.meaning, "numbers": numbers, **extra}


class _Clock:
    """The remedy's time limit: ``left()`` is False once ``limit_s`` seconds passed since ``start``."""

    def __init__(self, start: float, limit_s: float | None):
        self.start, self.limit_s = start, limit_s

    def left(self) -> bool:
        return self.limit_s is None or time.perf_counter() - self.start < self.limit_s

    def ran_out(self, skipped: list[str], budgets: dict[str, Any], **found: Any) -> dict[str, Any]:
        elapsed = round(time.perf_counter() - self.start, 3)
        return _reason("time_limit", {"time_limit_s": self.limit_s, "elapsed_s": elapsed}, budgets=budgets, skipped=skipped, **found)


def _remedy(facts: JobFacts, target: tuple[Cluster, str] | str, binding: dict[str, Any] | None, options: ExplainOptions, clock: _Clock) -> dict[str, Any]:
    """The cheapest remedy: none, a proof that moves cannot do it, or make-room's plan for ``target``
    (a snapshot and the name to make room for; a string says why make-room cannot be asked) within
    the budgets given (else with the budgets it takes lifted)."""
    if binding is None:
        return _reason("none_needed", {"moves": 0})
    if binding["check"] == "capacity":
        return _reason("capacity", binding["numbers"])
    index = {p.name: i for i, p in enumerate(facts.cluster.pods)}
    proof = proof_after_any_moves(facts.state, [index[p.name] for p in facts.pending], facts.need, facts.level)
    if proof is None:
        try:  # a pod shape no node holds even empty (a pod-count or named resource of 0, say)
            refuse_unholdable(facts.cluster, index[facts.pending[0].name])
        except SnapshotError as err:
            proof = err.problems[0]
    if proof is not None:
        return _reason("no_room_after_any_moves", {}, detail=proof)
    budgets = options.budgets()
    if isinstance(target, str):
        return _reason("no_plan_found", {}, budgets=budgets, detail=target)
    cluster, name = target
    held = [j.name for j in cluster.jobs if j.disruption is not None]
    lifted = cluster.model_copy(update={"jobs": [j.model_copy(update={"disruption": None}) for j in cluster.jobs]}) if held else cluster
    # each remedy holds within the budgets it names: the move budgets given and the snapshot's
    # disruption budgets first; then the disruption budgets lifted, the move budgets kept; then the
    # move budgets lifted (and the disruption budgets with them, when they stop it too)
    attempts = [("make_room", cluster, budgets)]
    attempts += [("without_disruption_budgets", lifted, budgets)] if held else []
    attempts += [("without_budgets", cluster, {})] if budgets else []
    attempts += [("without_budgets_or_disruption_budgets", lifted, {})] if budgets and held else []
    first: dict[str, Any] | None = None
    for k, (step, on, within) in enumerate(attempts):
        if not clock.left():
            return clock.ran_out([s for s, _, _ in attempts[k:]], budgets, **({"within_budgets": first["reason"]} if first else {}))
        tried = _make_room(on, name, within, options.seed)
        first = first or tried
        if "moves" not in tried:
            continue
        extra: dict[str, Any] = {} if k == 0 else {"within_budgets": first["reason"]}
        if on is lifted and held:
            extra |= {"jobs_with_budgets": len(held), **({"disruption_budgets_lifted": True} if within != budgets else {})}
        code = "make_room" if k == 0 else "disruption" if step == "without_disruption_budgets" else "budget"
        return _reason(code, tried, budgets=budgets, **extra)
    assert first is not None  # make_room is always tried
    return _reason("no_plan_found", {}, budgets=budgets, detail=first["reason"])


def _make_room(cluster: Cluster, name: str, budgets: dict[str, Any], seed: int) -> dict[str, Any]:
    """The make-room heuristic's plan for ``name``: moves, GPUs moved, waves and nodes, or why not."""
    try:
        plan = plan_defrag(cluster, DefragOptions(make_room=[name], executor="inline", seed=seed, **budgets))
    except PlanOptionError as err:  # a job make-room refuses (shapes differ, a pod no node could hold)
        return {"reason": str(err)}
    assert isinstance(plan, DefragPlan) and plan.metrics is not None and plan.metrics.per_job is not None  # method heuristic: one plan
    job = plan.metrics.per_job[name]
    if not job["placed"]:
        return {"reason": job["reason"]}
    return {"moves": job["moves"], "gpus_moved": job["gpus_moved"], "waves": len(plan.waves), "nodes": job["nodes"]}


def explain_node(cluster: Cluster, node: str, plan: Any) -> dict[str, Any]:
    """Why ``plan`` left ``node`` busy: per pod on it after the plan, the rule that kept it."""
    names = [n.name for n in cluster.nodes]
    if node not in names:
        raise unknown(cluster, "node", node, names)
    return explain_node_left_busy(cluster, node, plan)
