"""What ``planner verify`` checks before it changes anything: that the cluster holds every pod the plan names where
the plan has it (a plan for another snapshot is bad input, exit 2, naming the first mismatching pod), and the report
it writes at the end (a table for the terminal, the same facts as JSON)."""

from __future__ import annotations

from typing import Any

from planner.kube.apply import stale_problems
from planner.kube.apply_live import FINISHED, LivePods, mismatch
from planner.kube.verify_steps import LOAD_GATE
from planner.plans import AnyPlan, DefragPlan, Placement, PreemptPlan
from planner.textsafe import printable


def pending_problem(path: str, placement: Placement, live: LivePods) -> str | None:
    """Why the cluster does not hold ``placement``'s pod as a pending pod held by the load gate (None: it does)."""
    pod = live.find(placement.pod, None)
    if pod is None:
        return f"{path}.pod: no single pod named '{placement.pod}' in the cluster (deleted, renamed, or the plan is for another snapshot)"
    if pod.spec.node_name:
        return f"{path}.pod: the plan places pod '{placement.pod}' as pending; in the cluster it runs on node '{pod.spec.node_name}'"
    if pod.metadata.deletion_timestamp is not None or (pod.status and pod.status.phase in FINISHED):
        return f"{path}.pod: pod '{placement.pod}' is terminating or finished in the cluster"
    if not any(g.name == LOAD_GATE for g in pod.spec.scheduling_gates or []):
        return (
            f"{path}.pod: pending pod '{placement.pod}' is not held by the scheduling gate {LOAD_GATE}: verify can pin only a gated pod to the plan's "
            "node (load the List with `planner controlplane up`, which gates every pending pod)"
        )
    return None


def plan_problems(plan: AnyPlan, live: LivePods) -> list[str]:
    """Every pod of ``plan`` the cluster does not hold as the plan has it, in the plan's order."""
    problems: list[str] = []
    if isinstance(plan, DefragPlan):
        problems += stale_problems(plan, live, set())
    if isinstance(plan, PreemptPlan):
        if plan.reactivate is not None:
            return [f"reactivate: a standby pod ('{plan.reactivate}') has no Kubernetes form; verify checks preemption plans that start a job"]
        for i, victim in enumerate(plan.victims):
            problem = mismatch(f"victims[{i}]", victim.pod, None, victim.node, live)
            if problem:
                problems.append(problem)
    for i, placement in enumerate(plan.placements):
        problem = pending_problem(f"placements[{i}]", placement, live)
        if problem:
            problems.append(problem)
    return problems


def plan_counts(plan: AnyPlan) -> dict[str, int]:
    counts = {"moves": 0, "placements": len(plan.placements), "victims": 0, "waves": 0}
    if isinstance(plan, DefragPlan):
        counts.update(moves=len(plan.moves()), waves=len(plan.waves))
    if isinstance(plan, PreemptPlan):
        counts["victims"] = len(plan.victims)
    return counts


def table(result: dict[str, Any]) -> list[str]:
    """The report as lines for the terminal (input quoted through ``printable``)."""
    checked, accepted = result["checked"], result["accepted"]
    cluster = result["cluster"]
    lines = [
        f"plan {result['plan']['kind']} on {cluster['server']} ({'throwaway control plane, profile ' + str(cluster.get('profile')) if cluster['throwaway'] else 'the cluster of --kubeconfig'})",
        f"{'step':<11} {'checked':>7} {'accepted':>8} {'refused':>7}",
    ]
    for step in ("moves", "evictions", "placements"):
        lines.append(f"{step:<11} {checked[step]:>7} {accepted[step]:>8} {checked[step] - accepted[step]:>7}")
    if result["skipped"]:
        lines.append(f"not checked: {len(result['skipped'])} later move(s) of pods whose earlier move was refused")
    lines += [printable(f"note: {note}") for note in result.get("notes") or []]
    lines.append(f"verdict: {'all accepted' if not result['refused'] else str(result['refused']) + ' refused'} in {result['time_s']:.1f} s")
    for r in result["refusals"]:
        where = f"wave {r['wave']} " if r.get("wave") else ""
        move = f"{r.get('from')} -> {r['node']}" if r.get("from") else f"on {r['node']}"
        by = r["by"] + (f" {r['plugin']}" if r.get("plugin") else "") + (f" (budget {', '.join(r['budgets'])})" if r.get("budgets") else "")
        lines.append(printable(f"refused: {where}{r['step']} {r['pod']} {move}: {by}: {r['message']}"))
    return lines
