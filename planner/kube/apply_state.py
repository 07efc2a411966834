"""Where ``planner apply`` records its progress: one ConfigMap in the cluster, ``planner-apply-<plan id>`` in the
state namespace (``default`` unless ``--state-namespace``), labelled ``planner.io/plan=<plan id>``.

Its key ``state.json`` holds the plan id, the status (running, stopped, interrupted, done), the next wave to run,
and per move (``"<wave>.<index>"``) its phase and the pods it touched: the original (namespace, name, uid), the
copy made for a bare pod, the replacement an owner made, and the node it landed on. A phase is written *before*
the step it names is taken (``copying`` before the copy is created, ``evicting`` before the eviction is sent), so
that a killed executor, resumed, looks at the cluster to learn whether the step happened (the copy exists by
name; the original is gone or terminating) and never evicts a pod twice or makes a second copy. Also kept: per
owner, the pods it had before the executor evicted one (so that a replacement is a pod not among them), and the
waves' measures for the final report, the re-plans made on drift (their new waves, the drift that
caused them and what they changed: ``--resume`` goes on with them) and the drift a stop listed. A ConfigMap holds 1 MiB: about 8,000 moves."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, refused, server_answer

STATE_KEY = "state.json"
PLAN_LABEL = "planner.io/plan"
STATE_VERSION = 1
MAX_STATE_BYTES = 900_000


def state_name(plan_id: str) -> str:
    return f"planner-apply-{plan_id}"


def move_key(wave: int, index: int) -> str:
    return f"{wave}.{index}"


@dataclass
class ApplyState:
    """The recorded execution of one plan; ``save`` writes it back (optimistic: a concurrent writer is an error)."""

    plan_id: str
    namespace: str
    status: str = "running"
    next_wave: int = 0
    moves: dict[str, dict[str, Any]] = field(default_factory=dict)
    known: dict[str, list[str]] = field(default_factory=dict)
    waves: list[dict[str, Any]] = field(default_factory=list)
    replans: list[dict[str, Any]] = field(default_factory=list)
    drift: list[str] = field(default_factory=list)
    started_s: float = field(default_factory=time.time)
    resource_version: str | None = None

    def move(self, wave: int, index: int) -> dict[str, Any]:
        return self.moves.setdefault(move_key(wave, index), {"phase": "pending"})

    def to_json(self) -> str:
        body = {
            "version": STATE_VERSION,
            "plan": self.plan_id,
            "status": self.status,
            "next_wave": self.next_wave,
            "started_s": self.started_s,
            "moves": self.moves,
            "known": self.known,
            "waves": self.waves,
            "replans": self.replans,
            "drift": self.drift,
        }
        return json.dumps(body, separators=(",", ":"), sort_keys=True)


def _body(kube: Kube, state: ApplyState) -> Any:
    from kubernetes import client  # deferred: the kubernetes client (a test extra; loaded by connect, which says how to install it)

    text = state.to_json()
    if len(text) > MAX_STATE_BYTES:
        raise ApplyError([f"the execution state of plan {state.plan_id} outgrew a ConfigMap ({len(text)} bytes); apply the plan in parts"], 3)
    meta = client.V1ObjectMeta(
        name=state_name(state.plan_id), namespace=state.namespace, labels={PLAN_LABEL: state.plan_id}, resource_version=state.resource_version
    )
    return client.V1ConfigMap(metadata=meta, data={STATE_KEY: text})


def load(kube: Kube, namespace: str, plan_id: str) -> ApplyState | None:
    """The recorded state of ``plan_id``, or None when there is none; a ConfigMap of that name that is not
    ours (no readable state) is an error rather than something to overwrite."""
    try:
        found = kube.core.read_namespaced_config_map(state_name(plan_id), namespace)
    except Exception as err:  # noqa: BLE001 - the API's errors carry the status we dispatch on
        if getattr(err, "status", None) == 404:
            return None
        if getattr(err, "status", None) == 403:
            raise refused(err, "get", f"configmaps in namespace {namespace}") from None
        raise ApplyError([f"reading the execution state {namespace}/{state_name(plan_id)}: {server_answer(err)}"]) from None
    try:
        body = json.loads((found.data or {})[STATE_KEY])
        if body.get("version") != STATE_VERSION or body.get("plan") != plan_id:
            raise ValueError("another version or plan")
        return ApplyState(
            plan_id=plan_id,
            namespace=namespace,
            status=str(body["status"]),
            next_wave=int(body["next_wave"]),
            moves=dict(body["moves"]),
            known={k: list(v) for k, v in body["known"].items()},
            waves=list(body["waves"]),
            replans=list(body.get("replans") or []),
            drift=[str(d) for d in body.get("drift") or []],
            started_s=float(body["started_s"]),
            resource_version=found.metadata.resource_version,
        )
    except (KeyError, ValueError, TypeError, AttributeError):
        raise ApplyError(
            [f"ConfigMap {namespace}/{state_name(plan_id)} exists but holds no execution state of this planner; remove it or give another --state-namespace"]
        ) from None


def save(kube: Kube, state: ApplyState) -> None:
    """Create or replace the ConfigMap; a 409 (someone else wrote it since) stops the executor."""
    try:
        if state.resource_version is None:
            written = kube.core.create_namespaced_config_map(state.namespace, _body(kube, state))
        else:
            written = kube.core.replace_namespaced_config_map(state_name(state.plan_id), state.namespace, _body(kube, state))
    except ApplyError:
        raise
    except Exception as err:  # noqa: BLE001
        status = getattr(err, "status", None)
        if status == 403:
            raise refused(err, "create" if state.resource_version is None else "update", f"configmaps in namespace {state.namespace}") from None
        if status == 409:
            raise ApplyError(
                [
                    f"the execution state {state.namespace}/{state_name(state.plan_id)} was changed by someone else (another planner apply of this plan?); stopped"
                ],
                1,
            ) from None
        raise ApplyError([f"writing the execution state {state.namespace}/{state_name(state.plan_id)}: {server_answer(err)}"], 1) from None
    state.resource_version = written.metadata.resource_version


def delete(kube: Kube, namespace: str, plan_id: str) -> bool:
    """Remove the state ConfigMap; returns whether there was one."""
    try:
        kube.core.delete_namespaced_config_map(state_name(plan_id), namespace)
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) == 404:
            return False
        if getattr(err, "status", None) == 403:
            raise refused(err, "delete", f"configmaps in namespace {namespace}") from None
        raise ApplyError([f"removing the execution state {namespace}/{state_name(plan_id)}: {server_answer(err)}"]) from None
    return True
