"""Holding nodes and steering replacements with one taint, ``planner.io/apply=<plan id>:NoSchedule``.

A pod a controller owns is evicted and its owner makes a replacement that kube-scheduler places; the executor
cannot pick the node for it. It steers instead: while the replacement is being scheduled, the nodes that
could take it other than its planned target carry the taint, so the scheduler's only choice that fits is the
target (unless the pod tolerates every taint). In every mode the *holds* (the nodes the plan still has to
vacate) carry the taint for the whole run, so nothing refills them. Three modes (``--steer``):

* ``fit`` (default): besides the holds, only while one wave runs, the wave's targets but the one whose
  moves run now, and the nodes where one of the wave's pods a controller replaces fits by its requests
  against the node's free allocatable (the competitors). A node that is full, cordoned or too small is never
  touched, and no node stays closed longer than a wave, so the rest of the cluster goes on scheduling.
* ``taint``: every node of the cluster for the whole run, but the target whose moves run now. Steers as
  well as ``fit`` but nothing else in the cluster schedules while the run lasts (pending pods wait, a
  scale-up waits); ``N`` patches at the start and at the end, two per target.
* ``sources``: the holds only. The rest of the cluster schedules as usual; replacements go wherever the
  scheduler's profile sends them (measured in the report as on-target against elsewhere).

``blocked_node_s`` measures what a mode costs the cluster: the node-seconds nodes other than the holds spent
tainted. Patches carry the node's resourceVersion from the last read (one request; a 409 re-reads and
retries) and run a few at a time. ``--abort`` and the end of a run remove the taint from every node that
carries it with this plan's value, whatever the state says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, refused, server_answer
from planner.kube.apply_fit import fits, free_by_node, requests_of

TAINT_KEY = "planner.io/apply"
TAINT_EFFECT = "NoSchedule"
PATCH_THREADS = 8
STEER_MODES = ("fit", "taint", "sources")
DEFAULT_STEER = "fit"


def _has(node: dict[str, Any], plan_id: str) -> bool:
    return any(t.get("key") == TAINT_KEY and t.get("value") == plan_id for t in (node.get("spec") or {}).get("taints") or [])


def _read_node(kube: Kube, name: str) -> dict[str, Any] | None:
    try:
        answer = kube.core.read_node(name, _preload_content=False)
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) == 404:
            return None
        if getattr(err, "status", None) == 403:
            raise refused(err, "get", "nodes") from None
        raise ApplyError([f"reading node {name}: {server_answer(err)}"], 1) from None
    node: dict[str, Any] = json.loads(answer.data)
    return node


def _set_taint(kube: Kube, name: str, plan_id: str, present: bool, known: dict[str, Any] | None) -> tuple[bool, dict[str, Any] | None]:
    """Add or remove the taint on one node (``known``: the node as last read, saving a read); returns whether
    the node changed and the node as it is now."""
    node = known
    for _attempt in range(8):
        if node is None:
            node = _read_node(kube, name)
            if node is None:
                return False, None
        if _has(node, plan_id) == present:
            return False, node
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if not (t.get("key") == TAINT_KEY and t.get("value") == plan_id)]
        if present:
            taints.append({"key": TAINT_KEY, "value": plan_id, "effect": TAINT_EFFECT})
        patch = {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]}, "spec": {"taints": taints}}
        try:
            answer = kube.core.patch_node(name, patch, _preload_content=False)
            return True, json.loads(answer.data)
        except Exception as err:  # noqa: BLE001
            status = getattr(err, "status", None)
            if status == 409:
                node = None
                continue
            if status == 404:
                return False, None
            if status == 403:
                raise refused(err, "patch", "nodes") from None
            raise ApplyError([f"tainting node {name}: {server_answer(err)}"], 1) from None
    raise ApplyError([f"node {name} kept changing under the executor (8 conflicts in a row); stopped"], 1)


def list_nodes(kube: Kube) -> dict[str, dict[str, Any]]:
    """Every node by name, as parsed JSON."""
    try:
        answer = kube.core.list_node(_preload_content=False)
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) == 403:
            raise refused(err, "list", "nodes") from None
        raise ApplyError([f"listing nodes: {server_answer(err)}"], 1) from None
    return {n["metadata"]["name"]: n for n in json.loads(answer.data).get("items") or []}


def set_taints(kube: Kube, names: Iterable[str], plan_id: str, present: bool, known: dict[str, dict[str, Any]] | None = None) -> int:
    """The taint on (``present``) or off every node of ``names``, a few patches at a time; how many changed.
    ``known`` (nodes by name as last read) saves a read per node and is brought up to date."""
    todo = sorted(set(names))
    if not todo:
        return 0
    cache = known if known is not None else {}
    with ThreadPoolExecutor(max_workers=PATCH_THREADS) as pool:
        results = list(pool.map(lambda n: (n, _set_taint(kube, n, plan_id, present, cache.get(n))), todo))
    for name, (_changed, node) in results:
        if node is not None:
            cache[name] = node
        else:
            cache.pop(name, None)
    return sum(changed for _name, (changed, _node) in results)


def tainted_nodes(kube: Kube, plan_id: str) -> list[str]:
    """The nodes that carry this plan's taint now."""
    return [name for name, node in list_nodes(kube).items() if _has(node, plan_id)]


class Steering:
    """The holds, the closed nodes of a run and the window of one target (see the module docstring)."""

    def __init__(self, kube: Kube, plan_id: str, mode: str, nodes: dict[str, dict[str, Any]], sources_left: set[str]) -> None:
        if mode not in STEER_MODES:
            raise ApplyError([f"--steer: {mode!r} is not one of {', '.join(STEER_MODES)}"])
        self.kube = kube
        self.plan_id = plan_id
        self.mode = mode
        self.nodes = nodes
        self.holds = set(sources_left) & set(nodes)
        self.closed = set(nodes) if mode == "taint" else set(self.holds)
        self.window: set[str] = set()
        self.patches = 0
        self.relaxed = False
        self.blocked_node_s = 0.0
        self._blocked_since: dict[str, float] = {}

    def _taint(self, names: Iterable[str], present: bool) -> None:
        names = set(names)
        self.patches += set_taints(self.kube, names, self.plan_id, present, self.nodes)
        now = time.monotonic()
        for name in names - self.holds:
            if present:
                self._blocked_since.setdefault(name, now)
            elif name in self._blocked_since:
                self.blocked_node_s += now - self._blocked_since.pop(name)

    def close_all(self) -> None:
        """Taint every closed node (idempotent: a resumed run re-taints what a killed one left)."""
        self._taint(self.closed, True)
        self.relaxed = False

    def open_target(self, target: str) -> None:
        if self.relaxed:
            self.close_all()
        self._taint([target], False)

    def close_target(self, target: str, vacated: bool) -> None:
        """Close ``target`` again when it is a closed node, in the wave's window, or vacated by the plan."""
        if target in self.closed or target in self.window or vacated:
            self._taint([target], True)

    def open_window(self, targets: set[str], pod_specs: list[dict[str, Any]], pods: list[Any]) -> None:
        """``fit`` mode, for one wave: taint the wave's ``targets`` and every other node (not closed already)
        where one of ``pod_specs`` (the wave's pods a controller replaces) fits by its requests now; each
        target is opened while its own moves run (``open_target``) and ``end_window`` opens them all."""
        if self.mode != "fit" or not pod_specs:
            return
        free = free_by_node(self.nodes, pods)
        needs = [requests_of(spec) for spec in pod_specs]
        self.window = {
            name
            for name, room in free.items()
            if name not in self.closed
            and (name in targets or (not (self.nodes[name].get("spec") or {}).get("unschedulable") and any(fits(need, room) for need in needs)))
        }
        self._taint(self.window, True)

    def end_window(self) -> None:
        if self.window:
            self._taint(self.window, False)
            self.window = set()

    def relax(self, keep_closed: set[str]) -> None:
        """Open every closed node but ``keep_closed`` (a replacement the target cannot take must go somewhere)."""
        self.end_window()
        self._taint(self.closed - keep_closed, False)
        self.relaxed = True

    def set_holds(self, holds: set[str]) -> None:
        """New holds (a re-plan's sources and vacated nodes): the old ones no longer held opened (unless every
        node is closed, ``taint``), the new ones closed."""
        holds &= set(self.nodes)
        released = self.holds - holds
        if self.mode != "taint":
            self.closed = (self.closed - released) | holds
            self._taint(released, False)
        else:
            self.closed |= holds
        self.holds = holds
        self._taint(holds, True)

    def release_all(self) -> int:
        """Remove the taint from every node that carries it (this plan's value)."""
        self.window = set()
        names = set(tainted_nodes(self.kube, self.plan_id))
        before = self.patches
        self._taint(names | set(self._blocked_since), False)
        return self.patches - before
