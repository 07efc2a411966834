"""A violation: one way a plan breaks the rules, as every validator reports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One way a plan breaks the rules; ``wave`` and ``move`` index into ``plan.waves``."""

    kind: str
    message: str
    wave: int | None = None
    move: int | None = None
    pod: str | None = None
    node: str | None = None

    def __str__(self) -> str:
        if self.wave is None:
            return f"{self.kind}: {self.message}"
        where = f"waves[{self.wave}]" + (f"[{self.move}]" if self.move is not None else "")
        return f"{where}: {self.kind}: {self.message}"
