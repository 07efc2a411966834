"""What every facade of the engine shares: its two errors (``PlanBug``, ``PlanOptionError``), the
refusal of options a method would ignore, the bounds of option values, the pod shape and the check
that some node could hold it, and the work lost by moving pods.

The engine does not know the surfaces' names for options: ``PlanOptionError`` renders them as plain
flags from the field name (``--time-limit-s``) unless a surface passes its own naming
(``render``; the CLI's flags are in ``planner/cli/common.py``, the API's request fields are
``for_api()``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Any

from pydantic import BaseModel, ValidationInfo

from planner import rules
from planner.cluster import Cluster, Pod, SnapshotError

MAX_SEED = 2**31 - 1
"""CP-SAT's random seed is a 32-bit signed integer."""
MAX_COUNT = 10**9
"""Budgets and sizes above this are typos (no cluster has a billion pods)."""
MAX_TIME_LIMIT_S = 7 * 24 * 3600.0


class PlanBug(RuntimeError):
    """A planner produced a plan that does not validate: a bug, never returned to a user."""


def plain_option(name: str, value: str | None) -> str:
    """An option named as a flag from its field name (``--time-limit-s 5``)."""
    return f"--{name.replace('_', '-')}" + (f" {value}" if value else "")


class PlanOptionError(ValueError):
    """Options that cannot be honoured for this cluster; the message names the option and the fix.

    ``template`` names options as ``{name}`` or ``{name=value}``; ``render(option)`` names them in
    a surface's language (the CLI's flags, say), ``for_api()`` as request fields (``options.method =
    'hybrid'``), ``str()`` as plain flags from the field names (``--method hybrid``).
    """

    def __init__(self, field: str, template: str):
        self.field = field
        self.template = template
        super().__init__(self.render(plain_option))

    def render(self, option: Callable[[str, str | None], str]) -> str:
        text = re.sub(r"\{(\w+)(?:=([^}]*))?\}", lambda m: option(m[1], m[2]), self.template)
        return f"{option(self.field, None)}: {text}"

    def for_api(self) -> str:
        return self.render(lambda name, value: f"options.{name}" + (f" = {value!r}" if value else ""))


def unused_reason(method: str, name: str, method_options: dict[str, set[str]], why: str | None = None, also: str = "") -> str:
    """Why ``method`` cannot honour option ``name`` (``why``, by default that it does not use it), and
    which methods of ``method_options`` do (``also``: another way to use it)."""
    users = [m for m, names in method_options.items() if name in names]
    return f"{why or f'method {method!r} does not use it'}; use it with method {', '.join(users)}{also}, or leave it out"


def refuse_unused(
    model: type[BaseModel],
    value: Any,
    info: ValidationInfo,
    method_options: dict[str, set[str]],
    always: tuple[str, ...],
    reason: Callable[[str, str], str] | None = None,
) -> Any:
    """An option the method would ignore is refused (unless it has its default value): the field
    validator of every options model, given which options each method reads; ``reason(method,
    name)`` says why (default: ``unused_reason`` over ``method_options``)."""
    method, name = info.data.get("method"), info.field_name
    assert name is not None  # a field validator is given its field's name
    if method is None or name in always or name in method_options[method]:
        return value
    if value != model.model_fields[name].default:
        raise ValueError(reason(method, name) if reason is not None else unused_reason(method, name, method_options))
    return value


def pod_shape(pod: Pod) -> tuple[Hashable, ...]:
    """What makes two pods interchangeable: resources and every per-pod rule, in a canonical,
    hashable form (the order a list was written in does not tell two pods apart: node-affinity
    terms are ORed and their expressions ANDed, so both are sets)."""
    return (
        pod.gpus,
        pod.cpus,
        pod.memory_gib,
        tuple(sorted(pod.gpu_models)),
        tuple(sorted(pod.node_selector.items())),
        tuple(sorted(pod.anti_affinity)),
        tuple(sorted({(t.key, t.operator, t.value, t.effect) for t in pod.tolerations})),
        node_affinity_key(pod),
        tuple(sorted((name, amount) for name, amount in pod.requests.items() if amount > 0)),
        tuple(sorted({(h.port, h.protocol) for h in pod.host_ports})),
        pod.priority,
        pod.standby,
    )


def node_affinity_key(pod: Pod) -> tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] | None:
    """A pod's required node affinity as a sorted set of terms, each a sorted set of its expressions
    (key, operator, sorted values): equal for affinities that admit the same nodes as written
    differently in order or with repeats. None: no requirement."""
    if pod.node_affinity is None:
        return None
    terms = {tuple(sorted({(r.key, r.operator, tuple(sorted(set(r.values)))) for r in term})) for term in pod.node_affinity}
    return tuple(sorted(terms))


def refuse_unholdable(cluster: Cluster, i: int) -> None:
    """A pod shape no node could hold even empty is bad input, not a job to leave pending."""
    pod = cluster.pods[i]
    probe = pod.model_copy(update={"node": None})

    def could_hold(node: Any) -> bool:  # cordoned nodes count: a cordon is not the request's fault
        return (
            rules.gpu_model_allowed(pod, node)
            and rules.selector_matches(pod, node)
            and not rules.untolerated_taints(pod, node)
            and rules.node_affinity_matches(pod, node)
            and not rules.resource_shortfalls(node, [probe])
        )

    if any(could_hold(n) for n in cluster.nodes):
        return
    largest = max(cluster.nodes, key=lambda n: (n.gpus, n.cpus, n.memory_gib), default=None)
    where = f"; the largest node has {largest.gpus} GPUs, {largest.cpus:g} CPUs, {largest.memory_gib:g} GiB" if largest else ""
    rules_text = (
        (f", GPU models {sorted(pod.gpu_models)}" if pod.gpu_models else "")
        + (f", node selector {dict(pod.node_selector)}" if pod.node_selector else "")
        + (", its tolerations" if any(n.taints for n in cluster.nodes) else "")
        + (", a required node affinity" if pod.node_affinity else "")
    )
    raise SnapshotError(
        [
            (
                f"pods[{i}]: pod '{pod.name}' of job '{pod.job}' asks {pod.gpus:g} GPUs, {pod.cpus:g} CPUs, {pod.memory_gib:g} GiB{rules_text}: "
                f"no node could hold it even empty{where}; fix the request or add such nodes"
            )
        ]
    )


def lost_work(cluster: Cluster, moved: list[Pod]) -> dict[str, Any]:
    """Work the moved pods that carry checkpoints (``checkpoint_s`` or ``checkpoint_interval_s``) lose
    by restarting from their last checkpoint at ``cluster.time_s``, by the preemption cost model
    ``rules.lost_gpu_s`` (GPUs x time since the checkpoint), each pod once however often it moves.
    Pods without checkpoints (services, say) are counted, not priced: restarting them loses no
    saved state the model can measure. Empty when no moved pod carries a checkpoint."""
    known = [p for p in moved if p.checkpoint_s is not None or p.checkpoint_interval_s is not None]
    if not known:
        return {}
    return {"lost_gpu_s": round(sum(rules.lost_gpu_s(p, cluster.time_s) for p in known), 6), "moved_without_checkpoint": len(moved) - len(known)}
