"""The options of ``plan_allocate`` (one model shared by the command line and the service) and which
options each method reads; an option a method would ignore is refused."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from planner.capacity import checked_shapes, large_requests_field
from planner.engine.common import MAX_SEED, MAX_TIME_LIMIT_S, refuse_unused

AllocateMethod = Literal["auto", "largest-first", "greedy", "alg2", "kueue-bestfit", "kueue-leastfree", "slurm", "random", "exact", "compare"]
GREEDY_METHODS = ("largest-first", "greedy", "alg2", "kueue-bestfit", "kueue-leastfree", "slurm", "random")
"""One job at a time, largest first; ``greedy`` is largest-first (the ASI practice)."""


class AllocateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    method: AllocateMethod = "auto"
    jobs: list[str] | None = Field(None, description="Jobs to place (default: every job with pending pods).")
    solver: Literal["auto", "highs", "cpsat"] = Field(
        "auto", description="exact, auto, compare: the back-end; auto = HiGHS, then CP-SAT when HiGHS has not proven it in 40% of the time."
    )
    time_limit_s: float = Field(10.0, gt=0, le=MAX_TIME_LIMIT_S, allow_inf_nan=False, description="exact, auto, compare: time for all solves.")
    solver_workers: int = Field(8, ge=1, le=256, description="CP-SAT workers / HiGHS threads.")
    entropy: bool = Field(True, description="exact, auto, compare: least entropy as the objective's third level (after GPUs, switches).")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="random: the seed.")
    large_requests: list[str] = large_requests_field()

    @field_validator("*")
    @classmethod
    def _used_by_the_method(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_unused(cls, value, info, METHOD_OPTIONS, ("method", "jobs", "large_requests"))

    @field_validator("large_requests")
    @classmethod
    def _shapes_read(cls, value: list[str]) -> list[str]:
        return checked_shapes(value)


_SOLVER = {"solver", "time_limit_s", "solver_workers", "entropy"}
METHOD_OPTIONS: dict[str, set[str]] = {
    **{m: set() for m in GREEDY_METHODS},
    "random": {"seed"},
    "exact": _SOLVER,
    "auto": _SOLVER,
    "compare": _SOLVER,
}
