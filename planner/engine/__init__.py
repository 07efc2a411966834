"""The planner's facades, one per problem: ``defrag`` and ``preempt``; each a pure function from a
cluster and options to a validated plan with an honest report."""

from planner.engine.defrag import *  # noqa: F403
from planner.engine.defrag import (  # noqa: F401
    METHOD_OPTIONS,
    DefragOptions,
    PlanBug,
    PlanOptionError,
    _assemble,
    check_exact_size,
    compare_defrag,
    estimated_runtime_s,
    plan_defrag,
)
