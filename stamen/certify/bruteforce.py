"""Exhaustive label-flip attacks: retrain on every flip set (the oracle for small m).

Used by the tests to check the MILP and kernel-regression certificates. The number
of retrainings is :math:`\\sum_{j\\le k}\\binom{m}{j}`, so keep ``m <= 12``, ``k <= 3``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import combinations

import numpy as np

from stamen.certify.svm import KernelSVM, OneVsAllSVM


def flip_sets(m: int, budget: int, flippable: np.ndarray | None = None) -> Iterator[tuple[int, ...]]:
    """Every subset of at most ``budget`` allowed positions (the empty set first)."""
    allowed = list(range(m)) if flippable is None else [int(i) for i in np.flatnonzero(flippable)]
    for size in range(budget + 1):
        yield from combinations(allowed, size)


def all_scores(
    k_ll: np.ndarray,
    k_tl: np.ndarray,
    y: np.ndarray,
    c: float,
    budget: int,
    flippable: np.ndarray | None = None,
    model: str = "svm",
    ridge: float = 1.0,
) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Scores of every target (columns) after every flip set (rows), binary labels +-1."""
    sets, rows = [], []
    y = np.asarray(y, dtype=np.float64)
    for flips in flip_sets(len(y), budget, flippable):
        yy = y.copy()
        yy[list(flips)] *= -1
        if model == "svm":
            coef = KernelSVM(c).fit(k_ll, yy).dual_coef_
        else:
            coef = np.linalg.solve(k_ll + ridge * np.eye(len(y)), yy)
        sets.append(flips)
        rows.append(np.asarray(k_tl) @ coef)
    return sets, np.array(rows)


def worst_case(sets, scores, signs) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Per target, the minimum of ``sign * score`` over the enumerated flip sets (signed back)."""
    signed = scores * np.asarray(signs)[None, :]
    best = np.argmin(signed, axis=0)
    worst = scores[best, np.arange(scores.shape[1])]
    return worst, [sets[b] for b in best]


def collective_count(scores, signs) -> int:
    """Largest number of targets with ``sign * score <= 0`` under one flip set."""
    signed = scores * np.asarray(signs)[None, :]
    return int(np.max(np.sum(signed <= 0, axis=1)))


def multiclass_worst_margins(
    k_ll: np.ndarray,
    k_t: np.ndarray,
    labels: np.ndarray,
    c: float,
    budget: int,
    num_classes: int,
    predict: Callable | None = None,
) -> np.ndarray:
    """For one target, min over relabellings (<= budget) of ``p_a - p_b`` per rival ``b``."""
    labels = np.asarray(labels, dtype=np.int64)
    clean = OneVsAllSVM(c).fit(k_ll, labels, num_classes).decision_function(k_t[None, :])[0]
    a = int(np.argmax(clean))
    best = np.full(num_classes, np.inf)
    m = len(labels)
    for size in range(budget + 1):
        for pos in combinations(range(m), size):
            for new in _relabelings(labels, pos, num_classes):
                p = OneVsAllSVM(c).fit(k_ll, new, num_classes).decision_function(k_t[None, :])[0]
                best = np.minimum(best, p[a] - p)
    best[a] = np.nan
    return best


def _relabelings(labels, positions, num_classes):
    if not positions:
        yield labels
        return
    i, rest = positions[0], positions[1:]
    for c in range(num_classes):
        if c == labels[i]:
            continue
        new = labels.copy()
        new[i] = c
        yield from _relabelings(new, rest, num_classes)
