"""Drift: after each wave, where the pods actually run against where the plan and the moves done so far put
them (``planner apply --on-drift stop|replan``).

At the start of a run (and of a resumed run) the executor takes a baseline from the live cluster: every pod
that counts (bound or pending, not finished, not a DaemonSet's or a node's mirror pod) with its node, and
which nodes are cordoned. Each wave's moves update it: the original leaves, the pod that replaced it (the
copy of a bare pod, the owner's replacement) arrives on the node it landed on. After the wave the live
cluster is compared with it; every difference is one line:

* a pod the baseline has that is gone or terminating (deleted, or a workload scaled down);
* a pod the baseline lacks (a workload scaled up, a pod created by someone else), with its node or pending;
* a node cordoned, uncordoned, added or removed.

The executor's own work is not drift: originals it evicted that are still terminating, and replacements
that landed away from their target (the report counts those; when they break the rest of the plan, the
re-plan of ``--on-drift replan`` sees the cluster as it is)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.kube.apply_live import FINISHED, controller_of
from planner.kube.apply_state import ApplyState

NOT_COUNTED_OWNERS = ("DaemonSet", "Node")
MAX_LINES = 50


def counts(pod: Any) -> bool:
    """Whether a pod is part of what the plan was made from (not finished, not a DaemonSet's or a mirror pod)."""
    owner = controller_of(pod)
    return not (pod.status and pod.status.phase in FINISHED) and not (owner is not None and owner.kind in NOT_COUNTED_OWNERS)


def _owner_counts(pods: list[Any]) -> dict[str, tuple[str, int]]:
    """Per controller of counted, not terminating pods: its kind and name, and its number of pods."""
    counted: dict[str, tuple[str, int]] = {}
    for pod in pods:
        owner = controller_of(pod)
        if owner is None or not counts(pod) or pod.metadata.deletion_timestamp is not None:
            continue
        name, count = counted.get(owner.uid, (f"{owner.kind} {pod.metadata.namespace}/{owner.name}", 0))
        counted[owner.uid] = (name, count + 1)
    return counted


def _name(pod: Any) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


@dataclass
class Expected:
    """Where every counted pod should be (by UID: its name and node, "" pending) and which nodes are cordoned."""

    pods: dict[str, tuple[str, str]] = field(default_factory=dict)
    cordoned: dict[str, bool] = field(default_factory=dict)
    evicted: set[str] = field(default_factory=set)
    owners: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Per controller (UID): its kind and name, and how many pods it has (a move takes one and adds one)."""

    @staticmethod
    def of(pods: list[Any], nodes: dict[str, dict[str, Any]]) -> Expected:
        expected = Expected()
        for pod in pods:
            if counts(pod) and pod.metadata.deletion_timestamp is None:
                expected.pods[pod.metadata.uid] = (_name(pod), pod.spec.node_name or "")
        expected.cordoned = {name: bool((node.get("spec") or {}).get("unschedulable")) for name, node in nodes.items()}
        expected.owners = _owner_counts(pods)
        return expected

    def moved(self, state: ApplyState, wave: int, moves: int) -> None:
        """Take in the wave's moves that are done: the original leaves, its replacement arrives where it landed."""
        for index in range(moves):
            record = state.move(wave, index)
            if record.get("phase") != "done":
                continue
            original = record["pod"]
            self.pods.pop(original["uid"], None)
            self.evicted.add(original["uid"])
            now = record.get("now")
            if now:
                self.pods[now["uid"]] = (f"{now['namespace']}/{now['name']}", str(record.get("landed") or ""))

    def differences(self, pods: list[Any], nodes: dict[str, dict[str, Any]]) -> list[str]:
        """Every way the live cluster differs from what is expected, one line each (at most ``MAX_LINES``)."""
        lines: list[str] = []
        live = {p.metadata.uid: p for p in pods}
        for uid, (name, node) in sorted(self.expected_items()):
            pod = live.get(uid)
            where = f"node '{node}'" if node else "pending"
            if pod is None:
                lines.append(f"pod '{name}' ({where}) is gone: deleted, or its workload scaled down")
            elif pod.metadata.deletion_timestamp is not None:
                lines.append(f"pod '{name}' ({where}) is being deleted by someone else")
            elif (pod.spec.node_name or "") != node and node:
                lines.append(f"pod '{name}' was expected on node '{node}'; it is on '{pod.spec.node_name or 'no node'}'")
        for uid, pod in sorted(live.items()):
            if uid in self.pods or uid in self.evicted or not counts(pod) or pod.metadata.deletion_timestamp is not None:
                continue
            where = f"on node '{pod.spec.node_name}'" if pod.spec.node_name else "pending"
            lines.append(f"pod '{_name(pod)}' is new ({where}): a workload scaled up or a pod created by someone else")
        for name, obj in sorted(nodes.items()):
            cordoned = bool((obj.get("spec") or {}).get("unschedulable"))
            if name not in self.cordoned:
                lines.append(f"node '{name}' is new")
            elif cordoned != self.cordoned[name]:
                lines.append(f"node '{name}' was {'cordoned' if cordoned else 'uncordoned'}")
        lines += [f"node '{name}' is gone" for name in sorted(set(self.cordoned) - set(nodes))]
        now = _owner_counts(pods)
        for uid, (name, count) in sorted(self.owners.items(), key=lambda item: item[1][0]):
            live_count = now.get(uid, (name, 0))[1]
            if live_count != count:
                lines.append(f"{name} has {live_count} pods, {count} before: scaled {'up' if live_count > count else 'down'} (or its pods deleted)")
        if len(lines) > MAX_LINES:
            lines = [*lines[:MAX_LINES], f"(and {len(lines) - MAX_LINES} more differences)"]
        return lines

    def expected_items(self) -> list[tuple[str, tuple[str, str]]]:
        return list(self.pods.items())
