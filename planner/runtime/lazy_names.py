"""A package whose names are resolved on first use (PEP 562): importing ``planner.engine.defrag.options``
runs ``planner/engine/defrag/__init__.py`` first, and an ``__init__`` that imported its planners there
made every command of the CLI pay for all of them (issue 62: 0.4 s of CPU before any work)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any


def names_from(package: str, source: str, extra: dict[str, str] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a name it lacks is looked up in the module ``source``
    (imported then, once), or in the module ``extra`` maps the name to. A submodule's name and dunder
    names are left to the import system (no planner is imported to answer ``hasattr(pkg, "options")``)."""
    where = extra or {}

    def resolve(name: str) -> Any:
        if name.startswith("__") or (name not in where and importlib.util.find_spec(f"{package}.{name}") is not None):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(where.get(name, source))
        try:
            value = getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(importlib.import_module(package), name, value)  # found once: the next lookup is a plain attribute
        return value

    return resolve
