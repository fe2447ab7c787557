r"""Membership inference: did the model train on these nodes?

The attack is a logistic regression on per-node features of the model's output,
:math:`\phi = [\ell_{CE},\, H(\mathbf{p}),\, p_{(1)} \ge p_{(2)} \ge \dots \ge p_{(C)}]` (loss, entropy,
sorted softmax). It is fitted on *members* (the remaining training nodes :math:`D_r`)
versus *non-members* (held-out nodes the model never trained on), then scores
:math:`D_f` against a disjoint set of non-members. The AUC is the probability that a
forgotten node scores as more member-like than a non-member: about 0.5 when the
model holds no trace of :math:`D_f` beyond what generalisation gives.

:class:`LogisticRegression` is plain L2-regularised logistic regression fitted by
Newton's method (IRLS) in float64 on standardised features, with class-balanced
sample weights.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import rankdata
from torch import Tensor


def attack_features(logits: Tensor, labels: Tensor) -> np.ndarray:
    """``(n, 2 + C)`` features: cross-entropy, entropy, softmax sorted in decreasing order."""
    logits = logits.detach().to(torch.float64)
    log_p = torch.log_softmax(logits, dim=1)
    p = log_p.exp()
    loss = -log_p.gather(1, labels.view(-1, 1)).view(-1)
    entropy = -(p * log_p).sum(1)
    ranked = p.sort(dim=1, descending=True).values
    return torch.cat([loss[:, None], entropy[:, None], ranked], dim=1).numpy()


class LogisticRegression:
    """Binary L2-regularised logistic regression (Newton/IRLS), sklearn-like ``fit``/``decision_function``."""

    def __init__(self, l2: float = 1e-3, max_iter: int = 50, tol: float = 1e-10) -> None:
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, x: np.ndarray, y: np.ndarray) -> LogisticRegression:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        self.mean_ = x.mean(0)
        self.scale_ = x.std(0) + 1e-12
        z = np.hstack([(x - self.mean_) / self.scale_, np.ones((x.shape[0], 1))])
        positives = max(float(y.sum()), 1.0)
        negatives = max(float((1 - y).sum()), 1.0)
        weights = np.where(y > 0.5, 0.5 / positives, 0.5 / negatives)
        penalty = self.l2 * np.eye(z.shape[1])
        penalty[-1, -1] = 0.0
        w = np.zeros(z.shape[1])
        for _ in range(self.max_iter):
            p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -40, 40)))
            gradient = z.T @ (weights * (p - y)) + penalty @ w
            hessian = (z * (weights * p * (1 - p))[:, None]).T @ z + penalty + 1e-12 * np.eye(z.shape[1])
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if np.abs(step).max() < self.tol:
                break
        self.coef_ = w
        return self

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, dtype=np.float64) - self.mean_) / self.scale_
        return z @ self.coef_[:-1] + self.coef_[-1]

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.decision_function(x)))


def auc(positive_scores: np.ndarray, negative_scores: np.ndarray) -> float:
    """ROC AUC = P(positive > negative) + 0.5 P(tie), from ranks (Mann-Whitney U)."""
    pos = np.asarray(positive_scores, dtype=np.float64)
    neg = np.asarray(negative_scores, dtype=np.float64)
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    ranks = rankdata(np.concatenate([pos, neg]))
    u = ranks[: pos.size].sum() - pos.size * (pos.size + 1) / 2
    return float(u / (pos.size * neg.size))


def membership_auc(
    members: np.ndarray, train_non_members: np.ndarray, targets: np.ndarray, eval_non_members: np.ndarray
) -> float:
    """Fit the attack on ``members`` vs ``train_non_members``; AUC of ``targets`` vs ``eval_non_members``."""
    x = np.vstack([members, train_non_members])
    y = np.r_[np.ones(len(members)), np.zeros(len(train_non_members))]
    attack = LogisticRegression().fit(x, y)
    return auc(attack.decision_function(targets), attack.decision_function(eval_non_members))
