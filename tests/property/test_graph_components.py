"""``graph_components.component_labels`` against a union-find written here, on random graphs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.graph_components import component_labels


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    count = draw(st.integers(1, 40))
    edges = draw(st.lists(st.tuples(st.integers(0, count - 1), st.integers(0, count - 1)), max_size=60))
    return count, edges


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_labels_are_the_union_finds_components_numbered_by_smallest_vertex(graph: tuple[int, list[tuple[int, int]]]) -> None:
    count, edges = graph
    parent = list(range(count))

    def find(v: int) -> int:
        while parent[v] != v:
            v = parent[v]
        return v

    for a, b in edges:
        parent[find(a)] = find(b)
    firsts: dict[int, int] = {}
    expected = [firsts.setdefault(find(v), len(firsts)) for v in range(count)]  # numbered in order of smallest vertex
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    assert component_labels(count, a, b).tolist() == expected


def test_a_long_path_joins_in_few_rounds_of_array_work() -> None:
    count = 100_000
    order = np.random.default_rng(0).permutation(count)  # a path through the vertices in random order
    labels = component_labels(count, order[:-1], order[1:])
    assert not labels.any()
