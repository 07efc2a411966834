"""``planner verify``: a plan replayed on a Kubernetes control plane and judged by Kubernetes alone (issue 60).

* **Defrag and make-room plans**, wave by wave, make-before-break: each moving pod's replacement
  (``verify_steps.replacement``) is created pinned to its target and scheduled by the real kube-scheduler while the
  old pod still runs; once every admitted replacement of the wave is Running and Ready and the budgets have counted
  them, the old pods are evicted through the Eviction API (``verify_evict``) and waited for until gone. A move is
  refused by the scheduler (its FailedScheduling message) or by the Eviction API (its answer, naming the budget);
  a refused move's replacement is deleted and the pod stays where it was, so its later moves are not checked
  (``skipped``). The make-room plan's placements of pending pods follow the last wave.
* **Preemption plans**: the victims evicted through the Eviction API and waited for until gone, then the job's
  pods placed. **Allocation plans**: every placement.
* **Placements**: the pending pod itself, pinned to its node and released from the load gate
  (``verify_steps.pin_pending``); a pod kube-scheduler first refused (and may then have placed by preempting pods
  the plan does not name) is refused.

While the replay runs, ``verify_hold`` keeps the cluster as the plan saw it: workload controllers' new pods are
gated, replacements are owned by a hold Deployment (never adopted) and never preempt. Nothing here binds a pod: every
pod lands where kube-scheduler puts it."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, server_answer
from planner.kube.apply_live import LivePods, PodRef, View, is_ready, list_pods
from planner.kube.verify_evict import Refusal, evict_all, wait_gone, wait_settled
from planner.kube.verify_hold import Holds
from planner.kube.verify_plans import plan_counts, plan_problems
from planner.kube.verify_steps import DEFAULT_SCHEDULER, RUN_LABEL, Verdict, pin_pending, plugin_of, replacement, scheduler_reason, short_name, verdict
from planner.plans import AnyPlan, DefragPlan, Move, Placement, PreemptPlan

POLL_MIN_S = 0.1
POLL_MAX_S = 1.0
CLASS_WAIT_S = 30.0
SCHEDULER = "kube-scheduler"
EVICTION_API = "Eviction API"
API_SERVER = "API server"


@dataclass(frozen=True)
class VerifyOptions:
    step_timeout_s: float = 120.0
    """How long one step (a wave's replacements, its evictions, a set of placements) may wait for Kubernetes."""


@dataclass
class Tracked:
    """A pod the plan moves: its author's object (every replacement is made from it) and the live pod that holds
    its place now (the original, then its latest replacement)."""

    original: View
    now: PodRef


@dataclass
class Replay:
    kube: Kube
    run_id: str
    options: VerifyOptions
    log: Callable[..., None]
    holds: Holds
    checked: dict[str, int] = field(default_factory=lambda: {"moves": 0, "evictions": 0, "placements": 0})
    refusals: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    tracked: dict[str, Tracked] = field(default_factory=dict)
    lost: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def refuse(self, step: str, pod: str, node: str, by: str, message: str, **extra: Any) -> None:
        record = {"step": step, "pod": pod, "node": node, "by": by, "message": message, **extra}
        self.refusals.append(record)
        self.log("refused", **{k: v for k, v in record.items() if v is not None})

    def scheduler_refusal(self, step: str, pod: str, node: str, answer: Verdict | None, seen: View | None = None, **extra: Any) -> None:
        if answer is None:
            message, plugin = f"no answer from kube-scheduler within {self.options.step_timeout_s:.0f} s ({_state(seen)})", None
        elif answer.admitted and answer.node != node:
            message, plugin = f"bound to node '{answer.node}', not the plan's", None
        elif answer.admitted:
            message, plugin = f"bound to node '{node}' but not Running and Ready within {self.options.step_timeout_s:.0f} s ({_state(seen)})", None
        else:
            message, plugin = str(answer.message), plugin_of(str(answer.message))
        reason = scheduler_reason(message) if answer is not None and answer.message else message
        self.refuse(step, pod, node, SCHEDULER, message, plugin=plugin, reason=reason, **extra)

    def answers(self, uids: set[str], ready: bool) -> dict[str, tuple[Verdict | None, View | None]]:
        """Wait until kube-scheduler has answered for every pod of ``uids`` (and, with ``ready``, each admitted pod is
        Running and Ready), or the step's deadline; the first answer seen for each pod counts."""
        deadline = time.monotonic() + self.options.step_timeout_s
        seen: dict[str, tuple[Verdict | None, View | None]] = {}
        pause = POLL_MIN_S
        while True:
            pods = {p.metadata.uid: p for p in _labelled(self.kube, self.run_id)}
            for uid in uids:
                pod = pods.get(uid)
                if pod is None:
                    continue
                first = seen[uid][0] if uid in seen else None
                if first is None:
                    first = verdict(pod)
                    if first is not None and not first.admitted and pod.status and pod.status.nominated_node_name:
                        first = Verdict(None, f"{first.message} (kube-scheduler nominated the node for preemption)")
                seen[uid] = (first, pod)
            done = [u for u in uids if u in seen and seen[u][0] is not None and (not ready or not seen[u][0].admitted or is_ready(seen[u][1]))]  # type: ignore[union-attr]  # seen[u][0] is checked not None just before; mypy does not narrow through the subscript
            if len(done) == len(uids) or time.monotonic() > deadline:
                return {u: seen.get(u, (None, None)) for u in uids}
            time.sleep(pause)
            pause = min(POLL_MAX_S, pause * 1.5)

    # -- defrag and make-room ------------------------------------------------------------------------------

    def wave(self, w: int, moves: list[Move], live: LivePods) -> None:
        started = time.monotonic()
        made: dict[str, tuple[Move, Tracked, PodRef]] = {}
        for move in moves:
            if move.pod in self.lost:
                self.skipped.append({"wave": w + 1, "pod": move.pod, "from": move.from_, "to": move.to})
                continue
            tracked = self.tracked.get(move.pod)
            if tracked is None:
                pod = live.find(move.pod, move.uid)
                assert pod is not None  # plan_problems checked every first move
                tracked = self.tracked[move.pod] = Tracked(pod, PodRef.of(pod))
            self.checked["moves"] += 1
            namespace = tracked.original.metadata.namespace
            name = short_name(tracked.original.metadata.name, f"{self.run_id}/{w}/{move.pod}")
            body = replacement(tracked.original.raw, move.to, name, self.run_id, self.holds.holder(namespace), self.holds.priority_class(tracked.original))
            try:
                created = _create_pod(self.kube, namespace, body)
            except Exception as err:  # noqa: BLE001 - the API server's answer is the verdict
                self.refuse("move", move.pod, move.to, API_SERVER, server_answer(err), wave=w + 1, **{"from": move.from_})
                self.lost.add(move.pod)
                continue
            made[json.loads(created.data)["metadata"]["uid"]] = (move, tracked, PodRef(namespace, name, json.loads(created.data)["metadata"]["uid"]))
        answers = self.answers(set(made), ready=True)
        admitted: dict[str, tuple[Move, Tracked, PodRef]] = {}
        for uid, (move, tracked, ref) in made.items():
            answer, seen = answers[uid]
            if answer is not None and answer.node == move.to and seen is not None and is_ready(seen):
                admitted[uid] = (move, tracked, ref)
                continue
            self.scheduler_refusal("move", move.pod, move.to, answer, seen, wave=w + 1, **{"from": move.from_})
            self.lost.add(move.pod)
            _delete(self.kube, ref)
        deadline = time.monotonic() + self.options.step_timeout_s
        wait_settled(self.kube, {ref.namespace for _, _, ref in admitted.values()}, deadline)
        originals = {uid: tracked.now for uid, (_, tracked, _) in admitted.items()}
        self.checked["evictions"] += len(originals)
        refusals, _ = evict_all(self.kube, originals, deadline)
        for uid, refusal in refusals.items():
            move, tracked, ref = admitted.pop(uid)
            self.eviction_refusal(move.pod, move.from_, refusal, wave=w + 1, to=move.to)
            self.lost.add(move.pod)
            _delete(self.kube, ref)
        left = wait_gone(self.kube, [originals[uid] for uid in admitted], time.monotonic() + self.options.step_timeout_s)
        if left:
            raise ApplyError(
                [
                    f"wave {w + 1}: evicted pods still there after {self.options.step_timeout_s:.0f} s: {', '.join(r.namespace + '/' + r.name for r in left[:5])}"
                ],
                1,
            )
        for move, tracked, ref in admitted.values():
            tracked.now = ref
        self.log("wave", wave=w + 1, moves=len(moves), admitted=len(admitted), time_s=round(time.monotonic() - started, 2))

    def eviction_refusal(self, pod: str, node: str, refusal: Refusal, **extra: Any) -> None:
        self.refuse("eviction", pod, node, EVICTION_API, refusal.answer, budgets=list(refusal.budgets), **extra)

    def defrag(self, plan: DefragPlan, live: LivePods) -> None:
        for w, moves in enumerate(plan.waves):
            self.wave(w, moves, live)
        if plan.placements:
            self.place(plan.placements, live)

    # -- placements and preemption -------------------------------------------------------------------------

    def place(self, placements: list[Placement], live: LivePods) -> None:
        """Pin each pending pod to its node and release it; every one must be bound there by kube-scheduler."""
        waiting: dict[str, Placement] = {}
        released_at = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
        for placement in placements:
            pod = live.find(placement.pod, None)
            assert pod is not None  # plan_problems checked every placement
            self.checked["placements"] += 1
            if (pod.spec.scheduler_name or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
                uid = self.place_replacement(placement, pod)
                if uid is not None:
                    waiting[uid] = placement
                continue
            raw = json.loads(self.kube.core.read_namespaced_pod(pod.metadata.name, pod.metadata.namespace, _preload_content=False).data)
            gates = pin_pending(raw, placement.node, self.run_id)
            try:
                self.kube.core.replace_namespaced_pod(pod.metadata.name, pod.metadata.namespace, raw, _preload_content=False)
            except Exception as err:  # noqa: BLE001 - the API server's answer is the verdict
                self.refuse("placement", placement.pod, placement.node, API_SERVER, server_answer(err))
                continue
            if gates:
                self.refuse("placement", placement.pod, placement.node, API_SERVER, f"still held by the scheduling gate(s) {', '.join(gates)} of the List")
                continue
            waiting[pod.metadata.uid] = placement
        answers = self.answers(set(waiting), ready=False)
        admitted = {uid for uid, (answer, _) in answers.items() if answer is not None and answer.admitted}
        failed = _failed_scheduling(self.kube, admitted, released_at)
        for uid, placement in waiting.items():
            answer, seen = answers[uid]
            if uid in failed:  # refused first, then bound once kube-scheduler's preemption made room: the plan did not
                answer = Verdict(None, f"{failed[uid]} (then bound after kube-scheduler preempted pods the plan does not name)")
            if answer is None or answer.node != placement.node:
                self.scheduler_refusal("placement", placement.pod, placement.node, answer, seen)

    def place_replacement(self, placement: Placement, pod: View) -> str | None:
        """A pending pod of a scheduler this cluster does not run (``schedulerName`` cannot change): a replacement
        pinned to the node is judged by kube-scheduler in its place, and the run says so (``notes``)."""
        namespace = pod.metadata.namespace
        name = short_name(pod.metadata.name, f"{self.run_id}/placement/{placement.pod}")
        body = replacement(pod.raw, placement.node, name, self.run_id, self.holds.holder(namespace), self.holds.priority_class(pod))
        try:
            created = json.loads(_create_pod(self.kube, namespace, body).data)
        except Exception as err:  # noqa: BLE001 - the API server's answer is the verdict
            self.refuse("placement", placement.pod, placement.node, API_SERVER, server_answer(err))
            return None
        self.notes.append(
            f"pod '{placement.pod}' names schedulerName '{pod.spec.scheduler_name}', which this cluster does not run: a replacement "
            f"scheduled by {DEFAULT_SCHEDULER} was judged in its place (that scheduler's own rules, gangs included, are not)"
        )
        return str(created["metadata"]["uid"])

    def preempt(self, plan: PreemptPlan, live: LivePods) -> None:
        victims: dict[str, PodRef] = {}
        for victim in plan.victims:
            pod = live.find(victim.pod, None)
            assert pod is not None  # plan_problems checked every victim
            victims[victim.pod] = PodRef.of(pod)
        deadline = time.monotonic() + self.options.step_timeout_s
        wait_settled(self.kube, {ref.namespace for ref in victims.values()}, deadline)
        self.checked["evictions"] += len(victims)
        refusals, _ = evict_all(self.kube, victims, deadline)
        nodes = {v.pod: v.node for v in plan.victims}
        for name, refusal in refusals.items():
            self.eviction_refusal(name, nodes[name], refusal)
        wait_gone(self.kube, [ref for name, ref in victims.items() if name not in refusals], time.monotonic() + self.options.step_timeout_s)
        self.place(plan.placements, live)

    def result(self) -> dict[str, Any]:
        by_step = {"moves": "move", "evictions": "eviction", "placements": "placement"}
        refused = {step: sum(1 for r in self.refusals if r["step"] == by_step[step]) for step in self.checked}
        return {
            "checked": dict(self.checked),
            "accepted": {step: self.checked[step] - refused[step] for step in self.checked},
            "refused": len(self.refusals),
            "refusals": self.refusals,
            "skipped": self.skipped,
            "notes": self.notes,
        }


def _state(pod: View | None) -> str:
    """What a pod without an answer looked like last: for the refusal's message."""
    if pod is None:
        return "the pod was not seen"
    conditions = ", ".join(f"{c.type}={c.status}" + (f" {c.reason}" if c.reason else "") for c in (pod.status.conditions if pod.status else None) or [])
    gates = ", ".join(str(g.name) for g in pod.spec.scheduling_gates or [])
    return f"node {pod.spec.node_name or 'none'}, phase {pod.status.phase if pod.status else None}, conditions [{conditions}]" + (
        f", gates [{gates}]" if gates else ""
    )


def _create_pod(kube: Kube, namespace: str, body: dict[str, Any]) -> Any:
    """Create a replacement. Priority admission reads PriorityClasses from its informer: a class created a moment
    ago may not be there yet, so that one refusal is retried (for at most ``CLASS_WAIT_S``)."""
    deadline = time.monotonic() + CLASS_WAIT_S
    while True:
        try:
            return kube.core.create_namespaced_pod(namespace, body, _preload_content=False)
        except Exception as err:
            if getattr(err, "status", None) != 403 or "no PriorityClass with name planner-verify-" not in server_answer(err) or time.monotonic() > deadline:
                raise
        time.sleep(POLL_MIN_S)


def _failed_scheduling(kube: Kube, uids: set[str], since: str) -> dict[str, str]:
    """The first FailedScheduling Event kube-scheduler recorded since ``since`` (RFC 3339, seconds) for each pod of
    ``uids``: a pod it refused at first and bound later, after its own preemption."""
    if not uids:
        return {}
    answer = kube.core.list_event_for_all_namespaces(field_selector="reason=FailedScheduling", _preload_content=False)
    found: dict[str, str] = {}
    for event in sorted(json.loads(answer.data)["items"], key=lambda e: str(e.get("firstTimestamp") or e.get("eventTime") or "")):
        uid = (event.get("involvedObject") or {}).get("uid")
        when = str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")[:19]
        if uid in uids and uid not in found and when >= since:
            found[uid] = " ".join(str(event.get("message") or "FailedScheduling").split())
    return found


def _labelled(kube: Kube, run_id: str) -> list[View]:
    answer = kube.core.list_pod_for_all_namespaces(label_selector=f"{RUN_LABEL}={run_id}", _preload_content=False)
    return [View(item) for item in json.loads(answer.data)["items"]]


def _delete(kube: Kube, ref: PodRef) -> None:
    """Delete a refused replacement (it would otherwise be scheduled once room appears)."""
    try:
        kube.core.delete_namespaced_pod(ref.name, ref.namespace, grace_period_seconds=0)
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) != 404:
            raise ApplyError([f"deleting the refused replacement {ref.namespace}/{ref.name}: {server_answer(err)}"], 1) from None


def verify_plan(kube: Kube, plan: AnyPlan, run_id: str, options: VerifyOptions, log: Callable[..., None]) -> dict[str, Any]:
    """Replay ``plan`` on the cluster of ``kube`` (see the module docstring); a plan for another snapshot raises
    ``ApplyError`` (exit 2) naming the first mismatching pod before anything is changed."""
    started = time.monotonic()
    live = LivePods(list_pods(kube))
    problems = plan_problems(plan, live)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ApplyError([problems[0] + more, "the plan is not for this cluster's snapshot: plan again from the List; nothing was changed"])
    replay = Replay(kube, run_id, options, log, Holds(kube, run_id))
    namespaces = sorted({p.metadata.namespace for p in live.pods}) or ["default"]
    held_s = replay.holds.hold_controllers("default" if "default" in namespaces else namespaces[0])
    log("hold", policy_s=round(held_s, 2))
    if isinstance(plan, DefragPlan):
        replay.defrag(plan, live)
    elif isinstance(plan, PreemptPlan):
        replay.preempt(plan, live)
    else:
        replay.place(plan.placements, live)
    result = replay.result()
    return {"plan": {"kind": plan.kind, **plan_counts(plan)}, **result, "time_s": round(time.monotonic() - started, 3)}
