"""The API calls that take pods away: evictions (``policy/v1``, the pod's UID as a precondition, several at
once), plain deletes (``--force-delete``, a copy rolled back) and the Kubernetes Events the executor leaves on
the pods it evicts (sent from a background thread: an Event is evidence, never a step the run waits for).

Answers are read as status codes, not deserialised into the client's models (the models cost more than the
request on a busy machine)."""

from __future__ import annotations

import datetime
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, refused, server_answer
from planner.kube.apply_live import PodRef

EXIT_STOPPED = 1
EVICT_THREADS = 8


def evict(kube: Kube, ref: PodRef) -> str:
    """Evict one pod through policy/v1 with its UID as a precondition: ``ok``, ``refused`` (429) or ``gone``."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": ref.name, "namespace": ref.namespace},
        "deleteOptions": {"preconditions": {"uid": ref.uid}},
    }
    try:
        kube.core.create_namespaced_pod_eviction(ref.name, ref.namespace, body, _preload_content=False)
    except Exception as err:  # noqa: BLE001
        status = getattr(err, "status", None)
        if status == 429:
            return "refused"
        if status in (404, 409):
            return "gone"
        if status == 403:
            raise refused(err, "create", "pods/eviction") from None
        raise ApplyError([f"evicting {ref.namespace}/{ref.name}: {server_answer(err)}"], EXIT_STOPPED) from None
    return "ok"


def evict_many(kube: Kube, refs: list[PodRef]) -> list[str]:
    """``evict`` for each pod, a few at a time; the answers in order (the first error raised)."""
    if len(refs) == 1:
        return [evict(kube, refs[0])]
    with ThreadPoolExecutor(max_workers=EVICT_THREADS) as pool:
        return list(pool.map(lambda ref: evict(kube, ref), refs))


def delete_pod(kube: Kube, ref: PodRef, what: str) -> None:
    """A plain delete (``--force-delete``, or a copy rolled back), UID as a precondition."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": ref.uid}}
    try:
        kube.core.delete_namespaced_pod(ref.name, ref.namespace, body=body, _preload_content=False)
    except Exception as err:  # noqa: BLE001
        status = getattr(err, "status", None)
        if status in (404, 409):
            return
        if status == 403:
            raise refused(err, "delete", "pods") from None
        raise ApplyError([f"deleting {what} {ref.namespace}/{ref.name}: {server_answer(err)}"], EXIT_STOPPED) from None


class Events:
    """Kubernetes Events on pods (``kubectl describe pod`` shows them), from the component ``planner-apply``,
    sent by one background thread; ``close`` waits for those still queued. An Event the server refuses is
    logged (``event-refused``), never a reason to stop the run."""

    def __init__(self, kube: Kube, plan_id: str, log: Any) -> None:
        self.kube = kube
        self.plan_id = plan_id
        self.log = log
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="planner-apply-events")
        self._sent: list[Future[None]] = []

    def record(self, ref: PodRef, reason: str, message: str) -> None:
        self._sent.append(self._pool.submit(self._send, ref, reason, message))

    def _send(self, ref: PodRef, reason: str, message: str) -> None:
        now = datetime.datetime.now(datetime.UTC).isoformat()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{ref.name[:200]}.", "namespace": ref.namespace, "labels": {"planner.io/plan": self.plan_id}},
            "involvedObject": {"kind": "Pod", "namespace": ref.namespace, "name": ref.name, "uid": ref.uid, "apiVersion": "v1"},
            "reason": reason,
            "message": message[:1000],
            "type": "Normal",
            "source": {"component": "planner-apply"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self.kube.core.create_namespaced_event(ref.namespace, body, _preload_content=False)
        except Exception as err:  # noqa: BLE001 - an Event is evidence, not a step of the plan
            self.log("event-refused", pod=f"{ref.namespace}/{ref.name}", reason=reason, answer=server_answer(err))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
