"""``planner apply``: a defrag or make-room plan carried out on a live cluster, wave by wave, through the
Eviction API (``--via eviction``), resumable from the state it records in the cluster.

Order of a run: connect and probe (``apply_client.connect``), check permissions, read the recorded state
(``apply_state``), check that every pod the plan moves is in the cluster with the plan's UID on the node the
plan moves it from (a plan for another cluster: exit 2 before the first wave, naming the first mismatching pod;
nothing changed), close the nodes (``apply_steer``), then per wave: re-check its pods (drift: stop before the
wave, exit 1, the differences listed), run it (``apply_waves``), record it. At the end the taint is removed from
every node, the originals are waited for until gone, and the report says what happened: nodes vacated as planned
and actually, moves done, replacements on their target or elsewhere, PDB refusals, time per wave and the
executor's own time (everything but the sleeps between polls of pods it waits for).

``abort`` removes what a run left: the taint from every node, the copies of bare pods whose original still runs
(a copy whose original was evicted is now that workload's pod: it is kept and loses the ``planner.io/plan``
label), and the state ConfigMap."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from planner.kube.apply_client import DELETE_PODS, REPLAN_PERMISSIONS, ApplyError, Kube, missing_permissions, refused, server_answer
from planner.kube.apply_evict import delete_pod
from planner.kube.apply_execute import ApplyOptions, execute, with_replans
from planner.kube.apply_live import FINISHED, LivePods, PodRef, controller_of, list_pods, mismatch
from planner.kube.apply_state import PLAN_LABEL, ApplyState, delete, load, save, state_name
from planner.kube.apply_steer import set_taints, tainted_nodes
from planner.kube.apply_watch import PodCache
from planner.plans import DefragPlan
from planner.render.kubernetes import plan_digest

GONE_TIMEOUT_S = 120.0


def check_plan(plan: DefragPlan) -> None:
    if not plan.waves:
        raise ApplyError(["the plan has no moves: nothing to apply"], 0)
    if plan.placements:
        raise ApplyError(["placements: this executor carries out moves only; the plan's placements of pending pods are left to the scheduler (not applied)"])


def stale_problems(plan: DefragPlan, live: LivePods, done: set[str]) -> list[str]:
    """Every first move (not yet done) whose pod the cluster does not hold as the plan expects."""
    problems = []
    seen: set[str] = set()
    for w, wave in enumerate(plan.waves):
        for k, move in enumerate(wave):
            if move.pod in seen or f"{w}.{k}" in done:
                seen.add(move.pod)
                continue
            seen.add(move.pod)
            problem = mismatch(f"waves[{w}][{k}]", move.pod, move.uid, move.from_, live)
            if problem:
                problems.append(problem)
    return problems


def _check_access(kube: Kube, options: ApplyOptions) -> None:
    extra = ((DELETE_PODS,) if options.force_delete else ()) + (REPLAN_PERMISSIONS if options.on_drift == "replan" else ())
    missing = missing_permissions(kube, options.state_namespace, extra)
    if missing:
        raise ApplyError(
            [
                f"context {kube.context!r}: these credentials may not {missing[0]}" + (f" (nor {', '.join(missing[1:])})" if len(missing) > 1 else ""),
                "grant the Role in deploy/kubernetes/planner-apply-rbac.yaml (a ClusterRole for pods, evictions and nodes, a Role for the state ConfigMap)",
            ]
        )


def dry_run(plan: DefragPlan, live: LivePods) -> dict[str, Any]:
    """What a run would do, wave by wave, without changing anything."""
    waves = []
    for w, wave in enumerate(plan.waves):
        rows = []
        for move in wave:
            pod = live.find(move.pod, move.uid)
            owner = controller_of(pod) if pod is not None else None
            how = (
                "copy then evict (bare pod)"
                if pod is not None and owner is None
                else f"evict, {owner.kind} {owner.name} replaces it"
                if owner
                else "moved earlier"
            )
            rows.append({"pod": move.pod, "from": move.from_, "to": move.to, "how": how})
        waves.append({"wave": w + 1, "moves": rows})
    return {"plan": plan_digest(plan), "dry_run": True, "waves": waves, "vacated_planned": sorted(plan.vacated_nodes)}


def apply_plan(kube: Kube, plan: DefragPlan, options: ApplyOptions, log: Callable[..., None]) -> dict[str, Any]:
    """Carry out ``plan`` (see the module docstring); returns the report. Stops raise ``ApplyError``."""
    check_plan(plan)
    plan_id = plan_digest(plan)
    _check_access(kube, options)
    state = load(kube, options.state_namespace, plan_id)
    where = f"{options.state_namespace}/{state_name(plan_id)}"
    if state is not None and not options.resume and not options.dry_run:
        raise ApplyError(
            [
                f"an execution of plan {plan_id} is recorded in {where} (status {state.status}, next wave {state.next_wave + 1}); give --resume to go on or --abort to undo it"
            ]
        )
    if state is None and options.resume:
        raise ApplyError([f"--resume: no execution of plan {plan_id} is recorded in {where}"])
    if state is not None:
        plan = with_replans(plan, state)
    if state is not None and state.status == "done":
        return report(kube, plan, state, options, time.monotonic(), {})
    done = {key for key, record in (state.moves if state else {}).items() if record.get("phase") != "pending"}
    live = LivePods(list_pods(kube))
    problems = stale_problems(plan, live, done)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ApplyError([problems[0] + more, f"the plan does not match context {kube.context!r}: plan again from this cluster; nothing was changed"])
    if options.dry_run:
        return dry_run(plan, live)
    started = time.monotonic()
    state = state or ApplyState(plan_id, options.state_namespace)
    state.status = "running"
    save(kube, state)
    pods = PodCache(kube)
    try:
        run = execute(kube, plan, plan_id, state, options, pods, log)
        total_s = time.monotonic() - started
        blocked = run.steering.blocked_node_s
        extra = {
            "node_patches": run.steering.patches,
            "wait_s": run.wait_s,
            "blocked_node_s": round(blocked, 3),
            "blocked_share": round(blocked / (run.node_count * total_s), 4) if run.node_count and total_s > 0 else 0.0,
            "pod_watch_events": pods.events,
        }
        return report(kube, run.plan, state, options, started, extra, pods)
    finally:
        pods.close()


def _occupants(pods: list[Any]) -> dict[str, list[str]]:
    """Per node, the pods that keep it from being vacated: not finished, not a DaemonSet's or a node's (mirror)."""
    held: dict[str, list[str]] = {}
    for pod in pods:
        owner = controller_of(pod)
        if not pod.spec.node_name or (pod.status and pod.status.phase in FINISHED) or (owner is not None and owner.kind in ("DaemonSet", "Node")):
            continue
        held.setdefault(pod.spec.node_name, []).append(f"{pod.metadata.namespace}/{pod.metadata.name}")
    return held


def _wait_originals_gone(kube: Kube, state: ApplyState, cache: PodCache | None) -> tuple[list[Any], float]:
    """The pods once every evicted original is gone (or ``GONE_TIMEOUT_S`` passed), and the seconds waited."""
    originals = {r["pod"]["uid"] for r in state.moves.values() if r.get("phase") == "done"}
    deadline = time.monotonic() + GONE_TIMEOUT_S
    waited = 0.0
    while True:
        mark = cache.mark() if cache else 0
        pods = cache.pods() if cache else list_pods(kube)
        if not originals & {p.metadata.uid for p in pods} or time.monotonic() > deadline:
            return pods, waited
        if cache:
            waited += cache.wait(mark, 1.0)
        else:
            time.sleep(0.2)
            waited += 0.2


def report(
    kube: Kube, plan: DefragPlan, state: ApplyState, options: ApplyOptions, started: float, extra: dict[str, Any], cache: PodCache | None = None
) -> dict[str, Any]:
    pods, gone_wait_s = _wait_originals_gone(kube, state, cache)
    held = _occupants(pods)
    planned = sorted(plan.vacated_nodes)
    vacated = [n for n in planned if n not in held]
    waves = [w for w in state.waves if not w.get("stopped")]
    moves = len(plan.moves())
    done = sum(r.get("phase") == "done" for r in state.moves.values())
    on_target = sum(w["on_target"] for w in waves)
    total_s = time.monotonic() - started if extra else sum(w["time_s"] for w in waves)
    wait_s = float(extra["wait_s"]) + gone_wait_s if extra else sum(w["wait_s"] for w in waves)
    return {
        "plan": state.plan_id,
        "status": state.status,
        "via": "eviction",
        "steer": options.steer,
        "nodes_vacated_planned": len(planned),
        "nodes_vacated": len(vacated),
        "vacated_ratio": round(len(vacated) / len(planned), 4) if planned else 1.0,
        "not_vacated": {n: held[n][:5] for n in planned if n in held},
        "moves_planned": moves,
        "moves_done": done,
        "replacements_on_target": on_target,
        "replacements_elsewhere": done - on_target,
        "on_target_share": round(on_target / done, 4) if done else None,
        "pdb_refusals": sum(w["pdb_refusals"] for w in waves),
        "forced_deletes": sum(w.get("forced", 0) for w in waves),
        "evictions": sum(w.get("evictions", 0) for w in waves),
        "time_s": round(total_s, 3),
        "wait_s": round(wait_s, 3),
        "overhead_s": round(total_s - wait_s, 3),
        "overhead_share": round((total_s - wait_s) / total_s, 4) if total_s > 0 else 0.0,
        "on_drift": options.on_drift,
        "replans": [{k: r[k] for k in ("after_wave", "why", "changes", "plan_s")} for r in state.replans],
        "drift": state.drift,
        "node_patches": extra.get("node_patches"),
        "blocked_node_s": extra.get("blocked_node_s"),
        "blocked_share": extra.get("blocked_share"),
        "pod_watch_events": extra.get("pod_watch_events"),
        "waves": waves,
    }


def abort(kube: Kube, plan: DefragPlan, state_namespace: str, log: Callable[..., None]) -> dict[str, Any]:
    """Undo what runs of ``plan`` left: taints, copies whose original still runs, the state (see the docstring)."""
    plan_id = plan_digest(plan)
    untainted = set_taints(kube, tainted_nodes(kube, plan_id), plan_id, False)
    pods = list_pods(kube)
    uids = {p.metadata.uid for p in pods}
    removed, kept = [], []
    for pod in pods:
        if (pod.metadata.labels or {}).get(PLAN_LABEL) != plan_id:
            continue
        original = (pod.metadata.annotations or {}).get("planner.io/copy-of")
        ref = PodRef.of(pod)
        if original in uids:
            delete_pod(kube, ref, "copy")
            removed.append(f"{ref.namespace}/{ref.name}")
        else:
            try:
                kube.core.patch_namespaced_pod(ref.name, ref.namespace, {"metadata": {"labels": {PLAN_LABEL: None}}})
            except Exception as err:  # noqa: BLE001
                if getattr(err, "status", None) == 403:
                    raise refused(err, "patch", "pods") from None
                raise ApplyError([f"unlabelling {ref.namespace}/{ref.name}: {server_answer(err)}"], 1) from None
            kept.append(f"{ref.namespace}/{ref.name}")
    had_state = delete(kube, state_namespace, plan_id)
    log("aborted", plan=plan_id, untainted=untainted, copies_removed=len(removed), copies_kept=len(kept), state_removed=had_state)
    return {
        "plan": plan_id,
        "aborted": True,
        "nodes_untainted": untainted,
        "copies_removed": removed,
        "copies_kept_as_workload": kept,
        "state_removed": had_state,
    }
