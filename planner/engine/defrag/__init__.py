"""Defragmentation: run a defrag method, build waves, validate, and report how the plan was obtained.

Methods: ``heuristic`` (IPC, then the move-minimal pass ``trim``: ``move_minimal.py``), the baselines ``random``, ``descheduler`` and ``repack``, ``exact``
(the whole instance solved by CP-SAT or HiGHS, warm-started from IPC), ``hybrid`` (the better of IPC
and repack-then-IPC, then large-neighbourhood search with the exact model), ``auto`` (exact when the instance is small enough,
hybrid otherwise) and ``compare`` (IPC and exact on the same snapshot, with the gap).

``plan_defrag`` is a pure function of the cluster and the options. Every plan it returns has passed
``validate``, including the limits it was asked for (``max_moves``, ``max_moves_per_node``,
``same_asw``); an invalid plan is a bug and raises ``PlanBug`` instead of being returned. Options a
method does not use are refused when the options are built (``DefragOptions``: an option that would
be silently ignored is an error), and options that cannot be honoured for this cluster (an instance
too large for ``exact``) raise ``PlanOptionError``. Heuristic plans are deterministic for a seed whatever the number of workers;
solver plans are when the solver proves optimality or ``deterministic`` is set (CP-SAT).

The package by role: ``options`` (``DefragOptions`` and what each method reads), ``methods`` (the
methods as a table of functions), ``assembly`` (finishing a plan), ``run`` runs them. Its names are importable from this package
(``from planner.engine.defrag import plan_defrag``) and resolved on first use, so that the options alone
(``planner.engine.defrag.options``, what ``planner validate`` reads) cost no planner imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.runtime.lazy_names import names_from

if TYPE_CHECKING:  # what the names are (for mypy); at run time ``__getattr__`` imports ``run`` on first use
    from planner.engine.defrag.run import *

__getattr__ = names_from(__name__, "planner.engine.defrag.run")
