"""Plan format v1: what a planner returns and what ``validate`` checks.

A defrag plan is an ordered list of waves of moves. Migration is make-before-break: in a wave every
moving pod's new copy starts on its destination while the old copy still holds its source, and the
sources are released only after the wave.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Final, Literal, final

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from planner.bounded_models import FAIL_FAST
from planner.cluster import SnapshotError, duplicate_key_problems, validated_json

PLAN_VERSION: Final = 1
Status = Literal["optimal", "feasible", "timeout", "infeasible", "heuristic"]


class Move(BaseModel):
    """Migrate ``pod`` from node ``from`` to node ``to``. ``uid`` is the pod's Kubernetes UID in the
    snapshot, on the pod's first move when the snapshot has one (left out otherwise: a pod moved by an
    earlier wave is a new pod by then); with ``from``, what the kubectl script checks before each wave."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
    pod: str
    from_: str = Field(alias="from")
    to: str
    uid: str | None = Field(default=None, min_length=1, max_length=128, exclude_if=lambda uid: uid is None)


class SolveReport(BaseModel):
    """How a plan was obtained. Planners may add fields of their own (rounds, partitions, ...)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    method: str
    solver: str | None = None
    status: Status
    objective: float | None = None
    """Empty nodes at the end of the plan."""
    bound: float | None = None
    """Best proven bound on the objective: a solver's, or for defrag plans the combinatorial relaxation
    of ``models/defrag_bound.py`` when it is smaller (``bound_source`` says which, ``bound_method`` which
    relaxation: ``closed-form`` or ``class-lp``, and ``bound_note`` why a stronger one is missing); null when neither applies."""
    gap: float | None = None
    wall_s: float = Field(default=0.0, ge=0)
    seed: int | None = None
    moves: int = Field(default=0, ge=0)
    gpus_moved: float = Field(default=0.0, ge=0)

    def extra(self, name: str) -> Any:
        """A field a planner added to the report (``reason``, ``jobs_placed``, ...) by name; ``KeyError`` when it added none."""
        return (self.model_extra or {})[name]


class PlanMetrics(BaseModel):
    """Cluster metrics (``metrics.summary``) before and after the plan."""

    model_config = ConfigDict(extra="forbid")
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    per_job: dict[str, Any] | None = None
    """Make-room plans: per named job its moves, GPUs moved and the nodes it lands on (or why not)."""


class Placement(BaseModel):
    """Start ``pod`` (pending) on ``node``, on the devices ``gpu_indexes`` when devices matter."""

    model_config = ConfigDict(strict=True, extra="forbid")
    pod: str
    node: str
    gpu_indexes: list[int] | None = None


class Unplaced(BaseModel):
    """A pending job the plan does not start, and why."""

    model_config = ConfigDict(strict=True, extra="forbid")
    job: str
    reason: str


class DefragPlan(BaseModel):
    """Waves of moves; ``vacated_nodes`` are nodes that hold pods before the plan and none after.

    A make-room plan (``defrag --make-room``) also starts named pending pods: ``placements``, applied
    after the last wave (``vacated_nodes`` and ``metrics.after`` describe the state before them), and
    ``unplaced``, the named jobs (or lone pods) it cannot start, with the reason.
    """

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    version: Literal[1] = PLAN_VERSION
    kind: Literal["defrag"] = "defrag"
    waves: Annotated[list[Annotated[list[Move], FAIL_FAST]], FAIL_FAST]
    vacated_nodes: Annotated[list[str], FAIL_FAST]
    placements: Annotated[list[Placement], FAIL_FAST] = Field(default_factory=list)
    unplaced: Annotated[list[Unplaced], FAIL_FAST] = Field(default_factory=list)
    metrics: PlanMetrics | None = None
    report: SolveReport | None = None

    def moves(self) -> list[Move]:
        return [move for wave in self.waves for move in wave]


Number = int | float
"""A count or a measure, kept as given (an int stays an int in the written plan)."""


@final
class DefragGap(TypedDict):
    """The gap of a defrag comparison: empty nodes of each plan and the bound, and their walls."""

    heuristic_empty_nodes: Number | None
    exact_empty_nodes: Number | None
    bound_empty_nodes: Number | None
    exact_status: str | None
    gap_empty_nodes: Number | None
    heuristic_to_bound: Number | None
    heuristic_over_exact: Number | None
    heuristic_wall_s: Number | None
    exact_wall_s: Number | None


@final
class MakeRoomGap(TypedDict):
    """The gap of a make-room comparison: jobs placed, moves and GPUs moved by each plan."""

    heuristic_jobs_placed: Number | None
    exact_jobs_placed: Number | None
    heuristic_moves: Number | None
    exact_moves: Number | None
    heuristic_gpus_moved: Number | None
    exact_gpus_moved: Number | None
    exact_status: str | None
    restricted: Any
    optimal_within_neighbourhood: Any
    moves_saved: Number | None
    heuristic_wall_s: Number | None
    exact_wall_s: Number | None


class PreemptGap(TypedDict):
    """The gap of a preempt comparison: the heuristic, each plan's lost work and victims."""

    heuristic: str
    lost_gpu_s: dict[str, Any]
    cost_ratio: Number | None
    victims: dict[str, Any]
    exact_status: str | None


class AllocationGap(TypedDict):
    """The gap of an allocation comparison: each plan's summary (``greedy`` names the heuristic's in
    plan format v1), the GPUs the exact plan places more and the switches it saves."""

    greedy: dict[str, Any]
    exact: dict[str, Any]
    gpus: Number
    switches: Number
    exact_status: str | None


@final
class RoomGap(TypedDict):
    """The gap of an objective-room comparison: per shape (largest first) the counts of each plan and
    the bound, the exact plan's status, moves and walls."""

    shapes: list[str]
    heuristic_counts: list[int]
    exact_counts: list[int]
    bounds: list[int]
    exact_status: str | None
    gap_first_shape: int
    heuristic_to_bound: int
    heuristic_moves: Number | None
    exact_moves: Number | None
    heuristic_wall_s: Number | None
    exact_wall_s: Number | None


class DefragComparison(BaseModel):
    """Compare mode: the heuristic and the exact plan of one snapshot, and the gap between them."""

    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = PLAN_VERSION
    kind: Literal["defrag-compare"] = "defrag-compare"
    heuristic: DefragPlan
    exact: DefragPlan
    gap: DefragGap | MakeRoomGap | RoomGap


class Victim(BaseModel):
    """Evict ``pod`` (of ``job``) from ``node``, losing ``lost_gpu_s`` GPU-seconds since its last checkpoint."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    pod: str
    node: str
    job: str | None = None
    lost_gpu_s: float = Field(ge=0)


class PreemptPlan(BaseModel):
    """One preemption decision: evict every victim, then start the job's pods on their placements.

    An empty plan with ``report.status == "infeasible"`` says the job cannot start even with every
    allowed victim evicted (``report.reason`` names the binding constraint).
    """

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    version: Literal[1] = PLAN_VERSION
    kind: Literal["preempt"] = "preempt"
    job: str
    now_s: float
    placements: Annotated[list[Placement], FAIL_FAST]
    victims: Annotated[list[Victim], FAIL_FAST]
    reactivate: str | None = None
    """Set for the reactivation of a standby pod: that pod wakes on its own node once the victims
    are gone (``job`` names its job, or the pod itself when it has none)."""
    metrics: dict[str, Any] = Field(default_factory=dict)
    report: SolveReport | None = None


class PreemptComparison(BaseModel):
    """Compare mode: a heuristic's and the exact model's plan for one decision, side by side."""

    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = PLAN_VERSION
    kind: Literal["preempt-compare"] = "preempt-compare"
    heuristic: PreemptPlan
    exact: PreemptPlan
    gap: PreemptGap


class AllocationPlan(BaseModel):
    """Where pending jobs start: ``placements`` of their pods (gangs whole, or ``min_available`` of
    them), and the jobs left pending with the reason. Existing pods are not touched."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    version: Literal[1] = PLAN_VERSION
    kind: Literal["allocate"] = "allocate"
    placements: Annotated[list[Placement], FAIL_FAST]
    unplaced: Annotated[list[Unplaced], FAIL_FAST] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    report: SolveReport | None = None


AnyPlan = DefragPlan | PreemptPlan | AllocationPlan
_KINDS: dict[str, type[DefragPlan | PreemptPlan | AllocationPlan]] = {"defrag": DefragPlan, "preempt": PreemptPlan, "allocate": AllocationPlan}


class AllocationComparison(BaseModel):
    """Compare mode: largest-first (greedy, one job at a time) and the exact joint model, side by side.

    The heuristic's plan is ``heuristic``, as in the other comparisons; plan format v1 names it
    ``greedy``, so it is written as ``greedy`` and read under either name."""

    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = PLAN_VERSION
    kind: Literal["allocate-compare"] = "allocate-compare"
    heuristic: AllocationPlan = Field(validation_alias=AliasChoices("greedy", "heuristic"), serialization_alias="greedy")
    exact: AllocationPlan
    gap: AllocationGap


def parse_plan(text: str | bytes, source: str = "plan") -> AnyPlan:
    """Parse a plan of any kind (``kind`` decides; default defrag); raise SnapshotError with
    field-path messages when it is malformed."""
    duplicates = duplicate_key_problems(text, source)
    if duplicates:
        raise SnapshotError(duplicates)
    try:
        head = json.loads(text)
    except (ValueError, RecursionError):
        head = None
    kind = head.get("kind", "defrag") if isinstance(head, dict) else "defrag"
    model = _KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise SnapshotError([f"kind: unknown plan kind {kind!r}; this planner validates {', '.join(sorted(_KINDS))} plans"])
    return validated_json(model, text, source)


PlanDocument = DefragPlan | DefragComparison | PreemptPlan | PreemptComparison | AllocationPlan | AllocationComparison


def plan_to_dict(plan: PlanDocument) -> dict[str, Any]:
    return plan.model_dump(mode="json", by_alias=True, exclude_none=False)


def dump_plan(plan: PlanDocument, indent: int | None = 2) -> str:
    return json.dumps(plan_to_dict(plan), indent=indent)


def write_plan(plan: PlanDocument, path: str | Path) -> None:
    text = dump_plan(plan)
    if str(path) == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(path).write_text(text + "\n", encoding="utf-8")
