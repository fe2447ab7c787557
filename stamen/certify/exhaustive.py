r"""Exact certificates by exhaustive enumeration of flip sets, shared by all targets.

With :math:`m` labelled nodes and budget :math:`k` there are
:math:`N(m,k) = \sum_{j\le k}\binom{m}{j}` flip sets (1351 for :math:`m = 20`,
:math:`k = 3`). Retraining the SVM exactly (:class:`stamen.certify.svm.KernelSVM`, KKT
residual :math:`\le 10^{-10}`) on each of them gives the scores of *every* target
at once, so one sweep decides all targets, all budgets up to :math:`k` and the
collective certificate. The result is the same quantity the MILP computes (the
worst case over all admissible flip sets) obtained by definition, without a
solver: a target is certified for budget :math:`k` iff :math:`s_t p_t > 0` after
every flip set of size :math:`\le k` (the same rule the MILP optimum uses), and a
minimising flip set is returned as the counterexample.

Each retraining is warm-started from the dual solution of the flip set without its
last element (the sets are visited in lexicographic order, so that parent is always
known); the warm start changes only the speed, never the solution (the solver stops
on the KKT residual).

:func:`num_flip_sets` lets callers choose between this sweep and the per-target MILP
(``certify_samplewise(method="auto")`` enumerates when :math:`N(m,k)` is at most
``enumerate_limit``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from stamen.certify.svm import KernelSVM


def num_flip_sets(num_flippable: int, budget: int) -> int:
    """:math:`\\sum_{j\\le k}\\binom{m}{j}`: flip sets of size at most ``budget``."""
    return sum(comb(int(num_flippable), j) for j in range(0, max(int(budget), 0) + 1))


@dataclass
class Sweep:
    """Per flip-set size ``j`` (index 0..k): the per-target minimum of ``sign * score``,
    a flip set attaining it, and the largest number of targets one set of size ``j``
    changes (``sign * score <= 0``) with such a set."""

    clean: np.ndarray  # (T,) clean scores
    signs: np.ndarray  # (T,) +-1
    worst_signed: np.ndarray  # (k+1, T)
    argmin_sets: list[list[tuple[int, ...]]]  # [size][target]
    max_changed: np.ndarray  # (k+1,)
    max_changed_sets: list[tuple[int, ...]]
    retrains: int
    seconds: float

    def upto(self, budget: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
        """Worst ``sign * score`` over all sets of size ``<= budget`` and a minimiser per target."""
        rows = self.worst_signed[: budget + 1]
        pick = np.argmin(rows, axis=0)
        worst = rows[pick, np.arange(rows.shape[1])]
        return worst, [self.argmin_sets[j][t] for t, j in enumerate(pick)]

    def collective_upto(self, budget: int) -> tuple[int, tuple[int, ...]]:
        j = int(np.argmax(self.max_changed[: budget + 1]))
        return int(self.max_changed[j]), self.max_changed_sets[j]


def sweep(
    k_ll: np.ndarray,
    k_tl: np.ndarray,
    y: np.ndarray,
    c: float,
    budget: int,
    flippable: np.ndarray | None = None,
    clean_alpha: np.ndarray | None = None,
) -> Sweep:
    """Retrain on every flip set of size ``<= budget`` (allowed positions only)."""
    t0 = time.perf_counter()
    k_ll = np.asarray(k_ll, dtype=np.float64)
    k_tl = np.asarray(k_tl, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    m = len(y)
    allowed = list(range(m)) if flippable is None else [int(i) for i in np.flatnonzero(flippable)]
    budget = min(int(budget), len(allowed))
    clean_model = KernelSVM(c).fit(k_ll, y, alpha0=clean_alpha)
    clean = k_tl @ clean_model.dual_coef_
    signs = np.where(clean >= 0, 1.0, -1.0)
    n_t = k_tl.shape[0]
    worst = np.full((budget + 1, n_t), np.inf)
    argmin: list[list[tuple[int, ...]]] = [[() for _ in range(n_t)] for _ in range(budget + 1)]
    max_changed = np.zeros(budget + 1, dtype=np.int64)
    max_sets: list[tuple[int, ...]] = [() for _ in range(budget + 1)]
    worst[0] = signs * clean
    max_changed[0] = int(np.sum(worst[0] <= 0))
    alphas: dict[tuple[int, ...], np.ndarray] = {(): clean_model.alpha_}
    retrains = 0
    for size in range(1, budget + 1):
        keep = size < budget
        for flips in combinations(allowed, size):
            yy = y.copy()
            yy[list(flips)] *= -1.0
            model = KernelSVM(c).fit(k_ll, yy, alpha0=alphas.get(flips[:-1], clean_model.alpha_))
            retrains += 1
            if keep:
                alphas[flips] = model.alpha_
            signed = signs * (k_tl @ model.dual_coef_)
            better = signed < worst[size]
            if better.any():
                worst[size, better] = signed[better]
                for t in np.flatnonzero(better):
                    argmin[size][t] = flips
            changed = int(np.sum(signed <= 0))
            if changed > max_changed[size]:
                max_changed[size], max_sets[size] = changed, flips
        # sets of size `size - 1` are no longer needed as parents
        for key in [key for key in alphas if len(key) == size - 1 and size > 1]:
            del alphas[key]
    return Sweep(clean, signs, worst, argmin, max_changed, max_sets, retrains, time.perf_counter() - t0)
