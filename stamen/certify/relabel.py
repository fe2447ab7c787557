r"""Multi-class (one-vs-all) label poisoning without a MILP: exact retraining, sweeps, attacks.

A relabelling :math:`R` moves each node :math:`i\in R` of the labelled set from its class
:math:`y_i` to another class :math:`R(i)`, :math:`|R|\le k`. The one-vs-all SVM of class
:math:`c` sees binary labels :math:`y^{(c)}_j = \pm1`; :math:`R` flips exactly the binary
labels of

.. math::
    S_c(R) = \{\, i\in R : y_i = c \text{ or } R(i) = c \,\},

so class :math:`c`'s retrained scores depend on :math:`S_c(R)` alone, and every
:math:`S_c(R)` has at most :math:`k` elements. :class:`RelabelCache` retrains each class's
bias-free SVM (:class:`stamen.certify.svm.KernelSVM`, KKT residual :math:`\le 10^{-10}`, warm
started from the clean dual, so a value never depends on what was computed before) once
per distinct :math:`(c, S_c)` and memoises its dual coefficients. With clean prediction
:math:`a` of a target :math:`t`, the margin after :math:`R` is

.. math::
    \mu_t(R) = p^{a}_t(S_a(R)) - \max_{b\ne a} p^{b}_t(S_b(R)),

and the prediction is certified for budget :math:`k` iff :math:`\mu_t(R) > 0` for every
:math:`|R|\le k` (the rule of :class:`stamen.certify.milp_sample.PairwiseMILP`: a worst-case
pairwise margin :math:`\le 0` is "not certified").

* :func:`sweep` enumerates every relabelling of size :math:`\le k` (there are
  :math:`\sum_{j\le k}\binom{m}{j}(c-1)^j`, 421 for :math:`m = 70`, :math:`c = 7`,
  :math:`k = 1`) for many targets at once: the same worst case the MILP computes, by
  definition. A target broken at a smaller size is not evaluated at larger ones (it is
  not certified for every larger budget).
* :func:`greedy` grows one relabelling per target, each step taking the single move
  that lowers :math:`\mu_t` most; a relabelling with :math:`\mu_t\le0` is a counterexample.
* :func:`verified_margin` retrains all one-vs-all SVMs from scratch on the relabelled
  labels: a counterexample counts only when this fresh retraining confirms
  :math:`\mu_t\le0`, so an attack's proof never rests on the cache.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import combinations, product
from math import comb

import numpy as np

from stamen.certify.svm import KernelSVM, OneVsAllSVM

Relabelling = tuple[tuple[int, int], ...]  # sorted (position, new class) pairs


def num_relabellings(num_flippable: int, budget: int, num_classes: int) -> int:
    r""":math:`\sum_{j\le k}\binom{m}{j}(c-1)^j`: relabellings of at most ``budget`` nodes."""
    return sum(comb(int(num_flippable), j) * (num_classes - 1) ** j for j in range(max(int(budget), 0) + 1))


def margin_of(scores: np.ndarray, a: int) -> float:
    """``scores[a]`` minus the largest other score (one target's row of class scores)."""
    others = np.delete(scores, a)
    return float(scores[a] - np.max(others))


class RelabelCache:
    """One-vs-all SVMs retrained per class on flipped binary labels, memoised by ``(class, S_c)``."""

    def __init__(self, k_ll: np.ndarray, k_tl: np.ndarray, labels: np.ndarray, c: float, num_classes: int):
        self.k_ll = np.asarray(k_ll, dtype=np.float64)
        self.k_tl = np.asarray(k_tl, dtype=np.float64)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.c = float(c)
        self.num_classes = int(num_classes)
        self.clean = OneVsAllSVM(c).fit(self.k_ll, self.labels, self.num_classes)
        self._y = [np.where(self.labels == cl, 1.0, -1.0) for cl in range(self.num_classes)]
        self._coef: dict[tuple[int, frozenset[int]], np.ndarray] = {
            (cl, frozenset()): model.dual_coef_ for cl, model in enumerate(self.clean.models_)
        }
        self.retrains = 0

    def coef(self, cl: int, flips: frozenset[int]) -> np.ndarray:
        """Dual coefficients of class ``cl``'s SVM with the binary labels at ``flips`` flipped."""
        out = self._coef.get((cl, flips))
        if out is None:
            y = self._y[cl].copy()
            y[list(flips)] *= -1.0
            model = KernelSVM(self.c).fit(self.k_ll, y, alpha0=self.clean.models_[cl].alpha_)
            self.retrains += 1
            out = self._coef[(cl, flips)] = model.dual_coef_
        return out

    def class_flips(self, relabel: dict[int, int], cl: int) -> frozenset[int]:
        """:math:`S_c(R)`: the positions whose binary label of class ``cl`` ``relabel`` flips."""
        return frozenset(i for i, new in relabel.items() if new == cl or self.labels[i] == cl)

    def scores(self, relabel: dict[int, int], t: int) -> np.ndarray:
        """Class scores of target row ``t`` after ``relabel`` (position -> new class)."""
        row = self.k_tl[t]
        return np.array([row @ self.coef(cl, self.class_flips(relabel, cl)) for cl in range(self.num_classes)])


@dataclass
class SweepResult:
    """Per budget ``k`` (``1..budget``): each swept row's worst margin over ``|R| <= k`` and a minimiser.

    Rows broken at a smaller budget keep that budget's values (they are not certified at ``k``).
    """

    worst: dict[int, np.ndarray]  # k -> (rows,) worst margin over |R| <= k
    argmin: dict[int, list[Relabelling]]  # k -> minimising relabelling per row
    relabellings: int
    seconds: float


def sweep(cache: RelabelCache, rows: np.ndarray, budget: int, flippable: np.ndarray | None = None) -> SweepResult:
    """Every relabelling of at most ``budget`` allowed positions against the target ``rows`` (see above)."""
    t0 = time.perf_counter()
    rows = np.asarray(rows, dtype=np.int64)
    m, nc = len(cache.labels), cache.num_classes
    allowed = range(m) if flippable is None else [int(i) for i in np.flatnonzero(flippable)]
    k_rows = cache.k_tl[rows]
    clean = k_rows @ np.stack([cache.coef(cl, frozenset()) for cl in range(nc)], axis=1)
    a = np.argmax(clean, axis=1)
    columns: dict[tuple[int, frozenset[int]], np.ndarray] = {}

    def column(cl: int, flips: frozenset[int]) -> np.ndarray:
        key = (cl, flips)
        if key not in columns:
            columns[key] = k_rows @ cache.coef(cl, flips)
        return columns[key]

    best = _margins(clean, a)
    best_set: list[Relabelling] = [() for _ in rows]
    worst: dict[int, np.ndarray] = {}
    argmin: dict[int, list[Relabelling]] = {}
    live = np.flatnonzero(best > 0)  # rows not yet broken
    count = 0
    for size in range(1, budget + 1):
        for nodes in combinations(allowed, size):
            choices = [[cl for cl in range(nc) if cl != cache.labels[i]] for i in nodes]
            for news in product(*choices):
                if live.size == 0:
                    break
                count += 1
                relabel = dict(zip(nodes, news))
                touched = {int(cache.labels[i]) for i in nodes} | set(news)
                s = clean[live].copy()
                for cl in touched:
                    s[:, cl] = column(cl, cache.class_flips(relabel, cl))[live]
                mu = _margins(s, a[live])
                better = mu < best[live]
                for j in np.flatnonzero(better):
                    best[live[j]] = mu[j]
                    best_set[live[j]] = tuple(sorted(relabel.items()))
        worst[size] = best.copy()
        argmin[size] = list(best_set)
        live = live[best[live] > 0]
    return SweepResult(worst, argmin, count, time.perf_counter() - t0)


def _margins(scores: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Row-wise ``scores[a] - max(other scores)``."""
    idx = np.arange(scores.shape[0])
    own = scores[idx, a]
    rest = scores.copy()
    rest[idx, a] = -np.inf
    return own - rest.max(axis=1)


def greedy(
    cache: RelabelCache, t: int, a: int, max_budget: int, flippable: np.ndarray | None = None
) -> tuple[int | None, Relabelling, float]:
    """Greedy relabelling against target row ``t`` (clean prediction ``a``).

    Returns ``(size, relabelling, margin)``: the number of moves after which the margin
    was ``<= 0`` (``None`` if ``max_budget`` moves did not get there), the relabelling and
    its margin (from the cache; :func:`verified_margin` confirms a counterexample).
    """
    m, nc = len(cache.labels), cache.num_classes
    allowed = [int(i) for i in (range(m) if flippable is None else np.flatnonzero(flippable))]
    relabel: dict[int, int] = {}
    margin = margin_of(cache.scores(relabel, t), a)
    row = cache.k_tl[t]
    for step in range(1, max_budget + 1):
        base = cache.scores(relabel, t)
        best, best_move = None, None
        for i in allowed:
            if i in relabel:
                continue
            old = int(cache.labels[i])
            s_old = row @ cache.coef(old, cache.class_flips(relabel, old) | {i})
            for new in range(nc):
                if new == old:
                    continue
                s = base.copy()
                s[old] = s_old
                s[new] = row @ cache.coef(new, cache.class_flips(relabel, new) | {i})
                val = margin_of(s, a)
                if best is None or val < best:
                    best, best_move = val, (i, new)
        if best_move is None:
            break
        relabel[best_move[0]] = best_move[1]
        margin = best
        if margin <= 0:
            return step, tuple(sorted(relabel.items())), margin
    return None, tuple(sorted(relabel.items())), margin


def verified_margin(
    k_ll: np.ndarray, k_t: np.ndarray, labels: np.ndarray, c: float, num_classes: int, a: int, relabel: Relabelling
) -> float:
    """Margin of class ``a`` for the target row ``k_t`` after a fresh one-vs-all retraining on ``relabel``."""
    new = np.asarray(labels, dtype=np.int64).copy()
    for i, cl in relabel:
        new[i] = cl
    scores = OneVsAllSVM(c).fit(k_ll, new, num_classes).decision_function(np.asarray(k_t)[None, :])[0]
    return margin_of(scores, a)
