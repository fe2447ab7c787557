r"""Link prediction's figures from scores: AUC, average precision and Hits@K.

With positive scores :math:`s^+_1..s^+_P` (edges) and negative ones :math:`s^-_1..s^-_N`
(non-edges):

- **AUC**, the probability that a random edge outscores a random non-edge, ties
  counting one half: :math:`\frac{1}{PN}\sum_{i,j} [s^+_i > s^-_j] + \frac12 [s^+_i = s^-_j]`,
  computed from average ranks (Mann-Whitney) in :math:`O((P+N)\log(P+N))`.
- **Average precision**: :math:`\sum_t (R_t - R_{t-1}) P_t` over the distinct score
  thresholds :math:`t` in decreasing order, with :math:`P_t, R_t` the precision and recall
  of calling every pair scored :math:`\ge t` an edge (scikit-learn's definition: tied
  scores enter together).
- **Hits@K** (OGB's ``ogbl`` definition): the share of edges scored strictly above the
  :math:`K`-th best non-edge. With fewer than :math:`K` non-edges there is no :math:`K`-th
  best one, and the figure is ``None`` (not computable): OGB's evaluator returns 1 there, a figure every
  model reaches, which Stamen never reports.

A figure of an empty side (no edges or no non-edges) is ``None``: there is nothing to rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinkFigures:
    """One evaluation's figures and the counts behind them (``None``: not defined, see the module docstring)."""

    auc: float | None
    ap: float | None
    hits: float | None
    positives: int
    negatives: int


def link_figures(positive: np.ndarray, negative: np.ndarray, k: int) -> LinkFigures:
    """AUC, average precision and Hits@``k`` of edge scores ``positive`` against non-edge scores ``negative``."""
    positive, negative = np.asarray(positive, dtype=np.float64), np.asarray(negative, dtype=np.float64)
    if positive.size == 0 or negative.size == 0:
        return LinkFigures(None, None, None, int(positive.size), int(negative.size))
    return LinkFigures(
        auc(positive, negative), average_precision(positive, negative), hits_at_k(positive, negative, k),
        int(positive.size), int(negative.size),
    )  # fmt: skip


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """Area under the ROC curve from average ranks (ties: one half)."""
    scores = np.concatenate([positive, negative])
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(scores.size, dtype=np.float64)
    ordered = scores[order]
    # average 1-based rank of each run of ties
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], scores.size]
    average = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(average, ends - starts)
    p, n = positive.size, negative.size
    return float((ranks[:p].sum() - p * (p + 1) / 2.0) / (p * n))


def average_precision(positive: np.ndarray, negative: np.ndarray) -> float:
    """Average precision over the distinct thresholds, tied scores entering together."""
    scores = np.concatenate([positive, negative])
    labels = np.concatenate([np.ones(positive.size), np.zeros(negative.size)])
    order = np.argsort(-scores, kind="mergesort")
    scores, labels = scores[order], labels[order]
    last = np.r_[np.flatnonzero(scores[1:] != scores[:-1]), scores.size - 1]  # the last index of each threshold
    true_positives = np.cumsum(labels)[last]
    called = last + 1
    precision = true_positives / called
    recall = true_positives / positive.size
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def hits_at_k(positive: np.ndarray, negative: np.ndarray, k: int) -> float | None:
    """Share of ``positive`` strictly above the ``k``-th highest of ``negative`` (None when there are fewer than
    ``k``: not computable)."""
    if negative.size < k:
        return None
    threshold = np.partition(negative, negative.size - k)[negative.size - k]
    return float(np.mean(positive > threshold))
