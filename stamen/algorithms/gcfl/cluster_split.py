r"""GCFL's split of a cluster of clients in two: a minimum cut of their similarity graph, and DTW.

Both are GCFL's math (:mod:`stamen.algorithms.gcfl.server`), on arrays only (numpy, no Flower, no torch).

**Minimum cut** (:func:`min_cut`): the clients of a cluster are the nodes of a complete graph
whose edge :math:`(i, j)` weighs :math:`S_{ij} \ge 0`, their similarity; the split is the
bi-partition :math:`(C_1, C_2)` of least cut weight :math:`\sum_{i \in C_1, j \in C_2} S_{ij}`,
found exactly by Stoer and Wagner's algorithm (*A simple min-cut algorithm*, JACM 1997, as
GCFL's code uses networkx's): :math:`n - 1` phases, each growing a set from one node by the
node most tightly connected to it; the last node added, :math:`t`, is cut from the rest at the
weight of its connection (the *cut of the phase*), then merged with the node added before it.
The least cut of a phase is the least cut of the graph. Ties go to the lowest index, so the same
similarities always give the same split.

**Dynamic time warping** (:func:`dtw_distance`): GCFL+ compares clients by the sequences of
their update norms, which may be alike but shifted in time. The distance of sequences
:math:`a_{1..n}`, :math:`b_{1..m}` is the least cost of a monotone alignment of their steps,

.. math:: D_{ij} = (a_i - b_j)^2 + \min(D_{i-1,j}, D_{i,j-1}, D_{i-1,j-1}), \qquad
   \mathrm{dtw}(a, b) = \sqrt{D_{nm}},

:math:`D_{00} = 0` and :math:`\infty` elsewhere on the borders: the Euclidean form of the
``dtaidistance`` package that GCFL's code calls, with no window.
"""

from __future__ import annotations

import numpy as np


def min_cut(similarity: np.ndarray) -> tuple[list[int], list[int]]:
    """The two sides of the least-weight cut of the complete graph weighted by ``similarity`` (symmetric,
    non-negative, at least two nodes; the diagonal is ignored), each side sorted, the side holding node 0
    first (see the module docstring)."""
    weights = np.array(similarity, dtype=np.float64)
    n = weights.shape[0]
    if weights.shape != (n, n) or n < 2:
        raise ValueError(f"min_cut needs a square similarity matrix of at least 2 nodes, got shape {weights.shape}")
    if not np.all(np.isfinite(weights)) or weights.min() < 0:
        raise ValueError("min_cut needs finite, non-negative similarities")
    weights = (weights + weights.T) / 2
    np.fill_diagonal(weights, 0.0)
    groups = {i: [i] for i in range(n)}  # a merged node -> the original nodes it holds
    active = list(range(n))
    best, best_side = np.inf, [0]
    while len(active) > 1:
        connection = weights[active[0]].copy()  # each node's weight to the growing set
        added, remaining = [active[0]], active[1:]
        while remaining:
            chosen = max(remaining, key=lambda v: (connection[v], -v))  # ties: the lowest index
            remaining.remove(chosen)
            added.append(chosen)
            if remaining:
                connection += weights[chosen]
            else:
                if connection[chosen] < best:
                    best, best_side = connection[chosen], list(groups[chosen])
        s, t = added[-2], added[-1]
        weights[s] += weights[t]
        weights[:, s] += weights[:, t]
        weights[s, s] = 0.0
        groups[s].extend(groups.pop(t))
        active.remove(t)
    side = sorted(best_side)
    other = sorted(set(range(n)) - set(side))
    return (side, other) if 0 in side else (other, side)


def dtw_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The DTW distance of sequences ``a`` and ``b`` (see the module docstring)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    cost = np.full((a.size + 1, b.size + 1), np.inf)
    cost[0, 0] = 0.0
    for i in range(1, a.size + 1):
        for j in range(1, b.size + 1):
            cost[i, j] = (a[i - 1] - b[j - 1]) ** 2 + min(cost[i - 1, j], cost[i, j - 1], cost[i - 1, j - 1])
    return float(np.sqrt(cost[a.size, b.size]))


def dtw_matrix(sequences: list[list[float]]) -> np.ndarray:
    """The symmetric matrix of pairwise DTW distances of ``sequences``."""
    n = len(sequences)
    distances = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            distances[i, j] = distances[j, i] = dtw_distance(np.asarray(sequences[i]), np.asarray(sequences[j]))
    return distances


def cosine_similarities(updates: np.ndarray) -> np.ndarray:
    r"""GCFL's similarity of clients' updates (rows): :math:`\cos(\Delta_i, \Delta_j) + 1 \in [0, 2]`."""
    rows = np.asarray(updates, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1)
    return rows @ rows.T / np.maximum(np.outer(norms, norms), 1e-12) + 1.0
