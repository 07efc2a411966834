"""Node pools for migration plans: which nodes a plan may touch and where a pod may go, beyond what
Kubernetes itself allows.

Kubernetes lets a GPU pod whose selectors allow several GPU products land on any of them, and a
CPU-only pod land on a GPU node. Operators do not expect a nightly plan to do either, so by default
a placed GPU pod keeps the GPU product it runs on and a CPU-only pod never arrives on a GPU node
(``allow_product_change`` and ``allow_cpu_pods_on_gpu_nodes`` lift them). The CPU-only rule keeps
CPU-only pods to the CPU-only nodes, so it cannot apply where there are none (every CPU-only pod
already runs on a GPU node) or where GPU and CPU-only nodes share a model name: the report then says
``cpu_pods_on_gpu_nodes: true`` (what the plan may do, not what was asked) with a note saying why. ``node_selector`` scopes a
plan to the nodes a label selector matches, as kube-descheduler's ``nodeSelector`` does: pods on
other nodes stay, and no pod arrives there.

The policy is applied as restrictions on a copy of the snapshot (``gpu_models`` narrowed, pods
locked, nodes cordoned), so every planner and the validator obey it through ``rules``; a plan
made under it is also legal on the snapshot as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from planner import rules
from planner.cluster import Cluster, Node, NodeSelectorRequirement, Pod

_TERM = re.compile(
    r"\s*(?:(?P<not>!)\s*(?P<absent>[^\s,!=()]+)"
    r"|(?P<key>[^\s,!=()]+)\s*(?:(?P<op>==|=|!=)\s*(?P<value>[^\s,!=()]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<values>[^()]*)\))?)\s*(?:,|$)"
)


def parse_selector(text: str) -> tuple[NodeSelectorRequirement, ...]:
    """A Kubernetes label selector (``pool=gpu,tier!=spot,zone in (a,b),!cordon``) as the
    requirements that must all hold (``rules.requirement_matches`` reads them, as it reads node
    affinity); ValueError naming the part it cannot read."""
    if not text.strip():
        raise ValueError("an empty selector would select every node; give one such as 'pool=training'")
    requirements = []
    position = 0
    while position < len(text):
        match = _TERM.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(
                f"cannot read the selector from {text[position:]!r}: give terms such as 'key=value', 'key!=value', "
                "'key in (a,b)', 'key notin (a,b)', 'key' or '!key', separated by commas"
            )
        if match.group("absent"):
            requirements.append(NodeSelectorRequirement(key=match.group("absent"), operator="DoesNotExist"))
        elif match.group("op"):
            operator = "NotIn" if match.group("op") == "!=" else "In"
            requirements.append(NodeSelectorRequirement(key=match.group("key"), operator=operator, values=[match.group("value")]))
        elif match.group("setop"):
            values = tuple(v.strip() for v in match.group("values").split(",") if v.strip())
            if not values:
                raise ValueError(f"'{match.group('key')} {match.group('setop')} ()' needs at least one value")
            operator = "In" if match.group("setop") == "in" else "NotIn"
            requirements.append(NodeSelectorRequirement(key=match.group("key"), operator=operator, values=list(values)))
        else:
            requirements.append(NodeSelectorRequirement(key=match.group("key"), operator="Exists"))
        position = match.end()
    return tuple(requirements)


@dataclass
class PoolPolicy:
    """Where a plan may move pods (see the module docstring); the defaults are the safe ones."""

    allow_product_change: bool = False
    allow_cpu_pods_on_gpu_nodes: bool = False
    node_selector: str | None = None


@dataclass
class PoolReport:
    """What the policy held back, for the plan's report."""

    keep_product: bool
    cpu_pods_on_gpu_nodes: bool
    node_selector: str | None
    pods_kept_to_their_product: int = 0
    cpu_pods_kept_off_gpu_nodes: int = 0
    nodes_outside_the_pool: int = 0
    pods_held_outside_the_pool: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "notes"}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def pool_nodes(cluster: Cluster, selector: str) -> list[Node]:
    """The nodes whose labels ``selector`` matches (the pool a plan with ``node_selector`` works in)."""
    requirements = parse_selector(selector)
    return [n for n in cluster.nodes if all(rules.requirement_matches(r, n.labels) for r in requirements)]


def apply_pools(cluster: Cluster, policy: PoolPolicy) -> tuple[Cluster, PoolReport]:
    """The snapshot with the policy's restrictions, and what they held back."""
    report = PoolReport(not policy.allow_product_change, policy.allow_cpu_pods_on_gpu_nodes, policy.node_selector)
    nodes = {node.name: node for node in cluster.nodes}
    outside: set[str] = set()
    new_nodes: list[Node] = list(cluster.nodes)
    if policy.node_selector is not None:
        inside = {n.name for n in pool_nodes(cluster, policy.node_selector)}
        outside = {n.name for n in cluster.nodes if n.name not in inside}
        report.nodes_outside_the_pool = len(outside)
        new_nodes = [n.model_copy(update={"schedulable": False}) if n.name in outside and n.schedulable else n for n in cluster.nodes]
    cpu_models = sorted({n.gpu_model for n in cluster.nodes if n.gpus == 0})
    gpu_models = {n.gpu_model for n in cluster.nodes if n.gpus > 0}
    restrict_cpu = not policy.allow_cpu_pods_on_gpu_nodes and bool(gpu_models) and bool(cpu_models)
    if restrict_cpu and gpu_models & set(cpu_models):
        restrict_cpu = False
        report.cpu_pods_on_gpu_nodes = True  # what the plan may do, whatever was asked
        report.notes.append(
            "CPU-only pods are not kept off GPU nodes: GPU nodes and CPU-only nodes share the model name(s) "
            f"{sorted(gpu_models & set(cpu_models))}, so no rule tells them apart"
        )
    if not policy.allow_cpu_pods_on_gpu_nodes and gpu_models and not cpu_models:
        _no_cpu_only_node(cluster, outside, report)
    pods: list[Pod] = []
    for pod in cluster.pods:
        update: dict = {}
        if pod.node is not None and pod.node in outside and not pod.locked:
            update["locked"] = True
            report.pods_held_outside_the_pool += 1
        elif pod.node is not None and pod.gpus > 0 and not policy.allow_product_change:
            model = nodes[pod.node].gpu_model
            if pod.gpu_models != [model]:
                update["gpu_models"] = [model]
                if not pod.locked and len(gpu_models) > 1:
                    report.pods_kept_to_their_product += 1
        elif pod.gpus == 0 and restrict_cpu:
            allowed = [m for m in cpu_models if not pod.gpu_models or m in pod.gpu_models]
            if not allowed and pod.node is not None:
                update["locked"] = True  # its own rules allow only GPU nodes, which the policy forbids
            elif not allowed:
                pass  # pending, its own rules allow only GPU models: they stay (an empty list would allow every model)
            elif pod.gpu_models != allowed:
                update["gpu_models"] = allowed
            if update and not pod.locked and pod.node is not None:
                report.cpu_pods_kept_off_gpu_nodes += 1
        pods.append(pod.model_copy(update=update) if update else pod)
    return cluster.model_copy(update={"nodes": new_nodes, "pods": pods}), report


def _no_cpu_only_node(cluster: Cluster, outside: set[str], report: PoolReport) -> None:
    """The CPU-only rule where the cluster has no CPU-only node: it keeps CPU-only pods to the
    CPU-only nodes, and there are none, so it cannot apply; the CPU-only pods already on GPU nodes move
    among them as any pod does, and the report says so (``cpu_pods_on_gpu_nodes`` true, with a note)
    when there are such pods."""
    placed = sum(1 for p in cluster.pods if p.gpus == 0 and p.node is not None and p.node not in outside and not p.locked)
    pending = sum(1 for p in cluster.pods if p.gpus == 0 and p.node is None)
    if not placed and not pending:
        return
    report.cpu_pods_on_gpu_nodes = True
    which = [f"{placed:,} movable CPU-only pod(s) on GPU nodes may move to other GPU nodes"] if placed else []
    which += [f"{pending:,} pending CPU-only pod(s) may start on GPU nodes"] if pending else []
    report.notes.append(
        "CPU-only pods are not kept off GPU nodes: the cluster has no CPU-only node to keep them to, so "
        + " and ".join(which)
        + " (lock them, or scope the plan with --node-selector, to keep them in place)"
    )
