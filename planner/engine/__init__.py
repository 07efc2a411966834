"""The planner's facades, one per problem: ``defrag``, ``allocate`` and ``preempt`` (``makeroom``
serves defrag); each a pure function from a cluster and options to a validated plan with an honest
report. ``common`` holds what they share. The defrag facade's names are importable from here
(``from planner.engine import plan_defrag``) and resolved on first use: importing one facade, or the
options of one, does not import the others (``runtime/lazy_names.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.runtime.lazy_names import names_from

if TYPE_CHECKING:  # what the names are (for mypy); at run time ``__getattr__`` imports them on first use
    from planner.engine.defrag.assembly import _assemble as _assemble
    from planner.engine.defrag.run import *

__getattr__ = names_from(__name__, "planner.engine.defrag.run", {"_assemble": "planner.engine.defrag.assembly"})
