"""The live objects a plan's moves name: pods found by the plan's UID (or, on a cluster loaded by ``planner
controlplane up``, the source UID it keeps in the annotation ``planner.io/source-uid``) or by name, checked to
be where the plan moves them from; whether a pod is Ready; who owns it; the copy of a bare pod pinned to its
target.

The plan names a pod ``name`` or ``namespace/name`` (the importer's form when a name is used in two namespaces).
A mismatch is one line starting with the move's path, as ``validate/belongs.py`` writes them for snapshots."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from planner.kube.apply_client import ApplyError, Kube, refused, server_answer

SOURCE_UID = "planner.io/source-uid"
COPY_OF = "planner.io/copy-of"
FINISHED = ("Succeeded", "Failed")


@dataclass(frozen=True)
class PodRef:
    """A live pod as the executor records it."""

    namespace: str
    name: str
    uid: str

    def as_dict(self) -> dict[str, str]:
        return {"namespace": self.namespace, "name": self.name, "uid": self.uid}

    @staticmethod
    def of(pod: Any) -> PodRef:
        return PodRef(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> PodRef:
        return PodRef(str(data["namespace"]), str(data["name"]), str(data["uid"]))


class LivePods:
    """Every pod of the cluster at one moment, indexed by UID, source UID and name."""

    def __init__(self, pods: list[Any]) -> None:
        self.pods = pods
        self.by_uid: dict[str, Any] = {}
        self.by_source_uid: dict[str, Any] = {}
        self.by_name: dict[str, list[Any]] = {}
        for p in pods:
            meta = p.raw["metadata"] if isinstance(p, View) else _meta(p)
            self.by_uid[meta["uid"]] = p
            source = (meta.get("annotations") or {}).get(SOURCE_UID)
            if source:
                self.by_source_uid[source] = p
            self.by_name.setdefault(meta["name"], []).append(p)
            self.by_name.setdefault(f"{meta.get('namespace')}/{meta['name']}", []).append(p)

    def find(self, name: str, uid: str | None) -> Any | None:
        """The pod the plan means: by UID when the plan has one (the pod's own or its source UID), else by name."""
        if uid is not None:
            return self.by_uid.get(uid) or self.by_source_uid.get(uid)
        found = self.by_name.get(name, [])
        return found[0] if len(found) == 1 else None


def _meta(pod: Any) -> dict[str, Any]:
    """The fields ``LivePods`` indexes, of a pod that is not a ``View`` (a client model)."""
    return {"uid": pod.metadata.uid, "name": pod.metadata.name, "namespace": pod.metadata.namespace, "annotations": pod.metadata.annotations}


MAPS = frozenset({"labels", "annotations"})
"""Fields that are maps of names (read as dicts), not objects."""


class View:
    """An API object read as JSON, with the client models' attribute names (``pod.metadata.deletion_timestamp``
    reads ``metadata.deletionTimestamp``; a field the object lacks is None). Listing pods through the client's
    models costs ten times the JSON parse, and the executor lists pods at every poll."""

    __slots__ = ("raw",)

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    def __getattr__(self, name: str) -> Any:
        head, *rest = name.split("_")
        value = self.raw.get(head + "".join(part.title() for part in rest))
        if isinstance(value, dict) and name not in MAPS:
            return View(value)
        if isinstance(value, list):
            return [View(v) if isinstance(v, dict) else v for v in value]
        return value


def list_pods(kube: Kube, namespace: str | None = None) -> list[Any]:
    """Every pod (of ``namespace``), as ``View`` objects."""
    try:
        if namespace is None:
            answer = kube.core.list_pod_for_all_namespaces(_preload_content=False)
        else:
            answer = kube.core.list_namespaced_pod(namespace, _preload_content=False)
        return [View(item) for item in json.loads(answer.data)["items"]]
    except Exception as err:  # noqa: BLE001
        if getattr(err, "status", None) == 403:
            raise refused(err, "list", "pods") from None
        raise ApplyError([f"listing pods: {server_answer(err)}"], 1) from None


def plain_name(plan_name: str) -> str:
    return plan_name.rsplit("/", 1)[-1]


def mismatch(path: str, plan_name: str, uid: str | None, source: str, live: LivePods) -> str | None:
    """Why the live cluster does not hold the pod a first move names where the plan moves it from (None: it does)."""
    pod = live.find(plan_name, uid)
    with_uid = f" (UID {uid})" if uid else ""
    if pod is None:
        return f"{path}.pod: pod '{plan_name}'{with_uid} is not in the cluster (deleted, replaced, or the plan is for another cluster)"
    if pod.metadata.name != plain_name(plan_name):
        return f"{path}.pod: the plan's pod '{plan_name}'{with_uid} is named '{pod.metadata.namespace}/{pod.metadata.name}' in the cluster"
    if pod.spec.node_name != source:
        where = f"on node '{pod.spec.node_name}'" if pod.spec.node_name else "pending"
        return f"{path}.from: the plan moves pod '{plan_name}' from node '{source}'; in the cluster it is {where}"
    if pod.metadata.deletion_timestamp is not None or (pod.status and pod.status.phase in FINISHED):
        return f"{path}.pod: pod '{plan_name}' is terminating or finished in the cluster"
    return None


def is_ready(pod: Any) -> bool:
    """Running, Ready and not being deleted."""
    if pod.metadata.deletion_timestamp is not None or not pod.status or pod.status.phase != "Running":
        return False
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def controller_of(pod: Any) -> Any | None:
    """The pod's controller owner reference (None: a bare pod)."""
    for ref in pod.metadata.owner_references or []:
        if ref.controller:
            return ref
    return None


def owned_by(pods: list[Any], owner_uid: str) -> list[Any]:
    """The pods whose controller is ``owner_uid`` (read from the JSON of ``View`` pods: the attribute path
    costs ten times more, and the executor asks this for every owned move at every step)."""
    found = []
    for p in pods:
        refs = (p.raw["metadata"].get("ownerReferences") or []) if isinstance(p, View) else [r.to_dict() for r in p.metadata.owner_references or []]
        if any(r.get("uid") == owner_uid and r.get("controller") for r in refs):
            found.append(p)
    return found


def copy_name(name: str, plan_id: str, wave: int) -> str:
    """A new name for a bare pod's copy: its name (shortened) and a suffix of the plan and the wave."""
    suffix = hashlib.sha256(f"{plan_id}/{wave}/{name}".encode()).hexdigest()[:5]
    return f"{name[:52].rstrip('-.')}-m{suffix}"


def pinned_copy(pod: Any, kube: Kube, target: str, name: str, plan_id: str) -> dict[str, Any]:
    """The copy of a bare pod for ``target``: its labels, annotations and spec as written by its author, a new
    name, a required node affinity to ``target`` (a ``metadata.name`` field term added to each of its own
    terms, so its other node rules still hold) and no server-set fields (node, status, uid, priority value:
    admission recomputes it from the class)."""
    raw = copy.deepcopy(pod.raw)
    meta = raw["metadata"]
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != SOURCE_UID}
    annotations[COPY_OF] = pod.metadata.uid
    labels = dict(meta.get("labels") or {})
    labels["planner.io/plan"] = plan_id
    spec = raw["spec"]
    for server_set in ("nodeName", "priority", "preemptionPolicy", "enableServiceLinks"):
        spec.pop(server_set, None)
    field_term = {"key": "metadata.name", "operator": "In", "values": [target]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        term["matchFields"] = [*(term.get("matchFields") or []), field_term]
    required["nodeSelectorTerms"] = terms
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": pod.metadata.namespace, "labels": labels, "annotations": annotations},
        "spec": spec,
    }
