"""Small DRA Lists for the importer's and the rules' tests: the seeded fleet of
``planner.instances.kubernetes_dra`` and hand-made variations of it (a broken class, selector or allocation)."""

from __future__ import annotations

import copy
import json
from typing import Any

from planner.adapters.kubernetes import KubeImport, import_kubernetes
from planner.instances.kubernetes_dra import dra_fleet


def imported(doc: dict[str, Any]) -> KubeImport:
    return import_kubernetes([(json.dumps(doc), "list.json")])


def fleet(nodes: int = 10, seed: int = 0, **kw: Any) -> dict[str, Any]:
    return dra_fleet(nodes, seed, **kw)


def items_of(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [i for i in doc["items"] if i["kind"] == kind]


def edited(doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(doc)
