r"""Bias-free kernel support vector machines, solved to high precision.

The dual of the soft-margin SVM without bias is a box-constrained QP,

.. math::
    \min_{\boldsymbol\alpha}\; \tfrac12 \boldsymbol\alpha^\top \mathbf{Q}\boldsymbol\alpha
    - \mathbf{1}^\top\boldsymbol\alpha
    \quad\text{s.t.}\quad 0 \le \alpha_i \le C, \qquad
    \mathbf{Q} = (\mathbf{y}\mathbf{y}^\top)\odot\mathbf{K},

and the prediction for a node :math:`t` is
:math:`p_t = \sum_j y_j\alpha_j K_{tj}`. Its KKT conditions, with gradient
:math:`\mathbf{g} = \mathbf{Q}\boldsymbol\alpha - \mathbf{1}`, are
:math:`g_i \ge 0` where :math:`\alpha_i = 0`, :math:`g_i \le 0` where
:math:`\alpha_i = C` and :math:`g_i = 0` in between. Without the bias there is no
equality constraint, so cyclic coordinate descent is exact per coordinate; once the
active set settles a Newton step on the free coordinates finishes the solve. The
solution is accepted when the KKT residual is below ``tol`` (default ``1e-10``).
Predictions are unique even where :math:`\mathbf{K}` is singular (the primal is
strictly convex in the weight vector).
"""

from __future__ import annotations

import numpy as np


def kkt_residual(q: np.ndarray, alpha: np.ndarray, c: float) -> float:
    """Largest violation of the box-QP KKT conditions at ``alpha`` (0 at the optimum)."""
    g = q @ alpha - 1.0
    return _violation(alpha, g, c)


def _violation(alpha: np.ndarray, g: np.ndarray, c: float) -> float:
    bound = max(float(np.max(-alpha, initial=0.0)), float(np.max(alpha - c, initial=0.0)))
    at_zero = alpha <= 0.0
    at_c = alpha >= c
    free = ~(at_zero | at_c)
    v = 0.0
    if at_zero.any():
        v = max(v, float(np.max(-g[at_zero])))
    if at_c.any():
        v = max(v, float(np.max(g[at_c])))
    if free.any():
        v = max(v, float(np.max(np.abs(g[free]))))
    return max(v, bound)


def solve_box_qp(
    q: np.ndarray,
    c: float,
    alpha0: np.ndarray | None = None,
    tol: float = 1e-10,
    max_sweeps: int = 200000,
) -> np.ndarray:
    r"""Solve :math:`\min \frac12\alpha^\top Q\alpha - 1^\top\alpha`, :math:`0\le\alpha\le C`.

    Args:
        q: positive semi-definite matrix, shape ``(m, m)``.
        c: box bound :math:`C > 0`.
        alpha0: optional warm start (clipped to the box).
        tol: required KKT residual.
        max_sweeps: cap on coordinate-descent sweeps.

    Raises:
        RuntimeError: if the KKT residual does not reach ``tol``.
    """
    q = np.asarray(q, dtype=np.float64)
    m = q.shape[0]
    alpha = np.zeros(m) if alpha0 is None else np.clip(np.asarray(alpha0, dtype=np.float64), 0.0, c)
    if m == 0:
        return alpha
    g = q @ alpha - 1.0
    diag = np.diag(q).copy()
    qt = np.ascontiguousarray(q.T)
    best = _violation(alpha, g, c)
    sweep = 0
    while best > tol and sweep < max_sweeps:
        for i in range(m):
            if diag[i] > 0:
                new = min(max(alpha[i] - g[i] / diag[i], 0.0), c)
            else:
                new = c if g[i] < 0 else (0.0 if g[i] > 0 else alpha[i])
            delta = new - alpha[i]
            if delta != 0.0:
                alpha[i] = new
                g += delta * qt[i]
        sweep += 1
        if sweep % 3 == 0 or sweep < 3:
            polished = _newton_polish(q, alpha, g, c)
            if polished is not None:
                alpha, g = polished
        best = _violation(alpha, g, c)
    if best > tol:
        raise RuntimeError(f"SVM dual did not converge: KKT residual {best:.3g} > {tol:g}")
    return alpha


def _newton_polish(q, alpha, g, c):
    """Exact solve on the current free set; returned only if it is feasible and better."""
    eps = 1e-12 * max(c, 1.0)
    at_c = alpha >= c - eps
    at_zero = alpha <= eps
    free = ~(at_c | at_zero)
    trial = np.where(at_c, c, np.where(at_zero, 0.0, alpha))
    if free.any():
        rhs = 1.0 - q[np.ix_(free, at_c)] @ trial[at_c]
        sol, *_ = np.linalg.lstsq(q[np.ix_(free, free)], rhs, rcond=1e-14)
        if np.any(sol < 0.0) or np.any(sol > c):
            return None
        trial[free] = sol
    g_trial = q @ trial - 1.0
    # accept only a point that is no worse in objective (so coordinate descent keeps
    # converging) and better in KKT residual
    f_old = 0.5 * alpha @ g - 0.5 * alpha.sum()
    f_new = 0.5 * trial @ g_trial - 0.5 * trial.sum()
    if f_new <= f_old + 1e-15 * max(1.0, abs(f_old)) and _violation(trial, g_trial, c) < _violation(alpha, g, c):
        return trial, g_trial
    return None


def _check_kernel_labels(k: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k, dtype=np.float64)
    y = np.asarray(y)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise ValueError(f"training kernel must be square, got shape {k.shape}")
    if y.ndim != 1 or y.shape[0] != k.shape[0]:
        raise ValueError(f"need one label per kernel row: kernel {k.shape}, labels {y.shape}")
    if not np.all(np.isfinite(k)):
        raise ValueError("training kernel contains NaN or inf")
    return k, y


class KernelSVM:
    """Binary bias-free kernel SVM with labels in ``{-1, +1}`` (sklearn-like).

    Args:
        C: box bound of the dual (larger means less regularisation).
        tol: KKT residual the dual solve must reach.
    """

    def __init__(self, C: float = 1.0, tol: float = 1e-10):
        if not (np.isfinite(C) and C > 0):
            raise ValueError(f"C must be a positive number, got {C}")
        self.C = float(C)
        self.tol = tol

    def fit(self, k_train: np.ndarray, y: np.ndarray, alpha0: np.ndarray | None = None) -> KernelSVM:
        """Fit on the labelled kernel block ``k_train`` (m x m) and labels ``y`` (+-1)."""
        k, y = _check_kernel_labels(k_train, y)
        if not np.all(np.isin(y, (-1, 1))):
            raise ValueError("binary SVM labels must be -1 or +1")
        y = y.astype(np.float64)
        self.y_ = y
        q = (y[:, None] * y[None, :]) * k
        self.alpha_ = solve_box_qp(q, self.C, alpha0=alpha0, tol=self.tol)
        self.dual_coef_ = y * self.alpha_
        self.kkt_residual_ = kkt_residual(q, self.alpha_, self.C)
        return self

    def decision_function(self, k_test_train: np.ndarray) -> np.ndarray:
        r"""Scores :math:`p_t = \sum_j y_j\alpha_j K_{tj}` for rows of ``k_test_train`` (T x m)."""
        k = np.asarray(k_test_train, dtype=np.float64)
        if k.ndim != 2 or k.shape[1] != self.alpha_.shape[0]:
            raise ValueError(f"test kernel must have {self.alpha_.shape[0]} columns, got shape {k.shape}")
        return k @ self.dual_coef_

    def predict(self, k_test_train: np.ndarray) -> np.ndarray:
        """Labels in ``{-1, +1}`` (a zero score is reported as +1)."""
        return np.where(self.decision_function(k_test_train) >= 0, 1, -1)


class OneVsAllSVM:
    """One bias-free binary SVM per class; predicts the class with the largest score.

    Labels are class indices ``0..c-1``; class ``c`` is trained with
    :math:`y^{(c)}_i = +1` if node :math:`i` has label ``c`` and ``-1`` otherwise.
    """

    def __init__(self, C: float = 1.0, tol: float = 1e-10):
        self.C = float(C)
        self.tol = tol

    def fit(self, k_train: np.ndarray, labels: np.ndarray, num_classes: int | None = None) -> OneVsAllSVM:
        k, labels = _check_kernel_labels(k_train, labels)
        labels = labels.astype(np.int64)
        self.num_classes_ = int(num_classes if num_classes is not None else labels.max() + 1)
        if labels.min() < 0 or labels.max() >= self.num_classes_:
            raise ValueError(f"labels must lie in 0..{self.num_classes_ - 1}")
        self.models_ = [
            KernelSVM(self.C, self.tol).fit(k, np.where(labels == c, 1, -1)) for c in range(self.num_classes_)
        ]
        return self

    def decision_function(self, k_test_train: np.ndarray) -> np.ndarray:
        """Scores, shape ``(T, c)``."""
        return np.stack([m.decision_function(k_test_train) for m in self.models_], axis=1)

    def predict(self, k_test_train: np.ndarray) -> np.ndarray:
        return np.argmax(self.decision_function(k_test_train), axis=1)


def stratified_folds(labels: np.ndarray, folds: int, seed: int) -> list[np.ndarray]:
    """Split positions ``0..m-1`` into ``folds`` groups with balanced classes."""
    rng = np.random.default_rng(seed)
    out: list[list[int]] = [[] for _ in range(folds)]
    offset = 0
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        for pos, idx in enumerate(members):
            out[(pos + offset) % folds].append(int(idx))
        offset += len(members)
    return [np.array(sorted(f), dtype=np.int64) for f in out]


def select_C(
    k_train: np.ndarray,
    labels: np.ndarray,
    candidates: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0, 10.0),
    folds: int = 4,
    seed: int = 0,
) -> tuple[float, dict[float, float]]:
    """Pick C by stratified ``folds``-fold cross-validation accuracy (ties: smaller C).

    ``labels`` are +-1 (binary) or class indices (one-vs-all). Returns the best C and
    the mean validation accuracy of each candidate.
    """
    k, labels = _check_kernel_labels(k_train, labels)
    binary = set(np.unique(labels).tolist()) <= {-1, 1}
    folds = max(2, min(folds, int(np.min(np.unique(labels, return_counts=True)[1]))))
    groups = stratified_folds(labels, folds, seed)
    scores: dict[float, float] = {}
    for c in candidates:
        accs = []
        for g in groups:
            trn = np.setdiff1d(np.arange(len(labels)), g)
            model = KernelSVM(c) if binary else OneVsAllSVM(c)
            if binary:
                model.fit(k[np.ix_(trn, trn)], labels[trn])
            else:
                model.fit(k[np.ix_(trn, trn)], labels[trn], num_classes=int(labels.max()) + 1)
            accs.append(float(np.mean(model.predict(k[np.ix_(g, trn)]) == labels[g])))
        scores[float(c)] = float(np.mean(accs))
    best = max(scores, key=lambda c: (scores[c], -c))
    return best, scores
