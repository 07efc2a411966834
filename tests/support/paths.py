"""Paths the tests share: the repository root, its bundled instances, the Fig. 15 snapshot."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTANCES = REPO / "instances"
FIG15 = INSTANCES / "fig15-ejection-chain.json"
