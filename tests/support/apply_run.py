"""What the ``planner apply`` tests share: a control plane per test module on a seeded ``apply_cluster`` List, the
defrag plan made from that List by ``planner defrag --from kubernetes``, the ``planner apply`` subprocess, and a
watcher that sees every pod event and checks each PodDisruptionBudget at every instant."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

from planner.kube.controlplane import Running, start, stop
from tests.support.apply_cluster import NAMESPACE, apply_cluster
from tests.support.controlplane import binary_env

TAINT_KEY = "planner.io/apply"


@dataclass
class Cluster:
    """A throwaway control plane loaded with one seed's List, and the plan made from that List."""

    running: Running
    list_path: Path
    plan_path: Path
    env: dict[str, str]

    @property
    def kubeconfig(self) -> str:
        return str(self.running.kubeconfig)

    def core(self) -> Any:
        return client.CoreV1Api(config.new_client_from_config(self.kubeconfig))

    def plan(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.plan_path.read_text())
        return result


def planner(args: list[str], env: dict[str, str], timeout_s: float = 600.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True, env=env, timeout=timeout_s)


@contextmanager
def seeded_cluster(seed: int, tmp: Path, binary: Path) -> Iterator[Cluster]:
    """A control plane on ``apply_cluster(seed)`` and its defrag plan; stopped and removed afterwards."""
    list_path = tmp / f"cluster-{seed}.json"
    list_path.write_text(json.dumps(apply_cluster(seed)))
    env = binary_env(binary)
    plan_path = tmp / f"plan-{seed}.json"
    made = planner(["defrag", str(list_path), "--from", "kubernetes", "-o", "json", "--out", str(plan_path)], env)
    assert made.returncode == 0, made.stderr
    running = start(str(list_path), tmp / f"state-{seed}", timeout_s=600, binary=binary)
    try:
        yield Cluster(running, list_path, plan_path, env)
    finally:
        stop(running.state_dir)


def apply_args(cluster: Cluster, *extra: str) -> list[str]:
    return ["apply", str(cluster.plan_path), "--kubeconfig", cluster.kubeconfig, *extra]


def ready_by_app(core: Any) -> dict[str, int]:
    """Ready pods per workload (the ``app`` or ``job`` label): what every workload must have as many of after."""
    counts: dict[str, int] = {}
    for pod in core.list_namespaced_pod(NAMESPACE).items:
        labels = pod.metadata.labels or {}
        ready = pod.metadata.deletion_timestamp is None and any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))
        key = labels.get("app") or labels.get("job") or "?"
        counts[key] = counts.get(key, 0) + int(ready)
    return counts


def planner_leftovers(core: Any) -> dict[str, list[str]]:
    """What a run of planner apply leaves: nodes with its taint, pods with its label, its state ConfigMaps."""
    return {
        "tainted": [n.metadata.name for n in core.list_node().items if any(t.key == TAINT_KEY for t in n.spec.taints or [])],
        "labelled": [p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector="planner.io/plan").items],
        "configmaps": [c.metadata.name for c in core.list_config_map_for_all_namespaces().items if c.metadata.name.startswith("planner-apply-")],
    }


@dataclass
class PdbWatcher:
    """Watches the namespace's pods from a thread; at every event counts, per budget, the healthy pods it selects
    (Ready, not terminating) and records when that falls below what the budget keeps (``desiredHealthy`` when the
    watch started). Also records every pod that started terminating (by UID), once."""

    core: Any
    budgets: dict[str, tuple[dict[str, str], int]] = field(default_factory=dict)
    pods: dict[str, Any] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    terminated: list[str] = field(default_factory=list)
    events: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> PdbWatcher:
        policy = client.PolicyV1Api(self.core.api_client)
        for pdb in policy.list_namespaced_pod_disruption_budget(NAMESPACE).items:
            self.budgets[pdb.metadata.name] = (dict(pdb.spec.selector.match_labels), int(pdb.status.desired_healthy))
        listed = self.core.list_namespaced_pod(NAMESPACE)
        self.pods = {p.metadata.uid: p for p in listed.items}
        self._check("start")
        self._thread = threading.Thread(target=self._run, args=(listed.metadata.resource_version,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=30)

    def _run(self, version: str) -> None:
        while not self._stop.is_set():
            stream = watch.Watch().stream(self.core.list_namespaced_pod, NAMESPACE, resource_version=version, timeout_seconds=2)
            for event in stream:
                pod = event["object"]
                version = pod.metadata.resource_version
                self.events += 1
                uid = pod.metadata.uid
                was = self.pods.get(uid)
                if (event["type"] == "DELETED" or pod.metadata.deletion_timestamp) and uid not in self.terminated:
                    self.terminated.append(uid)
                if event["type"] == "DELETED":
                    self.pods.pop(uid, None)
                else:
                    self.pods[uid] = pod
                del was
                self._check(f"{event['type']} {pod.metadata.name}")

    def _check(self, what: str) -> None:
        for name, (selector, desired) in self.budgets.items():
            healthy = sum(
                1
                for p in self.pods.values()
                if all((p.metadata.labels or {}).get(k) == v for k, v in selector.items())
                and p.metadata.deletion_timestamp is None
                and any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
            )
            if healthy < desired:
                self.violations.append(f"{name}: {healthy} healthy < {desired} at {what}")


def kill_when(cluster: Cluster, args: list[str], phases: set[str], min_wave: int, timeout_s: float = 300.0) -> dict[str, Any]:
    """Start ``planner apply`` and SIGKILL it as soon as its recorded state shows a move of wave ``min_wave``
    or later (0-based) in one of ``phases``; returns that state, with the run's standard error under ``stderr``.
    The run must not have finished by then."""
    import time

    core = cluster.core()
    process = subprocess.Popen([sys.executable, "-m", "planner", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster.env)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            assert process.poll() is None, f"apply ended ({process.returncode}) before it could be killed: {process.communicate()[1][-2000:]}"
            for cm in core.list_namespaced_config_map("default").items:
                if not cm.metadata.name.startswith("planner-apply-"):
                    continue
                state: dict[str, Any] = json.loads(cm.data["state.json"])
                hit = [k for k, r in state["moves"].items() if r["phase"] in phases and int(k.split(".")[0]) >= min_wave]
                if hit:
                    process.kill()
                    state["stderr"] = process.communicate()[1]
                    state["killed_at"] = hit
                    return state
            time.sleep(0.02)
        raise AssertionError("the run never reached the phase to kill it at")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def evicted_pods(stderr: str) -> list[str]:
    """The pods an apply run's log says it evicted (one ``event=evicted`` line per eviction the API accepted)."""
    return [part.split("=", 1)[1] for line in stderr.splitlines() if "event=evicted " in line for part in line.split() if part.startswith("pod=")]
