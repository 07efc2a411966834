"""Every pod of the cluster, kept current by one list and a watch (``planner apply``'s view of the pods).

The executor used to list the pods of the wave's namespaces at every poll: at 64 nodes that was a third of
its requests and most of its own time. Here one list is made at the start and a watch thread applies every
ADDED, MODIFIED and DELETED event to an in-memory map; the executor reads ``pods()`` (a consistent copy) and
blocks in ``wait`` until the next event arrives (or a timeout passes) instead of sleeping between lists.
The time spent blocked is time waiting for the cluster, not the executor's own.

A watch that ends (its server-side timeout, a dropped connection) resumes from the last resourceVersion seen;
a 410 (that version is too old) or any other error re-lists, after a pause that grows to 5 s. The thread is a
daemon and ``close`` stops it. Objects are kept as parsed JSON (``View``): the client's model classes cost ten
times the parse."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, refused, server_answer
from planner.kube.apply_live import View

WATCH_TIMEOUT_S = 60
RELIST_PAUSE_MAX_S = 5.0


class PodCache:
    """The cluster's pods by UID, current to the last watch event (see the module docstring)."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._pods: dict[str, dict[str, Any]] = {}
        self._version = ""
        self._changes = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.relists = 0
        self.events = 0
        self.last_error = ""
        self._relist(first=True)
        self._thread = threading.Thread(target=self._run, name="planner-apply-pod-watch", daemon=True)
        self._thread.start()

    def _relist(self, first: bool = False) -> None:
        try:
            answer = self.kube.core.list_pod_for_all_namespaces(_preload_content=False, _request_timeout=30)
            body = json.loads(answer.data)
        except Exception as err:
            if not first:
                raise
            if getattr(err, "status", None) == 403:
                raise refused(err, "list", "pods") from None
            raise ApplyError([f"listing pods: {server_answer(err)}"], 1) from None
        with self._cond:
            self._pods = {item["metadata"]["uid"]: item for item in body.get("items") or []}
            self._version = str(body["metadata"].get("resourceVersion") or "")
            self._changes += 1
            self.relists += 0 if first else 1
            self._cond.notify_all()

    def _run(self) -> None:
        from kubernetes import watch  # deferred: the kubernetes client (loaded by connect, which says how to install it)

        pause = 0.2
        while not self._stop.is_set():
            try:
                stream = watch.Watch().stream(
                    self.kube.core.list_pod_for_all_namespaces,
                    resource_version=self._version,
                    timeout_seconds=WATCH_TIMEOUT_S,
                    allow_watch_bookmarks=True,
                    deserialize=False,
                    _request_timeout=WATCH_TIMEOUT_S + 10,
                )
                for event in stream:
                    if self._stop.is_set():
                        return
                    self._apply(event)
                pause = 0.2
            except Exception:  # noqa: BLE001 - a 410 or a dropped connection: list again after a pause
                if self._stop.wait(pause):
                    return
                pause = min(RELIST_PAUSE_MAX_S, pause * 2)
                try:
                    self._relist()
                except Exception as err:  # noqa: BLE001 - the server is away: try again after the next pause
                    self.last_error = server_answer(err)

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        if kind == "ERROR":
            raise RuntimeError(f"watch error: {obj.get('message')}")
        with self._cond:
            if meta.get("resourceVersion"):
                self._version = str(meta["resourceVersion"])
            if kind == "BOOKMARK":
                return
            if kind == "DELETED":
                self._pods.pop(str(meta.get("uid")), None)
            else:
                self._pods[str(meta.get("uid"))] = obj
            self._changes += 1
            self.events += 1
            self._cond.notify_all()

    def pods(self, namespaces: set[str] | None = None) -> list[Any]:
        """The pods now (of ``namespaces`` when given), as ``View`` objects."""
        with self._cond:
            items = list(self._pods.values())
        return [View(p) for p in items if namespaces is None or p["metadata"].get("namespace") in namespaces]

    def mark(self) -> int:
        """A token for ``wait``: the number of changes seen so far."""
        with self._cond:
            return self._changes

    def wait(self, since: int, timeout_s: float) -> float:
        """Block until a change after ``since`` (a ``mark``) or ``timeout_s``; the seconds it blocked."""
        started = time.monotonic()
        with self._cond:
            self._cond.wait_for(lambda: self._changes != since or self._stop.is_set(), timeout=max(0.0, timeout_s))
        return time.monotonic() - started

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
