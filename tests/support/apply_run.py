"""What the ``planner apply`` tests share: a control plane per test module on a seeded ``apply_cluster`` List, the
defrag plan made from that List by ``planner defrag --from kubernetes``, the ``planner apply`` subprocess, and a
watcher that sees every pod event and checks each PodDisruptionBudget at every instant."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
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
def seeded_cluster(seed: int, tmp: Path, binary: Path, nodes: int = 8, scale: int = 1, profile: str = "default") -> Iterator[Cluster]:
    """A control plane (scheduler ``profile``) on ``apply_cluster(seed, nodes, scale)`` and its defrag plan;
    stopped and removed afterwards."""
    list_path = tmp / f"cluster-{seed}.json"
    list_path.write_text(json.dumps(apply_cluster(seed, nodes=nodes, scale=scale)))
    env = binary_env(binary)
    plan_path = tmp / f"plan-{seed}.json"
    made = planner(["defrag", str(list_path), "--from", "kubernetes", "-o", "json", "--out", str(plan_path)], env)
    assert made.returncode == 0, made.stderr
    running = start(str(list_path), tmp / f"state-{seed}", profile=profile, timeout_s=600, binary=binary)
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


def kill_when(cluster: Cluster, args: list[str], phases: set[str], min_wave: int, timeout_s: float = 300.0, sig: int = signal.SIGKILL) -> dict[str, Any]:
    """Start ``planner apply`` and send it ``sig`` (SIGKILL unless told) as soon as its recorded state shows a
    move of wave ``min_wave`` or later (0-based) in one of ``phases``; returns that state, with the run's
    standard error under ``stderr`` and its exit code under ``returncode``. The run must not have finished
    by then."""

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
                    process.send_signal(sig)
                    state["stderr"] = process.communicate(timeout=timeout_s)[1]
                    state["returncode"] = process.returncode
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


@dataclass
class TaintWatcher:
    """Watches the nodes from a thread and records, at every event, how many carry a ``planner.io/apply``
    taint outside ``allowed`` (the plan's sources: the holds every steering mode keeps): the most at once
    the longest any one of them stayed tainted without a break (seconds) and the node-events seen."""

    core: Any
    allowed: set[str]
    most_blocked: int = 0
    longest_s: float = 0.0
    events: int = 0
    _taints: dict[str, bool] = field(default_factory=dict)
    _since: dict[str, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TaintWatcher:
        listed = self.core.list_node()
        self._taints = {n.metadata.name: self._tainted(n) for n in listed.items}
        self._thread = threading.Thread(target=self._run, args=(listed.metadata.resource_version,), daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _tainted(node: Any) -> bool:
        return any(t.key == TAINT_KEY for t in node.spec.taints or [])

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=30)
        now = time.monotonic()
        self.longest_s = max([self.longest_s, *(now - since for since in self._since.values())])

    def _run(self, version: str) -> None:
        while not self._stop.is_set():
            for event in watch.Watch().stream(self.core.list_node, resource_version=version, timeout_seconds=2):
                node = event["object"]
                version = node.metadata.resource_version
                self.events += 1
                name = node.metadata.name
                self._taints[name] = self._tainted(node) and event["type"] != "DELETED"
                now = time.monotonic()
                if self._taints[name] and name not in self.allowed:
                    self._since.setdefault(name, now)
                elif name in self._since:
                    self.longest_s = max(self.longest_s, now - self._since.pop(name))
                blocked = sum(1 for name, tainted in self._taints.items() if tainted and name not in self.allowed)
                self.most_blocked = max(self.most_blocked, blocked)


def run_with_fault(
    cluster: Cluster, args: list[str], phases: set[str], min_wave: int, fault: Any, timeout_s: float = 600.0
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Start ``planner apply``, call ``fault()`` once (the executor stopped by SIGSTOP meanwhile) as soon as
    its recorded state shows a move of wave ``min_wave`` or later (0-based) in one of ``phases``, and let the
    run end; returns the finished process and
    the state the fault was injected at. The run must not have finished before."""
    core = cluster.core()
    process = subprocess.Popen([sys.executable, "-m", "planner", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster.env)
    deadline = time.monotonic() + timeout_s
    seen: dict[str, Any] | None = None
    try:
        while seen is None and time.monotonic() < deadline:
            assert process.poll() is None, f"apply ended ({process.returncode}) before the fault: {process.communicate()[1][-2000:]}"
            for cm in core.list_namespaced_config_map("default").items:
                if cm.metadata.name.startswith("planner-apply-"):
                    state: dict[str, Any] = json.loads(cm.data["state.json"])
                    if any(r["phase"] in phases and int(k.split(".")[0]) >= min_wave for k, r in state["moves"].items()):
                        # the executor paused while the fault is made, so the fault lands in that wave however
                        # fast the run goes (a run of 1 s waves could otherwise finish before it)
                        process.send_signal(signal.SIGSTOP)
                        try:
                            fault()
                        finally:
                            process.send_signal(signal.SIGCONT)
                        seen = state
            time.sleep(0.02)
        assert seen is not None, "the run never reached the phase to inject the fault at"
        out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        return subprocess.CompletedProcess(process.args, process.returncode, out, err), seen
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
