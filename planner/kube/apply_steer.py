"""Holding nodes and steering replacements with one taint, ``planner.io/apply=<plan id>:NoSchedule``.

A pod a controller owns is evicted and its owner makes a replacement that kube-scheduler places; the executor
cannot pick the node for it. It steers instead: while the moves into one target node run, every node it keeps
*closed* carries the taint and the target does not, so the scheduler's only choice that fits is the target
(unless the pod tolerates every taint). Two sets of closed nodes (``--steer``):

* ``taint`` (default): every node of the cluster. Replacements land on their planned target whenever it fits
  them; the price is that, for the run, nothing else in the cluster schedules except onto the open target.
  ``N`` node patches at the start and at the end, two per target node.
* ``sources``: only the nodes the plan still has to vacate (the holds: nothing refills them). The rest of the
  cluster schedules as usual; replacements go wherever the scheduler's profile sends them (measured in the
  report as on-target against elsewhere).

Patches are read-modify-write on ``spec.taints`` with the node's resourceVersion (a conflict is retried), run
a few at a time. ``--abort`` and the end of a run remove the taint from every node that carries it with this
plan's value, whatever the state says."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, refused, server_answer

TAINT_KEY = "planner.io/apply"
TAINT_EFFECT = "NoSchedule"
PATCH_THREADS = 8
STEER_MODES = ("taint", "sources")


def _has(node: Any, plan_id: str) -> bool:
    return any(t.key == TAINT_KEY and t.value == plan_id for t in node.spec.taints or [])


def _set_taint(kube: Kube, name: str, plan_id: str, present: bool) -> bool:
    """Add or remove the taint on one node; returns whether the node changed."""
    for _attempt in range(8):
        try:
            node = kube.core.read_node(name)
        except Exception as err:  # noqa: BLE001
            if getattr(err, "status", None) == 404:
                return False
            raise ApplyError([f"reading node {name}: {server_answer(err)}"], 1) from None
        if _has(node, plan_id) == present:
            return False
        taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.spec.taints or [] if not (t.key == TAINT_KEY and t.value == plan_id)]
        if present:
            taints.append({"key": TAINT_KEY, "value": plan_id, "effect": TAINT_EFFECT})
        patch = {"metadata": {"resourceVersion": node.metadata.resource_version}, "spec": {"taints": taints}}
        try:
            kube.core.patch_node(name, patch)
            return True
        except Exception as err:  # noqa: BLE001
            status = getattr(err, "status", None)
            if status == 409:
                continue
            if status == 403:
                raise refused(err, "patch", "nodes") from None
            raise ApplyError([f"tainting node {name}: {server_answer(err)}"], 1) from None
    raise ApplyError([f"node {name} kept changing under the executor (8 conflicts in a row); stopped"], 1)


def set_taints(kube: Kube, names: Iterable[str], plan_id: str, present: bool) -> int:
    """The taint on (``present``) or off every node of ``names``, a few patches at a time; how many changed."""
    todo = sorted(set(names))
    if not todo:
        return 0
    with ThreadPoolExecutor(max_workers=PATCH_THREADS) as pool:
        return sum(pool.map(lambda n: _set_taint(kube, n, plan_id, present), todo))


def tainted_nodes(kube: Kube, plan_id: str) -> list[str]:
    """The nodes that carry this plan's taint now."""
    try:
        nodes = kube.core.list_node().items
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) == 403:
            raise refused(err, "list", "nodes") from None
        raise ApplyError([f"listing nodes: {server_answer(err)}"], 1) from None
    return [n.metadata.name for n in nodes if _has(n, plan_id)]


class Steering:
    """The closed nodes of a run and the one target open at a time (see the module docstring)."""

    def __init__(self, kube: Kube, plan_id: str, mode: str, all_nodes: list[str], sources_left: set[str]) -> None:
        if mode not in STEER_MODES:
            raise ApplyError([f"--steer: {mode!r} is not one of {', '.join(STEER_MODES)}"])
        self.kube = kube
        self.plan_id = plan_id
        self.mode = mode
        self.closed = set(all_nodes) if mode == "taint" else set(sources_left)
        self.patches = 0
        self.relaxed = False

    def close_all(self) -> None:
        """Taint every closed node (idempotent: a resumed run re-taints what a killed one left)."""
        self.patches += set_taints(self.kube, self.closed, self.plan_id, True)
        self.relaxed = False

    def open_target(self, target: str) -> None:
        if self.relaxed:
            self.close_all()
        self.patches += set_taints(self.kube, [target], self.plan_id, False)

    def close_target(self, target: str, vacated: bool) -> None:
        """Close ``target`` again when it is a closed node (a node the plan still vacates stays closed)."""
        if target in self.closed or vacated:
            self.patches += set_taints(self.kube, [target], self.plan_id, True)

    def relax(self, keep_closed: set[str]) -> None:
        """Open every closed node but ``keep_closed`` (a replacement the target cannot take must go somewhere)."""
        self.patches += set_taints(self.kube, self.closed - keep_closed, self.plan_id, False)
        self.relaxed = True

    def release_all(self) -> int:
        """Remove the taint from every node that carries it (this plan's value)."""
        changed = set_taints(self.kube, tainted_nodes(self.kube, self.plan_id), self.plan_id, False)
        self.patches += changed
        return changed
