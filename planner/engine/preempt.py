"""Preemption planning: where a pending job goes and which spot pods to evict, at the least lost work.

Methods: ``spotgpu`` (ASI's SpotGPU with a least-cost deficit cover), ``spotgpu-paper`` (the published
prefix rule), ``spotgpu-isolated`` (HP pods placed as if no spot pod ran; among nodes that view cannot tell apart, the one whose cover costs least), ``flextopo`` (FlexTopo: NUMA filter, IMP, Eq. 1 scoring), the baselines
``k8s-default``, ``volcano`` and ``random``, ``exact`` (one MILP/CP model of the decision, proven bound)
and ``compare`` (a heuristic and the exact model on the same decision).

``plan_preempt`` is a pure function of the cluster, the job and the options; every plan it returns
has passed ``validate_preempt``. A job that cannot start even with every allowed victim evicted is
not an error: the plan is empty, ``report.status`` is ``infeasible`` and ``report.reason`` says why.
A request that makes no sense (unknown job, a job already running, ``now_s`` before a pod's start)
raises ``PlanOptionError`` naming the option or the field.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import replace
from typing import Any, Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from planner import rules
from planner.capacity import checked_shapes, large_requests_field, large_requests_of
from planner.cluster import MAX_TIME_S, Cluster
from planner.engine.common import (
    MAX_SEED,
    MAX_TIME_LIMIT_S,
    PlanBug,
    PlanOptionError,
    refuse_unused,
)
from planner.heuristics.flextopo import FlexTopo
from planner.heuristics.gang import Choice, Policy, place_job
from planner.heuristics.preempt_baselines import baseline_policy
from planner.heuristics.spotgpu import SpotGpu
from planner.metrics import parse_shape
from planner.models.preempt import solve_preempt
from planner.plans import Placement, PreemptComparison, PreemptPlan, SolveReport, Victim
from planner.preempt_state import Ask, PreemptState
from planner.provenance import snapshot_sha256, stamp
from planner.standby import reactivation_problems, reactivation_view
from planner.suggest import unknown_name
from planner.validate.preempt import ClusterFacts, surplus_units, validate_preempt

PreemptHeuristic = Literal["spotgpu", "spotgpu-paper", "spotgpu-isolated", "flextopo", "k8s-default", "volcano", "random"]
"""The preemption heuristics: the one declaration of their names (``HEURISTICS`` lists them)."""
PreemptMethod = Literal[PreemptHeuristic, "exact", "compare"]
HEURISTICS: tuple[str, ...] = get_args(PreemptHeuristic)


class PreemptOptions(BaseModel):
    """Options of ``plan_preempt``; out-of-range values are rejected with the option's name."""

    model_config = ConfigDict(extra="forbid", strict=True)
    method: PreemptMethod = "spotgpu"
    now_s: float | None = Field(None, ge=0, le=MAX_TIME_S, allow_inf_nan=False, description="Decision time (default: the snapshot's time_s).")
    alpha: float = Field(0.5, ge=0, le=1, allow_inf_nan=False, description="FlexTopo Eq. 1: weight of priority against topology.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Random seed of the random baseline.")
    heuristic: PreemptHeuristic = Field("spotgpu", description="compare: the heuristic set beside the exact model.")
    solver: Literal["cpsat", "highs"] = Field("cpsat", description="Exact back-end.")
    time_limit_s: float = Field(10.0, gt=0, le=MAX_TIME_LIMIT_S, allow_inf_nan=False, description="Time for exact and compare.")
    solver_workers: int = Field(8, ge=1, le=256, description="CP-SAT workers / HiGHS threads.")
    large_requests: list[str] = large_requests_field()

    @field_validator("*")
    @classmethod
    def _used_by_the_method(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_unused(cls, value, info, METHOD_OPTIONS, ("method", "now_s", "large_requests"))

    @field_validator("large_requests")
    @classmethod
    def _shapes_read(cls, value: list[str]) -> list[str]:
        return checked_shapes(value)


_SOLVER = {"solver", "time_limit_s", "solver_workers"}
METHOD_OPTIONS: dict[str, set[str]] = {
    **{m: set() for m in HEURISTICS},
    "flextopo": {"alpha"},
    "random": {"seed"},
    "exact": _SOLVER,
    "compare": _SOLVER | {"heuristic", "alpha", "seed"},
}


def request_problems(cluster: Cluster, job: str, now_s: float, facts: ClusterFacts | None = None) -> list[tuple[str, str]]:
    """(field, message) for each reason the decision cannot be asked: the job must exist and be
    wholly pending, and ``now_s`` may not precede a running pod's start or checkpoint. With ``facts``
    (``cluster``'s) a request with none of these problems is passed without looking at every pod."""
    if facts is not None and facts.cluster is cluster and _plainly_askable(facts, job, now_s):
        return []
    jobs = {j.name for j in cluster.jobs}
    if job not in jobs:
        running = {p.job for p in cluster.pods if p.node is not None}
        return [("job", unknown_name("job", job, jobs, pending=[j for j in jobs if j not in running], pending_what="pending jobs (one may be asked for)"))]
    problems = []
    pods = [(i, p) for i, p in enumerate(cluster.pods) if p.job == job]
    if not pods:
        problems.append(("job", f"job '{job}' has no pods"))
    for i, pod in pods:
        if pod.node is not None:
            problems.append(("job", f"job '{job}' is not pending: pods[{i}] '{pod.name}' already runs on '{pod.node}'"))
    for i, pod in enumerate(cluster.pods):
        if pod.node is None:
            continue
        for field, value in (("started_s", pod.started_s), ("checkpoint_s", pod.checkpoint_s)):
            if value is not None and value > now_s:
                problems.append(("now_s", f"{now_s:g} is before pods[{i}].{field} ({value:g}); the decision time must be later"))
                break
    return problems[:10]


def _plainly_askable(facts: ClusterFacts, job: str, now_s: float) -> bool:
    """The job exists, has pods, none running, and no running pod started or checkpointed after ``now_s``."""
    pods = facts.job_pods.get(job) if job in facts.jobs else None
    return bool(pods) and all(pod.node is None for pod in pods or ()) and (facts.latest_s is None or facts.latest_s <= now_s)


def plan_preempt(cluster: Cluster, job: str, options: PreemptOptions | None = None, state: PreemptState | None = None) -> PreemptPlan | PreemptComparison:
    """A validated preemption plan for ``job`` (for ``compare``: both plans and the gap), with its provenance.

    ``state`` may carry a prebuilt ``PreemptState`` of ``cluster`` (a simulation deciding many times).
    """
    options = options or PreemptOptions()
    facts = _facts(cluster, state)
    return stamp(_plan_preempt(cluster, job, options, state, facts), cluster, options, facts.sha256())


class _Facts(ClusterFacts):
    """``ClusterFacts`` and the cluster's ``snapshot_sha256`` (computed once, when first asked)."""

    def __init__(self, cluster: Cluster):
        super().__init__(cluster)
        self._sha256: str | None = None
        self.job_index = cluster.job_index()

    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = snapshot_sha256(self.cluster)
        return self._sha256


_KEPT: weakref.WeakKeyDictionary[PreemptState, _Facts] = weakref.WeakKeyDictionary()
"""Per prebuilt state the facts of the cluster it was last asked about: a simulation deciding many
times on one state and one cluster pays for the indexes and the hash once, not per decision. A
state is the caller's promise that the cluster has not changed since (``plan_preempt``)."""


def _facts(cluster: Cluster, state: PreemptState | None) -> _Facts:
    if state is None:
        return _Facts(cluster)
    kept = _KEPT.get(state)
    if kept is None or kept.cluster is not cluster:
        kept = _KEPT[state] = _Facts(cluster)
    return kept


def _plan_preempt(cluster: Cluster, job: str, options: PreemptOptions, state: PreemptState | None, facts: _Facts) -> PreemptPlan | PreemptComparison:
    now = options.now_s if options.now_s is not None else cluster.time_s
    problems = request_problems(cluster, job, now, facts)
    if problems:
        field, message = problems[0]
        raise PlanOptionError(field, message.replace("{", "(").replace("}", ")"))
    ps = state if state is not None else PreemptState(cluster)
    ask = Ask.of(ps, facts.job_index[job], now)
    if options.method == "compare":
        return _compare(cluster, ps, ask, options, facts)
    return decide_plan(cluster, ps, ask, options.method, options, facts)


def plan_reactivate(cluster: Cluster, pod: str, options: PreemptOptions | None = None) -> PreemptPlan | PreemptComparison:
    """A validated plan that wakes standby pod ``pod`` on its node: the least lost work evicted there
    (``--reactivate``). The decision is ``plan_preempt``'s, on ``standby.reactivation_view``."""
    options = options or PreemptOptions()
    return stamp(_plan_reactivate(cluster, pod, options), cluster, options)


def _plan_reactivate(cluster: Cluster, pod: str, options: PreemptOptions) -> PreemptPlan | PreemptComparison:
    problems = reactivation_problems(cluster, pod)
    if problems:
        raise PlanOptionError("reactivate", problems[0].replace("{", "(").replace("}", ")"))
    view = reactivation_view(cluster, pod)
    now = options.now_s if options.now_s is not None else cluster.time_s
    problems_now = request_problems(view.cluster, view.job, now)
    if problems_now:
        field, message = problems_now[0]
        raise PlanOptionError(field, message.replace("{", "(").replace("}", ")"))
    ps = PreemptState(view.cluster)
    ask = Ask.of(ps, view.cluster.job_index()[view.job], now)
    ask.nodes = np.array([name == view.node for name in ps.cs.node_names], dtype=bool)

    def as_reactivation(plan: PreemptPlan) -> PreemptPlan:
        out = plan.model_copy(update={"job": view.owner, "reactivate": pod})
        violations = validate_preempt(cluster, out)
        if violations:
            raise PlanBug("an invalid reactivation plan: " + "; ".join(map(str, violations[:5])))
        return out

    if options.method == "compare":
        comparison = _compare(view.cluster, ps, ask, options)
        return comparison.model_copy(update={"heuristic": as_reactivation(comparison.heuristic), "exact": as_reactivation(comparison.exact)})
    return as_reactivation(decide_plan(view.cluster, ps, ask, options.method, options))


EXACT_STARTS = tuple(m for m in HEURISTICS if m != "random")
"""The heuristics whose plans start the exact model (and the ``compare`` heuristic): it never reports
a plan worse than one of them. The model is stricter than the rules with GPU shares, and each
heuristic misses plans another finds (a share pod stranded by SpotGPU's best fit, found by FlexTopo)."""


def decide(ps: PreemptState, ask: Ask, method: str, options: PreemptOptions) -> tuple[Choice, dict[str, Any]]:
    """The raw decision of ``method`` (no plan, no validation): what simulations call in a loop."""
    if method == "exact":
        names = list(dict.fromkeys((*EXACT_STARTS, options.heuristic)))
        starts = {name: place_job(ps, ask, policy_of(name, options)) for name in names}
        return solve_preempt(ps, ask, options.solver, options.time_limit_s, options.solver_workers, starts)
    return place_job(ps, ask, policy_of(method, options)), {}


def _without_surplus(
    cluster: Cluster, ps: PreemptState, ask: Ask, choice: Choice, options: PreemptOptions, solver_fields: dict[str, Any], facts: ClusterFacts
) -> PreemptPlan:
    """The exact method's plan with every victim unit returned, one at a time in order, whose return leaves it
    valid. Its model is stricter than the rules with GPU shares (``model_exact: false``, status ``feasible``), so
    its plan could evict a gang the placements do not need (hypothesis found one: 2 surplus victims, 3,500 GPU-s
    where 2,500 was the optimum)."""
    units = list(choice.units)
    for unit in list(units):
        trial = replace(choice, units=[u for u in units if u != unit])
        if not validate_preempt(cluster, to_plan(cluster, ps, ask, trial, "exact", options, solver_fields, facts), facts):
            units.remove(unit)
    return to_plan(cluster, ps, ask, replace(choice, units=units), "exact", options, solver_fields, facts)


def policy_of(method: str, options: PreemptOptions) -> Policy:
    if method == "spotgpu":
        return SpotGpu()
    if method == "spotgpu-paper":
        return SpotGpu(paper=True)
    if method == "spotgpu-isolated":
        return SpotGpu(isolated=True)
    if method == "flextopo":
        return FlexTopo(options.alpha)

    return baseline_policy(method, options.seed)


def decide_plan(cluster: Cluster, ps: PreemptState, ask: Ask, method: str, options: PreemptOptions, facts: ClusterFacts | None = None) -> PreemptPlan:
    """The validated plan of ``method``'s decision (``facts``: ``cluster``'s, when kept across decisions)."""
    start = time.perf_counter()
    facts = facts.of(cluster) if facts is not None else ClusterFacts(cluster)
    choice, solver_fields = decide(ps, ask, method, options)
    plan = to_plan(cluster, ps, ask, choice, method, options, solver_fields, facts)
    violations = validate_preempt(cluster, plan, facts)
    if violations:
        raise PlanBug(f"{method} produced an invalid preemption plan: " + "; ".join(map(str, violations[:5])))
    if method == "exact" and plan.placements and solver_fields.get("status") != "optimal" and surplus_units(cluster, plan, facts):
        plan = _without_surplus(cluster, ps, ask, choice, options, solver_fields, facts)
    if plan.placements:
        plan.metrics["surplus_victims"] = surplus_units(cluster, plan, facts)
    shapes = [parse_shape(text) for text in options.large_requests]
    plan.metrics["large_requests"] = large_requests_of(ps.cs, plan.placements, shapes, evicted=[v.pod for v in plan.victims])
    assert plan.report is not None
    plan.report.wall_s = round(time.perf_counter() - start, 6)
    return plan


def to_plan(
    cluster: Cluster,
    ps: PreemptState,
    ask: Ask,
    choice: Choice,
    method: str,
    options: PreemptOptions,
    solver_fields: dict[str, Any],
    facts: ClusterFacts | None = None,
) -> PreemptPlan:
    """The plan of a decision, with metrics and an honest report."""
    pods, nodes = cluster.pods, cluster.nodes
    victims = []
    for u in choice.units:
        for q in ps.unit_pods[u]:
            pod = pods[q]
            if pod.node is not None:
                victims.append(Victim(pod=pod.name, node=pod.node, job=pod.job, lost_gpu_s=float(ask.pod_cost[q])))
    placements = [
        Placement(pod=pods[p].name, node=nodes[n].name, gpu_indexes=list(devices) if devices is not None else None) for p, n, devices in choice.placements
    ]
    lost = sum(v.lost_gpu_s for v in victims)
    status = solver_fields.get("status", "heuristic")
    if choice.reason is not None and choice.proven_infeasible:
        status = "infeasible"  # proven: with every allowed victim gone the job still cannot start
    bound = solver_fields.get("bound")
    gap = None if bound is None else round((lost - bound) / max(abs(lost), 1e-9), 9) if lost else 0.0
    report = SolveReport(
        method=method,
        solver=solver_fields.get("solver"),
        status=status,
        objective=round(lost, 6),
        bound=bound,
        gap=gap,
        seed=options.seed if method == "random" else None,
        **{k: v for k, v in solver_fields.items() if k not in ("status", "bound", "solver")},
        **({"reason": choice.reason} if choice.reason is not None else {}),
        **({} if choice.proven_covers else {"cover_search_truncated": True}),
    )
    metrics = _metrics(cluster, choice, victims, facts)
    return PreemptPlan(job=ask.job_name, now_s=ask.now_s, placements=placements, victims=victims, metrics=metrics, report=report)


def _metrics(cluster: Cluster, choice: Choice, victims: list[Victim], facts: ClusterFacts | None) -> dict[str, Any]:
    nodes = cluster.nodes
    pods = facts.of(cluster).pods if facts is not None else {p.name: p for p in cluster.pods}
    gpus = {v.pod: pods[v.pod].gpus for v in victims}
    used = sorted({n for _, n, _ in choice.placements})
    tiers = [rules.alignment_tier(nodes[n], devices) if nodes[n].numa and devices else None for _, n, devices in choice.placements]
    return {
        "lost_gpu_s": round(sum(v.lost_gpu_s for v in victims), 6),
        "victims": len(victims),
        "victim_gangs": len(choice.units),
        "victim_gpus": round(sum(gpus[v.pod] for v in victims), 6),
        "placed_pods": len(choice.placements),
        "nodes": len(used),
        "asws": len({rules.topology_domain(nodes[n], "asw") for n in used}),
        "alignment": tiers,
        "topology_hit": bool(choice.placements) and all(t in (rules.ALIGN_NUMA, rules.ALIGN_SOCKET) for t in tiers),
    }


def _compare(cluster: Cluster, ps: PreemptState, ask: Ask, options: PreemptOptions, facts: ClusterFacts | None = None) -> PreemptComparison:
    heuristic = decide_plan(cluster, ps, ask, options.heuristic, options, facts)
    exact = decide_plan(cluster, ps, ask, "exact", options, facts)
    h, e = heuristic.metrics.get("lost_gpu_s"), exact.metrics.get("lost_gpu_s")
    ratio = None
    if heuristic.placements and exact.placements:
        ratio = 1.0 if h == e else (None if not e else round(h / e, 6))
    return PreemptComparison(
        heuristic=heuristic,
        exact=exact,
        gap={
            "heuristic": options.heuristic,
            "lost_gpu_s": {"heuristic": h, "exact": e},
            "cost_ratio": ratio,
            "victims": {"heuristic": heuristic.metrics.get("victims"), "exact": exact.metrics.get("victims")},
            "exact_status": exact.report.status if exact.report else None,
        },
    )
