"""The cluster snapshot (format v1): nodes, the pods on them, and jobs; JSON in and out.

Loading a snapshot checks every field and every cross-reference and rejects an inconsistent
snapshot with one message per problem, each naming the field path (``pods[17].node: unknown node
'n-9'``). Nothing is ever silently repaired.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    model_validator,
)

from planner.bounded_input import MAX_LISTED, DocumentError, more_line, short_path, short_text, short_value
from planner.bounded_models import FAIL_FAST, Collected, collect_errors, model_at
from planner.cluster_dra import MAX_DEVICES, DraClaim, DraDevice
from planner.kubernetes_names import resource_name_problem

SNAPSHOT_VERSION: Final = 1


class SnapshotError(DocumentError):
    """A snapshot (or plan) that cannot be used; ``problems`` holds one field-path message each (at most
    ``bounded_input.MAX_LISTED``, then a line counting the rest). It pickles by its problem list, so an
    error raised in an executor's worker process arrives in the parent with the same problems."""


def _whole_float_to_int(value: Any) -> Any:
    """Accept 8.0 where a whole number is expected (not a repair: it is the same number)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole_float_to_int)]

M = TypeVar("M", bound=BaseModel)
_STRICT = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
MAX_GPUS = 1024
"""GPUs of one node or one pod at most: larger numbers are typos (or attacks), not machines."""
MAX_CPUS = 1_000_000.0
MAX_MEMORY_GIB = 10_000_000.0
MAX_COUNT = 1_000_000_000
MAX_TIME_S = 1e12
MIN_PRIORITY = -(2**31)
MAX_PRIORITY = 2**31 - 1
"""Likewise for CPUs, memory, counters (``eviction_count``) and times (about 31,700 years)."""


class NumaDomain(BaseModel):
    """One NUMA domain of a node: which GPU indexes and how many CPUs it holds, and the CPU socket it
    belongs to (topology-aware preemption, FlexTopo)."""

    model_config = _STRICT
    name: str
    gpu_indexes: Annotated[list[WholeNumber], FAIL_FAST] = Field(default_factory=list)
    cpus: float = Field(default=0.0, ge=0, le=MAX_CPUS)
    socket: WholeNumber | None = Field(default=None, ge=0, le=MAX_GPUS)


class PowerProfile(BaseModel):
    """Idle and full-load power draw of a node's CPUs and of each GPU (PWR paper, Eq. 1-3)."""

    model_config = _STRICT
    cpu_idle_w: float = Field(ge=0)
    cpu_max_w: float = Field(ge=0)
    gpu_idle_w: float = Field(ge=0)
    gpu_max_w: float = Field(ge=0)


TaintEffect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]


class Taint(BaseModel):
    """A node taint (Kubernetes core/v1 Taint): pods that do not tolerate a ``NoSchedule`` or
    ``NoExecute`` taint may not arrive on the node; ``PreferNoSchedule`` is a preference and never
    decides feasibility."""

    model_config = _STRICT
    key: str = Field(min_length=1)
    value: str = ""
    effect: TaintEffect


class Toleration(BaseModel):
    """A pod toleration (Kubernetes core/v1 Toleration): an empty ``key`` with ``Exists`` tolerates
    every taint, an empty ``effect`` matches every effect, ``Equal`` (the default) compares values."""

    model_config = _STRICT
    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: Literal["", "NoSchedule", "NoExecute", "PreferNoSchedule"] = ""

    @model_validator(mode="after")
    def _operator_fits(self) -> Toleration:
        if not self.key and self.operator != "Exists":
            raise ValueError("a toleration without a key must use operator 'Exists' (it then tolerates every taint)")
        if self.operator == "Exists" and self.value:
            raise ValueError("operator 'Exists' takes no value")
        return self


class NodeSelectorRequirement(BaseModel):
    """One expression of a required node-affinity term: the node label ``key`` is ``In`` / ``NotIn``
    ``values``, or ``Exists`` / ``DoesNotExist`` (no values). A node without the label satisfies
    ``NotIn`` and ``DoesNotExist``, as in Kubernetes."""

    model_config = _STRICT
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: Annotated[list[str], FAIL_FAST] = Field(default_factory=list)

    @model_validator(mode="after")
    def _values_fit(self) -> NodeSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator '{self.operator}' needs at least one value")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator '{self.operator}' takes no values")
        return self


NodeAffinityTerm = Annotated[list[NodeSelectorRequirement], Field(min_length=1), FAIL_FAST]
"""The expressions of one term, ANDed."""

MAX_RESOURCE = 2**62
"""A named resource's quantity at most (base units: bytes for storage, a count otherwise)."""


def _resource_name(name: str) -> str:
    problem = resource_name_problem(name)
    if problem:
        raise ValueError(problem)
    return name


ResourceAmounts = Annotated[
    dict[Annotated[str, Field(min_length=1, max_length=317), AfterValidator(_resource_name)], Annotated[int, Field(ge=0, le=MAX_RESOURCE)]], FAIL_FAST
]
"""Quantities by Kubernetes resource name (``nvidia.com/gpu``, ``nvidia.com/mig-1g.10gb``,
``nvidia.com/gpu.shared``, ``rdma/hca``, ``ephemeral-storage``, ``pods``, ...), each a whole number in
the resource's base unit as kube-scheduler compares it (bytes for ``ephemeral-storage`` and
``hugepages-*``, devices or slots otherwise). ``cpu`` and ``memory`` stay in ``cpus``/``memory_gib``."""

POD_COUNT = "pods"
"""The resource every pod requests one of (a node's allocatable pod count)."""


class HostPort(BaseModel):
    """A host port a pod binds (a container's ``hostPort``, or its port under ``hostNetwork``): two
    pods binding the same port and protocol never share a node (kube-scheduler's NodePorts; the
    planner treats every host IP as overlapping, which is never less strict)."""

    model_config = _STRICT
    port: WholeNumber = Field(ge=1, le=65535)
    protocol: Literal["TCP", "UDP", "SCTP"] = "TCP"
    host_ip: str = ""


class Node(BaseModel):
    """A GPU (or CPU-only) machine."""

    model_config = _STRICT
    name: str = Field(min_length=1)
    gpu_model: str = ""
    gpus: WholeNumber = Field(ge=0, le=MAX_GPUS)
    cpus: float = Field(gt=0, le=MAX_CPUS)
    memory_gib: float = Field(ge=0, le=MAX_MEMORY_GIB)
    asw: str | None = None
    spine: str | None = None
    labels: Annotated[dict[str, str], FAIL_FAST] = Field(default_factory=dict)
    schedulable: bool = True
    eviction_count: WholeNumber = Field(default=0, ge=0, le=MAX_COUNT)
    numa: Annotated[list[NumaDomain], FAIL_FAST] | None = None
    power: PowerProfile | None = None
    taints: Annotated[list[Taint], FAIL_FAST] = Field(default_factory=list)
    resources: ResourceAmounts | None = None
    """Allocatable of every resource besides CPU and memory by name (``pods`` included); a pod may
    arrive only where each resource it ``requests`` is offered and left. None: not known (snapshots
    that predate the field), and then only ``gpus``, ``cpus`` and ``memory_gib`` are checked."""
    devices: Annotated[list[DraDevice], Field(max_length=MAX_DEVICES), FAIL_FAST] | None = None
    """DRA devices its ResourceSlices publish (``cluster_dra``); None: none, or not a DRA node."""


class Pod(BaseModel):
    """A pod; ``node`` is None while it is pending. ``gpus`` below 1 is a share of one GPU."""

    model_config = _STRICT
    name: str = Field(min_length=1)
    job: str | None = None
    node: str | None = None
    gpus: float = Field(ge=0, le=MAX_GPUS)
    cpus: float = Field(ge=0, le=MAX_CPUS)
    memory_gib: float = Field(default=0.0, ge=0, le=MAX_MEMORY_GIB)
    gpu_models: Annotated[list[str], FAIL_FAST] = Field(default_factory=list)
    priority: Literal["HP", "LP"] = "HP"
    locked: bool = False
    node_selector: Annotated[dict[str, str], FAIL_FAST] = Field(default_factory=dict)
    anti_affinity: Annotated[list[str], FAIL_FAST] = Field(default_factory=list)
    checkpoint_s: float | None = Field(default=None, ge=0, le=MAX_TIME_S)
    started_s: float | None = Field(default=None, ge=0, le=MAX_TIME_S)
    checkpoint_interval_s: float | None = Field(default=None, gt=0, le=MAX_TIME_S)
    standby: bool = False
    priority_value: WholeNumber | None = Field(default=None, ge=MIN_PRIORITY, le=MAX_PRIORITY)
    """Kubernetes integer priority; when absent, HP pods have 1000 and LP pods 0."""
    gpu_indexes: Annotated[list[WholeNumber], FAIL_FAST] | None = None
    """The devices of its node a placed pod holds (one for a share); needed for NUMA alignment."""
    namespace: str | None = None
    """The Kubernetes namespace (None: not a Kubernetes pod, or the default namespace)."""
    tolerations: Annotated[list[Toleration], FAIL_FAST] = Field(default_factory=list)
    node_affinity: Annotated[list[NodeAffinityTerm], Field(min_length=1), FAIL_FAST] | None = None
    """Required node affinity: the pod may arrive on a node matching any one term (terms ORed, a
    term's expressions ANDed); None means no requirement."""
    requests: ResourceAmounts = Field(default_factory=dict)
    """What the pod requests of each resource besides CPU and memory, by name, in the units
    Kubernetes charges (a time-sliced GPU replica is one slot of ``nvidia.com/gpu``, whatever ``gpus``
    says of its share of a device); checked against the ``resources`` of nodes that list them."""
    host_ports: Annotated[list[HostPort], FAIL_FAST] = Field(default_factory=list)
    uid: str | None = Field(default=None, min_length=1, max_length=128)
    """Kubernetes ``metadata.uid`` (the importer keeps it): a defrag plan records it with each move, and
    the kubectl script checks before each wave that the pod still has it (a replaced pod has another)."""
    device_claims: Annotated[list[DraClaim], Field(max_length=32), FAIL_FAST] | None = None
    """The DRA ResourceClaims the pod uses (``cluster_dra``; Kubernetes allows 32); None: none."""

    @field_serializer("gpus")
    def _whole_gpus_as_int(self, gpus: float) -> float | int:
        return int(gpus) if float(gpus).is_integer() else gpus


class Topology(BaseModel):
    """A job's placement requirement: all pods under one access switch (``asw``) or one spine."""

    model_config = _STRICT
    level: Literal["asw", "spine"]
    mode: Literal["required", "preferred"]


class JobNuma(BaseModel):
    """FlexTopo's topology QoS for a job's pods: ``guaranteed`` placements are NUMA-aligned (every GPU
    of a pod on one socket, its CPUs from those GPUs' NUMA domains) or not made; ``best-effort`` ones
    prefer alignment."""

    model_config = _STRICT
    mode: Literal["guaranteed", "best-effort"]


class Disruption(BaseModel):
    """A job's disruption budget (a PodDisruptionBudget resolved to a count): at most
    ``max_unavailable`` of its pods may be unavailable (for a plan: moving) at once."""

    model_config = _STRICT
    max_unavailable: WholeNumber = Field(ge=0, le=MAX_COUNT)


class Job(BaseModel):
    """A gang of pods placed all-or-nothing (or at least ``min_available`` of them); pods name their job."""

    model_config = _STRICT
    name: str = Field(min_length=1)
    topology: Topology | None = None
    numa: JobNuma | None = None
    min_available: WholeNumber | None = Field(default=None, ge=1, le=MAX_COUNT)
    disruption: Disruption | None = None


class Cluster(BaseModel):
    """A snapshot of a cluster at time ``time_s``."""

    model_config = _STRICT
    version: Literal[1] = SNAPSHOT_VERSION
    time_s: float = Field(default=0.0, ge=0, le=MAX_TIME_S)
    nodes: Annotated[list[Node], FAIL_FAST]
    pods: Annotated[list[Pod], FAIL_FAST] = Field(default_factory=list)
    jobs: Annotated[list[Job], FAIL_FAST] = Field(default_factory=list)

    def node_index(self) -> dict[str, int]:
        return {node.name: i for i, node in enumerate(self.nodes)}

    def job_index(self) -> dict[str, int]:
        return {job.name: i for i, job in enumerate(self.jobs)}

    def pods_by_node(self) -> dict[str, list[Pod]]:
        by_node: dict[str, list[Pod]] = {node.name: [] for node in self.nodes}
        for pod in self.pods:
            if pod.node is not None:
                by_node[pod.node].append(pod)
        return by_node


# ----------------------------------------------------------------------------------------------
# Loading and dumping
# ----------------------------------------------------------------------------------------------


class _DuplicateKey(Exception):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    fast = dict(pairs)
    if len(fast) == len(pairs):  # the common case, at C speed (a 37,707-node snapshot has 130,000 objects)
        return fast
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            named = dict(pairs).get("name")
            where = f" in the object named {short_text(named)}" if isinstance(named, str) else ""
            raise _DuplicateKey(f"duplicate key {short_text(key)}{where}; a key may appear once (which value was meant?)")
        seen[key] = value
    return seen


def duplicate_key_problems(text: str | bytes, what: str) -> list[str]:
    """A JSON object that names a key twice is ambiguous (parsers silently keep the last): a problem.

    Other JSON errors are left to the schema check, which reports them with their position.
    """
    try:
        json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as err:
        return [f"{what}: {err}"]
    except RecursionError:
        return [f"{what}: JSON nested too deeply"]
    except (ValueError, TypeError):
        return []
    return []


def field_path(loc: tuple[Any, ...]) -> str:
    """('pods', 17, 'node') -> 'pods[17].node' (a long name cut to a short prefix, the path to 200 characters)."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            text = str(part)
            path += ("." if path else "") + (text if len(text) <= 60 else text[:60] + "...")
    return short_path(path, 200) if path else "(top level)"


def _known_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the model that sits at ``loc`` (for 'did you mean' hints)."""
    found = model_at(model, loc[:-1])
    return list(found.model_fields) if found is not None else []


def pydantic_problems(
    error: ValidationError, model: type[BaseModel], what: str, rename: Callable[[Any, str], str] | None = None, text: str | bytes | None = None
) -> list[str]:
    """Turn a pydantic error into one readable field-path message per problem: the first
    ``MAX_LISTED`` (``rename(error, message)`` when given), then a line counting the rest, so that
    200,000 unknown fields cost one count, not 200,000 messages. With the document's ``text``, the
    lists ``error`` stopped at their first bad item (``bounded_models.FAIL_FAST``) are gone on with,
    up to ``bounded_models.MAX_COLLECTED`` errors."""
    if text is not None and error.error_count() <= _MANY_ERRORS:
        return collected_problems(collect_errors(error, model, text), model, what, rename)
    listed, alike = _first_errors(error)
    return _listed(listed, error.error_count() - MAX_LISTED, alike, False, model, what, rename)


def collected_problems(collected: Collected, model: type[BaseModel], what: str, rename: Callable[[Any, str], str] | None = None) -> list[str]:
    """``pydantic_problems`` of errors collected by ``bounded_models``: the first ``MAX_LISTED`` and a line
    counting the rest ("at least" when some items were left unchecked)."""
    errors = collected.errors
    listed = errors[:MAX_LISTED]
    alike = bool(listed) and all(_same_kind(err, listed[-1]) for err in errors[MAX_LISTED:])
    return _listed(listed, len(errors) - MAX_LISTED, alike, not collected.complete, model, what, rename)


def _listed(
    listed: list[Any], more: int, alike: bool, at_least: bool, model: type[BaseModel], what: str, rename: Callable[[Any, str], str] | None
) -> list[str]:
    problems = []
    for err in listed:
        problem = _problem(err, model, what)
        problems.append(rename(err, problem) if rename is not None else problem)
    if more > 0 or at_least:
        problems.append(more_line(max(more, 0), alike, at_least))
    return problems


def validated_json(model: type[M], text: str | bytes, what: str) -> M:
    """``model`` from JSON ``text``, or ``SnapshotError`` naming each problem (``pydantic_problems``, its
    error count bounded: see ``bounded_models``)."""
    try:
        return model.model_validate_json(text)
    except ValidationError as err:
        raise SnapshotError(pydantic_problems(err, model, what, text=text)) from None


_MANY_ERRORS = 1_000
"""Above this many errors pydantic's ``errors()`` (a Python dict per error: 1.2 s for 200,000) is not
called: the errors' JSON (a tenth of the time) is read only as far as the errors listed."""


def _first_errors(error: ValidationError) -> tuple[list[Any], bool]:
    """The first ``MAX_LISTED`` errors of ``error`` and whether all the others are of the kind of the last
    of them (the same type at the same place, list indexes aside; with many errors, the same type)."""
    if error.error_count() <= _MANY_ERRORS:
        errors = error.errors(include_url=False)
        last = errors[min(MAX_LISTED, len(errors)) - 1]
        return errors[:MAX_LISTED], all(_same_kind(err, last) for err in errors[MAX_LISTED:])
    text = error.json(include_url=False, include_input=False, include_context=False)
    decoder = json.JSONDecoder()
    listed: list[Any] = []
    at = 1  # after the opening bracket; errors are separated by one comma
    while len(listed) < MAX_LISTED:
        err, at = decoder.raw_decode(text, at)
        listed.append({**err, "loc": tuple(err["loc"])})
        at += 1
    kind = f'{{"type":{json.dumps(listed[-1]["type"])},'
    return listed, text.count(kind, at) == error.error_count() - MAX_LISTED


def _same_kind(err: Any, other: Any) -> bool:
    """Two errors of one kind: the same type at the same place, list indexes aside."""
    return bool(err["type"] == other["type"] and _parent(err["loc"]) == _parent(other["loc"]))


def _parent(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """Where an error is, up to its last part, with list indexes left out: two errors of one kind share it."""
    return tuple("[]" if isinstance(part, int) else part for part in loc[:-1])


def unknown_field(path: str, name: str, known: list[str]) -> str:
    """'path: unknown field; did you mean ...?' (a name at most twice as long as the known ones is compared), else the known fields."""
    close = difflib.get_close_matches(name, known, n=1) if len(name) <= 2 * max(map(len, known), default=0) else []
    return f"{path}: unknown field; did you mean '{close[0]}'?" if close else f"{path}: unknown field; known fields: {', '.join(known)}"


def _problem(err: Any, model: type[BaseModel], what: str) -> str:
    """The message of one pydantic error (its input quoted short; left out when read without inputs)."""
    loc = tuple(err["loc"])
    path = field_path(loc)
    kind = err["type"]
    got = f", got {_short(err['input'])}" if "input" in err else ""
    if kind == "json_invalid":
        return f"{what}: not valid JSON ({err['msg'].removeprefix('Invalid JSON: ')})"
    if kind == "missing":
        return f"{path}: required field is missing"
    if kind == "extra_forbidden":
        return unknown_field(path, str(loc[-1]), _known_fields(model, loc))
    if kind == "literal_error" and loc == ("version",):
        return f"version: unsupported version{got.removeprefix(', got')}; this planner reads version {SNAPSHOT_VERSION}"
    if kind in _TYPE_WORDS:
        return f"{path}: must be {_TYPE_WORDS[kind]}{got}"
    if kind == "finite_number":
        return f"{path}: must be a finite number{got}"
    if kind == "value_error":  # our own checks: the message already says what and why
        return f"{path}: {err['msg'].removeprefix('Value error, ')}"
    return f"{path}: {err['msg'][0].lower() + err['msg'][1:]}{got}"


_TYPE_WORDS = {
    "list_type": "a list (JSON array)",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
}


def _short(value: Any) -> str:
    """A short quote of a value: strings as Python writes them, anything else as JSON, never whole."""
    return short_text(value, 57) if isinstance(value, str) else short_value(value)


# ----------------------------------------------------------------------------------------------
# Cross-reference and consistency checks (what pydantic cannot see field by field)
# ----------------------------------------------------------------------------------------------
