"""What keeps a verify run's cluster as the plan saw it while the plan is replayed on it.

* **Workload controllers' new pods are held.** An evicted pod of a ReplicaSet, StatefulSet or Job is re-created by
  its controller, and the scheduler would put that new pod anywhere, onto nodes later moves need. A
  MutatingAdmissionPolicy (``admissionregistration.k8s.io/v1``, Kubernetes' own in-process admission, no webhook)
  adds the scheduling gate ``planner.io/verify-hold`` to every pod created with a workload controller as its owner
  while the run lasts: the re-created pod exists (its controller is satisfied) but is never scheduled. A dry-run
  probe pod confirms the policy is in force before anything is changed.
* **Replacements are never adopted.** A replacement keeps the moving pod's labels (budgets, anti-affinity and
  spread select by them), so a controller whose selector they match would adopt it as an orphan and delete a pod
  as excess. Each replacement is owned instead by the namespace's hold Deployment ``planner-verify-hold``
  (``replicas: 0``, paused: it makes no ReplicaSet); a pod another controller owns is never adopted. The disruption
  controller reads that owner's scale (0) for budgets given as ``maxUnavailable`` or a percentage, so a budget
  counts the replacement as one more healthy pod and expects no more pods than before: a surge, as a rolling update's.
* **Replacements never preempt.** Each replacement gets a PriorityClass of its own pod's value with
  ``preemptionPolicy: Never`` (a system value above 10^9 keeps its class: no user class may carry it).

``release`` undoes the policy and the gate on the held pods (used on a cluster given by ``--kubeconfig``; a
throwaway control plane is stopped instead)."""

from __future__ import annotations

import json
import time
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, server_answer
from planner.kube.verify_steps import never_class_name

HOLD_GATE = "planner.io/verify-hold"
POLICY_NAME = "planner-verify-hold"
HOLDER_NAME = "planner-verify-hold"
HOLDER_LABEL = "planner.io/verify-holder"
WORKLOAD_KINDS = ("ReplicaSet", "StatefulSet", "Job", "ReplicationController", "DaemonSet")
MAX_USER_PRIORITY = 1_000_000_000
POLICY_READY_S = 60.0


def _policy() -> dict[str, Any]:
    kinds = ", ".join(f"'{k}'" for k in WORKLOAD_KINDS)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
            "matchConditions": [
                {
                    "name": "owned-by-a-workload-controller",
                    "expression": f"has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.kind in [{kinds}])",
                }
            ],
            "mutations": [
                {
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {
                        "expression": f"Object{{spec: Object.spec{{schedulingGates: [Object.spec.schedulingGates{{name: '{HOLD_GATE}'}}]}}}}"
                    },
                }
            ],
        },
    }


def _create(create: Any, body: dict[str, Any], what: str) -> Any | None:
    """Create ``body``; an object that already exists is None (the caller reads it), any other answer an error."""
    try:
        return create(body)
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) == 409:
            return None
        raise ApplyError([f"creating {what}: {server_answer(err)}"], 1) from None


class Holds:
    """The hold policy, the hold Deployments and the never-preempting PriorityClasses of one run."""

    def __init__(self, kube: Kube, run_id: str) -> None:
        from kubernetes import client  # deferred: the kubernetes client (loaded by connect, which says how to install it)

        self.kube = kube
        self.run_id = run_id
        self.apps = client.AppsV1Api(kube.api_client)
        self.admission = client.AdmissionregistrationV1Api(kube.api_client)
        self.scheduling = client.SchedulingV1Api(kube.api_client)
        self.holders: dict[str, dict[str, str]] = {}
        self.classes: dict[int, str] = {}

    def hold_controllers(self, probe_namespace: str) -> float:
        """Put the hold policy in force; returns the seconds until a probe pod came back gated."""
        started = time.monotonic()
        _create(self.admission.create_mutating_admission_policy, _policy(), f"the MutatingAdmissionPolicy {POLICY_NAME}")
        binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": POLICY_NAME}}
        binding["spec"] = {"policyName": POLICY_NAME}
        _create(self.admission.create_mutating_admission_policy_binding, binding, f"the MutatingAdmissionPolicyBinding {POLICY_NAME}")
        owner = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "planner-verify-probe",
            "uid": "00000000-0000-0000-0000-000000000000",
            "controller": True,
        }
        probe = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"generateName": "planner-verify-probe-", "namespace": probe_namespace, "ownerReferences": [owner]},
            "spec": {"containers": [{"name": "probe", "image": "registry.invalid/planner-verify-probe"}]},
        }
        while True:
            try:
                made = self.kube.core.create_namespaced_pod(probe_namespace, probe, dry_run="All")
            except Exception as err:  # noqa: BLE001
                raise ApplyError([f"a dry-run probe pod in namespace {probe_namespace}: {server_answer(err)}"], 1) from None
            if any(g.name == HOLD_GATE for g in made.spec.scheduling_gates or []):
                return time.monotonic() - started
            if time.monotonic() - started > POLICY_READY_S:
                raise ApplyError(
                    [
                        (
                            f"the MutatingAdmissionPolicy {POLICY_NAME} was not in force after {POLICY_READY_S:.0f} s (the API server needs "
                            "admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, Kubernetes 1.36 or later)"
                        )
                    ],
                    1,
                )
            time.sleep(0.2)

    def holder(self, namespace: str) -> dict[str, str]:
        """The namespace's hold Deployment (created on first use): the owner of its replacements."""
        if namespace in self.holders:
            return self.holders[namespace]
        labels = {HOLDER_LABEL: "hold"}
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": HOLDER_NAME, "namespace": namespace, "labels": labels},
            "spec": {
                "replicas": 0,
                "paused": True,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "hold", "image": "registry.invalid/planner-verify-hold"}]}},
            },
        }
        made = _create(lambda b: self.apps.create_namespaced_deployment(namespace, b), body, f"the hold Deployment {namespace}/{HOLDER_NAME}")
        if made is None:
            made = self.apps.read_namespaced_deployment(HOLDER_NAME, namespace)
        self.holders[namespace] = {"name": HOLDER_NAME, "uid": str(made.metadata.uid)}  # type: ignore[union-attr]  # the client types metadata optional; the server always returns it on create
        return self.holders[namespace]

    def priority_class(self, pod: Any) -> str | None:
        """The never-preempting class of ``pod``'s priority value (None: keep the pod's own class)."""
        value = pod.spec.priority
        if value is None or pod.spec.preemption_policy == "Never" or value > MAX_USER_PRIORITY:
            return None
        if value not in self.classes:
            body = {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": never_class_name(value)},
                "value": value,
                "preemptionPolicy": "Never",
                "description": "planner verify: replacements of moving pods, never preempting",
            }
            _create(self.scheduling.create_priority_class, body, f"the PriorityClass {never_class_name(value)}")
            self.classes[value] = never_class_name(value)
        return self.classes[value]

    def release(self) -> int:
        """Remove the hold policy and the hold gate from the pods it held; returns how many pods were released."""
        for delete in (self.admission.delete_mutating_admission_policy_binding, self.admission.delete_mutating_admission_policy):
            try:
                delete(POLICY_NAME)
            except Exception as err:  # noqa: BLE001
                if getattr(err, "status", None) != 404:
                    raise ApplyError([f"removing {POLICY_NAME}: {server_answer(err)}"], 1) from None
        raw = json.loads(self.kube.core.list_pod_for_all_namespaces(_preload_content=False).data)["items"]
        released = 0
        for pod in raw:
            gates = pod["spec"].get("schedulingGates") or []
            if not any(g.get("name") == HOLD_GATE for g in gates):
                continue
            kept = [g for g in gates if g.get("name") != HOLD_GATE]
            if kept:
                pod["spec"]["schedulingGates"] = kept
            else:
                pod["spec"].pop("schedulingGates")
            try:
                self.kube.core.replace_namespaced_pod(pod["metadata"]["name"], pod["metadata"]["namespace"], pod)
                released += 1
            except Exception as err:  # noqa: BLE001
                if getattr(err, "status", None) not in (404, 409):
                    raise ApplyError([f"releasing {pod['metadata']['namespace']}/{pod['metadata']['name']}: {server_answer(err)}"], 1) from None
        return released
