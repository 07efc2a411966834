"""The waves of a run, one after the other, with the drift check after each (``planner apply``).

Per wave: its pods re-checked (a pod gone or elsewhere: stop before the wave, exit 1), the wave carried out
(``apply_waves``), recorded; then the live cluster compared with what the plan and the moves done so far
expect (``apply_drift``). On drift, with work left, ``--on-drift stop`` stops before the next wave (exit 1,
every difference listed, the state ``stopped``: ``--resume`` goes on from the next wave, re-checking its
pods), and ``--on-drift replan`` plans the rest from the live cluster (``apply_replan``), records the new
waves and what changed in the state, moves the holds to the new plan's sources and goes on.

Ctrl-C (SIGINT) during a wave starts no new move but lets the moves under way finish (a replacement or a copy
already asked for is waited for, so it cannot land on a node the plan vacates once the holds are gone; an
eviction a budget refused is not retried); then the holds are rolled back (every planner taint removed) and
the state says ``interrupted`` and the wave to resume at. A second Ctrl-C stops at once."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner.kube.apply_client import ApplyError, Kube
from planner.kube.apply_drift import Expected, counts
from planner.kube.apply_evict import Events
from planner.kube.apply_replan import changes, effective, replan
from planner.kube.apply_state import ApplyState, save, state_name
from planner.kube.apply_steer import DEFAULT_STEER, Steering, list_nodes
from planner.kube.apply_watch import PodCache
from planner.kube.apply_waves import Run, prepare_wave, run_wave
from planner.plans import DefragPlan, Move

ON_DRIFT = ("stop", "replan")


@dataclass(frozen=True)
class ApplyOptions:
    state_namespace: str = "default"
    steer: str = DEFAULT_STEER
    dry_run: bool = False
    resume: bool = False
    force_delete: bool = False
    wave_deadline_s: float = 600.0
    steer_grace_s: float = 30.0
    on_drift: str = "stop"


def sources_from(plan: DefragPlan, wave: int) -> set[str]:
    return {m.from_ for w in plan.waves[wave:] for m in w}


def with_replans(plan: DefragPlan, state: ApplyState) -> DefragPlan:
    """The plan a recorded execution carries out: ``plan`` with each recorded re-plan's waves in place of the
    waves it replaced."""
    for record in state.replans:
        new = DefragPlan(waves=[[Move.model_validate(m) for m in wave] for wave in record["waves"]], vacated_nodes=record["vacated"])
        plan = effective(plan, int(record["after_wave"]), new, [])
    return plan


def _vacated_already(plan: DefragPlan, pods: list[Any]) -> list[str]:
    held = {p.spec.node_name for p in pods if p.spec.node_name and counts(p)}
    return sorted(n for n in plan.vacated_nodes if n not in held)


def _on_drift(run: Run, options: ApplyOptions, wave: int, differences: list[str], where: str) -> Expected:
    """Stop, or re-plan the rest and return the new baseline (see the module docstring)."""
    state, kube = run.state, run.kube
    if options.on_drift == "stop":
        state.status = "stopped"
        state.drift = differences
        save(kube, state)
        raise ApplyError(
            [
                f"drift after wave {wave + 1}: the cluster moved under the plan; stopped before wave {wave + 2}",
                *differences,
                f"the state is in {where}: --resume goes on from wave {wave + 2} (its pods re-checked), --on-drift replan plans the rest from the live cluster, --abort undoes",
            ],
            1,
        )
    done = sum(r.get("phase") == "done" for r in state.moves.values())
    started = time.monotonic()
    new, warnings = replan(kube, run.plan, run.plan_id, done)
    live = run.pods.pods()
    already = _vacated_already(run.plan, live)
    changed = changes(run.plan, wave + 1, new, already)
    run.plan = effective(run.plan, wave + 1, new, already)
    state.replans.append(
        {
            "after_wave": wave + 1,
            "why": differences,
            "changes": changed,
            "plan_s": round(time.monotonic() - started, 3),
            "warnings": warnings[:10],
            "waves": [[m.model_dump(by_alias=True, exclude_none=True) for m in w] for w in new.waves],
            "vacated": list(new.vacated_nodes),
        }
    )
    save(kube, state)
    run.steering.set_holds(sources_from(run.plan, wave + 1) | set(run.plan.vacated_nodes))
    run.log("replanned", after_wave=wave + 1, differences=len(differences), waves=len(new.waves), moves=len(new.moves()), vacated=len(run.plan.vacated_nodes))
    return Expected.of(live, list_nodes(kube))


def _defer_sigint(run: Run) -> Callable[[], None]:
    """A SIGINT handler that asks the run to stop at its next recorded point (a second SIGINT stops at once);
    returns what puts the previous handler back. Outside the main thread (the service's worker) nothing."""

    def handler(_signum: int, _frame: Any) -> None:
        if run.interrupted:
            raise KeyboardInterrupt
        run.interrupted = True
        run.log("interrupt", wave=run.state.next_wave + 1, action="finishing the moves under way, starting no other")

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:
        return lambda: None

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)

    return restore


def execute(kube: Kube, plan: DefragPlan, plan_id: str, state: ApplyState, options: ApplyOptions, pods: PodCache, log: Callable[..., None]) -> Run:
    """Carry out the waves from ``state.next_wave`` on; returns the finished run (its plan is the effective one)."""
    where = f"{options.state_namespace}/{state_name(plan_id)}"
    nodes = list_nodes(kube)
    steering = Steering(kube, plan_id, options.steer, nodes, sources_from(plan, state.next_wave))
    run = Run(kube, plan, plan_id, state, steering, pods, log, options.force_delete, options.wave_deadline_s, options.steer_grace_s)
    run.node_count = len(nodes)
    run.events = Events(kube, plan_id, log)
    log("start", plan=plan_id, waves=len(plan.waves), moves=len(plan.moves()), resume_at=state.next_wave + 1, steer=options.steer, on_drift=options.on_drift)
    expected = Expected.of(pods.pods(), nodes)
    restore = _defer_sigint(run)
    try:
        steering.close_all()
        while state.next_wave < len(run.plan.waves):
            if run.interrupted:
                raise KeyboardInterrupt
            wave = state.next_wave
            drift = prepare_wave(run, wave)
            if drift:
                state.status = "stopped"
                save(kube, state)
                raise ApplyError(
                    [f"drift before wave {wave + 1}: the cluster moved under the plan", *drift, "the state is recorded; --abort undoes the holds"], 1
                )
            save(kube, state)
            run.remaining_sources = sources_from(run.plan, wave + 1)
            done = sum(state.move(wave, k)["phase"] == "done" for k in range(len(run.plan.waves[wave])))
            log("wave-start", wave=wave + 1, moves=len(run.plan.waves[wave]), done=done)
            measures = run_wave(run, wave)
            state.waves.append(measures)
            state.next_wave = wave + 1
            save(kube, state)
            log("wave-done", **{k: v for k, v in measures.items() if k != "refused_pods"})
            expected.moved(state, wave, len(run.plan.waves[wave]))
            if state.next_wave < len(run.plan.waves):
                differences = expected.differences(pods.pods(), list_nodes(kube))
                if differences:
                    log("drift", after_wave=wave + 1, differences=len(differences), first=differences[0], action=options.on_drift)
                    expected = _on_drift(run, options, wave, differences, where)
    except KeyboardInterrupt:
        state.status = "interrupted"
        save(kube, state)
        steering.release_all()
        raise ApplyError(
            [
                f"interrupted in wave {state.next_wave + 1}; the holds are removed and the state is recorded in {where}: --resume goes on from wave {state.next_wave + 1}, --abort undoes"
            ],
            130,
        ) from None
    except ApplyError as err:
        # a stop (deadline, drift) or an answer the executor cannot go on from (a 500, a refused permission):
        # the holds are rolled back and the state says where it stopped, for --resume or --abort
        if state.status == "running":
            state.status = "stopped"
            save(kube, state)
        steering.release_all()
        err.problems.append(f"stopped in wave {state.next_wave + 1}; the state is in {where}: --resume retries, --abort undoes")
        raise
    finally:
        restore()
        run.events.close()
    steering.release_all()
    state.status = "done"
    save(kube, state)
    return run
