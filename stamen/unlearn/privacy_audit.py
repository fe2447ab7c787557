r"""One-run privacy auditing: membership guesses on canaries turned into a lower bound on epsilon.

Steinke, Nasr and Jagielski (NeurIPS 2023) audit a training run once. Each of :math:`m`
canaries is included in training by an independent fair coin :math:`S_i \in \{-1, +1\}`.
After training an auditor scores every canary (here: minus the final model's loss on the
canary's randomised label) and guesses *in* for the :math:`k_+` highest scores, *out* for
the :math:`k_-` lowest and abstains on the rest: :math:`r = k_+ + k_-` guesses, :math:`v`
of them right. If training is :math:`(\varepsilon, \delta)`-DP (canary in or out being the
neighbouring datasets), their Theorem 5.2 bounds the chance of :math:`v` or more right
guesses by

.. math::

    P[W \ge v] \le \beta + 2m\delta\,\alpha,\qquad
    \beta = P[\mathrm{Bin}(r, p_\varepsilon) \ge v],\quad
    \alpha = \max_{1 \le i \le v} \tfrac{1}{i} P[v - i \le \mathrm{Bin}(r, p_\varepsilon) < v],\quad
    p_\varepsilon = \frac{e^\varepsilon}{1 + e^\varepsilon}.

The right-hand side grows with :math:`\varepsilon`. The largest :math:`\varepsilon` for
which it stays below :math:`1 - c` (confidence :math:`c`, e.g. 0.95) is ruled out with
that confidence: training is *not* :math:`(\varepsilon', \delta)`-DP for any
:math:`\varepsilon'` below it. That :math:`\varepsilon` is the empirical lower bound; it
is 0 when the guesses are no better than chance could explain. A sound DP training run
keeps it below the accountant's :math:`\varepsilon` (with probability at least :math:`c`).

The canaries themselves are planted here too (:func:`plant_canaries`): nodes of a client's
training set whose label is replaced by a uniformly drawn other class and whose features are
scaled by a strength, each kept in training by a fair coin; :func:`canary_scores` is the
auditor's score. It is membership inference, beside :mod:`stamen.unlearn.mia`'s; the federated run
that trains on the planted data is ``stamen audit privacy`` (:mod:`stamen.cli.commands.audit`).

Plain functions on numbers, arrays and tensors: no Flower, nothing of Stamen's above floor 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats
from torch_geometric.data import Data

from stamen.models import NodeClassifier


@dataclass(frozen=True)
class Guesses:
    """The auditor's membership guesses: ``guesses`` (r) made, ``correct`` (v) of them right, of ``canaries`` (m)."""

    canaries: int
    guesses: int
    correct: int


def guess_membership(scores: np.ndarray, included: np.ndarray, k_in: int, k_out: int) -> Guesses:
    """Guess *in* for the ``k_in`` highest ``scores``, *out* for the ``k_out`` lowest; count right guesses.

    Ties are broken by the canaries' order (a stable sort), which is independent of membership.
    """
    scores, included = np.asarray(scores, dtype=float), np.asarray(included, dtype=bool)
    if scores.shape != included.shape or scores.ndim != 1:
        raise ValueError(f"scores {scores.shape} and memberships {included.shape} must be two equal 1-d arrays")
    if k_in < 0 or k_out < 0 or k_in + k_out > len(scores):
        raise ValueError(f"k_in={k_in} and k_out={k_out} must be >= 0 and add up to at most {len(scores)} canaries")
    order = np.argsort(-scores, kind="stable")
    guessed_in, guessed_out = order[:k_in], order[len(order) - k_out :]
    correct = int(included[guessed_in].sum()) + int((~included[guessed_out]).sum())
    return Guesses(canaries=len(scores), guesses=k_in + k_out, correct=correct)


def p_value(guesses: Guesses, epsilon: float, delta: float) -> float:
    r"""The bound on :math:`P[W \ge v]` of an :math:`(\varepsilon, \delta)`-DP run (Steinke et al., Theorem 5.2)."""
    m, r, v = guesses.canaries, guesses.guesses, guesses.correct
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= correct ({v}) <= guesses ({r}) <= canaries ({m})")
    if epsilon < 0 or not 0 <= delta <= 1:
        raise ValueError(f"need epsilon >= 0 (got {epsilon}) and delta in [0, 1] (got {delta})")
    p = 1.0 / (1.0 + math.exp(-epsilon))
    beta = float(stats.binom.sf(v - 1, r, p))
    below = stats.binom.pmf(np.arange(v - 1, -1, -1), r, p)  # P[Bin = v - 1], P[Bin = v - 2], ..., P[Bin = 0]
    alpha = float(np.max(np.cumsum(below) / np.arange(1, v + 1))) if v > 0 else 0.0
    return min(1.0, beta + 2 * m * delta * alpha)


def epsilon_lower_bound(guesses: Guesses, delta: float, confidence: float = 0.95, tolerance: float = 1e-6) -> float:
    """The largest epsilon that ``guesses`` rule out at ``confidence`` (0 when they rule out none).

    Bisection on the monotone :func:`p_value`; the answer errs low by at most ``tolerance``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    level = 1.0 - confidence
    if p_value(guesses, 0.0, delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(guesses, high, delta) < level:
        low, high = high, 2 * high
        if high > 1e3:  # every guess right on a huge scale: report the finite number reached
            return low
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (middle, high) if p_value(guesses, middle, delta) < level else (low, middle)
    return low


@dataclass(frozen=True)
class Canaries:
    """One client's canaries: their node indices in its subgraph and whether each was kept for training."""

    nodes: torch.Tensor
    included: np.ndarray


def plant_canaries(data: Data, count: int, strength: float, rng: np.random.Generator) -> tuple[Data, Canaries]:
    """A copy of ``data`` with ``count`` of its training nodes made canaries, each kept by a fair coin."""
    train = torch.nonzero(data.train_mask).flatten()
    if count > len(train):
        raise ValueError(
            f"{count} canaries per client is more than a client's {len(train)} training nodes; "
            f"lower it to at most {len(train)}"
        )
    planted = data.clone()
    nodes = train[torch.as_tensor(rng.choice(len(train), size=count, replace=False))]
    classes = int(data.num_classes)
    shift = torch.as_tensor(rng.integers(1, classes, size=count))
    planted.y = planted.y.clone()
    planted.y[nodes] = (planted.y[nodes] + shift) % classes  # another class, uniformly
    planted.x = planted.x.clone()
    planted.x[nodes] *= strength
    included = rng.random(count) < 0.5
    for mask in ("train_mask", "val_mask", "test_mask"):
        values = getattr(planted, mask).clone()
        values[nodes[torch.as_tensor(~included)]] = False
        setattr(planted, mask, values)
    return planted, Canaries(nodes, included)


@torch.no_grad()
def canary_scores(model: NodeClassifier, data: Data, canaries: Canaries) -> np.ndarray:
    """Minus the model's cross-entropy on each canary's (randomised) label: high means "looks trained on"."""
    model.eval()
    logits = model(data.x, data.edge_index)[canaries.nodes]
    return -torch.nn.functional.cross_entropy(logits, data.y[canaries.nodes], reduction="none").numpy()
