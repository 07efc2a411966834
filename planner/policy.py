"""Policy documents (``apiVersion: planner.io/v1``, kinds ``DefragPolicy``, ``PreemptPolicy`` and
``AllocatePolicy``): a plan kind's options written down once, in the form kube-descheduler's
``DeschedulerPolicy`` and Karpenter's ``NodePool.disruption`` are, for cron jobs and the service's
defaults; and the merge of options from their sources (flags or a request's ``options``, a policy
document, the server's default policy, the model's defaults) into one options model with the source
of each value.

A policy does not define options of its own: each field of its ``spec`` is a path to a field of the
kind's options model (``SPECS``), and the values are checked by that model, so the command line, the
API and the policy cannot drift apart. Errors name the document's field path
(``spec.budgets.maxNodesPerWave: ...``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.bounded_input import MAX_LISTED, DocumentError, check_depth, more_line, prefixed, short_text, short_value
from planner.bounded_models import FAIL_FAST, long_list_errors
from planner.bounded_yaml import SMALL_LIMITS, parse_yaml
from planner.cluster import collected_problems, field_path, pydantic_problems, unknown_field
from planner.kinds import KINDS

API_VERSION = "planner.io/v1"

POLICY_KINDS = {"DefragPolicy": "defrag", "PreemptPolicy": "preempt", "AllocatePolicy": "allocate"}
"""Each policy kind and the plan kind it configures."""

_SOLVER = {
    "solver.name": "solver",
    "solver.timeLimitSeconds": "time_limit_s",
    "solver.workers": "solver_workers",
    "solver.seed": "seed",
}

SPECS: dict[str, dict[str, str]] = {
    "defrag": {
        "method": "method",
        "objective.makeRoom": "make_room",
        "objective.target": "objective",
        "objective.requests": "requests",
        "objective.forPending": "for_pending",
        "objective.level": "room_level",
        "objective.weights": "weights",
        "objective.lexicographic": "lexicographic",
        "budgets.maxMoves": "max_moves",
        "budgets.maxMovesPerNode": "max_moves_per_node",
        "budgets.maxMovesPerWave": "max_moves_per_wave",
        "budgets.maxNodesPerWave": "max_nodes_per_wave",
        "budgets.maxMovesPerNodePerWave": "max_moves_per_node_per_wave",
        "budgets.maxMovesPerNamespace": "max_moves_per_namespace",
        "budgets.maxUnavailablePerJob": "max_unavailable_per_job",
        "budgets.moveOnce": "move_once",
        "budgets.limitCosts": "limit_costs",
        "scope.namespaces.only": "only_namespaces",
        "scope.namespaces.exclude": "exclude_namespaces",
        "scope.nodeSelector": "node_selector",
        "scope.sameAsw": "same_asw",
        "scope.pools.allowProductChange": "allow_product_change",
        "scope.pools.allowCpuPodsOnGpuNodes": "allow_cpu_pods_on_gpu_nodes",
        "heuristic.trim": "trim",
        "heuristic.partitionSize": "partition_size",
        "heuristic.depth": "depth",
        "heuristic.rounds": "rounds",
        "heuristic.minRoundYield": "min_round_yield",
        "heuristic.threshold": "threshold",
        **_SOLVER,
        "solver.formulation": "formulation",
        "solver.deterministic": "deterministic",
        "solver.force": "force",
        "report.largeRequests": "large_requests",
    },
    "preempt": {
        "method": "method",
        "heuristic.compareWith": "heuristic",
        "heuristic.alpha": "alpha",
        **_SOLVER,
        "report.largeRequests": "large_requests",
    },
    "allocate": {
        "method": "method",
        "scope.jobs": "jobs",
        "objective.entropy": "entropy",
        **_SOLVER,
        "report.largeRequests": "large_requests",
    },
}
"""Per plan kind: each ``spec`` field path of its policy and the options field it sets."""

NOT_IN_POLICIES: dict[str, dict[str, str]] = {
    "defrag": {
        "workers": "where one run's partitions go is the machine's business, not the policy's (--workers; the service runs a job in one process)",
        "executor": "where one run's partitions go is the machine's business, not the policy's (--executor; planner serve --executor)",
    },
    "preempt": {"now_s": "a decision time belongs to one run, not to a standing policy (--now)"},
    "allocate": {},
}
"""Options fields a policy does not set, and why (``tests/test_policy.py`` holds every other field to a path)."""

Source = Literal["given", "policy", "server-policy", "default"]


class PolicyError(DocumentError):
    """A policy document or a merge of options that cannot be used: one message per problem, each
    naming the field (a policy's path, a flag, a request field); at most ``MAX_LISTED``, then a count."""


class PolicyMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str | None = Field(None, max_length=253)
    labels: Annotated[dict[str, str], FAIL_FAST] | None = None
    annotations: Annotated[dict[str, str], FAIL_FAST] | None = None


class PolicyDocument(BaseModel):
    """The envelope of a policy; ``spec`` is checked against the kind's ``SPECS`` and options model."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    api_version: Literal["planner.io/v1"] = Field(alias="apiVersion")
    kind: Literal["DefragPolicy", "PreemptPolicy", "AllocatePolicy"]
    metadata: PolicyMetadata | None = None
    spec: dict[str, Any] = Field(default_factory=dict)


def policy_kind(kind: str) -> str:
    """The policy kind that configures plan kind ``kind`` (``defrag`` -> ``DefragPolicy``)."""
    return next(name for name, plan_kind in POLICY_KINDS.items() if plan_kind == kind)


def policy_documents(text: str, source: str) -> list[Any]:
    """The documents in ``text`` (YAML or JSON: JSON is YAML), read by the bounded YAML reader with the
    limits of a document a person writes (``bounded_yaml.SMALL_LIMITS``: aliases, size, depth, the safe
    tags only); ``PolicyError`` naming ``source`` and where when it does not read."""
    try:
        return [doc for doc in parse_yaml(text, source, SMALL_LIMITS) if doc is not None]
    except DocumentError as err:
        raise PolicyError([problem.replace("not valid YAML", "not valid YAML or JSON", 1) for problem in err.problems]) from None


def parse_policy_text(text: str, source: str) -> Any:
    """The one document in ``text``; ``PolicyError`` naming ``source`` when it does not read or holds
    more than one document."""
    documents = policy_documents(text, source)
    if len(documents) != 1:
        raise PolicyError([f"{source}: holds {len(documents)} documents; a policy file holds one (apiVersion: {API_VERSION}, kind: DefragPolicy, spec: ...)"])
    return documents[0]


def default_policies(text: str, source: str) -> dict[str, Any]:
    """The service's default policies (``serve --default-policy``): one document per plan kind at
    most, each checked on its own as a command would check it. ``PolicyError`` names the document and the path."""
    policies: dict[str, Any] = {}
    documents = policy_documents(text, source)
    if not documents:
        raise PolicyError([f"{source}: holds no document; give a DefragPolicy, PreemptPolicy or AllocatePolicy (apiVersion: {API_VERSION})"])
    for i, document in enumerate(documents):
        where = f"{source}: document {i + 1}: " if len(documents) > 1 else f"{source}: "
        named = document.get("kind") if isinstance(document, dict) else None
        kind = POLICY_KINDS.get(named) if isinstance(named, str) else None
        if kind is None:
            raise PolicyError(
                [f"{where}kind: must be one of {', '.join(POLICY_KINDS)}, got {short_value(document.get('kind') if isinstance(document, dict) else document)}"]
            )
        if kind in policies:
            raise PolicyError([f"{where}kind: a second {document['kind']}; give one policy per kind"])
        resolve(KINDS[kind].options, [policy_layer(document, kind, "server-policy", where)])
        policies[kind] = document
    return policies


def is_policy(value: Any) -> bool:
    """Whether ``value`` (a request's ``options``, say) is a policy document rather than options."""
    return isinstance(value, dict) and ("apiVersion" in value or "spec" in value)


def policy_values(document: Any, kind: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(options fields -> values, options fields -> the document's path) of a policy document for
    plan kind ``kind``; ``PolicyError`` naming each bad path (the values are checked by ``resolve``)."""
    if not isinstance(document, dict):
        raise PolicyError([f"(document): must be a mapping with apiVersion: {API_VERSION}, kind: {policy_kind(kind)} and spec, got {type(document).__name__}"])
    try:
        check_depth(document, "(document)")  # a document from a JSON body has not been through the YAML reader's bound
    except DocumentError as err:
        raise PolicyError(err.problems) from None
    try:
        envelope = PolicyDocument.model_validate(document)
    except ValidationError as err:
        raise PolicyError(pydantic_problems(err, PolicyDocument, "(document)")) from None
    if POLICY_KINDS[envelope.kind] != kind:
        raise PolicyError([f"kind: a {envelope.kind} configures planner {POLICY_KINDS[envelope.kind]}; this plans {kind} and reads a {policy_kind(kind)}"])
    values: dict[str, Any] = {}
    paths: dict[str, str] = {}
    problems: list[str] = []
    _walk(envelope.spec, "", SPECS[kind], values, paths, problems)
    if problems:
        raise PolicyError(problems)
    return values, paths


def _walk(mapping: dict[str, Any], prefix: str, spec: dict[str, str], values: dict[str, Any], paths: dict[str, str], problems: list[str]) -> None:
    """Collect the fields of ``mapping`` (at ``spec.<prefix>``) that ``spec`` names; unknown fields are
    problems: the first ``MAX_LISTED`` with a hint, the rest counted on one line (20,000 unknown fields
    are one count, not 20,000 messages and as many searches for a close name)."""
    here = sorted({path.removeprefix(prefix).split(".")[0] for path in spec if path.startswith(prefix)})
    unknown = 0
    for key, value in mapping.items():
        path = f"{prefix}{key}"
        if not isinstance(key, str) or key not in here:
            if len(problems) >= MAX_LISTED:
                unknown += 1
                continue
            name = str(key)
            close = difflib.get_close_matches(name, here, n=1) if len(name) <= 2 * max(map(len, here)) else []
            hint = f"did you mean '{close[0]}'? " if close else ""
            shown = name if len(name) <= 60 else short_text(name)
            problems.append(f"spec.{prefix}{shown}: unknown field; {hint}the fields here are {', '.join(here)}")
        elif path in spec:
            values[spec[path]] = value
            paths[spec[path]] = f"spec.{path}"
        elif not isinstance(value, dict):
            problems.append(f"spec.{path}: must be a mapping (of {', '.join(sorted(p.removeprefix(path + '.') for p in spec if p.startswith(path + '.')))})")
        else:
            _walk(value, path + ".", spec, values, paths, problems)
    if unknown:
        problems.append(more_line(unknown, True))


@dataclass(frozen=True)
class Layer:
    """One source of option values: ``values`` by options field, ``name(field)`` how an error names
    a field of this source (a flag, ``options.max_moves``, ``policy.yaml: spec.budgets.maxMoves``).
    A ``lenient`` layer's values (the server's default policy) give way to a method that does not read
    them instead of refusing the request."""

    source: Source
    values: dict[str, Any]
    name: Callable[[str], str]
    lenient: bool = False


def policy_layer(document: Any, kind: str, source: Source, where: str, lenient: bool = False) -> Layer:
    """A ``Layer`` of a policy document; its errors name ``where`` and the document's path."""
    try:
        values, paths = policy_values(document, kind)
    except PolicyError as err:
        raise PolicyError(prefixed(where, err.problems)) from None
    return Layer(source, values, lambda field: f"{where}{paths.get(field, field)}", lenient)


def resolve(model: type[BaseModel], layers: list[Layer]) -> tuple[Any, dict[str, Source]]:
    """``model`` built from ``layers`` (first wins: flags, then a policy, then the server's), and the
    source of every field's value (``default`` when no layer gives it). ``PolicyError`` names each
    problem's field as the layer that gave it does."""
    chosen: dict[str, tuple[Any, Layer]] = {}
    for layer in reversed(layers):
        chosen.update({field: (value, layer) for field, value in layer.values.items()})
    fields = model.model_fields
    unknown = [field for field in chosen if field not in fields]
    if unknown:  # named here, the first MAX_LISTED: pydantic would build an error (a dict) for each of 200,000
        known = list(fields)
        listed = [unknown_field(chosen[field][1].name(field), field, known) for field in unknown[:MAX_LISTED]]
        raise PolicyError(listed + ([more_line(len(unknown) - MAX_LISTED, True)] if len(unknown) > MAX_LISTED else []))
    while True:
        values = {field: value for field, (value, _) in chosen.items()}
        found = long_list_errors(model, values)  # a list of a million bad items: a thousand errors, not a million
        if found is None:
            try:
                return model(**values), {field: (chosen[field][1].source if field in chosen else "default") for field in model.model_fields}
            except ValidationError as err:
                error = err
        errors = found.errors if found is not None else error.errors()
        given_way = [e["loc"][0] for e in errors if e["loc"] and e["loc"][0] in chosen and chosen[e["loc"][0]][1].lenient]
        if given_way:
            for field in set(given_way):
                del chosen[field]
            continue
        named = lambda e, problem: _named(e, problem, chosen)
        raise PolicyError(
            collected_problems(found, model, "options", rename=named) if found is not None else pydantic_problems(error, model, "options", rename=named)
        )


def _named(error: Any, problem: str, chosen: dict[str, tuple[Any, Layer]]) -> str:
    """``problem`` (``pydantic_problems``' message for ``error``) with its field named as the layer that gave it names it."""
    loc = tuple(error["loc"])
    if not loc or str(loc[0]) not in chosen:
        return problem
    field = str(loc[0])
    return chosen[field][1].name(field) + problem.removeprefix(field_path((field,)))
