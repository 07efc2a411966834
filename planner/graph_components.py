"""Connected components of a graph given as integer edge arrays, on numpy arrays (no per-edge Python loop).

Each round hooks every root that an edge joins to a smaller root onto the smallest such root, then
compresses the pointers to roots. A root with an edge to another component is hooked or has a neighbour
hooked onto it, so the components still to join at least halve each round: O(log n) rounds of array work.
"""

from __future__ import annotations

import numpy as np


def component_labels(count: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per vertex 0..count-1, its component's number: 0, 1, ... in the order of each component's smallest
    vertex. ``a[i]`` and ``b[i]`` are the ends of edge i."""
    parent = np.arange(count, dtype=np.int64)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    while True:
        ra, rb = parent[a], parent[b]  # roots: parent is compressed
        differ = ra != rb
        if not differ.any():
            break
        low, high = np.minimum(ra[differ], rb[differ]), np.maximum(ra[differ], rb[differ])
        np.minimum.at(parent, high, low)  # a root points below itself only: no cycle
        while True:
            up = parent[parent]
            if np.array_equal(up, parent):
                break
            parent = up
    return np.unique(parent, return_inverse=True)[1].reshape(-1).astype(np.int64)
