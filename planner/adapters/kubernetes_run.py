"""The state of one Kubernetes import as it runs (``ImportRun``): the configuration, the objects read so
far by kind, the snapshot fields built from them, the warnings and errors, and the summary. The parts
of the import (``kubernetes_pods``, ``kubernetes_pod_steps``, ``kubernetes_resources``, ``kubernetes_gpus``) work on it;
``kubernetes.py`` drives it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pydantic import BaseModel, ValidationError

from planner.adapters.kubernetes_budgets import BudgetPod, Scale
from planner.adapters.kubernetes_config import ImportConfig, object_name
from planner.adapters.kubernetes_dra_devices import DraObjects
from planner.adapters.kubernetes_gpus import NodeGpus
from planner.cluster import Node, pydantic_problems


@dataclass
class KubeSummary:
    nodes: int = 0
    placed_pods: int = 0
    pending_pods: int = 0
    jobs: int = 0
    budgets: int = 0
    reserved: int = 0
    locked: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)


class ImportRun:
    """What an import has read and built so far (see the module docstring)."""

    def __init__(self, config: ImportConfig):
        self.config = config
        self.warnings: list[str] = []
        self.errors: list[str] = []
        self.summary = KubeSummary()
        self.seen: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.nodes: list[Node] = []
        self.node_fields: list[tuple[dict[str, Any], dict[str, Any]]] = []  # GPUs, CPUs and GiB as fractions
        self.reserved: dict[str, dict[str, Fraction]] = {}  # node-bound pods' requests by node
        self.node_gpus: dict[str, NodeGpus] = {}
        self.pod_groups: dict[tuple[str, str], dict[str, Any]] = {}  # (namespace, name) -> PodGroup
        self.hypernodes: list[dict[str, Any]] = []
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.pods: list[dict[str, Any]] = []  # snapshot fields, plus private keys starting with '_'
        self.budgets: list[dict[str, Any]] = []
        self.budget_pods: list[BudgetPod] = []  # every Pod object, finished and node-bound ones too, as budgets count them
        self.scales: dict[tuple[str, str, str], Scale] = {}  # (namespace, kind, name) of the controllers given
        self.dra = DraObjects()  # DeviceClasses, ResourceSlices, ResourceClaims and templates (kubernetes_dra)

    def warn(self, obj: dict[str, Any], path: str, message: str) -> None:
        self.warnings.append(f"{object_name(obj)}: {path}: {message}")

    def _validated(self, obj: dict[str, Any], model: type[BaseModel], fields: dict[str, Any], into: list[Any]) -> None:
        try:
            into.append(model.model_validate(fields))
        except ValidationError as err:
            self.errors += [f"{object_name(obj)}: snapshot field {p}" for p in pydantic_problems(err, model, object_name(obj))]

    def lock_pod(self, fields: dict[str, Any], reason: str) -> None:
        """Lock the pod (it stays where it is) and count the reason in the summary."""
        if not fields["locked"]:
            fields["locked"] = True
            self.summary.locked[reason] += 1
