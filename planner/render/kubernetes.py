"""Defrag plans as something a Kubernetes operator can apply (issue 13, item 2).

* ``podmigrationjob``: koordinator ``PodMigrationJob`` objects (``scheduling.koordinator.sh/v1alpha1``,
  fields from koordinator's published CRD ``config/crd/bases/scheduling.koordinator.sh_podmigrationjobs.yaml``),
  one per move, mode ``ReservationFirst`` (koordinator reserves room on the destination, starts the
  new pod there, then evicts the old one: make-before-break per pod). A PodMigrationJob has no
  destination field; the destination is pinned through the reservation it creates:
  ``spec.reservationOptions.template.spec.template`` is a pod template that requests exactly what
  the pod requests (CPUs, memory, GPUs) with a required node affinity to the planned node
  (``kubernetes.io/hostname``) and the pod's tolerations. koordinator uses a given template as it
  is (it fills in the reservation's owners from the pod's controller), so the reservation lands on
  the planned node and the recreated pod consumes it. Objects carry the labels
  ``planner.io/plan`` (a digest of the plan) and ``planner.io/wave``, the annotations ``planner.io/from``,
  ``planner.io/to`` and (on a pod's first move, when the plan or else the snapshot has it: ``move_uids``)
  ``planner.io/pod-uid``, and are ordered by wave.
* ``kubectl`` for a preemption or allocation plan (``placement_script``): the victims evicted through
  the Eviction API (PDBs apply), then the pending pods bound to their planned nodes with Bindings.
* ``kubectl`` for a defrag plan, and the PodMigrationJobs as a stream or one file per wave:
  ``render/kubernetes_waves.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from typing import Any
from urllib.parse import quote

from planner import rules
from planner.cluster import Cluster, Pod
from planner.kubernetes_names import name_problem
from planner.plans import DefragPlan
from planner.textsafe import printable

API_VERSION = "scheduling.koordinator.sh/v1alpha1"
GPU_RESOURCE = "nvidia.com/gpu"
DEFAULT_TTL = "30m"
WAIT_TIMEOUT_S = 1800
HOSTNAME_LABEL = "kubernetes.io/hostname"


def plan_digest(plan: DefragPlan) -> str:
    """A short digest of the plan's moves: the label that ties a plan's objects together."""
    moves = [[m.pod, m.from_, m.to] for wave in plan.waves for m in wave]
    return hashlib.sha256(json.dumps(moves).encode()).hexdigest()[:12]


def _dns_name(text: str, limit: int = 253) -> str:
    """A DNS-1123 subdomain from ``text``: lower case, [a-z0-9.-], starting and ending alphanumeric."""
    name = re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-.")
    if len(name) > limit:
        tail = hashlib.sha256(text.encode()).hexdigest()[:8]
        name = name[: limit - 9].rstrip("-.") + "-" + tail
    return name or "pod"


def _quantity(value: float) -> str:
    """A Kubernetes quantity for a count of cores / GPUs: whole numbers plain, else millis."""
    if float(value).is_integer():
        return str(int(value))
    return f"{round(value * 1000)}m"


def _memory(gib: float) -> str:
    mib = gib * 1024
    return f"{int(mib)}Mi" if float(mib).is_integer() else f"{round(gib * 2**30)}"


def namespace_of(pod: Pod) -> str:
    return pod.namespace or "default"


def kubernetes_name(pod: Pod) -> str:
    """The pod's name in its namespace (the importer writes ``ns/name`` when a name is used in two)."""
    prefix = f"{pod.namespace}/"
    return pod.name[len(prefix) :] if pod.namespace and pod.name.startswith(prefix) else pod.name


def _requests(pod: Pod, gpu_resource: str) -> dict[str, str]:
    """What the reservation asks for: the pod's CPUs and memory, and its resources by name where the
    snapshot has them (a MIG slice, a time-sliced replica or an RDMA device is reserved as what it
    is); else its whole GPUs as ``gpu_resource`` (shares are device-level: none). DRA devices are not
    reserved: their ``dra.planner.io/`` charges are the planner's own names, never Kubernetes resources
    (the replacement pod gets a fresh claim from its template, which the DynamicResources plugin allocates)."""
    requests = {"cpu": _quantity(pod.cpus), "memory": _memory(pod.memory_gib)}
    if pod.requests:
        requests.update({name: str(amount) for name, amount in sorted(pod.requests.items()) if not name.startswith(rules.DRA_PREFIX)})
    elif pod.gpus >= 1 and float(pod.gpus).is_integer():
        requests[gpu_resource] = str(int(pod.gpus))
    return requests


def _toleration(toleration: Any) -> dict[str, Any]:
    """A toleration in Kubernetes' field names (the snapshot's are the same, minus empty ones)."""
    return {key: value for key, value in toleration.model_dump().items() if value not in (None, "")}


def move_uids(plan: DefragPlan, cluster: Cluster) -> list[list[str | None]]:
    """Per wave, per move: the UID its pod is checked against (the ``planner.io/pod-uid`` annotation,
    the kubectl script's check). A pod's first move: the UID the plan recorded, else the snapshot's
    (a plan written without UIDs, rendered against a snapshot that has them: ``snapshot_uids``
    says which); None when neither has one. A later move: what the plan says (the planner records
    none: the pod is a new one by then, and the script checks only first moves)."""
    pods = {p.name: p for p in cluster.pods}
    seen: set[str] = set()
    uids: list[list[str | None]] = []
    for wave in plan.waves:
        uids.append([])
        for move in wave:
            first = move.pod not in seen
            seen.add(move.pod)
            uids[-1].append((move.uid or pods[move.pod].uid) if first else move.uid)
    return uids


def snapshot_uids(plan: DefragPlan, cluster: Cluster) -> tuple[list[str], list[str]]:
    """The pods whose first move has no UID in the plan: those the snapshot gives one (``move_uids``
    takes it), and those it does not either (checked by node only)."""
    pods = {p.name: p for p in cluster.pods}
    taken: list[str] = []
    unknown: list[str] = []
    seen: set[str] = set()
    for move in (m for wave in plan.waves for m in wave):
        if move.pod not in seen and move.uid is None:
            (taken if pods[move.pod].uid else unknown).append(move.pod)
        seen.add(move.pod)
    return taken, unknown


def file_word(name: str | None, neutral: str) -> str:
    """How a generated file's header names the file it is in: ``name`` (``--out``, ``--out-dir``) as
    one shell word, or ``neutral`` when it is not known (standard output) or would not stay one
    printable line of a comment."""
    if not name or name == "-" or printable(name) != name:
        return neutral
    return shlex.quote(name)


def pod_migration_jobs(plan: DefragPlan, cluster: Cluster, gpu_resource: str = GPU_RESOURCE, ttl: str = DEFAULT_TTL) -> list[dict[str, Any]]:
    """One PodMigrationJob per move, wave by wave (see the module docstring)."""
    pods = {p.name: p for p in cluster.pods}
    digest = plan_digest(plan)
    uids = move_uids(plan, cluster)
    objects = []
    for w, wave in enumerate(plan.waves, start=1):
        for k, move in enumerate(wave, start=1):
            pod = pods[move.pod]
            uid = uids[w - 1][k - 1]
            template_spec: dict[str, Any] = {
                "containers": [{"name": "reserve", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": _requests(pod, gpu_resource)}}],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [move.to]}]}]
                        }
                    }
                },
            }
            if pod.tolerations:
                template_spec["tolerations"] = [_toleration(t) for t in pod.tolerations]
            objects.append(
                {
                    "apiVersion": API_VERSION,
                    "kind": "PodMigrationJob",
                    "metadata": {
                        "name": _dns_name(f"planner-{digest}-w{w}-{k}-{move.pod}"),
                        "labels": {"planner.io/plan": digest, "planner.io/wave": str(w)},
                        "annotations": {"planner.io/from": move.from_, "planner.io/to": move.to, **({"planner.io/pod-uid": uid} if uid else {})},
                    },
                    "spec": {
                        "mode": "ReservationFirst",
                        "ttl": ttl,
                        "podRef": {"kind": "Pod", "apiVersion": "v1", "namespace": namespace_of(pod), "name": kubernetes_name(pod)},
                        "reservationOptions": {"template": {"spec": {"template": {"spec": template_spec}}}},
                    },
                }
            )
    return objects


def wide_table(plan: DefragPlan, cluster: Cluster) -> str:
    """Every move, wave by wave: wave, namespace/name, from, to, GPUs (plain text, never truncated)."""
    pods = {p.name: p for p in cluster.pods}
    rows = [("WAVE", "POD", "FROM", "TO", "GPUS")]
    for w, wave in enumerate(plan.waves, start=1):
        for move in wave:
            pod = pods[move.pod]
            rows.append((str(w), printable(f"{namespace_of(pod)}/{kubernetes_name(pod)}"), printable(move.from_), printable(move.to), f"{pod.gpus:g}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows) + "\n"


def placement_script(plan: Any, cluster: Cluster, file_name: str | None = None) -> str:
    """A bash script for a preemption or allocation plan: evict the victims through the Eviction API
    (their PodDisruptionBudgets apply: an eviction a budget forbids fails and stops the script), wait
    until they are gone, then bind each pending pod to its planned node (a ``Binding``, what a
    scheduler posts). ``DRY_RUN=1`` sends every request with ``dryRun=All`` and waits for nothing.
    Every value from the input is quoted (see ``_api_path``, ``_echo``); the header names the script
    as ``file_word`` says."""
    script = file_word(file_name, "SCRIPT")
    pods = {p.name: p for p in cluster.pods}
    victims = list(getattr(plan, "victims", []))
    evictions = (
        [
            f"# {type(plan).__name__}: {len(victims)} eviction(s), then {len(plan.placements)} binding(s), written by `planner`.",
            "# Evictions go through the Eviction API, so PodDisruptionBudgets apply (a refused eviction stops the",
            "# script). Evicted pods stop before anything starts: a preemption is break-before-make. The pending pods",
            "# are then bound to their planned nodes with a Binding, as a scheduler does; a pod some scheduler bound",
        ]
        if victims
        else [
            f"# {type(plan).__name__}: {len(plan.placements)} binding(s) and no eviction, written by `planner`.",
            "# The pending pods are bound to their planned nodes with a Binding, as a scheduler does; a pod some scheduler bound",
        ]
    )
    lines = [
        "#!/usr/bin/env bash",
        *evictions,
        "# in the meantime makes its binding fail, which stops the script (run it again after planning again).",
        f"# Usage: bash {script}  |  DRY_RUN=1 bash {script} (every request with dryRun=All, nothing changes)"
        + ("  (SCRIPT: this file)" if script == "SCRIPT" else ""),
        "set -euo pipefail",
        'KUBECTL="${KUBECTL:-kubectl}"',
        'QUERY=""',
        'if [[ "${DRY_RUN:-0}" == "1" ]]; then QUERY="?dryRun=All"; fi',
        f'WAIT_TIMEOUT_S="${{WAIT_TIMEOUT_S:-{WAIT_TIMEOUT_S}}}"',
        "",
    ]
    for victim in victims:
        pod = pods[victim.pod]
        namespace, name = namespace_of(pod), kubernetes_name(pod)
        body = json.dumps({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}})
        lines += [
            _echo(f"evict {namespace}/{name} (on {victim.node})"),
            f'"$KUBECTL" create --raw {_api_path(namespace, name, "eviction")}"$QUERY" -f - <<\'PLANNER_EOF\'',
            body,
            "PLANNER_EOF",
        ]
    if victims:
        lines.append('if [[ "${DRY_RUN:-0}" != "1" ]]; then')
        for victim in victims:
            pod = pods[victim.pod]
            lines.append(
                f'  "$KUBECTL" wait --for=delete {shlex.quote("pod/" + kubernetes_name(pod))} -n {shlex.quote(namespace_of(pod))} '
                '--timeout="${WAIT_TIMEOUT_S}s"'
            )
        lines.append("fi")
    for placement in plan.placements:
        pod = pods[placement.pod]
        namespace, name = namespace_of(pod), kubernetes_name(pod)
        body = json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace},
                "target": {"apiVersion": "v1", "kind": "Node", "name": placement.node},
            }
        )
        lines += [
            _echo(f"bind {namespace}/{name} to {placement.node}"),
            f'"$KUBECTL" create --raw {_api_path(namespace, name, "binding")}"$QUERY" -f - <<\'PLANNER_EOF\'',
            body,
            "PLANNER_EOF",
        ]
    if getattr(plan, "reactivate", None):
        lines.append(f"# then standby pod {printable(plan.reactivate)} wakes on its own node: no Kubernetes request does that; its controller must")
    if not victims and not plan.placements:
        lines.append("echo 'the plan has nothing to do' >&2")
    return "\n".join(lines) + "\n"


def _api_path(namespace: str, name: str, subresource: str) -> str:
    """A pod subresource's API path as one shell word: each name percent-encoded as one path segment
    ('/' and '..' cannot walk to another object), the whole single-quoted."""
    return shlex.quote(f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}/{subresource}")


def _echo(message: str) -> str:
    """A progress line on stderr: quoted for the shell, control characters escaped for the terminal."""
    return f"echo {shlex.quote(printable(message))} >&2"


def script_name_problems(plan: Any, cluster: Cluster) -> list[str]:
    """The names a script or the objects for ``plan`` would send to Kubernetes that Kubernetes refuses
    (pods and nodes: DNS-1123 subdomains, namespaces: DNS-1123 labels), each at its snapshot path.
    Checked before any Kubernetes output from a snapshot that did not come through the importer."""
    pod_row = {pod.name: i for i, pod in enumerate(cluster.pods)}
    node_row = {node.name: i for i, node in enumerate(cluster.nodes)}
    pod_names = [m.pod for wave in getattr(plan, "waves", []) for m in wave]
    pod_names += [v.pod for v in getattr(plan, "victims", [])] + [p.pod for p in plan.placements]
    pod_names += [plan.reactivate] if getattr(plan, "reactivate", None) else []
    node_names = [n for wave in getattr(plan, "waves", []) for m in wave for n in (m.from_, m.to)]
    node_names += [v.node for v in getattr(plan, "victims", [])] + [p.node for p in plan.placements]
    problems: list[str] = []
    named: dict[tuple[str, str], int] = {}
    for i in sorted({pod_row[name] for name in pod_names if name in pod_row}):
        pod = cluster.pods[i]
        for field, value, what in (("name", kubernetes_name(pod), "pod name"), ("namespace", namespace_of(pod), "namespace")):
            problem = name_problem(value, what)
            if problem:
                problems.append(f"pods[{i}].{field}: {problem}; Kubernetes output needs Kubernetes names")
        first = named.setdefault((namespace_of(pod), kubernetes_name(pod)), i)
        if first != i:
            problems.append(f"pods[{i}].name: is Kubernetes pod {namespace_of(pod)}/{kubernetes_name(pod)}, as pods[{first}] is")
    for j in sorted({node_row[name] for name in node_names if name in node_row}):
        problem = name_problem(cluster.nodes[j].name, "node name")
        if problem:
            problems.append(f"nodes[{j}].name: {problem}; Kubernetes output needs Kubernetes names")
    return problems
