"""The choices of the planning commands' options (``--method``, ``--solver``, ``--trim``, ...) as the
str Enums typer offers, built from the engine's ``Literal`` types (``typing.get_args``): a method the
engine gains is a choice on the command line, in the engine's order, with no list to keep in step."""

from __future__ import annotations

from enum import Enum
from typing import Any, get_args

from pydantic import BaseModel

from planner.engine.allocate_options import AllocateMethod as AllocateMethodLiteral
from planner.engine.allocate_options import AllocateOptions
from planner.engine.defrag import DefragOptions
from planner.engine.defrag import Method as DefragMethodLiteral
from planner.engine.preempt import PreemptMethod as PreemptMethodLiteral
from planner.engine.preempt import PreemptOptions


def choices(name: str, values: tuple[str, ...] | list[str]) -> Any:
    """A str Enum of ``values`` in their order (a member's name is its value with '-' as '_');
    ``Choice("value")`` is a member."""
    return Enum(name, [(value.replace("-", "_"), value) for value in values], type=str)


def field_values(model: type[BaseModel], field: str) -> tuple[str, ...]:
    """The values of an options field typed as a ``Literal``."""
    return get_args(model.model_fields[field].annotation)


DefragMethod = choices("DefragMethod", get_args(DefragMethodLiteral))
Trim = choices("Trim", field_values(DefragOptions, "trim"))
Executor = choices("Executor", field_values(DefragOptions, "executor"))
Solver = choices("Solver", field_values(DefragOptions, "solver"))
Formulation = choices("Formulation", field_values(DefragOptions, "formulation"))
Lexicographic = choices("Lexicographic", field_values(DefragOptions, "lexicographic"))
Objective = choices("Objective", field_values(DefragOptions, "objective"))
RoomLevel = choices("RoomLevel", field_values(DefragOptions, "room_level"))

ServeExecutor = choices("ServeExecutor", [value for value in field_values(DefragOptions, "executor") if value != "inline"])
"""``planner serve --executor``: a job's pieces run in the job's own process pool or as Ray tasks
(inline is not offered: a service job already runs in a process of its own)."""

PreemptMethod = choices("PreemptMethod", get_args(PreemptMethodLiteral))
PreemptHeuristic = choices("PreemptHeuristic", field_values(PreemptOptions, "heuristic"))
PreemptSolver = choices("PreemptSolver", field_values(PreemptOptions, "solver"))

AllocateMethod = choices("AllocateMethod", get_args(AllocateMethodLiteral))
AllocateSolver = choices("AllocateSolver", field_values(AllocateOptions, "solver"))
