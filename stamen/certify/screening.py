r"""Deciding easy targets before any MILP: a sound bound and a concrete attack.

**Stability bound (proves "certified").** The primal of the bias-free SVM is
:math:`F(\mathbf{w}) = \frac12\lVert\mathbf{w}\rVert^2 + C\sum_i
\max(0, 1 - y_i\langle\mathbf{w}, \phi_i\rangle)`, 1-strongly convex. Flipping the
labels of a set :math:`S` changes it by
:math:`g(\mathbf{w}) = C\sum_{i\in S} r(y_i\langle\mathbf{w},\phi_i\rangle)` with
:math:`r(s) = \max(0, 1+s) - \max(0, 1-s)`, which is 2-Lipschitz, so :math:`g` is
:math:`L`-Lipschitz with :math:`L = 2C\sum_{i\in S}\sqrt{K_{ii}}`. Adding the two
strong-convexity inequalities at the clean and poisoned minimisers gives
:math:`\lVert\mathbf{w} - \mathbf{w}'\rVert^2 \le g(\mathbf{w}) - g(\mathbf{w}')
\le L\lVert\mathbf{w}-\mathbf{w}'\rVert`, hence

.. math::
    |p'_t - p_t| \le \sqrt{K_{tt}}\,\lVert\mathbf{w}-\mathbf{w}'\rVert
    \le 2C\sqrt{K_{tt}} \max_{|S|\le k}\sum_{i\in S}\sqrt{K_{ii}}.

A target whose clean score exceeds this radius in absolute value is certified for
budget :math:`k`. (Valid for any positive semi-definite kernel.)

**Greedy attack (proves "not certified").** Flip, one label at a time, the label
whose flip (followed by an exact retraining) moves the score furthest towards the
other sign; a flip set of size :math:`\le k` that changes the sign is a concrete
counterexample. Retrainings are memoised by flip set and shared across targets.
"""

from __future__ import annotations

import numpy as np

from stamen.certify.svm import KernelSVM


def stability_radius(
    k_ll_diag: np.ndarray, k_tt: np.ndarray, c: float, budget: int, flippable: np.ndarray | None = None
) -> np.ndarray:
    """Largest possible change of each target's score under ``budget`` flips (see above)."""
    roots = np.sqrt(np.maximum(np.asarray(k_ll_diag, dtype=np.float64), 0.0))
    if flippable is not None:
        roots = roots[np.asarray(flippable, dtype=bool)]
    top = np.sort(roots)[::-1][:budget].sum() if budget > 0 else 0.0
    return 2.0 * c * np.sqrt(np.maximum(np.asarray(k_tt, dtype=np.float64), 0.0)) * top


class RetrainCache:
    """Exact SVM retraining on flipped labels, memoised by flip set."""

    def __init__(self, k_ll: np.ndarray, k_tl: np.ndarray, y: np.ndarray, c: float):
        self.k_ll = np.asarray(k_ll, dtype=np.float64)
        self.k_tl = np.asarray(k_tl, dtype=np.float64)
        self.y = np.asarray(y, dtype=np.float64)
        self.c = c
        self.clean = KernelSVM(c).fit(self.k_ll, self.y)
        self._scores: dict[frozenset, np.ndarray] = {frozenset(): self.k_tl @ self.clean.dual_coef_}
        self.retrains = 0

    def scores(self, flips: frozenset) -> np.ndarray:
        """Scores of all targets after flipping the labels at positions ``flips``."""
        out = self._scores.get(flips)
        if out is None:
            y = self.y.copy()
            idx = np.fromiter(flips, dtype=np.int64)
            y[idx] = -y[idx]
            model = KernelSVM(self.c).fit(self.k_ll, y, alpha0=self.clean.alpha_)
            self.retrains += 1
            out = self.k_tl @ model.dual_coef_
            self._scores[flips] = out
        return out


def greedy_attack(
    cache: RetrainCache, target: int, sign: float, max_budget: int, flippable: np.ndarray | None = None
) -> tuple[int | None, frozenset, float]:
    """Greedy flips against ``target`` (position in the cache's target rows).

    Returns ``(size, flips, margin)``: the smallest number of greedy flips that made
    ``sign * score <= 0`` (``None`` if ``max_budget`` flips did not), the flip set and
    the final ``sign * score``.
    """
    m = cache.y.shape[0]
    allowed = np.ones(m, dtype=bool) if flippable is None else np.asarray(flippable, dtype=bool)
    flips: frozenset = frozenset()
    margin = sign * cache.scores(flips)[target]
    for step in range(1, max_budget + 1):
        best, best_set = None, None
        for j in np.flatnonzero(allowed):
            if j in flips:
                continue
            cand = flips | {int(j)}
            val = sign * cache.scores(cand)[target]
            if best is None or val < best:
                best, best_set = val, cand
        if best is None:
            break
        flips, margin = best_set, best
        if margin <= 0:
            return step, flips, margin
    return None, flips, margin
