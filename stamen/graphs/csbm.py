r"""Contextual stochastic block models (CSBM), generated in memory from a seed.

A CSBM draws a class :math:`y_i` for every node, connects two nodes with
probability :math:`p` when their classes agree and :math:`q` otherwise, and draws
node features from a class-conditional Gaussian

.. math::
    \mathbf{x}_i \sim \mathcal{N}(\boldsymbol{\mu}_{y_i}, \sigma^2 \mathbf{I}_d).

:func:`make_csbm` is Stamen's embedded default dataset: its options are the ones a
user thinks in (average degree, homophily, signal strength); they translate to
:math:`p` and :math:`q` as

.. math::
    p = \frac{h \, \bar{d}}{n / C}, \qquad q = \frac{(1 - h) \, \bar{d}}{n - n / C},

so that a node has :math:`\bar{d}` neighbours on average, a share :math:`h` of them
in its own class. The class means are random directions of norm ``signal``
(in units of :math:`\sigma`): with the defaults a node's own features separate the
classes poorly and its neighbourhood separates them well, so a GCN beats an MLP.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data


def sample_csbm(
    labels: np.ndarray,
    means: np.ndarray,
    sigma: float,
    p: float,
    q: float,
    seed: int,
) -> Data:
    """Sample a CSBM graph for fixed ``labels`` and class ``means``.

    Edges are drawn block by block (one binomial count per pair of classes, then
    that many distinct node pairs), so a 20,000-node graph never builds an
    :math:`n \\times n` matrix.

    Args:
        labels: class of every node, shape ``(n,)``, values in ``0..C-1``.
        means: class means, shape ``(C, d)``.
        sigma: feature noise standard deviation.
        p: probability of an edge between two nodes of the same class.
        q: probability of an edge between two nodes of different classes.
        seed: random seed; the same arguments give the same graph.
    """
    labels = np.asarray(labels, dtype=np.int64)
    means = np.asarray(means, dtype=np.float64)
    if not (0.0 <= q <= 1.0 and 0.0 <= p <= 1.0):
        raise ValueError(f"CSBM edge probabilities must lie in [0, 1], got p={p}, q={q}")
    if sigma < 0:
        raise ValueError(f"CSBM sigma must be >= 0, got {sigma}")
    rng = np.random.default_rng(seed)
    num_classes = means.shape[0]
    features = _features(labels, means, sigma, rng)

    members = [np.flatnonzero(labels == c) for c in range(num_classes)]
    sources, targets = [], []
    for a in range(num_classes):
        for b in range(a, num_classes):
            src, dst = _sample_block(members[a], members[b], p if a == b else q, rng)
            sources.append(src)
            targets.append(dst)
    edge_index = torch.from_numpy(_both_directions(sources, targets, labels.size))
    return Data(
        x=torch.from_numpy(features),
        edge_index=edge_index,
        y=torch.from_numpy(labels),
        num_classes=num_classes,
    )


def _both_directions(sources: list[np.ndarray], targets: list[np.ndarray], n: int) -> np.ndarray:
    """Both directions of the pairs, sorted by (source, target) without repeats, as ``torch.unique(dim=1)``
    gives them: one sort of the int64 keys ``source * n + target``.

    Written into preallocated arrays, each block's pairs freed once keyed, the keys sorted and
    compacted in place and split into the ``2 x m`` result row by row: at peak the keys and the
    result (24 bytes an edge direction) instead of the keys, their sorted copy, the pairs and
    the two rows before stacking (64 bytes; 5 GB at ten million nodes).
    """
    total = sum(src.size for src in sources)
    keys = np.empty(2 * total, dtype=np.int64)
    start = 0
    while sources:  # the blocks in order, each freed once its keys are written
        src, dst = sources.pop(0), targets.pop(0)
        ahead, back = keys[start : start + src.size], keys[total + start : total + start + src.size]
        np.multiply(src, n, out=ahead)
        ahead += dst
        np.multiply(dst, n, out=back)
        back += src
        start += src.size
        del src, dst
    keys.sort()
    kept = min(keys.size, 1)
    for begin in range(1, keys.size, COMPACT_KEYS):  # each first of a run of equal keys, moved forward in place
        end = min(begin + COMPACT_KEYS, keys.size)
        fresh = keys[begin:end][keys[begin:end] != keys[begin - 1 : end - 1]]  # read before any write reaches it
        keys[kept : kept + fresh.size] = fresh
        kept += fresh.size
    keys = keys[:kept]
    edge_index = np.empty((2, kept), dtype=np.int64)
    np.floor_divide(keys, n, out=edge_index[0])
    np.remainder(keys, n, out=edge_index[1])
    return edge_index


COMPACT_KEYS = 1 << 22
"""Keys compared and moved at a time when the sorted keys are made unique in place."""

FEATURE_ROWS = 65_536
"""Rows of features drawn at a time: the float64 draws never take more than this many rows."""


def _features(labels: np.ndarray, means: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """``float32(means[labels] + sigma * N(0, 1))``, drawn in blocks of :data:`FEATURE_ROWS` rows.

    The generator hands out its normals in order whatever the block sizes, so the
    values are those of one ``(n, d)`` draw, without the three ``n x d`` float64
    arrays that draw's arithmetic needs (15 GB at ten million nodes).
    """
    features = np.empty((labels.size, means.shape[1]), dtype=np.float32)
    for start in range(0, labels.size, FEATURE_ROWS):
        rows = slice(start, start + FEATURE_ROWS)
        block = rng.standard_normal((labels[rows].size, means.shape[1]))
        block *= sigma
        block += means[labels[rows]]
        features[rows] = block
    return features


def _sample_block(
    left: np.ndarray, right: np.ndarray, prob: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct undirected pairs (u, v), u != v, between two node sets, each kept with ``prob``."""
    same = left is right or (left.size == right.size and np.array_equal(left, right))
    num_pairs = left.size * (left.size - 1) // 2 if same else left.size * right.size
    count = rng.binomial(num_pairs, prob) if num_pairs > 0 else 0
    if count == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    # Oversample, then drop self pairs and duplicates; a block is sparse, so one or two
    # draws suffice. A pair is the key ``min * base + max``. The draws are read in order
    # and each new pair is kept until ``count`` are chosen, as a loop over them would:
    # the first occurrence of every key, in draw order, that no earlier draw chose.
    base = int(max(left.max(), right.max())) + 1
    chosen = np.empty(0, np.int64)
    while chosen.size < count:
        need = count - chosen.size
        u = left[rng.integers(0, left.size, size=2 * need + 8)]
        v = right[rng.integers(0, right.size, size=2 * need + 8)]
        apart = u != v
        keys = np.minimum(u, v)[apart] * base + np.maximum(u, v)[apart]
        _, first = np.unique(keys, return_index=True)
        fresh = keys[np.sort(first)]
        fresh = fresh[~np.isin(fresh, chosen)]
        chosen = np.concatenate([chosen, fresh[:need]])
    chosen.sort()
    return chosen // base, chosen % base


def make_csbm(
    num_nodes: int = 3000,
    num_classes: int = 7,
    avg_degree: float = 8.0,
    homophily: float = 0.8,
    num_features: int = 64,
    signal: float = 1.0,
    seed: int = 0,
) -> Data:
    """Stamen's default CSBM: balanced classes, parametrised by degree and homophily.

    Args:
        num_nodes: number of nodes :math:`n`.
        num_classes: number of classes :math:`C`.
        avg_degree: expected number of neighbours :math:`\\bar d` of a node.
        homophily: expected share :math:`h` of a node's neighbours in its own class.
        num_features: feature dimension :math:`d`.
        signal: norm of each class mean, in units of the noise :math:`\\sigma = 1`.
        seed: random seed for classes, means, features and edges.
    """
    if num_classes < 2:
        raise ValueError(f"csbm needs num_classes >= 2, got {num_classes}")
    if num_nodes < 2 * num_classes:
        raise ValueError(f"csbm needs num_nodes >= 2 * num_classes, got {num_nodes} nodes")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"csbm homophily must lie in [0, 1], got {homophily}")
    if avg_degree <= 0 or num_features < 1 or signal < 0:
        raise ValueError("csbm needs avg_degree > 0, num_features >= 1 and signal >= 0")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(num_nodes) % num_classes)
    directions = rng.standard_normal((num_classes, num_features))
    means = signal * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    block = num_nodes / num_classes
    p = min(1.0, homophily * avg_degree / block)
    q = min(1.0, (1.0 - homophily) * avg_degree / (num_nodes - block))
    return sample_csbm(labels, means, 1.0, p, q, seed=seed + 1)


def make_paper_csbm(
    num_nodes: int = 200,
    K: float = 1.5,
    sigma: float = 1.0,
    avg_within_class_degree: float = 3.16,
    avg_between_class_degree: float = 0.74,
    num_features: int | None = None,
    seed: int = 0,
) -> Data:
    r"""The binary CSBM of Sabanayagam, Gosch et al. (ICLR 2025, label-flip certificates).

    Classes :math:`y_i \sim \mathrm{Bernoulli}(1/2)`; features
    :math:`\mathbf{x}_i \sim \mathcal{N}((2y_i - 1)\boldsymbol\mu, \sigma^2\mathbf{I}_d)` with
    :math:`\boldsymbol\mu = \frac{K\sigma}{2\sqrt d}\mathbf{1}_d` (so the means are
    :math:`K\sigma` apart); :math:`d = \mathrm{round}(n / \ln^2 n)` unless given (7 for
    :math:`n = 200`); edge probabilities

    .. math::
        p = \frac{2\,\bar d_{\mathrm{in}}}{n - 1}, \qquad q = \frac{2\,\bar d_{\mathrm{out}}}{n - 1},

    i.e. :math:`\bar d_{\mathrm{in}} = 3.16` expected neighbours in the own class and
    :math:`\bar d_{\mathrm{out}} = 0.74` in the other. Same parametrisation as the authors'
    ``CSBM`` class; the random draws differ (built on :func:`sample_csbm`).

    Args:
        num_nodes: :math:`n`.
        K: distance of the class means in units of :math:`\sigma`.
        sigma: feature noise standard deviation.
        avg_within_class_degree: :math:`\bar d_{\mathrm{in}}`.
        avg_between_class_degree: :math:`\bar d_{\mathrm{out}}`.
        num_features: :math:`d`; default :math:`\mathrm{round}(n/\ln^2 n)`.
        seed: random seed for classes, features and edges.
    """
    if num_nodes < 4:
        raise ValueError(f"paper csbm needs num_nodes >= 4, got {num_nodes}")
    if K < 0 or sigma < 0:
        raise ValueError(f"paper csbm needs K >= 0 and sigma >= 0, got K={K}, sigma={sigma}")
    d = int(round(num_nodes / np.log(num_nodes) ** 2)) if num_features is None else int(num_features)
    if d < 1:
        raise ValueError(f"paper csbm needs num_features >= 1, got {d}")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=num_nodes)
    mu = np.full(d, K * sigma / (2.0 * np.sqrt(d)))
    means = np.stack([-mu, mu])
    p = min(1.0, avg_within_class_degree * 2.0 / (num_nodes - 1))
    q = min(1.0, avg_between_class_degree * 2.0 / (num_nodes - 1))
    return sample_csbm(labels, means, sigma, p, q, seed=seed + 1)
