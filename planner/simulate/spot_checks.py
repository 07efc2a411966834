"""``check=True`` of the spot replay (``spot.py``, the tests): a state as a snapshot, each decision
checked as a plan by ``validate_preempt`` and against the planner's own plan, every state checked
with ``rules.py``."""

from __future__ import annotations

from typing import Any

import numpy as np

from planner import rules
from planner.cluster import Cluster, Job, Node, Pod
from planner.engine.preempt import PreemptOptions, plan_preempt, plan_reactivate
from planner.heuristics.gang import Choice
from planner.instances.spot_workload import SimJob
from planner.plans import Placement, PreemptPlan, Victim
from planner.preempt_state import Ask
from planner.simulate.spot_results import Run
from planner.simulate.window import Window, kept_progress_s
from planner.state import PENDING
from planner.validate.preempt import validate_preempt


def snapshot_of(
    nodes: list[Node], eviction_counts: np.ndarray, w: Window, running: dict[str, Run], spec: dict[str, SimJob], now: float, asking: str | None
) -> Cluster:
    """The state at ``now`` as a snapshot: running jobs' pods on their nodes with their last
    checkpoint (none yet: their run's start), the asking job's pods pending; window order."""
    cs = w.ps.cs
    nodes = [n.model_copy(update={"eviction_count": int(c)}) for n, c in zip(nodes, eviction_counts.tolist())]
    pods, jobs = [], []
    for name in w.names:
        run = running.get(name)
        if run is None and name != asking:
            continue
        job = spec[name]
        jobs.append(Job(name=name))
        last = None
        if run is not None:
            kept = kept_progress_s(run.progress_s, job.checkpoint_interval_s, now)
            last = run.progress_s + kept if kept > 0 else None
        for k, p in enumerate(w.pods_of(name)):
            node = cs.node_names[int(cs.pod_node[p])] if run is not None else None
            pods.append(
                Pod(
                    name=f"{name}-{k}",
                    job=name,
                    node=node,
                    gpus=job.gpus_per_worker,
                    cpus=job.cpus_per_worker,
                    memory_gib=job.memory_gib_per_worker,
                    priority=job.priority,
                    gpu_models=list(job.gpu_models),
                    started_s=run.start_s if run else None,
                    checkpoint_s=last,
                    standby=bool(run and cs.pod_standby[p]),
                )
            )
    return Cluster(time_s=now, nodes=nodes, pods=pods, jobs=jobs)


def check_decision(policy: str, snapshot: Cluster, choice: Choice, ask: Ask, w: Window, job: str, waking: str | None, now: float, seed: int) -> None:
    """The decision, as a plan on ``snapshot``, passes ``validate_preempt``; under a planner
    method it is also the plan ``plan_preempt`` (``plan_reactivate`` for a wake) returns there."""
    cs = w.ps.cs
    victims = sorted(q for u in choice.units for q in w.ps.unit_pods[u] if cs.pod_node[q] != PENDING)
    plan = PreemptPlan(
        job=job,
        now_s=now,
        reactivate=waking,
        placements=[Placement(pod=cs.pod_names[p], node=cs.node_names[n]) for p, n, _ in choice.placements],
        victims=[
            Victim(pod=cs.pod_names[q], node=cs.node_names[int(cs.pod_node[q])], job=w.names[int(cs.pod_job[q])], lost_gpu_s=float(ask.pod_cost[q]))
            for q in victims
        ],
    )
    violations = validate_preempt(snapshot, plan)
    if violations or not choice.placements and waking:
        raise AssertionError(f"the simulator's decision for '{job}' at {now} s is invalid: {violations[:3]}")
    if "+" in policy:
        return
    fields: dict[str, Any] = {"method": policy, "now_s": now, **({"seed": seed} if policy == "random" else {})}
    options = PreemptOptions(**fields)
    expected = plan_reactivate(snapshot, waking, options) if waking else plan_preempt(snapshot, job, options)
    assert isinstance(expected, PreemptPlan)  # a simulator's policy is one method, never compare
    got = (sorted((p.pod, p.node) for p in plan.placements), sorted(v.pod for v in plan.victims))
    want = (sorted((p.pod, p.node) for p in expected.placements), sorted(v.pod for v in expected.victims))
    if got != want:
        raise AssertionError(f"the simulator's decision for '{job}' at {now} s differs from the planner's: {got} != {want}")


def check_state(cluster: Cluster, now: float) -> None:
    """Every node of the state ``cluster`` holds its pods by ``rules.py``."""
    by_node = cluster.pods_by_node()
    for node in cluster.nodes:
        if by_node[node.name] and not rules.pods_fit(node, [], by_node[node.name]):
            raise AssertionError(f"state at {now} s: node '{node.name}' does not hold its pods")
