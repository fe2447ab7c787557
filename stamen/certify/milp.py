r"""Exact label-flip certificates for kernel SVMs as MILPs: the shared KKT formulation.

The adversary flips up to :math:`k` of the :math:`m` training labels
:math:`\mathbf{y}\in\{\pm1\}^m`. Because the bias-free SVM dual is a convex box QP,
its KKT conditions characterise the trained model exactly, and the bilevel attack

.. math::
    \min_{\tilde{\mathbf{y}},\,\boldsymbol\alpha}\; s_t\, p_t
    \quad\text{s.t.}\quad \lVert\tilde{\mathbf{y}}-\mathbf{y}\rVert_0\le k,\quad
    \boldsymbol\alpha \in \arg\min_{0\le\boldsymbol\alpha\le C}
        \tfrac12\boldsymbol\alpha^\top(\tilde{\mathbf{y}}\tilde{\mathbf{y}}^\top\odot\mathbf{K})
        \boldsymbol\alpha - \mathbf{1}^\top\boldsymbol\alpha

(:math:`s_t` the sign of the clean score) becomes a single-level MILP. With
:math:`\tilde y_i = 2b_i - 1` (:math:`b_i` binary) and the scaled variables
:math:`a_i = \alpha_i/C\in[0,1]`, :math:`\zeta_i = \tilde y_i a_i\in[-1,1]`:

* products with a label are linearised exactly:
  :math:`-a_i\le\zeta_i\le a_i`, :math:`\zeta_i\ge a_i - 2(1-b_i)`,
  :math:`\zeta_i\le -a_i + 2b_i`;
* the KKT stationarity uses the compact :math:`h_i = \tilde y_i (\mathbf{K}\mathbf{z})_i`
  (:math:`\mathbf{z} = C\boldsymbol\zeta`) instead of an :math:`m\times m` product
  matrix: with :math:`w_i = C\sum_j K_{ij}\zeta_j`, :math:`|w_i|\le R_i =
  C\sum_j|K_{ij}|`, :math:`|h_i - w_i|\le 2R_i(1-b_i)`, :math:`|h_i + w_i|\le 2R_ib_i`,
  and :math:`h_i - 1 = u_i - v_i`, :math:`u, v\ge 0`;
* complementarity :math:`u_i\alpha_i = 0`, :math:`v_i(C-\alpha_i) = 0` uses binaries
  :math:`s_i, t_i` and big-M values derived from the kernel (never a fixed constant):
  :math:`u_i\le M^u_i s_i`, :math:`a_i\le 1-s_i`, :math:`v_i\le M^v_i t_i`,
  :math:`a_i\ge t_i`, :math:`s_i+t_i\le1`, with
  :math:`M^u_i = \max(C\sum_j|Q_{ij}| - 1, 0)` and :math:`M^v_i = C\sum_j|Q_{ij}| + 1`
  (:math:`|Q_{ij}| = |K_{ij}|`), valid because :math:`u_i = \max(h_i-1,0)` and
  :math:`v_i = \max(1-h_i, 0)` with :math:`|h_i|\le R_i`;
* the prediction :math:`p_t = C\sum_j K_{tj}\zeta_j` is linear;
* every :math:`R_i` above is in fact :math:`H_i = \min(C\sum_j|K_{ij}|,\sqrt{CmK_{ii}})`
  (:func:`h_bounds`): by strong duality :math:`\lVert\mathbf{w}\rVert^2 =
  \sum_j\alpha_j - C\sum_j\xi_j \le Cm` for *every* label vector, so the bound
  cuts no KKT point and the MILP stays exact; for large :math:`C` it shrinks the
  big-M values from :math:`O(Cm)` to :math:`O(\sqrt{Cm})`.

The SVM prediction is unique for every label vector (the primal is strictly convex),
so the MILP optimum is the exact worst-case score. Sample-wise certificates solve it
per target (optimisation version: the worst-case score; decision version: add
:math:`s_tp_t\le0` and certify on infeasibility). The collective certificate
maximises the number of targets :math:`t` with :math:`s_tp_t\le0` over one shared
flip set (binaries :math:`c_t`, :math:`s_tp_t\le B_t(1-c_t)`, :math:`B_t =
C\sum_j|K_{tj}|`). The multi-class certificate (one-vs-all SVMs) shares one-hot
perturbed labels between the predicted class :math:`a` and each rival :math:`b`:
:math:`\ell^a_i+\ell^b_i\le1`, and minimises :math:`p^a_t-p^b_t`; labels moved to a
third class make both binary labels :math:`-1`. A federated attacker that controls one
client may flip only that client's labelled nodes (``flippable``).

This module holds the blocks every formulation shares (the KKT system of one label
vector, the big-M bounds, the budget constraint); the formulations are
:class:`stamen.certify.milp_sample.SampleWiseMILP`, :class:`stamen.certify.milp_sample.PairwiseMILP`
and :class:`stamen.certify.milp_collective.CollectiveMILP`, and :mod:`stamen.certify.cascade`
decides which targets need them at all. Only proofs count (:mod:`stamen.certify.outcome`).
"""

from __future__ import annotations

import numpy as np
import pulp


def check_inputs(k_ll, y, c: float, flippable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(k_ll, y, flippable)``; ``flippable=None`` means every label."""
    k_ll = np.asarray(k_ll, dtype=np.float64)
    y = np.asarray(y)
    m = k_ll.shape[0]
    if k_ll.ndim != 2 or k_ll.shape != (m, m):
        raise ValueError(f"labelled kernel block must be square, got {k_ll.shape}")
    if y.shape != (m,):
        raise ValueError(f"need {m} labels, got shape {y.shape}")
    if not (c > 0):
        raise ValueError(f"C must be > 0, got {c}")
    if flippable is None:
        flippable = np.ones(m, dtype=bool)
    flippable = np.asarray(flippable, dtype=bool)
    if flippable.shape != (m,):
        raise ValueError(f"flippable mask must have {m} entries, got {flippable.shape}")
    return k_ll, y, flippable


TIGHT_BOUNDS = True


def h_bounds(k_ll: np.ndarray, c: float) -> np.ndarray:
    r"""Bound on :math:`|f(x_i)| = |(\mathbf{K}\mathbf{z})_i|` valid for every label vector.

    The smaller of :math:`C\sum_j|K_{ij}|` (from :math:`|z_j|\le C`) and
    :math:`\sqrt{C\,m\,K_{ii}}`: strong duality gives
    :math:`\lVert\mathbf{w}\rVert^2 = \sum_j\alpha_j - C\sum_j\xi_j \le Cm` for every
    label vector, and :math:`|f(x_i)| \le \lVert\mathbf{w}\rVert\sqrt{K_{ii}}`.
    """
    k_ll = np.asarray(k_ll, dtype=np.float64)
    m = k_ll.shape[0]
    r1 = c * np.abs(k_ll).sum(axis=1)
    r2 = np.sqrt(c * m * np.maximum(np.diag(k_ll), 0.0))
    # a hair of slack so that round-off never cuts a true solution
    return np.minimum(r1, r2 * (1.0 + 1e-9) + 1e-12)


def kkt_block(prob: pulp.LpProblem, tag: str, k_ll: np.ndarray, c: float, labels: list, alpha_start) -> dict:
    """Add the SVM KKT system for one binary label vector; return the zeta variables.

    ``labels[i]`` is ``+1``/``-1`` (fixed label) or a binary LpVariable ``b_i`` with
    label ``2 b_i - 1``.
    """
    m = k_ll.shape[0]
    radius = h_bounds(k_ll, c) if TIGHT_BOUNDS else c * np.abs(k_ll).sum(axis=1)
    m_u = np.maximum(radius - 1.0, 0.0)
    m_v = radius + 1.0
    a = [pulp.LpVariable(f"{tag}a{i}", 0, 1) for i in range(m)]
    zeta = [pulp.LpVariable(f"{tag}z{i}", -1, 1) for i in range(m)]
    u = [pulp.LpVariable(f"{tag}u{i}", 0, float(m_u[i])) for i in range(m)]
    v = [pulp.LpVariable(f"{tag}v{i}", 0, float(m_v[i])) for i in range(m)]
    s = [pulp.LpVariable(f"{tag}s{i}", cat=pulp.LpBinary) for i in range(m)]
    t = [pulp.LpVariable(f"{tag}t{i}", cat=pulp.LpBinary) for i in range(m)]
    for i in range(m):
        w = pulp.lpSum(float(c * k_ll[i, j]) * zeta[j] for j in range(m) if k_ll[i, j] != 0.0)
        lab = labels[i]
        if isinstance(lab, pulp.LpVariable):
            prob += zeta[i] <= a[i]
            prob += zeta[i] >= -a[i]
            prob += zeta[i] >= a[i] - 2 * (1 - lab)
            prob += zeta[i] <= -a[i] + 2 * lab
            h = pulp.LpVariable(f"{tag}h{i}", -float(radius[i]), float(radius[i]))
            r2 = 2.0 * float(radius[i])
            prob += h - w <= r2 * (1 - lab)
            prob += h - w >= -r2 * (1 - lab)
            prob += h + w <= r2 * lab
            prob += h + w >= -r2 * lab
        else:
            prob += zeta[i] == float(lab) * a[i]
            h = float(lab) * w
        prob += h - 1 - u[i] + v[i] == 0
        prob += u[i] <= float(m_u[i]) * s[i]
        prob += a[i] <= 1 - s[i]
        prob += v[i] <= float(m_v[i]) * t[i]
        prob += a[i] >= t[i]
        prob += s[i] + t[i] <= 1
    block = {"a": a, "zeta": zeta, "u": u, "v": v, "s": s, "t": t, "radius": radius, "labels": labels}
    if alpha_start is not None:
        _set_block_start(block, k_ll, c, alpha_start)
    return block


def _set_block_start(block: dict, k_ll: np.ndarray, c: float, alpha: np.ndarray) -> None:
    """Warm start from a trained SVM (alpha for the block's current labels)."""
    labels = block["labels"]
    y = np.array([(2 * round(lab.varValue) - 1) if isinstance(lab, pulp.LpVariable) else lab for lab in labels], float)
    a = np.clip(alpha / c, 0.0, 1.0)
    a[a < 1e-12] = 0.0
    a[a > 1 - 1e-12] = 1.0
    zeta = y * a
    h = y * (c * (k_ll @ zeta))
    for i in range(len(a)):
        block["a"][i].setInitialValue(a[i])
        block["zeta"][i].setInitialValue(zeta[i])
        block["u"][i].setInitialValue(max(h[i] - 1.0, 0.0) if a[i] == 0 else 0.0)
        block["v"][i].setInitialValue(max(1.0 - h[i], 0.0) if a[i] == 1 else 0.0)
        block["s"][i].setInitialValue(1 if a[i] == 0 else 0)
        block["t"][i].setInitialValue(1 if a[i] == 1 else 0)
        for var in (block["u"][i], block["v"][i]):
            var.setInitialValue(min(var.varValue, var.upBound))


def binary_labels(y: np.ndarray, flippable: np.ndarray, name: str = "b") -> tuple[list, pulp.LpAffineExpression]:
    """One binary per flippable label (``1`` = label ``+1``) and the number of flips."""
    labels, flips = [], []
    for i, yi in enumerate(y):
        if flippable[i]:
            b = pulp.LpVariable(f"{name}{i}", cat=pulp.LpBinary)
            b.setInitialValue(1 if yi > 0 else 0)
            labels.append(b)
            flips.append((1 - b) if yi > 0 else b)
        else:
            labels.append(float(yi))
    return labels, pulp.lpSum(flips)


def read_flips(labels: list, y: np.ndarray) -> list[int]:
    """Positions whose label the last solution flipped."""
    out = []
    for i, lab in enumerate(labels):
        if isinstance(lab, pulp.LpVariable) and lab.varValue is not None:
            new = 1 if lab.varValue > 0.5 else -1
            if new != y[i]:
                out.append(i)
    return out


class BudgetConstraint:
    """``number of flips <= budget`` whose right-hand side can be changed between solves."""

    def __init__(self, prob: pulp.LpProblem, flips: pulp.LpAffineExpression):
        self.con = flips <= 0
        prob.addConstraint(self.con, "budget")
        self.base = self.con.constant  # constant part of the flip count

    def set(self, budget: int) -> None:
        self.con.constant = self.base - float(budget)
