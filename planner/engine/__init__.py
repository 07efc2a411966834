"""The planner's facades, one per problem: ``defrag``, ``allocate`` and ``preempt`` (``makeroom``
serves defrag); each a pure function from a cluster and options to a validated plan with an honest
report. ``common`` holds what they share."""

from planner.engine.defrag import *
from planner.engine.defrag import (  # noqa: F401
    METHOD_OPTIONS,
    DefragOptions,
    PlanBug,
    PlanOptionError,
    check_exact_size,
    compare_defrag,
    estimated_runtime_s,
    plan_defrag,
)
from planner.engine.defrag.assembly import _assemble  # noqa: F401
