"""Hypothesis strategies for Kubernetes inputs: small mixed kubectl Lists from the seeded generator
(``planner/instances/kubernetes_mixed.py``), a few nodes of each family."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from planner.instances.kubernetes_mixed import FAMILIES, generate_kubernetes_mixed


@dataclass(frozen=True)
class MixedSpec:
    """The generator's arguments (a short repr in Hypothesis' reports; ``objects()`` is the List)."""

    seed: int
    counts: tuple[tuple[str, int], ...]
    fill: float

    def objects(self) -> dict[str, Any]:
        return generate_kubernetes_mixed(seed=self.seed, counts=dict(self.counts), fill=self.fill)


@st.composite
def mixed_specs(draw: st.DrawFn, most: int = 2) -> MixedSpec:
    """1..``most``+1 whole-GPU H100 nodes and 0..``most`` nodes of every other family (H200,
    inference, MIG, time-sliced, CPU; 0-1 control-plane), filled to 50-85%."""
    counts = {family: draw(st.integers(0, 1 if family == "control-plane" else most), label=family) for family in FAMILIES}
    counts["train-h100"] += 1
    return MixedSpec(draw(st.integers(0, 2**16), label="seed"), tuple(counts.items()), draw(st.sampled_from([0.5, 0.7, 0.85]), label="fill"))


def mixed_lists(most: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    """Small mixed kubectl Lists (see ``mixed_specs``)."""
    return mixed_specs(most).map(MixedSpec.objects)
