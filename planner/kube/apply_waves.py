"""One wave of a plan carried out on a live cluster (``planner apply --via eviction``).

The wave's moves run target node by target node (``apply_steer``: the target open, the closed nodes tainted).
For each target, in one polling loop until every move is done or the wave's deadline passes:

* a bare pod (no controller): its copy is created pinned to the target (``apply_live.pinned_copy``), and only
  once the copy is Running and Ready is the original evicted: make-before-break;
* a pod a controller owns (ReplicaSet, StatefulSet, Job, ...): the pods its owner has are recorded, the pod is
  evicted, and the move is done when a pod of that owner not among those recorded is Running and Ready (on the
  target when steering worked; elsewhere is counted as such). A replacement that stays unscheduled for
  ``steer_grace_s`` opens the cluster but the nodes still to vacate (``Steering.relax``);
* an eviction the API refuses with 429 (a PodDisruptionBudget allows no disruption now) is retried with a
  backoff (0.2 s doubling to 5 s) until the deadline; then the wave stops cleanly: copies whose original still
  runs are deleted, the target closed, the state says ``stopped`` and the refused pods are named. With
  ``force_delete`` the refused pods are deleted instead (bypassing the budget) and the wave goes on.

Every step is recorded (``apply_state``) before it is taken. Evictions carry the pod's UID as a precondition,
so a StatefulSet's replacement (same name, new UID) is never evicted in its place."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, refused, server_answer
from planner.kube.apply_evict import Events, delete_pod, evict, evict_many
from planner.kube.apply_live import LivePods, PodRef, controller_of, copy_name, is_ready, owned_by, pinned_copy
from planner.kube.apply_state import ApplyState, save
from planner.kube.apply_steer import Steering
from planner.kube.apply_watch import PodCache
from planner.plans import DefragPlan

BACKOFF_MIN_S = 0.2
BACKOFF_MAX_S = 5.0
EXIT_STOPPED = 1


@dataclass
class Run:
    """Everything a wave needs: the client, the plan, its state, the steering, the options and the clocks."""

    kube: Kube
    plan: DefragPlan
    plan_id: str
    state: ApplyState
    steering: Steering
    pods: PodCache
    log: Callable[..., None]
    force_delete: bool = False
    wave_deadline_s: float = 600.0
    steer_grace_s: float = 30.0
    evictions: int = 0
    wait_s: float = 0.0
    remaining_sources: set[str] = field(default_factory=set)
    node_count: int = 0
    interrupted: bool = False
    """Set by the SIGINT handler: the run stops at the next point where its state is recorded."""
    events: Events | None = None
    prefetched: dict[str, str] = field(default_factory=dict)
    """Answers of evictions sent together before the moves' steps read them (``_prefetch_evictions``)."""
    retry_at: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per move refused by a budget: when to try the eviction again and the backoff that led there."""


def _exists(kube: Kube, ref: PodRef) -> bool:
    """Whether the pod (this UID) is in the cluster, asked of the API server rather than the watch."""
    try:
        answer = kube.core.read_namespaced_pod(ref.name, ref.namespace, _preload_content=False)
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) == 404:
            return False
        if getattr(err, "status", None) == 403:
            raise refused(err, "get", "pods") from None
        raise ApplyError([f"reading pod {ref.namespace}/{ref.name}: {server_answer(err)}"], EXIT_STOPPED) from None
    return bool(json.loads(answer.data)["metadata"]["uid"] == ref.uid)


def current_pod(run: Run, wave: int, index: int, live: LivePods) -> Any | None:
    """The live pod a move moves: the plan's pod on its first move, else the pod its previous move left."""
    move = run.plan.waves[wave][index]
    for w in range(wave - 1, -1, -1):
        for k, earlier in enumerate(run.plan.waves[w]):
            if earlier.pod == move.pod:
                now = run.state.move(w, k).get("now")
                return live.by_uid.get(now["uid"]) if now else None
    return live.find(move.pod, move.uid)


def prepare_wave(run: Run, wave: int) -> list[str]:
    """Record each pending move's pod and owner; the drift found (a pod gone or not on its source), one line each."""
    live = LivePods(run.pods.pods())
    drift = []
    for index, move in enumerate(run.plan.waves[wave]):
        record = run.state.move(wave, index)
        if record["phase"] != "pending":
            continue
        pod = current_pod(run, wave, index, live)
        if pod is None or pod.spec.node_name != move.from_ or pod.metadata.deletion_timestamp is not None:
            where = "gone" if pod is None else f"on node '{pod.spec.node_name}'" + (" and terminating" if pod.metadata.deletion_timestamp else "")
            drift.append(f"waves[{wave}][{index}]: pod '{move.pod}' should be on node '{move.from_}'; it is {where}")
            continue
        owner = controller_of(pod)
        record["pod"] = PodRef.of(pod).as_dict()
        record["owner"] = {"kind": owner.kind, "name": owner.name, "uid": owner.uid} if owner else None
        record["target"] = move.to
    return drift


def run_wave(run: Run, wave: int) -> dict[str, Any]:
    """Carry out one wave (its drift already checked by ``prepare_wave``); returns its measures."""
    started = time.monotonic()
    wait_before = run.wait_s
    evictions_before = run.evictions
    moves = run.plan.waves[wave]
    measures: dict[str, Any] = {"wave": wave + 1, "moves": len(moves), "pdb_refusals": 0, "refused_pods": [], "forced": 0}
    targets: list[str] = []
    for move in moves:
        if move.to not in targets:
            targets.append(move.to)
    deadline = started + run.wave_deadline_s
    if run.steering.mode == "fit":
        everything = run.pods.pods()
        pending = [k for k in range(len(moves)) if run.state.move(wave, k)["phase"] != "done"]
        run.steering.open_window(set(targets), _pending_owned_specs(run, wave, pending, LivePods(everything)), everything)
    try:
        for target in targets:
            indexes = [k for k, m in enumerate(moves) if m.to == target and run.state.move(wave, k)["phase"] != "done"]
            if not indexes:
                continue
            run.steering.open_target(target)
            try:
                _run_target(run, wave, target, indexes, deadline, measures)
            finally:
                run.steering.close_target(target, vacated=target in run.remaining_sources)
    finally:
        run.steering.end_window()
    records = [run.state.move(wave, k) for k in range(len(moves))]
    measures["done"] = sum(r["phase"] == "done" for r in records)
    measures["on_target"] = sum(r["phase"] == "done" and r.get("landed") == moves[k].to for k, r in enumerate(records))
    measures["elsewhere"] = measures["done"] - measures["on_target"]
    measures["evictions"] = run.evictions - evictions_before
    measures["time_s"] = round(time.monotonic() - started, 3)
    measures["wait_s"] = round(run.wait_s - wait_before, 3)
    measures["overhead_s"] = round(measures["time_s"] - measures["wait_s"], 3)
    return measures


def _pending_owned_specs(run: Run, wave: int, indexes: list[int], live: LivePods) -> list[dict[str, Any]]:
    """The specs of the target's pods a controller owns that are still to be evicted (what ``fit`` steers)."""
    specs = []
    for k in indexes:
        record = run.state.move(wave, k)
        if record.get("owner") is not None and record["phase"] in ("pending", "evicting"):
            pod = live.by_uid.get(record["pod"]["uid"])
            if pod is not None:
                specs.append(pod.raw.get("spec") or {})
    return specs


def _under_way(record: dict[str, Any]) -> bool:
    """A move whose pod is being copied or replaced now (an eviction refused last time is not under way)."""
    return record["phase"] in ("copying", "copied", "evicted") or (record["phase"] == "evicting" and not record.get("refused"))


def _run_target(run: Run, wave: int, target: str, indexes: list[int], deadline: float, measures: dict[str, Any]) -> None:
    unscheduled_since: dict[str, float] = {}
    namespaces = {run.state.move(wave, k)["pod"]["namespace"] for k in indexes}
    while True:
        active = indexes
        if run.interrupted:
            # Ctrl-C: start nothing new; finish the moves under way (a replacement or copy already asked for
            # lands before the holds are rolled back, so it cannot land on a node the plan vacates)
            active = [k for k in indexes if _under_way(run.state.move(wave, k))]
            if not active:
                raise KeyboardInterrupt
        mark = run.pods.mark()
        pods = run.pods.pods(namespaces)
        live = LivePods(pods)
        progressed = _prefetch_evictions(run, wave, active, live, pods)
        for k in active:
            record = run.state.move(wave, k)
            before = record["phase"]
            step = _bare_step if record.get("owner") is None else _owned_step
            outcome = step(run, wave, k, target, live, pods)
            if outcome == "refused":
                measures["pdb_refusals"] += 1
            if record["phase"] != before:
                progressed = True
                if record["phase"] == "done":
                    run.log("move-done", wave=wave + 1, pod=f"{record['pod']['namespace']}/{record['pod']['name']}", node=record.get("landed"), target=target)
            if outcome == "unscheduled":
                unscheduled_since.setdefault(str(k), time.monotonic())
        if all(run.state.move(wave, k)["phase"] == "done" for k in indexes):
            return
        refused_now = [
            f"{r['pod']['namespace']}/{r['pod']['name']}" for r in (run.state.move(wave, k) for k in indexes) if r["phase"] == "evicting" and r.get("refused")
        ]
        if unscheduled_since and time.monotonic() - min(unscheduled_since.values()) > run.steer_grace_s and not run.steering.relaxed:
            run.log("steer-relaxed", wave=wave + 1, target=target, reason="a replacement did not fit the target")
            run.steering.relax(run.remaining_sources)
        if time.monotonic() > deadline:
            if refused_now and run.force_delete:
                for k in indexes:
                    record = run.state.move(wave, k)
                    if record["phase"] == "evicting" and record.get("refused"):
                        delete_pod(run.kube, PodRef.from_dict(record["pod"]), "pod (--force-delete: the PodDisruptionBudget is bypassed)")
                        record["phase"] = "evicted"
                        record["forced"] = True
                        measures["forced"] += 1
                        run.log("force-deleted", wave=wave + 1, pod=f"{record['pod']['namespace']}/{record['pod']['name']}")
                save(run.kube, run.state)
                deadline = time.monotonic() + run.wave_deadline_s
                continue
            _stop(run, wave, target, indexes, refused_now, measures)
        if progressed and any(run.state.move(wave, k)["phase"] == "copied" for k in indexes):
            # a copy just made is recorded (its UID); other progress is written with the wave's end: a resumed
            # run learns it from the cluster (the original gone, a replacement not among the owner's known pods)
            save(run.kube, run.state)
        now = time.monotonic()
        retries = [run.retry_at[key][0] - now for key in (f"{wave}.{k}" for k in indexes) if key in run.retry_at]
        pause = min([BACKOFF_MAX_S, max(0.0, deadline - now) + 0.05, *retries])
        run.wait_s += run.pods.wait(mark, max(0.0, pause))


def _note_owners_pods(run: Run, record: dict[str, Any], pods: list[Any]) -> None:
    """Record the pods the move's owner has before its pod is evicted (its replacement is a pod not among them)."""
    owner_uid = record["owner"]["uid"]
    known = set(run.state.known.get(owner_uid, []))
    known.update(p.metadata.uid for p in owned_by(pods, owner_uid))
    run.state.known[owner_uid] = sorted(known)


def _ready_to_evict(run: Run, key: str, record: dict[str, Any], live: LivePods) -> bool:
    """Whether the move's step would send its eviction now: the original still there, no backoff pending, an
    owned pod not yet evicted or a bare pod whose copy is Running and Ready."""
    original = live.by_uid.get(record["pod"]["uid"])
    retry = run.retry_at.get(key)
    if original is None or original.metadata.deletion_timestamp is not None or (retry is not None and time.monotonic() < retry[0]):
        return False
    if record.get("owner") is not None:
        return record["phase"] in ("pending", "evicting")
    copy_pod = live.by_uid.get(str((record.get("copy") or {}).get("uid")))
    return record["phase"] in ("copied", "evicting") and copy_pod is not None and is_ready(copy_pod)


def _prefetch_evictions(run: Run, wave: int, active: list[int], live: LivePods, pods: list[Any]) -> bool:
    """Send together the evictions several moves are ready for: each recorded ``evicting`` (one state write for
    all) before any is sent, the answers kept for the moves' own steps; whether a phase changed."""
    ready = [k for k in active if _ready_to_evict(run, f"{wave}.{k}", run.state.move(wave, k), live)]
    if len(ready) < 2:
        return False
    for k in ready:
        record = run.state.move(wave, k)
        if record.get("owner") is not None and record["phase"] == "pending":
            _note_owners_pods(run, record, pods)
        record["phase"] = "evicting"
    save(run.kube, run.state)
    answers = evict_many(run.kube, [PodRef.from_dict(run.state.move(wave, k)["pod"]) for k in ready])
    run.prefetched.update({f"{wave}.{k}": answer for k, answer in zip(ready, answers, strict=True)})
    return True


def _evict_step(run: Run, wave: int, index: int, record: dict[str, Any], live: LivePods) -> str:
    """Evict the move's original (phase ``evicting`` recorded first); a pod already gone or terminating counts."""
    original = live.by_uid.get(record["pod"]["uid"])
    if original is None or original.metadata.deletion_timestamp is not None:
        record["phase"] = "evicted"
        return "evicted"
    key = f"{wave}.{index}"
    retry = run.retry_at.get(key)
    answer = run.prefetched.pop(key, None)
    if answer is None:
        if retry is not None and time.monotonic() < retry[0]:
            return "backoff"
        if record["phase"] != "evicting":
            record["phase"] = "evicting"
            save(run.kube, run.state)
        answer = evict(run.kube, PodRef.from_dict(record["pod"]))
    if answer == "refused":
        record["refused"] = int(record.get("refused", 0)) + 1
        backoff = min(BACKOFF_MAX_S, retry[1] * 2) if retry else BACKOFF_MIN_S
        run.retry_at[key] = (time.monotonic() + backoff, backoff)
        return "refused"
    run.retry_at.pop(key, None)
    run.evictions += answer == "ok"
    record["phase"] = "evicted"  # saved by the polling loop: a resumed run finds the original gone or terminating
    run.log("evicted", wave=wave + 1, pod=f"{record['pod']['namespace']}/{record['pod']['name']}", node=original.spec.node_name)
    message = f"evicted by planner apply (plan {run.plan_id}, wave {wave + 1}) to move it to node {record.get('target')}"
    if run.events is not None:
        run.events.record(PodRef.from_dict(record["pod"]), "PlannerEvicted", message)
    return "evicted"


def _bare_step(run: Run, wave: int, index: int, target: str, live: LivePods, pods: list[Any]) -> str:
    record = run.state.move(wave, index)
    ns = record["pod"]["namespace"]
    if record["phase"] == "pending":
        record["copy"] = {"namespace": ns, "name": copy_name(record["pod"]["name"], run.plan_id, wave)}
        record["phase"] = "copying"
        save(run.kube, run.state)
    if record["phase"] == "copying":
        name = record["copy"]["name"]
        found = [p for p in live.by_name.get(f"{ns}/{name}", [])]
        if found:
            record["copy"]["uid"] = found[0].metadata.uid
        else:
            original = live.by_uid.get(record["pod"]["uid"])
            if original is None:
                raise ApplyError([f"waves[{wave}][{index}]: pod {ns}/{record['pod']['name']} disappeared before its copy was made"], EXIT_STOPPED)
            body = pinned_copy(original, run.kube, target, name, run.plan_id)
            try:
                made = run.kube.core.create_namespaced_pod(ns, body)
            except Exception as err:  # noqa: BLE001
                if getattr(err, "status", None) == 403:
                    raise refused(err, "create", "pods") from None
                raise ApplyError([f"creating the copy {ns}/{name} of a bare pod: {server_answer(err)}"], EXIT_STOPPED) from None
            record["copy"]["uid"] = made.metadata.uid
            run.log("copied", wave=wave + 1, pod=f"{ns}/{record['pod']['name']}", copy=name, target=target)
        record["phase"] = "copied"  # saved by the polling loop: a resumed run finds the copy by name
        return "copied"
    copy_pod = live.by_uid.get(record["copy"]["uid"])
    if record["phase"] == "copied":
        if copy_pod is None:
            if _exists(run.kube, PodRef.from_dict(record["copy"])):
                return "waiting"  # made a moment ago: the watch has not brought it yet
            raise ApplyError([f"waves[{wave}][{index}]: the copy {ns}/{record['copy']['name']} was deleted by someone else"], EXIT_STOPPED)
        if not is_ready(copy_pod):
            return "waiting"
    if record["phase"] in ("copied", "evicting"):
        outcome = _evict_step(run, wave, index, record, live)
        if outcome != "evicted":
            return outcome
    if record["phase"] == "evicted" and copy_pod is not None:
        record["phase"] = "done"
        record["now"] = dict(record["copy"])
        record["landed"] = copy_pod.spec.node_name
    return record["phase"]


def _owned_step(run: Run, wave: int, index: int, target: str, live: LivePods, pods: list[Any]) -> str:
    record = run.state.move(wave, index)
    owner_uid = record["owner"]["uid"]
    if record["phase"] == "pending":
        _note_owners_pods(run, record, pods)
    if record["phase"] in ("pending", "evicting"):
        outcome = _evict_step(run, wave, index, record, live)
        if outcome != "evicted":
            return outcome
    if record["phase"] != "evicted":
        return record["phase"]
    known = set(run.state.known.get(owner_uid, []))
    fresh = [p for p in owned_by(pods, owner_uid) if p.metadata.uid not in known and p.metadata.deletion_timestamp is None]
    if any(p.spec.node_name for p in fresh):
        record["bound"] = True
    ready = sorted((p for p in fresh if is_ready(p)), key=lambda p: (p.spec.node_name != target, p.metadata.name))
    if not ready:
        return "unscheduled" if any(not p.spec.node_name for p in fresh) else "waiting"
    chosen = ready[0]
    run.state.known[owner_uid] = sorted(known | {chosen.metadata.uid})
    record["phase"] = "done"
    record["now"] = PodRef.of(chosen).as_dict()
    record["landed"] = chosen.spec.node_name
    run.log(
        "replaced",
        wave=wave + 1,
        pod=f"{record['pod']['namespace']}/{record['pod']['name']}",
        replacement=chosen.metadata.name,
        node=chosen.spec.node_name,
        target=target,
    )
    return "done"


def _stop(run: Run, wave: int, target: str, indexes: list[int], refused_now: list[str], measures: dict[str, Any]) -> None:
    """The deadline passed: roll back the copies whose original still runs, record ``stopped``, name the pods."""
    waiting = []
    for k in indexes:
        record = run.state.move(wave, k)
        if record["phase"] in ("copying", "copied", "evicting") and record.get("owner") is None and record.get("copy", {}).get("uid"):
            delete_pod(run.kube, PodRef.from_dict(record["copy"]), "copy")
            record.pop("copy")
            record["phase"] = "pending"
        elif record["phase"] != "done":
            waiting.append(f"{record['pod']['namespace']}/{record['pod']['name']} ({record['phase']})")
    run.state.status = "stopped"
    run.state.waves.append({**measures, "stopped": True})
    save(run.kube, run.state)
    problems = [f"wave {wave + 1} stopped after {run.wave_deadline_s:.0f} s at target node {target}"]
    if refused_now:
        problems.append(f"PodDisruptionBudgets still refuse the eviction of: {', '.join(refused_now)}")
    if waiting:
        problems.append(f"not done: {', '.join(waiting)}")
    problems.append("the state is recorded: `planner apply PLAN --resume` retries this wave, `--abort` undoes the holds and copies")
    raise ApplyError(problems, EXIT_STOPPED)
