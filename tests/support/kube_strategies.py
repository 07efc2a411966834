"""Hypothesis strategies for Kubernetes inputs: small mixed kubectl Lists from the seeded generator
(``planner/instances/kubernetes_mixed.py``), a few nodes of each family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from planner.instances.kubernetes_mixed import FAMILIES, generate_kubernetes_mixed


@dataclass(frozen=True)
class MixedSpec:
    """The generator's arguments (a short repr in Hypothesis' reports; ``objects()`` is the List)."""

    seed: int
    counts: tuple[tuple[str, int], ...]
    fill: float

    def objects(self) -> dict[str, Any]:
        return generate_kubernetes_mixed(seed=self.seed, counts=dict(self.counts), fill=self.fill)


@st.composite
def mixed_specs(draw: st.DrawFn, most: int = 2) -> MixedSpec:
    """1..``most``+1 whole-GPU H100 nodes and 0..``most`` nodes of every other family (H200,
    inference, MIG, time-sliced, CPU; 0-1 control-plane), filled to 50-85%."""
    counts = {family: draw(st.integers(0, 1 if family == "control-plane" else most), label=family) for family in FAMILIES}
    counts["train-h100"] += 1
    return MixedSpec(draw(st.integers(0, 2**16), label="seed"), tuple(counts.items()), draw(st.sampled_from([0.5, 0.7, 0.85]), label="fill"))


def mixed_lists(most: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    """Small mixed kubectl Lists (see ``mixed_specs``)."""
    return mixed_specs(most).map(MixedSpec.objects)


POD_STATES = ("ready", "not-ready", "no-condition", "pending", "unbound", "terminating", "succeeded")
"""What a drawn pod's status becomes: Running and Ready; Running, not Ready; Running without
conditions; Pending on its node (bound, not started); Pending with no node; Running with a
deletionTimestamp; Succeeded."""


def _owner_kind(pod: dict[str, Any]) -> str | None:
    return next((r["kind"] for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


def _set_state(pod: dict[str, Any], state: str) -> None:
    status = pod.setdefault("status", {})
    status.pop("conditions", None)
    status["phase"] = {"pending": "Pending", "unbound": "Pending", "succeeded": "Succeeded"}.get(state, "Running")
    if state in ("ready", "not-ready", "terminating"):
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True" if state != "not-ready" else "False"}]
    if state == "pending":
        status["conditions"] = [{"type": "Ready", "status": "False"}]
    if state == "unbound":
        pod["spec"].pop("nodeName", None)
    if state == "terminating":
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def _controller_objects(draw: st.DrawFn, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """Controller objects for a pod's owner, as ``kubectl get deploy,rs,sts`` would add them (or none)."""
    ref = next((r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
    if ref is None or ref["kind"] not in ("ReplicaSet", "StatefulSet"):
        return []
    namespace, name = pod["metadata"]["namespace"], ref["name"]
    replicas = draw(st.integers(0, 5), label="replicas")

    def obj(kind: str, obj_name: str, **meta: Any) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": obj_name, "namespace": namespace, **meta}, "spec": {"replicas": replicas}}

    template = (pod["metadata"].get("labels") or {}).get("pod-template-hash")
    forms = ["none", "own"] + (["deployment-owned", "deployment-only"] if template and ref["kind"] == "ReplicaSet" else [])
    form = draw(st.sampled_from(forms), label="controller objects")
    if form == "own":
        return [obj(ref["kind"], name)]
    if form == "none":
        return []
    deployment = name[: -len(template) - 1]
    found = [obj("Deployment", deployment)]
    if form == "deployment-owned":
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "uid": f"uid-{deployment}", "controller": True}
        found.append({**obj("ReplicaSet", name, ownerReferences=[owner]), "spec": {"replicas": draw(st.integers(0, 5), label="rs replicas")}})
    return found


@st.composite
def budget_lists(draw: st.DrawFn) -> dict[str, Any]:
    """Small mixed Lists whose PodDisruptionBudgets are drawn (maxUnavailable or minAvailable, an
    integer or a percentage; sometimes a ``status.disruptionsAllowed`` and ``status.disruptedPods``)
    and whose budgeted pods are in drawn states (``POD_STATES``), with their controllers' objects or
    not: the inputs on which the importer's budgets are held to the disruption controller's count."""
    doc = draw(mixed_specs(1)).objects()
    items = doc["items"]
    pods = [item for item in items if item["kind"] == "Pod"]
    extra: dict[tuple[str, str, str], dict[str, Any]] = {}
    batch = sorted(
        {(p["metadata"]["namespace"], p["metadata"]["labels"]["app"]) for p in pods if _owner_kind(p) == "Job" and "app" in p["metadata"].get("labels", {})}
    )
    if batch and draw(st.booleans(), label="a budget over Job pods"):
        namespace, app = draw(st.sampled_from(batch), label="Job pods")
        metadata = {"name": f"{app}-batch-pdb", "namespace": namespace, "uid": f"uid-{app}-batch-pdb"}
        items.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": metadata, "spec": {"selector": {"matchLabels": {"app": app}}}})
    for pdb in [item for item in items if item["kind"] == "PodDisruptionBudget"]:
        field = draw(st.sampled_from(["maxUnavailable", "minAvailable"]), label="field")
        value: int | str = draw(st.one_of(st.integers(0, 4), st.integers(0, 100).map(lambda n: f"{n}%")), label="value")
        selector = pdb["spec"]["selector"]
        pdb["spec"] = {"selector": selector, field: value}
        selected = [
            p
            for p in pods
            if p["metadata"]["namespace"] == pdb["metadata"]["namespace"]
            and all(p["metadata"].get("labels", {}).get(k) == v for k, v in selector.get("matchLabels", {}).items())
        ]
        for pod in selected:
            _set_state(pod, draw(st.sampled_from(POD_STATES), label="pod state"))
        if selected:
            for obj in _controller_objects(draw, selected[0]):
                extra.setdefault((obj["metadata"]["namespace"], obj["kind"], obj["metadata"]["name"]), obj)
        status: dict[str, Any] = {}
        if draw(st.booleans(), label="status.disruptionsAllowed"):
            status["disruptionsAllowed"] = draw(st.integers(0, 3))
        if selected and draw(st.integers(0, 4), label="disruptedPods") == 0:
            status["disruptedPods"] = {selected[0]["metadata"]["name"]: "2026-01-01T00:00:00Z"}
        if status:
            pdb["status"] = status
    items += extra.values()
    return doc
