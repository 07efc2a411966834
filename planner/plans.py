"""Plan format v1: what a planner returns and what ``validate`` checks.

A defrag plan is an ordered list of waves of moves. Migration is make-before-break: in a wave every
moving pod's new copy starts on its destination while the old copy still holds its source, and the
sources are released only after the wave.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.cluster import SnapshotError, duplicate_key_problems, pydantic_problems

PLAN_VERSION = 1
Status = Literal["optimal", "feasible", "timeout", "infeasible", "heuristic"]


class Move(BaseModel):
    """Migrate ``pod`` from node ``from`` to node ``to``."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
    pod: str
    from_: str = Field(alias="from")
    to: str


class SolveReport(BaseModel):
    """How a plan was obtained. Planners may add fields of their own (rounds, partitions, ...)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    method: str
    solver: str | None = None
    status: Status
    objective: float | None = None
    """Empty nodes at the end of the plan."""
    bound: float | None = None
    """Best proven bound on the objective; null unless a solver proved one."""
    gap: float | None = None
    wall_s: float = Field(default=0.0, ge=0)
    seed: int | None = None
    moves: int = Field(default=0, ge=0)
    gpus_moved: float = Field(default=0.0, ge=0)


class PlanMetrics(BaseModel):
    """Cluster metrics (``metrics.summary``) before and after the plan."""

    model_config = ConfigDict(extra="forbid")
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}


class DefragPlan(BaseModel):
    """Waves of moves; ``vacated_nodes`` are nodes that hold pods before the plan and none after."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    version: Literal[1] = PLAN_VERSION
    kind: Literal["defrag"] = "defrag"
    waves: list[list[Move]]
    vacated_nodes: list[str]
    metrics: PlanMetrics | None = None
    report: SolveReport | None = None

    def moves(self) -> list[Move]:
        return [move for wave in self.waves for move in wave]


class DefragComparison(BaseModel):
    """Compare mode: the heuristic and the exact plan of one snapshot, and the gap between them."""

    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = PLAN_VERSION
    kind: Literal["defrag-compare"] = "defrag-compare"
    heuristic: DefragPlan
    exact: DefragPlan
    gap: dict[str, Any]


def parse_plan(text: str | bytes, source: str = "plan") -> DefragPlan:
    """Parse a plan; raise SnapshotError with field-path messages when it is malformed."""
    duplicates = duplicate_key_problems(text, source)
    if duplicates:
        raise SnapshotError(duplicates)
    try:
        return DefragPlan.model_validate_json(text)
    except ValidationError as err:
        raise SnapshotError(pydantic_problems(err, DefragPlan, source)) from None


def plan_to_dict(plan: DefragPlan | DefragComparison) -> dict[str, Any]:
    return plan.model_dump(mode="json", by_alias=True, exclude_none=False)


def dump_plan(plan: DefragPlan | DefragComparison, indent: int | None = 2) -> str:
    return json.dumps(plan_to_dict(plan), indent=indent)


def write_plan(plan: DefragPlan | DefragComparison, path: str | Path) -> None:
    import sys

    text = dump_plan(plan)
    if str(path) == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(path).write_text(text + "\n", encoding="utf-8")
