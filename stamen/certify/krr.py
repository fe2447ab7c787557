r"""Kernel ridge regression (``--model krr``) and its exact label-flip certificates.

KRR predicts :math:`\mathbf{p} = \mathbf{K}_{T L}(\mathbf{K}_{LL} + \lambda\mathbf{I})^{-1}
\mathbf{Y} = \mathbf{B}\mathbf{Y}`, *linear* in the training labels, so the worst case
needs no MILP.

**Two classes** (:math:`y_j\in\{\pm1\}`): flipping :math:`j` changes the target's
signed score :math:`s_t p_t` by :math:`-2 s_t B_{tj} y_j`, independently of the other
flips. The worst case under :math:`k` flips takes the :math:`k` largest positive gains
:math:`g_j = 2 s_t B_{tj} y_j` (greedy is exact).

**Several classes** (one-hot :math:`\mathbf{Y}`, prediction :math:`a = \arg\max_c p_{tc}`):
the margin to a rival :math:`b`, :math:`p_{ta} - p_{tb} = \sum_j B_{tj}(Y_{ja} - Y_{jb})`,
is a sum of per-node terms. Relabelling node :math:`j` from :math:`o` to :math:`c`
changes it by :math:`B_{tj}[(\delta_{ca}-\delta_{oa}) - (\delta_{cb}-\delta_{ob})]`;
choosing at most one new label per node under a budget of :math:`k` nodes is a
multiple-choice knapsack with unit weights, solved exactly by taking each node's best
option and then the :math:`k` best nodes. The target is certified iff every rival's
worst margin stays positive.

The **collective** count (one flip set, many targets) is a small MILP because the
scores are linear in the flips.
"""

from __future__ import annotations

import time

import numpy as np
import pulp

from stamen.certify.outcome import MILPResult
from stamen.certify.solvers import SolverSpec, make_solver, read_status


def krr_weights(k_ll: np.ndarray, k_tl: np.ndarray, ridge: float) -> np.ndarray:
    r""":math:`\mathbf{B} = \mathbf{K}_{TL}(\mathbf{K}_{LL}+\lambda\mathbf{I})^{-1}`, shape ``(T, m)``."""
    if not (ridge > 0):
        raise ValueError(f"ridge must be > 0, got {ridge}")
    k_ll = np.asarray(k_ll, dtype=np.float64)
    a = k_ll + ridge * np.eye(k_ll.shape[0])
    return np.linalg.solve(a, np.asarray(k_tl, dtype=np.float64).T).T


class KernelRidge:
    """Kernel ridge regression on +-1 labels (binary) or one-hot labels (several classes)."""

    def __init__(self, ridge: float = 1.0):
        if not (ridge > 0):
            raise ValueError(f"ridge must be > 0, got {ridge}")
        self.ridge = float(ridge)

    def fit(self, k_ll: np.ndarray, targets: np.ndarray) -> KernelRidge:
        self.k_ll_ = np.asarray(k_ll, dtype=np.float64)
        self.targets_ = np.asarray(targets, dtype=np.float64)
        self.coef_ = np.linalg.solve(self.k_ll_ + self.ridge * np.eye(len(self.k_ll_)), self.targets_)
        return self

    def decision_function(self, k_tl: np.ndarray) -> np.ndarray:
        return np.asarray(k_tl, dtype=np.float64) @ self.coef_


def worst_case_binary(
    weights: np.ndarray, y: np.ndarray, budget: int, flippable: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, list[list[int]]]:
    """Exact worst-case scores of all targets under ``budget`` flips of +-1 labels.

    Returns ``(clean, worst, flips)``; ``worst`` is the score after the flips that push
    it furthest towards the other sign.
    """
    y = np.asarray(y, dtype=np.float64)
    clean = weights @ y
    sign = np.where(clean >= 0, 1.0, -1.0)
    gains = 2.0 * sign[:, None] * weights * y[None, :]
    if flippable is not None:
        gains[:, ~np.asarray(flippable, dtype=bool)] = -np.inf
    worst = clean.copy()
    chosen = []
    for t in range(len(clean)):
        order = np.argsort(-gains[t], kind="stable")[:budget]
        order = [int(j) for j in order if gains[t, j] > 0]
        worst[t] = clean[t] - sign[t] * gains[t, order].sum()
        chosen.append(sorted(order))
    return clean, worst, chosen


def worst_case_multiclass(
    weights: np.ndarray, labels: np.ndarray, num_classes: int, budget: int, flippable: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact worst margins ``p_a - p_b`` per target and rival class (``nan`` at ``a``).

    Returns ``(predicted, worst_margins)`` with shapes ``(T,)`` and ``(T, c)``.
    """
    labels = np.asarray(labels, dtype=np.int64)
    onehot = np.eye(num_classes)[labels]
    scores = weights @ onehot
    pred = np.argmax(scores, axis=1)
    allowed = np.ones(len(labels), bool) if flippable is None else np.asarray(flippable, dtype=bool)
    worst = np.full((len(pred), num_classes), np.nan)
    for t in range(len(pred)):
        a = pred[t]
        for b in range(num_classes):
            if b == a:
                continue
            margin = scores[t, a] - scores[t, b]
            # best change per node over its new labels c != o
            delta = np.zeros(len(labels))
            for j in np.flatnonzero(allowed):
                o = labels[j]
                best = 0.0
                for c in range(num_classes):
                    if c == o:
                        continue
                    d = weights[t, j] * ((int(c == a) - int(o == a)) - (int(c == b) - int(o == b)))
                    best = min(best, d)
                delta[j] = best
            worst[t, b] = margin + np.sort(delta)[:budget].sum()
    return pred, worst


def collective_binary(
    weights: np.ndarray,
    y: np.ndarray,
    budget: int,
    flippable: np.ndarray | None = None,
    spec: SolverSpec = SolverSpec(),
) -> MILPResult:
    """Largest number of targets whose sign one flip set of size ``<= budget`` changes (MILP).

    ``objective`` is the count (proven when ``status`` is ``OPTIMAL``), ``bound`` the
    solver's proven bound on it.
    """
    y = np.asarray(y, dtype=np.float64)
    clean = weights @ y
    sign = np.where(clean >= 0, 1.0, -1.0)
    allowed = np.ones(len(y), bool) if flippable is None else np.asarray(flippable, dtype=bool)
    prob = pulp.LpProblem("krr_collective", pulp.LpMaximize)
    f = {j: pulp.LpVariable(f"f{j}", cat=pulp.LpBinary) for j in np.flatnonzero(allowed)}
    count = []
    for t in range(len(clean)):
        ct = pulp.LpVariable(f"c{t}", cat=pulp.LpBinary)
        signed = sign[t] * clean[t] - pulp.lpSum(2.0 * sign[t] * weights[t, j] * y[j] * f[j] for j in f)
        big = abs(clean[t]) + 2.0 * np.abs(weights[t]).sum()
        prob += signed <= big * (1 - ct)
        count.append(ct)
    prob += pulp.lpSum(f.values()) <= budget
    prob.setObjective(pulp.lpSum(count))
    t0 = time.perf_counter()
    prob.solve(make_solver(spec, warm_start=False))
    out = read_status(prob, spec)
    flips = sorted(int(j) for j, v in f.items() if v.varValue is not None and v.varValue > 0.5)
    count = None if out.objective is None else float(round(out.objective))
    return MILPResult(out.status, count, out.bound, flips, time.perf_counter() - t0, out.raw)
