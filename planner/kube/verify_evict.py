"""Evictions as ``planner verify`` judges them: through the Eviction API (``policy/v1``), where a 429 means a
PodDisruptionBudget allows no disruption now.

A budget's status is the disruption controller's, computed after the pods change: a replacement that just became
Ready is counted a moment later. An eviction is therefore sent only once every budget of the namespace is
*settled* (its status observed at its generation, and its ``currentHealthy`` equal to the Ready, not terminating,
not already disrupted pods it selects, counted here from the live pods), and a 429 is a refusal only when the
budget is settled then too; a 429 from a budget still catching up is retried until the deadline. The refusal
quotes the API server's answer, whose cause names the budget ("The disruption budget B needs N healthy pods and
has M currently")."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from planner.adapters.kubernetes_objects import selector_matches
from planner.kube.apply_client import ApplyError, Kube, server_answer
from planner.kube.apply_live import PodRef

RETRY_S = 0.3


@dataclass(frozen=True)
class Refusal:
    """The Eviction API's refusal of one pod: the server's answer and the budgets selecting the pod."""

    answer: str
    budgets: tuple[str, ...]


def _raw_list(answer: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(answer.data)["items"]
    return items


def budgets(kube: Kube) -> list[dict[str, Any]]:
    return _raw_list(kube.policy.list_pod_disruption_budget_for_all_namespaces(_preload_content=False))


def namespace_pods(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    return _raw_list(kube.core.list_namespaced_pod(namespace, _preload_content=False))


def _ready(pod: dict[str, Any]) -> bool:
    if pod["metadata"].get("deletionTimestamp"):
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def selects(budget: dict[str, Any], pod: dict[str, Any]) -> bool:
    """Whether ``budget`` covers ``pod`` (same namespace, its selector matches; policy/v1: an empty selector
    selects every pod of the namespace, a missing one none)."""
    if budget["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    return selector_matches(budget["spec"].get("selector"), pod["metadata"].get("labels") or {})


def settled(budget: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
    """The budget's status counts the pods as they are now (see the module docstring)."""
    status = budget.get("status") or {}
    if status.get("observedGeneration") != budget["metadata"].get("generation"):
        return False
    disrupted = set(status.get("disruptedPods") or {})
    healthy = sum(1 for p in pods if selects(budget, p) and _ready(p) and p["metadata"]["name"] not in disrupted)
    return bool(status.get("currentHealthy") == healthy)


def wait_settled(kube: Kube, namespaces: set[str], deadline: float) -> list[str]:
    """Wait until every budget of ``namespaces`` is settled (or the deadline); returns those that are not."""
    while True:
        found = [b for b in budgets(kube) if b["metadata"].get("namespace") in namespaces]
        pods = {ns: namespace_pods(kube, ns) for ns in {b["metadata"]["namespace"] for b in found}}
        late = [f"{b['metadata']['namespace']}/{b['metadata']['name']}" for b in found if not settled(b, pods[b["metadata"]["namespace"]])]
        if not late or time.monotonic() > deadline:
            return late
        time.sleep(RETRY_S)


def _answer(err: Exception) -> str:
    """The server's answer with the causes a 429 carries (they name the budget)."""
    text = server_answer(err)
    try:
        details = json.loads(getattr(err, "body", None) or "{}").get("details") or {}
    except (ValueError, AttributeError):
        return text
    causes = [" ".join(str(c.get("message") or "").split())[:300] for c in details.get("causes") or [] if c.get("message")]
    return f"{text} ({'; '.join(causes)})" if causes else text


def evict(kube: Kube, ref: PodRef) -> tuple[str, str]:
    """One eviction with the pod's UID as a precondition: (``ok`` | ``gone`` | ``refused``, the server's answer)."""
    from kubernetes import client  # deferred: the kubernetes client (loaded by connect, which says how to install it)

    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=ref.name, namespace=ref.namespace),
        delete_options=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=ref.uid)),
    )
    try:
        kube.core.create_namespaced_pod_eviction(ref.name, ref.namespace, body)
    except Exception as err:  # noqa: BLE001
        status = getattr(err, "status", None)
        if status in (404, 409):
            return "gone", server_answer(err)
        if status in (429, 500, 403, 422):
            return "refused", _answer(err)
        raise ApplyError([f"evicting {ref.namespace}/{ref.name}: {server_answer(err)}"], 1) from None
    return "ok", ""


def evict_all(kube: Kube, refs: dict[str, PodRef], deadline: float) -> tuple[dict[str, Refusal], set[str]]:
    """Evict every pod of ``refs`` (key: the caller's name for it); returns the refusals and the keys of pods
    already gone. A 429 is retried while the pod's budget is not settled, until ``deadline``."""
    pending = dict(refs)
    refusals: dict[str, Refusal] = {}
    gone: set[str] = set()
    while pending:
        retry: dict[str, PodRef] = {}
        answers: dict[str, str] = {}
        for key, ref in pending.items():
            outcome, answer = evict(kube, ref)
            if outcome == "gone":
                gone.add(key)
            elif outcome == "refused":
                answers[key] = answer
        if answers:
            found = budgets(kube)
            pods = {ns: namespace_pods(kube, ns) for ns in {pending[k].namespace for k in answers}}
            for key, answer in answers.items():
                ref = pending[key]
                raw = next((p for p in pods[ref.namespace] if p["metadata"].get("uid") == ref.uid), None)
                mine = [b for b in found if raw is not None and selects(b, raw)]
                names = tuple(f"{b['metadata']['namespace']}/{b['metadata']['name']}" for b in mine)
                if raw is None:
                    gone.add(key)
                elif all(settled(b, pods[ref.namespace]) for b in mine) or time.monotonic() > deadline or not answer.startswith("429"):
                    refusals[key] = Refusal(answer, names)
                else:
                    retry[key] = ref
        pending = retry
        if pending:
            time.sleep(RETRY_S)
    return refusals, gone


def wait_gone(kube: Kube, refs: list[PodRef], deadline: float) -> list[PodRef]:
    """Wait until the pods of ``refs`` are deleted (the node simulator finishes graceful deletions); returns those
    still there at the deadline."""
    while True:
        uids = {p["metadata"].get("uid") for ns in {r.namespace for r in refs} for p in namespace_pods(kube, ns)}
        left = [r for r in refs if r.uid in uids]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(RETRY_S)
